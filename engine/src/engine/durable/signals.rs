//! Durable signals: a broadcast on a durable engine answers once every instance it
//! reached has stored its effect, so an acknowledged signal is never lost by a
//! crash. Signals themselves are not stored: one with no catcher is dropped, as BPMN
//! says (a signal is not buffered), and the catchers it reached keep its effect in
//! their checkpoints.

use std::any::Any;
use std::sync::Arc;

use super::{DurableEngine, EngineError};

impl DurableEngine {
    /// Broadcast a signal to every waiting catcher and signal start event, and wait
    /// until each reached durable instance has stored the signal's effect (the
    /// checkpoint after it; an instance a signal start started: its first one).
    /// Returns how many catchers and starts it reached. A crash after this returns
    /// loses none of it; a crash before may lose the effect in some instances (they
    /// still wait for the signal after the restart) — broadcast again then. With no
    /// catcher it does nothing: a signal is not stored nor buffered.
    ///
    /// Not on a paused clock's timeout: the answer comes from the store's writer
    /// thread, which the paused clock does not wait for.
    ///
    /// On a node of several ([`DurableEngine::connect`]) it reaches the catchers of
    /// every node (by `NOTIFY`; call [`signal_type`](Self::signal_type) on each node
    /// for the payload); it answers for this node's instances.
    pub async fn broadcast_signal<P: Any + Send + Sync>(
        &self,
        name: &str,
        payload: P,
    ) -> Result<usize, EngineError> {
        // A node of several: the other nodes' catchers too (`signal_type` says how
        // its payload travels). Their acknowledgment is theirs to give.
        #[cfg(feature = "postgres")]
        self.signal_other_nodes(name, &payload).await?;
        let mut receipts = Vec::new();
        let reached =
            self.engine
                .inner
                .hub
                .broadcast_acked(name, Arc::new(payload), Some(&mut receipts));
        let (mut unstored, mut cause) = (0, None);
        for receipt in receipts {
            match receipt.await {
                Ok(Ok(())) => {}
                Ok(Err(error)) => {
                    unstored += 1;
                    cause.get_or_insert(error);
                }
                // The instance ended without handling it (it was ending as the
                // signal came): there is no effect to store.
                Err(_) => {}
            }
        }
        match cause {
            None => Ok(reached),
            Some(cause) => Err(EngineError::SignalNotStored {
                signal: name.to_string(),
                reached,
                unstored,
                cause,
            }),
        }
    }
}
