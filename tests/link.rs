//! Link events at run time (ARCHITECTURE.md, "Events"): a throw continues at the catch of its name,
//! with no wait, no subscription and no step of its own in the history.
//!
//! - a loop through a link runs exactly N times and stops on its exclusive gateway's
//!   condition — N from 1 to 500, handlers ready at once (so the loop's inline budget
//!   runs out mid-loop) or yielding first, on a multi-thread runtime, 200+ runs;
//! - several throws reach one catch (many sources, one target);
//! - a forward jump (an off-page connector);
//! - a parallel fork and join inside the loop, with racing branches: the join fires
//!   once per lap;
//! - a timer catch inside the loop, on the paused clock: one lap per second exactly;
//! - a boundary event on a user task inside the loop is armed on every visit and only
//!   then.

#[macro_use]
mod common;

use std::time::Duration;

use common::*;
use thresh::{process, Engine, Happening, ProcessData};
use tokio::time::Instant;

#[derive(Clone, Debug, Default, PartialEq, ProcessData)]
struct Lap {
    n: u32,
    limit: u32,
    /// How many times `bump` yields before it returns (0: ready at once).
    spins: u32,
    odd: u32,
    even: u32,
    left: u32,
    right: u32,
    pings: u32,
    rounds: u32,
}

fn lap(limit: u32) -> Lap {
    Lap {
        limit,
        ..Lap::default()
    }
}

/// The exact history of `LOOP` with `limit` laps.
fn loop_history(limit: u32) -> Vec<Row> {
    let mut rows = vec![(0, "s", Happening::Started)];
    for k in 1..=limit {
        rows.push((0, "bump", Happening::TaskStarted));
        rows.push((0, "bump", done(&["n"])));
        rows.push((
            0,
            "more",
            routed(&[if k < limit { "back" } else { "done" }]),
        ));
    }
    rows.push((0, "done", Happening::Ended));
    rows
}

process! {
    /// Bump `n` until it reaches `limit`, looping back through a link.
    LOOP: Lap {
        start     s;
        catch     again: link("again");
        task      bump = |d| async move {
            for _ in 0..d.spins {
                tokio::task::yield_now().await;
            }
            d.n += 1;
            Ok(())
        };
        exclusive more;
        throw     back: link("again");
        end       done;
        s -> bump -> more;
        again -> bump;
        more -> back when |d| d.n < d.limit;
        more -> done else;
    }
}

/// A loop runs exactly `limit` times, then leaves by the gateway's default flow. The
/// link nodes leave no step: the throw hands the token straight to the catch's flow.
/// Laps are ready at once or yield first; with 500 ready laps the loop's inline
/// budget runs out mid-loop and the rest go through the track.
async fn a_link_loop_runs_n_times(i: usize) {
    let engine = Engine::new();
    let limit = if i.is_multiple_of(50) {
        500
    } else {
        1 + (i % 150) as u32
    };
    let spins = (i % 3) as u32;
    let data = Lap {
        spins,
        ..lap(limit)
    };
    let (outcome, history) = finish_strict(&engine.start(&LOOP, data).await.unwrap()).await;
    let data = completed(outcome, &history);
    assert_eq!(data.n, limit);
    assert_eq!(steps(&history), loop_history(limit), "limit {limit}");
}

multi_thread!(RUNS => a_link_loop_runs_n_times);

/// Already at the limit, the loop still runs once: the condition is checked after
/// the body.
#[tokio::test(start_paused = true)]
async fn a_link_loop_runs_its_body_once_at_least() {
    let engine = Engine::new();
    let data = Lap {
        n: 9,
        limit: 3,
        ..Lap::default()
    };
    let (outcome, history) = finish_strict(&engine.start(&LOOP, data).await.unwrap()).await;
    assert_eq!(completed(outcome, &history).n, 10);
    assert_eq!(steps(&history), loop_history(1));
}

process! {
    /// Two throws of one name lead to its one catch.
    TWO_SOURCES: Lap {
        start     s;
        catch     top: link("top");
        task      bump = |d| async move {
            d.n += 1;
            Ok(())
        };
        exclusive check;
        exclusive which;
        task      on_odd = |d| async move {
            d.odd += 1;
            Ok(())
        };
        task      on_even = |d| async move {
            d.even += 1;
            Ok(())
        };
        throw     from_odd: link("top");
        throw     from_even: link("top");
        end       done;
        s -> bump -> check;
        top -> bump;
        check -> done when |d| d.n >= d.limit;
        check -> which else;
        which -> on_odd when |d| d.n % 2 == 1;
        which -> on_even else;
        on_odd -> from_odd;
        on_even -> from_even;
    }
}

/// Two throws of one name reach the one catch: the loop alternates between them.
async fn two_throws_reach_one_catch(i: usize) {
    let engine = Engine::new();
    let limit = 1 + (i % 40) as u32;
    let (outcome, history) =
        finish_strict(&engine.start(&TWO_SOURCES, lap(limit)).await.unwrap()).await;
    let data = completed(outcome, &history);
    assert_eq!(
        (data.n, data.odd, data.even),
        (limit, limit / 2, (limit - 1) / 2)
    );
    let mut rows = vec![(0, "s", Happening::Started)];
    for k in 1..=limit {
        rows.push((0, "bump", Happening::TaskStarted));
        rows.push((0, "bump", done(&["n"])));
        if k == limit {
            rows.push((0, "check", routed(&["done"])));
            break;
        }
        rows.push((0, "check", routed(&["which"])));
        let (to, field) = if k % 2 == 1 {
            ("on_odd", "odd")
        } else {
            ("on_even", "even")
        };
        rows.push((0, "which", routed(&[to])));
        rows.push((0, to, Happening::TaskStarted));
        rows.push((0, to, done(&[field])));
    }
    rows.push((0, "done", Happening::Ended));
    assert_eq!(steps(&history), rows);
}

multi_thread!(RUNS => two_throws_reach_one_catch);

process! {
    /// A forward jump: the flow goes on on another "page".
    JUMP: Lap {
        start s;
        task  first = |d| async move {
            d.n = 1;
            Ok(())
        };
        throw go: link("page2");
        catch page2: link("page2");
        task  second = |d| async move {
            d.n *= 10;
            Ok(())
        };
        end   e;
        s -> first -> go;
        page2 -> second -> e;
    }
}

/// A forward jump: `second` runs right after `first`, with nothing in between.
#[tokio::test(start_paused = true)]
async fn a_link_jumps_forward() {
    let engine = Engine::new();
    let (outcome, history) =
        finish_strict(&engine.start(&JUMP, Lap::default()).await.unwrap()).await;
    assert_eq!(completed(outcome, &history).n, 10);
    assert_eq!(
        steps(&history),
        [
            (0, "s", Happening::Started),
            (0, "first", Happening::TaskStarted),
            (0, "first", done(&["n"])),
            (0, "second", Happening::TaskStarted),
            (0, "second", done(&["n"])),
            (0, "e", Happening::Ended),
        ]
    );
}

process! {
    /// A fork and a join inside the loop: both branches run on every lap.
    FORKS: Lap {
        start     s;
        catch     top: link("top");
        task      count = |d| async move {
            d.n += 1;
            Ok(())
        };
        parallel  fork;
        task      left = |d| async move {
            yield_jitter().await;
            d.left += 1;
            Ok(())
        };
        task      right = |d| async move {
            yield_jitter().await;
            d.right += 1;
            Ok(())
        };
        parallel  join;
        exclusive more;
        throw     back: link("top");
        end       done;
        s -> count;
        top -> count;
        count -> fork -> left, right;
        left, right -> join -> more;
        more -> back when |d| d.n < d.limit;
        more -> done else;
    }
}

/// A fork and a join inside a link loop: on every lap both branches run (racing, on
/// their own tracks) and the join fires once, merging one token; the join's state is
/// fresh on every lap.
async fn a_fork_and_join_inside_a_link_loop(i: usize) {
    let engine = Engine::new();
    let limit = 1 + (i % 25) as u32;
    let (outcome, history) = finish_strict(&engine.start(&FORKS, lap(limit)).await.unwrap()).await;
    let data = completed(outcome, &history);
    assert_eq!((data.n, data.left, data.right), (limit, limit, limit));
    let laps = limit as usize;
    assert_eq!(history.fired("join"), laps, "{history}");
    assert_eq!(count(&history, "join", &Happening::Merged), laps);
    assert_eq!(count(&history, "join", &Happening::Waiting), laps);
    assert_eq!(completions(&history, "left"), laps);
    assert_eq!(completions(&history, "right"), laps);
    assert_eq!(count(&history, "fork", &routed(&["left", "right"])), laps);
    // One new track per lap (the fork's second branch), each merged at the join.
    assert_eq!(history.tracks(), 1 + laps);
    let more: Vec<_> = history
        .steps()
        .iter()
        .filter(|s| s.node == "more")
        .map(|s| s.what.clone())
        .collect();
    let mut expected = vec![routed(&["back"]); laps - 1];
    expected.push(routed(&["done"]));
    assert_eq!(more, expected);
    assert_eq!(history.ended_at(), ["done"]);
}

multi_thread!(RUNS => a_fork_and_join_inside_a_link_loop);

process! {
    /// One lap per second: a timer catch inside the loop.
    TICKS: Lap {
        start     s;
        catch     top: link("top");
        catch     tick: timer(Duration::from_secs(1));
        task      count = |d| async move {
            d.n += 1;
            Ok(())
        };
        exclusive more;
        throw     back: link("top");
        end       done;
        s -> tick;
        top -> tick;
        tick -> count -> more;
        more -> back when |d| d.n < d.limit;
        more -> done else;
    }
}

/// A timer catch inside the loop is armed anew on every lap: `limit` laps take
/// exactly `limit` seconds on the paused clock.
#[tokio::test(start_paused = true)]
async fn a_timer_inside_a_link_loop_is_armed_on_every_lap() {
    let engine = Engine::new();
    for limit in [1_u32, 4, 12] {
        let t0 = Instant::now();
        let (outcome, history) =
            finish_strict(&engine.start(&TICKS, lap(limit)).await.unwrap()).await;
        assert_eq!(t0.elapsed(), Duration::from_secs(limit.into()));
        assert_eq!(completed(outcome, &history).n, limit);
        let mut rows = vec![(0, "s", Happening::Started)];
        for k in 1..=limit {
            rows.push((0, "tick", Happening::Parked));
            rows.push((0, "tick", caught(&[])));
            rows.push((0, "count", Happening::TaskStarted));
            rows.push((0, "count", done(&["n"])));
            rows.push((
                0,
                "more",
                routed(&[if k < limit { "back" } else { "done" }]),
            ));
        }
        rows.push((0, "done", Happening::Ended));
        assert_eq!(steps(&history), rows);
    }
}

process! {
    /// A user task inside the loop, guarded by a non-interrupting signal boundary.
    GUARDED: Lap {
        start     s;
        catch     top: link("top");
        user      review;
        boundary  ping on review: non_interrupting signal("ping");
        task      note = |d| async move {
            d.pings += 1;
            Ok(())
        };
        end       pinged;
        exclusive more;
        throw     back: link("top");
        end       done;
        s -> review;
        top -> review;
        review -> more;
        more -> back when |d| d.rounds < d.limit;
        more -> done else;
        ping -> note -> pinged;
    }
}

/// A boundary on a user task inside the loop lives exactly as long as each visit: a
/// signal while the task waits reaches its boundary (one catcher), and after the last
/// visit none. Each visit's ping starts one token at the boundary.
async fn a_boundary_inside_a_link_loop_is_armed_on_every_visit(i: usize) {
    // Signals go to every instance of an engine: one engine per run.
    let engine = Engine::new();
    let limit = 1 + (i % 4) as u32;
    let handle = engine.start(&GUARDED, lap(limit)).await.unwrap();
    for round in 1..=limit {
        expect_open_work(&handle, "review").await;
        assert_eq!(
            engine.broadcast_signal("ping", ()).await.unwrap(),
            1,
            "round {round}"
        );
        expect_that(&handle, "the ping was noted", |h| {
            completions(h, "note") == round as usize
        })
        .await;
        handle
            .complete("review", move |d: &mut Lap| d.rounds = round)
            .await
            .expect("review is open");
    }
    let (outcome, history) = finish_strict(&handle).await;
    let data = completed(outcome, &history);
    assert_eq!((data.rounds, data.pings), (limit, limit));
    assert_eq!(spawns(&history, "ping"), limit as usize);
    assert_eq!(completions(&history, "review"), limit as usize);
    assert_eq!(engine.broadcast_signal("ping", ()).await.unwrap(), 0);
}

multi_thread!(RUNS => a_boundary_inside_a_link_loop_is_armed_on_every_visit);
