//! Where an instance's end is left for its handles: set once by the loop, read and
//! awaited by any number of handles. Lighter than a `watch` channel (a parked
//! instance carries one for its whole life): a once-cell and a `Notify`, in one
//! counted block ([`EndRef`], `mem::shared`). The end lives in the cell itself,
//! read by reference: publishing allocates nothing.
//!
//! An instance that ended in its first step, on its caller, keeps its steps in its
//! end's block, after the end (`End::Packed`): one allocation where a history
//! buffer and the end's block would be two.

use tokio::sync::Notify;

use super::history::{History, Step};
use super::outcome::{Ended, Finished, InstanceError, Outcome};
use crate::data::{Erased, ErasedRef};
use crate::mem::once::SetOnce;
use crate::mem::shared::Shared;

/// How an instance's loop left it.
pub(crate) enum End {
    /// The loop published the instance's end (or it ended before any loop ran).
    Finished(Finished<Erased>),
    /// The instance ended in its first step: its steps follow the end in its block
    /// (`EndRef::packed`).
    Packed(Packed),
    /// The loop was dropped without publishing (e.g. by a runtime shutting down).
    Lost,
    /// The loop stopped on a panic outside any handler (the data type's `Clone`,
    /// diff or merge, or a bug in thresh): the instance's data and history are gone.
    Broken(InstanceError),
}

impl End {
    /// Why an instance that left no end (`EndRef::finished` is `None`) failed.
    pub fn failure(&self) -> InstanceError {
        match self {
            End::Broken(error) => error.clone(),
            _ => InstanceError::Lost,
        }
    }
}

/// An end whose steps are its block's tail: how it ended, and its data.
pub(crate) struct Packed {
    ended: Ended,
    // As `Finished::unsent`: one pointer where a `Vec` is three.
    #[allow(clippy::box_collection)]
    unsent: Option<Box<Vec<String>>>,
    data: Erased,
}

/// An ended instance, as its handles read it.
pub(crate) struct FinishedRef<'a> {
    pub ended: &'a Ended,
    history: HistoryRef<'a>,
    /// The data at the end.
    pub data: ErasedRef<'a>,
    /// A resumed child's escalations for its call to raise (`Finished::unsent`).
    pub unsent: &'a [String],
}

enum HistoryRef<'a> {
    Whole(&'a History),
    Steps(&'a [Step]),
}

impl<'a> FinishedRef<'a> {
    /// The outcome, with `copy` a copy of the data at the end.
    pub fn outcome<C>(&self, copy: impl FnOnce(ErasedRef<'a>) -> C) -> Outcome<C> {
        self.ended.outcome(|| copy(self.data))
    }

    /// A copy of the history.
    pub fn history(&self) -> History {
        match self.history {
            HistoryRef::Whole(history) => history.clone(),
            HistoryRef::Steps(steps) => History::of_steps(steps),
        }
    }
}

/// A counted reference to an instance's end: what its handles and its loop's
/// [`Publisher`] hold.
#[derive(Clone)]
pub(crate) struct EndRef(Shared<Ending, Step>);

impl EndRef {
    /// An instance that has not ended: the loop's end (to publish) and the handles'.
    pub fn pending() -> (Publisher, Self) {
        let end = EndRef(Shared::new(Ending::unset()));
        (Publisher(end.clone()), end)
    }

    /// An instance that ended before any handle could wait: the end is set as the
    /// block is made (no publish, no waiter to wake).
    pub fn ended(finished: Finished<Erased>) -> Self {
        EndRef(Shared::new(Ending::with(End::Finished(finished))))
    }

    /// A block born set to a broken end (`End::Broken`).
    pub fn broken(error: InstanceError) -> Self {
        EndRef(Shared::new(Ending::with(End::Broken(error))))
    }

    /// As [`EndRef::ended`], with the steps moved into the block, after the end
    /// (`End::Packed`). The history's buffer is left empty (a lent scratch buffer
    /// given back).
    pub fn packed(finished: Finished<Erased>) -> Self {
        let Finished {
            ended,
            mut history,
            data,
            unsent,
        } = finished;
        let end = End::Packed(Packed {
            ended,
            unsent,
            data,
        });
        history.take_steps(|steps| EndRef(Shared::with_tail(Ending::with(end), steps)))
    }

    /// The instance's end, if it ended with one (not lost or broken).
    pub fn finished(&self) -> Option<FinishedRef<'_>> {
        Some(match self.get()? {
            End::Finished(f) => FinishedRef {
                ended: &f.ended,
                history: HistoryRef::Whole(&f.history),
                data: f.data.as_ref(),
                unsent: f.unsent.as_deref().map_or(&[], Vec::as_slice),
            },
            End::Packed(p) => FinishedRef {
                ended: &p.ended,
                history: HistoryRef::Steps(self.0.tail()),
                data: p.data.as_ref(),
                unsent: p.unsent.as_deref().map_or(&[], Vec::as_slice),
            },
            End::Lost | End::Broken(_) => return None,
        })
    }

    /// Wait for the instance to end: its end, or why it left none.
    pub async fn wait_finished(&self) -> Result<FinishedRef<'_>, InstanceError> {
        let end = self.wait().await;
        self.finished().ok_or_else(|| end.failure())
    }
}

impl std::ops::Deref for EndRef {
    type Target = Ending;

    fn deref(&self) -> &Ending {
        &self.0
    }
}

/// The shared end of an instance.
pub(crate) struct Ending {
    end: SetOnce<End>,
    notify: Notify,
}

impl Ending {
    fn unset() -> Self {
        Ending {
            end: SetOnce::unset(),
            notify: Notify::new(),
        }
    }

    fn with(end: End) -> Self {
        Ending {
            end: SetOnce::with(end),
            notify: Notify::new(),
        }
    }

    /// The end, if the instance has ended.
    pub fn get(&self) -> Option<&End> {
        self.end.get()
    }

    /// Wait for the end.
    pub async fn wait(&self) -> &End {
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
pub(crate) struct Publisher(EndRef);

impl Publisher {
    pub fn publish(&self, finished: Finished<Erased>) {
        self.set(End::Finished(finished));
    }

    /// The loop stopped on a panic: `error` says which.
    pub fn publish_broken(&self, error: InstanceError) {
        self.set(End::Broken(error));
    }

    /// Whether no handle is left to see the end (an evicted instance's is then
    /// dropped, and made anew if it is loaded again).
    #[cfg(feature = "durable")]
    pub fn is_alone(&self) -> bool {
        self.0 .0.is_unique()
    }

    fn set(&self, end: End) {
        // Only the first set counts: publishing then dropping leaves the outcome.
        if self.0.end.set(end).is_ok() {
            self.0.notify.notify_waiters();
        }
    }
}

impl Drop for Publisher {
    fn drop(&mut self) {
        if self.0.end.get().is_none() {
            self.set(End::Lost);
        }
    }
}

#[cfg(test)]
mod tests;
