//! Conditional events at run time (ADR-006 §2.7): evaluated when armed (true then:
//! fires at once), re-evaluated after commits — only those touching a field in `on`
//! when it is given, every commit otherwise — firing on false→true edges, several
//! firings of one commit applied in arming order.
//!
//! The commits are driven from outside through a user task `set` in a link loop, so
//! each one is a commit of its own. A conditional boundary's firing is recorded in
//! the very loop step of the commit that caused it (`Spawned` or `Interrupted` right
//! after the commit's `Completed`), so those histories are exact; an intermediate
//! catch's firing shows later (its `Caught` comes from its track), so a task behind
//! the catch stamps the data it sees and the test never commits again until the
//! stamp is in — which pins down the commit that fired it.
//!
//! Two ignored tests pin engine bugs: a condition true when armed is first evaluated
//! only after a commit later in the same loop step (so a sibling task that is ready
//! at once can falsify it before it is ever looked at), and a conditional boundary on
//! a task whose handler is ready at once is armed and disarmed without being
//! evaluated.

// `i.is_multiple_of(n)` needs Rust 1.87; the workspace's MSRV is 1.85.
#![allow(clippy::manual_is_multiple_of)]

#[macro_use]
mod common;

use std::time::Duration;

use common::*;
use thresh::{process, Engine, Happening, History, InstanceError, InstanceHandle, ProcessData};
use tokio::time::Instant;

#[derive(Clone, Debug, Default, PartialEq, ProcessData)]
struct Gauge {
    id: String,
    a: u32,
    b: u32,
    gate: bool,
    finished: bool,
    seen_a: u32,
    seen_b: u32,
    seen_gate: bool,
    level: u32,
    temp: u32,
    x: u32,
    alarms: u32,
    rounds: u32,
    limit: u32,
}

process! {
    /// Fires when `a >= 1 && gate`, but re-evaluated only on commits that change `a`.
    FILTERED: Gauge {
        start     s;
        parallel  fork;
        catch     ready: condition(|d| d.a >= 1 && d.gate, on = [a]);
        task      stamp = |d| async move {
            d.seen_a = d.a;
            d.seen_b = d.b;
            d.seen_gate = d.gate;
            Ok(())
        };
        catch     top: link("set");
        user      set;
        exclusive more;
        throw     again: link("set");
        parallel  join;
        end       e;
        s -> fork -> ready, set;
        top -> set;
        ready -> stamp -> join;
        set -> more;
        more -> again when |d| !d.finished;
        more -> join else;
        join -> e;
    }

    /// The same condition, re-evaluated on every commit.
    UNFILTERED: Gauge {
        start     s;
        parallel  fork;
        catch     ready: condition(|d| d.a >= 1 && d.gate);
        task      stamp = |d| async move {
            d.seen_a = d.a;
            d.seen_b = d.b;
            d.seen_gate = d.gate;
            Ok(())
        };
        catch     top: link("set");
        user      set;
        exclusive more;
        throw     again: link("set");
        parallel  join;
        end       e;
        s -> fork -> ready, set;
        top -> set;
        ready -> stamp -> join;
        set -> more;
        more -> again when |d| !d.finished;
        more -> join else;
        join -> e;
    }

    /// The same condition, re-evaluated on commits that change `a` or `gate`.
    BOTH_FIELDS: Gauge {
        start     s;
        parallel  fork;
        catch     ready: condition(|d| d.a >= 1 && d.gate, on = [a, gate]);
        task      stamp = |d| async move {
            d.seen_a = d.a;
            d.seen_b = d.b;
            d.seen_gate = d.gate;
            Ok(())
        };
        catch     top: link("set");
        user      set;
        exclusive more;
        throw     again: link("set");
        parallel  join;
        end       e;
        s -> fork -> ready, set;
        top -> set;
        ready -> stamp -> join;
        set -> more;
        more -> again when |d| !d.finished;
        more -> join else;
        join -> e;
    }

    /// A catch whose condition may already hold when the token arrives.
    ALREADY: Gauge {
        start s;
        catch ready: condition(|d| d.level >= 3, on = [level]);
        end   e;
        s -> ready -> e;
    }

    /// The catch is armed anew on every lap of a link loop.
    REVISIT: Gauge {
        start     s;
        catch     top: link("top");
        catch     ready: condition(|d| d.level >= 3, on = [level]);
        task      count = |d| async move {
            d.rounds += 1;
            Ok(())
        };
        exclusive more;
        throw     back: link("top");
        end       e;
        s -> ready;
        top -> ready;
        ready -> count -> more;
        more -> back when |d| d.rounds < d.limit;
        more -> e else;
    }

    /// True when the catch is armed; a sibling branch's task, ready at once, makes it
    /// false in the same loop step.
    FLEETING: Gauge {
        start    s;
        parallel fork;
        catch    ready: condition(|d| d.x == 0);
        task     spoil = |d| async move {
            d.x = 1;
            Ok(())
        };
        parallel join;
        end      e;
        s -> fork -> ready, spoil;
        ready, spoil -> join -> e;
    }

    /// The same, but the sibling's task has to wait before it commits.
    FLEETING_LATER: Gauge {
        start    s;
        parallel fork;
        catch    ready: condition(|d| d.x == 0);
        task     spoil = |d| async move {
            tokio::task::yield_now().await;
            d.x = 1;
            Ok(())
        };
        parallel join;
        end      e;
        s -> fork -> ready, spoil;
        ready, spoil -> join -> e;
    }

    /// A non-interrupting conditional boundary on a user task; `set` moves `temp`.
    EDGE: Gauge {
        start     s;
        parallel  fork;
        user      review;
        boundary  hot on review: non_interrupting condition(|d| d.temp > 100, on = [temp]);
        task      alarm = |d| async move {
            d.alarms += 1;
            Ok(())
        };
        end       alarmed;
        end       reviewed;
        catch     top: link("set");
        user      set;
        exclusive more;
        throw     again: link("set");
        end       set_done;
        s -> fork -> review, set;
        review -> reviewed;
        hot -> alarm -> alarmed;
        top -> set;
        set -> more;
        more -> again when |d| !d.finished;
        more -> set_done else;
    }

    /// An interrupting conditional boundary on a user task.
    OVERHEAT: Gauge {
        start     s;
        parallel  fork;
        user      review;
        boundary  too_hot on review: condition(|d| d.temp > 100, on = [temp]);
        end       stopped;
        end       reviewed;
        catch     top: link("set");
        user      set;
        exclusive more;
        throw     again: link("set");
        end       set_done;
        s -> fork -> review, set;
        review -> reviewed;
        too_hot -> stopped;
        top -> set;
        set -> more;
        more -> again when |d| !d.finished;
        more -> set_done else;
    }

    /// Two activities with a conditional boundary each, declared in one order and
    /// armed in the order the test opens them.
    ORDER: Gauge {
        start    s;
        parallel fork;
        user     open_b;
        user     b_wait;
        boundary on_b on b_wait: non_interrupting condition(|d| d.level >= 1, on = [level]);
        user     open_a;
        user     a_wait;
        boundary on_a on a_wait: non_interrupting condition(|d| d.level >= 1, on = [level]);
        user     set;
        end      b_end;
        end      a_end;
        end      on_b_end;
        end      on_a_end;
        end      set_end;
        s -> fork -> open_b, open_a, set;
        open_b -> b_wait -> b_end;
        open_a -> a_wait -> a_end;
        on_b -> on_b_end;
        on_a -> on_a_end;
        set -> set_end;
    }

    /// One commit makes both boundaries of `hold` true; the interrupting one is armed
    /// first and withdraws the other.
    VOID: Gauge {
        start    s;
        parallel fork;
        user     hold;
        boundary stop on hold: condition(|d| d.level >= 1, on = [level]);
        boundary note on hold: non_interrupting condition(|d| d.level >= 1, on = [level]);
        user     set;
        end      held;
        end      stopped;
        end      noted;
        end      set_end;
        s -> fork -> hold, set;
        hold -> held;
        stop -> stopped;
        note -> noted;
        set -> set_end;
    }

    /// The same with the non-interrupting boundary armed first: both fire.
    KEEP: Gauge {
        start    s;
        parallel fork;
        user     hold;
        boundary note on hold: non_interrupting condition(|d| d.level >= 1, on = [level]);
        boundary stop on hold: condition(|d| d.level >= 1, on = [level]);
        user     set;
        end      held;
        end      stopped;
        end      noted;
        end      set_end;
        s -> fork -> hold, set;
        hold -> held;
        stop -> stopped;
        note -> noted;
        set -> set_end;
    }

    /// A conditional boundary interrupts a running task's handler.
    RUNAWAY: Gauge {
        start    s;
        parallel fork;
        task     long = |d| async move {
            tokio::time::sleep(Duration::from_secs(60)).await;
            d.x = 7;
            Ok(())
        };
        boundary too_hot on long: condition(|d| d.temp > 100, on = [temp]);
        catch    later: timer(Duration::from_secs(5));
        task     heat = |d| async move {
            d.temp = 150;
            Ok(())
        };
        end      long_end;
        end      hot_end;
        end      heat_end;
        s -> fork -> long, later;
        later -> heat -> heat_end;
        long -> long_end;
        too_hot -> hot_end;
    }

    /// A conditional arm of an event-based gateway races a message arm.
    GATE: Gauge {
        start       s;
        parallel    fork;
        event_based gate;
        catch       warm: condition(|d| d.temp > 100, on = [temp]);
        catch       told: message("enough", key = |d| d.id.clone());
        end         warm_end;
        end         told_end;
        catch       top: link("set");
        user        set;
        exclusive   more;
        throw       again: link("set");
        end         set_done;
        s -> fork -> gate, set;
        gate -> warm, told;
        warm -> warm_end;
        told -> told_end;
        top -> set;
        set -> more;
        more -> again when |d| !d.finished;
        more -> set_done else;
    }

    /// An interrupting conditional boundary on a task whose handler is ready at once.
    AT_START: Gauge {
        start    s;
        task     quick = |d| async move {
            d.x = 1;
            Ok(())
        };
        boundary hot on quick: condition(|d| d.temp > 100, on = [temp]);
        end      done;
        end      hot_end;
        s -> quick -> done;
        hot -> hot_end;
    }

    /// The same, but the handler has to wait first.
    AT_START_LATER: Gauge {
        start    s;
        task     quick = |d| async move {
            tokio::task::yield_now().await;
            d.x = 1;
            Ok(())
        };
        boundary hot on quick: condition(|d| d.temp > 100, on = [temp]);
        end      done;
        end      hot_end;
        s -> quick -> done;
        hot -> hot_end;
    }

    /// A non-interrupting one on a task whose handler is ready at once.
    AT_START_NON_INTERRUPTING: Gauge {
        start    s;
        task     quick = |d| async move {
            d.x = 1;
            Ok(())
        };
        boundary warm on quick: non_interrupting condition(|d| d.temp > 100, on = [temp]);
        end      done;
        end      warm_end;
        s -> quick -> done;
        warm -> warm_end;
    }

    /// An interrupting one on a user task.
    AT_START_USER: Gauge {
        start    s;
        user     review;
        boundary hot on review: condition(|d| d.temp > 100, on = [temp]);
        end      done;
        end      hot_end;
        s -> review -> done;
        hot -> hot_end;
    }

    /// A condition that panics.
    PANICKY: Gauge {
        start s;
        catch ready: condition(|d| {
            if d.level == 0 {
                panic!("no level yet");
            }
            true
        });
        end   e;
        s -> ready -> e;
    }
}

/// Complete the next lap of the `set` loop with `update`, and wait until the loop is
/// back at `set` (the commit and every firing it caused are done; a catch's `Caught`
/// may still be on its way).
async fn set(handle: &InstanceHandle<Gauge>, update: impl FnOnce(&mut Gauge) + Send + 'static) {
    let before = completions(&handle.history().await, "set");
    complete(handle, "set", update).await;
    until(handle, "`set` committed", |h| {
        completions(h, "set") == before + 1
    })
    .await;
}

/// Leave the `set` loop.
async fn finish_setting(handle: &InstanceHandle<Gauge>) {
    complete(handle, "set", |d: &mut Gauge| d.finished = true).await;
}

/// Whether the catch `ready` has been caught and its stamp is in.
fn stamped(history: &History) -> bool {
    completions(history, "stamp") == 1
}

/// After a commit that must not fire `ready`: nothing caught and no stamp, even after
/// every ready task ran (exact on the paused clock).
async fn not_fired(handle: &InstanceHandle<Gauge>, after: &str) {
    settle().await;
    let history = handle.history().await;
    assert_eq!(
        count(&history, "ready", &caught(&[])),
        0,
        "`ready` fired after {after}\n{history}"
    );
    assert!(!stamped(&history), "`ready` fired after {after}\n{history}");
}

/// The four commits of the filter scenarios: `a = 1` (the condition is still false),
/// `b = 5` (unrelated), `gate = true` (true now; a field the filtered catch does not
/// watch), `a = 2` (a watched field). `fires_at` is the commit (1-based) that must fire
/// the catch; the stamp shows what the data was when it fired.
async fn filter_scenario(process: &'static thresh::Process<Gauge>, fires_at: usize) {
    let engine = Engine::new();
    let handle = engine.start(process, Gauge::default());
    let commits: [fn(&mut Gauge); 4] = [|d| d.a = 1, |d| d.b = 5, |d| d.gate = true, |d| d.a = 2];
    for (n, commit) in commits.into_iter().enumerate() {
        let n = n + 1;
        set(&handle, commit).await;
        if n < fires_at {
            not_fired(&handle, &format!("commit {n}")).await;
        } else if n == fires_at {
            // Fired: wait for its stamp before any further commit.
            until(&handle, "`ready` fired and stamped", stamped).await;
        }
    }
    finish_setting(&handle).await;
    let (outcome, history) = finish_strict(&handle).await;
    let data = completed(outcome, &history);
    let expected_a = if fires_at == 4 { 2 } else { 1 };
    assert_eq!(
        (data.seen_a, data.seen_b, data.seen_gate),
        (expected_a, 5, true),
        "fired on the wrong commit\n{history}"
    );
    assert_eq!(count(&history, "ready", &Happening::Parked), 1);
    assert_eq!(count(&history, "ready", &caught(&[])), 1);
    // The catch was caught after the commit that fired it.
    let sets = indices(&history, "set", |h| {
        matches!(h, Happening::Completed { .. })
    });
    assert_eq!(sets.len(), 5);
    let caught_at = index_of(&history, "ready", &caught(&[]));
    assert!(
        caught_at > sets[fires_at - 1] && caught_at < sets[fires_at],
        "{history}"
    );
}

/// `on = [a]`: commits to `b` and `gate` are not looked at, though `gate = true`
/// makes the condition true; the next commit to `a` fires it.
async fn a_filtered_condition_fires_only_on_commits_to_its_fields(_: usize) {
    filter_scenario(&FILTERED, 4).await;
}

/// Without `on` every commit re-evaluates: `gate = true` fires it.
async fn an_unfiltered_condition_fires_on_any_commit(_: usize) {
    filter_scenario(&UNFILTERED, 3).await;
}

/// `on = [a, gate]`: the commit to `gate` fires it.
async fn a_condition_watching_two_fields_fires_on_either(_: usize) {
    filter_scenario(&BOTH_FIELDS, 3).await;
}

both_runtimes!(RUNS => a_filtered_condition_fires_only_on_commits_to_its_fields,
    an_unfiltered_condition_fires_on_any_commit,
    a_condition_watching_two_fields_fires_on_either);

/// True when armed: the catch fires at once, though no commit touches `level`.
/// False when armed: it waits (and nothing else ever commits here).
#[tokio::test(start_paused = true)]
async fn a_condition_true_when_armed_fires_at_once() {
    let engine = Engine::new();
    let data = Gauge {
        level: 5,
        ..Gauge::default()
    };
    let (outcome, history) = finish_strict(&engine.start(&ALREADY, data)).await;
    completed(outcome, &history);
    assert_eq!(
        steps(&history),
        [
            (0, "s", Happening::Started),
            (0, "ready", Happening::Parked),
            (0, "ready", caught(&[])),
            (0, "e", Happening::Ended),
        ]
    );

    let waiting = engine.start(&ALREADY, Gauge::default());
    tokio::time::sleep(Duration::from_secs(3600)).await;
    assert!(!waiting.is_finished());
    assert_eq!(
        steps(&waiting.history().await),
        [
            (0, "s", Happening::Started),
            (0, "ready", Happening::Parked)
        ]
    );
    waiting.cancel();
    let (outcome, _) = finish_strict(&waiting).await;
    assert_eq!(outcome.kind(), "cancelled");
}

/// Each visit arms the catch anew, with its own edge state: a condition that stays
/// true fires on every visit.
async fn a_condition_armed_on_every_visit_fires_on_every_visit(i: usize) {
    let engine = Engine::new();
    let limit = 1 + (i % 30) as u32;
    let data = Gauge {
        level: 3,
        limit,
        ..Gauge::default()
    };
    let (outcome, history) = finish_strict(&engine.start(&REVISIT, data)).await;
    assert_eq!(completed(outcome, &history).rounds, limit);
    let mut rows = vec![(0, "s", Happening::Started)];
    for k in 1..=limit {
        rows.push((0, "ready", Happening::Parked));
        rows.push((0, "ready", caught(&[])));
        rows.push((0, "count", Happening::TaskStarted));
        rows.push((0, "count", done(&["rounds"])));
        rows.push((0, "more", routed(&[if k < limit { "back" } else { "e" }])));
    }
    rows.push((0, "e", Happening::Ended));
    assert_eq!(steps(&history), rows);
}

multi_thread!(RUNS => a_condition_armed_on_every_visit_fires_on_every_visit);

/// True when armed — and a sibling's commit in the same loop step makes it false.
/// ADR-006 §2.7: the condition is evaluated once when the subscription is armed and
/// an already-true one fires at once; so `ready` fires and the join completes.
#[tokio::test(start_paused = true)]
async fn a_condition_true_when_armed_fires_even_if_a_same_step_commit_falsifies_it() {
    let engine = Engine::new();
    let (outcome, history) = finish_strict(&engine.start(&FLEETING, Gauge::default())).await;
    assert_eq!(completed(outcome, &history).x, 1);
    assert_eq!(count(&history, "ready", &caught(&[])), 1, "{history}");
}

/// The same process where the sibling's task commits in a later step: the catch was
/// evaluated true when armed and fired.
#[tokio::test(start_paused = true)]
async fn a_condition_true_when_armed_fires_before_a_later_commit_falsifies_it() {
    let engine = Engine::new();
    let (outcome, history) = finish_strict(&engine.start(&FLEETING_LATER, Gauge::default())).await;
    assert_eq!(completed(outcome, &history).x, 1);
    assert_eq!(count(&history, "ready", &caught(&[])), 1, "{history}");
}

/// A temperature sequence for run `i`, from a small LCG: values around the 100 line.
fn temperatures(i: usize) -> Vec<u32> {
    let mut state = i as u64 * 2_654_435_761 + 1;
    (0..6 + i % 5)
        .map(|_| {
            state = state
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1);
            [0, 50, 100, 101, 120, 150, 200][(state >> 33) as usize % 7]
        })
        .collect()
}

/// Which of the commits setting `temps` (from 0) are false→true edges of `temp > 100`.
/// A value equal to the previous one is no change, hence no commit.
fn edges(temps: &[u32]) -> Vec<bool> {
    let mut last = 0;
    temps
        .iter()
        .filter_map(|&t| {
            if t == last {
                return None;
            }
            let edge = last <= 100 && t > 100;
            last = t;
            Some(edge)
        })
        .collect()
}

/// The edge rule (ADR-006 §2.7): a non-interrupting conditional boundary fires on
/// every false→true edge of its condition while its activity waits — and not while
/// it stays true. Each firing is recorded in the step of the commit that caused it.
/// Once the activity is done, no commit fires it.
async fn a_non_interrupting_condition_fires_on_each_edge(i: usize) {
    let engine = Engine::new();
    let handle = engine.start(&EDGE, Gauge::default());
    let temps = temperatures(i);
    let expected = edges(&temps);
    let mut fired = 0;
    for &t in &temps {
        set(&handle, move |d| d.temp = t).await;
        let history = handle.history().await;
        fired = spawns(&history, "hot");
        // Wait for the alarm before the next commit: it commits `alarms`, a field the
        // condition does not watch.
        until(&handle, "every alarm rang", |h| {
            completions(h, "alarm") == fired
        })
        .await;
    }
    assert_eq!(fired, expected.iter().filter(|e| **e).count());
    complete(&handle, "review", |_: &mut Gauge| {}).await;
    until(&handle, "review completed", |h| {
        completions(h, "review") == 1
    })
    .await;
    // The boundary went with the activity: a fresh edge fires nothing.
    set(&handle, |d| d.temp = 1).await;
    set(&handle, |d| d.temp = 500).await;
    finish_setting(&handle).await;
    let (outcome, history) = finish_strict(&handle).await;
    let data = completed(outcome, &history);
    assert_eq!(data.alarms as usize, fired);
    assert_eq!(spawns(&history, "hot"), fired);
    // Every firing right after the commit that made the edge, in that step.
    let all = history.steps();
    let commits: Vec<usize> = indices(
        &history,
        "set",
        |h| matches!(h, Happening::Completed { changed } if changed == &["temp"]),
    );
    let after: Vec<bool> = commits
        .iter()
        .map(|&c| all[c + 1].node == "hot" && all[c + 1].what == spawned(0))
        .collect();
    let mut expected = expected;
    expected.extend([false, false]);
    assert_eq!(after, expected, "temps {temps:?}\n{history}");
}

both_runtimes!(RUNS => a_non_interrupting_condition_fires_on_each_edge);

/// An interrupting conditional boundary stops its user task in the step of the
/// commit that made it true; a later edge does nothing.
async fn an_interrupting_condition_stops_its_activity(_: usize) {
    let engine = Engine::new();
    let handle = engine.start(&OVERHEAT, Gauge::default());
    set(&handle, |d| d.temp = 90).await;
    set(&handle, |d| d.temp = 150).await;
    until(&handle, "the boundary's token ended", |h| {
        count(h, "stopped", &Happening::Ended) == 1
    })
    .await;
    assert!(!handle.open_work().await.iter().any(|w| w.node == "review"));
    assert_eq!(
        handle.complete("review", |_: &mut Gauge| {}).await,
        Err(thresh::WorkError::NoOpenWork {
            node: "review".into()
        })
    );
    set(&handle, |d| d.temp = 0).await;
    set(&handle, |d| d.temp = 300).await;
    finish_setting(&handle).await;
    let (outcome, history) = finish_strict(&handle).await;
    completed(outcome, &history);
    let rows = steps(&history);
    assert_eq!(
        rows[..11],
        [
            (0, "s", Happening::Started),
            (0, "fork", routed(&["review", "set"])),
            (1, "fork", spawned(0)),
            (0, "review", Happening::Parked),
            (1, "set", Happening::Parked),
            (1, "set", done(&["temp"])),
            (1, "more", routed(&["again"])),
            (1, "set", Happening::Parked),
            (1, "set", done(&["temp"])),
            (0, "review", interrupted("too_hot")),
            (2, "too_hot", spawned(0)),
        ]
    );
    assert_eq!(count(&history, "too_hot", &caught(&[])), 1);
    assert_eq!(spawns(&history, "too_hot"), 1);
    assert_eq!(completions(&history, "review"), 0);
}

both_runtimes!(RUNS => an_interrupting_condition_stops_its_activity);

/// One commit fires two boundaries: in the order they were armed, not the order they
/// were declared — both `Spawned` steps right after the commit.
async fn two_firings_of_one_commit_go_in_arming_order(i: usize) {
    let engine = Engine::new();
    let handle = engine.start(&ORDER, Gauge::default());
    let a_first = i % 2 == 0;
    let (first, second) = if a_first {
        (("open_a", "a_wait"), ("open_b", "b_wait"))
    } else {
        (("open_b", "b_wait"), ("open_a", "a_wait"))
    };
    complete(&handle, first.0, |_: &mut Gauge| {}).await;
    open(&handle, first.1).await;
    complete(&handle, second.0, |_: &mut Gauge| {}).await;
    open(&handle, second.1).await;
    complete(&handle, "set", |d: &mut Gauge| d.level = 1).await;
    until(&handle, "`set` committed", |h| completions(h, "set") == 1).await;
    complete(&handle, "a_wait", |_: &mut Gauge| {}).await;
    complete(&handle, "b_wait", |_: &mut Gauge| {}).await;
    let (outcome, history) = finish_strict(&handle).await;
    completed(outcome, &history);
    let all = history.steps();
    let c = index_of(&history, "set", &done(&["level"]));
    let fired: Vec<&str> = all[c + 1..c + 3].iter().map(|s| s.node).collect();
    let expected = if a_first {
        ["on_a", "on_b"]
    } else {
        ["on_b", "on_a"]
    };
    assert_eq!(fired, expected, "{history}");
    assert!(all[c + 1..c + 3]
        .iter()
        .all(|s| matches!(s.what, Happening::Spawned { .. })));
    assert_eq!((spawns(&history, "on_a"), spawns(&history, "on_b")), (1, 1));
}

both_runtimes!(RUNS => two_firings_of_one_commit_go_in_arming_order);

/// The history of `VOID`/`KEEP` up to the commit of `set`.
fn hold_prefix() -> Vec<Row> {
    vec![
        (0, "s", Happening::Started),
        (0, "fork", routed(&["hold", "set"])),
        (1, "fork", spawned(0)),
        (0, "hold", Happening::Parked),
        (1, "set", Happening::Parked),
        (1, "set", done(&["level"])),
    ]
}

/// An interrupting firing withdraws a later-armed subscription of the same commit:
/// `stop` (armed first) interrupts `hold`, and `note`, also true now, never fires.
async fn an_interrupting_firing_voids_a_later_armed_one(_: usize) {
    let engine = Engine::new();
    let handle = engine.start(&VOID, Gauge::default());
    open(&handle, "hold").await;
    complete(&handle, "set", |d: &mut Gauge| d.level = 1).await;
    let (outcome, history) = finish_strict(&handle).await;
    completed(outcome, &history);
    let mut rows = hold_prefix();
    rows.extend([
        (0, "hold", interrupted("stop")),
        (2, "stop", spawned(0)),
        (1, "set_end", Happening::Ended),
        (2, "stop", caught(&[])),
        (2, "stopped", Happening::Ended),
    ]);
    assert_eq!(steps(&history), rows);
}

/// Armed the other way round, the non-interrupting one fires first and both go.
async fn a_non_interrupting_firing_armed_first_still_goes(_: usize) {
    let engine = Engine::new();
    let handle = engine.start(&KEEP, Gauge::default());
    open(&handle, "hold").await;
    complete(&handle, "set", |d: &mut Gauge| d.level = 1).await;
    let (outcome, history) = finish_strict(&handle).await;
    completed(outcome, &history);
    let rows = steps(&history);
    let mut prefix = hold_prefix();
    prefix.extend([
        (0, "note", spawned(0)),
        (0, "hold", interrupted("stop")),
        (3, "stop", spawned(0)),
        (1, "set_end", Happening::Ended),
    ]);
    // `note` and `stop` forked tracks 2 and 3; `note` is track 2.
    prefix[6].0 = 2;
    assert_eq!(rows[..prefix.len()], prefix[..], "{history}");
    let mut rest: Vec<Row> = rows[prefix.len()..].to_vec();
    rest.sort_by_key(|r| r.0);
    assert_eq!(
        rest,
        [
            (2, "note", caught(&[])),
            (2, "noted", Happening::Ended),
            (3, "stop", caught(&[])),
            (3, "stopped", Happening::Ended),
        ]
    );
}

both_runtimes!(RUNS => an_interrupting_firing_voids_a_later_armed_one,
    a_non_interrupting_firing_armed_first_still_goes);

/// A conditional boundary interrupts a task whose handler is still running: at the
/// 5 s commit, long before the handler would end; its write never lands.
#[tokio::test(start_paused = true)]
async fn a_conditional_boundary_interrupts_a_running_task() {
    let engine = Engine::new();
    let t0 = Instant::now();
    let (outcome, history) = finish_strict(&engine.start(&RUNAWAY, Gauge::default())).await;
    assert_eq!(t0.elapsed(), Duration::from_secs(5));
    let data = completed(outcome, &history);
    assert_eq!((data.temp, data.x), (150, 0));
    assert_eq!(
        steps(&history),
        [
            (0, "s", Happening::Started),
            (0, "fork", routed(&["long", "later"])),
            (1, "fork", spawned(0)),
            (0, "long", Happening::TaskStarted),
            (1, "later", Happening::Parked),
            (1, "later", caught(&[])),
            (1, "heat", Happening::TaskStarted),
            (1, "heat", done(&["temp"])),
            (0, "long", interrupted("too_hot")),
            (2, "too_hot", spawned(0)),
            (1, "heat_end", Happening::Ended),
            (2, "too_hot", caught(&[])),
            (2, "hot_end", Happening::Ended),
        ]
    );
}

/// A conditional arm of an event-based gateway: the commit that makes it true wins
/// the gateway (the choice is recorded in that step); when the message arm wins
/// first, the condition is disarmed and a later edge does nothing.
async fn a_conditional_gateway_arm_races_a_message(i: usize) {
    let engine = Engine::new();
    let id = format!("gate-{i}");
    let handle = engine.start(
        &GATE,
        Gauge {
            id: id.clone(),
            ..Gauge::default()
        },
    );
    until(&handle, "the gateway waits", |h| {
        count(h, "gate", &Happening::Parked) == 1
    })
    .await;
    let message_first = i % 2 == 1;
    if message_first {
        assert_eq!(
            engine.publish_message("enough", &id, ()),
            thresh::Published::Delivered
        );
        until(&handle, "the message arm won", |h| {
            count(h, "told_end", &Happening::Ended) == 1
        })
        .await;
    }
    set(&handle, |d| d.temp = 50).await;
    set(&handle, |d| d.temp = 150).await;
    finish_setting(&handle).await;
    let (outcome, history) = finish_strict(&handle).await;
    completed(outcome, &history);
    let routes: Vec<Happening> = history
        .steps()
        .iter()
        .filter(|s| s.node == "gate")
        .map(|s| s.what.clone())
        .collect();
    if message_first {
        assert_eq!(routes, [Happening::Parked, routed(&["told"])]);
        assert_eq!(history.ended_at(), ["told_end", "set_done"]);
    } else {
        assert_eq!(routes, [Happening::Parked, routed(&["warm"])]);
        // Chosen in the step of the commit that made the condition true.
        let c = indices(&history, "set", |h| *h == done(&["temp"]))[1];
        let next = &history.steps()[c + 1];
        assert_eq!(
            (next.node, &next.what),
            ("gate", &routed(&["warm"])),
            "{history}"
        );
        assert_eq!(history.ended_at().len(), 2);
        assert_eq!(count(&history, "warm_end", &Happening::Ended), 1);
        // The message arm is gone: the message waits in the broker.
        assert_eq!(
            engine.publish_message("enough", &id, ()),
            thresh::Published::Buffered
        );
    }
}

both_runtimes!(RUNS => a_conditional_gateway_arm_races_a_message);

/// A condition that panics fails the instance, naming the catch.
#[tokio::test(start_paused = true)]
async fn a_panicking_condition_fails_the_instance() {
    let engine = Engine::new();
    let (outcome, history) = finish_strict(&engine.start(&PANICKY, Gauge::default())).await;
    assert_eq!(
        failed(outcome, &history),
        InstanceError::TaskPanicked {
            node: "ready",
            message: "no level yet".into()
        }
    );
    let data = Gauge {
        level: 1,
        ..Gauge::default()
    };
    let (outcome, history) = finish_strict(&engine.start(&PANICKY, data)).await;
    completed(outcome, &history);
}

/// The rows of an activity `at` stopped when armed by the boundary `by`.
fn stopped_at_start(at: &'static str, started: Happening, by: &'static str) -> Vec<Row> {
    vec![
        (0, "s", Happening::Started),
        (0, at, started),
        (0, at, interrupted(by)),
        (1, by, spawned(0)),
        (1, by, caught(&[])),
        (1, "hot_end", Happening::Ended),
    ]
}

/// An interrupting conditional boundary that is true when its activity starts fires
/// at once: a user task is withdrawn as soon as it waits, a task whose handler has to
/// wait is stopped before its handler's write.
#[tokio::test(start_paused = true)]
async fn a_boundary_condition_true_at_the_start_stops_its_activity() {
    let engine = Engine::new();
    let hot = Gauge {
        temp: 150,
        ..Gauge::default()
    };
    let (outcome, history) = finish_strict(&engine.start(&AT_START_USER, hot.clone())).await;
    completed(outcome, &history);
    assert_eq!(
        steps(&history),
        stopped_at_start("review", Happening::Parked, "hot")
    );

    let (outcome, history) = finish_strict(&engine.start(&AT_START_LATER, hot.clone())).await;
    assert_eq!(completed(outcome, &history).x, 0);
    assert_eq!(
        steps(&history),
        stopped_at_start("quick", Happening::TaskStarted, "hot")
    );

    // False at the start: the task completes.
    let (outcome, history) = finish_strict(&engine.start(&AT_START_LATER, Gauge::default())).await;
    assert_eq!(completed(outcome, &history).x, 1);
    assert_eq!(history.ended_at(), ["done"]);
}

/// The same when the task's handler is ready at once: the boundary is armed before
/// the handler runs (ADR-006 §2.3: on entering the activity) and is true then, so it
/// fires — the interrupting one stops the task, the non-interrupting one starts a
/// token.
#[tokio::test(start_paused = true)]
async fn a_boundary_condition_true_at_the_start_fires_even_for_a_task_ready_at_once() {
    let engine = Engine::new();
    let hot = Gauge {
        temp: 150,
        ..Gauge::default()
    };
    let (outcome, history) =
        finish_strict(&engine.start(&AT_START_NON_INTERRUPTING, hot.clone())).await;
    completed(outcome, &history);
    assert_eq!(spawns(&history, "warm"), 1, "{history}");

    let (outcome, history) = finish_strict(&engine.start(&AT_START, hot)).await;
    assert_eq!(completed(outcome, &history).x, 0, "{history}");
    assert_eq!(
        steps(&history),
        stopped_at_start("quick", Happening::TaskStarted, "hot")
    );
}
