//! The inclusive (OR) join at run time (ARCHITECTURE.md, "Joins"): it waits for every token
//! that can still arrive and fires exactly once — after 1, 2 or 3 of 3 branches, when
//! an awaited branch dies at an end event inside it (no Camunda 7 hang), when one
//! branch is much longer, when a branch forks and half of it ends early, when tokens
//! arrive in the same loop step, and behind exclusive and parallel splits.
//!
//! Every scenario runs 200 times on a paused current-thread runtime and 200 times on a
//! four-worker multi-thread runtime (see `common`); the `*_in_order` tests pin one
//! interleaving with the paused clock.

#[macro_use]
mod common;

use std::time::Duration;

use common::*;
use thresh::{process, Engine, Happening, ProcessData, TaskError};

#[derive(Clone, Debug, Default, PartialEq, ProcessData)]
struct Branches {
    a: bool,
    b: bool,
    c: bool,
    stop: bool,
}

impl Branches {
    fn bits(bits: usize) -> Self {
        Branches {
            a: bits & 1 != 0,
            b: bits & 2 != 0,
            c: bits & 4 != 0,
            stop: bits & 8 != 0,
        }
    }
}

async fn step(_: &mut Branches) -> Result<(), TaskError> {
    jitter().await;
    Ok(())
}

/// A task that takes 5 ms (virtual on the paused clock), then jitters.
async fn slow(_: &mut Branches) -> Result<(), TaskError> {
    tokio::time::sleep(Duration::from_millis(5)).await;
    jitter().await;
    Ok(())
}

fn fired_at(h: &thresh::History, node: &str) -> usize {
    position(h, node, |w| *w == Happening::Fired)
}

fn completed_at(h: &thresh::History, task: &str) -> usize {
    position(h, task, |w| matches!(w, Happening::Completed { .. }))
}

// ----- 1, 2 or 3 of 3 ------------------------------------------------------------

process! {
    DIAMOND: Branches {
        start s;
        inclusive os;
        task a = step;
        task b = step;
        task c = step;
        inclusive oj;
        task after = step;
        end done;

        s -> os;
        os -> a when |r| r.a;
        os -> b when |r| r.b;
        os -> c when |r| r.c;
        a, b, c -> oj -> after -> done;
    }
}

async fn or_join_after_one_two_or_three_branches(engine: Engine, i: usize) {
    let bits = 1 + i % 7;
    let data = Branches::bits(bits);
    let expected: Vec<&str> = [(data.a, "a"), (data.b, "b"), (data.c, "c")]
        .into_iter()
        .filter_map(|(on, t)| on.then_some(t))
        .collect();
    let (outcome, h) = run(&engine, &DIAMOND, data).await;
    completed(outcome, &h);
    let tasks = h.completed_tasks();
    assert_eq!(tasks.len(), expected.len() + 1, "{h}");
    assert_eq!(sorted(&tasks[..expected.len()]), expected, "{h}");
    assert_eq!(tasks.last(), Some(&"after"));
    assert_eq!(routes(&h, "os"), std::slice::from_ref(&expected));
    assert_eq!(h.fired("oj"), 1, "{h}");
    // With every flow marked the last arrival fires on the spot (the fast path);
    // otherwise every arrival waits for the reachability check.
    let fast_path = expected.len() == 3;
    assert_eq!(
        h.count("oj", |w| *w == Happening::Waiting),
        expected.len() - usize::from(fast_path),
        "{h}"
    );
    assert_eq!(
        h.count("oj", |w| *w == Happening::Merged),
        expected.len() - 1
    );
    for t in &expected {
        assert!(completed_at(&h, t) < fired_at(&h, "oj"), "{h}");
    }
    assert_eq!(h.ended_at(), ["done"]);
}

// ----- an awaited branch dies inside ---------------------------------------------

process! {
    EARLY_END: Branches {
        start s;
        inclusive os;
        task a = step;
        task b = slow;
        exclusive bx;
        end quit;
        task b2 = step;
        inclusive oj;
        task after = step;
        end done;

        s -> os;
        os -> a when |r| r.a;
        os -> b when |r| r.b;
        a -> oj;
        b -> bx;
        bx -> quit when |r| r.stop;
        bx -> b2 else;
        b2 -> oj;
        oj -> after -> done;
    }
}

/// The branch through `b` ends at `quit` before reaching the join. The join must not
/// wait for it (ARCHITECTURE.md, "Joins"). With `a` off and
/// `stop` on, no token reaches the join at all, and it never fires.
async fn or_join_fires_when_an_awaited_branch_ends_early(engine: Engine, i: usize) {
    let data = Branches::bits([0b0011, 0b1011, 0b0010, 0b1010][i % 4]);
    let reaches_join = data.a || !data.stop;
    let (a, stop) = (data.a, data.stop);
    let (outcome, h) = run(&engine, &EARLY_END, data).await;
    completed(outcome, &h);
    let mut expected = vec!["b"];
    if a {
        expected.push("a");
    }
    if !stop {
        expected.push("b2");
    }
    if reaches_join {
        expected.push("after");
    }
    assert_eq!(sorted(&h.completed_tasks()), sorted(&expected), "{h}");
    assert_eq!(h.fired("oj"), usize::from(reaches_join), "{h}");
    let mut ends = h.ended_at();
    ends.sort_unstable();
    let mut expected_ends = Vec::new();
    if reaches_join {
        expected_ends.push("done");
    }
    if stop {
        expected_ends.push("quit");
    }
    assert_eq!(ends, expected_ends, "{h}");
}

/// The same with one pinned interleaving: `a` waits at the join first, then the `b`
/// branch dies; the death fires the join, and `a`'s track carries on.
#[tokio::test(start_paused = true)]
async fn or_join_fires_on_a_death_after_the_wait_in_order() {
    let engine = Engine::new();
    let (outcome, h) = run(&engine, &EARLY_END, Branches::bits(0b1011)).await;
    completed(outcome, &h);
    let waiting = position(&h, "oj", |w| *w == Happening::Waiting);
    let quit = position(&h, "quit", |w| *w == Happening::Ended);
    let fired = fired_at(&h, "oj");
    assert!(waiting < quit && quit < fired, "{h}");
    assert_eq!(h.steps()[waiting].track, h.steps()[fired].track);
    assert_eq!(h.completed_tasks(), ["a", "b", "after"]);
}

// ----- a longer branch -----------------------------------------------------------

process! {
    LONG_BRANCH: Branches {
        start s;
        inclusive os;
        task short = step;
        task long1 = slow;
        task long2 = step;
        task long3 = slow;
        inclusive oj;
        task after = step;
        end done;

        s -> os;
        os -> short when |r| r.a;
        os -> long1 when |r| r.b;
        short -> oj;
        long1 -> long2 -> long3 -> oj;
        oj -> after -> done;
    }
}

async fn or_join_waits_for_the_longer_branch(engine: Engine, _: usize) {
    let (outcome, h) = run(&engine, &LONG_BRANCH, Branches::bits(0b11)).await;
    completed(outcome, &h);
    let tasks = h.completed_tasks();
    assert_eq!(
        sorted(&tasks),
        ["after", "long1", "long2", "long3", "short"],
        "{h}"
    );
    assert_eq!(tasks.last(), Some(&"after"), "{h}");
    assert_eq!(h.fired("oj"), 1, "{h}");
    assert_eq!(h.count("oj", |w| *w == Happening::Merged), 1);
    assert!(completed_at(&h, "long3") < fired_at(&h, "oj"), "{h}");
}

/// Pinned: the short branch arrives first and waits through the whole long branch;
/// the long branch's arrival completes the join and carries on (last in).
#[tokio::test(start_paused = true)]
async fn or_join_waits_for_the_longer_branch_in_order() {
    let engine = Engine::new();
    let (outcome, h) = run(&engine, &LONG_BRANCH, Branches::bits(0b11)).await;
    completed(outcome, &h);
    assert_eq!(
        h.completed_tasks(),
        ["short", "long1", "long2", "long3", "after"]
    );
    let waiting = position(&h, "oj", |w| *w == Happening::Waiting);
    assert!(waiting < completed_at(&h, "long1"), "{h}");
    let merged = position(&h, "oj", |w| *w == Happening::Merged);
    assert_eq!(h.steps()[waiting].track, h.steps()[merged].track);
    let long3 = completed_at(&h, "long3");
    assert_eq!(h.steps()[long3].track, h.steps()[fired_at(&h, "oj")].track);
}

// ----- a branch that forks and half ends early ----------------------------------

process! {
    FORKED_BRANCH: Branches {
        start s;
        inclusive os;
        task a = step;
        parallel pf;
        task quick = step;
        end quick_end;
        task slow1 = slow;
        task slow2 = slow;
        inclusive oj;
        task after = step;
        end done;

        s -> os;
        os -> a when |r| r.a;
        os -> pf when |r| r.b;
        pf -> quick, slow1;
        quick -> quick_end;
        slow1 -> slow2 -> oj;
        a -> oj;
        oj -> after -> done;
    }
}

/// One half of the forked branch ends inside it; the join still waits for the other.
async fn or_join_waits_for_the_live_half_of_a_forked_branch(engine: Engine, i: usize) {
    let data = Branches::bits([0b11, 0b10, 0b01][i % 3]);
    let (a, b) = (data.a, data.b);
    let (outcome, h) = run(&engine, &FORKED_BRANCH, data).await;
    completed(outcome, &h);
    let mut expected = vec!["after"];
    if a {
        expected.push("a");
    }
    if b {
        expected.extend(["quick", "slow1", "slow2"]);
    }
    assert_eq!(sorted(&h.completed_tasks()), sorted(&expected), "{h}");
    assert_eq!(h.fired("oj"), 1, "{h}");
    let fired = fired_at(&h, "oj");
    if a {
        assert!(completed_at(&h, "a") < fired, "{h}");
    }
    if b {
        // The join waits for the half that can reach it, not for the half that
        // cannot: `quick` may still run when it fires (it does under load).
        assert!(completed_at(&h, "slow2") < fired, "{h}");
        assert_eq!(h.count("quick_end", |w| *w == Happening::Ended), 1);
    }
}

process! {
    /// `quick` cannot reach the join and never ends on its own.
    UNREACHING: Branches {
        start s;
        inclusive os;
        task a = step;
        parallel pf;
        task stuck = |_r| async move {
            tokio::time::sleep(std::time::Duration::from_secs(3600)).await;
            Ok(())
        };
        end stuck_end;
        task b = step;
        inclusive oj;
        task after = step;
        end done: terminate;

        s -> os;
        os -> a when |r| r.a;
        os -> pf when |r| r.b;
        pf -> stuck, b;
        stuck -> stuck_end;
        a, b -> oj -> after -> done;
    }
}

/// A live token that cannot reach the join does not hold it: the join fires while
/// `stuck` still runs (the terminate end then stops it).
async fn or_join_ignores_tokens_that_cannot_reach_it(engine: Engine, _: usize) {
    let (outcome, h) = run(&engine, &UNREACHING, Branches::bits(0b11)).await;
    assert!(matches!(outcome, thresh::Outcome::Terminated(_)), "{h}");
    assert_eq!(sorted(&h.completed_tasks()), ["a", "after", "b"], "{h}");
    assert_eq!(h.fired("oj"), 1, "{h}");
    assert_eq!(h.count("stuck", |w| *w == Happening::Cancelled), 1, "{h}");
}

// ----- tokens in transit --------------------------------------------------------

process! {
    IN_TRANSIT: Branches {
        start s;
        inclusive os;
        exclusive via_a;
        exclusive via_b;
        exclusive via_c;
        inclusive oj;
        task after = step;
        end done;

        s -> os;
        os -> via_a when |r| r.a;
        os -> via_b when |r| r.b;
        os -> via_c when |r| r.c;
        via_a, via_b, via_c -> oj;
        oj -> after -> done;
    }
}

/// Every branch is gateways only, so all tokens reach the join in the loop step of
/// the split: the join fires once, not once per token.
async fn or_join_counts_tokens_placed_in_one_step(engine: Engine, i: usize) {
    let data = Branches::bits(1 + i % 7);
    let k = [data.a, data.b, data.c].iter().filter(|on| **on).count();
    let (outcome, h) = run(&engine, &IN_TRANSIT, data).await;
    completed(outcome, &h);
    assert_eq!(h.completed_tasks(), ["after"], "{h}");
    assert_eq!(h.fired("oj"), 1, "{h}");
    assert_eq!(h.count("oj", |w| *w == Happening::Merged), k - 1);
    assert_eq!(h.ended_at(), ["done"]);
}

// ----- behind other splits ----------------------------------------------------

process! {
    BEHIND_EXCLUSIVE: Branches {
        start s;
        exclusive x;
        task a = step;
        task b = slow;
        inclusive oj;
        task after = step;
        end done;

        s -> x;
        x -> a when |r| r.a;
        x -> b else;
        a, b -> oj -> after -> done;
    }
}

/// Behind an exclusive split only one token comes: the OR-join fires on it (where a
/// parallel join would deadlock).
async fn or_join_behind_an_exclusive_split_fires_on_one_token(engine: Engine, i: usize) {
    let data = Branches::bits(i % 2);
    let taken = if data.a { "a" } else { "b" };
    let (outcome, h) = run(&engine, &BEHIND_EXCLUSIVE, data).await;
    completed(outcome, &h);
    assert_eq!(h.completed_tasks(), [taken, "after"]);
    assert_eq!(h.fired("oj"), 1);
    assert_eq!(h.count("oj", |w| *w == Happening::Merged), 0);
}

process! {
    BEHIND_PARALLEL: Branches {
        start s;
        parallel fork;
        task a = step;
        task b = slow;
        task c = step;
        inclusive oj;
        task after = step;
        end done;

        s -> fork -> a, b, c;
        a, b, c -> oj -> after -> done;
    }
}

/// Behind a parallel split every branch comes: the OR-join waits for all three.
async fn or_join_behind_a_parallel_split_waits_for_all(engine: Engine, _: usize) {
    let (outcome, h) = run(&engine, &BEHIND_PARALLEL, Branches::default()).await;
    completed(outcome, &h);
    let tasks = h.completed_tasks();
    assert_eq!(sorted(&tasks[..3]), ["a", "b", "c"], "{h}");
    assert_eq!(tasks[3..], ["after"]);
    assert_eq!(h.fired("oj"), 1);
    assert_eq!(h.count("oj", |w| *w == Happening::Merged), 2);
}

// ----- a loop inside a branch ------------------------------------------------------

#[derive(Clone, Debug, Default, PartialEq, ProcessData)]
struct Rounds {
    a: bool,
    n: u32,
    limit: u32,
}

process! {
    LOOP_IN_BRANCH: Rounds {
        start s;
        inclusive os;
        task a = |_r| async move {
            jitter().await;
            Ok(())
        };
        exclusive head;
        task inc = |r| async move {
            jitter().await;
            r.n += 1;
            Ok(())
        };
        exclusive again;
        inclusive oj;
        task after = |_r| async move { Ok(()) };
        end done;

        s -> os;
        os -> a when |r| r.a;
        os -> head when |r| r.limit > 0;
        head -> inc -> again;
        again -> head when |r| r.n < r.limit;
        again -> oj else;
        a -> oj;
        oj -> after -> done;
    }
}

/// One branch is an exclusive loop: the join waits for every round (the token can
/// always still reach the join while it circles) and fires once after the last.
async fn or_join_waits_for_a_loop_in_a_branch(engine: Engine, i: usize) {
    let data = Rounds {
        a: !i.is_multiple_of(3),
        n: 0,
        limit: (i % 5) as u32 + u32::from(i.is_multiple_of(3)),
    };
    let limit = data.limit as usize;
    let (outcome, h) = run(&engine, &LOOP_IN_BRANCH, data.clone()).await;
    let end = completed(outcome, &h);
    assert_eq!(end.n, data.limit);
    assert_eq!(completions(&h, "inc"), limit);
    assert_eq!(completions(&h, "a"), usize::from(data.a));
    assert_eq!(h.fired("oj"), 1, "{h}");
    assert_eq!(h.completed_tasks().last(), Some(&"after"), "{h}");
    if limit > 0 {
        let last_inc = h
            .steps()
            .iter()
            .rposition(|s| s.node == "inc" && matches!(s.what, Happening::Completed { .. }))
            .expect("inc ran");
        assert!(last_inc < fired_at(&h, "oj"), "{h}");
    }
}

// ----- two tokens on one flow ----------------------------------------------------

process! {
    TWO_ON_ONE_FLOW: Branches {
        start s;
        parallel fork;
        task a = step;
        task b = step;
        task c = slow;
        exclusive xm: multi;
        inclusive oj;
        task after = step;
        end done;

        s -> fork -> a, b, c;
        a, b -> xm -> oj;
        c -> oj;
        oj -> after -> done;
    }
}

/// Two tokens reach the same incoming flow (through an exclusive merge), one the
/// other. A firing consumes one token per marked flow (ARCHITECTURE.md, "Joins"), so the join
/// fires twice, whatever the order of arrivals.
async fn or_join_with_two_tokens_on_one_flow_fires_twice(engine: Engine, _: usize) {
    let (outcome, h) = run(&engine, &TWO_ON_ONE_FLOW, Branches::default()).await;
    completed(outcome, &h);
    assert_eq!(h.fired("oj"), 2, "{h}");
    assert_eq!(h.count("oj", |w| *w == Happening::Merged), 1, "{h}");
    assert_eq!(completions(&h, "after"), 2);
    assert_eq!(h.ended_at(), ["done", "done"]);
}

flavors!(
    or_join_after_one_two_or_three_branches,
    or_join_fires_when_an_awaited_branch_ends_early,
    or_join_waits_for_the_longer_branch,
    or_join_waits_for_the_live_half_of_a_forked_branch,
    or_join_ignores_tokens_that_cannot_reach_it,
    or_join_counts_tokens_placed_in_one_step,
    or_join_behind_an_exclusive_split_fires_on_one_token,
    or_join_behind_a_parallel_split_waits_for_all,
    or_join_waits_for_a_loop_in_a_branch,
    or_join_with_two_tokens_on_one_flow_fires_twice,
);
