//! Failures that heal (ARCHITECTURE.md, "Retries and incidents"): a failed attempt
//! holds its token at the task for its backoff, then runs the handler again; spent
//! attempts, a permanent error or a gateway with no flow to take open an incident,
//! which holds the token until a retry. A held token's track is `Held` — active, so
//! the instance neither completes nor deadlocks — and keeps its guard: the task's
//! boundary events still fire, and an interrupting one takes the token away.

use std::any::Any;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Arc;
use std::time::SystemTime;

use tokio::time::Instant;
use tracing::{info, warn};

use super::core::Instance;
use super::history::Happening;
use super::input::{Command, Input};
use super::outcome::{panic_message, InstanceError};
use super::state::ids::TrackId;
use super::state::retries::{HeldFor, OpenIncident};
use super::state::timers::TimerId;
use super::state::tracks::TrackState;
use crate::data::{Erased, ProcessData};
use crate::graph::{NodeIdx, NodeKind};
use crate::mem::intake::Intake;
use crate::retry::{
    Incident, IncidentId, OnFailure, RetryChange, RetryError, RetryPolicy, RetryTarget,
};

impl<D: ProcessData> Instance<D> {
    /// A task's (or a call's input mapping's) panic: a failed attempt, as an `Err`
    /// is; failing the instance when not retried or held.
    pub(crate) fn task_panicked(&mut self, track: TrackId, node: NodeIdx, message: String) {
        // A panic is a failed attempt, as an `Err` is.
        if matches!(
            self.process.nodes[node].kind,
            NodeKind::Task(_) | NodeKind::Call(_)
        ) && self.attempt_failed(track, node, &format!("panicked: {message}"), false)
        {
            return;
        }
        let id = self.process.nodes[node].id;
        warn!(track = %track, node = id, %message, "task panicked");
        self.record(
            track,
            node,
            Happening::Failed {
                message: message.clone(),
            },
        );
        self.fail(InstanceError::TaskPanicked { node: id, message });
    }

    /// A task's handler failed (`Err`, not a BPMN error or escalation): whether the
    /// failure is retried or held at an incident (`attempt_failed`) rather than
    /// failing the instance. Tasks only: a call activity's or a catch's failure
    /// fails its instance as before.
    #[cold]
    #[inline(never)]
    pub(super) fn retries_failure(
        &mut self,
        track: TrackId,
        node: NodeIdx,
        error: &crate::TaskError,
    ) -> bool {
        use crate::TaskError;
        if matches!(error, TaskError::Bpmn { .. } | TaskError::Escalation { .. })
            || !matches!(self.process.nodes[node].kind, NodeKind::Task(_))
        {
            return false;
        }
        self.attempt_failed(track, node, &error.to_string(), error.is_permanent())
    }

    /// The engine's default policy and what follows spent attempts.
    fn failures(&self) -> (RetryPolicy, OnFailure) {
        self.engine
            .as_ref()
            .map_or((RetryPolicy::none(), OnFailure::Fail), |e| e.failures())
    }

    /// The attempt of the task at `node` on `track` failed with `message`: hold the
    /// token for its next attempt, or open an incident. `false`: fail-fast — the
    /// caller fails the instance, as it always did.
    #[cold]
    #[inline(never)]
    pub(crate) fn attempt_failed(
        &mut self,
        track: TrackId,
        node: NodeIdx,
        message: &str,
        permanent: bool,
    ) -> bool {
        let (default, on_failure) = self.failures();
        let at = &self.process.nodes[node];
        let policy = at.policy.map_or(default, |p| p.over(&default));
        let attempt = self.tracks.get(track).map_or(1, |t| t.attempt);
        #[cfg(feature = "metrics")]
        crate::metrics::attempt_failed(self.process.name, at.id);
        if !permanent && attempt < policy.attempts {
            let seed = self.id.0 ^ ((node as u64) << 32) ^ u64::from(attempt) << 48;
            let wait = policy.backoff_after(attempt, seed);
            info!(track = %track, node = at.id, attempt, %message, ?wait, "attempt failed; retrying");
            self.record(
                track,
                node,
                Happening::AttemptFailed {
                    attempt,
                    message: message.to_string(),
                },
            );
            let timer = self.timers.new_id();
            let due = Instant::now() + wait;
            self.timers.schedule(timer, due);
            self.hold_for_backoff(track, node, timer, due);
            return true;
        }
        if on_failure == OnFailure::Fail {
            return false;
        }
        self.open_incident(track, node, message.to_string(), attempt, false);
        true
    }

    /// Hold `track` at `node` until `timer` fires at `due` (also a restore's).
    pub(crate) fn hold_for_backoff(
        &mut self,
        track: TrackId,
        node: NodeIdx,
        timer: TimerId,
        due: Instant,
    ) {
        self.retries
            .hold(track, node, HeldFor::Backoff { timer, due });
        self.tracks.set_state(track, TrackState::Held);
    }

    /// The split at `node` found no flow to take: open an incident there. `false`:
    /// fail-fast.
    #[cold]
    #[inline(never)]
    pub(crate) fn route_failed(&mut self, track: TrackId, node: NodeIdx, error: String) -> bool {
        if self.failures().1 == OnFailure::Fail || self.tracks.get(track).is_none() {
            return false;
        }
        self.open_incident(track, node, error, 0, true);
        true
    }

    fn open_incident(
        &mut self,
        track: TrackId,
        node: NodeIdx,
        error: String,
        attempts: u32,
        route: bool,
    ) {
        let number = self.retries.next_number();
        warn!(track = %track, node = self.process.nodes[node].id, %error, attempts, "incident opened");
        self.record(
            track,
            node,
            Happening::Incident {
                error: error.clone(),
                attempts,
            },
        );
        self.hold_incident(
            track,
            node,
            OpenIncident {
                number,
                error,
                attempts,
                opened: SystemTime::now(),
                route,
            },
        );
    }

    /// Hold `track` at `node` at an open incident, told to the engine's board
    /// (also a restore's).
    pub(crate) fn hold_incident(&mut self, track: TrackId, node: NodeIdx, open: OpenIncident) {
        let incident = self.incident(node, &open);
        self.retries.hold(track, node, HeldFor::Incident(open));
        self.tracks.set_state(track, TrackState::Held);
        if let Some(engine) = &self.engine {
            let target: Arc<dyn RetryTarget> = Arc::new(self.intake_tx.made().clone());
            engine.incident(incident.id, Some((incident, target)));
        }
    }

    fn incident(&self, node: NodeIdx, open: &OpenIncident) -> Incident {
        Incident {
            id: IncidentId {
                instance: self.id,
                number: open.number,
            },
            process: self.process.name,
            node: self.process.nodes[node].id,
            error: open.error.clone(),
            attempts: open.attempts,
            opened: open.opened,
        }
    }

    /// The instance's open incidents.
    pub(crate) fn incidents(&self) -> Vec<Incident> {
        self.retries
            .iter()
            .filter_map(|held| match &held.wait {
                HeldFor::Incident(open) => Some(self.incident(held.node, open)),
                HeldFor::Backoff { .. } => None,
            })
            .collect()
    }

    /// Timer `timer` fired and is no armed event's: if it is a backoff, the next
    /// attempt runs.
    pub(crate) fn backoff_due(&mut self, timer: TimerId) {
        if let Some(held) = self.retries.take_by_timer(timer) {
            self.rerun(held.track, held.node);
        }
    }

    /// Run the task at `node` again on `track` (or start a call activity's child
    /// again): its next attempt.
    fn rerun(&mut self, track: TrackId, node: NodeIdx) {
        let kind = &self.process.nodes[node].kind;
        if !matches!(kind, NodeKind::Task(_) | NodeKind::Call(_)) {
            return self.internal(node, "a retry at a node that runs no handler");
        }
        let Some(slot) = self.tracks.get_mut(track) else {
            return;
        };
        slot.attempt += 1;
        let attempt = slot.attempt;
        self.tracks.set_state(track, TrackState::Working);
        self.record(track, node, Happening::TaskStarted);
        let process = self.process;
        match &process.nodes[node].kind {
            NodeKind::Task(handler) => {
                let handler = *handler;
                self.step(|this, moves| this.run_handler(track, node, handler, attempt, moves))
            }
            NodeKind::Call(call) => self.step(|this, _| this.start_call(track, node, call, None)),
            _ => {}
        }
    }

    /// An operator retries incident `number`, changing the data first if `change`
    /// says: a task runs once more, a gateway chooses again.
    pub(crate) fn retry_incident(
        &mut self,
        number: u32,
        change: Option<RetryChange>,
    ) -> Result<(), RetryError> {
        let id = IncidentId {
            instance: self.id,
            number,
        };
        let held = self
            .retries
            .take_incident(number)
            .ok_or(RetryError::NoIncident(id))?;
        let HeldFor::Incident(open) = held.wait else {
            unreachable!("take_incident takes an incident");
        };
        let (track, node) = (held.track, held.node);
        let changed = match change {
            None => Ok(std::borrow::Cow::Borrowed(&[][..])),
            Some(change) => self.change_data(change, id),
        };
        let changed = match changed {
            Ok(changed) => changed,
            Err(error) => {
                // Nothing changed: the incident stays open as it was.
                self.retries.hold(track, node, HeldFor::Incident(open));
                return Err(error);
            }
        };
        if let Some(engine) = &self.engine {
            engine.incident(id, None);
        }
        info!(track = %track, node = self.process.nodes[node].id, %id, "incident retried");
        self.record(track, node, Happening::Retried { changed });
        match open.route {
            true => {
                self.tracks.set_state(track, TrackState::Moving);
                self.step(|this, moves| this.split(track, node, moves));
            }
            false => self.rerun(track, node),
        }
        Ok(())
    }

    /// Commit a retry's change of the data, as a task's commit.
    fn change_data(
        &mut self,
        change: RetryChange,
        id: IncidentId,
    ) -> Result<std::borrow::Cow<'static, [&'static str]>, RetryError> {
        let base = self.data.snapshot();
        let mut edited = self.data.copy(false);
        let applied = catch_unwind(AssertUnwindSafe(|| {
            (&mut edited as &mut dyn Any)
                .downcast_mut::<Erased>()
                .is_some_and(change)
        }));
        match applied {
            Ok(true) => {}
            Ok(false) => {
                self.data.give_back(edited);
                return Err(RetryError::WrongData(id));
            }
            Err(panic) => {
                self.data.give_back(edited);
                return Err(RetryError::ChangePanicked(id, panic_message(panic)));
            }
        }
        let changed = self.data.commit(base, edited);
        let names = changed.step_names();
        if !changed.is_empty() {
            self.follow_keys(&changed);
            self.recheck_conditions(&changed);
        }
        Ok(names)
    }

    /// `track` is removed (an interrupting boundary, a cancelled scope): what it
    /// was held for goes with it.
    pub(crate) fn release_held(&mut self, track: TrackId) {
        let Some(held) = self.retries.take_track(track) else {
            return;
        };
        match held.wait {
            HeldFor::Backoff { timer, .. } => self.timers.cancel(timer),
            HeldFor::Incident(open) => self.close_on_board(open.number),
        }
    }

    /// The instance ends: its incidents leave the engine's board.
    pub(crate) fn close_incidents(&mut self) {
        for held in self.retries.take_all() {
            if let HeldFor::Incident(open) = held.wait {
                self.close_on_board(open.number);
            }
        }
    }

    fn close_on_board(&self, number: u32) {
        if let Some(engine) = &self.engine {
            let id = IncidentId {
                instance: self.id,
                number,
            };
            engine.incident(id, None);
        }
    }

    /// The attempt of the task at `node` ran past its timeout (the track dropped
    /// it): a failed attempt.
    pub(crate) fn task_timed_out(&mut self, track: TrackId, node: NodeIdx) {
        let at = &self.process.nodes[node];
        let timeout = at.policy.and_then(|p| p.timeout).unwrap_or_default();
        let message = format!("timed out after {timeout:?}");
        if self.attempt_failed(track, node, &message, false) {
            return;
        }
        let id = at.id;
        warn!(track = %track, node = id, %message, "task failed");
        self.record(
            track,
            node,
            Happening::Failed {
                message: message.clone(),
            },
        );
        self.fail(InstanceError::TaskFailed { node: id, message });
    }

    /// When an attempt of the task at `node` starting now times out, if its
    /// policy gives it a timeout.
    #[inline]
    pub(crate) fn attempt_deadline(&self, node: NodeIdx) -> Option<Instant> {
        let timeout = self.process.nodes[node].policy?.timeout?;
        Some(Instant::now() + timeout)
    }
}

/// A retry reaches its instance's loop through the loop's intake.
impl<D: ProcessData> RetryTarget for Intake<Input<D>> {
    fn retry(
        &self,
        number: u32,
        change: Option<RetryChange>,
        reply: tokio::sync::oneshot::Sender<Result<(), RetryError>>,
    ) -> bool {
        let command = Command::Retry {
            number,
            change,
            reply,
        };
        self.send(Input::Handle(Box::new(command))).is_ok()
    }

    fn gone(&self) -> bool {
        self.is_closed()
    }
}
