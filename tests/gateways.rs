//! Gateways at run time (ARCHITECTURE.md, "Joins"): parallel split and join, exclusive split
//! in declared order with its default, exclusive merge as pass-through, inclusive
//! split, mixed gateways (N in, M out), implicit splits and merges at tasks, nested
//! diamonds, and cycles through exclusive gateways (a parallel join on a loop fires
//! once per wave; a counter loop ends with the right count).
//!
//! Every scenario runs 200 times on a paused current-thread runtime and 200 times on a
//! four-worker multi-thread runtime (see `common`).

#[macro_use]
mod common;

use common::*;
use thresh::{process, Engine, Happening, ProcessData, TaskError};

#[derive(Clone, Debug, Default, PartialEq, ProcessData)]
struct Route {
    a: bool,
    b: bool,
    c: bool,
    d: bool,
    nested: bool,
    n: u32,
    limit: u32,
    trace: Vec<u32>,
}

impl Route {
    /// Flags `a`..`d` from the low four bits of `bits`.
    fn flags(bits: usize) -> Self {
        Route {
            a: bits & 1 != 0,
            b: bits & 2 != 0,
            c: bits & 4 != 0,
            d: bits & 8 != 0,
            ..Route::default()
        }
    }
}

/// A task that changes nothing, after a random pause.
async fn step(_: &mut Route) -> Result<(), TaskError> {
    jitter().await;
    Ok(())
}

async fn set_a(r: &mut Route) -> Result<(), TaskError> {
    jitter().await;
    r.a = true;
    Ok(())
}

async fn set_b(r: &mut Route) -> Result<(), TaskError> {
    jitter().await;
    r.b = true;
    Ok(())
}

/// Count a round: `n += 1`, and remember it.
async fn count(r: &mut Route) -> Result<(), TaskError> {
    jitter().await;
    r.n += 1;
    r.trace.push(r.n);
    Ok(())
}

// ----- parallel ------------------------------------------------------------------

process! {
    PARALLEL: Route {
        start s;
        parallel fork;
        task a = step;
        task b = step;
        task c = step;
        parallel join;
        task after = step;
        end done;

        s -> fork -> a, b, c;
        a, b, c -> join -> after -> done;
    }
}

async fn parallel_split_and_join(engine: Engine, _: usize) {
    let (outcome, h) = run(&engine, &PARALLEL, Route::default()).await;
    completed(outcome, &h);
    let tasks = h.completed_tasks();
    assert_eq!(tasks.len(), 4, "{h}");
    assert_eq!(sorted(&tasks[..3]), ["a", "b", "c"], "{h}");
    assert_eq!(tasks[3], "after", "{h}");
    assert_eq!(routes(&h, "fork"), [["a", "b", "c"]]);
    assert_eq!(
        h.count("fork", |w| matches!(w, Happening::Spawned { .. })),
        2
    );
    assert_eq!(h.fired("join"), 1, "{h}");
    assert_eq!(h.count("join", |w| *w == Happening::Merged), 2, "{h}");
    assert_eq!(h.ended_at(), ["done"]);
    assert_eq!(h.tracks(), 3);
}

// ----- exclusive -----------------------------------------------------------------

process! {
    EXCLUSIVE: Route {
        start s;
        exclusive x;
        task big = step;
        task positive = step;
        task other = step;
        exclusive merge;
        end done;

        s -> x;
        // The default is declared first: it is still taken only when no condition holds.
        x -> other else;
        x -> big when |r| r.n >= 10;
        x -> positive when |r| r.n > 0;
        big, positive, other -> merge -> done;
    }
}

async fn exclusive_first_true_in_declared_order(engine: Engine, i: usize) {
    // 20 and 10 make both conditions true: the first declared wins.
    let (n, expected) = [
        (20, "big"),
        (10, "big"),
        (9, "positive"),
        (1, "positive"),
        (0, "other"),
    ][i % 5];
    let data = Route {
        n,
        ..Route::default()
    };
    let (outcome, h) = run(&engine, &EXCLUSIVE, data).await;
    completed(outcome, &h);
    assert_eq!(h.completed_tasks(), [expected], "n = {n}\n{h}");
    assert_eq!(routes(&h, "x"), [[expected]]);
    assert_eq!(routes(&h, "merge"), [["done"]]);
    assert_eq!(h.ended_at(), ["done"]);
    assert_eq!(h.tracks(), 1);
}

process! {
    SHORT_CIRCUIT: Route {
        start s;
        exclusive x;
        task first = step;
        task second = step;
        end done;

        s -> x;
        x -> first when |r| r.a;
        x -> second when |_| panic!("an exclusive split evaluated a condition after the first true one");
        first, second -> done;
    }
}

/// Once a condition is true, no further condition is evaluated.
async fn exclusive_stops_at_the_first_true_condition(engine: Engine, _: usize) {
    let (outcome, h) = run(&engine, &SHORT_CIRCUIT, Route::flags(1)).await;
    completed(outcome, &h);
    assert_eq!(h.completed_tasks(), ["first"]);
}

process! {
    EXCLUSIVE_MERGE: Route {
        start s;
        parallel fork;
        task a = step;
        task b = step;
        exclusive merge: multi;
        task c = step;
        end done;

        s -> fork -> a, b;
        a, b -> merge -> c -> done;
    }
}

/// Two tokens reach an exclusive merge: each passes through on its own, so `c` runs
/// twice and the end is reached twice.
async fn exclusive_merge_passes_every_token(engine: Engine, _: usize) {
    let (outcome, h) = run(&engine, &EXCLUSIVE_MERGE, Route::default()).await;
    completed(outcome, &h);
    assert_eq!(sorted(&h.completed_tasks()), ["a", "b", "c", "c"], "{h}");
    assert_eq!(routes(&h, "merge"), [["c"], ["c"]]);
    assert_eq!(h.count("merge", |w| *w == Happening::Waiting), 0);
    assert_eq!(h.fired("merge"), 0);
    assert_eq!(h.ended_at(), ["done", "done"]);
    assert_eq!(h.tracks(), 2);
}

// ----- inclusive split -----------------------------------------------------------

process! {
    INCLUSIVE_SPLIT: Route {
        start s;
        inclusive os;
        task a = step;
        task b = step;
        task fallback = step;
        end end_a;
        end end_b;
        end end_fallback;

        s -> os;
        os -> a when |r| r.a;
        os -> b when |r| r.b;
        os -> fallback else;
        a -> end_a;
        b -> end_b;
        fallback -> end_fallback;
    }
}

/// Every true condition is taken; none true takes the default.
async fn inclusive_split_takes_every_true_flow(engine: Engine, i: usize) {
    let bits = i % 4;
    let expected: &[&str] = match bits {
        0 => &["fallback"],
        1 => &["a"],
        2 => &["b"],
        _ => &["a", "b"],
    };
    let (outcome, h) = run(&engine, &INCLUSIVE_SPLIT, Route::flags(bits)).await;
    completed(outcome, &h);
    assert_eq!(sorted(&h.completed_tasks()), expected, "{h}");
    assert_eq!(routes(&h, "os"), [expected]);
    assert_eq!(h.ended_at().len(), expected.len());
    assert_eq!(h.tracks(), expected.len());
}

// ----- mixed gateways (N in, M out) ----------------------------------------------

process! {
    MIXED_PARALLEL: Route {
        start s;
        parallel fork;
        task a = step;
        task b = step;
        task c = step;
        parallel mix;
        task d = step;
        task e = step;
        parallel join;
        end done;

        s -> fork -> a, b, c;
        a, b, c -> mix -> d, e;
        d, e -> join -> done;
    }
}

/// A parallel gateway with 3 incoming and 2 outgoing flows joins, then forks.
async fn mixed_parallel_joins_then_forks(engine: Engine, _: usize) {
    let (outcome, h) = run(&engine, &MIXED_PARALLEL, Route::default()).await;
    completed(outcome, &h);
    let tasks = h.completed_tasks();
    assert_eq!(sorted(&tasks[..3]), ["a", "b", "c"], "{h}");
    assert_eq!(sorted(&tasks[3..]), ["d", "e"], "{h}");
    assert_eq!(h.fired("mix"), 1);
    assert_eq!(h.count("mix", |w| *w == Happening::Merged), 2);
    assert_eq!(routes(&h, "mix"), [["d", "e"]]);
    assert_eq!(
        h.count("mix", |w| matches!(w, Happening::Spawned { .. })),
        1
    );
    assert_eq!(h.fired("join"), 1);
    assert_eq!(h.ended_at(), ["done"]);
}

process! {
    MIXED_EXCLUSIVE: Route {
        start s;
        parallel fork;
        task set_a = set_a;
        task set_b = set_b;
        exclusive mix: multi;
        task both = step;
        task one = step;
        end done;

        s -> fork -> set_a, set_b;
        set_a, set_b -> mix;
        mix -> both when |r| r.a && r.b;
        mix -> one else;
        both, one -> done;
    }
}

/// An exclusive gateway with 2 in and 2 out routes each arrival on its own, with the
/// data as committed at that moment: the first arrival sees one flag, the second both.
async fn mixed_exclusive_routes_each_arrival(engine: Engine, _: usize) {
    let (outcome, h) = run(&engine, &MIXED_EXCLUSIVE, Route::default()).await;
    let data = completed(outcome, &h);
    assert!(data.a && data.b);
    assert_eq!(routes(&h, "mix"), [["one"], ["both"]], "{h}");
    assert_eq!(completions(&h, "one"), 1);
    assert_eq!(completions(&h, "both"), 1);
    assert_eq!(h.fired("mix"), 0);
    assert_eq!(h.ended_at(), ["done", "done"]);
}

process! {
    MIXED_INCLUSIVE: Route {
        start s;
        parallel fork;
        task a = step;
        task b = step;
        inclusive mix;
        task x = step;
        task y = step;
        task z = step;
        inclusive join;
        end done;

        s -> fork -> a, b;
        a, b -> mix;
        mix -> x when |r| r.c;
        mix -> y when |r| r.d;
        mix -> z else;
        x, y, z -> join -> done;
    }
}

/// An inclusive gateway with 2 in and 3 out: an OR-join that waits for both branches,
/// fires once, then splits on the true conditions (or the default).
async fn mixed_inclusive_joins_then_splits(engine: Engine, i: usize) {
    let bits = i % 4;
    let expected: &[&str] = match bits {
        0 => &["z"],
        1 => &["x"],
        2 => &["y"],
        _ => &["x", "y"],
    };
    let (outcome, h) = run(&engine, &MIXED_INCLUSIVE, Route::flags(bits << 2)).await;
    completed(outcome, &h);
    let tasks = h.completed_tasks();
    assert_eq!(sorted(&tasks[..2]), ["a", "b"], "{h}");
    assert_eq!(sorted(&tasks[2..]), expected, "{h}");
    assert_eq!(h.fired("mix"), 1, "{h}");
    assert_eq!(h.count("mix", |w| *w == Happening::Merged), 1);
    assert_eq!(routes(&h, "mix"), [expected]);
    assert_eq!(h.fired("join"), 1, "{h}");
    assert_eq!(h.ended_at(), ["done"]);
}

// ----- activities as implicit split and merge -------------------------------------

process! {
    START_SPLIT: Route {
        start s;
        task a = step;
        task b = step;
        end done;

        // A start event with two outgoing flows forks too.
        s -> a, b;
        a, b -> done;
    }
}

async fn start_event_forks(engine: Engine, _: usize) {
    let (outcome, h) = run(&engine, &START_SPLIT, Route::default()).await;
    completed(outcome, &h);
    assert_eq!(sorted(&h.completed_tasks()), ["a", "b"]);
    assert_eq!(h.count("s", |w| matches!(w, Happening::Spawned { .. })), 1);
    assert_eq!(h.ended_at(), ["done", "done"]);
}

process! {
    ACTIVITY_SPLIT: Route {
        start s;
        task first = step;
        task a = step;
        task b = step;
        task last = step: multi;
        end done;

        // A task with two outgoing flows forks like a parallel split; a task with two
        // incoming flows is a pass-through merge (`multi`: on purpose).
        s -> first -> a, b;
        a, b -> last -> done;
    }
}

async fn activity_forks_and_merges_without_synchronising(engine: Engine, _: usize) {
    let (outcome, h) = run(&engine, &ACTIVITY_SPLIT, Route::default()).await;
    completed(outcome, &h);
    let tasks = h.completed_tasks();
    assert_eq!(tasks[0], "first");
    assert_eq!(sorted(&tasks[1..]), ["a", "b", "last", "last"], "{h}");
    assert_eq!(
        h.count("first", |w| matches!(w, Happening::Spawned { .. })),
        1
    );
    assert_eq!(h.ended_at(), ["done", "done"]);
}

// ----- nested diamonds -----------------------------------------------------------

process! {
    /// exclusive ⊃ inclusive ⊃ parallel.
    NESTED: Route {
        start s;
        exclusive route;
        inclusive or_split;
        parallel p_fork;
        task p1 = step;
        task p2 = step;
        parallel p_join;
        task ib = step;
        task ic = step;
        inclusive or_join;
        task plain = step;
        exclusive route_merge;
        task after = step;
        end done;

        s -> route;
        route -> or_split when |r| r.nested;
        route -> plain else;
        or_split -> p_fork when |r| r.a;
        or_split -> ib when |r| r.b;
        or_split -> ic else;
        p_fork -> p1, p2;
        p1, p2 -> p_join -> or_join;
        ib -> or_join;
        ic -> or_join;
        or_join -> route_merge;
        plain -> route_merge;
        route_merge -> after -> done;
    }
}

async fn nested_exclusive_inclusive_parallel(engine: Engine, i: usize) {
    let case = i % 5;
    let mut data = Route::flags(case);
    data.nested = case != 4;
    let middle: &[&str] = match case {
        0 => &["ic"],
        1 => &["p1", "p2"],
        2 => &["ib"],
        3 => &["ib", "p1", "p2"],
        _ => &["plain"],
    };
    let in_parallel = data.nested && data.a;
    let (outcome, h) = run(&engine, &NESTED, data).await;
    completed(outcome, &h);
    let tasks = h.completed_tasks();
    assert_eq!(
        sorted(&tasks[..tasks.len() - 1]),
        middle,
        "case {case}\n{h}"
    );
    assert_eq!(tasks.last(), Some(&"after"));
    assert_eq!(h.fired("p_join"), usize::from(in_parallel), "{h}");
    assert_eq!(h.fired("or_join"), usize::from(case != 4), "{h}");
    assert_eq!(h.ended_at(), ["done"]);
}

process! {
    /// parallel ⊃ inclusive ⊃ (exclusive, inclusive): an OR-join inside an OR-join,
    /// beside a parallel branch.
    NESTED_OR: Route {
        start s;
        parallel fork;
        task left = step;
        inclusive outer_split;
        exclusive x_split;
        task xa = step;
        task xb = step;
        exclusive x_merge;
        inclusive inner_split;
        task ia = step;
        task ib = step;
        task ia_default = step;
        inclusive inner_join;
        inclusive outer_join;
        parallel join;
        task after = step;
        end done;

        s -> fork -> left, outer_split;
        left -> join;
        outer_split -> x_split when |r| r.a;
        outer_split -> inner_split when |r| r.b;
        x_split -> xa when |r| r.c;
        x_split -> xb else;
        xa, xb -> x_merge -> outer_join;
        inner_split -> ia when |r| r.c;
        inner_split -> ib when |r| r.d;
        inner_split -> ia_default else;
        ia, ib, ia_default -> inner_join -> outer_join;
        outer_join -> join -> after -> done;
    }
}

async fn nested_or_join_inside_or_join(engine: Engine, i: usize) {
    // a or b must hold (the outer split has no default): bits 1..=15 minus those
    // without a and b.
    let cases = [1, 2, 3, 5, 6, 7, 9, 10, 11, 13, 14, 15];
    let bits = cases[i % cases.len()];
    let r = Route::flags(bits);
    let mut expected = vec!["left"];
    if r.a {
        expected.push(if r.c { "xa" } else { "xb" });
    }
    if r.b {
        match (r.c, r.d) {
            (false, false) => expected.push("ia_default"),
            (c, d) => {
                if c {
                    expected.push("ia");
                }
                if d {
                    expected.push("ib");
                }
            }
        }
    }
    expected.sort_unstable();
    let (outcome, h) = run(&engine, &NESTED_OR, r.clone()).await;
    completed(outcome, &h);
    let tasks = h.completed_tasks();
    assert_eq!(tasks.last(), Some(&"after"), "{h}");
    assert_eq!(sorted(&tasks[..tasks.len() - 1]), expected, "{r:?}\n{h}");
    assert_eq!(h.fired("inner_join"), usize::from(r.b), "{h}");
    assert_eq!(h.fired("outer_join"), 1, "{h}");
    assert_eq!(h.fired("join"), 1, "{h}");
    // The outer join fires after everything inside it.
    let outer = position(&h, "outer_join", |w| *w == Happening::Fired);
    for task in &expected {
        if *task != "left" {
            assert!(
                position(&h, task, |w| matches!(w, Happening::Completed { .. })) < outer,
                "{task} after the outer join fired\n{h}"
            );
        }
    }
    assert_eq!(h.ended_at(), ["done"]);
}

// ----- cycles ----------------------------------------------------------------------

process! {
    PARALLEL_LOOP: Route {
        start s;
        exclusive again;
        parallel fork;
        task a = step;
        task b = step;
        parallel join;
        task count = count;
        exclusive more;
        end done;

        s -> again -> fork -> a, b;
        a, b -> join -> count -> more;
        more -> again when |r| r.n < r.limit;
        more -> done else;
    }
}

/// A parallel join on an exclusive loop fires once per round.
async fn parallel_join_on_a_loop_fires_once_per_wave(engine: Engine, i: usize) {
    let limit = 1 + (i % 5) as u32;
    let data = Route {
        limit,
        ..Route::default()
    };
    let (outcome, h) = run(&engine, &PARALLEL_LOOP, data).await;
    let data = completed(outcome, &h);
    let rounds = limit as usize;
    assert_eq!(data.n, limit);
    assert_eq!(h.fired("join"), rounds, "{h}");
    assert_eq!(h.count("join", |w| *w == Happening::Merged), rounds);
    assert_eq!(completions(&h, "a"), rounds);
    assert_eq!(completions(&h, "b"), rounds);
    assert_eq!(completions(&h, "count"), rounds);
    assert_eq!(h.ended_at(), ["done"]);
}

process! {
    /// Two tokens reach each incoming flow of `join`: it fires twice, each time taking
    /// one token per flow.
    WAVES: Route {
        start s;
        parallel fork;
        task x1 = step;
        task x2 = step;
        task y1 = step;
        task y2 = step;
        exclusive xm: multi;
        exclusive ym: multi;
        task a = step;
        task b = step;
        parallel join;
        task c = step;
        end done;

        s -> fork -> x1, x2, y1, y2;
        x1, x2 -> xm -> a -> join;
        y1, y2 -> ym -> b -> join;
        join -> c -> done;
    }
}

async fn parallel_join_counts_tokens_per_flow(engine: Engine, _: usize) {
    let (outcome, h) = run(&engine, &WAVES, Route::default()).await;
    completed(outcome, &h);
    assert_eq!(h.fired("join"), 2, "{h}");
    assert_eq!(h.count("join", |w| *w == Happening::Merged), 2);
    assert_eq!(completions(&h, "a"), 2);
    assert_eq!(completions(&h, "b"), 2);
    assert_eq!(completions(&h, "c"), 2);
    assert_eq!(h.ended_at(), ["done", "done"]);
}

process! {
    /// A counter loop through three exclusive gateways: a merge, a split, and a mixed
    /// one (2 in, 2 out) that closes the loop.
    COUNTER: Route {
        start s;
        exclusive head;
        task inc = count;
        exclusive parity;
        task even = step;
        task odd = step;
        exclusive tail;
        end done;

        s -> head -> inc -> parity;
        parity -> even when |r| r.n % 2 == 0;
        parity -> odd else;
        even, odd -> tail;
        tail -> head when |r| r.n < r.limit;
        tail -> done else;
    }
}

async fn exclusive_cycle_counts_to_its_limit(engine: Engine, i: usize) {
    let limit = if i == 0 { 100 } else { 1 + (i % 12) as u32 };
    let data = Route {
        limit,
        ..Route::default()
    };
    let (outcome, h) = run(&engine, &COUNTER, data).await;
    let data = completed(outcome, &h);
    assert_eq!(data.n, limit);
    assert_eq!(data.trace, (1..=limit).collect::<Vec<_>>());
    let expected: Vec<&str> = (1..=limit)
        .flat_map(|n| ["inc", if n % 2 == 0 { "even" } else { "odd" }])
        .collect();
    assert_eq!(h.completed_tasks(), expected);
    assert_eq!(h.ended_at(), ["done"]);
    assert_eq!(h.tracks(), 1);
}

flavors!(
    parallel_split_and_join,
    exclusive_first_true_in_declared_order,
    exclusive_stops_at_the_first_true_condition,
    exclusive_merge_passes_every_token,
    inclusive_split_takes_every_true_flow,
    mixed_parallel_joins_then_forks,
    mixed_exclusive_routes_each_arrival,
    mixed_inclusive_joins_then_splits,
    activity_forks_and_merges_without_synchronising,
    start_event_forks,
    nested_exclusive_inclusive_parallel,
    nested_or_join_inside_or_join,
    parallel_join_on_a_loop_fires_once_per_wave,
    parallel_join_counts_tokens_per_flow,
    exclusive_cycle_counts_to_its_limit,
);
