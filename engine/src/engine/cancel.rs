//! Cancelling an instance by its id, from outside (a console, a script): the same
//! request a handle's [`cancel`](crate::InstanceHandle::cancel) sends its loop, found
//! by id — in memory through the engine's listing, which holds a sender on each
//! listed instance's intake (`query/memory.rs`).

use tokio::sync::oneshot;

use super::Engine;
use crate::instance::{Command, Input, InstanceId, WorkError};
use crate::query::memory::LoopIntake;
use crate::query::Status;
use crate::Process;

/// Why [`Engine::cancel_instance`] (or
/// [`DurableEngine::cancel_instance`](crate::DurableEngine::cancel_instance)) did not
/// cancel an instance.
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum CancelError {
    /// No instance of that id is known: never started, or ended and no longer
    /// kept (in memory: `EngineConfig::keep_ended`), or still in its first step
    /// (in memory an instance is found once it first rests, as `instances` lists it).
    #[error("no instance {0} is known")]
    NoInstance(InstanceId),
    /// The instance is of another process than the one named.
    #[error("instance {id} is of process `{actual}`, not `{given}`")]
    OtherProcess {
        /// The instance.
        id: InstanceId,
        /// Its process.
        actual: String,
        /// The process named in the call.
        given: &'static str,
    },
    /// The instance has ended already: nothing to cancel. `status` says how, where
    /// it is known.
    #[error("instance {id} has ended already{}", .status.map(|s| format!(" ({})", s.as_str())).unwrap_or_default())]
    Ended {
        /// The instance.
        id: InstanceId,
        /// How it ended, if known.
        status: Option<Status>,
    },
    /// A durable instance stored as running that no loop here runs and no other
    /// node can be asked for (a single node that did not `resume` it).
    #[error("instance {0} is stored as running but does not run here (resume it first)")]
    NotRunning(InstanceId),
    /// The cancel reached the instance but its end could not be stored (the
    /// instance's own error says why).
    #[error("instance {0}'s cancel did not take effect: {1}")]
    Work(InstanceId, WorkError),
    /// The store could not be read or written.
    #[error("instance {0}: the store failed: {1}")]
    Store(InstanceId, String),
}

impl Engine {
    /// Cancel the running instance `id` of `process`, as its handle's
    /// [`cancel`](crate::InstanceHandle::cancel) does — its tokens stop, its
    /// handlers are dropped at their next await, its outcome becomes
    /// [`Outcome::Cancelled`](crate::Outcome::Cancelled), its history and metrics
    /// say so — for a caller that holds its id, not its handle (a console). `Ok`
    /// once its loop has ended it.
    ///
    /// An in-memory instance is found by id once it first rests (every token
    /// waits), the instances [`instances`](Self::instances) lists.
    ///
    /// ```
    /// # use thresh::{process, CancelError, Engine, Outcome, ProcessData};
    /// # #[derive(Clone, Debug, Default, ProcessData)] pub struct Expense { pub amount: u32 }
    /// process! { pub EXPENSE: Expense { start s; user approve; end e; s -> approve -> e; } }
    /// # #[tokio::main(flavor = "current_thread")] async fn main() {
    /// let engine = Engine::new();
    /// let handle = engine.start(&EXPENSE, Expense::default()).await.unwrap();
    /// engine.cancel_instance(&EXPENSE, handle.id()).await.unwrap();
    /// assert!(matches!(handle.outcome().await, Outcome::Cancelled(_)));
    /// assert!(matches!(
    ///     engine.cancel_instance(&EXPENSE, handle.id()).await,
    ///     Err(CancelError::NoInstance(_))
    /// ));
    /// # }
    /// ```
    pub async fn cancel_instance<D>(
        &self,
        process: &Process<D>,
        id: InstanceId,
    ) -> Result<(), CancelError> {
        let listing = &self.inner.hub.listing;
        let Some((intake, actual)) = listing.intake(id.0) else {
            return Err(match listing.ended_status(id.0) {
                Some((status, actual)) => {
                    check_process(id, actual, process)?;
                    CancelError::Ended {
                        id,
                        status: Some(status),
                    }
                }
                None => CancelError::NoInstance(id),
            });
        };
        check_process(id, actual, process)?;
        cancel_through(&intake, id).await
    }
}

/// An instance of `actual` is of `process`.
pub(crate) fn check_process<D>(
    id: InstanceId,
    actual: &str,
    process: &Process<D>,
) -> Result<(), CancelError> {
    match actual == process.name() {
        true => Ok(()),
        false => Err(CancelError::OtherProcess {
            id,
            actual: actual.to_string(),
            given: process.name(),
        }),
    }
}

/// Ask the loop on `intake` to cancel its instance and wait for its answer.
pub(crate) async fn cancel_through(intake: &LoopIntake, id: InstanceId) -> Result<(), CancelError> {
    let (reply, answer) = oneshot::channel();
    let command = Input::Handle(Box::new(Command::Cancel(Some(reply))));
    let ended = CancelError::Ended { id, status: None };
    if intake.send(command).is_err() {
        return Err(ended);
    }
    match answer.await {
        Ok(Ok(())) => {
            // The loop answers as it stops; its end — the listing's summary, the
            // handle's outcome — follows once its tracks are awaited, and then it
            // closes its intake. Waited for, so what the caller reads next (a
            // console's page) shows the instance ended.
            while !intake.is_closed() {
                tokio::time::sleep(std::time::Duration::from_millis(1)).await;
            }
            Ok(())
        }
        // Ended before the request was taken (the loop dropped it unanswered).
        Ok(Err(WorkError::InstanceEnded)) | Err(_) => Err(ended),
        Ok(Err(error)) => Err(CancelError::Work(id, error)),
    }
}
