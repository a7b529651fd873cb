//! Events reaching armed waits: hub deliveries, timers and conditions; the flip on
//! first dispatch; boundary events firing; the delivery to a flipped track.
//! ARCHITECTURE.md, "The instance loop" (flip on dispatch) and "Events".
//!
//! The first delivery that matches takes its armed entry out of the set and is sent
//! to the track; later ones find nothing and are dropped — which makes an event-based
//! gateway's deferred choice atomic, whatever its triggers (the hub serves one arm
//! of a gateway's: `events/hub.rs`, choices). Message correlation follows the data:
//! a commit that changes what a waiting catch's key reads moves its subscription
//! (`Instance::follow_keys`).

use tokio::time::Instant;
use tracing::debug;

use super::core::Instance;
use super::history::Happening;
use super::outcome::InstanceError;
use super::park::{Apply, Instruction};
use super::state::armed::{EventSource, Holder};
use super::state::ids::TrackId;
use super::state::tracks::TrackState;
use crate::data::{ChangedFields, ProcessData, TaskError};
use crate::events::Delivery;
use crate::graph::{ApplyFailure, NodeIdx, NodeKind, Payload, Trigger};

impl<D: ProcessData> Instance<D> {
    /// A delivery from the hub.
    pub(crate) fn on_event(&mut self, delivery: Delivery) {
        match delivery {
            Delivery::Message {
                sub,
                name,
                key,
                payload,
                stored,
            } => {
                let Some((p, w)) = self.armed.find(EventSource::Hub(sub)) else {
                    // The wait was withdrawn while the message was on its way (its
                    // activity interrupted, its scope ended): it goes back to the
                    // broker for another waiter, uncounted. (A gateway's losing arm
                    // is never served: the hub closed it with the winner.)
                    self.hub.give_back(&name, &key, payload, stored);
                    return;
                };
                let arm = self.armed.entry(p).waits[w].arm;
                if !matches!(
                    self.process.nodes[arm].kind.trigger(),
                    Some(Trigger::Message { .. })
                ) {
                    return self
                        .internal(arm, "a message came for a wait that is no message catch");
                }
                // The broker served the subscription under the key the wait had
                // then; a commit since moves the subscription, not this message,
                // which matched (`follow_keys`). Its stored copy goes with the
                // checkpoint recording its effect.
                debug!(node = self.process.nodes[arm].id, message = &*name, %key, "message taken");
                #[cfg(feature = "durable")]
                self.consume_stored(stored);
                self.flip(p, w, Some(payload))
            }
            Delivery::Signal { sub, payload, ack } => {
                // No armed wait: a duplicate or a losing arm — dropped (flip on dispatch).
                let Some((p, w)) = self.armed.find(EventSource::Hub(sub)) else {
                    return drop(ack.map(|ack| ack.send(Ok(()))));
                };
                // A durable broadcast hears back once the effect is stored.
                #[cfg(feature = "durable")]
                let ack = match (ack, &mut self.durable) {
                    (Some(ack), Some(durable)) => {
                        durable.acks.push(ack.into());
                        None
                    }
                    (ack, _) => ack,
                };
                self.flip(p, w, Some(payload));
                if let Some(ack) = ack {
                    let _ = ack.send(Ok(()));
                }
            }
        }
    }

    /// Fire every timer that is due, in deadline order.
    pub(crate) fn on_timers(&mut self) {
        let now = Instant::now();
        while let Some((deadline, id)) = self.timers.pop_due(now) {
            if let Some((p, w)) = self.armed.find(EventSource::Timer(id)) {
                self.timers.set_firing(Some(deadline));
                self.flip(p, w, None);
                self.timers.set_firing(None);
            } else {
                self.backoff_due(id);
            }
            if self.outcome.is_some() {
                return;
            }
        }
    }

    /// The flip on dispatch: take the armed entry `p` out of the set (keeping the
    /// others in arming order) — so no later delivery finds it — drop its other
    /// subscriptions, and send the track what wait `w` brought.
    pub(crate) fn flip(&mut self, p: usize, w: usize, payload: Option<Payload>) {
        let entry = self.armed.entry(p);
        let track = match entry.holder {
            Holder::Track(track) => track,
            Holder::Guard(_) => return self.boundary_fires(p, w, payload),
            Holder::Scope(_) => return self.event_sub_fires(p, w, payload),
        };
        if let Some(choice) = entry.choice {
            // A loop-side trigger (a timer, a condition) of a gateway's arms wins
            // only by closing the choice; if the hub served an arm first, its
            // message or signal is on its way and wins — this trigger is spent.
            if !matches!(entry.waits[w].source, EventSource::Hub(_))
                && !self.hub.close_choice(choice)
            {
                debug!(
                    node = self.process.nodes[entry.at].id,
                    "a served arm wins the gateway"
                );
                return;
            }
        }
        let parked = self.armed.remove(p);
        // Every subscription goes, the winning one too: a signal's stays in the
        // index until unsubscribed (a message's is gone already; this is a no-op).
        self.disarm(&parked);
        let arm = parked.waits[w].arm;
        let apply = self.apply_for(arm, payload);
        self.deliver(track, parked.at, arm, apply);
    }

    /// What a delivery to `arm` does to the data: its `apply` mapping of the payload.
    pub(crate) fn apply_for(&self, arm: NodeIdx, payload: Option<Payload>) -> Option<Apply<D>> {
        let apply = match self.process.nodes[arm].kind.trigger()? {
            Trigger::Message { apply, .. }
            | Trigger::Signal { apply, .. }
            | Trigger::Error { apply, .. }
            | Trigger::Escalation { apply, .. } => *apply,
            Trigger::Timer(_) | Trigger::Condition { .. } => None,
        };
        let (apply, payload) = (apply?, payload?);
        Some(Box::new(move |data: &mut D| {
            apply(data, &payload).map_err(|failure| match failure {
                ApplyFailure::WrongPayload(expected) => TaskError::new(format!(
                    "the payload is not the `{expected}` this catch maps"
                )),
                // A BPMN error or escalation goes on as a task's would (`task_done`).
                ApplyFailure::Raised(error) => error,
            })
        }))
    }

    /// A boundary event of a working activity fired : an interrupting
    /// one stops the activity and the token goes on from the boundary; a
    /// non-interrupting one starts a new token there and stays armed.
    pub(crate) fn boundary_fires(&mut self, g: usize, w: usize, payload: Option<Payload>) {
        let boundary = self.armed.entry(g).waits[w].arm;
        let Holder::Guard(track) = self.armed.entry(g).holder else {
            return;
        };
        let NodeKind::Boundary { interrupting, .. } = self.process.nodes[boundary].kind else {
            return;
        };
        if interrupting {
            if let Some(choice) = self.armed.entry(g).choice {
                // A deferred choice (a receive task's message, a task's or user task's completion, or this boundary):
                // a loop-side trigger wins only by closing it; if the hub served a
                // member first, that delivery is on its way and wins.
                if !matches!(self.armed.entry(g).waits[w].source, EventSource::Hub(_))
                    && !self.hub.close_choice(choice)
                {
                    debug!(
                        node = self.process.nodes[boundary].id,
                        "a served message wins the activity"
                    );
                    return;
                }
            }
        }
        let apply = self.apply_for(boundary, payload);
        if interrupting {
            // The guard goes with the activity's withdrawal.
            let at = self.armed.entry(g).at;
            return self.interrupt(track, at, boundary, apply);
        }
        self.rearm(g, w, boundary);
        if self.outcome.is_none() {
            self.fork_to(track, boundary, apply);
        }
    }

    /// A non-interrupting trigger (wait `w` of entry `g`, for `node`) fired and stays
    /// armed: re-arm what the firing used up.
    pub(crate) fn rearm(&mut self, g: usize, w: usize, node: NodeIdx) {
        let Some(trigger) = self.process.nodes[node].kind.trigger() else {
            return;
        };
        let (fired, source) = self.armed.fired(g, w);
        match (trigger, source) {
            (Trigger::Timer(spec), EventSource::Timer(id)) => {
                // A cycle fires again, counted from the deadline it fired for, so a
                // late firing does not shift the schedule (and missed ticks catch
                // up); a one-off timer is spent (its wait stays, idle).
                let due = self.timers.firing().unwrap_or_else(Instant::now);
                let node_id = self.process.nodes[node].id;
                let spec = match self.user_code(node_id, || spec.spec(&self.data)) {
                    Ok(spec) => spec,
                    Err(error) => return self.fail(error),
                };
                if let Some(next) = spec.next(fired, due) {
                    self.timers.schedule(id, next);
                }
            }
            (
                Trigger::Message {
                    name,
                    key,
                    payload_type,
                    ..
                },
                EventSource::Hub(_),
            ) => {
                // A message served this subscription: subscribe again for the next.
                let id = self.process.nodes[node].id;
                match self.user_code(id, || key(&self.data)) {
                    Ok(key) => {
                        let key: std::sync::Arc<str> = key.into();
                        let mailbox = self.mailbox();
                        let on = (*name, payload_type());
                        let sub = self.hub.subscribe_message(on, &key, &mailbox, None);
                        self.armed.resubscribed(g, w, EventSource::Hub(sub), key);
                    }
                    Err(error) => self.fail(error),
                }
            }
            // A signal subscription stays; a condition re-arms on its next edge.
            _ => {}
        }
    }

    /// A new token starts at `boundary` (forked from `track`) and takes the delivery.
    pub(crate) fn fork_to(&mut self, track: TrackId, boundary: NodeIdx, apply: Option<Apply<D>>) {
        let scope = self.scope_of(track);
        let fork = self.new_track(boundary, scope);
        self.record(fork, boundary, Happening::Spawned { from: track });
        self.tracks.set_state(fork, TrackState::Working);
        self.deliver(fork, boundary, boundary, apply);
    }

    /// Stop the activity `activity` of `track` — its handler is dropped, its wait
    /// (a receive or user task) withdrawn — and go on from `boundary` on a new track.
    /// The old track ends, so a report its work may still send finds no track.
    pub(crate) fn interrupt(
        &mut self,
        track: TrackId,
        activity: NodeIdx,
        boundary: NodeIdx,
        apply: Option<Apply<D>>,
    ) {
        // Non-interrupting message boundaries served before the interrupt have
        // fired too (`served_boundaries`).
        let served = match self.armed.holds(Holder::Guard(track)) {
            Some(guard) => self.served_boundaries(guard),
            None => Vec::new(),
        };
        let scope = self.scope_of(track);
        // A sub-process's work is its scope: everything in it is cancelled.
        self.cancel_owned_scope(track);
        self.withdraw(track);
        let by = self.process.nodes[boundary].id;
        self.record(track, activity, Happening::Interrupted { by });
        self.fork_to(track, boundary, apply);
        self.remove_track(track);
        self.park_served(track, scope, served);
    }

    /// Send a flipped track its delivery; it reports back like a finished task.
    pub(crate) fn deliver(
        &mut self,
        track: TrackId,
        at: NodeIdx,
        arm: NodeIdx,
        apply: Option<Apply<D>>,
    ) {
        // The activity's event has come (a receive task's message, a user task's
        // completion): from here it is completing, so its boundary events go now —
        // one firing before the track reports back would drop what was delivered.
        self.unguard_completed(track);
        if arm != at {
            // An event-based gateway's arm won: the token moves on to it.
            let process = self.process;
            let to = std::slice::from_ref(&process.nodes[arm].id).into();
            self.record(track, at, Happening::Routed { to });
            // Working first: a waiting track's node does not change (`Tracks::count`).
            self.tracks.set_state(track, TrackState::Working);
            if let Some(slot) = self.tracks.get_mut(track) {
                slot.at = arm;
            }
        }
        // Flipped: the track now applies what came, and reports like a finished task.
        self.tracks.set_state(track, TrackState::Working);
        let base = self.data.snapshot();
        self.send_to_track(
            track,
            arm,
            Instruction::Deliver {
                node: arm,
                base,
                apply,
            },
        );
    }

    /// Re-evaluate the armed conditions after a commit: those whose dependency list
    /// the commit's `changed` fields meet (no list: every commit). One commit is one
    /// snapshot: all are evaluated first, then the false→true edges fire in arming
    /// order — a firing that withdraws a later one (an interrupting boundary) voids it.
    #[inline]
    pub(crate) fn recheck_conditions(&mut self, changed: &ChangedFields) {
        // Asked at every commit that changed a field: most instances arm no
        // condition.
        if self.conditions.any_armed() {
            self.recheck_conditions_now(changed);
        }
    }

    #[inline(never)]
    fn recheck_conditions_now(&mut self, changed: &ChangedFields) {
        if let Err((node, message)) = self.conditions.recheck(&self.data, changed) {
            let node = self.process.nodes[node].id;
            return self.fail(InstanceError::TaskPanicked { node, message });
        }
        self.fire_due();
    }

    /// Fire the conditions found true (at arming, or on a commit's edge), in arming
    /// order; one that a previous firing withdrew is void.
    #[inline]
    pub(crate) fn fire_due(&mut self) {
        // Every task's start asks; a condition is rarely due.
        if self.conditions.any_due() {
            self.fire_due_now();
        }
    }

    #[inline(never)]
    fn fire_due_now(&mut self) {
        for id in self.conditions.take_due() {
            if self.outcome.is_some() {
                return;
            }
            if let Some((p, w)) = self.armed.find(EventSource::Condition(id)) {
                self.flip(p, w, None);
            }
        }
    }
}
