//! Signals: a broadcast reaches every subscriber (a choice's arm only while its
//! choice is open) and every deployed signal start.

use std::sync::Arc;

use tracing::debug;

use super::{Delivery, Hub, Offer, Place, SignalReceipt, Starter, Waiter};
use crate::graph::Payload;

impl Hub {
    /// Broadcast a signal to every subscriber; returns how many it reached. No
    /// subscriber: a logged no-op (ARCHITECTURE.md, "Events").
    pub fn broadcast(&self, name: &str, payload: Payload) -> usize {
        self.broadcast_acked(name, payload, None)
    }

    /// Broadcast a signal; with `receipts`, every delivery and every instance a
    /// signal start starts gets an ack, whose receipt is pushed there.
    pub fn broadcast_acked(
        &self,
        name: &str,
        payload: Payload,
        mut receipts: Option<&mut Vec<SignalReceipt>>,
    ) -> usize {
        let mut ack = || {
            receipts.as_mut().map(|receipts| {
                let (ack, receipt) = tokio::sync::oneshot::channel();
                receipts.push(receipt);
                ack
            })
        };
        let (subscribers, starters): (Vec<Waiter>, Vec<Arc<dyn Starter>>) = {
            let mut state = self.lock();
            let mut subscribers: Vec<Waiter> = match state.signals.get(name) {
                Some(subscribers) => subscribers.iter().map(|(s, m)| (*s, m.clone())).collect(),
                None => Vec::new(),
            };
            // An arm of a choice is served only if the choice is still open (and
            // serving it closes it).
            subscribers.retain(|(sub, _)| match state.subs.get(sub) {
                Some(Place::Signal(_, Some(choice))) => {
                    let choice = *choice;
                    state.claim(choice)
                }
                _ => true,
            });
            let starters = state
                .signal_starters
                .get(name)
                .map(|s| s.iter().map(|(_, s)| s.clone()).collect());
            (subscribers, starters.unwrap_or_default())
        };
        // Every deployed process with a start event for this signal starts an instance.
        let started = starters
            .iter()
            .filter(|s| s.offer_signal(payload.clone(), ack()) == Offer::Started)
            .count();
        if subscribers.is_empty() && started == 0 {
            debug!(
                signal = name,
                "signal broadcast with no catcher: nothing to do"
            );
        }
        let mut reached = 0;
        for (sub, mailbox) in subscribers {
            if mailbox.post(Delivery::Signal {
                sub,
                payload: payload.clone(),
                ack: ack(),
            }) {
                reached += 1;
            } else {
                // Its instance ended without unsubscribing yet: drop the stale entry.
                self.unsubscribe(sub);
            }
        }
        reached + started
    }
}
