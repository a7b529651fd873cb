//! Compensation and transactions at run time (ARCHITECTURE.md, "Compensation").
//!
//! Each completion of an activity that has something to undo is logged in its scope
//! with the data as it committed (`state/compensation.rs`). A compensation throw
//! takes its scope's log — or one activity's completions — and undoes them latest
//! first, one at a time, while its token waits (`TrackState::Compensating`): an
//! activity's handler runs on a track of its own in the thrower's scope, starting from
//! the completion's snapshot, and its changes are merged into the current data; a
//! sub-process is undone by its compensation event sub-process when it has one (run
//! in a scope of its own whose log is the sub-process's inner log), else by undoing
//! its inner completions. A cancel end event cancels the rest of its transaction,
//! compensates what completed in it, and leaves through the cancel boundary.
//!
//! A loop's runs and a multi-instance activity's instances are logged one by one in
//! their activation scope, each with its snapshot and iteration; when the activation
//! completes they move to its parent's log as they are, so each is undone on its
//! own, latest completion first (BPMN §13.5.5), its handler (or event sub-process)
//! reading that iteration as its own.

use super::core::{Instance, Move};
use super::history::Happening;
use super::state::compensation::{Completion, Current, Run, Then};
use super::state::ids::{ScopeId, TrackId};
use super::state::tracks::TrackState;
use crate::data::ProcessData;
use crate::graph::{Node, NodeIdx, NodeKind};

impl<D: ProcessData> Instance<D> {
    /// `activity`'s compensation boundary and its handler, if it has one.
    fn compensation_boundary(&self, activity: NodeIdx) -> Option<(NodeIdx, NodeIdx)> {
        self.process.nodes[activity]
            .boundaries
            .iter()
            .find_map(|&b| match self.process.nodes[b].kind {
                NodeKind::CompensationBoundary { handler, .. } => Some((b, handler)),
                _ => None,
            })
    }

    /// The handler of `activity`'s compensation boundary, if it has one.
    fn compensation_handler(&self, activity: NodeIdx) -> Option<NodeIdx> {
        self.compensation_boundary(activity)
            .map(|(_, handler)| handler)
    }

    /// The start of the compensation event sub-process of the sub-process `node`.
    fn compensation_start(&self, node: NodeIdx) -> Option<NodeIdx> {
        self.event_subs_of(Some(node))
            .iter()
            .find_map(|&esp| match self.process.nodes[esp].kind {
                NodeKind::EventSubProcess { start, .. }
                    if matches!(self.process.nodes[start].kind, NodeKind::CompensationStart) =>
                {
                    Some(start)
                }
                _ => None,
            })
    }

    /// The activity `node` (`at`, its entry) completed on `track`: logged if it can
    /// be compensated (only an activity with boundary events can: every completion
    /// asks, inline).
    #[inline(always)]
    pub(crate) fn log_completion(&mut self, track: TrackId, node: NodeIdx, at: &Node<D>) {
        if !at.boundaries.is_empty() {
            self.log_compensable(track, node);
        }
    }

    #[inline(never)]
    fn log_compensable(&mut self, track: TrackId, node: NodeIdx) {
        if self.compensation_handler(node).is_some() {
            let scope = self.scope_of(track);
            let iteration = self.iteration_of(track);
            self.compensation.log(
                scope,
                Completion {
                    activity: node,
                    snapshot: self.data.snapshot(),
                    inner: Vec::new(),
                    iteration,
                },
            );
        }
    }

    /// A scope completed and closed, its log taken out as `inner`: a sub-process's
    /// completion is logged in `parent` if there is anything to undo of it; a
    /// finished event sub-process's log joins the scope it ran in; a compensation
    /// event sub-process's end moves its compensation run on.
    pub(crate) fn scope_completed(
        &mut self,
        scope: ScopeId,
        node: Option<NodeIdx>,
        owner: Option<TrackId>,
        parent: Option<ScopeId>,
        inner: Vec<Completion<D>>,
        moves: &mut Vec<Move>,
    ) {
        let (Some(node), Some(parent)) = (node, parent) else {
            return;
        };
        if owner.is_some() {
            let compensable = !inner.is_empty()
                || self.compensation_handler(node).is_some()
                || self.compensation_start(node).is_some();
            if compensable {
                let completion = Completion {
                    activity: node,
                    snapshot: self.data.snapshot(),
                    inner,
                    iteration: owner.and_then(|o| self.iteration_of(o)),
                };
                self.compensation.log(parent, completion);
            }
        } else if let Some(thrower) = self.compensation.thrower_of_scope(scope) {
            if let Some(run) = self.compensation.run_of(thrower) {
                run.current = Current::Idle;
            }
            self.advance_compensation(thrower, moves);
        } else if !inner.is_empty() {
            self.compensation.log_all(parent, inner);
        }
    }

    /// A loop or multi-instance activation completed and closed, its log taken out
    /// as `runs`: each run's (instance's) completion is one of the activity's own,
    /// logged in `parent` in completion order, never one for the whole activation.
    pub(crate) fn activation_completed(
        &mut self,
        parent: Option<ScopeId>,
        runs: Vec<Completion<D>>,
    ) {
        if let Some(parent) = parent.filter(|_| !runs.is_empty()) {
            self.compensation.log_all(parent, runs);
        }
    }

    /// The iteration of the completion `track` undoes, when it works for a
    /// compensation: as its handler, or inside the compensation event sub-process
    /// undoing it — unless an activation's instance is nearer (then that instance's
    /// index is its iteration, `iteration_of`). Outer `None`: `track` undoes nothing.
    #[inline(never)]
    pub(crate) fn undone_iteration(&self, track: TrackId) -> Option<Option<u32>> {
        if !self.compensation.is_running() {
            return None;
        }
        if let Some(iteration) = self.compensation.handler_iteration(track) {
            return Some(iteration);
        }
        if self.is_instance(track) {
            return None;
        }
        let mut at = Some(self.scope_of(track));
        while let Some(scope) = at {
            if let Some(iteration) = self.compensation.iteration_in(scope) {
                return Some(iteration);
            }
            let slot = self.scopes.get(scope)?;
            if slot.owner.is_some_and(|o| self.is_instance(o)) {
                return None;
            }
            at = slot.parent;
        }
        None
    }

    /// The scope whose log a compensation thrown in `scope` undoes: out of event
    /// sub-processes to the scope they run in, except in a compensation event
    /// sub-process, whose own scope holds its sub-process's inner log.
    fn compensation_target(&self, mut scope: ScopeId) -> ScopeId {
        loop {
            if self.compensation.thrower_of_scope(scope).is_some() {
                return scope;
            }
            match self.scopes.get(scope) {
                Some(slot) if slot.is_event_sub() => match slot.parent {
                    Some(parent) => scope = parent,
                    None => return scope,
                },
                _ => return scope,
            }
        }
    }

    /// A token reached a compensation throw (`end`: a compensation end event) for
    /// `activity`, or for its whole scope.
    pub(crate) fn throw_compensation(
        &mut self,
        track: TrackId,
        at: NodeIdx,
        activity: Option<NodeIdx>,
        end: bool,
        moves: &mut Vec<Move>,
    ) {
        let scope = self.compensation_target(self.scope_of(track));
        let queue = match activity {
            Some(activity) => self.compensation.take_of(scope, activity),
            None => self.compensation.take_log(scope),
        };
        let then = if end { Then::End } else { Then::Continue };
        self.begin_compensation(track, at, queue, then, moves);
    }

    /// A token reached a cancel end event: the rest of its transaction is cancelled,
    /// what completed in it is compensated, and the transaction is left through its
    /// cancel boundary.
    pub(crate) fn cancel_transaction(
        &mut self,
        track: TrackId,
        at: NodeIdx,
        moves: &mut Vec<Move>,
    ) {
        let scope = self.scope_of(track);
        self.cancel_inside_but(scope, Some(track));
        let queue = self.compensation.take_log(scope);
        self.begin_compensation(track, at, queue, Then::Cancel, moves);
    }

    fn begin_compensation(
        &mut self,
        track: TrackId,
        at: NodeIdx,
        queue: Vec<Completion<D>>,
        then: Then,
        moves: &mut Vec<Move>,
    ) {
        self.record(
            track,
            at,
            Happening::Thrown {
                catchers: queue.len(),
            },
        );
        if !self.tracks.set_state(track, TrackState::Compensating) {
            return self.internal(at, "a compensation thrown on a track that is gone");
        }
        self.compensation.begin(Run {
            thrower: track,
            queue,
            current: Current::Idle,
            then,
        });
        self.advance_compensation(track, moves);
    }

    /// Undo the next completion of `thrower`'s run, or finish the run.
    pub(crate) fn advance_compensation(&mut self, thrower: TrackId, moves: &mut Vec<Move>) {
        loop {
            if self.outcome.is_some() {
                return;
            }
            let Some(run) = self.compensation.run_of(thrower) else {
                return;
            };
            let Some(completion) = run.queue.pop() else {
                return self.finish_compensation(thrower, moves);
            };
            let scope = self.scope_of(thrower);
            if let Some((boundary, handler)) = self.compensation_boundary(completion.activity) {
                let NodeKind::Task(run_handler) = self.process.nodes[handler].kind else {
                    return self.internal(handler, "a compensation handler is not a task");
                };
                // The handler's track begins at the boundary, as a boundary's token
                // does, and goes along the association to the handler.
                let track = self.new_track(boundary, scope);
                self.record(track, boundary, Happening::Spawned { from: thrower });
                if let Some(slot) = self.tracks.get_mut(track) {
                    slot.at = handler;
                }
                if let Some(run) = self.compensation.run_of(thrower) {
                    run.current = Current::Handler {
                        track,
                        snapshot: completion.snapshot,
                        iteration: completion.iteration,
                    };
                }
                return self.run_task(track, handler, run_handler, moves);
            }
            if let Some(start) = self.compensation_start(completion.activity) {
                let Some(esp) = self.process.nodes[start].scope else {
                    return self
                        .internal(start, "a compensation start outside an event sub-process");
                };
                let inner = self.open_scope(Some(esp), Some(scope), None);
                self.compensation.set_log(inner, completion.inner);
                if let Some(run) = self.compensation.run_of(thrower) {
                    run.current = Current::EventSub {
                        scope: inner,
                        iteration: completion.iteration,
                    };
                }
                let track = self.new_track(start, inner);
                self.record(track, start, Happening::Started);
                return self.split(track, start, moves);
            }
            // A sub-process with neither: its inner completions, latest first.
            if let Some(run) = self.compensation.run_of(thrower) {
                run.queue.extend(completion.inner);
            }
        }
    }

    /// A compensation handler's task completed on `track`: returns whether it was
    /// one (then its run moves on and the track ends here, having no flows). Every
    /// completion asks, inline; only one under a compensation run looks further.
    #[inline(always)]
    pub(crate) fn compensation_handler_done(
        &mut self,
        track: TrackId,
        node: NodeIdx,
        moves: &mut Vec<Move>,
    ) -> bool {
        !self.compensation.is_empty() && self.handler_done(track, node, moves)
    }

    #[inline(never)]
    fn handler_done(&mut self, track: TrackId, node: NodeIdx, moves: &mut Vec<Move>) -> bool {
        let Some(thrower) = self.compensation.thrower_of_handler(track) else {
            return false;
        };
        if let Some(run) = self.compensation.run_of(thrower) {
            run.current = Current::Idle;
        }
        self.record(track, node, Happening::Ended);
        self.remove_track(track);
        self.advance_compensation(thrower, moves);
        true
    }

    /// Every completion of the run is undone: the thrower goes on, ends, or its
    /// transaction leaves through the cancel boundary.
    fn finish_compensation(&mut self, thrower: TrackId, moves: &mut Vec<Move>) {
        let Some(run) = self.compensation.take_run(thrower) else {
            return;
        };
        let Some(at) = self.tracks.get(thrower).map(|t| t.at) else {
            return;
        };
        match run.then {
            Then::Continue => {
                self.tracks.set_state(thrower, TrackState::Moving);
                self.split(thrower, at, moves);
            }
            Then::End => {
                self.record(thrower, at, Happening::Ended);
                self.remove_track(thrower);
            }
            Then::Cancel => {
                let scope = self.scope_of(thrower);
                self.record(thrower, at, Happening::Ended);
                self.remove_track(thrower);
                let Some((owner, transaction)) = self
                    .scopes
                    .get(scope)
                    .and_then(|slot| Some((slot.owner?, slot.node?)))
                else {
                    return self.internal(at, "a cancel end outside a running transaction");
                };
                let boundary = self.process.nodes[transaction]
                    .boundaries
                    .iter()
                    .copied()
                    .find(|&b| {
                        matches!(self.process.nodes[b].kind, NodeKind::CancelBoundary { .. })
                    });
                match boundary {
                    Some(boundary) => self.interrupt(owner, transaction, boundary, None),
                    None => self.internal(transaction, "a transaction without a cancel boundary"),
                }
            }
        }
    }

    /// A track ended: a compensation run it was waiting for goes with it (its
    /// scope was cancelled, or the instance stops).
    pub(crate) fn forget_compensation(&mut self, track: TrackId) {
        if self.compensation.is_running() {
            self.compensation.take_run(track);
        }
    }
}
