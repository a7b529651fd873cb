//! The synchronising joins (ADR-005 §2.3, §2.4, §2.10, §2.11): their loop-owned
//! arrival state, the pure rules (OR-join, complex activation), and the loop's side —
//! arrivals, the re-check after every step, firing.
//!
//! A join counts tokens per incoming flow, so a parallel join on a loop fires once
//! per wave, and each firing consumes exactly one token per flow it synchronises (the
//! earliest on each). Only the loop touches this state, so an arrival is atomic
//! without a lock.

use std::collections::VecDeque;

use super::event_loop::{Instance, Move, TrackState};
use super::history::{Happening, TrackId};
use super::scope::ScopeId;
use super::InstanceError;
use crate::data::ProcessData;
use crate::graph::{Activation, NodeIdx, NodeKind};

/// A token waiting at a join.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Arrival {
    pub track: TrackId,
}

/// One join's arrivals. Two allocations whatever the join's width: the waiting
/// tokens in arrival order (each with its incoming flow's slot, in the node's incoming
/// order), and a count per slot.
#[derive(Debug)]
pub(crate) struct JoinState {
    pub node: NodeIdx,
    /// The scope instance the join is in: a sub-process entered twice has a join
    /// state per entry.
    pub scope: ScopeId,
    waiting: Vec<(usize, Arrival)>,
    counts: Vec<u32>,
    /// Slots whose count is zero.
    unmarked: usize,
    /// An arrival at this join happened since its last check; an arrival-triggered
    /// firing continues on the last arrival, a death-triggered one on the first.
    pub arrived_since_check: bool,
    /// A complex join that fired: single-pass, it consumes every later arrival.
    pub spent: bool,
}

impl JoinState {
    pub fn new(node: NodeIdx, scope: ScopeId, incoming: usize) -> Self {
        Self {
            node,
            scope,
            // A round brings a token per incoming flow: room for one round at once.
            waiting: Vec::with_capacity(incoming),
            counts: vec![0; incoming],
            unmarked: incoming,
            arrived_since_check: false,
            spent: false,
        }
    }

    pub fn arrive(&mut self, slot: usize, arrival: Arrival) {
        if self.counts[slot] == 0 {
            self.unmarked -= 1;
        }
        self.counts[slot] += 1;
        self.waiting.push((slot, arrival));
        self.arrived_since_check = true;
    }

    /// Bit `i` set when incoming flow `i` holds at least one token. For the
    /// reachability joins only, which `process!` limits to 64 incoming flows.
    pub fn marked(&self) -> u64 {
        debug_assert!(self.counts.len() <= 64);
        self.counts
            .iter()
            .enumerate()
            .filter(|(_, c)| **c > 0)
            .fold(0, |m, (i, _)| m | 1 << i)
    }

    /// Whether every incoming flow holds a token.
    pub fn complete(&self) -> bool {
        self.unmarked == 0
    }

    pub fn is_empty(&self) -> bool {
        self.waiting.is_empty()
    }

    /// Take every waiting token (the tail a spent complex join consumes).
    pub fn drain(&mut self) -> Vec<Arrival> {
        self.counts.iter_mut().for_each(|c| *c = 0);
        self.unmarked = self.counts.len();
        self.waiting.drain(..).map(|(_, a)| a).collect()
    }

    /// Take the earliest token of every marked flow. The first returned is the
    /// survivor: the latest of them when `last_in`, else the earliest; the rest are
    /// merged.
    pub fn fire(&mut self, last_in: bool) -> Vec<Arrival> {
        let mut taken: Vec<Arrival> = Vec::new();
        let mut took = vec![false; self.counts.len()];
        self.waiting.retain(|&(slot, arrival)| {
            if took[slot] {
                return true;
            }
            took[slot] = true;
            taken.push(arrival);
            false
        });
        for (slot, took) in took.into_iter().enumerate() {
            if took {
                self.counts[slot] -= 1;
                if self.counts[slot] == 0 {
                    self.unmarked += 1;
                }
            }
        }
        // `taken` is in arrival order: the survivor is its last or its first.
        if last_in {
            let last = taken.len() - 1;
            taken.swap(0, last);
        }
        self.arrived_since_check = false;
        taken
    }
}

/// What a reachability join (inclusive, complex) should do after a re-check.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Verdict {
    Wait,
    Fire,
    /// Complex: every activation triple is provably dead.
    Abort,
    /// Complex: no token can arrive any more and no triple's condition holds.
    Exhausted,
}

/// Mask of a join's `incoming` flows.
pub(crate) fn all_flows(incoming: usize) -> u64 {
    if incoming >= 64 {
        u64::MAX
    } else {
        (1u64 << incoming) - 1
    }
}

/// The unmarked incoming flows a live token can still reach, from the precomputed
/// reach masks: one AND per token, over one snapshot of the loop's positions.
pub(crate) fn still_reachable(
    unmarked: u64,
    reach: &[u64],
    positions: impl Iterator<Item = NodeIdx>,
) -> u64 {
    let mut reachable = 0;
    for p in positions {
        reachable |= reach[p] & unmarked;
        if reachable == unmarked {
            break;
        }
    }
    reachable
}

/// The OR-join rule (ADR-005 §2.10): fire when a flow is marked and no live token
/// can reach an unmarked one (which includes the fast path, every flow marked).
pub(crate) fn or_join_verdict(marked: u64, reachable: u64) -> Verdict {
    if marked != 0 && reachable == 0 {
        Verdict::Fire
    } else {
        Verdict::Wait
    }
}

/// The complex-join rule (ADR-005 §2.11) over `(condition, count, required)` triples:
/// fire when one holds; abort when every one is dead (its count or a required flow
/// can no longer be reached); exhausted when nothing can arrive and none fired.
/// `holds` evaluates a triple's condition (absent: true).
pub(crate) fn complex_verdict<D, E>(
    marked: u64,
    reachable: u64,
    activation: &[Activation<D>],
    mut holds: impl FnMut(&Activation<D>) -> Result<bool, E>,
) -> Result<Verdict, E> {
    let (arrived, can_come) = (marked.count_ones(), reachable.count_ones());
    let mut all_dead = true;
    for triple in activation {
        let dead =
            arrived + can_come < triple.count || triple.required & !(marked | reachable) != 0;
        if dead {
            continue;
        }
        all_dead = false;
        if arrived >= triple.count && triple.required & !marked == 0 && holds(triple)? {
            return Ok(Verdict::Fire);
        }
    }
    Ok(if all_dead {
        Verdict::Abort
    } else if reachable == 0 {
        Verdict::Exhausted
    } else {
        Verdict::Wait
    })
}

/// The loop's side of the joins: arrivals, the re-check after every step, firing.
impl<D: ProcessData> Instance<D> {
    /// A token arrives at a synchronising join on incoming flow number `slot`.
    pub(super) fn arrive(
        &mut self,
        track: TrackId,
        node: NodeIdx,
        slot: usize,
        moves: &mut VecDeque<Move>,
    ) {
        let incoming = self.process.nodes[node].incoming.len();
        let scope = self.slot_mut(track).map_or(super::scope::ROOT, |s| s.scope);
        let i = match self
            .joins
            .iter()
            .position(|j| j.node == node && j.scope == scope)
        {
            Some(i) => i,
            None => {
                self.joins.push(JoinState::new(node, scope, incoming));
                self.joins.len() - 1
            }
        };
        let join = &mut self.joins[i];
        if join.spent {
            // A complex join that fired consumes later arrivals (ADR-005 §2.11).
            self.record(track, node, Happening::Consumed);
            self.remove_track(track);
            return;
        }
        join.arrive(slot, Arrival { track });
        let complete = join.complete();
        // Decide on the spot what one arrival can settle for sure: a parallel join
        // that is complete, an inclusive join with every flow marked, a complex join
        // whose activation holds — the completing arrival survives. What depends on
        // where the other tokens are (the OR-join's slow path, a complex abort) waits
        // for the end of the loop step (`settle`), once tokens in transit are placed.
        let ready = match self.process.nodes[node].kind {
            NodeKind::Parallel | NodeKind::Inclusive { .. } => Ok(complete),
            NodeKind::Complex { activation, .. } => {
                let marked = self.joins[i].marked();
                self.activation_holds(node, marked, activation)
            }
            _ => Ok(false),
        };
        match ready {
            Ok(true) => self.fire_join(i, true, moves),
            Ok(false) => {
                self.slot_mut(track).expect("arriving track is live").state = TrackState::Waiting;
                self.record(track, node, Happening::Waiting);
            }
            Err(error) => self.fail(error),
        }
    }

    /// Whether some triple of a complex join's activation holds with `marked` flows
    /// arrived: its condition is true, `count` arrived, every required flow arrived.
    pub(super) fn activation_holds(
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
    pub(super) fn fire_join(&mut self, i: usize, last_in: bool, moves: &mut VecDeque<Move>) {
        let node = self.joins[i].node;
        let taken = self.joins[i].fire(last_in);
        if matches!(self.process.nodes[node].kind, NodeKind::Complex { .. }) {
            self.joins[i].spent = true;
            for tail in self.joins[i].drain() {
                self.record(tail.track, node, Happening::Consumed);
                self.remove_track(tail.track);
            }
        }
        self.fire(node, taken, moves);
    }

    /// Re-check every inclusive and complex join holding tokens against one snapshot
    /// of the positions; fire, abort or fail each as its rule says. Runs after every
    /// loop step, so every arrival and every token death anywhere triggers a re-check.
    /// Returns whether any fired.
    pub(super) fn check_reachability_joins(&mut self, moves: &mut VecDeque<Move>) -> bool {
        let mut fired = false;
        for i in 0..self.joins.len() {
            // A firing whose split failed ended the instance: nothing more fires.
            if self.outcome.is_some() {
                return false;
            }
            let join = &self.joins[i];
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
                .filter(|t| !nested || self.within(t.scope, scope))
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
            self.joins[i].arrived_since_check = false;
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
    pub(super) fn fire(&mut self, node: NodeIdx, taken: Vec<Arrival>, moves: &mut VecDeque<Move>) {
        let mut taken = taken.into_iter();
        let survivor = taken
            .next()
            .expect("a join fires with at least one token")
            .track;
        for merged in taken {
            self.record(merged.track, node, Happening::Merged);
            self.remove_track(merged.track);
        }
        self.slot_mut(survivor).expect("survivor is live").state = TrackState::Moving;
        self.record(survivor, node, Happening::Fired);
        self.split(survivor, node, moves);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fire_takes_one_per_marked_flow_and_picks_the_survivor() {
        let mut j = JoinState::new(7, crate::instance::scope::ROOT, 3);
        j.arrive(0, Arrival { track: TrackId(1) });
        j.arrive(0, Arrival { track: TrackId(2) });
        j.arrive(2, Arrival { track: TrackId(3) });
        assert_eq!(j.marked(), 0b101);
        assert!(!j.complete());
        let last = j.fire(true);
        assert_eq!(last.iter().map(|a| a.track.0).collect::<Vec<_>>(), [3, 1]);
        assert_eq!(
            j.marked(),
            0b001,
            "the second token on flow 0 waits for the next wave"
        );
        let mut j = JoinState::new(7, crate::instance::scope::ROOT, 2);
        j.arrive(1, Arrival { track: TrackId(5) });
        j.arrive(0, Arrival { track: TrackId(4) });
        assert_eq!(j.fire(false)[0].track, TrackId(5));
        assert!(j.is_empty());
    }

    fn or_join(marked: u64, positions: &[NodeIdx]) -> Verdict {
        // nodes 0..3; node 1 reaches flow 1, node 2 reaches nothing.
        let reach = [0b11, 0b10, 0b00];
        let unmarked = all_flows(2) & !marked;
        or_join_verdict(
            marked,
            still_reachable(unmarked, &reach, positions.iter().copied()),
        )
    }

    #[test]
    fn or_join_waits_while_an_unmarked_flow_is_reachable() {
        assert_eq!(or_join(0, &[]), Verdict::Wait, "nothing arrived");
        assert_eq!(or_join(0b11, &[1]), Verdict::Fire, "fast path");
        assert_eq!(or_join(0b01, &[1]), Verdict::Wait);
        assert_eq!(or_join(0b01, &[2]), Verdict::Fire);
        assert_eq!(or_join(0b01, &[]), Verdict::Fire);
    }

    fn triple(count: u32, required: u64, condition: Option<fn(&()) -> bool>) -> Activation<()> {
        Activation {
            condition,
            count,
            required,
        }
    }

    fn complex(marked: u64, reachable: u64, activation: &[Activation<()>]) -> Verdict {
        complex_verdict(marked, reachable, activation, |t| {
            Ok::<_, ()>(t.condition.is_none_or(|c| c(&())))
        })
        .unwrap()
    }

    #[test]
    fn complex_join_fires_aborts_and_exhausts() {
        let two_of_three = [triple(2, 0, None)];
        assert_eq!(complex(0b001, 0b110, &two_of_three), Verdict::Wait);
        assert_eq!(complex(0b101, 0b010, &two_of_three), Verdict::Fire);
        assert_eq!(
            complex(0b001, 0b000, &two_of_three),
            Verdict::Abort,
            "count out of reach"
        );
        let cfo_required = [triple(2, 0b100, None)];
        assert_eq!(
            complex(0b011, 0b000, &cfo_required),
            Verdict::Abort,
            "required flow dead"
        );
        assert_eq!(complex(0b011, 0b100, &cfo_required), Verdict::Wait);
        let guarded = [triple(1, 0, Some(|_| false))];
        assert_eq!(complex(0b001, 0b010, &guarded), Verdict::Wait);
        assert_eq!(complex(0b011, 0b000, &guarded), Verdict::Exhausted);
        let either = [triple(3, 0, None), triple(1, 0b010, None)];
        assert_eq!(
            complex(0b010, 0b101, &either),
            Verdict::Fire,
            "the second triple holds"
        );
    }
}
