//! Errors and escalations travel outward, scope by scope: at each level an event
//! sub-process of that scope with a matching start, then a matching boundary event on
//! the sub-process, catches it. An error no level catches fails the instance; an
//! escalation no level catches is no error. ARCHITECTURE.md, "Events".

use std::sync::Arc;

use super::core::Instance;
use super::outcome::InstanceError;
use super::state::ids::TrackId;
use super::state::ids::{ScopeId, ROOT};
use crate::data::ProcessData;
use crate::graph::{NodeIdx, NodeKind, Payload, Trigger};

impl<D: ProcessData> Instance<D> {
    /// The boundary event of `activity` that catches this error or escalation code:
    /// one naming the code, else one catching every code.
    fn catching_boundary(&self, activity: NodeIdx, thrown: Thrown, code: &str) -> Option<NodeIdx> {
        let boundaries = self.process.nodes[activity].boundaries.iter().copied();
        self.best_catch(boundaries, thrown, code)
    }

    /// The event sub-process of `scope` whose start catches this error or escalation
    /// code: one naming the code, else one catching every code.
    fn catching_event_sub(&self, scope: ScopeId, thrown: Thrown, code: &str) -> Option<NodeIdx> {
        let node = self.scopes.get(scope)?.node;
        let starts =
            self.event_subs_of(node)
                .iter()
                .filter_map(|&esp| match self.process.nodes[esp].kind {
                    NodeKind::EventSubProcess { start, .. } => Some(start),
                    _ => None,
                });
        self.best_catch(starts, thrown, code)
    }

    /// Of the catching events `candidates`, the first that names `code` for what was
    /// `thrown`, else the first that catches every code.
    fn best_catch(
        &self,
        candidates: impl Iterator<Item = NodeIdx> + Clone,
        thrown: Thrown,
        code: &str,
    ) -> Option<NodeIdx> {
        let caught = |node: NodeIdx| match (self.process.nodes[node].kind.trigger(), thrown) {
            (Some(Trigger::Error { code, .. }), Thrown::Error)
            | (Some(Trigger::Escalation { code, .. }), Thrown::Escalation) => Some(*code),
            _ => None,
        };
        let mut all = candidates.clone();
        all.find(|&c| caught(c) == Some(Some(code)))
            .or_else(|| candidates.into_iter().find(|&c| caught(c) == Some(None)))
    }

    /// The nearest catcher of what `track` threw at `origin` : a
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
        // An instance of a loop or multi-instance activity raises as from the
        // activity: its boundaries are found on the activation scope's owner below.
        if !self.is_instance(track) {
            if let Some(boundary) = self.catching_boundary(origin, thrown, code) {
                return Some(Catcher::Boundary {
                    owner: track,
                    node: origin,
                    boundary,
                });
            }
        }
        let scope = self.tracks.get(track).map_or(ROOT, |t| t.scope);
        let mut at = Some(scope);
        let mut from_event_sub = false;
        while let Some(s) = at {
            let slot = self.scopes.get(s)?;
            // An activation scope has no event sub-processes of its own (a
            // multi-instance sub-process's are each instance's).
            if !from_event_sub && !self.is_activation(s) {
                if let Some(start) = self.catching_event_sub(s, thrown, code) {
                    return Some(Catcher::EventSub { scope: s, start });
                }
            }
            // A sub-process instance's boundaries are its activation's (above it).
            if let (Some(node), Some(owner)) =
                (slot.node, slot.owner.filter(|&o| !self.is_instance(o)))
            {
                if let Some(boundary) = self.catching_boundary(node, thrown, code) {
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
    pub(crate) fn throw_error(
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
        // Error catchers always interrupt (`process!` rejects a non-interrupting one).
        self.caught(catcher, payload);
    }

    /// An escalation raised by `track` at `origin` goes to its nearest catcher like
    /// an error, but that catcher may be non-interrupting: then it runs beside the
    /// raiser, which goes on. Uncaught, an escalation is no error.
    pub(crate) fn throw_escalation(&mut self, track: TrackId, origin: NodeIdx, code: String) {
        let Some(catcher) = self.catcher(track, origin, Thrown::Escalation, &code) else {
            // Uncaught in a call activity's child: raised at the parent's call
            // activity, while the child goes on.
            // A resumed child not adopted yet keeps it for its parent's call.
            match self.parent.as_deref_mut() {
                Some(super::call_link::ParentLink {
                    unsent: Some(unsent),
                    ..
                }) => unsent.push(code),
                Some(link) => (link.notify)(super::call_link::ChildNote::Escalated(code)),
                None => {}
            }
            return;
        };
        let payload: Payload = Arc::new(crate::events::Escalation { code });
        self.caught(catcher, payload);
    }

    /// Hand what was thrown to its catcher. An interrupting one takes its scope over
    /// (an event sub-process) or stops the activity and goes on from the boundary; a
    /// non-interrupting one runs beside the raiser, which goes on.
    fn caught(&mut self, catcher: Catcher, payload: Payload) {
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

/// What travels outward through the scopes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Thrown {
    Error,
    Escalation,
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
