//! Event sub-processes of an embedded sub-process: armed only while it runs, cancelled
//! with it, one set per instance of it.

use super::*;

// ----- event sub-processes of an embedded sub-process ------------------------------

process! {
    /// A sub-process with an interrupting message start and a non-interrupting
    /// signal start, entered after `before`; a user task `side` beside it all.
    SCOPED: Order {
        start    begin;
        parallel fork;
        user     side;
        user     before;
        subprocess work {
            start w_begin;
            user  inner;
            end   w_done;
            w_begin -> inner -> w_done;
            event_subprocess on_abort {
                start abort: message("abort", key = |o| o.id.clone(), apply = |o, p: &String| o.reason = p.clone());
                task  undo = undo;
                end   aborted;
                abort -> undo -> aborted;
            }
            event_subprocess on_poke {
                start poke: non_interrupting signal("poke");
                task  note = note;
                end   noted;
                poke -> note -> noted;
            }
        }
        task     after = after;
        parallel join;
        end      done;
        begin -> fork -> side, before;
        before -> work -> after;
        side, after -> join -> done;
    }
}

/// Before the token enters the sub-process its event sub-processes are not armed: a
/// signal reaches no catcher, a message is buffered. Entering arms them, and the
/// buffered message runs the interrupting one at once: it cancels the sub-process's
/// user task only — `side`, beside the sub-process, still waits — and the token
/// goes on after the sub-process.
#[tokio::test(start_paused = true)]
async fn an_interrupting_start_in_a_sub_process_cancels_only_its_work() {
    let engine = Engine::new();
    let handle = engine.start(&SCOPED, order("S-1")).await.unwrap();
    expect_open_work(&handle, "before").await;
    expect_open_work(&handle, "side").await;
    assert_eq!(engine.broadcast_signal("poke", ()).await.unwrap(), 0);
    assert_eq!(
        engine
            .publish_message("abort", "S-1", "early".to_string())
            .await
            .unwrap(),
        Published::Buffered
    );
    complete(&handle, "before", |_| {}).await;
    expect_that(&handle, "the token waits at the join", |h| {
        count(h, "join", &Happening::Waiting) == 1
    })
    .await;
    assert_eq!(open_work(&handle).await, ["side"]);
    assert_eq!(engine.broadcast_signal("poke", ()).await.unwrap(), 0);
    complete(&handle, "side", |_| {}).await;
    let (outcome, history) = outcome_of(&handle).await;
    let data = completed(outcome, &history);
    assert_eq!(
        (data.reason.as_str(), data.undone, data.notes, data.after),
        ("early", 1, 0, 1)
    );
    assert_eq!(
        rows(&history),
        vec![
            (0, "begin", Happening::Started),
            (0, "fork", routed(&["side", "before"])),
            (1, "fork", spawned(0)),
            (0, "side", Happening::Parked),
            (1, "before", Happening::Parked),
            (1, "before", done(&[])),
            (1, "work", Happening::TaskStarted),
            (2, "w_begin", spawned(1)),
            (2, "inner", Happening::Parked),
            (2, "inner", Happening::Cancelled),
            (3, "abort", Happening::Started),
            (3, "abort", caught(&["reason"])),
            (3, "undo", Happening::TaskStarted),
            (3, "undo", done(&["undone"])),
            (3, "aborted", Happening::Ended),
            (1, "work", done(&[])),
            (1, "after", Happening::TaskStarted),
            (1, "after", done(&["after"])),
            (1, "join", Happening::Waiting),
            (0, "side", done(&[])),
            (1, "join", Happening::Merged),
            (0, "join", Happening::Fired),
            (0, "join", routed(&["done"])),
            (0, "done", Happening::Ended),
        ]
    );
    assert_eq!(engine.broker_stats().buffered, 0);
}

/// While the sub-process runs its non-interrupting signal start runs beside its user
/// task; once it has completed, its starts are disarmed — a signal reaches no
/// catcher, a message is buffered — though the instance still runs.
#[tokio::test(start_paused = true)]
async fn event_sub_processes_of_a_sub_process_are_armed_only_while_it_runs() {
    let engine = Engine::new();
    let handle = engine.start(&SCOPED, order("S-2")).await.unwrap();
    complete(&handle, "before", |_| {}).await;
    expect_open_work(&handle, "inner").await;
    assert_eq!(engine.broadcast_signal("poke", ()).await.unwrap(), 1);
    expect_that(&handle, "the poke ran", |h| ends(h, "noted") == 1).await;
    assert_eq!(engine.broadcast_signal("poke", ()).await.unwrap(), 1);
    expect_that(&handle, "the second poke ran", |h| ends(h, "noted") == 2).await;
    complete(&handle, "inner", |_| {}).await;
    expect_that(&handle, "the token waits at the join", |h| {
        count(h, "join", &Happening::Waiting) == 1
    })
    .await;
    assert_eq!(engine.broadcast_signal("poke", ()).await.unwrap(), 0);
    assert_eq!(
        engine
            .publish_message("abort", "S-2", "late".to_string())
            .await
            .unwrap(),
        Published::Buffered
    );
    complete(&handle, "side", |_| {}).await;
    let (outcome, history) = outcome_of(&handle).await;
    let data = completed(outcome, &history);
    assert_eq!(
        (data.reason.as_str(), data.undone, data.notes, data.after),
        ("", 0, 2, 1)
    );
    assert_eq!(runs(&history, "abort"), 0);
    assert_eq!(count(&history, "work", &done(&[])), 1);
    assert_eq!(engine.broker_stats().buffered, 1);
}

/// The process's interrupting message start cancels a running sub-process with
/// everything in it — its user task, a non-interrupting run of its own event
/// sub-process — and disarms the sub-process's starts with the process's.
#[tokio::test(start_paused = true)]
async fn an_interrupting_start_of_the_process_cancels_a_sub_process_with_its_starts() {
    let engine = Engine::new();
    let handle = engine.start(&ARMED, order("N-1")).await.unwrap();
    expect_open_work(&handle, "review").await;
    expect_open_work(&handle, "inner").await;
    assert_eq!(engine.broadcast_signal("poke", ()).await.unwrap(), 1);
    expect_open_work(&handle, "poke_ack").await;
    assert_eq!(
        engine.publish_message("cancel", "N-1", ()).await.unwrap(),
        Published::Delivered
    );
    let (outcome, history) = outcome_of(&handle).await;
    completed(outcome, &history);
    let mut cancelled: Vec<&str> = steps(&history)
        .into_iter()
        .filter(|r| r.2 == Happening::Cancelled)
        .map(|r| r.1)
        .collect();
    cancelled.sort_unstable();
    assert_eq!(cancelled, ["inner", "poke_ack", "review", "work"]);
    assert_eq!(history.steps().last().unwrap().node, "cancelled");
    assert_eq!(engine.broadcast_signal("poke", ()).await.unwrap(), 0);
    assert_eq!(engine.broadcast_signal("ping", ()).await.unwrap(), 0);
    assert_eq!(
        engine.publish_message("abort", "N-1", ()).await.unwrap(),
        Published::Buffered
    );
}

/// A sub-process whose own path has ended still runs while a non-interrupting run
/// of its event sub-process does — and its starts stay armed meanwhile; it
/// completes when the last run ends.
#[tokio::test(start_paused = true)]
async fn a_sub_process_waits_for_its_running_event_sub_processes() {
    let engine = Engine::new();
    let handle = engine.start(&ARMED, order("N-2")).await.unwrap();
    complete(&handle, "review", |_| {}).await;
    expect_open_work(&handle, "inner").await;
    assert_eq!(engine.broadcast_signal("poke", ()).await.unwrap(), 1);
    expect_open_work(&handle, "poke_ack").await;
    complete(&handle, "inner", |_| {}).await;
    expect_that(&handle, "the inner path ended", |h| ends(h, "w_done") == 1).await;
    let history = handle.history().await;
    assert_eq!(count(&history, "work", &done(&[])), 0, "{history}");
    assert_eq!(engine.broadcast_signal("poke", ()).await.unwrap(), 1);
    expect_that(&handle, "the second poke waits", |h| {
        count(h, "poke_ack", &Happening::Parked) == 2
    })
    .await;
    complete(&handle, "poke_ack", |_| {}).await;
    expect_that(&handle, "the first poke ended", |h| ends(h, "poked") == 1).await;
    assert_eq!(count(&handle.history().await, "work", &done(&[])), 0);
    complete(&handle, "poke_ack", |_| {}).await;
    let (outcome, history) = outcome_of(&handle).await;
    completed(outcome, &history);
    assert_eq!(ends(&history, "poked"), 2);
    let work_done = common::position(&history, "work", |w| *w == done(&[]));
    let last_poke = history
        .steps()
        .iter()
        .rposition(|s| s.node == "poked")
        .unwrap();
    assert!(last_poke < work_done, "{history}");
    assert_eq!(engine.broadcast_signal("poke", ()).await.unwrap(), 0);
}

process! {
    /// Two tokens run the sub-process `work` at once, each its own instance of it
    /// with its own interrupting message start (the same name and key): `both` lets
    /// each token through on its own, on purpose (a multi-merge).
    TWICE: Order {
        start    begin;
        parallel fork;
        task     left = after;
        task     right = after;
        exclusive both: multi;
        subprocess work {
            start w_begin;
            user  inner;
            end   w_done;
            w_begin -> inner -> w_done;
            event_subprocess on_abort {
                start abort: message("abort", key = |o| o.id.clone());
                task  undo = undo;
                end   aborted;
                abort -> undo -> aborted;
            }
        }
        end      done;
        begin -> fork -> left, right;
        left, right -> both -> work;
        work -> done;
    }
}

/// Two instances of one sub-process at once, each with its interrupting message
/// start subscribed under the same name and key: a message interrupts one of them
/// only (the other's user task still waits), the next message the other.
#[tokio::test(start_paused = true)]
async fn each_instance_of_a_sub_process_has_its_own_event_sub_processes() {
    let engine = Engine::new();
    let handle = engine.start(&TWICE, order("N-5")).await.unwrap();
    expect_that(&handle, "both instances wait", |h| {
        count(h, "inner", &Happening::Parked) == 2
    })
    .await;
    assert_eq!(
        engine.publish_message("abort", "N-5", ()).await.unwrap(),
        Published::Delivered
    );
    expect_that(&handle, "one was aborted", |h| ends(h, "aborted") == 1).await;
    settle().await;
    let history = handle.history().await;
    assert_eq!(open_work(&handle).await, ["inner"], "{history}");
    assert_eq!(count(&history, "inner", &Happening::Cancelled), 1);
    assert_eq!(ends(&history, "done"), 1, "{history}");
    assert_eq!(
        engine.publish_message("abort", "N-5", ()).await.unwrap(),
        Published::Delivered
    );
    let (outcome, history) = outcome_of(&handle).await;
    let data = completed(outcome, &history);
    assert_eq!(data.undone, 2);
    assert_eq!(count(&history, "inner", &Happening::Cancelled), 2);
    assert_eq!(count(&history, "work", &done(&[])), 2);
    assert_eq!(ends(&history, "done"), 2);
}
