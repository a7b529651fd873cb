//! Where an instance's end is left for its handles: set once by the loop, read and
//! awaited by any number of handles. Lighter than a `watch` channel (a parked
//! instance carries one for its whole life): a once-cell and a `Notify`. The end
//! lives in the cell itself, read by reference: publishing allocates nothing (a
//! box or an `Arc` for it cost ~5 % of `--bench core -- single`'s instructions).

use std::sync::{Arc, OnceLock};

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
    end: OnceLock<End<D>>,
    notify: Notify,
}

impl<D> Ending<D> {
    /// An instance that has not ended: the loop's end (to publish) and the handles'.
    pub fn new() -> (Publisher<D>, Arc<Self>) {
        let ending = Arc::new(Ending {
            end: OnceLock::new(),
            notify: Notify::new(),
        });
        (Publisher(Arc::clone(&ending)), ending)
    }

    /// An instance that ended before any handle could wait: the end is set as the
    /// cell is made (no publish, no waiter to wake).
    pub fn ended(finished: Finished<D>) -> Arc<Self> {
        Arc::new(Ending {
            end: OnceLock::from(End::Finished(finished)),
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
        let _ = self.0.end.set(end);
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
}
