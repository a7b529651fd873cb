//! Conditional starts: edges of commits, field filters, true when armed, scoped to
//! their sub-process.

use super::*;

// ----- conditional starts ----------------------------------------------------------

/// One lap of `set`: its commit, and the alarms expected after it.
type Lap = (fn(&mut Order), u32);

/// Drive `COND_FILTERED` or `COND_UNFILTERED` through commits of `set`, each with
/// the alarm count expected after it.
async fn drive_conditions(process: &'static thresh::Process<Order>, script: Vec<Lap>) {
    let engine = Engine::new();
    let handle = engine.start(process, order("C-1")).await.unwrap();
    expect_open_work(&handle, "set").await;
    settle().await;
    assert_eq!(runs(&handle.history().await, "big"), 0);
    let laps = script.len();
    for (lap, (update, alarms)) in script.into_iter().enumerate() {
        complete(&handle, "set", update).await;
        if lap + 1 < laps {
            expect_that(&handle, "`set` open again", |h| {
                count(h, "set", &Happening::Parked) >= lap + 2
            })
            .await;
        }
        settle().await;
        let history = handle.history().await;
        assert_eq!(
            ends(&history, "alarmed") as u32,
            alarms,
            "lap {lap}\n{history}"
        );
    }
    let (outcome, history) = outcome_of(&handle).await;
    let data = completed(outcome, &history);
    assert_eq!(data.alarms as usize, runs(&history, "big"));
}

process! {
    /// `set` commits what the test gives it, in a loop until `finished`; an alarm
    /// whenever `total > 100 && gate` becomes true, re-evaluated only on commits that
    /// change `total`.
    COND_FILTERED: Order {
        start     begin;
        catch     top: link("set");
        user      set;
        exclusive more;
        throw     again: link("set");
        end       done;
        begin -> set -> more;
        top -> set;
        more -> again when |o| !o.finished;
        more -> done else;
        event_subprocess on_big {
            start big: non_interrupting condition(|o| o.total > 100 && o.gate, on = [total]);
            task  alarm = alarm;
            end   alarmed;
            big -> alarm -> alarmed;
        }
    }
}

/// `on = [total]`: a commit of `gate` alone is not looked at, even when it makes the
/// condition true; the next commit of `total` finds it true and fires (false→true);
/// a commit keeping it true does not; false then true again fires again.
#[tokio::test(start_paused = true)]
async fn a_conditional_start_fires_on_edges_of_commits_to_its_fields() {
    drive_conditions(
        &COND_FILTERED,
        vec![
            (|o| o.total = 150, 0),
            (|o| o.gate = true, 0),
            (|o| o.total = 151, 1),
            (|o| o.total = 152, 1),
            (|o| o.total = 0, 1),
            (|o| o.total = 200, 2),
            (|o| o.finished = true, 2),
        ],
    )
    .await;
}

process! {
    /// The same condition, re-evaluated on every commit.
    COND_UNFILTERED: Order {
        start     begin;
        catch     top: link("set");
        user      set;
        exclusive more;
        throw     again: link("set");
        end       done;
        begin -> set -> more;
        top -> set;
        more -> again when |o| !o.finished;
        more -> done else;
        event_subprocess on_big {
            start big: non_interrupting condition(|o| o.total > 100 && o.gate);
            task  alarm = alarm;
            end   alarmed;
            big -> alarm -> alarmed;
        }
    }
}

/// Without `on`, every commit re-evaluates: the commit of `gate` fires.
#[tokio::test(start_paused = true)]
async fn a_conditional_start_without_fields_looks_at_every_commit() {
    drive_conditions(
        &COND_UNFILTERED,
        vec![
            (|o| o.total = 150, 0),
            (|o| o.gate = true, 1),
            (|o| o.total = 151, 1),
            (|o| o.gate = false, 1),
            (|o| o.gate = true, 2),
            (|o| o.finished = true, 2),
        ],
    )
    .await;
}

process! {
    /// An interrupting conditional start; `bump` adds 200 to `total`.
    COND_BUMP: Order {
        start begin;
        user  first;
        task  bump = bump;
        user  second;
        end   done;
        begin -> first -> bump -> second -> done;
        event_subprocess on_big {
            start big: condition(|o| o.total > 100, on = [total]);
            task  alarm = alarm;
            end   alarmed;
            big -> alarm -> alarmed;
        }
    }
}

/// An interrupting conditional start, false when armed, made true by the commit of a
/// task (`bump`): it fires on that commit, the token leaving `bump` goes no further,
/// and the instance completes when the event sub-process ends.
#[tokio::test(start_paused = true)]
async fn an_interrupting_conditional_start_fires_on_a_tasks_commit() {
    let engine = Engine::new();
    let handle = engine.start(&COND_BUMP, order("C-2")).await.unwrap();
    complete(&handle, "first", |o| o.gate = true).await;
    let (outcome, history) = outcome_of(&handle).await;
    let data = completed(outcome, &history);
    assert_eq!((data.total, data.alarms), (200, 1));
    assert_eq!(
        rows(&history),
        vec![
            (0, "begin", Happening::Started),
            (0, "first", Happening::Parked),
            (0, "first", done(&["gate"])),
            (0, "bump", Happening::TaskStarted),
            (0, "bump", done(&["total"])),
            (0, "bump", Happening::Cancelled),
            (1, "big", Happening::Started),
            (1, "big", caught(&[])),
            (1, "alarm", Happening::TaskStarted),
            (1, "alarm", done(&["alarms"])),
            (1, "alarmed", Happening::Ended),
        ]
    );
}

/// An interrupting conditional start true when the process's scope opens fires at
/// once: the main path never starts.
#[tokio::test(start_paused = true)]
async fn an_interrupting_conditional_start_true_when_armed_runs_instead_of_the_process() {
    let engine = Engine::new();
    let data = Order {
        total: 150,
        ..order("C-3")
    };
    let (outcome, history) = outcome_of(&engine.start(&COND_BUMP, data).await.unwrap()).await;
    let data = completed(outcome, &history);
    assert_eq!(data.alarms, 1);
    assert_eq!(
        steps(&history),
        vec![
            (0, "big", Happening::Started),
            (0, "big", caught(&[])),
            (0, "alarm", Happening::TaskStarted),
            (0, "alarm", done(&["alarms"])),
            (0, "alarmed", Happening::Ended),
        ]
    );
}

process! {
    /// A non-interrupting conditional start.
    COND_BESIDE: Order {
        start begin;
        user  review;
        end   done;
        begin -> review -> done;
        event_subprocess on_big {
            start big: non_interrupting condition(|o| o.total > 100, on = [total]);
            task  alarm = alarm;
            end   alarmed;
            big -> alarm -> alarmed;
        }
    }
}

/// A non-interrupting conditional start true when armed runs once beside the main
/// path, and not again while the condition stays true.
#[tokio::test(start_paused = true)]
async fn a_non_interrupting_conditional_start_true_when_armed_runs_beside() {
    let engine = Engine::new();
    let data = Order {
        total: 150,
        ..order("C-4")
    };
    let handle = engine.start(&COND_BESIDE, data).await.unwrap();
    expect_open_work(&handle, "review").await;
    settle().await;
    complete(&handle, "review", |o| o.total = 300).await;
    let (outcome, history) = outcome_of(&handle).await;
    let data = completed(outcome, &history);
    assert_eq!((data.alarms, data.total), (1, 300));
    assert_eq!(runs(&history, "big"), 1);
    assert_eq!(ends(&history, "done"), 1);
}

process! {
    /// An interrupting conditional start inside a sub-process.
    COND_SCOPED: Order {
        start begin;
        subprocess work {
            start w_begin;
            user  inner;
            end   w_done;
            w_begin -> inner -> w_done;
            event_subprocess on_big {
                start big: condition(|o| o.total > 100, on = [total]);
                task  alarm = alarm;
                end   alarmed;
                big -> alarm -> alarmed;
            }
        }
        user  later;
        end   done;
        begin -> work -> later -> done;
    }
}

/// A conditional start in a sub-process is armed when the token enters it: true
/// then, it takes the sub-process over before its inner start runs, and the token
/// goes on after the sub-process.
#[tokio::test(start_paused = true)]
async fn a_conditional_start_in_a_sub_process_true_on_entry_takes_it_over() {
    let engine = Engine::new();
    let data = Order {
        total: 150,
        ..order("C-5")
    };
    let handle = engine.start(&COND_SCOPED, data).await.unwrap();
    complete(&handle, "later", |_| {}).await;
    let (outcome, history) = outcome_of(&handle).await;
    let data = completed(outcome, &history);
    assert_eq!(data.alarms, 1);
    assert_eq!(
        steps(&history),
        vec![
            (0, "begin", Happening::Started),
            (0, "work", Happening::TaskStarted),
            (1, "big", Happening::Started),
            (1, "big", caught(&[])),
            (1, "alarm", Happening::TaskStarted),
            (1, "alarm", done(&["alarms"])),
            (1, "alarmed", Happening::Ended),
            (0, "work", done(&[])),
            (0, "later", Happening::Parked),
            (0, "later", done(&[])),
            (0, "done", Happening::Ended),
        ]
    );
}

/// Once the sub-process has completed, its conditional start is disarmed: a commit
/// making the condition true fires nothing; while it runs, a commit does.
#[tokio::test(start_paused = true)]
async fn a_conditional_start_in_a_sub_process_lives_as_long_as_the_sub_process() {
    let engine = Engine::new();
    let handle = engine.start(&COND_SCOPED, order("C-6")).await.unwrap();
    complete(&handle, "inner", |_| {}).await;
    complete(&handle, "later", |o| o.total = 500).await;
    let (outcome, history) = outcome_of(&handle).await;
    let data = completed(outcome, &history);
    assert_eq!((data.alarms, data.total), (0, 500));

    let handle = engine.start(&COND_SCOPED, order("C-7")).await.unwrap();
    complete(&handle, "inner", |o| o.total = 500).await;
    complete(&handle, "later", |_| {}).await;
    let (outcome, history) = outcome_of(&handle).await;
    let data = completed(outcome, &history);
    assert_eq!(data.alarms, 1);
    assert_eq!(
        (ends(&history, "w_done"), ends(&history, "alarmed")),
        (0, 1),
        "{history}"
    );
}

process! {
    /// An interrupting conditional start in a sub-process; `side`, beside it, is
    /// what commits `total`.
    COND_ACROSS: Order {
        start    begin;
        parallel fork;
        user     side;
        subprocess work {
            start w_begin;
            user  inner;
            end   w_done;
            w_begin -> inner -> w_done;
            event_subprocess on_big {
                start big: condition(|o| o.total > 100, on = [total]);
                task  alarm = alarm;
                end   alarmed;
                big -> alarm -> alarmed;
            }
        }
        task     after = after;
        parallel join;
        end      done;
        begin -> fork -> side, work;
        work -> after;
        side, after -> join -> done;
    }
}

/// A commit outside a sub-process (by `side`, beside it) makes its interrupting
/// conditional start true: the sub-process's work is cancelled, `side`'s token is
/// not, and the parent goes on after the sub-process.
#[tokio::test(start_paused = true)]
async fn a_commit_outside_a_sub_process_fires_its_conditional_start() {
    let engine = Engine::new();
    let handle = engine.start(&COND_ACROSS, order("N-3")).await.unwrap();
    expect_open_work(&handle, "inner").await;
    complete(&handle, "side", |o| o.total = 500).await;
    let (outcome, history) = outcome_of(&handle).await;
    let data = completed(outcome, &history);
    assert_eq!((data.alarms, data.after), (1, 1));
    let cancelled: Vec<(u32, &str)> = steps(&history)
        .into_iter()
        .filter(|r| r.2 == Happening::Cancelled)
        .map(|r| (r.0, r.1))
        .collect();
    assert_eq!(cancelled, [(2, "inner")], "{history}");
    assert_eq!(count(&history, "side", &done(&["total"])), 1);
    assert_eq!(ends(&history, "done"), 1);
}

process! {
    /// Non-interrupting event sub-processes with a conditional event sub-process of
    /// their own (`total > 100`, true from the start here): `on_ping`, and `on_pong`,
    /// whose start's `apply` commits `pings`; a signal catch `go` beside the user
    /// task commits `gate`.
    NESTED_COND: Order {
        start    begin;
        parallel fork;
        catch    go: signal("go", apply = |o, _p: &()| o.gate = true);
        user     review;
        parallel join;
        end      done;
        begin -> fork -> go, review;
        go, review -> join -> done;
        event_subprocess on_ping {
            start ping: non_interrupting signal("ping");
            user  ack;
            end   acked;
            ping -> ack -> acked;
            event_subprocess on_hot {
                start hot: non_interrupting condition(|o| o.total > 100, on = [total]);
                task  alarm = alarm;
                end   alarmed;
                hot -> alarm -> alarmed;
            }
        }
        event_subprocess on_pong {
            start pong: non_interrupting signal("pong", apply = |o, _p: &()| o.pings += 1);
            user  pong_ack;
            end   pong_acked;
            pong -> pong_ack -> pong_acked;
            event_subprocess on_pong_hot {
                start pong_hot: non_interrupting condition(|o| o.total > 100, on = [total]);
                task  pong_alarm = alarm;
                end   pong_alarmed;
                pong_hot -> pong_alarm -> pong_alarmed;
            }
        }
    }
}

/// Run `NESTED_COND` with `total = 150`: `ping` runs `on_ping`, whose own conditional
/// event sub-process is true when armed and runs once; `go` first, when asked.
async fn nested_condition(go_first: bool) {
    let engine = Engine::new();
    let data = Order {
        total: 150,
        ..order("N-8")
    };
    let handle = engine.start(&NESTED_COND, data).await.unwrap();
    expect_open_work(&handle, "review").await;
    expect_parked(&handle, "go").await;
    if go_first {
        assert_eq!(engine.broadcast_signal("go", ()).await.unwrap(), 1);
    }
    assert_eq!(engine.broadcast_signal("ping", ()).await.unwrap(), 1);
    expect_open_work(&handle, "ack").await;
    settle().await;
    let history = handle.history().await;
    assert_eq!(runs(&history, "hot"), 1, "{history}");
    complete(&handle, "ack", |_| {}).await;
    if !go_first {
        assert_eq!(engine.broadcast_signal("go", ()).await.unwrap(), 1);
    }
    complete(&handle, "review", |_| {}).await;
    let (outcome, history) = outcome_of(&handle).await;
    let data = completed(outcome, &history);
    assert_eq!((data.alarms, data.gate), (1, true));
}

/// A conditional start true when its scope — an event sub-process — opens runs at
/// once.
#[tokio::test(start_paused = true)]
async fn a_conditional_start_in_an_event_sub_process_true_when_armed_runs() {
    nested_condition(false).await;
}

/// The same, with a commit elsewhere (the catch `go`, of a field the condition does
/// not watch) taken in between the event sub-process's start and its first step.
#[tokio::test(start_paused = true)]
async fn a_conditional_start_true_when_armed_survives_a_commit_elsewhere() {
    nested_condition(true).await;
}

/// The same, when the event sub-process's own start commits a field (`pings`) the
/// condition does not watch.
#[tokio::test(start_paused = true)]
async fn a_conditional_start_true_when_armed_survives_its_scopes_first_commit() {
    let engine = Engine::new();
    let data = Order {
        total: 150,
        ..order("N-9")
    };
    let handle = engine.start(&NESTED_COND, data).await.unwrap();
    expect_open_work(&handle, "review").await;
    assert_eq!(engine.broadcast_signal("pong", ()).await.unwrap(), 1);
    expect_open_work(&handle, "pong_ack").await;
    settle().await;
    let history = handle.history().await;
    assert_eq!(runs(&history, "pong_hot"), 1, "{history}");
    complete(&handle, "pong_ack", |_| {}).await;
    assert_eq!(engine.broadcast_signal("go", ()).await.unwrap(), 1);
    complete(&handle, "review", |_| {}).await;
    let (outcome, history) = outcome_of(&handle).await;
    let data = completed(outcome, &history);
    assert_eq!((data.alarms, data.pings), (1, 1));
}
