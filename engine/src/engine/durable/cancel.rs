//! Cancelling a durable instance by id (`engine/cancel.rs` for the in-memory
//! engine's): its record says whether it runs; its loop is found here (`held.rs`:
//! every durable loop's intake by id, from its start, resume or load), in the
//! evicted map (a send on its intake loads it), or — on a node of several — the
//! node that runs it is asked through the store (a stored request, as an
//! incident's retry).

use super::DurableEngine;
use crate::engine::{cancel_through, check_instance_process, CancelError};
use crate::instance::InstanceId;
use crate::store::Status;
use crate::Process;

impl DurableEngine {
    /// Cancel the running instance `id` of `process`, as its handle's
    /// [`cancel`](crate::InstanceHandle::cancel) does, by id — the same call as
    /// [`Engine::cancel_instance`](crate::Engine::cancel_instance). Evicted here, it
    /// is loaded and cancelled. `Ok` once its cancelled end is stored; on a node of
    /// several, for an instance another node runs, once the request is stored (that
    /// node cancels it when it next claims, or the node that takes the instance
    /// over does).
    ///
    /// Errors: [`CancelError::NoInstance`] if the store holds no such instance,
    /// [`CancelError::Ended`] (with its status) if it has ended,
    /// [`CancelError::NotRunning`] if it is stored running but no loop here runs it
    /// (not resumed) and there is no other node to ask.
    ///
    /// Needs the `durable` feature.
    pub async fn cancel_instance<D>(
        &self,
        process: &Process<D>,
        id: InstanceId,
    ) -> Result<(), CancelError> {
        let (status, actual) = self.stored_status(id).await?;
        check_instance_process(id, &actual, process)?;
        running(id, status)?;
        // A loop that ends closes its intake before its end is stored: looked for
        // again a few times, until the store says how it ended.
        for _ in 0..LOOKS {
            if let Some(intake) = self.loop_of(id).await {
                return match cancel_through(&intake, id).await {
                    Err(CancelError::Ended { status: None, .. }) => self.how_it_ended(id).await,
                    answer => answer,
                };
            }
            // Its loop may have ended since the store was read (a loop leaves the
            // map once its end is stored).
            running(id, self.stored_status(id).await?.0)?;
            tokio::time::sleep(std::time::Duration::from_millis(2)).await;
        }
        #[cfg(feature = "postgres")]
        if let Some(node) = self.inner.node.get() {
            return self.request_cancel(node, id).await;
        }
        Err(CancelError::NotRunning(id))
    }

    /// The loop ended without answering the cancel — it ended meanwhile, or this
    /// very cancel, queued before a resumed loop's first step, ended it there
    /// (before any user code runs): the store says which, once the end is stored.
    async fn how_it_ended(&self, id: InstanceId) -> Result<(), CancelError> {
        for _ in 0..END_LOOKS {
            match self.stored_status(id).await?.0 {
                Status::Running => tokio::time::sleep(std::time::Duration::from_millis(2)).await,
                Status::Cancelled => return Ok(()),
                status => {
                    return Err(CancelError::Ended {
                        id,
                        status: Some(status),
                    })
                }
            }
        }
        Err(CancelError::Ended { id, status: None })
    }

    /// Instance `id`'s stored status and process.
    async fn stored_status(&self, id: InstanceId) -> Result<(Status, String), CancelError> {
        let store = self.inner.store.clone();
        let record = tokio::task::spawn_blocking(move || store.instance(id.0))
            .await
            .map_err(|e| CancelError::Store(id, e.to_string()))?
            .map_err(|e| CancelError::Store(id, e.to_string()))?
            .ok_or(CancelError::NoInstance(id))?;
        Ok((record.status, record.process))
    }

    /// A sender on instance `id`'s loop, if it runs here: live — restoring after
    /// a resume or a load included — or evicted (a send loads it).
    pub(super) async fn loop_of(&self, id: InstanceId) -> Option<crate::query::memory::LoopIntake> {
        match self.inner.running_intake(id.0) {
            Some(intake) => Some(intake),
            None => self.inner.evicted_intake(&self.engine.inner, id.0).await,
        }
    }

    /// Store the request to cancel instance `id` for the node that runs it.
    #[cfg(feature = "postgres")]
    async fn request_cancel(
        &self,
        node: &std::sync::Arc<super::cluster::Node>,
        id: InstanceId,
    ) -> Result<(), CancelError> {
        let record = crate::store::MessageRecord {
            id: self
                .inner
                .next_message
                .fetch_add(1, std::sync::atomic::Ordering::Relaxed),
            name: CANCEL_REQUEST.to_string(),
            key: id.0.to_string(),
            payload: "null".to_string(),
            expires_ms: crate::instance::durable::now_ms() + CANCEL_REQUEST_TTL.as_millis() as i64,
        };
        let store = node.store.clone();
        tokio::task::spawn_blocking(move || store.store_message(&record, false, &[]))
            .await
            .map_err(|e| CancelError::Store(id, e.to_string()))?
            .map_err(|e| CancelError::Store(id, e.to_string()))?;
        // The owner hears of it at its next claim (its poll, or a notification).
        Ok(())
    }

    /// Whether instance `id`'s loop runs here (live, evicted or resumed), without
    /// loading it: a cancel request for it is claimed here.
    #[cfg(feature = "postgres")]
    pub(super) fn runs_instance(&self, id: u64) -> bool {
        self.inner.running_intake(id).is_some() || self.inner.is_evicted(id)
    }
}

/// How many times a cancel looks for a running instance's loop here.
const LOOKS: usize = 5;

/// How many times a cancel whose loop ended unanswered reads the store for its end
/// (2 ms apart: the end is stored by the writer's next batch).
const END_LOOKS: usize = 2_500;

/// `Ended` unless `status` is running.
fn running(id: InstanceId, status: Status) -> Result<(), CancelError> {
    match status {
        Status::Running => Ok(()),
        status => Err(CancelError::Ended {
            id,
            status: Some(status),
        }),
    }
}

/// The reserved message name of a request that the node running an instance
/// cancel it (`DurableEngine::cancel_instance` on another node); its key is the
/// instance's id. A process's message names are never this.
#[cfg(feature = "postgres")]
pub(super) const CANCEL_REQUEST: &str = "\u{1}cancel";

/// How long a cancel request waits to be claimed (its instance may be between
/// owners for a lease).
#[cfg(feature = "postgres")]
const CANCEL_REQUEST_TTL: std::time::Duration = std::time::Duration::from_secs(24 * 3600);
