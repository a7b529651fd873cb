//! Multi-instance activities and standard loops at run time. ARCHITECTURE.md,
//! "Loops and multi-instance".
//!
//! A token reaching a marked activity waits there (`InScope`, holding the
//! activity's boundary events, as at a sub-process) while an activation scope runs
//! the activity's instances: each instance — each item of a multi-instance
//! activity, each run of a loop — is a track in that scope at the activity itself,
//! running the activity as an unmarked one would (a task's handler, a user or
//! receive task's wait, a sub-process's own scope). When an instance's activity
//! completes, where an unmarked one would take its outgoing flows
//! ([`split`](Instance::split)), the instance ends and reports here: its output is
//! kept until the instances before it are merged (index order), the completion
//! condition or the loop condition decides whether more run. When the activation
//! scope is empty, the waiting token goes on ([`complete_scopes`]).
//!
//! Because the instances live in a scope owned by the waiting token, what works for a
//! sub-process works here unchanged: an interrupting boundary cancels every
//! instance, a non-interrupting one leaves them, an error raised in an instance
//! travels outward from the activation scope to the activity's boundaries, and the
//! deadlock rule sees the instances as the activity's work.
//!
//! [`complete_scopes`]: Instance::complete_scopes

use tokio::sync::oneshot;

use super::core::{Instance, Move};
use super::history::Happening;
use super::state::ids::{ScopeId, TrackId};
use super::state::loops::{Activation, LoopRun, MultiRun, Running, Slot};
use super::state::tracks::TrackState;
use crate::data::ProcessData;
use crate::graph::{NodeIdx, TaskHandler, TaskRun};
use crate::loops::{ActivityLoop, Counts, Items, LoopKind, Output};

impl<D: ProcessData> Instance<D> {
    /// The activation and index of `track` when it is an instance of the marked
    /// activity `node` (so it runs the activity itself, and its completion reports
    /// to the activation).
    #[inline]
    pub(crate) fn instance_at(&self, track: TrackId, node: NodeIdx) -> Option<(ScopeId, u32)> {
        let (scope, index) = self.loops.instance(track)?;
        (self.loops.get(scope)?.node == node).then_some((scope, index))
    }

    /// Whether `track` is an instance of a marked activity: the activity's boundary
    /// events are its activation's, held by the waiting token.
    pub(crate) fn is_instance(&self, track: TrackId) -> bool {
        self.loops.instance(track).is_some()
    }

    /// Whether `scope` is an activation scope (it runs no event sub-processes of its
    /// own: those of a multi-instance sub-process belong to each instance's scope).
    pub(crate) fn is_activation(&self, scope: ScopeId) -> bool {
        self.loops.get(scope).is_some()
    }

    /// A token reaches the marked activity `at`: it waits there, the activity's
    /// boundary events armed, while an activation scope runs the instances. An empty
    /// collection (or a loop whose condition, tested before, is false) completes at
    /// once.
    pub(crate) fn enter_activation(
        &mut self,
        track: TrackId,
        at: NodeIdx,
        spec: &'static ActivityLoop<D>,
        moves: &mut Vec<Move>,
    ) {
        let id = self.process.nodes[at].id;
        self.record(track, at, Happening::TaskStarted);
        let state = match &spec.kind {
            LoopKind::Multi(multi) => {
                let items = match self.user_code(id, || (multi.items)(&self.data)) {
                    Ok(items) => items,
                    Err(error) => return self.fail(error),
                };
                let n = items.len();
                Activation::Multi(MultiRun {
                    source: self.data.snapshot(),
                    slots: (0..n).map(|_| Slot::Pending).collect(),
                    counts: Counts {
                        instances: u32::try_from(n).unwrap_or(u32::MAX),
                        ..Counts::default()
                    },
                    items,
                    merged: 0,
                    next: 0,
                    done: false,
                })
            }
            LoopKind::Standard(standard) => {
                if standard.test_before {
                    match self.user_code(id, || (standard.condition)(&self.data, 0)) {
                        Ok(true) => {}
                        Ok(false) => return self.skip_activation(track, at, moves),
                        Err(error) => return self.fail(error),
                    }
                }
                Activation::Loop(LoopRun {
                    runs: 0,
                    current: None,
                })
            }
        };
        if matches!(&state, Activation::Multi(m) if m.slots.is_empty()) {
            return self.skip_activation(track, at, moves);
        }
        let parent = self.scope_of(track);
        if !self.tracks.set_state(track, TrackState::InScope) {
            return;
        }
        self.guard(track, at);
        let scope = self.scopes.open(Some(at), Some(parent), Some(track));
        let first = match &state {
            Activation::Multi(m) if !matches!(&spec.kind, LoopKind::Multi(x) if x.sequential) => {
                m.slots.len()
            }
            _ => 1,
        };
        self.loops.open(
            scope,
            Running {
                node: at,
                owner: track,
                state,
            },
        );
        // A condition true on arrival fires first: an interrupting boundary takes the
        // token away before any instance starts.
        self.fire_due();
        if self.outcome.is_some() || self.scopes.get(scope).is_none() {
            return;
        }
        self.tracks.reserve(first);
        for _ in 0..first {
            self.spawn_instance(scope);
        }
    }

    /// The activity has nothing to run: it completes at once.
    fn skip_activation(&mut self, track: TrackId, at: NodeIdx, moves: &mut Vec<Move>) {
        self.record(
            track,
            at,
            Happening::Completed {
                changed: std::borrow::Cow::Borrowed(&[]),
            },
        );
        self.split(track, at, moves);
    }

    /// A new instance track of the activation in `scope`: the next index (or run),
    /// started once the step's moves are done.
    fn spawn_instance(&mut self, scope: ScopeId) {
        self.spawn_instance_at(scope, None);
    }

    /// [`spawn_instance`](Self::spawn_instance), or for a multi-instance activation
    /// the instance `again` once more (one a restart has to run again).
    pub(crate) fn spawn_instance_at(&mut self, scope: ScopeId, again: Option<usize>) {
        let Some(running) = self.loops.get(scope) else {
            return;
        };
        let (at, owner) = (running.node, running.owner);
        let track = self.new_track(at, scope);
        let Some(running) = self.loops.get_mut(scope) else {
            return;
        };
        let index = match &mut running.state {
            Activation::Multi(m) => {
                let index = match again {
                    Some(index) => index,
                    None => {
                        m.next += 1;
                        m.next - 1
                    }
                };
                m.counts.active += 1;
                if let Some(slot) = m.slots.get_mut(index) {
                    *slot = Slot::Running {
                        track,
                        output: None,
                        ready: None,
                    };
                }
                index as u32
            }
            Activation::Loop(l) => {
                l.current = Some(track);
                l.runs
            }
        };
        self.loops.bind(track, scope, index);
        self.record(track, at, Happening::Spawned { from: owner });
        self.record(track, at, Happening::Instance { index });
        self.loops.start_later(track);
    }

    /// Start the instance tracks spawned in this step: each runs the activity as an
    /// unmarked one would. Returns whether there were any.
    pub(crate) fn start_instances(&mut self, moves: &mut Vec<Move>) -> bool {
        let starting = self.loops.take_to_start();
        if starting.is_empty() {
            return false;
        }
        for track in starting {
            if self.outcome.is_some() {
                break;
            }
            // Cancelled before it started (the completion condition, a boundary).
            let Some(at) = self.tracks.get(track).map(|t| t.at) else {
                continue;
            };
            if self.instance_at(track, at).is_some() {
                self.reach(track, at, moves);
            }
        }
        true
    }

    /// Instance `index` of the activation in `scope` completed its activity on
    /// `track`: the track ends; a multi-instance activation merges what it can in
    /// index order and evaluates its completion condition, a loop its condition;
    /// then the next instance starts, if one is due.
    pub(crate) fn instance_done(
        &mut self,
        track: TrackId,
        scope: ScopeId,
        index: u32,
        _moves: &mut Vec<Move>,
    ) {
        self.loops.unbind(track);
        self.remove_track(track);
        let Some(running) = self.loops.get_mut(scope) else {
            return;
        };
        let at = running.node;
        let id = self.process.nodes[at].id;
        let Some(spec) = self.process.loop_of(at) else {
            return self.internal(at, "an activation of an activity with no marker");
        };
        match (&mut running.state, &spec.kind) {
            (Activation::Multi(m), LoopKind::Multi(multi)) => {
                let i = index as usize;
                let output = match m.slots.get_mut(i) {
                    Some(Slot::Running { output, ready, .. }) => ready
                        .take()
                        .or_else(|| output.take().and_then(|mut rx| rx.try_recv().ok())),
                    _ => None,
                };
                if let Some(slot) = m.slots.get_mut(i) {
                    *slot = Slot::Completed(output);
                }
                m.counts.active = m.counts.active.saturating_sub(1);
                m.counts.completed += 1;
                let counts = m.counts;
                let more = m.next < m.slots.len();
                self.merge_outputs(scope);
                if self.outcome.is_some() {
                    return;
                }
                let complete = match multi.completion {
                    Some(completion) => {
                        match self.user_code(id, || completion(&self.data, &counts)) {
                            Ok(complete) => complete,
                            Err(error) => return self.fail(error),
                        }
                    }
                    None => false,
                };
                if complete {
                    self.complete_early(scope);
                } else if multi.sequential && more {
                    self.spawn_instance(scope);
                }
            }
            (Activation::Loop(l), LoopKind::Standard(standard)) => {
                l.runs += 1;
                l.current = None;
                let runs = l.runs;
                if standard.max.is_some_and(|max| runs >= max) {
                    return;
                }
                match self.user_code(id, || (standard.condition)(&self.data, runs)) {
                    Ok(true) => self.spawn_instance(scope),
                    Ok(false) => {}
                    Err(error) => self.fail(error),
                }
            }
            _ => self.internal(at, "an activation of another kind than its marker"),
        }
    }

    /// The completion condition held: the instances still running are cancelled,
    /// those not started never start, and the outputs completed so far are merged.
    fn complete_early(&mut self, scope: ScopeId) {
        self.cancel_inside(scope);
        let Some(Running {
            state: Activation::Multi(m),
            ..
        }) = self.loops.get_mut(scope)
        else {
            return;
        };
        m.done = true;
        m.next = m.slots.len();
        let mut unbind = Vec::new();
        for slot in &mut m.slots {
            match slot {
                Slot::Running { track, .. } => {
                    unbind.push(*track);
                    *slot = Slot::Settled;
                    m.counts.terminated += 1;
                }
                Slot::Pending => {
                    *slot = Slot::Settled;
                    m.counts.terminated += 1;
                }
                Slot::Completed(_) | Slot::Settled => {}
            }
        }
        m.counts.active = 0;
        for track in unbind {
            self.loops.unbind(track);
        }
        self.merge_outputs(scope);
    }

    /// Merge the outputs of the completed instances that no unfinished instance
    /// precedes, in index order, as one commit.
    fn merge_outputs(&mut self, scope: ScopeId) {
        let Some(running) = self.loops.get_mut(scope) else {
            return;
        };
        let at = running.node;
        let Activation::Multi(m) = &mut running.state else {
            return;
        };
        let mut ready = Vec::new();
        while let Some(slot) = m.slots.get_mut(m.merged) {
            match slot {
                Slot::Completed(output) => {
                    if let Some(output) = output.take() {
                        ready.push((m.merged, output));
                    }
                    *slot = Slot::Settled;
                }
                Slot::Settled => {}
                Slot::Pending | Slot::Running { .. } => break,
            }
            m.merged += 1;
        }
        if ready.is_empty() {
            return;
        }
        let Some(merge) = self.process.loop_of(at).and_then(|l| l.multi()?.output) else {
            return;
        };
        let id = self.process.nodes[at].id;
        let base = self.data.snapshot();
        let mut data = self.data.copy_of(&base);
        for (index, output) in ready {
            match self.user_code(id, || merge(&mut data, index, output)) {
                Ok(Ok(())) => {}
                Ok(Err(_)) => return self.internal(at, "a multi-instance output of another type"),
                Err(error) => return self.fail(error),
            }
        }
        let changed = self.data.commit(base, data);
        if !changed.is_empty() {
            self.recheck_conditions(&changed);
        }
    }

    /// The run of a task's handler on `track`: with its item for an instance of a
    /// multi-instance task, or for a task marked `#[item]` inside a multi-instance
    /// sub-process; the plain handler otherwise. Also the index or loop run the
    /// handler can read (`thresh::task::current()`).
    pub(crate) fn task_run_for(
        &mut self,
        track: TrackId,
        node: NodeIdx,
        handler: TaskHandler<D>,
        copy: D,
    ) -> (TaskRun<D>, Option<u32>) {
        // No marked activity runs: the plain handler (the common case, one check) —
        // with the iteration it undoes if it works for a compensation.
        if self.loops.is_empty() {
            if self.compensation.is_running() {
                return self.undoing_run(track, handler, copy);
            }
            return (handler(copy), None);
        }
        if let Some((scope, index)) = self.instance_at(track, node) {
            let run = self.process.loop_of(node).and_then(|l| l.multi()?.run);
            if let (
                Some(run),
                Some(Running {
                    state: Activation::Multi(m),
                    ..
                }),
            ) = (run, self.loops.get_mut(scope))
            {
                let (tx, rx) = oneshot::channel();
                if let Some(slot) = m.slots.get_mut(index as usize) {
                    *slot = Slot::Running {
                        track,
                        output: Some(rx),
                        ready: None,
                    };
                }
                let items = m.items.clone();
                return (run(copy, &items, index as usize, tx), Some(index));
            }
            return (handler(copy), Some(index));
        }
        if let Some(item_task) = self.process.item_task(node) {
            if let Some((scope, index)) = self.enclosing_instance(track, Some(item_task.of)) {
                if let Some(Running {
                    state: Activation::Multi(m),
                    ..
                }) = self.loops.get_mut(scope)
                {
                    // `#[item(output)]`: its result is the instance's output (a later
                    // run in the same instance replaces it); else the channel goes unread.
                    let (tx, rx) = oneshot::channel();
                    if item_task.output {
                        if let Some(Slot::Running { output, .. }) = m.slots.get_mut(index as usize)
                        {
                            *output = Some(rx);
                        }
                    }
                    let items = m.items.clone();
                    return (
                        (item_task.run)(copy, &items, index as usize, tx),
                        Some(index),
                    );
                }
            }
        }
        (handler(copy), self.iteration_of(track))
    }

    /// The run of a task's handler on `track` while a compensation runs and no
    /// marked activity does: it reads as its iteration that of the completion it
    /// undoes, if it undoes one. Out of line, so the common start pays one check.
    #[inline(never)]
    fn undoing_run(
        &mut self,
        track: TrackId,
        handler: TaskHandler<D>,
        copy: D,
    ) -> (TaskRun<D>, Option<u32>) {
        (handler(copy), self.undone_iteration(track).flatten())
    }

    /// For an instance of the multi-instance call activity `node` on `track`: the
    /// activation's items, the instance's index, and where its output (the child's
    /// final data) goes when the marker merges outputs — its slot then waits on it,
    /// as a multi-instance task's does.
    pub(crate) fn call_instance(
        &mut self,
        track: TrackId,
        node: NodeIdx,
    ) -> Option<(Items, usize, Option<Output>)> {
        let (scope, index) = self.instance_at(track, node)?;
        let merges = self
            .process
            .loop_of(node)
            .and_then(|l| l.multi())
            .is_some_and(|m| m.output.is_some());
        let Some(Running {
            state: Activation::Multi(m),
            ..
        }) = self.loops.get_mut(scope)
        else {
            return None;
        };
        let output = merges.then(|| {
            let (tx, rx) = oneshot::channel();
            if let Some(slot) = m.slots.get_mut(index as usize) {
                *slot = Slot::Running {
                    track,
                    output: Some(rx),
                    ready: None,
                };
            }
            tx
        });
        Some((m.items.clone(), index as usize, output))
    }

    /// A task marked `#[item(output)]` completed on `track`: its output is taken
    /// into its instance's slot now, so a checkpoint knows the instance has one.
    pub(crate) fn take_item_output(&mut self, track: TrackId, node: NodeIdx) {
        let Some(item_task) = self.process.item_task(node).filter(|t| t.output) else {
            return;
        };
        let Some((scope, index)) = self.enclosing_instance(track, Some(item_task.of)) else {
            return;
        };
        if let Some(Running {
            state: Activation::Multi(m),
            ..
        }) = self.loops.get_mut(scope)
        {
            if let Some(Slot::Running { output, ready, .. }) = m.slots.get_mut(index as usize) {
                if let Some(value) = output.take().and_then(|mut rx| rx.try_recv().ok()) {
                    *ready = Some(value);
                }
            }
        }
    }

    /// Which instance `track` is, as its handler or open work sees it: its index in
    /// the nearest activation it runs in (`thresh::task::TaskContext::iteration`); for
    /// one that compensates a completion, that completion's.
    #[inline(never)]
    pub(crate) fn iteration_of(&self, track: TrackId) -> Option<u32> {
        match self.undone_iteration(track) {
            Some(undone) => undone,
            None => self.enclosing_instance(track, None).map(|(_, index)| index),
        }
    }

    /// The nearest activation `track` runs in (of the activity `of`, when given):
    /// from the track outward, each scope's waiting token.
    fn enclosing_instance(&self, track: TrackId, of: Option<NodeIdx>) -> Option<(ScopeId, u32)> {
        if self.loops.is_empty() {
            return None;
        }
        let matches = |(scope, index): (ScopeId, u32)| {
            let node = self.loops.get(scope).map(|r| r.node);
            (of.is_none() || node == of).then_some((scope, index))
        };
        if let Some(found) = self.loops.instance(track).and_then(matches) {
            return Some(found);
        }
        // Outward scope by scope: a sub-process instance's scope is owned by its
        // instance track; an event sub-process's has no owner, its parent goes on.
        let mut at = Some(self.scope_of(track));
        while let Some(scope) = at {
            let slot = self.scopes.get(scope)?;
            if let Some(found) = slot
                .owner
                .and_then(|o| self.loops.instance(o))
                .and_then(matches)
            {
                return Some(found);
            }
            at = slot.parent;
        }
        None
    }
}
