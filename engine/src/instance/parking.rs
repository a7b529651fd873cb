//! Tokens that wait for events, and the triggers armed for them: parking, arming and
//! disarming. ARCHITECTURE.md, "The instance loop" (park before register).
//!
//! A waiting token's track parks on its own channel. The loop records the wait as
//! armed before it registers any subscription, so no delivery can target a track it
//! does not know is parked.

use std::sync::Arc;

use tokio::time::Instant;

use super::core::Instance;
use super::history::Happening;
use super::outcome::InstanceError;
use super::state::armed::{ArmedEntry, EventSource, Holder, Wait};
use super::state::ids::{ScopeId, TrackId};
use super::state::tracks::TrackState;
use crate::data::{ChangedFields, ProcessData};
use crate::events::Mailbox;
use crate::graph::{NodeIdx, NodeKind, Trigger};

impl<D: ProcessData> Instance<D> {
    /// The token on `track` waits at `at` for the triggers of `arms` (the node itself,
    /// or an event-based gateway's arms).
    pub(crate) fn park(&mut self, track: TrackId, at: NodeIdx, arms: &[NodeIdx]) {
        self.record(track, at, Happening::Parked);
        // A parked track is active: an event can still move it.
        self.tracks.set_state(track, TrackState::Parked);
        // The track's task exists from here on, waiting on its channel.
        if self.park_sender(track).is_none() {
            return self.internal(at, "a parking track is not live");
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
            if matches!(self.process.nodes[at].kind, NodeKind::User) {
                self.open_task(track, at);
                // Its assignment panicked: the instance failed.
                if self.outcome.is_some() {
                    return;
                }
            }
            self.guard(track, at);
        }
        // Conditions true when armed fire now that the wait is complete.
        self.fire_due();
    }

    /// Arm the boundary events of the activity `at` that the track starts: their
    /// subscriptions live exactly as long as the activity (they are the activity's). Error and
    /// escalation boundaries need none: they match what the activity's handler returns.
    #[inline]
    pub(crate) fn guard(&mut self, track: TrackId, at: NodeIdx) {
        // Every task's start asks; most activities have no boundary events.
        if !self.process.nodes[at].boundaries.is_empty() {
            self.guard_boundaries(track, at);
        }
    }

    #[inline(never)]
    fn guard_boundaries(&mut self, track: TrackId, at: NodeIdx) {
        // An instance of a loop or multi-instance activity: the boundary events are
        // the whole activity's, armed for the token waiting at it.
        if self.is_instance(track) {
            return;
        }
        let boundaries = self.process.nodes[at].boundaries;
        // Compensation and cancel boundaries are never armed either: they are
        // not events the activity waits for.
        let subscribing = |&&b: &&NodeIdx| match &self.process.nodes[b].kind {
            NodeKind::Boundary { trigger, .. } => {
                !matches!(trigger, Trigger::Error { .. } | Trigger::Escalation { .. })
            }
            _ => false,
        };
        if !boundaries.iter().any(|b| subscribing(&b)) {
            return;
        }
        let arms: Vec<NodeIdx> = boundaries.iter().filter(subscribing).copied().collect();
        self.hold(Holder::Guard(track), at, &arms);
    }

    /// Arm the triggers of `arms` in one new entry of `holder`'s (a guard's boundary
    /// events, a scope's event sub-process starts).
    pub(crate) fn hold(&mut self, holder: Holder, at: NodeIdx, arms: &[NodeIdx]) {
        self.begin_entry(holder, at, arms.len());
        for &arm in arms {
            match self.arm(arm) {
                Ok((source, key)) => self.armed.push_wait(Wait {
                    arm,
                    source,
                    fired: 0,
                    key,
                }),
                Err(error) => return self.fail(error),
            }
        }
    }

    /// Add an armed entry whose `waits` triggers are armed next (by [`arm`](Self::arm)).
    /// A track waiting on several triggers — an event-based gateway's arms, or a
    /// receive task's message and its interrupting boundary events — makes one
    /// deferred choice: the hub serves at most one of its subscriptions, and a
    /// loop-side trigger of it wins only by closing it first. (The receive task's
    /// guard, armed after its wait, joins the wait's choice.)
    pub(crate) fn begin_entry(&mut self, holder: Holder, at: NodeIdx, waits: usize) {
        let choice = match holder {
            Holder::Track(_) if waits > 1 || self.interrupted_receive(at) => {
                Some(self.hub.open_choice())
            }
            // An activity's completion is a loop-side trigger racing its interrupting
            // message and signal boundaries: it wins only by closing their choice
            // (`completion_wins`). A receive task's guard joins its wait's choice.
            Holder::Guard(track) if matches!(self.process.nodes[at].kind, NodeKind::Receive(_)) => {
                match self.armed.holds(Holder::Track(track)) {
                    Some(wait) => wait.choice,
                    // A multi-instance receive task's activation: no wait of its own.
                    None if self.served_interrupt(at) => Some(self.hub.open_choice()),
                    None => None,
                }
            }
            Holder::Guard(_) if self.served_interrupt(at) => Some(self.hub.open_choice()),
            _ => None,
        };
        self.armed.push(holder, at, waits, choice);
    }

    /// Whether the activity `at` has an interrupting boundary event the hub serves
    /// (a message or a signal), which its completion races.
    fn served_interrupt(&self, at: NodeIdx) -> bool {
        self.process.nodes[at].boundaries.iter().any(|&b| {
            matches!(
                self.process.nodes[b].kind,
                NodeKind::Boundary {
                    interrupting: true,
                    trigger: Trigger::Message { .. } | Trigger::Signal { .. },
                    ..
                }
            )
        })
    }

    /// Whether the activity of `track` may complete now: it may unless the hub has
    /// served one of its interrupting boundaries a message or signal that is on its
    /// way — then that delivery wins (it interrupts the activity when it comes) and
    /// the completion is void, as if it had come after. Closing the boundaries'
    /// choice here is what makes the publisher's `Delivered` true.
    #[inline(never)]
    pub(crate) fn completion_wins(&mut self, track: TrackId) -> bool {
        match self
            .armed
            .holds(Holder::Guard(track))
            .and_then(|g| g.choice)
        {
            Some(choice) => self.hub.close_choice(choice),
            None => true,
        }
    }

    /// Whether `at` is a receive task with an interrupting boundary event that
    /// subscribes or fires on its own (not an error or escalation boundary).
    fn interrupted_receive(&self, at: NodeIdx) -> bool {
        let node = &self.process.nodes[at];
        matches!(node.kind, NodeKind::Receive(_))
            && node.boundaries.iter().any(|&b| self.in_choice(b))
    }

    /// Whether the trigger of `arm` belongs to its entry's choice: a wait's own
    /// trigger, a gateway's arm, an interrupting boundary that is armed — not a
    /// non-interrupting boundary (it fires beside the activity, and again), nor an
    /// error, escalation, compensation or cancel boundary (never armed).
    fn in_choice(&self, arm: NodeIdx) -> bool {
        match &self.process.nodes[arm].kind {
            NodeKind::Boundary {
                interrupting,
                trigger,
                ..
            } => {
                *interrupting
                    && !matches!(trigger, Trigger::Error { .. } | Trigger::Escalation { .. })
            }
            NodeKind::CompensationBoundary { .. } | NodeKind::CancelBoundary { .. } => false,
            _ => true,
        }
    }

    /// The activity of `track` ended: drop its boundary events (inline: every task's
    /// end asks, and an instance that armed nothing answers at once).
    #[inline]
    pub(crate) fn unguard(&mut self, track: TrackId) {
        if !self.armed.is_empty() {
            self.unguard_armed(track);
        }
    }

    #[inline(never)]
    fn unguard_armed(&mut self, track: TrackId) {
        if let Some(guard) = self.armed.take(Holder::Guard(track)) {
            self.disarm(&guard);
        }
    }

    /// The activity of `track` completed: drop its boundary events — but a
    /// non-interrupting message boundary the broker served meanwhile has fired
    /// (`served_boundaries`).
    pub(crate) fn unguard_completed(&mut self, track: TrackId) {
        let Some(guard) = self.armed.take(Holder::Guard(track)) else {
            return;
        };
        let served = self.served_boundaries(&guard);
        self.disarm(&guard);
        let scope = self.scope_of(track);
        self.park_served(track, scope, served);
    }

    /// Of a guard about to go, the non-interrupting message boundaries the broker
    /// served already: their messages came while the activity was active, and their
    /// publishers were told `Delivered`, but are still on their way to the loop.
    /// Each such boundary has fired (`park_served`). Their subscriptions go here.
    pub(crate) fn served_boundaries(&self, guard: &ArmedEntry) -> Vec<Wait> {
        let mut served = Vec::new();
        for wait in &guard.waits {
            let EventSource::Hub(sub) = wait.source else {
                continue;
            };
            let non_interrupting_message = matches!(
                self.process.nodes[wait.arm].kind,
                NodeKind::Boundary {
                    interrupting: false,
                    trigger: Trigger::Message { .. },
                    ..
                }
            );
            if non_interrupting_message && !self.hub.unsubscribe_message(sub) {
                served.push(Wait {
                    arm: wait.arm,
                    source: wait.source,
                    fired: 0,
                    key: wait.key.clone(),
                });
            }
        }
        served
    }

    /// The tokens of boundaries that fired as their activity (on `from`, in `scope`)
    /// ended: each starts parked at its boundary on the served subscription, and
    /// takes the message on its way when it comes.
    pub(crate) fn park_served(&mut self, from: TrackId, scope: ScopeId, served: Vec<Wait>) {
        if self.outcome.is_some() {
            // Ended: the messages on their way go back to the broker at close.
            return;
        }
        for wait in served {
            let fork = self.new_track(wait.arm, scope);
            self.record(fork, wait.arm, Happening::Spawned { from });
            self.tracks.set_state(fork, TrackState::Parked);
            if self.park_sender(fork).is_none() {
                return self.internal(wait.arm, "a boundary's new track is not live");
            }
            self.armed.push(Holder::Track(fork), wait.arm, 1, None);
            self.armed.push_wait(wait);
        }
    }

    /// Arm the trigger of `arm` (a wait of the entry armed last): subscribe with the
    /// hub, start a timer, or open work. A message's key comes with it.
    pub(crate) fn arm(
        &mut self,
        arm: NodeIdx,
    ) -> Result<(EventSource, Option<Arc<str>>), InstanceError> {
        let choice = self.armed.last_choice().filter(|_| self.in_choice(arm));
        let node = &self.process.nodes[arm];
        let trigger = match (&node.kind, node.kind.trigger()) {
            (NodeKind::User, _) => return Ok((EventSource::UserTask, None)),
            (_, Some(trigger)) => trigger,
            _ => {
                return Err(InstanceError::Internal {
                    node: node.id,
                    what: "an armed node has no trigger",
                })
            }
        };
        Ok((
            match trigger {
                Trigger::Message {
                    name,
                    key,
                    payload_type,
                    ..
                } => {
                    let key: Arc<str> = self.user_code(node.id, || key(&self.data))?.into();
                    let mailbox = self.mailbox();
                    let on = (*name, payload_type());
                    let sub = self.hub.subscribe_message(on, &key, &mailbox, choice);
                    tracing::debug!(node = node.id, message = name, %key, ?sub, "waiting for a message");
                    return Ok((EventSource::Hub(sub), Some(key)));
                }
                Trigger::Signal { name, .. } => {
                    let mailbox = self.mailbox();
                    EventSource::Hub(self.hub.subscribe_signal(name, &mailbox, choice))
                }
                Trigger::Timer(timer) => {
                    // Evaluated now, on the data as it is: its deadline is what is kept.
                    let spec = self.user_code(node.id, || timer.spec(&self.data))?;
                    let id = self.timers.new_id();
                    // A deadline the clock cannot represent never comes: the wait stays.
                    if let Some(deadline) = spec.first(Instant::now()) {
                        self.timers.schedule(id, deadline);
                    }
                    EventSource::Timer(id)
                }
                Trigger::Condition { condition, on } => {
                    // Evaluated once when armed, on the data as it is now: true fires at
                    // once — as soon as the arming is complete (`fire_due`).
                    let now = self.user_code(node.id, || condition(&self.data))?;
                    EventSource::Condition(self.conditions.arm(arm, *condition, on, now))
                }
                // Not subscriptions: matched against what a handler returns.
                Trigger::Error { .. } | Trigger::Escalation { .. } => {
                    return Err(InstanceError::Internal {
                        node: node.id,
                        what: "an error or escalation armed as a subscription",
                    })
                }
            },
            None,
        ))
    }

    /// The instance's mailbox in the hub, made on first need.
    pub(crate) fn mailbox(&mut self) -> Arc<dyn Mailbox> {
        let intake = &mut self.intake_tx;
        self.mailbox
            .get_or_insert_with(|| Arc::new(intake.made().clone()))
            .clone()
    }

    /// Drop every subscription of an armed entry: hub subscriptions, conditions and
    /// timers; open work goes with the entry.
    pub(crate) fn disarm(&mut self, entry: &ArmedEntry) {
        // A choice's subscriptions go in one step (those already served are gone).
        if let Some(choice) = entry.choice {
            self.hub.close_choice(choice);
        }
        for wait in &entry.waits {
            match wait.source {
                // A no-op for a member of the choice just closed.
                EventSource::Hub(sub) => self.hub.unsubscribe(sub),
                EventSource::Condition(id) => self.conditions.disarm(id),
                EventSource::Timer(id) => self.timers.cancel(id),
                // Its task leaves the list.
                EventSource::UserTask => {
                    if let Holder::Track(track) = entry.holder {
                        self.close_task(track, entry.at);
                    }
                }
            }
        }
    }

    /// Disarm everything (the instance is stopping).
    pub(crate) fn disarm_all(&mut self) {
        // Every instance's end asks; most have armed nothing by then.
        if !self.armed.is_empty() {
            for entry in self.armed.take_all() {
                self.disarm(&entry);
            }
        }
        if self.timers.is_made() {
            self.timers.clear();
        }
        if self.conditions.is_made() {
            self.conditions.clear();
        }
    }

    /// A commit changed the `changed` fields: every armed message wait whose key
    /// now reads differently moves its subscription to the new key — where a
    /// message already buffered under it is delivered. (ARCHITECTURE.md, "Events":
    /// the subscription follows the data.) A key whose fields the macro saw
    /// (`Trigger::Message::reads`) is evaluated only when one of them changed;
    /// others after every commit.
    #[inline]
    pub(crate) fn follow_keys(&mut self, changed: &ChangedFields) {
        // Asked at every commit that changed a field: most instances wait for no
        // message under a key (the list below would be made and looked through).
        if self.armed.any_keyed_message_wait() {
            self.follow_keys_now(changed);
        }
    }

    #[inline(never)]
    fn follow_keys_now(&mut self, changed: &ChangedFields) {
        // One key per catch (it reads the data, not the wait): each catch is looked
        // at once, and only its waits under another key move.
        for arm in self.armed.message_catches() {
            let node = &self.process.nodes[arm];
            let Some(Trigger::Message {
                name,
                key,
                reads,
                payload_type,
                ..
            }) = node.kind.trigger()
            else {
                continue;
            };
            if reads.is_some_and(|reads| !reads.iter().any(|f| changed.contains(f))) {
                continue;
            }
            let current = match self.user_code(node.id, || key(&self.data)) {
                Ok(current) => current,
                Err(error) => return self.fail(error),
            };
            let stale = self.armed.stale_keys(arm, &current);
            if stale.is_empty() {
                continue;
            }
            let current: Arc<str> = current.into();
            let mailbox = self.mailbox();
            for (e, w, sub) in stale {
                // Already served under the old key: that message is on its way, and
                // is this wait's (it matched when the broker took it).
                if let Some(moved) =
                    self.hub
                        .resubscribe_message(sub, (name, payload_type()), &current, &mailbox)
                {
                    self.armed
                        .resubscribed(e, w, EventSource::Hub(moved), current.clone());
                }
            }
        }
    }

    /// Drop what `track` holds armed: its activity's boundary events and its wait.
    pub(crate) fn withdraw(&mut self, track: TrackId) {
        self.unguard(track);
        if let Some(wait) = self.armed.take(Holder::Track(track)) {
            self.disarm(&wait);
        }
    }
}
