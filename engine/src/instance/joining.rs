//! The loop's side of the synchronising joins: arrivals, the re-check after every
//! step, firing. The arrival state and the pure rules are in
//! [`state::joins`](super::state::joins). ARCHITECTURE.md, "Joins".
//!
//! A join counts tokens per incoming flow, so a parallel join on a loop fires once
//! per wave, and each firing consumes exactly one token per flow it synchronises (the
//! earliest on each).

use super::core::{Instance, Move};
use super::history::Happening;
use super::outcome::InstanceError;
use super::routing::scratch;
use super::state::ids::{ScopeId, TrackId};
use super::state::join_rules::{
    all_flows, complex_verdict, or_join_verdict, still_reachable, Verdict,
};
use super::state::joins::Arrival;
use super::state::tracks::TrackState;
use crate::data::ProcessData;
use crate::graph::{NodeIdx, NodeKind};

impl<D: ProcessData> Instance<D> {
    /// A token arrives at a synchronising join on incoming flow number `slot`, from
    /// a track in `scope` (what `move_to` said).
    pub(crate) fn arrive(
        &mut self,
        track: TrackId,
        node: NodeIdx,
        slot: usize,
        scope: ScopeId,
        moves: &mut Vec<Move>,
    ) {
        let incoming = self.process.nodes[node].incoming.len();
        let i = self.joins.entry(node, scope, incoming);
        if self.joins.get(i).spent {
            // A complex join that fired consumes later arrivals .
            self.record(track, node, Happening::Consumed);
            self.remove_track(track);
            return;
        }
        self.joins.arrive(i, slot, Arrival { track });
        let complete = self.joins.get(i).complete();
        // Decide on the spot what one arrival can settle for sure: a parallel join
        // that is complete, an inclusive join with every flow marked, a complex join
        // whose activation holds — the completing arrival survives. What depends on
        // where the other tokens are (the OR-join's slow path, a complex abort) waits
        // for the end of the loop step (`settle`), once tokens in transit are placed.
        let ready = match self.process.nodes[node].kind {
            NodeKind::Parallel | NodeKind::Inclusive { .. } => Ok(complete),
            NodeKind::Complex { activation, .. } => {
                let marked = self.joins.get(i).marked();
                self.activation_holds(node, marked, activation)
            }
            _ => Ok(false),
        };
        match ready {
            Ok(true) => self.fire_join(i, true, moves),
            Ok(false) => {
                self.tracks.set_state(track, TrackState::AtJoin);
                self.record(track, node, Happening::Waiting);
            }
            Err(error) => self.fail(error),
        }
    }

    /// Whether some triple of a complex join's activation holds with `marked` flows
    /// arrived: its condition is true, `count` arrived, every required flow arrived.
    pub(crate) fn activation_holds(
        &self,
        node: NodeIdx,
        marked: u64,
        activation: &[crate::graph::Activation<D>],
    ) -> Result<bool, InstanceError> {
        for triple in activation {
            if marked.count_ones() >= triple.count && triple.required & !marked == 0 {
                let holds = match triple.condition {
                    None => true,
                    Some(condition) => self.evaluate(condition).map_err(|message| {
                        InstanceError::ActivationConditionPanicked {
                            node: self.process.nodes[node].id,
                            message,
                        }
                    })?,
                };
                if holds {
                    return Ok(true);
                }
            }
        }
        Ok(false)
    }

    /// Fire join number `i`: one token per marked flow, the survivor carries on (the
    /// latest arrival when `last_in`, else the earliest); a complex join is spent and
    /// consumes the tokens left waiting.
    pub(crate) fn fire_join(&mut self, i: usize, last_in: bool, moves: &mut Vec<Move>) {
        let node = self.joins.get(i).node;
        // The thread's buffer: a firing allocates nothing for the tokens it takes.
        let mut taken = scratch::take(&scratch::FIRED);
        self.joins.fire(i, last_in, &mut taken);
        if matches!(self.process.nodes[node].kind, NodeKind::Complex { .. }) {
            self.joins.get_mut(i).spent = true;
            for tail in self.joins.drain(i) {
                self.record(tail.track, node, Happening::Consumed);
                self.remove_track(tail.track);
            }
        }
        self.fire(node, &taken, moves);
        scratch::give_back(&scratch::FIRED, taken);
    }

    /// Re-check every inclusive and complex join holding tokens against one snapshot
    /// of the positions; fire, abort or fail each as its rule says. Runs after every
    /// loop step, so every arrival and every token death anywhere triggers a re-check.
    /// Returns whether any fired.
    pub(crate) fn check_reachability_joins(&mut self, moves: &mut Vec<Move>) -> bool {
        let mut fired = false;
        for i in 0..self.joins.len() {
            // A firing whose split failed ended the instance: nothing more fires.
            if self.outcome.is_some() {
                return false;
            }
            let join = self.joins.get(i);
            let node = &self.process.nodes[join.node];
            let (reach, activation) = match node.kind {
                NodeKind::Inclusive { reach } => (reach, None),
                NodeKind::Complex { reach, activation } => (reach, Some(activation)),
                _ => continue,
            };
            let marked = join.marked();
            if marked == 0 {
                continue;
            }
            let unmarked = all_flows(node.incoming.len()) & !marked;
            // Only tokens of the join's own scope instance (or nested in it) can
            // still reach it: one outside would enter a new instance of the scope.
            let scope = join.scope;
            let nested = !self.scopes.is_empty();
            let positions = self
                .tracks
                .iter()
                .filter(|t| !nested || self.scopes.within(t.scope, scope))
                .map(|t| t.at);
            let reachable = still_reachable(unmarked, reach, positions);
            let verdict = match activation {
                None => Ok(or_join_verdict(marked, reachable)),
                Some(activation) => complex_verdict(marked, reachable, activation, |triple| {
                    match triple.condition {
                        None => Ok(true),
                        Some(condition) => self.evaluate(condition).map_err(|message| {
                            InstanceError::ActivationConditionPanicked {
                                node: node.id,
                                message,
                            }
                        }),
                    }
                }),
            };
            let last_in = join.arrived_since_check;
            self.joins.get_mut(i).arrived_since_check = false;
            match verdict {
                Ok(Verdict::Wait) => {}
                Ok(Verdict::Fire) => {
                    self.fire_join(i, last_in, moves);
                    fired = true;
                }
                Ok(Verdict::Abort) => {
                    self.fail(InstanceError::ActivationUnsatisfiable { node: node.id });
                    return false;
                }
                Ok(Verdict::Exhausted) => {
                    self.fail(InstanceError::ArrivalsExhausted { node: node.id });
                    return false;
                }
                Err(error) => {
                    self.fail(error);
                    return false;
                }
            }
        }
        fired
    }

    /// A join fires: the first of `taken` carries on, the rest are merged.
    pub(crate) fn fire(&mut self, node: NodeIdx, taken: &[Arrival], moves: &mut Vec<Move>) {
        let Some((&Arrival { track: survivor }, merged)) = taken.split_first() else {
            return self.internal(node, "a join fired with no token");
        };
        for merged in merged {
            self.record(merged.track, node, Happening::Merged);
            self.remove_track(merged.track);
        }
        self.tracks.set_state(survivor, TrackState::Moving);
        self.record(survivor, node, Happening::Fired);
        self.split(survivor, node, moves);
    }
}
