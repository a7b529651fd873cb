//! Loop-owned arrival state of the synchronising joins (ADR-005 §2.3, §2.4, §2.10).
//!
//! A join counts tokens per incoming flow — a queue of waiting tracks per flow — so a
//! parallel join on a loop fires once per wave, and each firing consumes exactly one
//! token per flow it synchronises. Only the loop touches this state, so an arrival is
//! atomic without a lock.

use std::collections::VecDeque;

use crate::graph::{Activation, NodeIdx};
use crate::instance::history::TrackId;

/// A token waiting at a join: its track and the loop's arrival sequence number.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Arrival {
    pub track: TrackId,
    pub seq: u64,
}

/// One join's arrivals, one queue per incoming flow (in the node's incoming order).
#[derive(Debug)]
pub(crate) struct JoinState {
    pub node: NodeIdx,
    queues: Vec<VecDeque<Arrival>>,
    /// An arrival at this join happened since its last check; an arrival-triggered
    /// firing continues on the last arrival, a death-triggered one on the first.
    pub arrived_since_check: bool,
    /// A complex join that fired: single-pass, it consumes every later arrival.
    pub spent: bool,
}

impl JoinState {
    pub fn new(node: NodeIdx, incoming: usize) -> Self {
        Self {
            node,
            queues: vec![VecDeque::new(); incoming],
            arrived_since_check: false,
            spent: false,
        }
    }

    pub fn arrive(&mut self, slot: usize, arrival: Arrival) {
        self.queues[slot].push_back(arrival);
        self.arrived_since_check = true;
    }

    /// Bit `i` set when incoming flow `i` holds at least one token.
    pub fn marked(&self) -> u64 {
        self.queues
            .iter()
            .enumerate()
            .filter(|(_, q)| !q.is_empty())
            .fold(0, |m, (i, _)| m | 1 << i)
    }

    /// Whether every incoming flow holds a token.
    pub fn complete(&self) -> bool {
        self.queues.iter().all(|q| !q.is_empty())
    }

    pub fn is_empty(&self) -> bool {
        self.queues.iter().all(VecDeque::is_empty)
    }

    /// Take every waiting token (the tail a spent complex join consumes).
    pub fn drain(&mut self) -> Vec<Arrival> {
        self.queues.iter_mut().flat_map(|q| q.drain(..)).collect()
    }

    /// Take one token from every marked flow. The first returned is the survivor:
    /// the latest arrival when `last_in`, else the earliest; the rest are merged.
    pub fn fire(&mut self, last_in: bool) -> Vec<Arrival> {
        let mut taken: Vec<Arrival> = self
            .queues
            .iter_mut()
            .filter_map(VecDeque::pop_front)
            .collect();
        let survivor = if last_in {
            taken.iter().enumerate().max_by_key(|(_, a)| a.seq)
        } else {
            taken.iter().enumerate().min_by_key(|(_, a)| a.seq)
        }
        .map(|(i, _)| i)
        .unwrap_or(0);
        taken.swap(0, survivor);
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fire_takes_one_per_marked_flow_and_picks_the_survivor() {
        let mut j = JoinState::new(7, 3);
        j.arrive(
            0,
            Arrival {
                track: TrackId(1),
                seq: 1,
            },
        );
        j.arrive(
            0,
            Arrival {
                track: TrackId(2),
                seq: 2,
            },
        );
        j.arrive(
            2,
            Arrival {
                track: TrackId(3),
                seq: 3,
            },
        );
        assert_eq!(j.marked(), 0b101);
        assert!(!j.complete());
        let last = j.fire(true);
        assert_eq!(last.iter().map(|a| a.track.0).collect::<Vec<_>>(), [3, 1]);
        assert_eq!(
            j.marked(),
            0b001,
            "the second token on flow 0 waits for the next wave"
        );
        let mut j = JoinState::new(7, 2);
        j.arrive(
            1,
            Arrival {
                track: TrackId(5),
                seq: 9,
            },
        );
        j.arrive(
            0,
            Arrival {
                track: TrackId(4),
                seq: 10,
            },
        );
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
