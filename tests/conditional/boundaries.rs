//! Conditional boundaries: an interrupting one stops its activity (also a running
//! task); two firings of one commit go in arming order; an interrupting firing voids a
//! later-armed one.

use super::*;

process! {
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
}

/// An interrupting conditional boundary stops its user task in the step of the
/// commit that made it true; a later edge does nothing.
async fn an_interrupting_condition_stops_its_activity(_: usize) {
    let engine = Engine::new();
    let handle = engine.start(&OVERHEAT, Gauge::default()).await.unwrap();
    set(&handle, |d| d.temp = 90).await;
    set(&handle, |d| d.temp = 150).await;
    expect_that(&handle, "the boundary's token ended", |h| {
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

process! {
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
}

/// One commit fires two boundaries: in the order they were armed, not the order they
/// were declared — both `Spawned` steps right after the commit.
async fn two_firings_of_one_commit_go_in_arming_order(i: usize) {
    let engine = Engine::new();
    let handle = engine.start(&ORDER, Gauge::default()).await.unwrap();
    let a_first = i.is_multiple_of(2);
    let (first, second) = if a_first {
        (("open_a", "a_wait"), ("open_b", "b_wait"))
    } else {
        (("open_b", "b_wait"), ("open_a", "a_wait"))
    };
    complete(&handle, first.0, |_: &mut Gauge| {}).await;
    expect_open_work(&handle, first.1).await;
    complete(&handle, second.0, |_: &mut Gauge| {}).await;
    expect_open_work(&handle, second.1).await;
    complete(&handle, "set", |d: &mut Gauge| d.level = 1).await;
    expect_that(&handle, "`set` committed", |h| completions(h, "set") == 1).await;
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

process! {
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
}

/// An interrupting firing withdraws a later-armed subscription of the same commit:
/// `stop` (armed first) interrupts `hold`, and `note`, also true now, never fires.
async fn an_interrupting_firing_voids_a_later_armed_one(_: usize) {
    let engine = Engine::new();
    let handle = engine.start(&VOID, Gauge::default()).await.unwrap();
    expect_open_work(&handle, "hold").await;
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

process! {
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
}

/// Armed the other way round, the non-interrupting one fires first and both go.
async fn a_non_interrupting_firing_armed_first_still_goes(_: usize) {
    let engine = Engine::new();
    let handle = engine.start(&KEEP, Gauge::default()).await.unwrap();
    expect_open_work(&handle, "hold").await;
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

process! {
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
}

/// A conditional boundary interrupts a task whose handler is still running: at the
/// 5 s commit, long before the handler would end; its write never lands.
#[tokio::test(start_paused = true)]
async fn a_conditional_boundary_interrupts_a_running_task() {
    let engine = Engine::new();
    let t0 = Instant::now();
    let (outcome, history) =
        finish_strict(&engine.start(&RUNAWAY, Gauge::default()).await.unwrap()).await;
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
