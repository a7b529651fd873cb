//! Scopes at run time: the process, every running embedded sub-process and every
//! running event sub-process is a scope instance. ARCHITECTURE.md, "Scopes".
//!
//! A token entering a sub-process waits at its node (its track is `InScope`, holding
//! the sub-process's boundary events like any working activity) while a new scope runs
//! from the inner start. A scope is done when nothing runs in it any more — no track
//! and no event sub-process instance — and the waiting token then goes on. So a
//! terminate end inside ends only its scope, and the parent continues.
//!
//! The event sub-processes of a scope are armed when it opens (one armed entry holds
//! their subscriptions) and disarmed when it closes. An interrupting one cancels the
//! rest of its scope first; a non-interrupting one runs beside it, as often as its
//! trigger comes.

use std::collections::{BinaryHeap, HashSet};
use tracing::debug;

use super::core::{Instance, Move};
use super::history::Happening;
use super::park::Apply;
use super::state::armed::{EventSource, Holder};
use super::state::ids::TrackId;
use super::state::ids::{ScopeId, ROOT};
use super::state::tracks::TrackState;
use crate::data::ProcessData;
use crate::graph::{NodeIdx, NodeKind, Payload, Trigger};

impl<D: ProcessData> Instance<D> {
    /// The event sub-processes written directly in the scope that runs `node`.
    pub(crate) fn event_subs_of(&self, node: Option<NodeIdx>) -> &'static [NodeIdx] {
        match node.map(|n| &self.process.nodes[n].kind) {
            None => self.process.event_subs,
            Some(
                NodeKind::SubProcess { event_subs, .. }
                | NodeKind::EventSubProcess { event_subs, .. },
            ) => event_subs,
            Some(_) => &[],
        }
    }

    /// Whether a message, signal or timer is still armed (for an event
    /// sub-process, or a boundary event on a sub-process whose token waits
    /// `InScope`): when nothing works, such an event can still start something — an
    /// interrupting one cancels stuck tokens, a non-interrupting one's run can raise an
    /// error another scope's boundary catches, or commit data a condition waits for —
    /// so the instance waits rather than fail with `Deadlock`. An armed condition
    /// alone does not count: with nothing working, nothing can commit.
    pub(crate) fn event_armed(&self) -> bool {
        self.armed.iter().any(|p| {
            matches!(p.holder, Holder::Scope(_) | Holder::Guard(_))
                && p.waits
                    .iter()
                    .any(|w| matches!(w.source, EventSource::Hub(_) | EventSource::Timer(_)))
        })
    }

    /// Open a scope and arm the triggers of its event sub-processes (errors and
    /// escalations need none: they are matched as they travel outward).
    pub(crate) fn open_scope(
        &mut self,
        node: Option<NodeIdx>,
        parent: Option<ScopeId>,
        owner: Option<TrackId>,
    ) -> ScopeId {
        let id = self.scopes.open(node, parent, owner);
        let event_subs = self.event_subs_of(node);
        // Most scopes have none: every instance's process scope opens here.
        if event_subs.is_empty() {
            return id;
        }
        let starts: Vec<NodeIdx> = event_subs
            .iter()
            .filter_map(|&esp| match self.process.nodes[esp].kind {
                NodeKind::EventSubProcess { start, .. } => Some(start),
                _ => None,
            })
            // Compensation starts are not armed: a compensation throw runs them.
            .filter(|&start| match &self.process.nodes[start].kind {
                NodeKind::EventSubStart { trigger, .. } => {
                    !matches!(trigger, Trigger::Error { .. } | Trigger::Escalation { .. })
                }
                _ => false,
            })
            .collect();
        if !starts.is_empty() {
            self.hold(Holder::Scope(id), node.unwrap_or(starts[0]), &starts);
        }
        id
    }

    /// Drop the event sub-process triggers of `scope`.
    pub(crate) fn disarm_scope(&mut self, scope: ScopeId) {
        if let Some(entry) = self.armed.take(Holder::Scope(scope)) {
            self.disarm(&entry);
        }
    }

    /// Remove a scope that has ended, with its triggers and its joins' state.
    pub(crate) fn close_scope(&mut self, scope: ScopeId) {
        // A loop or multi-instance activation goes with its scope.
        self.loops.close(scope);
        self.disarm_scope(scope);
        self.scopes.close(scope);
        self.joins.drop_scope(scope);
        if !self.compensation.is_empty() {
            self.compensation.drop_scope(scope);
        }
    }

    /// A token enters the sub-process `at`: it waits there, its boundary events
    /// armed, while a new scope runs from the inner `start`.
    pub(crate) fn enter_sub_process(
        &mut self,
        track: TrackId,
        at: NodeIdx,
        start: NodeIdx,
        moves: &mut Vec<Move>,
    ) {
        self.record(track, at, Happening::TaskStarted);
        let parent = self.scope_of(track);
        if !self.tracks.set_state(track, TrackState::InScope) {
            return;
        }
        self.guard(track, at);
        let scope = self.open_scope(Some(at), Some(parent), Some(track));
        // Conditions true on arrival fire first: an interrupting boundary takes the
        // token away, an interrupting event sub-process takes the scope over.
        self.fire_due();
        if self.outcome.is_some() || self.scopes.is_interrupted(scope) {
            return;
        }
        let inner = self.new_track(start, scope);
        #[cfg(feature = "durable")]
        self.inherit_unstored(track, inner);
        self.record(inner, start, Happening::Spawned { from: track });
        self.split(inner, start, moves);
    }

    /// After a step: every scope with nothing left running in it completes — an
    /// embedded sub-process's waiting token goes on along its outgoing flows, a
    /// finished event sub-process simply closes. Returns whether any completed.
    ///
    /// Only scopes that can have become empty are looked at — opened, or left by
    /// their last track or last child since the last look (`take_emptied`) — newest
    /// first: a scope's children are newer than it, so they close first, and a
    /// parent a closing child empties is looked at in its turn.
    pub(crate) fn complete_scopes(&mut self, moves: &mut Vec<Move>) -> bool {
        let mut completed = false;
        let mut candidates: BinaryHeap<ScopeId> = BinaryHeap::new();
        loop {
            candidates.extend(self.scopes.take_emptied());
            candidates.extend(self.tracks.take_emptied());
            let Some(id) = candidates.pop() else {
                break;
            };
            // A scope looked at twice comes out twice in a row.
            while candidates.peek() == Some(&id) {
                candidates.pop();
            }
            let Some(slot) = self.scopes.get(id).filter(|_| id != ROOT) else {
                continue;
            };
            let (node, owner, parent) = (slot.node, slot.owner, slot.parent);
            if self.tracks.any_in(id) || self.scopes.has_children(id) {
                continue;
            }
            if let (Some(node), Some(owner)) = (node, owner) {
                // A sub-process (or an activation) whose interrupting boundary the
                // hub served first stays open, empty: the delivery on its way
                // interrupts it (`completion_wins`).
                if !self.process.nodes[node].boundaries.is_empty()
                    && self.tracks.get(owner).is_some()
                    && !self.completion_wins(owner)
                {
                    debug!(
                        node = self.process.nodes[node].id,
                        "a served boundary wins the sub-process"
                    );
                    continue;
                }
            }
            // What completed inside can be compensated after the scope is gone.
            let inner = self.compensation.take_log(id);
            let activation = self.is_activation(id);
            self.close_scope(id);
            completed = true;
            let owner_live = owner.is_some_and(|o| self.tracks.get(o).is_some());
            if activation && owner_live {
                self.activation_completed(parent, inner);
            } else if owner.is_none() || owner_live {
                self.scope_completed(id, node, owner, parent, inner, moves);
            }
            if let (Some(node), Some(owner)) = (node, owner) {
                if !owner_live {
                    continue;
                }
                self.unguard_completed(owner);
                self.record(
                    owner,
                    node,
                    Happening::Completed {
                        changed: std::borrow::Cow::Borrowed(&[]),
                    },
                );
                self.tracks.set_state(owner, TrackState::Moving);
                self.split(owner, node, moves);
            }
        }
        completed
    }

    /// Cancel everything running in `scope`: its tracks, the scopes nested in it, its
    /// event sub-process triggers. The scope itself stays open (it completes once
    /// empty, or an interrupting event sub-process runs in it now).
    pub(crate) fn cancel_inside(&mut self, scope: ScopeId) {
        self.cancel_inside_but(scope, None);
    }

    /// [`cancel_inside`](Self::cancel_inside), sparing the track `keep` (a cancel end
    /// event's, which compensates the transaction it cancels).
    pub(crate) fn cancel_inside_but(&mut self, scope: ScopeId, keep: Option<TrackId>) {
        let nested = self.scopes.nested().map(|s| s.id);
        let doomed: Vec<ScopeId> = std::iter::once(ROOT)
            .chain(nested)
            .filter(|&s| self.scopes.within(s, scope))
            .collect();
        let doomed_set: HashSet<ScopeId> = doomed.iter().copied().collect();
        let tracks: Vec<(TrackId, NodeIdx)> = self
            .tracks
            .iter()
            .filter(|t| doomed_set.contains(&t.scope) && Some(t.id) != keep)
            .map(|t| (t.id, t.at))
            .collect();
        for (track, at) in tracks {
            self.record(track, at, Happening::Cancelled);
            self.withdraw(track);
            self.remove_track(track);
        }
        for &s in doomed.iter().filter(|&&s| s != scope) {
            self.close_scope(s);
        }
        self.disarm_scope(scope);
        self.joins.drop_scope(scope);
    }

    /// An interrupting boundary on the sub-process `owner` waits at fired: the
    /// scope it waits for is cancelled and closed.
    pub(crate) fn cancel_owned_scope(&mut self, owner: TrackId) {
        if let Some(scope) = self.scopes.owned_by(owner) {
            self.cancel_inside(scope);
            self.close_scope(scope);
        }
    }

    /// A terminate end event in a nested scope: that scope ends, the rest goes on.
    pub(crate) fn terminate_scope(&mut self, track: TrackId, scope: ScopeId) {
        self.remove_track(track);
        self.cancel_inside(scope);
    }

    /// The trigger of an event sub-process start fired (its scope's entry `p`, wait
    /// `w`): an interrupting one cancels the rest of the scope, then runs; a
    /// non-interrupting one stays armed and runs beside it.
    pub(crate) fn event_sub_fires(&mut self, p: usize, w: usize, payload: Option<Payload>) {
        let Holder::Scope(scope) = self.armed.entry(p).holder else {
            return;
        };
        let start = self.armed.entry(p).waits[w].arm;
        let NodeKind::EventSubStart { interrupting, .. } = self.process.nodes[start].kind else {
            return;
        };
        let apply = self.apply_for(start, payload);
        if interrupting {
            self.take_over(scope);
        } else {
            self.rearm(p, w, start);
            if self.outcome.is_some() {
                return;
            }
        }
        self.run_event_sub(scope, start, apply);
    }

    /// An interrupting event sub-process takes `scope` over: everything else in it
    /// is cancelled and it starts nothing more.
    pub(crate) fn take_over(&mut self, scope: ScopeId) {
        self.cancel_inside(scope);
        self.scopes.interrupt(scope);
    }

    /// Run the event sub-process whose start is `start` in `scope`: a scope of its
    /// own, and a token at the start that takes the trigger's payload.
    pub(crate) fn run_event_sub(
        &mut self,
        scope: ScopeId,
        start: NodeIdx,
        apply: Option<Apply<D>>,
    ) {
        let Some(esp) = self.process.nodes[start].scope else {
            return;
        };
        let inner = self.open_scope(Some(esp), Some(scope), None);
        // Conditions true when armed fire now: a nested interrupting one takes the
        // new scope over before its start runs.
        self.fire_due();
        if self.outcome.is_some() || self.scopes.get(inner).is_none_or(|s| s.interrupted) {
            return;
        }
        let track = self.new_track(start, inner);
        self.record(track, start, Happening::Started);
        self.tracks.set_state(track, TrackState::Working);
        self.deliver(track, start, start, apply);
    }
}
