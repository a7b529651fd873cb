//! Scopes (ADR-006 §2.2, §2.6, §2.7; ADR-023): the process, every running embedded
//! sub-process and every running event sub-process is a scope instance, owned by the
//! loop like everything else.
//!
//! A token entering a sub-process waits at its node (its track is `InScope`, holding
//! the sub-process's boundary events like any working activity) while a new scope runs
//! from the inner start. A scope is done when nothing runs in it any more — no track
//! and no event sub-process instance — and the waiting token then goes on. So a
//! terminate end inside ends only its scope, and the parent continues.
//!
//! The event sub-processes of a scope are armed when it opens (one parked entry holds
//! their subscriptions) and disarmed when it closes. An interrupting one cancels the
//! rest of its scope first; a non-interrupting one runs beside it, as often as its
//! trigger comes.
//!
//! Errors and escalations travel outward scope by scope: at each level an event
//! sub-process of that scope with a matching start, then a matching boundary event on
//! the sub-process, catches it. An error no level catches fails the instance; an
//! escalation no level catches is no error.

use std::collections::VecDeque;
use std::sync::Arc;

use super::event_loop::{Instance, Move, TrackState};
use super::history::{Happening, TrackId};
use super::track::Apply;
use super::waits::{Holder, On};
use super::InstanceError;
use crate::data::ProcessData;
use crate::graph::{NodeIdx, NodeKind, Payload, Trigger};

/// Identifies a scope instance within its instance; the process's own is [`ROOT`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) struct ScopeId(pub u32);

/// The process's scope: open from the instance's start to its end.
pub(crate) const ROOT: ScopeId = ScopeId(0);

/// One running scope.
pub(super) struct ScopeSlot {
    pub id: ScopeId,
    /// The sub-process or event sub-process it runs; `None` for the process.
    pub node: Option<NodeIdx>,
    pub parent: Option<ScopeId>,
    /// An embedded sub-process's token, waiting at its node in the parent scope.
    pub owner: Option<TrackId>,
    /// An interrupting event sub-process took over: the scope starts nothing else.
    pub interrupted: bool,
}

/// The process's own scope, which is not stored: an instance with no sub-process
/// keeps an empty scope list (no allocation).
const ROOT_SLOT: ScopeSlot = ScopeSlot {
    id: ROOT,
    node: None,
    parent: None,
    owner: None,
    interrupted: false,
};

impl ScopeSlot {
    /// A running event sub-process (it has a node but no waiting token).
    fn is_event_sub(&self) -> bool {
        self.node.is_some() && self.owner.is_none()
    }
}

/// What travels outward through the scopes.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Thrown {
    Error,
    Escalation,
}

impl<D: ProcessData> Instance<D> {
    // ----- opening and closing ------------------------------------------------

    fn scope(&self, id: ScopeId) -> Option<&ScopeSlot> {
        if id == ROOT {
            return Some(&ROOT_SLOT);
        }
        self.scopes.iter().find(|s| s.id == id)
    }

    /// Whether scope `inner` is `outer` or lies (transitively) inside it.
    pub(super) fn within(&self, inner: ScopeId, outer: ScopeId) -> bool {
        let mut at = Some(inner);
        while let Some(s) = at {
            if s == outer {
                return true;
            }
            at = self.scope(s).and_then(|slot| slot.parent);
        }
        false
    }

    /// The event sub-processes written directly in the scope that runs `node`.
    fn event_subs_of(&self, node: Option<NodeIdx>) -> &'static [NodeIdx] {
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
    pub(super) fn event_armed(&self) -> bool {
        self.parked.iter().any(|p| {
            matches!(p.holder, Holder::Scope(_) | Holder::Guard(_))
                && p.waits
                    .iter()
                    .any(|w| matches!(w.on, On::Hub(_) | On::Timer(_)))
        })
    }

    /// Open a scope and arm the triggers of its event sub-processes (errors and
    /// escalations need none: they are matched as they travel outward).
    pub(super) fn open_scope(
        &mut self,
        node: Option<NodeIdx>,
        parent: Option<ScopeId>,
        owner: Option<TrackId>,
    ) -> ScopeId {
        let id = if parent.is_none() {
            ROOT
        } else {
            self.next_scope += 1;
            ScopeId(self.next_scope)
        };
        if id != ROOT {
            // Few scopes are open at a time: grow one slot at a time.
            self.scopes.reserve_exact(1);
            self.scopes.push(ScopeSlot {
                id,
                node,
                parent,
                owner,
                interrupted: false,
            });
        }
        let starts: Vec<NodeIdx> = self
            .event_subs_of(node)
            .iter()
            .filter_map(|&esp| match self.process.nodes[esp].kind {
                NodeKind::EventSubProcess { start, .. } => Some(start),
                _ => None,
            })
            .filter(|&start| {
                !matches!(
                    self.process.nodes[start].kind,
                    NodeKind::EventSubStart {
                        trigger: Trigger::Error { .. } | Trigger::Escalation { .. },
                        ..
                    }
                )
            })
            .collect();
        if !starts.is_empty() {
            self.hold(Holder::Scope(id), node.unwrap_or(starts[0]), &starts);
        }
        id
    }

    /// Drop the event sub-process triggers of `scope`.
    fn disarm_scope(&mut self, scope: ScopeId) {
        if let Some(p) = self
            .parked
            .iter()
            .position(|p| p.holder == Holder::Scope(scope))
        {
            let entry = self.parked.remove(p);
            self.disarm(&entry);
        }
    }

    /// Remove a scope that has ended, with its triggers and its joins' state.
    fn close_scope(&mut self, scope: ScopeId) {
        self.disarm_scope(scope);
        self.scopes.retain(|s| s.id != scope);
        self.joins.retain(|j| j.scope != scope);
    }

    /// A token enters the sub-process `at`: it waits there, its boundary events
    /// armed, while a new scope runs from the inner `start`.
    pub(super) fn enter_sub_process(
        &mut self,
        track: TrackId,
        at: NodeIdx,
        start: NodeIdx,
        moves: &mut VecDeque<Move>,
    ) {
        self.record(track, at, Happening::TaskStarted);
        let Some(slot) = self.slot_mut(track) else {
            return;
        };
        slot.state = TrackState::InScope;
        let parent = slot.scope;
        self.guard(track, at);
        let scope = self.open_scope(Some(at), Some(parent), Some(track));
        // Conditions true on arrival fire first: an interrupting boundary takes the
        // token away, an interrupting event sub-process takes the scope over.
        self.fire_due();
        if self.outcome.is_some() || self.scope(scope).is_none_or(|s| s.interrupted) {
            return;
        }
        let inner = self.new_track(start, scope);
        self.record(inner, start, Happening::Spawned { from: track });
        self.split(inner, start, moves);
    }

    /// After a step: every scope with nothing left running in it completes — an
    /// embedded sub-process's waiting token goes on along its outgoing flows, a
    /// finished event sub-process simply closes. Returns whether any completed.
    pub(super) fn complete_scopes(&mut self, moves: &mut VecDeque<Move>) -> bool {
        let mut completed = false;
        // Newest first: a scope's children are newer than it, so they close first.
        let mut i = self.scopes.len();
        while i > 0 {
            i -= 1;
            let Some(slot) = self.scopes.get(i) else {
                continue;
            };
            let (id, node, owner) = (slot.id, slot.node, slot.owner);
            let busy = self.tracks.iter().any(|t| t.scope == id)
                || self.scopes.iter().any(|s| s.parent == Some(id));
            if busy {
                continue;
            }
            self.close_scope(id);
            completed = true;
            if let (Some(node), Some(owner)) = (node, owner) {
                if self.slot_mut(owner).is_none() {
                    continue;
                }
                self.unguard(owner);
                self.record(
                    owner,
                    node,
                    Happening::Completed {
                        changed: Vec::new(),
                    },
                );
                self.slot_mut(owner).expect("checked").state = TrackState::Moving;
                self.split(owner, node, moves);
            }
            i = i.min(self.scopes.len());
        }
        completed
    }

    // ----- cancelling ---------------------------------------------------------

    /// Cancel everything running in `scope`: its tracks, the scopes nested in it, its
    /// event sub-process triggers. The scope itself stays open (it completes once
    /// empty, or an interrupting event sub-process runs in it now).
    pub(super) fn cancel_inside(&mut self, scope: ScopeId) {
        let nested = self.scopes.iter().map(|s| s.id);
        let doomed: Vec<ScopeId> = std::iter::once(ROOT)
            .chain(nested)
            .filter(|&s| self.within(s, scope))
            .collect();
        let tracks: Vec<(TrackId, NodeIdx)> = self
            .tracks
            .iter()
            .filter(|t| doomed.contains(&t.scope))
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
        self.joins.retain(|j| j.scope != scope);
    }

    /// An interrupting boundary on the sub-process `owner` waits at fired: the
    /// scope it waits for is cancelled and closed.
    pub(super) fn cancel_owned_scope(&mut self, owner: TrackId) {
        let owned = self
            .scopes
            .iter()
            .find(|s| s.owner == Some(owner))
            .map(|s| s.id);
        if let Some(scope) = owned {
            self.cancel_inside(scope);
            self.close_scope(scope);
        }
    }

    /// A terminate end event in a nested scope: that scope ends, the rest goes on.
    pub(super) fn terminate_scope(&mut self, track: TrackId, scope: ScopeId) {
        self.remove_track(track);
        self.cancel_inside(scope);
    }

    // ----- event sub-processes ------------------------------------------------

    /// The trigger of an event sub-process start fired (its scope's entry `p`, wait
    /// `w`): an interrupting one cancels the rest of the scope, then runs; a
    /// non-interrupting one stays armed and runs beside it.
    pub(super) fn event_sub_fires(&mut self, p: usize, w: usize, payload: Option<Payload>) {
        let Holder::Scope(scope) = self.parked[p].holder else {
            return;
        };
        let start = self.parked[p].waits[w].arm;
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
    fn take_over(&mut self, scope: ScopeId) {
        self.cancel_inside(scope);
        if scope == ROOT {
            self.root_interrupted = true;
        } else if let Some(slot) = self.scopes.iter_mut().find(|s| s.id == scope) {
            slot.interrupted = true;
        }
    }

    /// Run the event sub-process whose start is `start` in `scope`: a scope of its
    /// own, and a token at the start that takes the trigger's payload.
    fn run_event_sub(&mut self, scope: ScopeId, start: NodeIdx, apply: Option<Apply<D>>) {
        let Some(esp) = self.process.nodes[start].scope else {
            return;
        };
        let inner = self.open_scope(Some(esp), Some(scope), None);
        // Conditions true when armed fire now: a nested interrupting one takes the
        // new scope over before its start runs.
        self.fire_due();
        if self.outcome.is_some() || self.scope(inner).is_none_or(|s| s.interrupted) {
            return;
        }
        let track = self.new_track(start, inner);
        self.record(track, start, Happening::Started);
        if let Some(slot) = self.slot_mut(track) {
            slot.state = TrackState::Working;
        }
        self.running += 1;
        self.deliver(track, start, start, apply);
    }

    /// The event sub-process of `scope` whose start catches this error or escalation
    /// code: one naming the code, else one catching every code.
    fn catching_event_sub(&self, scope: ScopeId, thrown: Thrown, code: &str) -> Option<NodeIdx> {
        let node = self.scope(scope)?.node;
        let code_of = |start: NodeIdx| match &self.process.nodes[start].kind {
            NodeKind::EventSubStart {
                trigger: Trigger::Error { code, .. },
                ..
            } if thrown == Thrown::Error => Some(*code),
            NodeKind::EventSubStart {
                trigger: Trigger::Escalation { code, .. },
                ..
            } if thrown == Thrown::Escalation => Some(*code),
            _ => None,
        };
        let starts =
            self.event_subs_of(node)
                .iter()
                .filter_map(|&esp| match self.process.nodes[esp].kind {
                    NodeKind::EventSubProcess { start, .. } => Some(start),
                    _ => None,
                });
        let starts: Vec<NodeIdx> = starts.collect();
        let exact = starts
            .iter()
            .copied()
            .find(|&s| code_of(s) == Some(Some(code)));
        exact.or_else(|| starts.iter().copied().find(|&s| code_of(s) == Some(None)))
    }

    // ----- errors and escalations travel outward ------------------------------

    /// The nearest catcher of what `track` threw at `origin` (ADR-006 §2.6): a
    /// boundary event on `origin` itself (when it is an activity), then, walking
    /// outward from the track's scope, at each scope an event sub-process whose start
    /// catches the code, then a boundary event on the sub-process that does. What
    /// comes out of an event sub-process is not caught again by its siblings.
    fn catcher(
        &self,
        track: TrackId,
        origin: NodeIdx,
        thrown: Thrown,
        code: &str,
    ) -> Option<Catcher> {
        if let Some(boundary) = self.catching_boundary(origin, thrown == Thrown::Error, code) {
            return Some(Catcher::Boundary {
                owner: track,
                node: origin,
                boundary,
            });
        }
        let scope = self
            .tracks
            .iter()
            .find(|t| t.id == track)
            .map_or(ROOT, |t| t.scope);
        let mut at = Some(scope);
        let mut from_event_sub = false;
        while let Some(s) = at {
            let slot = self.scope(s)?;
            if !from_event_sub {
                if let Some(start) = self.catching_event_sub(s, thrown, code) {
                    return Some(Catcher::EventSub { scope: s, start });
                }
            }
            if let (Some(node), Some(owner)) = (slot.node, slot.owner) {
                if let Some(boundary) = self.catching_boundary(node, thrown == Thrown::Error, code)
                {
                    return Some(Catcher::Boundary {
                        owner,
                        node,
                        boundary,
                    });
                }
            }
            from_event_sub = slot.is_event_sub();
            at = slot.parent;
        }
        None
    }

    /// A BPMN error thrown by `track` at `origin` (an error end event, a task's
    /// handler, a user task through its handle) goes to its nearest catcher, which
    /// always interrupts: what the error leaves is cancelled. Uncaught, the instance
    /// fails with it.
    pub(super) fn throw_error(
        &mut self,
        track: TrackId,
        origin: NodeIdx,
        code: String,
        message: String,
    ) {
        let Some(catcher) = self.catcher(track, origin, Thrown::Error, &code) else {
            return self.fail(InstanceError::UncaughtError {
                node: self.process.nodes[origin].id,
                code,
                message,
            });
        };
        let payload: Payload = Arc::new(crate::events::BpmnError { code, message });
        match catcher {
            Catcher::EventSub { scope, start } => {
                let apply = self.apply_for(start, Some(payload));
                self.take_over(scope);
                self.run_event_sub(scope, start, apply);
            }
            Catcher::Boundary {
                owner,
                node,
                boundary,
            } => {
                let apply = self.apply_for(boundary, Some(payload));
                self.interrupt(owner, node, boundary, apply);
            }
        }
    }

    /// An escalation raised by `track` at `origin` goes to its nearest catcher like
    /// an error, but that catcher may be non-interrupting: then it runs beside the
    /// raiser, which goes on. Uncaught, an escalation is no error.
    pub(super) fn throw_escalation(&mut self, track: TrackId, origin: NodeIdx, code: String) {
        let Some(catcher) = self.catcher(track, origin, Thrown::Escalation, &code) else {
            return;
        };
        let payload: Payload = Arc::new(crate::events::Escalation { code });
        match catcher {
            Catcher::EventSub { scope, start } => {
                let apply = self.apply_for(start, Some(payload));
                if matches!(
                    self.process.nodes[start].kind,
                    NodeKind::EventSubStart {
                        interrupting: true,
                        ..
                    }
                ) {
                    self.take_over(scope);
                }
                self.run_event_sub(scope, start, apply);
            }
            Catcher::Boundary {
                owner,
                node,
                boundary,
            } => {
                let apply = self.apply_for(boundary, Some(payload));
                match self.process.nodes[boundary].kind {
                    NodeKind::Boundary {
                        interrupting: true, ..
                    } => self.interrupt(owner, node, boundary, apply),
                    _ => self.fork_to(owner, boundary, apply),
                }
            }
        }
    }
}

/// Where a thrown error or escalation is caught.
enum Catcher {
    /// By the event sub-process whose start is `start`, in `scope`.
    EventSub { scope: ScopeId, start: NodeIdx },
    /// By `boundary` on the sub-process `node`, whose token `owner` waits there.
    Boundary {
        owner: TrackId,
        node: NodeIdx,
        boundary: NodeIdx,
    },
}
