//! Where an instance's end is left for its handles: set once by the loop, read and
//! awaited by any number of handles. Lighter than a `watch` channel (a parked
//! instance carries one for its whole life): a once-cell and a `Notify`. The end
//! lives in the cell itself, read by reference: publishing allocates nothing (a
//! box or an `Arc` for it cost ~5 % of `--bench core -- single`'s instructions).
//!
//! The cell is our own (`EndCell`), not a `OnceLock`: it has one writer, the
//! `Publisher`, so setting it is a write and a release store — no `Once` state
//! machine, whose two atomic read-modify-writes made a cell born set
//! (`Ending::ended`, every instance whose work was ready) cost ~125 instructions
//! and ~4 % of `single`'s time.

use std::cell::UnsafeCell;
use std::mem::MaybeUninit;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use tokio::sync::Notify;

use super::outcome::Finished;

/// How an instance's loop left it.
pub(crate) enum End<D> {
    /// The loop published the instance's end.
    Finished(Finished<D>),
    /// The loop was dropped without publishing (e.g. by a runtime shutting down).
    Lost,
}

impl<D> End<D> {
    pub fn finished(&self) -> Option<&Finished<D>> {
        match self {
            End::Finished(f) => Some(f),
            End::Lost => None,
        }
    }
}

/// The shared end of an instance.
pub(crate) struct Ending<D> {
    end: EndCell<D>,
    notify: Notify,
}

/// A cell set at most once, by its one writer (the `Publisher`), and read by any
/// number of handles once set.
struct EndCell<D> {
    /// The end is written; released after the write, acquired before a read.
    set: AtomicBool,
    end: UnsafeCell<MaybeUninit<End<D>>>,
}

// SAFETY: as `OnceLock<End<D>>`: a shared cell hands out `&End<D>` on any thread
// (so `End<D>: Sync`) and its end may be written on one thread and dropped on
// another (so `End<D>: Send`). The one write happens before any read (`set`'s
// release store, `get`'s acquire load) and never after one.
unsafe impl<D> Sync for EndCell<D> where End<D>: Send + Sync {}
unsafe impl<D> Send for EndCell<D> where End<D>: Send {}

impl<D> EndCell<D> {
    const fn unset() -> Self {
        Self {
            set: AtomicBool::new(false),
            end: UnsafeCell::new(MaybeUninit::uninit()),
        }
    }

    /// A cell born set: no atomic operation at all.
    const fn with(end: End<D>) -> Self {
        Self {
            set: AtomicBool::new(true),
            end: UnsafeCell::new(MaybeUninit::new(end)),
        }
    }

    fn get(&self) -> Option<&End<D>> {
        if self.set.load(Ordering::Acquire) {
            // SAFETY: `set` is true only after the end was written (release in
            // `set`, acquired here), and it is never written again.
            Some(unsafe { (*self.end.get()).assume_init_ref() })
        } else {
            None
        }
    }

    /// Write the end if it was not yet written.
    ///
    /// SAFETY: only the cell's one writer may call this (the `Publisher`, which is
    /// neither `Clone` nor shared): no other write can race this one, and no read
    /// sees the end before the release store below.
    unsafe fn set(&self, end: End<D>) {
        if self.set.load(Ordering::Relaxed) {
            return;
        }
        // SAFETY: unset, so no reader holds a reference into the cell (`get`
        // returns none before `set` is true), and this is the only writer.
        unsafe { (*self.end.get()).write(end) };
        self.set.store(true, Ordering::Release);
    }
}

impl<D> Drop for EndCell<D> {
    fn drop(&mut self) {
        if *self.set.get_mut() {
            // SAFETY: set means written; `&mut self` means no reference remains.
            unsafe { self.end.get_mut().assume_init_drop() }
        }
    }
}

impl<D> Ending<D> {
    /// An instance that has not ended: the loop's end (to publish) and the handles'.
    pub fn new() -> (Publisher<D>, Arc<Self>) {
        let ending = Arc::new(Ending {
            end: EndCell::unset(),
            notify: Notify::new(),
        });
        (Publisher(Arc::clone(&ending)), ending)
    }

    /// An instance that ended before any handle could wait: the end is set as the
    /// cell is made (no publish, no waiter to wake).
    pub fn ended(finished: Finished<D>) -> Arc<Self> {
        Arc::new(Ending {
            end: EndCell::with(End::Finished(finished)),
            notify: Notify::new(),
        })
    }

    /// The end, if the instance has ended.
    pub fn get(&self) -> Option<&End<D>> {
        self.end.get()
    }

    /// Wait for the end.
    pub async fn wait(&self) -> &End<D> {
        if let Some(end) = self.end.get() {
            return end;
        }
        loop {
            let notified = self.notify.notified();
            tokio::pin!(notified);
            // Registered before the look, so a publish between the two is not missed.
            notified.as_mut().enable();
            if let Some(end) = self.end.get() {
                return end;
            }
            notified.await;
        }
    }
}

/// The loop's end of an [`Ending`]. Dropped without publishing, it marks the loop
/// lost, so no handle waits for ever.
pub(crate) struct Publisher<D>(Arc<Ending<D>>);

impl<D> Publisher<D> {
    pub fn publish(&self, finished: Finished<D>) {
        self.set(End::Finished(finished));
    }

    fn set(&self, end: End<D>) {
        // Only the first set counts: publishing then dropping leaves the outcome.
        // SAFETY: a publisher is its cell's one writer (made once per `Ending`, in
        // `Ending::new`; not `Clone`).
        unsafe { self.0.end.set(end) };
        self.0.notify.notify_waiters();
    }
}

impl<D> Drop for Publisher<D> {
    fn drop(&mut self) {
        if self.0.end.get().is_none() {
            self.set(End::Lost);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::instance::outcome::Ended;
    use crate::instance::History;

    fn finished(n: u32) -> Finished<u32> {
        Finished {
            ended: Ended::Completed,
            history: History::default(),
            data: n,
            unsent: None,
        }
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn waiters_see_the_end_published_after_they_began_to_wait() {
        for _ in 0..200 {
            let (publisher, ending) = Ending::<u32>::new();
            let waiters: Vec<_> = (0..3)
                .map(|_| {
                    let ending = Arc::clone(&ending);
                    tokio::spawn(async move { ending.wait().await.finished().map(|f| f.data) })
                })
                .collect();
            tokio::task::yield_now().await;
            publisher.publish(finished(7));
            for waiter in waiters {
                assert_eq!(waiter.await.unwrap(), Some(7));
            }
            assert!(ending.get().is_some());
        }
    }

    #[tokio::test]
    async fn a_publisher_dropped_unpublished_marks_the_loop_lost() {
        let (publisher, ending) = Ending::<u32>::new();
        assert!(ending.get().is_none());
        let waiter = {
            let ending = Arc::clone(&ending);
            tokio::spawn(async move { matches!(ending.wait().await, End::Lost) })
        };
        drop(publisher);
        assert!(waiter.await.unwrap());
        assert!(matches!(ending.get(), Some(End::Lost)));
    }

    #[tokio::test]
    async fn publishing_then_dropping_keeps_the_outcome() {
        let (publisher, ending) = Ending::new();
        publisher.publish(finished(3));
        drop(publisher);
        assert_eq!(ending.wait().await.finished().map(|f| f.data), Some(3));
    }

    #[test]
    fn the_end_is_dropped_once_with_its_cell_born_set_or_published_or_never_set() {
        let data = Arc::new(());
        let finished = |d: &Arc<()>| Finished {
            ended: Ended::Completed,
            history: History::default(),
            data: Arc::clone(d),
            unsent: None,
        };
        let born = Ending::ended(finished(&data));
        assert!(born.get().and_then(End::finished).is_some());
        assert_eq!(Arc::strong_count(&data), 2);
        drop(born);
        assert_eq!(Arc::strong_count(&data), 1);

        let (publisher, ending) = Ending::new();
        publisher.publish(finished(&data));
        // A second set (the drop's `Lost`) is ignored, not written over the first.
        drop(publisher);
        assert_eq!(Arc::strong_count(&data), 2);
        assert!(ending.get().and_then(End::finished).is_some());
        drop(ending);
        assert_eq!(Arc::strong_count(&data), 1);

        let (publisher, ending) = Ending::<Arc<()>>::new();
        drop(ending);
        drop(publisher);
        assert_eq!(Arc::strong_count(&data), 1);
    }
}
