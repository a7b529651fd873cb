//! OR-joins and complex joins around and inside scopes (probes that each passed when
//! written): an OR-join after a sub-process that may end in an error caught by its
//! boundary; an OR-join inside an event sub-process run twice (each run counts its own
//! tokens); a join reached both through and around a sub-process; a sub-process and its
//! non-interrupting boundary feeding one join (0, 1, 2 ticks); an OR-join after a loop
//! through a sub-process; an OR-join inside fed by a nested sub-process and its
//! boundary; an interrupting event sub-process inside the awaited sub-process (and that
//! raced 200 times); a complex join requiring a nested sub-process. (A join on a loop
//! back through a boundary is a compile error: tests/ui/scope_*_on_cycle_through_boundary.)

use super::*;
use crate::common::{complete, completed, count, expect_open_work, expect_that, settle, HANG};

#[derive(Clone, Debug, Default, PartialEq, ProcessData)]
struct R {
    id: String,
    a: u32,
    x: u32,
    y: u32,
    n: u32,
    limit: u32,
    want_x: bool,
    want_y: bool,
    bad: bool,
}

async fn finish<D: Clone + std::fmt::Debug>(handle: &InstanceHandle<D>) -> (Outcome<D>, History) {
    let Ok(outcome) = tokio::time::timeout(HANG, handle.outcome()).await else {
        panic!("hung; history so far:\n{}", handle.history().await);
    };
    let history = handle.history().await;
    common::check_scoped_history(&history, &outcome);
    (outcome, history)
}

fn r(id: &str) -> R {
    R {
        id: id.into(),
        ..R::default()
    }
}

process! {
    /// P1: an OR-join after a sub-process whose inner path may end in an error end
    /// caught by an error boundary that does not lead to the join.
    MAY_ERR: R {
        start s;
        inclusive os;
        subprocess sub {
            start s1;
            user wait_in;
            exclusive g;
            end ok;
            end bad: error("BAD");
            s1 -> wait_in -> g;
            g -> bad when |c| c.bad;
            g -> ok else;
        }
        boundary oops on sub: error("BAD");
        task quick = |c| async move { c.x += 1; Ok(()) };
        inclusive oj;
        end done;
        end oops_end;
        s -> os;
        os -> sub when |c| c.want_x;
        os -> quick when |c| c.want_y;
        sub -> oj;
        quick -> oj;
        oj -> done;
        oops -> oops_end;
    }
}

#[tokio::test(start_paused = true)]
async fn or_join_after_a_sub_process_that_may_error() {
    for bad in [false, true] {
        let engine = Engine::new();
        let data = R {
            want_x: true,
            want_y: true,
            bad,
            ..r("p1")
        };
        let handle = engine.start(&MAY_ERR, data).await.unwrap();
        expect_open_work(&handle, "wait_in").await;
        expect_that(&handle, "quick waits at oj", |h| {
            count(h, "oj", &Happening::Waiting) == 1
        })
        .await;
        settle().await;
        assert_eq!(
            handle.history().await.fired("oj"),
            0,
            "fired before the sub-process ended"
        );
        complete(&handle, "wait_in", |_: &mut R| {}).await;
        let (outcome, history) = finish(&handle).await;
        completed(outcome, &history);
        assert_eq!(history.fired("oj"), 1, "{history}");
        let mut ended = history.ended_at();
        ended.sort_unstable();
        if bad {
            assert_eq!(ended, ["done", "oops_end"], "{history}");
        } else {
            assert_eq!(ended, ["done", "ok"], "{history}");
        }
    }
}

process! {
    /// P2: an OR-join inside a non-interrupting event sub-process, run twice.
    ESP_OR: R {
        start s;
        user main_wait;
        end done;
        s -> main_wait -> done;
        event_subprocess on_ping {
            start ping: non_interrupting signal("ping", apply = |c, n: &u32| c.n = *n);
            inclusive es;
            user ux;
            task quick = |c| async move { c.x += 1; Ok(()) };
            inclusive ej;
            end pe;
            ping -> es;
            es -> ux when |c| c.n == 1;
            es -> quick when |c| c.n >= 1;
            ux, quick -> ej -> pe;
        }
    }
}

#[tokio::test(start_paused = true)]
async fn or_join_inside_an_event_sub_process_run_twice() {
    let engine = Engine::new();
    let handle = engine.start(&ESP_OR, r("p2")).await.unwrap();
    expect_open_work(&handle, "main_wait").await;
    assert_eq!(engine.broadcast_signal("ping", 1_u32).await.unwrap(), 1);
    expect_open_work(&handle, "ux").await;
    expect_that(&handle, "run 1's quick waits at ej", |h| {
        count(h, "ej", &Happening::Waiting) == 1
    })
    .await;
    assert_eq!(engine.broadcast_signal("ping", 2_u32).await.unwrap(), 1);
    // Run 2 takes `quick` only: its join fires at once, run 1's `ux` is another scope.
    expect_that(&handle, "run 2's join fired", |h| h.fired("ej") == 1).await;
    assert_eq!(count(&handle.history().await, "pe", &Happening::Ended), 1);
    complete(&handle, "ux", |_: &mut R| {}).await;
    expect_that(&handle, "run 1's join fired", |h| h.fired("ej") == 2).await;
    complete(&handle, "main_wait", |_: &mut R| {}).await;
    let (outcome, history) = finish(&handle).await;
    completed(outcome, &history);
    assert_eq!(history.fired("ej"), 2, "{history}");
    assert_eq!(count(&history, "ej", &Happening::Merged), 1, "{history}");
}

process! {
    /// P3: the split reaches the join both through the sub-process and directly.
    AROUND: R {
        start s;
        inclusive os;
        subprocess sub {
            start s1;
            user wait_in;
            end e1;
            s1 -> wait_in -> e1;
        }
        inclusive oj;
        end done;
        s -> os;
        os -> sub when |c| c.want_x;
        os -> oj when |c| c.want_y;
        sub -> oj;
        oj -> done;
    }
}

#[tokio::test(start_paused = true)]
async fn join_reached_through_and_around_a_sub_process() {
    for (want_x, want_y) in [(true, true), (true, false), (false, true)] {
        let engine = Engine::new();
        let data = R {
            want_x,
            want_y,
            ..r("p3")
        };
        let handle = engine.start(&AROUND, data).await.unwrap();
        if want_x {
            expect_open_work(&handle, "wait_in").await;
            settle().await;
            assert_eq!(handle.history().await.fired("oj"), 0, "fired early");
            complete(&handle, "wait_in", |_: &mut R| {}).await;
        }
        let (outcome, history) = finish(&handle).await;
        completed(outcome, &history);
        assert_eq!(history.fired("oj"), 1, "{history}");
        assert_eq!(
            count(&history, "oj", &Happening::Merged),
            usize::from(want_x && want_y),
            "{history}"
        );
    }
}

process! {
    /// P4: the sub-process feeds the join itself and through a non-interrupting
    /// signal boundary.
    TICKS: R {
        start s;
        subprocess sub {
            start s1;
            user wait_in;
            end e1;
            s1 -> wait_in -> e1;
        }
        boundary tick on sub: non_interrupting signal("tick");
        inclusive oj;
        end done;
        s -> sub -> oj;
        tick -> oj;
        oj -> done;
    }
}

#[tokio::test(start_paused = true)]
async fn sub_process_and_its_non_interrupting_boundary_feed_one_join() {
    for ticks in [0usize, 1, 2] {
        let engine = Engine::new();
        let handle = engine.start(&TICKS, r("p4")).await.unwrap();
        expect_open_work(&handle, "wait_in").await;
        for k in 0..ticks {
            assert_eq!(engine.broadcast_signal("tick", ()).await.unwrap(), 1);
            expect_that(&handle, "tick waits", |h| {
                count(h, "oj", &Happening::Waiting) == k + 1
            })
            .await;
        }
        settle().await;
        assert_eq!(
            handle.history().await.fired("oj"),
            0,
            "fired before the sub-process ended"
        );
        complete(&handle, "wait_in", |_: &mut R| {}).await;
        let (outcome, history) = finish(&handle).await;
        completed(outcome, &history);
        // Every token reaches `done` once: the sub-process's together with the first
        // tick, each later tick alone.
        assert_eq!(history.fired("oj"), ticks.max(1), "{history}");
        assert_eq!(
            count(&history, "done", &Happening::Ended),
            ticks.max(1),
            "{history}"
        );
    }
}

process! {
    /// P5: a loop through a sub-process (user task inside), an OR-join after it.
    LOOP_OR: R {
        start s;
        parallel fork;
        exclusive m;
        subprocess sub {
            start s1;
            user step;
            task inc = |c| async move { c.a += 1; Ok(()) };
            end e1;
            s1 -> step -> inc -> e1;
        }
        exclusive more;
        user side;
        inclusive oj;
        end done;
        s -> fork -> m, side;
        m -> sub -> more;
        more -> m when |c| c.a < c.limit;
        more -> oj else;
        side -> oj;
        oj -> done;
    }
}

#[tokio::test(start_paused = true)]
async fn or_join_after_a_loop_through_a_sub_process() {
    let engine = Engine::new();
    let data = R {
        limit: 3,
        ..r("p5")
    };
    let handle = engine.start(&LOOP_OR, data).await.unwrap();
    complete(&handle, "side", |_: &mut R| {}).await;
    for lap in 0..3 {
        expect_open_work(&handle, "step").await;
        settle().await;
        assert_eq!(
            handle.history().await.fired("oj"),
            0,
            "fired during lap {lap}"
        );
        complete(&handle, "step", |_: &mut R| {}).await;
    }
    let (outcome, history) = finish(&handle).await;
    assert_eq!(completed(outcome, &history).a, 3);
    assert_eq!(history.fired("oj"), 1, "{history}");
    assert_eq!(count(&history, "oj", &Happening::Merged), 1, "{history}");
}

process! {
    /// P7: an OR-join inside a sub-process, fed by a nested sub-process and by its
    /// non-interrupting boundary.
    NESTED_OR: R {
        start s;
        subprocess outer {
            start s1;
            inclusive os;
            subprocess inner {
                start s2;
                user wait2;
                end e2;
                s2 -> wait2 -> e2;
            }
            boundary nb on inner: non_interrupting signal("nb");
            task quick = |c| async move { c.y += 1; Ok(()) };
            inclusive oj;
            end e1;
            s1 -> os;
            os -> inner when |c| c.want_x;
            os -> quick when |c| c.want_y;
            inner -> oj;
            quick -> oj;
            nb -> oj;
            oj -> e1;
        }
        end done;
        s -> outer -> done;
    }
}

#[tokio::test(start_paused = true)]
async fn or_join_inside_fed_by_a_nested_sub_process_and_its_boundary() {
    for nb in [false, true] {
        let engine = Engine::new();
        let data = R {
            want_x: true,
            want_y: true,
            ..r("p7")
        };
        let handle = engine.start(&NESTED_OR, data).await.unwrap();
        expect_open_work(&handle, "wait2").await;
        expect_that(&handle, "quick waits at oj", |h| {
            count(h, "oj", &Happening::Waiting) == 1
        })
        .await;
        if nb {
            assert_eq!(engine.broadcast_signal("nb", ()).await.unwrap(), 1);
        }
        settle().await;
        let fired_early = handle.history().await.fired("oj");
        // Without the boundary: two of three flows can still come (inner, nb) → wait.
        // With it: quick and nb arrived, inner can still come → wait.
        assert_eq!(fired_early, 0, "{}", handle.history().await);
        complete(&handle, "wait2", |_: &mut R| {}).await;
        let (outcome, history) = finish(&handle).await;
        completed(outcome, &history);
        assert_eq!(history.fired("oj"), 1, "{history}");
    }
}

process! {
    /// P9: an interrupting event sub-process inside a sub-process that an OR-join in
    /// the parent waits for.
    ESP_STOP: R {
        start s;
        parallel fork;
        subprocess sub {
            start s1;
            user wait_in;
            end e1;
            s1 -> wait_in -> e1;
            event_subprocess stop {
                start st: signal("stop");
                user cleanup;
                end se;
                st -> cleanup -> se;
            }
        }
        task quick = |c| async move { c.x += 1; Ok(()) };
        inclusive oj;
        end done;
        s -> fork -> sub, quick;
        sub -> oj;
        quick -> oj;
        oj -> done;
    }
}

#[tokio::test(start_paused = true)]
async fn interrupting_event_sub_process_inside_the_awaited_sub_process() {
    let engine = Engine::new();
    let handle = engine.start(&ESP_STOP, r("p9")).await.unwrap();
    expect_open_work(&handle, "wait_in").await;
    expect_that(&handle, "quick waits", |h| {
        count(h, "oj", &Happening::Waiting) == 1
    })
    .await;
    assert_eq!(engine.broadcast_signal("stop", ()).await.unwrap(), 1);
    expect_open_work(&handle, "cleanup").await;
    settle().await;
    assert_eq!(
        handle.history().await.fired("oj"),
        0,
        "fired while the ESP runs"
    );
    complete(&handle, "cleanup", |_: &mut R| {}).await;
    let (outcome, history) = finish(&handle).await;
    completed(outcome, &history);
    assert_eq!(history.fired("oj"), 1, "{history}");
    assert_eq!(count(&history, "oj", &Happening::Merged), 1, "{history}");
}

/// The stop signal races the completion of `wait_in`: either way the OR-join in the
/// parent fires exactly once, after the sub-process, with both tokens.
async fn race(i: usize) {
    let engine = Engine::new();
    let handle = engine
        .start(&ESP_STOP, r(&format!("race-{i}")))
        .await
        .unwrap();
    expect_open_work(&handle, "wait_in").await;
    let h2 = handle.clone();
    let e2 = engine.clone();
    let a = tokio::spawn(async move {
        common::yield_jitter().await;
        let _ = h2.complete("wait_in", |_: &mut R| {}).await;
    });
    let b = tokio::spawn(async move {
        common::yield_jitter().await;
        e2.broadcast_signal("stop", ()).await.unwrap();
    });
    a.await.unwrap();
    b.await.unwrap();
    // If the ESP won, complete its user task.
    loop {
        if handle.is_finished() {
            break;
        }
        let work = handle.open_work().await;
        if work.iter().any(|w| w.node == "cleanup") {
            let _ = handle.complete("cleanup", |_: &mut R| {}).await;
        }
        tokio::task::yield_now().await;
    }
    let (outcome, history) = finish(&handle).await;
    completed(outcome, &history);
    assert_eq!(history.fired("oj"), 1, "{history}");
    assert_eq!(count(&history, "oj", &Happening::Merged), 1, "{history}");
    let oj = history
        .steps()
        .iter()
        .position(|s| s.node == "oj" && s.what == Happening::Fired)
        .unwrap();
    let sub = history
        .steps()
        .iter()
        .position(|s| s.node == "sub" && matches!(s.what, Happening::Completed { .. }))
        .unwrap();
    assert!(sub < oj, "{history}");
}

multi_thread!(200 => race);

process! {
    /// P10: a complex join inside a sub-process, requiring the nested sub-process
    /// whose error boundary leads away.
    COMPLEX_REQ: R {
        start s;
        subprocess outer {
            start s1;
            parallel f;
            subprocess inner {
                start s2;
                user wait2;
                exclusive g;
                end e2;
                end boom: error("BOOM");
                s2 -> wait2 -> g;
                g -> boom when |c| c.bad;
                g -> e2 else;
            }
            boundary caught on inner: error("BOOM");
            task quick = |c| async move { c.y += 1; Ok(()) };
            complex cx: activate(count = 2, require = [inner]);
            end e1;
            end caught_end;
            s1 -> f -> inner, quick;
            inner, quick -> cx -> e1;
            caught -> caught_end;
        }
        end done;
        s -> outer -> done;
    }
}

#[tokio::test(start_paused = true)]
async fn complex_join_requiring_a_nested_sub_process() {
    for bad in [false, true] {
        let engine = Engine::new();
        let data = R { bad, ..r("p10") };
        let handle = engine.start(&COMPLEX_REQ, data).await.unwrap();
        expect_open_work(&handle, "wait2").await;
        expect_that(&handle, "quick waits", |h| {
            count(h, "cx", &Happening::Waiting) == 1
        })
        .await;
        settle().await;
        assert_eq!(handle.history().await.fired("cx"), 0);
        complete(&handle, "wait2", |_: &mut R| {}).await;
        let (outcome, history) = finish(&handle).await;
        if bad {
            let e = common::failed(outcome, &history);
            assert_eq!(
                e,
                thresh::InstanceError::ActivationUnsatisfiable { node: "cx" },
                "{history}"
            );
        } else {
            completed(outcome, &history);
            assert_eq!(history.fired("cx"), 1, "{history}");
        }
    }
}

// ----- the race ------------------------------------------------------------------------
