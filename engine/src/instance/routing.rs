//! Moving tokens: one step of the loop places every token it moves — through
//! gateways, into activities, to joins and ends — and then settles the joins and
//! scopes that step may have decided. ARCHITECTURE.md, "The instance loop".

use std::borrow::Cow;
use std::panic::AssertUnwindSafe;

use super::core::{Instance, Move};
use super::history::Happening;
use super::outcome::panic_message;
use super::outcome::{Ended, InstanceError};
use super::state::ids::TrackId;
use super::state::ids::{ScopeId, ROOT};
use crate::data::ProcessData;
use crate::graph::{Condition, FlowIdx, NodeIdx, NodeKind};

/// A thread's scratch buffers of a step: the tokens to move, the flows a split
/// takes, the tokens a join's firing takes (`joining.rs`). Taken for the step and given back after, so a step nested in another on
/// the same thread (a handler that starts an instance) takes an empty one.
pub(super) mod scratch {
    use std::cell::Cell;
    use std::thread::LocalKey;

    use crate::graph::FlowIdx;
    use crate::instance::core::Move;
    use crate::instance::state::joins::Arrival;

    /// The most entries a buffer keeps room for between steps.
    const KEEP: usize = 4096;

    thread_local! {
        pub(super) static MOVES: Cell<Vec<Move>> = const { Cell::new(Vec::new()) };
        pub(super) static TAKEN: Cell<Vec<FlowIdx>> = const { Cell::new(Vec::new()) };
        pub(in crate::instance) static FIRED: Cell<Vec<Arrival>> = const { Cell::new(Vec::new()) };
    }

    // Inlined: with the key known where they are called, the thread-local's
    // accessor is a direct access, not a call through `LocalKey`'s fn pointer.
    #[inline(always)]
    pub(in crate::instance) fn take<T>(key: &'static LocalKey<Cell<Vec<T>>>) -> Vec<T> {
        key.try_with(Cell::take).unwrap_or_default()
    }

    #[inline(always)]
    pub(in crate::instance) fn give_back<T>(
        key: &'static LocalKey<Cell<Vec<T>>>,
        mut buffer: Vec<T>,
    ) {
        buffer.clear();
        if buffer.capacity() > KEEP {
            return;
        }
        let _ = key.try_with(|cell| {
            let other = cell.take();
            cell.set(if other.capacity() > buffer.capacity() {
                other
            } else {
                buffer
            });
        });
    }
}

/// Whether a split at a node of this kind records the flows it took (`Routed`): a
/// gateway's does.
fn records_route<D>(kind: &NodeKind<D>) -> bool {
    matches!(
        kind,
        NodeKind::Exclusive
            | NodeKind::Parallel
            | NodeKind::Inclusive { .. }
            | NodeKind::Complex { .. }
    )
}

impl<D: ProcessData> Instance<D> {
    /// One step of the loop: `act` puts tokens on flows, then they are settled. The
    /// move buffer is the thread's, reused from step to step and from instance to
    /// instance, so a step allocates nothing for it.
    pub(crate) fn step(&mut self, act: impl FnOnce(&mut Self, &mut Vec<Move>)) {
        let mut moves = scratch::take(&scratch::MOVES);
        act(self, &mut moves);
        self.settle(&mut moves);
        scratch::give_back(&scratch::MOVES, moves);
    }

    /// Move tokens until every one rests at an activity, a join or an end; then
    /// check the inclusive joins, and repeat while one fires.
    pub(crate) fn settle(&mut self, moves: &mut Vec<Move>) {
        loop {
            // Depth first: a token runs on until it rests before its siblings move.
            while let Some((track, flow)) = moves.pop() {
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
            // Instances of loop and multi-instance activities spawned in this step.
            if self.start_instances(moves) {
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
            self.outcome = Some(Ended::Completed);
        } else if self.tracks.active() == 0 && !self.event_armed() {
            // Nothing works, no token waits for an event, and no event sub-process or
            // boundary on a sub-process can still be triggered: the tokens at joins
            // wait for ever.
            let joins = self
                .joins
                .waiting()
                .map(|node| self.process.nodes[node].id)
                .collect();
            self.fail(InstanceError::Deadlock { joins });
        }
    }

    /// The token on `track` arrives at the target of `flow`.
    pub(crate) fn enter(&mut self, track: TrackId, flow: FlowIdx, moves: &mut Vec<Move>) {
        let process = self.process;
        let at = process.flows[flow].target;
        let node = &process.nodes[at];
        let Some(scope) = self.move_to(track, at) else {
            return;
        };
        if node.is_sync_join() {
            match node.incoming.iter().position(|f| *f == flow) {
                Some(slot) => self.arrive(track, at, slot, scope, moves),
                None => self.internal(at, "a flow's target does not list it as incoming"),
            }
            return;
        }
        // A loop or multi-instance activity runs its instances in an activation
        // (`looping.rs`); each instance then reaches the activity itself.
        if let Some(spec) = process.loop_of(at) {
            return self.enter_activation(track, at, spec, moves);
        }
        // What `reach` does at a task, without its frame (most steps reach one).
        if let NodeKind::Task(handler) = node.kind {
            return self.run_task(track, at, handler, moves);
        }
        self.reach(track, at, moves);
    }

    /// Put the token on `track` at `at`, a new activity's first attempt, and say
    /// the scope it runs in; `None` for a track whose scope was cancelled earlier
    /// in this step: it moves no more.
    #[inline(always)]
    pub(crate) fn move_to(&mut self, track: TrackId, at: NodeIdx) -> Option<ScopeId> {
        let slot = self.tracks.get_mut(track)?;
        // A waiting track is counted at its node (`Tracks::count`): it moves only
        // once its state says it no longer waits.
        debug_assert!(
            !matches!(
                slot.state(),
                super::state::tracks::TrackState::Parked
                    | super::state::tracks::TrackState::AtJoin
                    | super::state::tracks::TrackState::Held
            ),
            "a waiting track moved"
        );
        slot.at = at;
        slot.attempt = 1;
        Some(slot.scope)
    }

    /// The token on `track` is at `at`: what the node does with it.
    pub(crate) fn reach(&mut self, track: TrackId, at: NodeIdx, moves: &mut Vec<Move>) {
        let process = self.process;
        let node = &process.nodes[at];
        match node.kind {
            NodeKind::Task(handler) => self.run_task(track, at, handler, moves),
            NodeKind::End => {
                self.record(track, at, Happening::Ended);
                self.remove_track(track);
            }
            NodeKind::Terminate => {
                self.record(track, at, Happening::Terminated);
                let scope = self.scope_of(track);
                if scope == ROOT {
                    self.remove_track(track);
                    self.stop_all(Ended::Terminated);
                } else {
                    // Inside a sub-process: only its scope ends (ARCHITECTURE.md, "Events").
                    self.terminate_scope(track, scope);
                }
            }
            NodeKind::SubProcess { start, .. } => self.enter_sub_process(track, at, start, moves),
            NodeKind::Call(ref call) => self.run_call(track, at, call, moves),
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
                if self.outcome.is_some() || self.tracks.get(track).is_none() {
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
            NodeKind::Compensate { activity, end } => {
                self.throw_compensation(track, at, activity, end, moves)
            }
            NodeKind::CancelEnd => self.cancel_transaction(track, at, moves),
            // No flow enters these (`process!` rejects one): a compensation handler's
            // boundary and a compensation event sub-process's start.
            NodeKind::CompensationBoundary { .. }
            | NodeKind::CancelBoundary { .. }
            | NodeKind::CompensationStart => self.split(track, at, moves),
            // No flow enters an event sub-process (`process!` rejects one).
            NodeKind::EventSubProcess { .. } => {
                self.internal(at, "a token entered an event sub-process along a flow")
            }
        }
    }

    /// Choose the outgoing flows of `node` by its kind and put the token on them: the
    /// track continues on the first, a new track is forked for each other.
    pub(crate) fn split(&mut self, track: TrackId, node: NodeIdx, moves: &mut Vec<Move>) {
        // An instance of a loop or multi-instance activity reports to its activation
        // instead of leaving the activity.
        if let Some((scope, index)) = self.instance_at(track, node) {
            return self.instance_done(track, scope, index, moves);
        }
        if !self.loops.is_empty() {
            self.take_item_output(track, node);
        }
        // One flow out, taken whatever the data (no condition, or the default):
        // what most nodes have, chosen with no buffer.
        let n = &self.process.nodes[node];
        if let [only] = n.outgoing[..] {
            if n.default == Some(only) || self.process.flows[only].condition.is_none() {
                if !records_route(&n.kind) {
                    // What `route` does with one flow out of a node that is no
                    // gateway: the track goes on along it.
                    moves.push((track, only));
                    return;
                }
                return self.route(track, node, &[only], moves);
            }
        }
        let mut taken = scratch::take(&scratch::TAKEN);
        // One allocation for a wide split, not a doubling per flow.
        taken.reserve(n.outgoing.len());
        if let Err(error) = self.select_outgoing(node, &mut taken) {
            scratch::give_back(&scratch::TAKEN, taken);
            if matches!(error, InstanceError::NoFlowTaken { .. })
                && self.route_failed(track, node, error.to_string())
            {
                return;
            }
            return self.fail(error);
        }
        self.route(track, node, &taken, moves);
        scratch::give_back(&scratch::TAKEN, taken);
    }

    /// Put the token on `taken`, the flows `node`'s split chose: the track continues
    /// on the first, a new track is forked for each other.
    fn route(&mut self, track: TrackId, node: NodeIdx, taken: &[FlowIdx], moves: &mut Vec<Move>) {
        moves.reserve(taken.len());
        let n = &self.process.nodes[node];
        if records_route(&n.kind) {
            let process = self.process;
            // All its flows or one: the process's own list, allocated nothing for.
            let to = match taken {
                _ if taken == n.outgoing => Cow::Borrowed(n.targets),
                &[one] => Cow::Borrowed(std::slice::from_ref(
                    &process.nodes[process.flows[one].target].id,
                )),
                _ => Cow::Owned(
                    taken
                        .iter()
                        .map(|f| process.nodes[process.flows[*f].target].id)
                        .collect(),
                ),
            };
            self.record(track, node, Happening::Routed { to });
        }
        match taken.split_first() {
            Some((&first, rest)) => {
                // `moves` is a stack: push the forks last-first, then the continuing
                // token, so tokens move in flow order.
                self.tracks.reserve(rest.len());
                let first_fork = self.tracks.next_id().0;
                let scope = match rest {
                    [] => ROOT,
                    _ => self.scope_of(track),
                };
                for _ in rest {
                    let fork = self.new_track(node, scope);
                    #[cfg(feature = "durable")]
                    self.inherit_unstored(track, fork);
                    self.record(fork, node, Happening::Spawned { from: track });
                }
                // Forks got consecutive ids, in flow order.
                for (i, &flow) in rest.iter().enumerate().rev() {
                    moves.push((TrackId(first_fork + i as u32), flow));
                }
                moves.push((track, first));
            }
            None => {
                // No outgoing flow at all: `process!` lets only end events be here.
                self.record(track, node, Happening::Ended);
                self.remove_track(track);
            }
        }
    }

    /// The flows a node's split takes (ARCHITECTURE.md, "Joins"): exclusive takes the
    /// first true condition in declared order, every other kind takes every true or
    /// unconditional flow; with none, the default; with no default, an error.
    pub(crate) fn select_outgoing(
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

    pub(crate) fn condition_holds(&self, flow: FlowIdx) -> Result<bool, InstanceError> {
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
    pub(crate) fn evaluate(&self, condition: Condition<D>) -> Result<bool, String> {
        std::panic::catch_unwind(AssertUnwindSafe(|| condition(&self.data))).map_err(panic_message)
    }
}
