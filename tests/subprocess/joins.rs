//! Gateways inside a sub-process and OR-joins around and inside one.

use super::*;

// ----- gateways inside and around ----------------------------------------------------

process! {
    /// A parallel split and join, then an inclusive split and OR-join, inside.
    GATEWAYS: Claim {
        start s;
        subprocess sub {
            start     s1;
            parallel  fork;
            task      left = |c| async move { yield_jitter().await; c.left += 1; Ok(()) };
            task      right = |c| async move { yield_jitter().await; c.right += 1; Ok(()) };
            parallel  join;
            inclusive os;
            task      x = |c| async move { yield_jitter().await; c.x += 1; Ok(()) };
            task      y = |c| async move { yield_jitter().await; c.y += 1; Ok(()) };
            inclusive oj;
            end       e1;
            s1 -> fork -> left, right;
            left, right -> join -> os;
            os -> x when |c| c.want_x;
            os -> y when |c| c.want_y;
            x, y -> oj -> e1;
        }
        task  after = |c| async move { c.after += 1; Ok(()) };
        end   done;
        s -> sub -> after -> done;
    }
}

/// A parallel split and join, then an inclusive split and OR-join, all inside the
/// sub-process, with racing branches: each join fires once, before the sub-process
/// completes, and the sub-process completes once, before `after`.
async fn gateways_inside_a_sub_process(engine: Engine, i: usize) {
    let (want_x, want_y) = [(true, false), (false, true), (true, true)][i % 3];
    let data = Claim {
        want_x,
        want_y,
        ..claim(format!("gw-{i}"))
    };
    let (outcome, history) = finish(&engine.start(&GATEWAYS, data).await.unwrap()).await;
    let data = completed(outcome, &history);
    assert_eq!(
        (data.left, data.right, data.x, data.y, data.after),
        (1, 1, u32::from(want_x), u32::from(want_y), 1)
    );
    let taken: Vec<&str> = [(want_x, "x"), (want_y, "y")]
        .into_iter()
        .filter_map(|(on, t)| on.then_some(t))
        .collect();
    assert_eq!(common::routes(&history, "os"), std::slice::from_ref(&taken));
    assert_eq!(history.fired("join"), 1, "{history}");
    assert_eq!(count(&history, "join", &Happening::Merged), 1);
    assert_eq!(history.fired("oj"), 1, "{history}");
    assert_eq!(
        count(&history, "oj", &Happening::Merged),
        taken.len() - 1,
        "{history}"
    );
    let entered = at(&history, "sub", &Happening::TaskStarted);
    let left_at = at(&history, "sub", &done(&[]));
    assert_eq!(count(&history, "sub", &done(&[])), 1);
    // Everything inside happened while the token waited at `sub`.
    for (k, step) in history.steps().iter().enumerate() {
        let inside = !["s", "sub", "after", "done"].contains(&step.node);
        assert_eq!(inside, entered < k && k < left_at, "step {k}\n{history}");
    }
    assert!(at(&history, "join", &Happening::Fired) < at(&history, "os", &routed(&taken)));
    assert!(at(&history, "oj", &Happening::Fired) < left_at);
    assert_eq!(history.ended_at(), ["e1", "done"]);
}

flavors!(gateways_inside_a_sub_process);

process! {
    /// A sub-process (a user task, then a task of `secs` seconds one level deeper)
    /// and a quick task on the branches of a parallel split, an OR-join after both.
    BRANCH: Claim {
        start     s;
        parallel  fork;
        subprocess sub {
            start s1;
            user  approve;
            subprocess inner {
                start s2;
                task  slow = slow;
                end   e2;
                s2 -> slow -> e2;
            }
            end   e1;
            s1 -> approve -> inner -> e1;
        }
        task      quick = |c| async move { c.a += 1; Ok(()) };
        inclusive oj;
        task      after = |c| async move { c.after += 1; Ok(()) };
        end       done;
        s -> fork -> sub, quick;
        sub, quick -> oj -> after -> done;
    }
}

/// A sub-process (waiting at a user task, then two levels deep in a 5 s task) on
/// one branch of a parallel split, a quick task on the other, an OR-join after both:
/// the quick token waits at the join until the sub-process completes — the tokens
/// inside count as able to reach it. The user task inside works through the handle.
#[tokio::test(start_paused = true)]
async fn an_or_join_after_a_sub_process_waits_for_its_completion() {
    let engine = Engine::new();
    let t0 = Instant::now();
    let handle = engine
        .start(
            &BRANCH,
            Claim {
                secs: 5,
                ..claim("branch")
            },
        )
        .await
        .unwrap();
    expect_open_work(&handle, "approve").await;
    let history = expect_that(&handle, "quick waits at the join", |h| {
        count(h, "oj", &Happening::Waiting) == 1
    })
    .await;
    settle().await;
    let work = handle.open_work().await;
    assert_eq!(work.len(), 1);
    assert_eq!(work[0].node, "approve");
    // The user task waits on the inner track, not on the one waiting at `sub`.
    let inner_track = history.steps()[at(&history, "s1", &spawned(0))].track;
    assert_eq!(
        work[0],
        OpenWork {
            node: "approve",
            track: inner_track,
            iteration: None,
        }
    );
    assert!(matches!(
        handle.complete("nope", |_: &mut Claim| {}).await,
        Err(WorkError::NoSuchUserTask { node, .. }) if node == "nope"
    ));
    // An hour later the join still waits: the sub-process has not completed.
    tokio::time::sleep(Duration::from_secs(3600)).await;
    let history = handle.history().await;
    assert_eq!(history.fired("oj"), 0, "{history}");
    assert_eq!(count(&history, "after", &Happening::TaskStarted), 0);
    let t1 = Instant::now();
    handle
        .complete("approve", |c: &mut Claim| c.want_x = true)
        .await
        .expect("approve is open");
    assert_eq!(
        handle.complete("approve", |_: &mut Claim| {}).await,
        Err(WorkError::NoOpenWork {
            node: "approve".into()
        })
    );
    // Two seconds into `slow`, still waiting.
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert_eq!(handle.history().await.fired("oj"), 0);
    let (outcome, history) = finish(&handle).await;
    assert_eq!(t1.elapsed(), Duration::from_secs(5));
    assert!(t0.elapsed() > Duration::from_secs(3600));
    let data = completed(outcome, &history);
    assert_eq!((data.a, data.b, data.after, data.want_x), (1, 1, 1, true));
    assert_eq!(history.fired("oj"), 1);
    assert_eq!(count(&history, "oj", &Happening::Merged), 1);
    assert!(at(&history, "sub", &done(&[])) < at(&history, "oj", &Happening::Fired));
    assert_eq!(history.ended_at(), ["e2", "e1", "done"]);
    assert_eq!(
        handle.complete("approve", |_: &mut Claim| {}).await,
        Err(WorkError::InstanceEnded)
    );
}

/// The same, racing: the user task is completed at once, `slow` takes no time, and
/// the quick branch races the whole sub-process to the OR-join. The join fires once,
/// always after the sub-process completed.
async fn an_or_join_after_a_sub_process_racing(i: usize) {
    let engine = Engine::new();
    let handle = engine
        .start(&BRANCH, claim(format!("or-{i}")))
        .await
        .unwrap();
    yield_jitter().await;
    complete(&handle, "approve", |_: &mut Claim| {}).await;
    let (outcome, history) = finish(&handle).await;
    let data = completed(outcome, &history);
    assert_eq!((data.a, data.b, data.after), (1, 1, 1));
    assert_eq!(history.fired("oj"), 1, "{history}");
    assert_eq!(count(&history, "after", &Happening::TaskStarted), 1);
    assert!(
        at(&history, "sub", &done(&[])) < at(&history, "oj", &Happening::Fired),
        "{history}"
    );
    assert!(
        first(&history, "quick", |h| matches!(
            h,
            Happening::Completed { .. }
        )) < at(&history, "oj", &Happening::Fired)
    );
}

multi_thread!(common::RUNS => an_or_join_after_a_sub_process_racing);

process! {
    /// An OR-join in the parent fed by an inclusive split only, beside a sub-process
    /// that cannot reach it.
    UNREACHABLE: Claim {
        start     s;
        parallel  fork;
        subprocess sub {
            start s1;
            user  wait_in;
            end   e1;
            s1 -> wait_in -> e1;
        }
        end       sub_end;
        inclusive os;
        task      x = |c| async move { c.x += 1; Ok(()) };
        task      y = |c| async move { c.y += 1; Ok(()) };
        inclusive oj;
        end       done;
        s -> fork -> sub, os;
        sub -> sub_end;
        os -> x when |c| c.want_x;
        os -> y when |c| c.want_y;
        x, y -> oj -> done;
    }
}

/// An OR-join in the parent does not wait for a sub-process that cannot reach it:
/// with one branch taken, it fires while the user task inside still waits.
#[tokio::test(start_paused = true)]
async fn an_or_join_does_not_wait_for_a_sub_process_that_cannot_reach_it() {
    let engine = Engine::new();
    let data = Claim {
        want_x: true,
        ..claim("unreachable")
    };
    let handle = engine.start(&UNREACHABLE, data).await.unwrap();
    expect_open_work(&handle, "wait_in").await;
    let history = expect_that(&handle, "the join fired", |h| h.fired("oj") == 1).await;
    assert_eq!(count(&history, "sub", &done(&[])), 0, "{history}");
    complete(&handle, "wait_in", |_: &mut Claim| {}).await;
    let (outcome, history) = finish(&handle).await;
    assert_eq!(completed(outcome, &history).x, 1);
    assert!(at(&history, "oj", &Happening::Fired) < at(&history, "wait_in", &done(&[])));
    assert_eq!(history.ended_at(), ["done", "e1", "sub_end"]);
}

process! {
    /// An OR-join inside a sub-process that a parent token (`later`) may enter
    /// again.
    INNER_OR: Claim {
        start     s;
        parallel  fork;
        user      later;
        exclusive enter: multi;
        subprocess sub {
            start     s1;
            inclusive os;
            task      x = |c| async move { c.x += 1; Ok(()) };
            task      y = |c| async move { c.y += 1; Ok(()) };
            inclusive oj;
            end       e1;
            s1 -> os;
            os -> x when |c| c.want_x;
            os -> y when |c| c.want_y;
            x, y -> oj -> e1;
        }
        end       done;
        s -> fork -> enter, later;
        later -> enter -> sub;
        sub -> done;
    }
}

/// An OR-join inside a sub-process counts only the tokens of its own sub-process
/// instance: a parent token waiting at `later`, which could enter the sub-process
/// (and reach the join) afterwards, does not hold it. Each entry's join fires on its
/// own.
#[tokio::test(start_paused = true)]
async fn an_or_join_inside_ignores_tokens_outside_its_scope() {
    let engine = Engine::new();
    let data = Claim {
        want_x: true,
        ..claim("inner-or")
    };
    let handle = engine.start(&INNER_OR, data).await.unwrap();
    expect_open_work(&handle, "later").await;
    let history = expect_that(&handle, "the first entry completed", |h| {
        count(h, "done", &Happening::Ended) == 1
    })
    .await;
    assert_eq!(history.fired("oj"), 1, "{history}");
    assert_eq!(open_work(&handle).await, ["later"]);
    complete(&handle, "later", |_: &mut Claim| {}).await;
    let (outcome, history) = finish(&handle).await;
    assert_eq!(completed(outcome, &history).x, 2);
    assert_eq!(history.fired("oj"), 2);
    assert_eq!(count(&history, "oj", &Happening::Merged), 0);
    assert_eq!(count(&history, "sub", &done(&[])), 2);
    assert_eq!(history.ended_at(), ["e1", "done", "e1", "done"]);
}

process! {
    /// An OR-join in the parent that the sub-process reaches only through its
    /// non-interrupting signal boundary.
    VIA_BOUNDARY: Claim {
        start     s;
        parallel  fork;
        subprocess sub {
            start s1;
            user  wait_in;
            end   e1;
            s1 -> wait_in -> e1;
        }
        boundary  poke on sub: non_interrupting signal("poke");
        end       sub_end;
        task      quick = |c| async move { c.a += 1; Ok(()) };
        inclusive oj;
        end       done;
        s -> fork -> sub, quick;
        sub -> sub_end;
        poke -> oj;
        quick -> oj;
        oj -> done;
    }
}

/// An OR-join in the parent that the sub-process reaches only through its
/// non-interrupting boundary: with `quick` waiting there, the join waits while the
/// sub-process runs (the boundary could still fire) and fires once it has completed
/// and its boundary is gone; or, when the boundary fires, the join has every flow
/// marked and fires at once, the sub-process still running.
#[tokio::test(start_paused = true)]
async fn an_or_join_reached_through_a_boundary_waits_for_the_sub_process() {
    for poke in [false, true] {
        // A signal reaches every instance of its engine: an engine per run.
        let engine = Engine::new();
        let handle = engine
            .start(&VIA_BOUNDARY, claim("via-boundary"))
            .await
            .unwrap();
        expect_open_work(&handle, "wait_in").await;
        expect_that(&handle, "quick waits at the join", |h| {
            count(h, "oj", &Happening::Waiting) == 1
        })
        .await;
        if poke {
            assert_eq!(engine.broadcast_signal("poke", ()).await.unwrap(), 1);
        }
        tokio::time::sleep(Duration::from_secs(3600)).await;
        let history = handle.history().await;
        assert_eq!(spawns(&history, "poke"), usize::from(poke));
        assert_eq!(history.fired("oj"), usize::from(poke), "{history}");
        assert_eq!(count(&history, "sub", &done(&[])), 0, "{history}");
        complete(&handle, "wait_in", |_: &mut Claim| {}).await;
        let (outcome, history) = finish(&handle).await;
        completed(outcome, &history);
        assert_eq!(history.fired("oj"), 1, "{history}");
        assert_eq!(count(&history, "oj", &Happening::Merged), usize::from(poke));
        let (fired, sub_done) = (
            at(&history, "oj", &Happening::Fired),
            at(&history, "sub", &done(&[])),
        );
        assert_eq!(fired < sub_done, poke, "{history}");
        let mut ended = history.ended_at();
        ended.sort_unstable();
        assert_eq!(ended, ["done", "e1", "sub_end"], "{history}");
    }
}

process! {
    /// Two tokens in a sub-process with an OR-join inside: `first` enters at once and
    /// (with `y == 0`) takes the 2 s task `quick`; `second` enters after a second and
    /// (with `y == 1`) waits at the user task `ux`.
    TWICE_OR: Claim {
        start    s;
        parallel fork;
        task     first = |c| async move { c.x += 1; Ok(()) };
        task     second = |c| async move {
            tokio::time::sleep(Duration::from_secs(1)).await;
            c.y += 1;
            Ok(())
        };
        exclusive enter: multi;
        subprocess sub {
            start     s1;
            inclusive os;
            user      ux;
            task      quick = |c| async move {
                tokio::time::sleep(Duration::from_secs(2)).await;
                c.a += 1;
                Ok(())
            };
            inclusive oj;
            end       e1;
            s1 -> os;
            os -> ux when |c| c.y == 1;
            os -> quick when |c| c.y == 0;
            ux, quick -> oj -> e1;
        }
        end      done;
        s -> fork -> first, second;
        first, second -> enter -> sub;
        sub -> done;
    }
}

/// An OR-join inside a sub-process entered twice at once counts only its own
/// entry's tokens: entry A's `quick` arrives at 2 s with `ux` unmarked, and the only
/// token that could reach `ux` is entry B's, waiting there — in another instance of
/// the scope. A's join fires at once and A completes; B's fires when `ux` is done.
#[tokio::test(start_paused = true)]
async fn an_or_join_inside_counts_only_its_own_entry() {
    let engine = Engine::new();
    let t0 = Instant::now();
    let handle = engine.start(&TWICE_OR, claim("twice-or")).await.unwrap();
    until_slept(&handle, "ux opened", |h| {
        count(h, "ux", &Happening::Parked) == 1
    })
    .await;
    assert!(t0.elapsed() < Duration::from_secs(2));
    tokio::time::sleep_until(t0 + Duration::from_millis(2500)).await;
    let history = handle.history().await;
    assert_eq!(history.fired("oj"), 1, "{history}");
    assert_eq!(count(&history, "sub", &done(&[])), 1, "{history}");
    assert_eq!(count(&history, "done", &Happening::Ended), 1, "{history}");
    let fired = history.steps()[at(&history, "oj", &Happening::Fired)].track;
    let entries: Vec<TrackId> = history
        .steps()
        .iter()
        .filter(|s| s.node == "s1")
        .map(|s| s.track)
        .collect();
    assert_eq!(entries.len(), 2, "{history}");
    assert_eq!(entry_of(&history, fired), entries[0], "{history}");
    assert_eq!(open_work(&handle).await, ["ux"]);
    complete(&handle, "ux", |_: &mut Claim| {}).await;
    let (outcome, history) = finish(&handle).await;
    let data = completed(outcome, &history);
    assert_eq!((data.a, data.x, data.y), (1, 1, 1));
    assert_eq!(history.fired("oj"), 2);
    assert_eq!(count(&history, "oj", &Happening::Merged), 0);
    assert_eq!(count(&history, "done", &Happening::Ended), 2);
    assert_eq!(common::routes(&history, "os"), [["quick"], ["ux"]]);
}
