//! Running activities: a task's handler runs on the loop until it first has to wait
//! (ready work is committed and routed with no hop and no spawn); waiting work goes to
//! the track's own task. What the handler returns is committed, raised or failed here.

use std::borrow::Cow;

use tracing::{debug, info_span, warn, Instrument};

use super::core::{Instance, Move};
use super::history::Happening;
use super::outcome::{panic_message, InstanceError};
use super::park::{Instruction, ParkSender};
use super::state::ids::TrackId;
use super::state::tracks::TrackState;
use super::straight::{Straight, Then};
use super::track;
use crate::data::ProcessData;
use crate::graph::{Next, NodeIdx, NodeKind, TaskHandler, TaskRun};
use crate::mem::cell::Base;
use crate::mem::run_box;
use crate::task::{self, TaskContext};

impl<D: ProcessData> Instance<D> {
    /// Start the task at `node` on the track: its handler runs on the loop until it
    /// first has to wait; ready work is committed and routed on the spot, waiting
    /// work goes on to the track's own task.
    ///
    /// A task that completes at once and leads straight on to another task
    /// (`straight_on`) starts that one here, in a loop: what `split`, `settle` and
    /// `enter` do with that one move — the stack's top, taken next in any case —
    /// without passing it through them; one that leads straight on to a
    /// synchronising join arrives there the same way. A plain task in a quiet instance
    /// (`runs_plain`) is run by `run_plain`, which skips what cannot apply to it
    /// (ARCHITECTURE.md, "Hot path and memory").
    pub(crate) fn run_task(
        &mut self,
        track: TrackId,
        node: NodeIdx,
        handler: TaskHandler<D>,
        moves: &mut Vec<Move>,
    ) {
        // `plain`: the node is known to have no boundary event and not to be
        // `spawn` (reached by its predecessor's `Node::next`).
        // `fresh`: the spare copy is the task's, made by the commit before.
        let (mut node, mut handler, mut plain, mut fresh) = (node, handler, false, false);
        loop {
            let straight = match self.runs_plain(node, plain) {
                true => self.run_plain(track, node, handler, fresh, moves),
                false => self.start_task(track, node, handler, moves),
            };
            // Taken as `settle` and `enter` would take the move: not once the
            // instance has ended, nor for a track the commit's events took away.
            let Some(next) = straight.filter(|_| self.outcome.is_none()) else {
                return;
            };
            let Some(scope) = self.move_to(track, next.to) else {
                return;
            };
            match next.then {
                Then::Run {
                    handler: next_handler,
                    plain: next_plain,
                    fresh: next_fresh,
                } => {
                    (node, handler, plain, fresh) = (next.to, next_handler, next_plain, next_fresh)
                }
                Then::Arrive { slot } => return self.arrive(track, next.to, slot, scope, moves),
            }
        }
    }

    /// Whether the task at `node` may run by `run_plain`: it has no boundary events
    /// and is not marked `spawn`, and the instance is quiet — no compensation or
    /// loop activation under way (no snapshot, item or instance to look up), no
    /// condition due, inline runs left, no replaced handlers, no durable store to
    /// defer to. `plain`: the task is known to be plain, the node not looked up.
    #[inline(always)]
    fn runs_plain(&self, node: NodeIdx, plain: bool) -> bool {
        #[cfg(feature = "durable")]
        if self.durable.is_some() {
            return false;
        }
        #[cfg(feature = "testing")]
        if self.overrides.is_some() {
            return false;
        }
        let plain_task = || {
            let at = &self.process.nodes[node];
            at.boundaries.is_empty() && !at.spawn
        };
        self.inline_budget > 0
            && self.compensation.is_empty()
            && self.loops.is_empty()
            && !self.conditions.any_due()
            && (plain || plain_task())
    }

    /// Run a plain task (`runs_plain`): all that the general path does, less what
    /// cannot apply — no guard to arm, no condition due, no deferral, the data now
    /// as the base, the handler itself as the run. The track stays `Moving` while
    /// the handler is polled (nothing reads it meanwhile), and is `Working` when
    /// the run goes on past its first poll. A ready `Ok` is committed here; any
    /// other first poll goes on as the general path's (`after_first_poll`).
    /// `fresh`: the spare copy is a copy of the data as it is (`Then::Run`), taken
    /// as it is.
    #[inline(always)]
    fn run_plain(
        &mut self,
        track: TrackId,
        node: NodeIdx,
        handler: TaskHandler<D>,
        fresh: bool,
        moves: &mut Vec<Move>,
    ) -> Option<Straight<D>> {
        let at = &self.process.nodes[node];
        let id = at.id;
        // Before a plain task, a commit that changes nothing leaves that task's copy
        // as the spare (`commit_into`).
        let renew = matches!(at.next, Next::Task { plain: true, .. });
        self.record_id(track, id, Happening::TaskStarted);
        self.inline_budget -= 1;
        let copy = self.data.copy(fresh);
        let mut run = handler(copy);
        let context = TaskContext {
            instance: self.id,
            node: id,
            attempt: 1,
            iteration: None,
        };
        let mut output = track::FirstPoll::Pending;
        let polled = self.first_poll(track, &context, &mut run, &mut output);
        match output {
            track::FirstPoll::Ok(edited) if polled.is_ok() => {
                run_box::recycle(run);
                match renew {
                    true => self.completed_ok::<true, true>(track, node, None, edited, moves),
                    false => self.completed_ok::<false, true>(track, node, None, edited, moves),
                }
            }
            output => {
                self.tracks.set_state(track, TrackState::Working);
                let output = output.into_output();
                self.after_first_poll(track, node, None, run, context, polled, output, moves)
            }
        }
    }

    /// Start the task at `node` on the track, and run its handler if nothing stops
    /// it first. Returns where the token goes straight on, for the caller to take
    /// (`task_completed`).
    #[inline(always)]
    fn start_task(
        &mut self,
        track: TrackId,
        node: NodeIdx,
        handler: TaskHandler<D>,
        moves: &mut Vec<Move>,
    ) -> Option<Straight<D>> {
        self.record_inline(track, node, Happening::TaskStarted);
        if !self.tracks.set_state(track, TrackState::Working) {
            self.internal(node, "a task started on a track that is gone");
            return None;
        }
        self.guard(track, node);
        // A conditional boundary true at the start fires before the handler runs; an
        // interrupting one takes the token away (the track is gone then).
        self.fire_due();
        if self.outcome.is_some() || self.tracks.get(track).is_none_or(|s| s.at != node) {
            return None;
        }
        // A durable instance starts a task after a task only once the predecessor's
        // completion is stored.
        #[cfg(feature = "durable")]
        if self.defer_task(track, node) {
            return None;
        }
        self.poll_handler(track, node, handler, 1, moves)
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
        // Not under `run_task` (a deferred or resumed start): its next task is moved
        // to as `split` leaves a move, on the stack.
        if let Some(next) = self.poll_handler(track, node, handler, attempt, moves) {
            moves.push((track, next.flow));
        }
    }

    /// What `run_handler` does, but where the token goes straight on is returned,
    /// not taken (`task_completed`).
    #[inline(always)]
    fn poll_handler(
        &mut self,
        track: TrackId,
        node: NodeIdx,
        handler: TaskHandler<D>,
        attempt: u32,
        moves: &mut Vec<Move>,
    ) -> Option<Straight<D>> {
        // A compensation handler works from the data its activity left
        // (ARCHITECTURE.md, "Compensation"); every other task from the data now —
        // `None`, so a run that is ready at once clones no `Arc` of it.
        let snapshot = match self.compensation.is_empty() {
            true => None,
            false => self.compensation.snapshot_for(track),
        };
        // With its item for a multi-instance task (looping.rs).
        let copy = match &snapshot {
            Some(snapshot) => self.data.copy_of(snapshot),
            None => self.data.copy(false),
        };
        let (run, iteration) = self.task_run_for(track, node, handler, copy);
        #[cfg(feature = "testing")]
        let mut run = match self.overrides.as_ref().and_then(|table| table.get(node)) {
            Some(replacement) => replacement(D::clone(snapshot.as_deref().unwrap_or(&self.data))),
            None => run,
        };
        #[cfg(not(feature = "testing"))]
        let mut run = run;
        let at = &self.process.nodes[node];
        let context = TaskContext {
            instance: self.id,
            node: at.id,
            attempt,
            iteration,
        };
        // A task marked `: spawn` skips the inline poll: its first poll is on its
        // track's task, so handlers that compute without awaiting run in parallel.
        let mut output = track::FirstPoll::Pending;
        let polled = match self.inline_budget > 0 && !at.spawn {
            true => {
                self.inline_budget -= 1;
                self.first_poll(track, &context, &mut run, &mut output)
            }
            false => Ok(()),
        };
        let output = output.into_output();
        self.after_first_poll(track, node, snapshot, run, context, polled, output, moves)
    }

    /// Poll a task's run the first time, on the loop, as part of its task
    /// (`task::current`); a panic is caught. A ready run's output is left in
    /// `output` (so the catch moves no more than a flag, and the output is moved
    /// once, by its taker).
    #[inline(always)]
    fn first_poll(
        &self,
        track: TrackId,
        context: &TaskContext,
        run: &mut TaskRun<D>,
        output: &mut track::FirstPoll<D>,
    ) -> std::thread::Result<()> {
        // The handler's own events belong to its track, inline as on its task.
        // The loop runs inside the instance's span: it is the current one here.
        // With `info` off no span is made, entered or dropped at all.
        if tracing::level_enabled!(tracing::Level::INFO) {
            let span = info_span!("track", track = track.0, node = context.node);
            return span.in_scope(|| task::within(context, || track::poll_once(run, output)));
        }
        task::within(context, || track::poll_once(run, output))
    }

    /// What a run's first poll gave (`polled`, and `output` if it is ready): a
    /// ready run is completed, a waiting one goes on on the track's task
    /// (`snapshot`: its base, `None` for the data now).
    #[allow(clippy::too_many_arguments)]
    fn after_first_poll(
        &mut self,
        track: TrackId,
        node: NodeIdx,
        snapshot: Option<Base<D>>,
        run: TaskRun<D>,
        context: TaskContext,
        polled: std::thread::Result<()>,
        output: Option<track::RunOutput<D>>,
        moves: &mut Vec<Move>,
    ) -> Option<Straight<D>> {
        if let Err(panic) = polled {
            self.task_panicked(track, node, panic_message(panic));
            return None;
        }
        match output {
            Some((edited, result)) => {
                // Its box is the next run's (`mem/run_box.rs`).
                run_box::recycle(run);
                // Nothing ran on the loop since the copy was taken: the track
                // still works here, and the data is the copy's base.
                self.task_completed(track, node, snapshot, edited, result, moves)
            }
            None => {
                // The rest of the handler runs on its track, still as part of this run.
                let run: TaskRun<D> = Box::pin(task::scoped(context, run));
                let base = snapshot.unwrap_or_else(|| self.data.snapshot());
                let deadline = self.attempt_deadline(node);
                self.send_to_track(
                    track,
                    node,
                    Instruction::Finish {
                        node,
                        base,
                        run,
                        deadline,
                    },
                );
                None
            }
        }
    }

    /// Give a started run that is not a task's attempt (a call's) to the track's
    /// task: no timeout.
    pub(crate) fn hand_to_track(
        &mut self,
        track: TrackId,
        node: NodeIdx,
        base: Base<D>,
        run: TaskRun<D>,
    ) {
        let deadline = None;
        self.send_to_track(
            track,
            node,
            Instruction::Finish {
                node,
                base,
                run,
                deadline,
            },
        );
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

    /// A task's handler returned (a track's report): commit its copy on `Ok` and
    /// move on, fail on `Err`.
    pub(crate) fn task_done(
        &mut self,
        track: TrackId,
        node: NodeIdx,
        base: Base<D>,
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
        if let Some(next) = self.task_completed(track, node, Some(base), edited, result, moves) {
            // On the stack, as `split` leaves a move.
            moves.push((track, next.flow));
        }
    }

    /// The handler of the task at `node`, working on `track`, returned: commit its
    /// copy on `Ok` and move on, fail on `Err`. `base` is what the copy was taken
    /// from; `None`: the data now, nothing having committed since (a run ready at
    /// its first poll). Returns where the token goes straight on, to a next task or a join
    /// (`straight_on`), for the caller to take; any other way on is routed here.
    fn task_completed(
        &mut self,
        track: TrackId,
        node: NodeIdx,
        base: Option<Base<D>>,
        edited: D,
        result: Result<(), crate::TaskError>,
        moves: &mut Vec<Move>,
    ) -> Option<Straight<D>> {
        if let Err(error) = &result {
            if self.retries_failure(track, node, error) {
                self.data.give_back(edited);
                return None;
            }
        }
        let process = self.process;
        let at = &process.nodes[node];
        // Only an activity with boundary events has a guard (`guard`).
        let guarded = !at.boundaries.is_empty();
        if guarded && !self.completion_wins(track) {
            self.void_completion(track, node, edited);
            return None;
        }
        self.tracks.set_state(track, TrackState::Moving);
        let id = at.id;
        // The activity ended: its boundary events go with it.
        if guarded {
            self.unguard_completed(track);
        }
        let result = match result {
            Err(crate::TaskError::Bpmn { code, message }) => {
                self.bpmn_error(track, node, code, message);
                return None;
            }
            Err(crate::TaskError::Escalation { code }) => {
                match self.escalation(track, node, code) {
                    // Caught by an interrupting boundary: the activity is over.
                    true => return None,
                    // Uncaught, or caught by a non-interrupting one: the task completes.
                    false => Ok(()),
                }
            }
            other => other,
        };
        if let Err(error) = result {
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
            return None;
        }
        self.completed_ok::<false, false>(track, node, base, edited, moves)
    }

    /// A task's handler returned `Ok` (or an uncaught escalation): commit its copy
    /// (onto `base`, as `task_completed` says), record the completion and move on.
    /// Returns where the token goes straight on, as `task_completed` does.
    /// `RENEW`: the commit renews the copy for the plain task next
    /// (`commit_into`); `TASK`: the node is a task. Constants, so that
    /// `run_plain`'s path tests neither, and the others test nothing more.
    #[inline(always)]
    fn completed_ok<const RENEW: bool, const TASK: bool>(
        &mut self,
        track: TrackId,
        node: NodeIdx,
        base: Option<Base<D>>,
        edited: D,
        moves: &mut Vec<Move>,
    ) -> Option<Straight<D>> {
        let at = &self.process.nodes[node];
        debug_assert!(!TASK || matches!(at.kind, NodeKind::Task(_)));
        let id = at.id;
        // The changed fields, `None` when nothing changed. Kept where it is made and
        // lent: a set moved (merged from two ways to commit) is read back whole
        // where it was written field by field, a stall on every no-op commit.
        let mut set = None;
        let unchanged = match base {
            None => self.data.commit_into(edited, RENEW, &mut set),
            Some(base) => keep_changed(self.data.commit(base, edited), &mut set),
        };
        let changed = set.as_ref();
        debug!(track = %track, node = id, ?changed, "task completed");
        let caught = !TASK
            && matches!(
                at.kind,
                NodeKind::Catch(_)
                    | NodeKind::Boundary { .. }
                    | NodeKind::CancelBoundary { .. }
                    | NodeKind::StartEvent(_)
                    | NodeKind::EventSubStart { .. }
            );
        let step = |changed| match caught {
            true => Happening::Caught { changed },
            false => Happening::Completed { changed },
        };
        #[cfg(feature = "durable")]
        if !caught {
            self.completed_unstored(track);
        }
        // Each branch builds its own step, so a commit that changed nothing writes
        // constants where the step goes (one step built from either would be built
        // on the stack and read back: `History::record`).
        match changed {
            None => self.record_known(track, id, step(Cow::Borrowed(&[])), false),
            Some(changed) => {
                let names = changed.step_names();
                let owned = matches!(names, Cow::Owned(_));
                self.record_known(track, id, step(names), owned)
            }
        }
        self.log_completion(track, node, at);
        let straight = match self.compensation_handler_done(track, node, moves) {
            true => None,
            false => match self.straight_on(at, RENEW && unchanged) {
                Some(next) => Some(next),
                None => {
                    self.split(track, node, moves);
                    None
                }
            },
        };
        if let Some(changed) = changed.filter(|_| self.outcome.is_none()) {
            // Waiting messages' subscriptions follow the data; then the
            // conditions see the same commit.
            self.follow_keys(changed);
            self.recheck_conditions(changed);
        }
        straight
    }

    /// An interrupting boundary's message or signal was served before the task's
    /// report: it is on its way and interrupts the task when it comes, so the
    /// result — its writes, error or failure — is void.
    #[cold]
    #[inline(never)]
    fn void_completion(&mut self, track: TrackId, node: NodeIdx, edited: D) {
        debug!(track = %track, node = self.process.nodes[node].id, "a served boundary wins the task");
        self.data.give_back(edited);
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

    /// The track ends here: its park channel closes (a parked track wakes and
    /// ends), a handler still running is aborted at its next await.
    pub(crate) fn remove_track(&mut self, track: TrackId) {
        self.tracks.remove(track);
        self.forget_compensation(track);
        if !self.retries.is_empty() {
            self.release_held(track);
        }
    }

    /// Whether `track` is live and working at `node` (a report about it is current).
    pub(crate) fn working_at(&self, track: TrackId, node: NodeIdx) -> bool {
        self.tracks.is_at(track, node, TrackState::Working)
    }
}

/// Keep a set of changed fields in `set` unless it is empty; whether it is.
fn keep_changed(changed: crate::ChangedFields, set: &mut Option<crate::ChangedFields>) -> bool {
    let unchanged = changed.is_empty();
    if !unchanged {
        *set = Some(changed);
    }
    unchanged
}
