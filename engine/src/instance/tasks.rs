//! Running activities: a task's handler runs on the loop until it first has to wait
//! (ready work is committed and routed with no hop and no spawn); waiting work goes to
//! the track's own task. What the handler returns is committed, raised or failed here.

use std::sync::Arc;
use std::task::Poll;

use tracing::{debug, info_span, warn, Instrument};

use super::history::Happening;
use super::outcome::InstanceError;
use super::park::{Instruction, ParkSender};
use super::state::ids::TrackId;
use super::state::tracks::TrackState;
use super::state::{Instance, Move};
use super::track;
use crate::data::ProcessData;
use crate::graph::{run_box, NodeIdx, NodeKind, TaskHandler, TaskRun};
use crate::task::{self, TaskContext};

impl<D: ProcessData> Instance<D> {
    /// Start the task at `node` on the track: its handler runs on the loop until it
    /// first has to wait; ready work is committed and routed on the spot, waiting
    /// work goes on to the track's own task.
    pub(crate) fn run_task(
        &mut self,
        track: TrackId,
        node: NodeIdx,
        handler: TaskHandler<D>,
        moves: &mut Vec<Move>,
    ) {
        self.record_inline(track, node, Happening::TaskStarted);
        if !self.tracks.set_state(track, TrackState::Working) {
            return self.internal(node, "a task started on a track that is gone");
        }
        self.guard(track, node);
        // A conditional boundary true at the start fires before the handler runs; an
        // interrupting one takes the token away (the track is gone then).
        self.fire_due();
        if self.outcome.is_some() || self.tracks.get(track).is_none_or(|s| s.at != node) {
            return;
        }
        // A durable instance starts a task after a task only once the predecessor's
        // completion is stored.
        #[cfg(feature = "durable")]
        if self.defer_task(track, node) {
            return;
        }
        self.run_handler(track, node, handler, 1, moves);
    }

    /// Run a started task's handler — its `attempt`th run — on the loop until it first
    /// has to wait, then on the track's task.
    pub(crate) fn run_handler(
        &mut self,
        track: TrackId,
        node: NodeIdx,
        handler: TaskHandler<D>,
        attempt: u32,
        moves: &mut Vec<Move>,
    ) {
        // A compensation handler works from the data its activity left
        // (ARCHITECTURE.md, "Compensation"); every other task from the data now.
        let base = match self.compensation.is_empty() {
            true => Arc::clone(&self.data),
            false => self
                .compensation
                .snapshot_for(track)
                .unwrap_or_else(|| Arc::clone(&self.data)),
        };
        // With its item for a multi-instance task (looping.rs).
        let copy = self.copy_of(&base);
        let (run, iteration) = self.task_run_for(track, node, handler, copy);
        #[cfg(feature = "testing")]
        let mut run = match self.overrides.as_ref().and_then(|table| table.get(node)) {
            Some(replacement) => replacement(D::clone(&base)),
            None => run,
        };
        #[cfg(not(feature = "testing"))]
        let mut run = run;
        let context = TaskContext {
            instance: self.id,
            node: self.process.nodes[node].id,
            attempt,
            iteration,
        };
        // A task marked `: spawn` skips the inline poll: its first poll is on its
        // track's task, so handlers that compute without awaiting run in parallel.
        if self.inline_budget > 0 && !self.process.nodes[node].spawn {
            self.inline_budget -= 1;
            // The handler's own events belong to its track, inline as on its task.
            // The loop runs inside the instance's span: it is the current one here.
            // With `info` off no span is made, entered or dropped at all.
            let polled = match tracing::level_enabled!(tracing::Level::INFO) {
                true => {
                    let span = info_span!("track", track = track.0, node = context.node);
                    task::within(context, || span.in_scope(|| track::poll_once(&mut run)))
                }
                false => task::within(context, || track::poll_once(&mut run)),
            };
            match polled {
                Ok(Poll::Ready((edited, result))) => {
                    // Its box is the next run's (`graph/run_box.rs`).
                    run_box::recycle(run);
                    return self.task_done(track, node, base, edited, result, moves);
                }
                Ok(Poll::Pending) => {}
                Err(message) => return self.task_panicked(track, node, message),
            }
        }
        // The rest of the handler runs on its track, still as part of this run.
        let run: TaskRun<D> = Box::pin(task::scoped(context, run));
        self.hand_to_track(track, node, base, run);
    }

    /// Give a started task run to the track's task.
    pub(crate) fn hand_to_track(
        &mut self,
        track: TrackId,
        node: NodeIdx,
        base: Arc<D>,
        run: TaskRun<D>,
    ) {
        self.send_to_track(track, node, Instruction::Finish { node, base, run });
    }

    /// The track's park channel, spawning its task on first need: from then on the
    /// task waits on the channel for the loop's next instruction.
    pub(crate) fn park_sender(&mut self, track: TrackId) -> Option<&mut ParkSender<D>> {
        let intake = &mut self.intake_tx;
        let workers = &mut self.workers;
        let slot = self.tracks.get_mut(track)?;
        let task = &mut slot.task;
        Some(slot.park.get_or_insert_with(|| {
            let (tx, rx) = ParkSender::new();
            let span = info_span!("track", track = track.0);
            let intake = intake.made().clone();
            *task = Some(workers.spawn(track::run(track, rx, intake).instrument(span)));
            tx
        }))
    }

    /// Send the track an instruction: the loop is the only sender on its channel.
    pub(crate) fn send_to_track(
        &mut self,
        track: TrackId,
        node: NodeIdx,
        instruction: Instruction<D>,
    ) {
        let sent = self
            .park_sender(track)
            .is_some_and(|park| park.send(instruction));
        if !sent {
            // Unreachable while the track lives; fail loudly rather than leave the
            // token stranded.
            self.internal(node, "a track's park channel was closed");
        }
    }

    /// A task's handler returned: commit its copy on `Ok` and move on, fail on `Err`.
    pub(crate) fn task_done(
        &mut self,
        track: TrackId,
        node: NodeIdx,
        base: Arc<D>,
        edited: D,
        result: Result<(), crate::TaskError>,
        moves: &mut Vec<Move>,
    ) {
        match self.tracks.get(track) {
            None => return,
            Some(t) if (t.at, t.state()) != (node, TrackState::Working) => {
                return self.internal(
                    node,
                    "a task finished on a track that was not working at it",
                );
            }
            Some(_) => {}
        }
        let process = self.process;
        let at = &process.nodes[node];
        // Only an activity with boundary events has a guard (`guard`).
        let guarded = !at.boundaries.is_empty();
        if guarded && !self.completion_wins(track) {
            return self.void_completion(track, node, edited);
        }
        self.tracks.set_state(track, TrackState::Moving);
        let id = at.id;
        // The activity ended: its boundary events go with it.
        if guarded {
            self.unguard_completed(track);
        }
        let result = match result {
            Err(crate::TaskError::Bpmn { code, message }) => {
                return self.bpmn_error(track, node, code, message)
            }
            Err(crate::TaskError::Escalation { code }) => {
                match self.escalation(track, node, code) {
                    // Caught by an interrupting boundary: the activity is over.
                    true => return,
                    // Uncaught, or caught by a non-interrupting one: the task completes.
                    false => Ok(()),
                }
            }
            other => other,
        };
        match result {
            Ok(()) => {
                let changed = self.commit(base, edited);
                debug!(track = %track, node = id, ?changed, "task completed");
                let names = changed.to_names();
                let what = match at.kind {
                    NodeKind::Catch(_)
                    | NodeKind::Boundary { .. }
                    | NodeKind::CancelBoundary { .. }
                    | NodeKind::StartEvent(_)
                    | NodeKind::EventSubStart { .. } => Happening::Caught { changed: names },
                    _ => Happening::Completed { changed: names },
                };
                #[cfg(feature = "durable")]
                if matches!(what, Happening::Completed { .. }) {
                    self.completed_unstored(track);
                }
                self.record_inline(track, node, what);
                self.log_completion(track, node);
                if !self.compensation_handler_done(track, node, moves) {
                    self.split(track, node, moves);
                }
                if !changed.is_empty() && self.outcome.is_none() {
                    // Waiting messages' subscriptions follow the data; then the
                    // conditions see the same commit.
                    self.follow_keys(&changed);
                    self.recheck_conditions(&changed);
                }
            }
            Err(error) => {
                let message = error.to_string();
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
        }
    }

    /// An interrupting boundary's message or signal was served before the task's
    /// report: it is on its way and interrupts the task when it comes, so the
    /// result — its writes, error or failure — is void.
    #[cold]
    #[inline(never)]
    fn void_completion(&mut self, track: TrackId, node: NodeIdx, edited: D) {
        debug!(track = %track, node = self.process.nodes[node].id, "a served boundary wins the task");
        self.spare = Some(edited);
    }

    /// Commit a task's copy: a three-way merge when others committed since the task
    /// took its snapshot, a plain diff otherwise (the common, clone-free case). The
    /// copy left over — the task's own when it changed nothing, else the data it
    /// replaced, when no snapshot holds that — is kept for the next task's copy.
    pub(crate) fn commit(&mut self, base: Arc<D>, edited: D) -> crate::ChangedFields {
        if Arc::ptr_eq(&base, &self.data) {
            let changed = self.data.diff(&edited);
            drop(base);
            if changed.is_empty() {
                self.spare = Some(edited);
            } else {
                match Arc::get_mut(&mut self.data) {
                    Some(data) => self.spare = Some(std::mem::replace(data, edited)),
                    None => self.data = Arc::new(edited),
                }
            }
            changed
        } else {
            Arc::make_mut(&mut self.data).merge(&base, edited)
        }
    }

    /// A handler returned a BPMN error: it goes to its nearest catcher — an error
    /// boundary on the task, else outward through the scopes.
    pub(crate) fn bpmn_error(
        &mut self,
        track: TrackId,
        node: NodeIdx,
        code: String,
        message: String,
    ) {
        self.record(track, node, Happening::ErrorThrown { code: code.clone() });
        self.throw_error(track, node, code, message);
    }

    /// A handler raised an escalation. Returns whether an interrupting catcher took
    /// the token away; otherwise the task completes (a non-interrupting catcher also
    /// starts a token; an uncaught escalation is no error).
    pub(crate) fn escalation(&mut self, track: TrackId, node: NodeIdx, code: String) -> bool {
        self.record(track, node, Happening::Escalated { code: code.clone() });
        self.throw_escalation(track, node, code);
        self.tracks.get(track).is_none()
    }

    pub(crate) fn task_panicked(&mut self, track: TrackId, node: NodeIdx, message: String) {
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

    /// The track ends here: its park channel closes (a parked track wakes and
    /// ends), a handler still running is aborted at its next await.
    pub(crate) fn remove_track(&mut self, track: TrackId) {
        self.tracks.remove(track);
        self.forget_compensation(track);
    }

    /// Whether `track` is live and working at `node` (a report about it is current).
    pub(crate) fn working_at(&self, track: TrackId, node: NodeIdx) -> bool {
        self.tracks.is_at(track, node, TrackState::Working)
    }
}
