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
use std::collections::BinaryHeap;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::pin::Pin;
use std::sync::Arc;

use tokio::time::{Instant, Sleep};
use tracing::{debug, warn};

use super::event_loop::{Instance, TrackState};
use super::history::{Happening, TrackId};
use super::scope::ScopeId;
use super::track::{panic_message, Apply, Instruction};
use super::{OpenWork, WorkError, WorkUpdate};
use crate::data::{ProcessData, TaskError};
use crate::events::{Delivery, Mailbox, SubId};
use crate::graph::{NodeIdx, NodeKind, Payload, Throw, Trigger};
use crate::instance::InstanceError;

/// A set of armed triggers and whose they are: a parked track waiting for them, the
/// boundary events of a working activity, or the event sub-process starts of a
/// running scope.
pub(super) struct Parked {
    pub holder: Holder,
    /// Where it waits: the catch, receive or user task, or the event-based gateway;
    /// for a guard, the activity; for a scope, its sub-process (for the process's
    /// own scope, its first event sub-process start).
    pub at: NodeIdx,
    /// One wait per trigger: a single one, or one per arm of an event-based gateway,
    /// or one per subscribing boundary event or event sub-process start.
    pub waits: Vec<Wait>,
}

/// Whose triggers a [`Parked`] entry holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Holder {
    /// A parked track: the first trigger to fire flips it out and moves it on.
    Track(TrackId),
    /// The boundary events armed while the track's activity works (the track is not
    /// parked; the entry lives exactly as long as the activity).
    Guard(TrackId),
    /// The event sub-process starts of a running scope, armed while it is open.
    Scope(ScopeId),
}

/// The loop's own timers and conditional events, made on first need: most instances
/// arm neither, and out of line they cost such an instance one pointer.
pub(super) struct Clock<D: 'static> {
    /// Armed conditional events, in arming order, and those found true and not yet
    /// fired.
    pub conditions: Vec<ArmedCondition<D>>,
    pub due: Vec<u64>,
    /// Armed timers: (deadline, id), earliest first, and the sleep that wakes the
    /// loop for the earliest.
    pub timers: BinaryHeap<Reverse<(Instant, u64)>>,
    pub sleep: Option<Pin<Box<Sleep>>>,
    /// While a timer fires: the deadline it fired for (a cycle's next one counts
    /// from it).
    pub timer_due: Option<Instant>,
}

impl<D> Clock<D> {
    fn new() -> Self {
        Self {
            conditions: Vec::new(),
            due: Vec::new(),
            timers: BinaryHeap::new(),
            sleep: None,
            timer_due: None,
        }
    }
}

/// An armed conditional event (ADR-006 §2.7), in arming order.
pub(super) struct ArmedCondition<D: 'static> {
    id: u64,
    node: NodeIdx,
    condition: crate::graph::Condition<D>,
    on: &'static [&'static str],
    /// The value at the last evaluation: it fires on a false→true edge.
    last: bool,
}

/// One armed trigger of a parked track.
pub(super) struct Wait {
    /// The node whose trigger this is (the catch itself, a gateway's arm, a boundary).
    pub arm: NodeIdx,
    pub on: On,
    /// How often it fired (a non-interrupting boundary's timer cycle re-arms).
    pub fired: u32,
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
    /// A loop-owned conditional event.
    Condition(u64),
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
            return self.fail(InstanceError::Internal {
                what: "a parking track is not live",
            });
        }
        // Park before register: the loop knows the track is parked before any
        // subscription that could target it exists.
        self.hold(Holder::Track(track), at, arms);
        if self.outcome.is_none()
            && matches!(
                self.process.nodes[at].kind,
                NodeKind::Receive(_) | NodeKind::User
            )
        {
            self.guard(track, at);
        }
        // Conditions true when armed fire now that the wait is complete.
        self.fire_due();
    }

    /// Arm the boundary events of the activity `at` that the track starts: their
    /// subscriptions live exactly as long as the activity (ADR-006 §2.3). Error and
    /// escalation boundaries need none: they match what the activity's handler returns.
    pub(super) fn guard(&mut self, track: TrackId, at: NodeIdx) {
        let boundaries = self.process.nodes[at].boundaries;
        let subscribing = |&&b: &&NodeIdx| {
            !matches!(
                self.process.nodes[b].kind,
                NodeKind::Boundary {
                    trigger: Trigger::Error { .. } | Trigger::Escalation { .. },
                    ..
                }
            )
        };
        if !boundaries.iter().any(|b| subscribing(&b)) {
            return;
        }
        let arms: Vec<NodeIdx> = boundaries.iter().filter(subscribing).copied().collect();
        self.hold(Holder::Guard(track), at, &arms);
    }

    /// Arm the triggers of `arms` in one new entry of `holder`'s (a guard's boundary
    /// events, a scope's event sub-process starts).
    pub(super) fn hold(&mut self, holder: Holder, at: NodeIdx, arms: &[NodeIdx]) {
        // Most instances hold a few entries at a time: grow one entry at a time.
        self.parked.reserve_exact(1);
        self.parked.push(Parked {
            holder,
            at,
            waits: Vec::with_capacity(arms.len()),
        });
        for &arm in arms {
            match self.arm(arm) {
                Ok(on) => self
                    .parked
                    .last_mut()
                    .expect("just pushed")
                    .waits
                    .push(Wait { arm, on, fired: 0 }),
                Err(error) => return self.fail(error),
            }
        }
    }

    /// The activity of `track` ended: drop its boundary events.
    pub(super) fn unguard(&mut self, track: TrackId) {
        if let Some(g) = self
            .parked
            .iter()
            .position(|p| p.holder == Holder::Guard(track))
        {
            let guard = self.parked.remove(g);
            self.disarm(&guard);
        }
    }

    /// The boundary of `activity` that catches what its handler returned: an error
    /// (or escalation) boundary with that code, else one without a code.
    pub(super) fn catching_boundary(
        &self,
        activity: NodeIdx,
        error: bool,
        code: &str,
    ) -> Option<NodeIdx> {
        let code_of = |b: NodeIdx| match &self.process.nodes[b].kind {
            NodeKind::Boundary {
                trigger: Trigger::Error { code, .. },
                ..
            } if error => Some(*code),
            NodeKind::Boundary {
                trigger: Trigger::Escalation { code, .. },
                ..
            } if !error => Some(*code),
            _ => None,
        };
        let boundaries = self.process.nodes[activity].boundaries;
        let exact = boundaries
            .iter()
            .copied()
            .find(|&b| code_of(b) == Some(Some(code)));
        exact.or_else(|| {
            boundaries
                .iter()
                .copied()
                .find(|&b| code_of(b) == Some(None))
        })
    }

    /// Arm the trigger of `arm`: subscribe with the hub, start a timer, or open work.
    pub(super) fn arm(&mut self, arm: NodeIdx) -> Result<On, InstanceError> {
        let node = &self.process.nodes[arm];
        let trigger = match (&node.kind, trigger(&node.kind)) {
            (NodeKind::User, _) => return Ok(On::User),
            (_, Some(trigger)) => trigger,
            _ => {
                return Err(InstanceError::Internal {
                    what: "an armed node has no trigger",
                })
            }
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
                    self.clock().timers.push(Reverse((deadline, id)));
                    self.reset_sleep();
                }
                On::Timer(id)
            }
            Trigger::Condition { condition, on } => {
                let id = self.next_timer;
                self.next_timer += 1;
                // Evaluated once when armed, on the data as it is now: true fires at
                // once — as soon as the arming is complete (`fire_due`).
                let now = self.user_code(node.id, || condition(&self.data))?;
                if now {
                    self.clock().due.push(id);
                }
                let armed = ArmedCondition {
                    id,
                    node: arm,
                    condition: *condition,
                    on,
                    last: now,
                };
                self.clock().conditions.push(armed);
                On::Condition(id)
            }
            // Not subscriptions: matched against what a handler returns.
            Trigger::Error { .. } | Trigger::Escalation { .. } => {
                return Err(InstanceError::Internal {
                    what: "an error or escalation armed as a subscription",
                })
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

    /// Drop every subscription of a parked entry: hub subscriptions, conditions and
    /// timers (so a loop through an activity with a long timeout does not pile up
    /// dead deadlines); open work goes with the entry.
    pub(super) fn disarm(&mut self, parked: &Parked) {
        for wait in &parked.waits {
            match wait.on {
                On::Hub(sub) => self.hub.unsubscribe(sub),
                On::Condition(id) => {
                    if let Some(clock) = &mut self.clock {
                        clock.conditions.retain(|c| c.id != id);
                    }
                }
                On::Timer(id) => {
                    if let Some(clock) = &mut self.clock {
                        clock.timers.retain(|Reverse((_, timer))| *timer != id);
                    }
                    self.reset_sleep();
                }
                On::User => {}
            }
        }
    }

    /// Disarm every parked track (the instance is stopping).
    pub(super) fn disarm_all(&mut self) {
        for parked in std::mem::take(&mut self.parked) {
            self.disarm(&parked);
        }
        self.clock = None;
    }

    /// The loop's timers and conditions, made on first need.
    fn clock(&mut self) -> &mut Clock<D> {
        self.clock.get_or_insert_with(|| Box::new(Clock::new()))
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

    /// Fire every timer that is due, in deadline order.
    pub(super) fn on_timers(&mut self) {
        let now = Instant::now();
        while let Some(Reverse((deadline, id))) =
            self.clock.as_ref().and_then(|c| c.timers.peek().copied())
        {
            if deadline > now {
                break;
            }
            self.clock().timers.pop();
            if let Some((p, w)) = self.find_wait(On::Timer(id)) {
                self.clock().timer_due = Some(deadline);
                self.flip(p, w, None);
                if let Some(clock) = &mut self.clock {
                    clock.timer_due = None;
                }
            }
            if self.outcome.is_some() {
                return;
            }
        }
        self.reset_sleep();
    }

    /// Point the loop's sleep at the earliest timer.
    pub(super) fn reset_sleep(&mut self) {
        let Some(clock) = &mut self.clock else {
            return;
        };
        match clock.timers.peek() {
            None => clock.sleep = None,
            Some(Reverse((deadline, _))) => match &mut clock.sleep {
                Some(sleep) => sleep.as_mut().reset(*deadline),
                None => clock.sleep = Some(Box::pin(tokio::time::sleep_until(*deadline))),
            },
        }
    }

    /// The flip (SRD-027 FR-4): take the parked entry `p` out of the set (keeping
    /// the others in parking order) — so no
    /// later delivery finds it — drop its other subscriptions, and send the track
    /// what wait `w` brought.
    fn flip(&mut self, p: usize, w: usize, payload: Option<Payload>) {
        let track = match self.parked[p].holder {
            Holder::Track(track) => track,
            Holder::Guard(_) => return self.boundary_fires(p, w, payload),
            Holder::Scope(_) => return self.event_sub_fires(p, w, payload),
        };
        let parked = self.parked.remove(p);
        // Every subscription goes, the winning one too: a signal's stays in the
        // index until unsubscribed (a message's is gone already; this is a no-op).
        self.disarm(&parked);
        let arm = parked.waits[w].arm;
        let apply = self.apply_for(arm, payload);
        self.deliver(track, parked.at, arm, apply);
    }

    /// What a delivery to `arm` does to the data: its `apply` mapping of the payload.
    pub(super) fn apply_for(&self, arm: NodeIdx, payload: Option<Payload>) -> Option<Apply<D>> {
        let apply = match trigger(&self.process.nodes[arm].kind)? {
            Trigger::Message { apply, .. }
            | Trigger::Signal { apply, .. }
            | Trigger::Error { apply, .. }
            | Trigger::Escalation { apply, .. } => *apply,
            Trigger::Timer(_) | Trigger::Condition { .. } => None,
        };
        let (apply, payload) = (apply?, payload?);
        Some(Box::new(move |data: &mut D| {
            apply(data, &payload).map_err(|expected| {
                TaskError::new(format!(
                    "the payload is not the `{expected}` this catch maps"
                ))
            })
        }))
    }

    /// A boundary event of a working activity fired (ADR-006 §2.2): an interrupting
    /// one stops the activity and the token goes on from the boundary; a
    /// non-interrupting one starts a new token there and stays armed.
    fn boundary_fires(&mut self, g: usize, w: usize, payload: Option<Payload>) {
        let boundary = self.parked[g].waits[w].arm;
        let Holder::Guard(track) = self.parked[g].holder else {
            return;
        };
        let NodeKind::Boundary { interrupting, .. } = self.process.nodes[boundary].kind else {
            return;
        };
        let apply = self.apply_for(boundary, payload);
        if interrupting {
            let guard = self.parked.remove(g);
            self.disarm(&guard);
            return self.interrupt(track, guard.at, boundary, apply);
        }
        self.rearm(g, w, boundary);
        if self.outcome.is_none() {
            self.fork_to(track, boundary, apply);
        }
    }

    /// A non-interrupting trigger (wait `w` of entry `g`, for `node`) fired and stays
    /// armed: re-arm what the firing used up.
    pub(super) fn rearm(&mut self, g: usize, w: usize, node: NodeIdx) {
        let Some(trigger) = trigger(&self.process.nodes[node].kind) else {
            return;
        };
        let wait = &mut self.parked[g].waits[w];
        wait.fired += 1;
        let fired = wait.fired;
        match (trigger, wait.on) {
            (Trigger::Timer(spec), On::Timer(id)) => {
                // A cycle fires again, counted from the deadline it fired for, so a
                // late firing does not shift the schedule (and missed ticks catch
                // up); a one-off timer is spent (its wait stays, idle).
                let due = self.clock().timer_due.unwrap_or_else(Instant::now);
                let spec = match self.user_code(self.process.nodes[node].id, spec) {
                    Ok(spec) => spec,
                    Err(error) => return self.fail(error),
                };
                if let Some(next) = spec.next(fired, due) {
                    self.clock().timers.push(Reverse((next, id)));
                    self.reset_sleep();
                }
            }
            (Trigger::Message { name, key, .. }, On::Hub(_)) => {
                // A message served this subscription: subscribe again for the next.
                let id = self.process.nodes[node].id;
                match self.user_code(id, || key(&self.data)) {
                    Ok(key) => {
                        let mailbox = self.mailbox();
                        let sub = self.hub.subscribe_message(name, &key, &mailbox);
                        self.parked[g].waits[w].on = On::Hub(sub);
                    }
                    Err(error) => self.fail(error),
                }
            }
            // A signal subscription stays; a condition re-arms on its next edge.
            _ => {}
        }
    }

    /// A new token starts at `boundary` (forked from `track`) and takes the delivery.
    pub(super) fn fork_to(&mut self, track: TrackId, boundary: NodeIdx, apply: Option<Apply<D>>) {
        let scope = self.slot_mut(track).map_or(super::scope::ROOT, |s| s.scope);
        let fork = self.new_track(boundary, scope);
        self.record(fork, boundary, Happening::Spawned { from: track });
        if let Some(slot) = self.slot_mut(fork) {
            slot.state = TrackState::Working;
        }
        self.running += 1;
        self.deliver(fork, boundary, boundary, apply);
    }

    /// Stop the activity `activity` of `track` — its handler is dropped, its wait
    /// (a receive or user task) withdrawn — and go on from `boundary` on a new track.
    /// The old track ends, so a report its work may still send finds no track.
    pub(super) fn interrupt(
        &mut self,
        track: TrackId,
        activity: NodeIdx,
        boundary: NodeIdx,
        apply: Option<Apply<D>>,
    ) {
        // A sub-process's work is its scope: everything in it is cancelled.
        self.cancel_owned_scope(track);
        self.withdraw(track);
        let by = self.process.nodes[boundary].id;
        self.record(track, activity, Happening::Interrupted { by });
        self.fork_to(track, boundary, apply);
        self.remove_track(track);
    }

    /// Drop what `track` holds armed: its activity's boundary events and its wait.
    pub(super) fn withdraw(&mut self, track: TrackId) {
        self.unguard(track);
        if let Some(p) = self
            .parked
            .iter()
            .position(|p| p.holder == Holder::Track(track))
        {
            let wait = self.parked.remove(p);
            self.disarm(&wait);
        }
    }

    /// Send a flipped track its delivery; it reports back like a finished task.
    pub(super) fn deliver(
        &mut self,
        track: TrackId,
        at: NodeIdx,
        arm: NodeIdx,
        apply: Option<Apply<D>>,
    ) {
        // The activity's event has come (a receive task's message, a user task's
        // completion): from here it is completing, so its boundary events go now —
        // one firing before the track reports back would drop what was delivered.
        self.unguard(track);
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

    // ----- conditional events -------------------------------------------------

    /// Re-evaluate the armed conditions after a commit (ADR-006 §2.7): those whose
    /// dependency list the commit's `changed` fields meet (no list: every commit).
    /// One commit is one snapshot: all are evaluated first, then the false→true edges
    /// fire in arming order — a firing that withdraws a later one (an interrupting
    /// boundary) voids it.
    pub(super) fn recheck_conditions(&mut self, changed: &crate::ChangedFields) {
        let (data, Some(clock)) = (&self.data, self.clock.as_mut()) else {
            return;
        };
        if clock.conditions.is_empty() {
            return;
        }
        let mut due = Vec::new();
        let mut failed = None;
        for armed in &mut clock.conditions {
            if !(armed.on.is_empty() || armed.on.iter().any(|f| changed.contains(f))) {
                continue;
            }
            match catch_unwind(AssertUnwindSafe(|| (armed.condition)(data))) {
                Ok(now) => {
                    if now && !armed.last {
                        due.push(armed.id);
                    }
                    armed.last = now;
                }
                Err(panic) => {
                    let node = self.process.nodes[armed.node].id;
                    failed = Some(InstanceError::TaskPanicked {
                        node,
                        message: panic_message(panic),
                    });
                    break;
                }
            }
        }
        if let Some(error) = failed {
            return self.fail(error);
        }
        // Conditions found true when armed and not fired yet keep their turn.
        self.clock().due.extend(due);
        self.fire_due();
    }

    /// Fire the conditions found true (at arming, or on a commit's edge), in arming
    /// order; one that a previous firing withdrew is void.
    pub(super) fn fire_due(&mut self) {
        let due = match &mut self.clock {
            Some(clock) => std::mem::take(&mut clock.due),
            None => return,
        };
        for id in due {
            if self.outcome.is_some() {
                return;
            }
            if let Some((p, w)) = self.find_wait(On::Condition(id)) {
                self.flip(p, w, None);
            }
        }
    }

    // ----- user tasks ---------------------------------------------------------

    pub(super) fn open_work(&self) -> Vec<OpenWork> {
        self.parked
            .iter()
            .filter_map(|p| match p.holder {
                Holder::Track(track) if p.waits.iter().any(|w| w.on == On::User) => {
                    Some(OpenWork {
                        node: self.process.nodes[p.at].id,
                        track,
                    })
                }
                _ => None,
            })
            .collect()
    }

    /// The earliest parked user task called `node`.
    fn find_work(&self, node: &str) -> Option<(usize, TrackId)> {
        let mut found: Vec<(usize, TrackId)> = self
            .parked
            .iter()
            .enumerate()
            .filter_map(|(i, p)| match p.holder {
                Holder::Track(track)
                    if self.process.nodes[p.at].id == node
                        && p.waits.iter().any(|w| w.on == On::User) =>
                {
                    Some((i, track))
                }
                _ => None,
            })
            .collect();
        found.sort_by_key(|(_, track)| *track);
        found.first().copied()
    }

    pub(super) fn complete_work(
        &mut self,
        node: &str,
        update: WorkUpdate<D>,
    ) -> Result<(), WorkError> {
        let (p, track) = self.find_work(node).ok_or_else(|| WorkError::NoOpenWork {
            node: node.to_string(),
        })?;
        let parked = self.parked.remove(p);
        let apply: Apply<D> = Box::new(move |data: &mut D| {
            update(data);
            Ok(())
        });
        self.deliver(track, parked.at, parked.at, Some(apply));
        Ok(())
    }

    /// The user task `node` raises an error (`Some(message)`) or an escalation: its
    /// own boundary catches it first, then the scopes around it.
    pub(super) fn raise_from_work(
        &mut self,
        node: &str,
        code: String,
        error: Option<String>,
    ) -> Result<(), WorkError> {
        let (p, track) = self.find_work(node).ok_or_else(|| WorkError::NoOpenWork {
            node: node.to_string(),
        })?;
        let at = self.parked[p].at;
        match error {
            Some(message) => {
                self.record(track, at, Happening::ErrorThrown { code: code.clone() });
                // The user task's work ends with the error, caught or not.
                let wait = self.parked.remove(p);
                self.disarm(&wait);
                self.throw_error(track, at, code, message);
            }
            None => {
                // Caught beside it, or not at all, the user task stays open.
                self.record(track, at, Happening::Escalated { code: code.clone() });
                self.throw_escalation(track, at, code);
            }
        }
        Ok(())
    }

    pub(super) fn fail_work(&mut self, node: &str, message: String) -> Result<(), WorkError> {
        let (p, track) = self.find_work(node).ok_or_else(|| WorkError::NoOpenWork {
            node: node.to_string(),
        })?;
        let parked = self.parked.remove(p);
        let id = self.process.nodes[parked.at].id;
        warn!(track = %track, node = id, %message, "user task failed");
        self.record(
            track,
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

/// The trigger of a catch, receive task or boundary event.
fn trigger<D>(kind: &NodeKind<D>) -> Option<&Trigger<D>> {
    match kind {
        NodeKind::Catch(trigger)
        | NodeKind::Receive(trigger)
        | NodeKind::Boundary { trigger, .. }
        | NodeKind::EventSubStart { trigger, .. }
        | NodeKind::StartEvent(trigger) => Some(trigger),
        _ => None,
    }
}
