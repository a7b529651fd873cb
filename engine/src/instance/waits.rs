//! Tokens that wait for events: parking, arming triggers, the flip on first dispatch,
//! timers, user tasks and throws (ADR-017 Rule 1, SRD-027 FR-1..FR-8).
//!
//! A waiting token's track parks on its own channel. The loop keeps the set of
//! parked-and-undelivered tracks (`parked`); it records a track there before it
//! registers any subscription (park before register), so no delivery can target a
//! track it does not know is parked. The first delivery that matches flips the track
//! out of the set and is sent to it; later ones find nothing and are dropped — which
//! makes an event-based gateway's deferred choice atomic, whatever its triggers.
//! Message subscriptions are the instance's: the loop runs the fine correlation check
//! (the catch's key over the current data) and on a mismatch keeps the track parked.

use std::cmp::Reverse;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Arc;

use tokio::time::Instant;
use tracing::{debug, warn};

use super::event_loop::{Instance, TrackState};
use super::history::{Happening, TrackId};
use super::track::{panic_message, Apply, Instruction};
use super::{OpenWork, WorkError, WorkUpdate};
use crate::data::{ProcessData, TaskError};
use crate::events::{Delivery, Mailbox, SubId};
use crate::graph::{NodeIdx, NodeKind, Payload, Throw, Trigger};
use crate::instance::InstanceError;

/// A parked track and what it waits for.
pub(super) struct Parked {
    pub track: TrackId,
    /// Where it waits: the catch, receive or user task, or the event-based gateway.
    pub at: NodeIdx,
    /// One wait per trigger: a single one, or one per arm of an event-based gateway.
    pub waits: Vec<Wait>,
}

/// One armed trigger of a parked track.
pub(super) struct Wait {
    /// The node whose trigger this is (the catch itself, or a gateway's arm).
    pub arm: NodeIdx,
    pub on: On,
}

/// How a wait will be resolved.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum On {
    /// A hub subscription: a message or a signal.
    Hub(SubId),
    /// A loop-owned timer.
    Timer(u64),
    /// A user task's completion through the handle.
    User,
}

impl<D: ProcessData> Instance<D> {
    // ----- parking ------------------------------------------------------------

    /// The token on `track` waits at `at` for the triggers of `arms` (the node itself,
    /// or an event-based gateway's arms).
    pub(super) fn park(&mut self, track: TrackId, at: NodeIdx, arms: &[NodeIdx]) {
        self.record(track, at, Happening::Parked);
        if let Some(slot) = self.slot_mut(track) {
            // A parked track counts as working: an event can still move it.
            slot.state = TrackState::Working;
        }
        self.running += 1;
        // The track's task exists from here on, waiting on its channel.
        if self.track_inbox(track).is_none() {
            return self.fail(InstanceError::Lost);
        }
        // Park before register: the loop knows the track is parked before any
        // subscription that could target it exists.
        // Most instances park one token at a time: grow one entry at a time.
        self.parked.reserve_exact(1);
        self.parked.push(Parked {
            track,
            at,
            waits: Vec::with_capacity(arms.len()),
        });
        for &arm in arms {
            match self.arm(arm) {
                Ok(on) => self
                    .parked
                    .last_mut()
                    .expect("just parked")
                    .waits
                    .push(Wait { arm, on }),
                Err(error) => return self.fail(error),
            }
        }
    }

    /// Arm the trigger of `arm`: subscribe with the hub, start a timer, or open work.
    fn arm(&mut self, arm: NodeIdx) -> Result<On, InstanceError> {
        let node = &self.process.nodes[arm];
        let trigger = match &node.kind {
            NodeKind::Catch(trigger) | NodeKind::Receive(trigger) => trigger,
            NodeKind::User => return Ok(On::User),
            _ => return Err(InstanceError::Lost), // `process!` allows no other arms
        };
        Ok(match trigger {
            Trigger::Message { name, key, .. } => {
                let key = self.user_code(node.id, || key(&self.data))?;
                let mailbox = self.mailbox();
                On::Hub(self.hub.subscribe_message(name, &key, &mailbox))
            }
            Trigger::Signal { name, .. } => {
                let mailbox = self.mailbox();
                On::Hub(self.hub.subscribe_signal(name, &mailbox))
            }
            Trigger::Timer(spec) => {
                let spec = self.user_code(node.id, spec)?;
                let id = self.next_timer;
                self.next_timer += 1;
                // A deadline the clock cannot represent never comes: the wait stays.
                if let Some(deadline) = spec.first(Instant::now()) {
                    self.timers.push(Reverse((deadline, id)));
                    self.reset_sleep();
                }
                On::Timer(id)
            }
        })
    }

    /// The instance's mailbox in the hub, made on first need.
    fn mailbox(&mut self) -> Arc<dyn Mailbox> {
        let intake = &self.intake_tx;
        self.mailbox
            .get_or_insert_with(|| Arc::new(intake.clone()))
            .clone()
    }

    /// The parked entry and wait that `on` resolves.
    fn find_wait(&self, on: On) -> Option<(usize, usize)> {
        self.parked
            .iter()
            .enumerate()
            .find_map(|(p, parked)| parked.waits.iter().position(|w| w.on == on).map(|w| (p, w)))
    }

    /// Drop every subscription of a parked entry. Timers and open work go with the
    /// entry: a timer that fires later finds no wait and is ignored.
    fn disarm(&self, parked: &Parked) {
        for wait in &parked.waits {
            if let On::Hub(sub) = wait.on {
                self.hub.unsubscribe(sub);
            }
        }
    }

    /// Disarm every parked track (the instance is stopping).
    pub(super) fn disarm_all(&mut self) {
        for parked in std::mem::take(&mut self.parked) {
            self.disarm(&parked);
        }
        self.timers.clear();
        self.sleep = None;
    }

    // ----- deliveries ---------------------------------------------------------

    /// A delivery from the hub.
    pub(super) fn on_event(&mut self, delivery: Delivery) {
        match delivery {
            Delivery::Message {
                sub,
                name,
                key,
                payload,
            } => {
                let Some((p, w)) = self.find_wait(On::Hub(sub)) else {
                    // The waiter is gone (a gateway's other arm won, or the instance
                    // is stopping): the message goes back to the broker for another.
                    self.hub.publish(&name, &key, payload);
                    return;
                };
                let arm = self.parked[p].waits[w].arm;
                let Some(Trigger::Message { key: key_of, .. }) =
                    trigger(&self.process.nodes[arm].kind)
                else {
                    return;
                };
                let node = self.process.nodes[arm].id;
                match self.user_code(node, || key_of(&self.data)) {
                    Ok(current) if *current == *key => self.flip(p, w, Some(payload)),
                    Ok(current) => {
                        // Fine correlation failed: drop the message, keep the track
                        // parked, and subscribe again under the key it has now.
                        debug!(node, message = &*name, %key, %current, "correlation mismatch: message dropped");
                        self.hub.count_mismatch();
                        let mailbox = self.mailbox();
                        let sub = self.hub.subscribe_message(&name, &current, &mailbox);
                        self.parked[p].waits[w].on = On::Hub(sub);
                    }
                    Err(error) => self.fail(error),
                }
            }
            Delivery::Signal { sub, payload } => {
                // No parked wait: a duplicate or a losing arm — dropped (SRD-027 FR-4).
                if let Some((p, w)) = self.find_wait(On::Hub(sub)) {
                    self.flip(p, w, Some(payload));
                }
            }
        }
    }

    /// Fire every timer that is due.
    pub(super) fn on_timers(&mut self) {
        let now = Instant::now();
        while let Some(Reverse((deadline, id))) = self.timers.peek().copied() {
            if deadline > now {
                break;
            }
            self.timers.pop();
            if let Some((p, w)) = self.find_wait(On::Timer(id)) {
                self.flip(p, w, None);
            }
            if self.outcome.is_some() {
                return;
            }
        }
        self.reset_sleep();
    }

    /// Point the loop's sleep at the earliest timer.
    pub(super) fn reset_sleep(&mut self) {
        match self.timers.peek() {
            None => self.sleep = None,
            Some(Reverse((deadline, _))) => match &mut self.sleep {
                Some(sleep) => sleep.as_mut().reset(*deadline),
                None => self.sleep = Some(Box::pin(tokio::time::sleep_until(*deadline))),
            },
        }
    }

    /// The flip (SRD-027 FR-4): take the parked entry `p` out of the set (keeping
    /// the others in parking order) — so no
    /// later delivery finds it — drop its other subscriptions, and send the track
    /// what wait `w` brought.
    fn flip(&mut self, p: usize, w: usize, payload: Option<Payload>) {
        let parked = self.parked.remove(p);
        // Every subscription goes, the winning one too: a signal's stays in the
        // index until unsubscribed (a message's is gone already; this is a no-op).
        self.disarm(&parked);
        let arm = parked.waits[w].arm;
        let apply = match (trigger(&self.process.nodes[arm].kind), payload) {
            (
                Some(
                    Trigger::Message {
                        apply: Some(apply), ..
                    }
                    | Trigger::Signal {
                        apply: Some(apply), ..
                    },
                ),
                Some(p),
            ) => {
                let apply = *apply;
                Some(Box::new(move |data: &mut D| {
                    apply(data, &p).map_err(|expected| {
                        TaskError::new(format!(
                            "the payload is not the `{expected}` this catch maps"
                        ))
                    })
                }) as Apply<D>)
            }
            _ => None,
        };
        self.deliver(parked.track, parked.at, arm, apply);
    }

    /// Send a flipped track its delivery; it reports back like a finished task.
    fn deliver(&mut self, track: TrackId, at: NodeIdx, arm: NodeIdx, apply: Option<Apply<D>>) {
        if arm != at {
            // An event-based gateway's arm won: the token moves on to it.
            let to = vec![self.process.nodes[arm].id];
            self.record(track, at, Happening::Routed { to });
            if let Some(slot) = self.slot_mut(track) {
                slot.at = arm;
            }
        }
        let base = Arc::clone(&self.data);
        self.send_to_track(
            track,
            Instruction::Deliver {
                node: arm,
                base,
                apply,
            },
        );
    }

    // ----- user tasks ---------------------------------------------------------

    pub(super) fn open_work(&self) -> Vec<OpenWork> {
        self.parked
            .iter()
            .filter(|p| p.waits.iter().any(|w| w.on == On::User))
            .map(|p| OpenWork {
                node: self.process.nodes[p.at].id,
                track: p.track,
            })
            .collect()
    }

    /// The earliest parked user task called `node`.
    fn find_work(&self, node: &str) -> Option<usize> {
        let mut found: Vec<(usize, TrackId)> = self
            .parked
            .iter()
            .enumerate()
            .filter(|(_, p)| {
                self.process.nodes[p.at].id == node && p.waits.iter().any(|w| w.on == On::User)
            })
            .map(|(i, p)| (i, p.track))
            .collect();
        found.sort_by_key(|(_, track)| *track);
        found.first().map(|(i, _)| *i)
    }

    pub(super) fn complete_work(
        &mut self,
        node: &str,
        update: WorkUpdate<D>,
    ) -> Result<(), WorkError> {
        let p = self.find_work(node).ok_or_else(|| WorkError::NoOpenWork {
            node: node.to_string(),
        })?;
        let parked = self.parked.remove(p);
        let apply: Apply<D> = Box::new(move |data: &mut D| {
            update(data);
            Ok(())
        });
        self.deliver(parked.track, parked.at, parked.at, Some(apply));
        Ok(())
    }

    pub(super) fn fail_work(&mut self, node: &str, message: String) -> Result<(), WorkError> {
        let p = self.find_work(node).ok_or_else(|| WorkError::NoOpenWork {
            node: node.to_string(),
        })?;
        let parked = self.parked.remove(p);
        let id = self.process.nodes[parked.at].id;
        warn!(track = %parked.track, node = id, %message, "user task failed");
        self.record(
            parked.track,
            parked.at,
            Happening::Failed {
                message: message.clone(),
            },
        );
        self.fail(InstanceError::TaskFailed { node: id, message });
        Ok(())
    }

    // ----- throws -------------------------------------------------------------

    /// Send what a throw event throws.
    pub(super) fn throw(
        &mut self,
        track: TrackId,
        at: NodeIdx,
        throw: &Throw<D>,
    ) -> Result<(), InstanceError> {
        let id = self.process.nodes[at].id;
        let catchers = match throw {
            Throw::Signal { name, payload } => {
                let payload = self.payload(id, *payload)?;
                self.hub.broadcast(name, payload)
            }
            Throw::Message { name, key, payload } => {
                let key = self.user_code(id, || key(&self.data))?;
                let payload = self.payload(id, *payload)?;
                usize::from(
                    self.hub.publish(name, &key, payload) == crate::events::Published::Delivered,
                )
            }
        };
        self.record(track, at, Happening::Thrown { catchers });
        Ok(())
    }

    fn payload(
        &self,
        node: &'static str,
        make: Option<fn(&D) -> Payload>,
    ) -> Result<Payload, InstanceError> {
        match make {
            Some(make) => self.user_code(node, || make(&self.data)),
            None => Ok(Arc::new(())),
        }
    }

    /// Run user code the loop evaluates (a key, a payload, a timer), turning a panic
    /// into an error naming the node.
    fn user_code<T>(
        &self,
        node: &'static str,
        code: impl FnOnce() -> T,
    ) -> Result<T, InstanceError> {
        catch_unwind(AssertUnwindSafe(code)).map_err(|panic| InstanceError::TaskPanicked {
            node,
            message: panic_message(panic),
        })
    }
}

/// The trigger of a catch or receive task.
fn trigger<D>(kind: &NodeKind<D>) -> Option<&Trigger<D>> {
    match kind {
        NodeKind::Catch(trigger) | NodeKind::Receive(trigger) => Some(trigger),
        _ => None,
    }
}
