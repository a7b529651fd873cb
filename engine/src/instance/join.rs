//! Loop-owned arrival state of the synchronising joins (ADR-005 §2.3, §2.4, §2.10).
//!
//! A join counts tokens per incoming flow — a queue of waiting tracks per flow — so a
//! parallel join on a loop fires once per wave, and each firing consumes exactly one
//! token per flow it synchronises. Only the loop touches this state, so an arrival is
//! atomic without a lock.

use std::collections::VecDeque;

use crate::graph::NodeIdx;
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
}

impl JoinState {
    pub fn new(node: NodeIdx, incoming: usize) -> Self {
        Self {
            node,
            queues: vec![VecDeque::new(); incoming],
            arrived_since_check: false,
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

/// Whether an inclusive join with `marked` incoming flows may fire, given the
/// precomputed reach masks (ADR-005 §2.10): fast path when every flow is marked, slow
/// path when no live token can still reach an unmarked flow. `positions` are the
/// nodes where the live tokens are; one AND per token.
pub(crate) fn or_join_may_fire(
    marked: u64,
    incoming: usize,
    reach: &[u64],
    positions: impl Iterator<Item = NodeIdx>,
) -> bool {
    if marked == 0 {
        return false;
    }
    let all = if incoming >= 64 {
        u64::MAX
    } else {
        (1u64 << incoming) - 1
    };
    let unmarked = all & !marked;
    if unmarked == 0 {
        return true;
    }
    positions.into_iter().all(|p| reach[p] & unmarked == 0)
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

    #[test]
    fn or_join_waits_while_an_unmarked_flow_is_reachable() {
        // nodes 0..3; node 1 reaches flow 1, node 2 reaches nothing.
        let reach = [0b11, 0b10, 0b00];
        assert!(!or_join_may_fire(0, 2, &reach, [].into_iter()));
        assert!(or_join_may_fire(0b11, 2, &reach, [1].into_iter()));
        assert!(!or_join_may_fire(0b01, 2, &reach, [1].into_iter()));
        assert!(or_join_may_fire(0b01, 2, &reach, [2].into_iter()));
        assert!(or_join_may_fire(0b01, 2, &reach, [].into_iter()));
    }
}
