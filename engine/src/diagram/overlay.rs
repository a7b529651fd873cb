//! An instance on its process: what its history says about each node and flow.

use std::collections::BTreeMap;

use super::model::Model;
use crate::{Happening, History, TrackId};

/// What an instance did at one node.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct NodeState {
    /// How many times a token arrived.
    pub visits: usize,
    /// A token is there now: waiting for an event, at a join, in a running task or
    /// sub-process.
    pub waiting: usize,
    /// A task's handler failed here.
    pub failed: Option<String>,
    /// An incident is open here: its error (module `retry`).
    pub incident: Option<String>,
}

/// The states of every node and the flows taken, from a history.
#[derive(Clone, Debug, Default)]
pub(crate) struct Overlay {
    /// Indexed like the model's nodes.
    pub nodes: Vec<NodeState>,
    /// Indexed like the model's flows: how many tokens went along.
    pub flows: Vec<usize>,
}

impl Overlay {
    pub fn of(model: &Model, history: &History) -> Overlay {
        let index: BTreeMap<&str, usize> = model
            .nodes
            .iter()
            .enumerate()
            .map(|(i, n)| (n.id.as_str(), i))
            .collect();
        let flow_of: BTreeMap<(usize, usize), usize> = model
            .flows
            .iter()
            .enumerate()
            .map(|(f, flow)| ((flow.source, flow.target), f))
            .collect();
        let mut overlay = Overlay {
            nodes: vec![NodeState::default(); model.nodes.len()],
            flows: vec![0; model.flows.len()],
        };
        // Per track: the node it is at, and how its last step there left it.
        let mut at: BTreeMap<TrackId, (usize, bool)> = BTreeMap::new();
        for step in history.steps() {
            let Some(&n) = index.get(step.node) else {
                continue;
            };
            let waits = matches!(
                step.what,
                Happening::Parked
                    | Happening::Waiting
                    | Happening::TaskStarted
                    | Happening::AttemptFailed { .. }
                    | Happening::Incident { .. }
            );
            if let Happening::Spawned { .. } = step.what {
                // A fork's new track begins at the fork, without arriving there —
                // but a boundary event's track is the only one ever there: its
                // beginning is the boundary's visit.
                if matches!(model.nodes[n].elem, super::model::Elem::Boundary { .. }) {
                    overlay.nodes[n].visits += 1;
                }
                at.insert(step.track, (n, false));
                continue;
            }
            match at.get(&step.track).copied() {
                Some((prev, _)) if prev == n => {}
                prev => {
                    overlay.nodes[n].visits += 1;
                    if let Some(&f) = prev.and_then(|(p, _)| flow_of.get(&(p, n))) {
                        overlay.flows[f] += 1;
                    }
                }
            }
            match &step.what {
                Happening::Failed { message } => overlay.nodes[n].failed = Some(message.clone()),
                Happening::Incident { error, .. } => {
                    overlay.nodes[n].incident = Some(error.clone())
                }
                Happening::Retried { .. } => overlay.nodes[n].incident = None,
                _ => {}
            }
            at.insert(step.track, (n, waits));
        }
        for &(n, waits) in at.values() {
            if waits {
                overlay.nodes[n].waiting += 1;
            }
        }
        overlay
    }
}
