//! Call activities in the parent's loop: start the child (its depth checked), hand
//! the run that awaits it to the call's track, and raise at the call activity what
//! the child forwards while it runs. The child's end comes back as the run's report,
//! committed like a task's copy (`tasks.rs`). `crate::call` is the other side.

use std::collections::HashSet;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;

use super::call_link::{ChildEntry, ChildNote, ParentLink};
use super::core::{Call, Instance, Move};
use super::history::Happening;
use super::input::{Input, Report};
use super::outcome::{panic_message, InstanceError, InstanceId};
use super::state::ids::TrackId;
use super::state::tracks::TrackState;
use crate::call::Caller;
use crate::data::ProcessData;
use crate::graph::{CallActivity, NodeIdx};

impl<D: ProcessData> Instance<D> {
    /// The token arrives at the call activity `node`: it works like a task (its
    /// boundaries armed) while its child runs.
    pub(crate) fn run_call(
        &mut self,
        track: TrackId,
        node: NodeIdx,
        call: &'static CallActivity<D>,
        _moves: &mut Vec<Move>,
    ) {
        self.record(track, node, Happening::TaskStarted);
        if !self.tracks.set_state(track, TrackState::Working) {
            return self.internal(node, "a call started on a track that is gone");
        }
        self.guard(track, node);
        // As for a task: a conditional boundary true at the start fires first.
        self.fire_due();
        if self.outcome.is_some() || self.tracks.get(track).is_none_or(|s| s.at != node) {
            return;
        }
        self.start_call(track, node, call, None);
    }

    /// Start (or, after a restart, wait again on) the child of the call at `node`.
    pub(crate) fn start_call(
        &mut self,
        track: TrackId,
        node: NodeIdx,
        call: &'static CallActivity<D>,
        resume: Option<InstanceId>,
    ) {
        let id = self.process.nodes[node].id;
        let Some(engine) = self.engine.clone() else {
            return self.internal(node, "a call activity ran in an instance with no engine");
        };
        let depth = self.parent.as_ref().map_or(0, |link| link.depth) + 1;
        let limit = engine.max_call_depth();
        if depth > limit {
            return self.fail(InstanceError::CallDepthExceeded {
                node: id,
                callee: call.callee,
                depth,
                limit,
            });
        }
        let intake = self.intake_tx.made().clone();
        let notify = Arc::new(move |note: ChildNote| {
            let report = Report::Child { track, node, note };
            let _ = intake.send(Input::Track(Box::new(report)));
        });
        let caller = Caller {
            stop: engine.stop(),
            engine,
            link: ParentLink {
                parent: self.id,
                depth,
                notify,
                unsent: None,
            },
            #[cfg(feature = "durable")]
            resume,
        };
        #[cfg(not(feature = "durable"))]
        let _ = resume;
        let base = self.data.snapshot();
        // An instance of a multi-instance call: its child gets the instance's item.
        let instance = call
            .start_item
            .and_then(|start| Some((start, self.call_instance(track, node)?)));
        // The input mapping is the user's code: a panic in it fails the call.
        let started = std::panic::catch_unwind(AssertUnwindSafe(|| match instance {
            Some((start, (items, index, output))) => start(caller, &base, (&items, index), output),
            None => (call.start)(caller, &base),
        }));
        let started = match started {
            Ok(started) => started,
            Err(panic) => return self.task_panicked(track, node, panic_message(panic)),
        };
        match started.child {
            Ok(Some(child)) => {
                self.record(track, node, Happening::Called { child });
                let tracks = &self.tracks;
                let works = |c: &Call| tracks.is_at(c.track, c.node, TrackState::Working);
                self.calls.push_pruned(
                    Call {
                        track,
                        node,
                        child,
                        handle: started.handle,
                    },
                    works,
                );
            }
            // The engine is stopping: the run waits for the stop.
            Ok(None) => {}
            Err(reason) => {
                // A failed attempt to start the child: retried, or held at an
                // incident, by the call's policy or the engine's.
                let message = format!("the child did not start: {reason}");
                if self.attempt_failed(track, node, &message, false) {
                    return;
                }
                return self.fail(InstanceError::CallNotStarted {
                    node: id,
                    callee: call.callee,
                    reason,
                });
            }
        }
        self.hand_to_track(track, node, base, started.run);
    }

    /// The child of the call at `node` told it something (a report about a call
    /// that ended is ignored): an escalation it did not catch is raised at the call
    /// activity; a child started again after a restart replaces the recorded one.
    pub(crate) fn child_told(&mut self, track: TrackId, node: NodeIdx, note: ChildNote) {
        if !self.working_at(track, node) {
            return;
        }
        match note {
            ChildNote::Escalated(code) => self.step(|this, _| {
                this.record(track, node, Happening::Escalated { code: code.clone() });
                this.throw_escalation(track, node, code);
            }),
            #[cfg(feature = "durable")]
            ChildNote::Restarted(child) => {
                self.record(track, node, Happening::Called { child });
                if let Some(call) = self.calls.iter_mut().rev().find(|c| c.track == track) {
                    call.child = child;
                }
            }
        }
    }

    /// The working calls, in the order they started: of each track's listed calls
    /// the last (a track that comes back to the same call activity lists a new
    /// child), if its track still works at it.
    pub(crate) fn live_calls(&self) -> Vec<&Call> {
        let mut seen = HashSet::new();
        let mut live: Vec<&Call> = self
            .calls
            .iter()
            .rev()
            .filter(|c| seen.insert(c.track) && self.working_at(c.track, c.node))
            .collect();
        live.reverse();
        live
    }

    /// The children of the working call activities, in the order they started.
    pub(crate) fn children(&self) -> Vec<ChildEntry> {
        self.live_calls()
            .into_iter()
            .map(|c| {
                let callee = match &self.process.nodes[c.node].kind {
                    crate::graph::NodeKind::Call(call) => call.callee,
                    _ => "",
                };
                (c.child, callee, c.handle.clone())
            })
            .collect()
    }
}
