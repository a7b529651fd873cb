//! Where an instance's end is left for its handles: set once by the loop, read and
//! awaited by any number of handles. Lighter than a `watch` channel (a parked
//! instance carries one for its whole life): a once-cell and a `Notify`.

use std::sync::{Arc, OnceLock};

use tokio::sync::Notify;

use super::Finished;

/// The shared end of an instance: `None` inside means the loop was lost (dropped
/// without publishing, e.g. by a runtime shutting down).
pub(crate) struct Ending<D> {
    end: OnceLock<Option<Arc<Finished<D>>>>,
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

    /// An instance that ended before it began (it could not start).
    pub fn ended(finished: Finished<D>) -> Arc<Self> {
        let (publisher, ending) = Self::new();
        publisher.publish(finished);
        ending
    }

    /// The end, if the instance has ended: `Some(None)` if its loop was lost.
    pub fn get(&self) -> Option<Option<Arc<Finished<D>>>> {
        self.end.get().cloned()
    }

    /// Wait for the end; `None` if the loop was lost.
    pub async fn wait(&self) -> Option<Arc<Finished<D>>> {
        loop {
            let notified = self.notify.notified();
            tokio::pin!(notified);
            // Registered before the look, so a publish between the two is not missed.
            notified.as_mut().enable();
            if let Some(end) = self.end.get() {
                return end.clone();
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
        self.set(Some(Arc::new(finished)));
    }

    fn set(&self, end: Option<Arc<Finished<D>>>) {
        // Only the first set counts: publishing then dropping leaves the outcome.
        let _ = self.0.end.set(end);
        self.0.notify.notify_waiters();
    }
}

impl<D> Drop for Publisher<D> {
    fn drop(&mut self) {
        if self.0.end.get().is_none() {
            self.set(None);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::instance::{History, Outcome};

    fn finished(n: u32) -> Finished<u32> {
        Finished {
            outcome: Outcome::Completed(n),
            history: History::default(),
            data: n,
        }
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn waiters_see_the_end_published_after_they_began_to_wait() {
        for _ in 0..200 {
            let (publisher, ending) = Ending::new();
            let waiters: Vec<_> = (0..3)
                .map(|_| {
                    let ending = Arc::clone(&ending);
                    tokio::spawn(async move { ending.wait().await.map(|f| f.data) })
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
            tokio::spawn(async move { ending.wait().await.is_none() })
        };
        drop(publisher);
        assert!(waiter.await.unwrap());
        assert_eq!(ending.get().map(|end| end.is_none()), Some(true));
    }

    #[tokio::test]
    async fn publishing_then_dropping_keeps_the_outcome() {
        let (publisher, ending) = Ending::new();
        publisher.publish(finished(3));
        drop(publisher);
        assert_eq!(ending.wait().await.map(|f| f.data), Some(3));
    }
}
