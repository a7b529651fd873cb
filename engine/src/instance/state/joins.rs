//! The synchronising joins' arrival state, and their pure rules (the OR-join's
//! reachability test, complex activation). ARCHITECTURE.md, "Joins".
//!
//! A join counts tokens per incoming flow, so a parallel join on a loop fires once
//! per wave, and each firing consumes exactly one token per flow it synchronises (the
//! earliest on each). Only the loop touches this state, so an arrival is atomic
//! without a lock.

use crate::graph::{Activation, NodeIdx};
use crate::instance::state::ids::ScopeId;
use crate::instance::state::ids::TrackId;

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

    /// A join's state as a checkpoint recorded it: its waiting tokens (slot, track)
    /// in arrival order, and whether a complex join has fired.
    #[cfg(feature = "durable")]
    pub fn restored(
        node: NodeIdx,
        scope: ScopeId,
        incoming: usize,
        waiting: &[(usize, TrackId)],
        spent: bool,
    ) -> Option<Self> {
        let mut join = Self::new(node, scope, incoming);
        for &(slot, track) in waiting {
            if slot >= incoming {
                return None;
            }
            join.arrive(slot, Arrival { track });
        }
        join.arrived_since_check = false;
        join.spent = spent;
        Some(join)
    }

    /// The waiting tokens, in arrival order, each with its incoming flow's slot.
    #[cfg(feature = "durable")]
    pub fn waiting(&self) -> &[(usize, Arrival)] {
        &self.waiting
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
        let slots = self.counts.len();
        // One token from every marked flow: exactly the room needed.
        let mut taken: Vec<Arrival> = Vec::with_capacity(slots - self.unmarked);
        // The flows that gave their token: a word's bits for up to 64 flows (no
        // allocation), a vector past that.
        let mut took_word = 0u64;
        let mut took_wide = if slots > 64 {
            vec![false; slots]
        } else {
            Vec::new()
        };
        let (counts, unmarked) = (&mut self.counts, &mut self.unmarked);
        self.waiting.retain(|&(slot, arrival)| {
            let first = match slots <= 64 {
                true => {
                    let bit = 1u64 << slot;
                    let first = took_word & bit == 0;
                    took_word |= bit;
                    first
                }
                false => !std::mem::replace(&mut took_wide[slot], true),
            };
            if !first {
                return true;
            }
            counts[slot] -= 1;
            if counts[slot] == 0 {
                *unmarked += 1;
            }
            taken.push(arrival);
            false
        });
        // `taken` is in arrival order: the survivor is its last or its first.
        if last_in {
            if let Some(last) = taken.len().checked_sub(1) {
                taken.swap(0, last);
            }
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

/// The OR-join rule (ARCHITECTURE.md, "Joins"): fire when a flow is marked and no live token
/// can reach an unmarked one (which includes the fast path, every flow marked).
pub(crate) fn or_join_verdict(marked: u64, reachable: u64) -> Verdict {
    if marked != 0 && reachable == 0 {
        Verdict::Fire
    } else {
        Verdict::Wait
    }
}

/// The complex-join rule (ARCHITECTURE.md, "Joins") over `(condition, count, required)` triples:
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

/// The arrival state of the joins that hold or held tokens, one per join and scope
/// instance (a sub-process entered twice has a state per entry).
#[derive(Default)]
pub(crate) struct Joins {
    states: Vec<JoinState>,
}

impl Joins {
    /// The state of `node` in `scope`, made on its first arrival.
    pub fn entry(&mut self, node: NodeIdx, scope: ScopeId, incoming: usize) -> usize {
        match self
            .states
            .iter()
            .position(|j| j.node == node && j.scope == scope)
        {
            Some(i) => i,
            None => {
                self.states.push(JoinState::new(node, scope, incoming));
                self.states.len() - 1
            }
        }
    }

    pub fn get(&self, i: usize) -> &JoinState {
        &self.states[i]
    }

    pub fn get_mut(&mut self, i: usize) -> &mut JoinState {
        &mut self.states[i]
    }

    pub fn len(&self) -> usize {
        self.states.len()
    }

    /// Put back a join a checkpoint recorded.
    #[cfg(feature = "durable")]
    pub fn restore(&mut self, join: JoinState) {
        self.states.push(join);
    }

    #[cfg(feature = "durable")]
    pub fn iter(&self) -> impl Iterator<Item = &JoinState> {
        self.states.iter()
    }

    /// Forget the joins of a scope that closed or was cancelled.
    pub fn drop_scope(&mut self, scope: ScopeId) {
        self.states.retain(|j| j.scope != scope);
    }

    /// The joins where tokens wait.
    pub fn waiting(&self) -> impl Iterator<Item = NodeIdx> + '_ {
        self.states.iter().filter(|j| !j.is_empty()).map(|j| j.node)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fire_takes_one_per_marked_flow_and_picks_the_survivor() {
        let mut j = JoinState::new(7, crate::instance::state::ids::ROOT, 3);
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
        let mut j = JoinState::new(7, crate::instance::state::ids::ROOT, 2);
        j.arrive(1, Arrival { track: TrackId(5) });
        j.arrive(0, Arrival { track: TrackId(4) });
        assert_eq!(j.fire(false)[0].track, TrackId(5));
        assert!(j.is_empty());
    }

    #[test]
    fn a_join_wider_than_64_flows_fires_the_same_way() {
        let mut j = JoinState::new(7, crate::instance::state::ids::ROOT, 70);
        j.arrive(65, Arrival { track: TrackId(1) });
        j.arrive(0, Arrival { track: TrackId(2) });
        j.arrive(65, Arrival { track: TrackId(3) });
        for slot in (1..70).filter(|&s| s != 65) {
            j.arrive(
                slot,
                Arrival {
                    track: TrackId(10 + slot as u32),
                },
            );
        }
        assert!(j.complete());
        let taken = j.fire(true);
        assert_eq!(taken.len(), 70);
        assert_eq!(taken[0].track, TrackId(79), "the last arrival survives");
        assert!(!taken.contains(&Arrival { track: TrackId(3) }));
        assert!(!j.complete(), "the second token on flow 65 waits");
        assert_eq!(j.fire(false), [Arrival { track: TrackId(3) }]);
        assert!(j.is_empty());
    }

    #[test]
    fn a_join_of_more_than_64_flows_fires_one_per_flow_too() {
        let mut j = JoinState::new(7, crate::instance::state::ids::ROOT, 70);
        for slot in 0..70 {
            j.arrive(
                slot,
                Arrival {
                    track: TrackId(slot as u32),
                },
            );
        }
        j.arrive(
            69,
            Arrival {
                track: TrackId(100),
            },
        );
        assert!(j.complete());
        let taken = j.fire(false);
        assert_eq!(taken.len(), 70);
        assert_eq!(taken[0].track, TrackId(0));
        assert!(!j.complete());
        assert_eq!(
            j.drain(),
            [Arrival {
                track: TrackId(100)
            }]
        );
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
