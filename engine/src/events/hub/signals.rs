//! Signals: a broadcast reaches every subscriber (a choice's arm only while its
//! choice is open) and every deployed signal start.

use std::collections::HashSet;
use std::sync::Arc;

use tracing::debug;

use super::{Delivery, Hub, Offer, Place, SignalReceipt, Starter, SubId, Waiter};
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
        receipts: Option<&mut Vec<SignalReceipt>>,
    ) -> usize {
        self.broadcast_among(name, payload, receipts, Among::All, None)
    }

    #[cfg_attr(not(feature = "durable"), allow(dead_code))]
    /// Broadcast a signal to the subscribers `among` says; the subscriptions it
    /// posted to are pushed to `posted`. Signal starts only unless `Among::Only`.
    pub(crate) fn broadcast_among(
        &self,
        name: &str,
        payload: Payload,
        mut receipts: Option<&mut Vec<SignalReceipt>>,
        among: Among<'_>,
        mut posted: Option<&mut Vec<SubId>>,
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
            subscribers.retain(|(sub, mailbox)| match among {
                Among::All => true,
                Among::Only(queues) => queues.contains(&mailbox.queue_id()),
                Among::Except(subs) => !subs.contains(sub),
            });
            // An arm of a choice is served only if the choice is still open (and
            // serving it closes it).
            subscribers.retain(|(sub, _)| match state.subs.get(sub) {
                Some(Place::Signal(_, Some(choice))) => {
                    let choice = *choice;
                    state.claim(choice)
                }
                _ => true,
            });
            let starters = match among {
                Among::Only(_) => None,
                _ => state.signal_starters.get(name),
            };
            let starters = starters.map(|s| s.iter().map(|(_, s)| s.clone()).collect());
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
                if let Some(posted) = posted.as_mut() {
                    posted.push(sub);
                }
            } else {
                // Its instance ended without unsubscribing yet: drop the stale entry.
                self.unsubscribe(sub);
            }
        }
        reached + started
    }
}

/// Which subscribers a signal broadcast reaches.
#[derive(Clone, Copy)]
#[cfg_attr(not(feature = "durable"), allow(dead_code))]
pub(crate) enum Among<'a> {
    /// Every one.
    All,
    /// Those posting to these intake queues (`Mailbox::queue_id`): instances just
    /// woken for it.
    Only(&'a HashSet<usize>),
    /// Every one but these subscriptions (reached already).
    Except(&'a HashSet<SubId>),
}
