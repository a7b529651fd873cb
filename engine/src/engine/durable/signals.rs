//! Durable signals: a broadcast on a durable engine answers once every instance it
//! reached has stored its effect, so an acknowledged signal is never lost by a
//! crash. Signals themselves are not stored: one with no catcher is dropped, as BPMN
//! says (a signal is not buffered), and the catchers it reached keep its effect in
//! their checkpoints.

use std::any::Any;
use std::collections::HashSet;
use std::sync::Arc;

use super::{DurableEngine, EngineError};
use crate::events::{Among, SubId};
use crate::graph::Payload;

/// How many asleep instances waiting for a signal it wakes at once (a page of the
/// store's wake index): it reaches them, and waits until they have stored its
/// effect, before it reads the next page, so they are evicted again as it goes.
const WAKING_AT_ONCE: usize = 512;

/// What a broadcast reached, and what of it could not be stored.
#[derive(Default)]
struct Outcome {
    reached: usize,
    unstored: usize,
    cause: Option<String>,
}

impl Outcome {
    /// Wait for the receipts of deliveries: each instance stored the effect.
    async fn settle(&mut self, receipts: Vec<crate::events::SignalReceipt>) {
        for receipt in receipts {
            match receipt.await {
                Ok(Ok(())) => {}
                Ok(Err(error)) => {
                    self.unstored += 1;
                    self.cause.get_or_insert(error);
                }
                // The instance ended without handling it (it was ending as the
                // signal came): there is no effect to store.
                Err(_) => {}
            }
        }
    }
}

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
    /// With eviction on ([`evict_idle`](Self::evict_idle)), the instances a
    /// resume left in the store waiting for it are woken first, a page of the
    /// store's wake index at a time: each loads, then hears the signal as a loaded
    /// one would, once.
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
        self.broadcast_here(name, Arc::new(payload)).await
    }

    /// [`broadcast_signal`](Self::broadcast_signal) to this engine's catchers
    /// alone: the asleep ones woken first, then every other. On a node of several,
    /// also a signal another node sent (`claims.rs`).
    pub(super) async fn broadcast_here(
        &self,
        name: &str,
        payload: Payload,
    ) -> Result<usize, EngineError> {
        let mut outcome = Outcome::default();
        let woken = self.wake_for_signal(name, &payload, &mut outcome).await;
        let mut receipts = Vec::new();
        outcome.reached += self.engine.inner.hub.broadcast_among(
            name,
            payload,
            Some(&mut receipts),
            Among::Except(&woken),
            None,
        );
        outcome.settle(receipts).await;
        let Outcome {
            reached,
            unstored,
            cause,
        } = outcome;
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

    /// Wake the asleep instances the store's wake index says wait for signal
    /// `name`, a page at a time, and deliver it to them (only them: each loads and
    /// subscribes before, so a delivery never races its restore). Returns the
    /// subscriptions reached, which the broadcast to every other one then skips.
    /// Nothing is read while no asleep instance waits for a signal.
    async fn wake_for_signal(
        &self,
        name: &str,
        payload: &Payload,
        outcome: &mut Outcome,
    ) -> HashSet<SubId> {
        let mut reached = HashSet::new();
        if !self.inner.asleep_for_signals() {
            return reached;
        }
        let mut after = None;
        loop {
            let (store, n) = (self.inner.store.clone(), name.to_string());
            let page = tokio::task::spawn_blocking(move || {
                store.waiting_for_signal(&n, after, WAKING_AT_ONCE)
            })
            .await;
            let ids = match page {
                Ok(Ok(ids)) => ids,
                Ok(Err(error)) => {
                    tracing::warn!(signal = name, %error, "the store's wake index could not be read: evicted instances waiting for the signal are not woken");
                    return reached;
                }
                Err(_) => return reached,
            };
            let (Some(&last), full) = (ids.last(), ids.len() >= WAKING_AT_ONCE) else {
                return reached;
            };
            after = Some(last);
            let engine = &self.engine.inner;
            // Each hears it as soon as it has restored: the sooner, the less
            // likely it rests and is evicted again first (a delivery then loads
            // it once more, and is still taken once).
            let wakes = ids
                .into_iter()
                .filter(|&id| self.inner.asleep_or_loading(id))
                .map(|id| async move {
                    let intake = self.inner.load_evicted(engine, id).await?;
                    let (mut receipts, mut posted) = (Vec::new(), Vec::new());
                    let only = HashSet::from([intake.queue_id()]);
                    let reached = engine.hub.broadcast_among(
                        name,
                        payload.clone(),
                        Some(&mut receipts),
                        Among::Only(&only),
                        Some(&mut posted),
                    );
                    Some((reached, receipts, posted))
                });
            for (count, receipts, posted) in futures_util::future::join_all(wakes)
                .await
                .into_iter()
                .flatten()
            {
                outcome.reached += count;
                reached.extend(posted);
                outcome.settle(receipts).await;
            }
            if !full {
                return reached;
            }
        }
    }
}
