//! The instance loop: one task per instance, the single writer of all its state.
//!
//! The loop owns the track registry and its position view, the joins' arrival state,
//! the process data and the history. Tracks run activities and report back on the
//! intake channel; the loop commits their data and moves their tokens across flows
//! and gateways itself, so routing, joins and the OR-join's reachability test all read
//! one consistent view and no lock guards anything (DESIGN §4, invariants 1, 2, 7).
//!
//! A token's move through gateways is one uninterrupted step of the loop: the tokens
//! a step produces are all placed before any inclusive join is checked, which is how
//! a token "in transit" to a join defers its firing (ADR-005 §2.10).

use std::collections::VecDeque;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::task::Poll;

use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;
use tracing::{debug, info_span, trace, warn, Instrument};

use super::history::{Happening, History, TrackId};
use super::join::JoinState;
use super::scope::{ScopeId, ScopeSlot, ROOT};
use super::track::{self, panic_message, Inbox, Instruction, Report};
use super::waits::{Clock, Parked};
use super::{Command, Finished, Input, InstanceError, InstanceHandle, InstanceId, Outcome};
use crate::data::ProcessData;
use crate::events::{Delivery, Hub, Mailbox};
use crate::graph::{Condition, FlowIdx, NodeIdx, NodeKind, Process, TaskHandler, TaskRun};

/// How many task runs the loop starts inline per input before it hands ready work
/// to tracks anyway, so a process that loops through always-ready handlers still
/// lets the loop hear a cancel.
const INLINE_BUDGET: u32 = 128;

/// Start an instance's loop on `runtime` and return its handle.
/// Where a new instance lives: the runtime, the engine's task tracker and hub, and
/// the stop token it watches.
pub(crate) struct Birth<'a> {
    pub runtime: &'a tokio::runtime::Handle,
    pub tracker: &'a tokio_util::task::TaskTracker,
    pub hub: Arc<Hub>,
    pub stop: CancellationToken,
    /// Whether the instance records its history.
    pub history: bool,
}

pub(crate) fn spawn<D: ProcessData>(
    birth: Birth<'_>,
    process: &'static Process<D>,
    id: InstanceId,
    data: D,
    entry: Entry,
) -> InstanceHandle<D> {
    let Birth {
        runtime,
        tracker,
        hub,
        stop,
        history,
    } = birth;
    let (intake_tx, intake) = super::intake::channel();
    let span = info_span!("instance", process = process.name, id = id.0);
    let instance = Instance {
        process,
        data: Arc::new(data),
        // Room for the first track and the first two steps (start, then a wait or a
        // task): what an instance parked at its first catch keeps. A history that
        // outgrows that makes room for two steps per node (8 to 64): fewer regrowths
        // for a short run (parallel-10 ~112 vs ~105 k/s), little idle room for an
        // instance that waits deeper in (bench events park-memory-scoped).
        tracks: Vec::with_capacity(1),
        joins: Vec::new(),
        history: if history {
            History::with_capacity(2, (2 * process.nodes.len()).clamp(8, 64))
        } else {
            History::off()
        },
        intake_tx,
        workers: JoinSet::new(),
        running: 0,
        next_track: 0,
        outcome: None,
        moves: VecDeque::new(),
        taken: Vec::new(),
        inline_budget: INLINE_BUDGET,
        hub,
        mailbox: None,
        parked: Vec::new(),
        scopes: Vec::new(),
        next_scope: 0,
        root_interrupted: false,
        next_timer: 0,
        clock: None,
    };
    let (handle, finished_tx) = InstanceHandle::new(id, instance.intake_tx.clone());
    // The loop. Written out here rather than as an `async fn` taking the instance:
    // an async fn's state holds each argument twice (as passed and as moved into its
    // local), and this future is most of a parked instance's memory.
    let mut instance = instance;
    let mut intake = intake;
    // Boxed: the future keeps its captures for its whole life, and the entry is
    // needed only for the first step.
    let entry = Box::new(entry);
    let body = async move {
        // Stop and cancel are honoured before any user code runs: an instance born
        // into a shut-down engine, or cancelled through its handle before its loop
        // first ran, ends `Cancelled` without its first step.
        let cancelled =
            |input: &Input<D>| matches!(input, Input::Handle(c) if matches!(**c, Command::Cancel));
        if stop.is_cancelled() || intake.any_queued(cancelled) {
            instance.cancel_at_birth(&entry);
        } else {
            instance.start(*entry);
        }
        instance.serve(&mut intake, &stop).await;
        // Every track is stopped and awaited before the outcome is published, so an
        // ended instance leaves no task behind.
        instance.workers.shutdown().await;
        instance.close(intake, &finished_tx);
    };
    let body = body.instrument(span);
    tracker.spawn_on(body, runtime);
    handle
}

/// Where an instance begins.
pub(crate) enum Entry {
    /// At the none start event (`Engine::start`).
    NoneStart,
    /// At a start event (or an instantiating gateway's arm) whose trigger came, with
    /// what it brought; `also`: other arms to wait on (a parallel instantiating gate).
    Event {
        start: NodeIdx,
        payload: Option<crate::graph::Payload>,
        also: Vec<NodeIdx>,
    },
}

/// Where a live track is and what it is doing there.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum TrackState {
    /// Being moved by the loop (only within one loop step).
    Moving,
    /// Running the activity at its node (inline on the loop or on its task).
    Working,
    /// Parked at the synchronising join at its node.
    Waiting,
    /// At an embedded sub-process, waiting for the scope it runs to complete.
    InScope,
}

/// The loop's record of one live track, built only from what the loop did and what
/// the track reported (ADR-017 Rule 2).
pub(super) struct TrackSlot<D> {
    pub(super) id: TrackId,
    pub(super) at: NodeIdx,
    pub(super) state: TrackState,
    /// The scope the track runs in.
    pub(super) scope: ScopeId,
    /// The track's park channel; `None` until its work first has to wait (a track
    /// whose work is always ready never needs a task).
    inbox: Option<Inbox<D>>,
    /// The track's task, to stop it when an interrupting boundary drops its work.
    task: Option<tokio::task::AbortHandle>,
}

/// A token to move: on `track`, across `flow`.
pub(super) type Move = (TrackId, FlowIdx);

pub(super) struct Instance<D: ProcessData> {
    pub(super) process: &'static Process<D>,
    pub(super) data: Arc<D>,
    /// Live tracks. Few at a time, so a vector beats a map.
    pub(super) tracks: Vec<TrackSlot<D>>,
    /// Arrival state of the joins that have seen a token.
    pub(super) joins: Vec<JoinState>,
    history: History,
    /// The loop's own intake; cloned for every track task and handle.
    pub(super) intake_tx: super::Intake<Input<D>>,
    /// The tracks' tasks; dropping or shutting it down stops them all.
    workers: JoinSet<()>,
    /// Tracks in state `Working`.
    pub(super) running: usize,
    next_track: u32,
    /// How the instance ended, once it has. Boxed: it holds the data and the error
    /// inline, and the loop's future (a parked instance's memory) carries the field
    /// from start to end.
    pub(super) outcome: Option<Box<Outcome<D>>>,
    /// Scratch buffers of `leave` and `split`, kept to avoid an allocation per step.
    moves: VecDeque<Move>,
    taken: Vec<FlowIdx>,
    /// Task runs the loop may still start inline while handling the current input.
    inline_budget: u32,
    /// The engine's event hub, and this instance's mailbox there (made on first need).
    pub(super) hub: Arc<Hub>,
    pub(super) mailbox: Option<Arc<dyn Mailbox>>,
    /// Parked-and-undelivered tracks (SRD-027 FR-4), in parking order, with the
    /// armed boundary events of working activities and event sub-process starts of
    /// open scopes.
    pub(super) parked: Vec<Parked>,
    /// The open nested scopes (sub-processes, event sub-processes), in opening
    /// order; the process's own scope is implicit.
    pub(super) scopes: Vec<ScopeSlot>,
    pub(super) next_scope: u32,
    /// An interrupting event sub-process took the process's own scope over.
    pub(super) root_interrupted: bool,
    /// Ids of timers and conditional events.
    pub(super) next_timer: u64,
    /// Timers and conditional events, made on first need.
    pub(super) clock: Option<Box<Clock<D>>>,
}

impl<D: ProcessData> Instance<D> {
    /// Take inputs until the instance has its outcome.
    async fn serve(
        &mut self,
        intake: &mut super::intake::IntakeReceiver<Input<D>>,
        stop: &CancellationToken,
    ) {
        let cancelled = stop.cancelled();
        tokio::pin!(cancelled);
        while self.outcome.is_none() {
            tokio::select! {
                biased;
                _ = &mut cancelled => self.stop_all(Outcome::Cancelled(D::clone(&self.data))),
                // The loop holds a sender itself, so the intake never closes.
                Some(input) = intake.recv() => self.on_input(input),
                _ = async { self.clock.as_mut().and_then(|c| c.sleep.as_mut()).expect("guarded").await },
                    if self.clock.as_ref().is_some_and(|c| c.sleep.is_some()) => {
                    self.inline_budget = INLINE_BUDGET;
                    self.on_timers();
                }
            }
            // Reap the tasks of tracks that ended (panics are caught in the track).
            while self.workers.try_join_next().is_some() {}
        }
    }

    fn on_input(&mut self, input: Input<D>) {
        self.inline_budget = INLINE_BUDGET;
        match input {
            Input::Track(report) => self.on_report(*report),
            Input::Handle(command) => self.on_command(*command),
            Input::Event(delivery) => self.on_event(*delivery),
        }
    }

    /// The instance ended: hand back what is in transit and publish the outcome.
    fn close(
        &mut self,
        mut intake: super::intake::IntakeReceiver<Input<D>>,
        finished: &super::Publisher<D>,
    ) {
        // Messages the broker handed us that no track took go back to it, so an
        // instance that ends while a message is on its way loses nothing.
        intake.close();
        while let Some(input) = intake.try_recv() {
            if let Input::Event(delivery) = input {
                if let Delivery::Message {
                    name, key, payload, ..
                } = *delivery
                {
                    self.hub.publish(&name, &key, payload);
                }
            }
        }
        let outcome = self
            .outcome
            .take()
            .map_or(Outcome::Failed(InstanceError::Lost), |outcome| *outcome);
        debug!(outcome = outcome.kind(), "instance ended");
        let data = D::clone(&self.data);
        finished.publish(Finished {
            outcome,
            history: std::mem::take(&mut self.history),
            data,
        });
    }

    // ----- inputs ---------------------------------------------------------------

    fn start(&mut self, entry: Entry) {
        match entry {
            Entry::NoneStart => {
                let Some(start) = self.process.none_start() else {
                    return self.fail(InstanceError::NoNoneStart);
                };
                if !self.open_process_scope() {
                    return;
                }
                let track = self.new_track(start, ROOT);
                self.record(track, start, Happening::Started);
                self.step(|this, moves| this.split(track, start, moves));
            }
            Entry::Event {
                start,
                payload,
                also,
            } => {
                // Started by its trigger: the payload is mapped here, in the loop (no
                // track has a task yet), so the other arms of a parallel instantiating
                // gate subscribe with keys over the data it brought.
                let track = self.new_track(start, ROOT);
                self.record(track, start, Happening::Started);
                let id = self.process.nodes[start].id;
                let base = Arc::clone(&self.data);
                let mut edited = D::clone(&base);
                if let Some(apply) = self.apply_for(start, payload) {
                    match std::panic::catch_unwind(AssertUnwindSafe(|| apply(&mut edited))) {
                        Ok(Ok(())) => {}
                        Ok(Err(error)) => {
                            let message = error.to_string();
                            self.record(
                                track,
                                start,
                                Happening::Failed {
                                    message: message.clone(),
                                },
                            );
                            return self.fail(InstanceError::TaskFailed { node: id, message });
                        }
                        Err(panic) => {
                            return self.task_panicked(track, start, panic_message(panic))
                        }
                    }
                }
                let changed = self.commit(&base, edited).names().collect();
                // A receive task (an instantiating gate's arm) completes; an event catches.
                let what = match self.process.nodes[start].kind {
                    NodeKind::Receive(_) => Happening::Completed { changed },
                    _ => Happening::Caught { changed },
                };
                self.record(track, start, what);
                // Armed over the data the trigger brought (a message event
                // sub-process's key is usually in it).
                if !self.open_process_scope() {
                    return;
                }
                for arm in also {
                    let other = self.new_track(arm, ROOT);
                    self.record(other, arm, Happening::Spawned { from: track });
                    self.park(other, arm, &[arm]);
                }
                self.step(|this, moves| this.split(track, start, moves));
            }
        }
    }

    /// The instance is cancelled before its first step: its token is recorded at the
    /// start it was to leave from, and cancelled there — no payload applied, no
    /// handler run, no event sub-process armed.
    fn cancel_at_birth(&mut self, entry: &Entry) {
        let start = match entry {
            Entry::NoneStart => self.process.none_start(),
            Entry::Event { start, .. } => Some(*start),
        };
        if let Some(start) = start {
            let track = self.new_track(start, ROOT);
            self.record(track, start, Happening::Started);
        }
        self.stop_all(Outcome::Cancelled(D::clone(&self.data)));
    }

    /// Open the process's own scope: its event sub-processes are armed before the
    /// first token moves on (one whose condition holds already runs at once).
    /// Returns whether the start goes on — not if an interrupting event sub-process
    /// took the scope over right away.
    fn open_process_scope(&mut self) -> bool {
        self.open_scope(None, None, None);
        self.fire_due();
        self.outcome.is_none() && !self.root_interrupted
    }

    fn on_report(&mut self, report: Report<D>) {
        match report {
            Report::TaskDone {
                track,
                node,
                base,
                edited,
                result,
            } => {
                // A report from work the loop already dropped (its track stopped,
                // its activity interrupted) is ignored.
                if self.working_at(track, node) {
                    self.step(|this, moves| {
                        this.task_done(track, node, base, edited, result, moves)
                    });
                }
            }
            Report::TaskPanicked {
                track,
                node,
                message,
            } => {
                // Like a late `TaskDone`: a panic from work the loop already dropped
                // (its activity was interrupted, its scope cancelled) is no failure.
                if self.working_at(track, node) {
                    self.task_panicked(track, node, message);
                }
            }
        }
    }

    fn on_command(&mut self, command: Command<D>) {
        match command {
            Command::Cancel => self.stop_all(Outcome::Cancelled(D::clone(&self.data))),
            Command::History(reply) => {
                let _ = reply.send(self.history.clone());
            }
            Command::Data(reply) => {
                let _ = reply.send(D::clone(&self.data));
            }
            Command::OpenWork(reply) => {
                let _ = reply.send(self.open_work());
            }
            Command::Complete {
                node,
                update,
                reply,
            } => {
                let _ = reply.send(self.complete_work(&node, update));
            }
            Command::RaiseFromWork {
                node,
                code,
                error,
                reply,
            } => {
                // A step: what the raise cancels or starts settles like any move.
                let mut result = Ok(());
                self.step(|this, _| result = this.raise_from_work(&node, code, error));
                let _ = reply.send(result);
            }
            Command::FailWork {
                node,
                message,
                reply,
            } => {
                let _ = reply.send(self.fail_work(&node, message));
            }
        }
    }

    /// Commit a task's copy: a three-way merge when others committed since the task
    /// took its snapshot, a plain diff otherwise (the common, clone-free case).
    fn commit(&mut self, base: &Arc<D>, edited: D) -> crate::ChangedFields {
        if Arc::ptr_eq(base, &self.data) {
            let changed = self.data.diff(&edited);
            if !changed.is_empty() {
                self.data = Arc::new(edited);
            }
            changed
        } else {
            Arc::make_mut(&mut self.data).merge(base, edited)
        }
    }

    // ----- moving tokens --------------------------------------------------------

    /// One step of the loop: `act` puts tokens on flows, then they are settled. The
    /// move buffer is reused from step to step, so a step allocates nothing for it.
    fn step(&mut self, act: impl FnOnce(&mut Self, &mut VecDeque<Move>)) {
        let mut moves = std::mem::take(&mut self.moves);
        act(self, &mut moves);
        self.settle(&mut moves);
        moves.clear();
        self.moves = moves;
    }

    /// Move tokens until every one rests at an activity, a join or an end; then
    /// check the inclusive joins, and repeat while one fires.
    fn settle(&mut self, moves: &mut VecDeque<Move>) {
        loop {
            // Depth first: a token runs on until it rests before its siblings move.
            while let Some((track, flow)) = moves.pop_back() {
                if self.outcome.is_some() {
                    return;
                }
                self.enter(track, flow, moves);
            }
            if self.outcome.is_some() {
                break;
            }
            if self.check_reachability_joins(moves) {
                continue;
            }
            // Scopes with nothing left running complete; their tokens go on.
            if self.scopes.is_empty() || !self.complete_scopes(moves) {
                break;
            }
        }
        if self.outcome.is_some() {
            return;
        }
        if self.tracks.is_empty() {
            // The process's scope completes: its event sub-processes go with it.
            self.disarm_all();
            self.outcome = Some(Box::new(Outcome::Completed(D::clone(&self.data))));
        } else if self.running == 0 && !self.event_armed() {
            // Nothing works, no token waits for an event, and no event sub-process or
            // boundary on a sub-process can still be triggered: the tokens at joins
            // wait for ever.
            let joins = self
                .joins
                .iter()
                .filter(|j| !j.is_empty())
                .map(|j| self.process.nodes[j.node].id)
                .collect();
            self.fail(InstanceError::Deadlock { joins });
        }
    }

    /// The token on `track` arrives at the target of `flow`.
    fn enter(&mut self, track: TrackId, flow: FlowIdx, moves: &mut VecDeque<Move>) {
        let process = self.process;
        let at = process.flows[flow].target;
        let node = &process.nodes[at];
        // A token whose scope was cancelled earlier in this step moves no more.
        let Some(slot) = self.slot_mut(track) else {
            return;
        };
        slot.at = at;
        let scope = slot.scope;
        if node.is_sync_join() {
            let slot = node
                .incoming
                .iter()
                .position(|f| *f == flow)
                .expect("flow enters its target");
            self.arrive(track, at, slot, moves);
            return;
        }
        match node.kind {
            NodeKind::Task(handler) => self.run_task(track, at, handler, moves),
            NodeKind::End => {
                self.record(track, at, Happening::Ended);
                self.remove_track(track);
            }
            NodeKind::Terminate => {
                self.record(track, at, Happening::Terminated);
                if scope == ROOT {
                    self.remove_track(track);
                    self.stop_all(Outcome::Terminated(D::clone(&self.data)));
                } else {
                    // Inside a sub-process: only its scope ends (ADR-006 §2.2).
                    self.terminate_scope(track, scope);
                }
            }
            NodeKind::SubProcess { start, .. } => self.enter_sub_process(track, at, start, moves),
            NodeKind::Catch(_) | NodeKind::Receive(_) | NodeKind::User => {
                self.park(track, at, &[at])
            }
            NodeKind::EventGate => {
                let arms: Vec<NodeIdx> = node
                    .outgoing
                    .iter()
                    .map(|&f| process.flows[f].target)
                    .collect();
                self.park(track, at, &arms);
            }
            NodeKind::Throw(ref throw) => match self.throw(track, at, throw) {
                Ok(()) => self.split(track, at, moves),
                Err(error) => self.fail(error),
            },
            NodeKind::ThrowEnd(ref throw) => match self.throw(track, at, throw) {
                Ok(()) => {
                    self.record(track, at, Happening::Ended);
                    self.remove_track(track);
                }
                Err(error) => self.fail(error),
            },
            NodeKind::ErrorEnd { code } => {
                // The error travels outward from this scope; the track is cancelled
                // with the scope that catches it, or with the failing instance.
                self.record(
                    track,
                    at,
                    Happening::ErrorThrown {
                        code: code.to_string(),
                    },
                );
                self.throw_error(track, at, code.to_string(), String::new());
            }
            NodeKind::Escalate { code, end } => {
                self.record(
                    track,
                    at,
                    Happening::Escalated {
                        code: code.to_string(),
                    },
                );
                self.throw_escalation(track, at, code.to_string());
                // An interrupting catcher took the token away; else (uncaught, which is
                // no error, or caught beside it) it goes on or ends.
                if self.outcome.is_some() || self.slot_mut(track).is_none() {
                    return;
                }
                if end {
                    self.record(track, at, Happening::Ended);
                    self.remove_track(track);
                } else {
                    self.split(track, at, moves);
                }
            }
            NodeKind::Start
            | NodeKind::StartEvent(_)
            | NodeKind::InstantiatingGate { .. }
            | NodeKind::Boundary { .. }
            | NodeKind::Link
            | NodeKind::Exclusive
            | NodeKind::Parallel
            | NodeKind::Inclusive { .. }
            | NodeKind::Complex { .. }
            | NodeKind::EventSubStart { .. } => self.split(track, at, moves),
            // No flow enters an event sub-process (`process!` rejects one).
            NodeKind::EventSubProcess { .. } => self.fail(InstanceError::Internal {
                what: "a token entered an event sub-process along a flow",
            }),
        }
    }

    /// Choose the outgoing flows of `node` by its kind and put the token on them: the
    /// track continues on the first, a new track is forked for each other.
    pub(super) fn split(&mut self, track: TrackId, node: NodeIdx, moves: &mut VecDeque<Move>) {
        let mut taken = std::mem::take(&mut self.taken);
        taken.clear();
        // One allocation for a wide split, not a doubling per flow.
        taken.reserve(self.process.nodes[node].outgoing.len());
        if let Err(error) = self.select_outgoing(node, &mut taken) {
            return self.fail(error);
        }
        moves.reserve(taken.len());
        let n = &self.process.nodes[node];
        if matches!(
            n.kind,
            NodeKind::Exclusive
                | NodeKind::Parallel
                | NodeKind::Inclusive { .. }
                | NodeKind::Complex { .. }
        ) {
            let to = taken
                .iter()
                .map(|f| self.process.nodes[self.process.flows[*f].target].id)
                .collect();
            self.record(track, node, Happening::Routed { to });
        }
        match taken.split_first() {
            Some((&first, rest)) => {
                // `moves` is a stack: push the forks last-first, then the continuing
                // token, so tokens move in flow order.
                self.tracks.reserve(rest.len());
                let first_fork = self.next_track;
                let scope = match rest {
                    [] => ROOT,
                    _ => self.slot_mut(track).map_or(ROOT, |s| s.scope),
                };
                for _ in rest {
                    let fork = self.new_track(node, scope);
                    self.record(fork, node, Happening::Spawned { from: track });
                }
                // Forks got consecutive ids, in flow order.
                for (i, &flow) in rest.iter().enumerate().rev() {
                    moves.push_back((TrackId(first_fork + i as u32), flow));
                }
                moves.push_back((track, first));
            }
            None => {
                // No outgoing flow at all: `process!` lets only end events be here.
                self.record(track, node, Happening::Ended);
                self.remove_track(track);
            }
        }
        self.taken = taken;
    }

    /// The flows a node's split takes (ADR-005 §2.2, §2.8, §2.9): exclusive takes the
    /// first true condition in declared order, every other kind takes every true or
    /// unconditional flow; with none, the default; with no default, an error.
    fn select_outgoing(
        &self,
        node: NodeIdx,
        taken: &mut Vec<FlowIdx>,
    ) -> Result<(), InstanceError> {
        let n = &self.process.nodes[node];
        let exclusive = matches!(n.kind, NodeKind::Exclusive);
        for &f in n.outgoing.iter().filter(|f| Some(**f) != n.default) {
            if self.condition_holds(f)? {
                taken.push(f);
                if exclusive {
                    break;
                }
            }
        }
        if taken.is_empty() {
            match n.default {
                Some(default) => taken.push(default),
                None if n.outgoing.is_empty() => {}
                None => return Err(InstanceError::NoFlowTaken { node: n.id }),
            }
        }
        Ok(())
    }

    fn condition_holds(&self, flow: FlowIdx) -> Result<bool, InstanceError> {
        let f = &self.process.flows[flow];
        match f.condition {
            None => Ok(true),
            Some(condition) => {
                self.evaluate(condition)
                    .map_err(|message| InstanceError::ConditionPanicked {
                        from: self.process.nodes[f.source].id,
                        to: self.process.nodes[f.target].id,
                        message,
                    })
            }
        }
    }

    /// Evaluate a user's condition on the data; a panic becomes its message.
    pub(super) fn evaluate(&self, condition: Condition<D>) -> Result<bool, String> {
        std::panic::catch_unwind(AssertUnwindSafe(|| condition(&self.data))).map_err(panic_message)
    }

    // ----- tracks ---------------------------------------------------------------

    pub(super) fn new_track(&mut self, at: NodeIdx, scope: ScopeId) -> TrackId {
        let id = TrackId(self.next_track);
        self.next_track += 1;
        self.tracks.push(TrackSlot {
            id,
            at,
            scope,
            state: TrackState::Moving,
            inbox: None,
            task: None,
        });
        id
    }

    /// Start the task at `node` on the track: its handler runs on the loop until it
    /// first has to wait; ready work is committed and routed on the spot, waiting
    /// work goes on to the track's own task.
    fn run_task(
        &mut self,
        track: TrackId,
        node: NodeIdx,
        handler: TaskHandler<D>,
        moves: &mut VecDeque<Move>,
    ) {
        self.record(track, node, Happening::TaskStarted);
        self.slot_mut(track).expect("running track is live").state = TrackState::Working;
        self.running += 1;
        self.guard(track, node);
        // A conditional boundary true at the start fires before the handler runs; an
        // interrupting one takes the token away (the track is gone then).
        self.fire_due();
        if self.outcome.is_some() || self.slot_mut(track).is_none_or(|s| s.at != node) {
            return;
        }
        let base = Arc::clone(&self.data);
        let mut run = handler(D::clone(&base));
        if self.inline_budget > 0 {
            self.inline_budget -= 1;
            // The handler's own events belong to its track, inline as on its task.
            // The loop runs inside the instance's span: it is the current one here.
            let span = info_span!("track", track = track.0, node = self.process.nodes[node].id);
            let polled = span.in_scope(|| track::poll_once(&mut run));
            match polled {
                Ok(Poll::Ready((edited, result))) => {
                    return self.task_done(track, node, base, edited, result, moves)
                }
                Ok(Poll::Pending) => {}
                Err(message) => return self.task_panicked(track, node, message),
            }
        }
        self.hand_to_track(track, node, base, run);
    }

    /// Give a started task run to the track's task.
    fn hand_to_track(&mut self, track: TrackId, node: NodeIdx, base: Arc<D>, run: TaskRun<D>) {
        self.send_to_track(track, Instruction::Finish { node, base, run });
    }

    /// The track's park channel, spawning its task on first need: from then on the
    /// task waits on the channel for the loop's next instruction.
    pub(super) fn track_inbox(&mut self, track: TrackId) -> Option<&mut Inbox<D>> {
        let intake = &self.intake_tx;
        let workers = &mut self.workers;
        let slot = self.tracks.iter_mut().find(|s| s.id == track)?;
        let task = &mut slot.task;
        Some(slot.inbox.get_or_insert_with(|| {
            let (tx, rx) = Inbox::new();
            let span = info_span!("track", track = track.0);
            *task = Some(workers.spawn(track::run(track, rx, intake.clone()).instrument(span)));
            tx
        }))
    }

    /// Send the track an instruction: the loop is the only sender on its channel.
    pub(super) fn send_to_track(&mut self, track: TrackId, instruction: Instruction<D>) {
        let sent = self
            .track_inbox(track)
            .is_some_and(|inbox| inbox.send(instruction));
        if !sent {
            // Unreachable while the track lives; fail loudly rather than leave the
            // token stranded.
            self.fail(InstanceError::Internal {
                what: "a track's park channel was closed",
            });
        }
    }

    /// A task's handler returned: commit its copy on `Ok` and move on, fail on `Err`.
    fn task_done(
        &mut self,
        track: TrackId,
        node: NodeIdx,
        base: Arc<D>,
        edited: D,
        result: Result<(), crate::TaskError>,
        moves: &mut VecDeque<Move>,
    ) {
        let Some(slot) = self.slot_mut(track) else {
            return;
        };
        if (slot.at, slot.state) != (node, TrackState::Working) {
            // Not the work this track does now: `running` must not move for it.
            return self.fail(InstanceError::Internal {
                what: "a task finished on a track that was not working at it",
            });
        }
        slot.state = TrackState::Moving;
        self.running -= 1;
        let id = self.process.nodes[node].id;
        // The activity ended: its boundary events go with it.
        self.unguard(track);
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
                let changed = self.commit(&base, edited);
                debug!(track = %track, node = id, ?changed, "task completed");
                let names = changed.names().collect();
                let what = match self.process.nodes[node].kind {
                    NodeKind::Catch(_)
                    | NodeKind::Boundary { .. }
                    | NodeKind::StartEvent(_)
                    | NodeKind::EventSubStart { .. } => Happening::Caught { changed: names },
                    _ => Happening::Completed { changed: names },
                };
                self.record(track, node, what);
                self.split(track, node, moves);
                if !changed.is_empty() {
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

    /// A handler returned a BPMN error: it goes to its nearest catcher — an error
    /// boundary on the task, else outward through the scopes (ADR-006 §2.6).
    fn bpmn_error(&mut self, track: TrackId, node: NodeIdx, code: String, message: String) {
        self.record(track, node, Happening::ErrorThrown { code: code.clone() });
        self.throw_error(track, node, code, message);
    }

    /// A handler raised an escalation. Returns whether an interrupting catcher took
    /// the token away; otherwise the task completes (a non-interrupting catcher also
    /// starts a token; an uncaught escalation is no error).
    fn escalation(&mut self, track: TrackId, node: NodeIdx, code: String) -> bool {
        self.record(track, node, Happening::Escalated { code: code.clone() });
        self.throw_escalation(track, node, code);
        self.slot_mut(track).is_none()
    }

    fn task_panicked(&mut self, track: TrackId, node: NodeIdx, message: String) {
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

    pub(super) fn remove_track(&mut self, track: TrackId) {
        if let Some(i) = self.tracks.iter().position(|s| s.id == track) {
            // Dropping the slot drops the inbox sender: the parked track wakes to a
            // closed channel and ends. A track still running a handler (its activity
            // was interrupted) is aborted at the handler's next await.
            let slot = self.tracks.swap_remove(i);
            if slot.state == TrackState::Working {
                self.running -= 1;
            }
            if let Some(task) = slot.task {
                task.abort();
            }
        }
    }

    /// End the instance with `outcome`, stopping every live track.
    fn stop_all(&mut self, outcome: Outcome<D>) {
        if self.outcome.is_some() {
            return;
        }
        for slot in std::mem::take(&mut self.tracks) {
            self.history.push(
                slot.id,
                self.process.nodes[slot.at].id,
                Happening::Cancelled,
            );
        }
        self.running = 0;
        self.disarm_all();
        // Dropping the slots closed every park channel: parked tracks wake and end.
        self.workers.abort_all();
        self.outcome = Some(Box::new(outcome));
    }

    pub(super) fn fail(&mut self, error: InstanceError) {
        warn!(%error, "instance failed");
        self.stop_all(Outcome::Failed(error));
    }

    /// Whether `track` is live and working at `node` (a report about it is current).
    fn working_at(&mut self, track: TrackId, node: NodeIdx) -> bool {
        self.slot_mut(track)
            .is_some_and(|s| s.at == node && s.state == TrackState::Working)
    }

    pub(super) fn slot_mut(&mut self, track: TrackId) -> Option<&mut TrackSlot<D>> {
        self.tracks.iter_mut().find(|s| s.id == track)
    }

    /// Append to the history; every step is also a trace event carrying the node id.
    pub(super) fn record(&mut self, track: TrackId, node: NodeIdx, what: Happening) {
        let node = self.process.nodes[node].id;
        trace!(track = %track, node, ?what, "step");
        self.history.push(track, node, what);
    }
}
