//! The reachability joins' pure rules (ARCHITECTURE.md, "Joins"): the OR-join's
//! reachability test over one snapshot of the loop's positions, and the complex
//! join's activation triples. No state: the loop (`joining.rs`) asks them after a
//! step, with what `joins` says has arrived.

use crate::graph::{Activation, NodeIdx};

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

#[cfg(test)]
mod tests {
    use super::*;

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
