//! Interrupting and non-interrupting message and signal starts.

use super::*;

process! {
    /// A user task and a slow task side by side; an interrupting message start that
    /// waits at a user task, and a non-interrupting signal start that waits at one.
    CANCELLABLE: Order {
        start    begin;
        parallel fork;
        user     review;
        task     slow = slow;
        parallel join;
        end      done;
        begin -> fork -> review, slow;
        review, slow -> join -> done;
        event_subprocess on_cancel {
            start cancel: message("cancel", key = |o| o.id.clone(), apply = |o, p: &String| o.reason = p.clone());
            task  undo = undo;
            user  confirm;
            end   cancelled;
            cancel -> undo -> confirm -> cancelled;
        }
        event_subprocess on_ping {
            start ping: non_interrupting signal("ping", apply = |o, n: &u32| o.pings += *n);
            user  ack;
            end   acked;
            ping -> ack -> acked;
        }
    }
}

/// An interrupting message start at the top level, while a user task waits, a slow
/// task runs and a non-interrupting event sub-process waits at its own user task:
/// all three are cancelled (the slow handler is dropped, its write never lands), the
/// other event sub-processes are disarmed at once (a signal reaches no catcher, a
/// second message is buffered, even while the interrupting one still runs), and the
/// instance completes when the interrupting one ends.
#[tokio::test(start_paused = true)]
async fn an_interrupting_message_start_cancels_the_process_and_completes_it() {
    let engine = Engine::new();
    let handle = engine.start(&CANCELLABLE, order("A-1")).await.unwrap();
    expect_open_work(&handle, "review").await;
    expect_that(&handle, "slow runs", |h| {
        count(h, "slow", &Happening::TaskStarted) == 1
    })
    .await;
    assert_eq!(engine.broadcast_signal("ping", 2_u32).await.unwrap(), 1);
    expect_open_work(&handle, "ack").await;
    assert_eq!(
        engine
            .publish_message("cancel", "A-1", "customer".to_string())
            .await
            .unwrap(),
        Published::Delivered
    );
    expect_open_work(&handle, "confirm").await;
    assert_eq!(open_work(&handle).await, ["confirm"]);
    assert_eq!(engine.broadcast_signal("ping", 1_u32).await.unwrap(), 0);
    assert_eq!(
        engine
            .publish_message("cancel", "A-1", "again".to_string())
            .await
            .unwrap(),
        Published::Buffered
    );
    assert!(handle.complete("review", |_| {}).await.is_err());
    complete(&handle, "confirm", |_| {}).await;
    let (outcome, history) = outcome_of(&handle).await;
    let data = completed(outcome, &history);
    assert_eq!(
        (
            data.reason.as_str(),
            data.undone,
            data.pings,
            data.slow_wrote
        ),
        ("customer", 1, 2, false)
    );
    assert!(slow_dropped().lock().unwrap().contains("A-1"));
    assert_eq!(
        rows(&history),
        vec![
            (0, "begin", Happening::Started),
            (0, "fork", routed(&["review", "slow"])),
            (1, "fork", spawned(0)),
            (0, "review", Happening::Parked),
            (1, "slow", Happening::TaskStarted),
            (2, "ping", Happening::Started),
            (2, "ping", caught(&["pings"])),
            (2, "ack", Happening::Parked),
            (0, "review", Happening::Cancelled),
            (1, "slow", Happening::Cancelled),
            (2, "ack", Happening::Cancelled),
            (3, "cancel", Happening::Started),
            (3, "cancel", caught(&["reason"])),
            (3, "undo", Happening::TaskStarted),
            (3, "undo", done(&["undone"])),
            (3, "confirm", Happening::Parked),
            (3, "confirm", done(&[])),
            (3, "cancelled", Happening::Ended),
        ]
    );
    assert_eq!(engine.broker_stats().buffered, 1);
}

process! {
    /// A user task; non-interrupting signal and message starts.
    PINGED: Order {
        start begin;
        user  review;
        end   done;
        begin -> review -> done;
        event_subprocess on_ping {
            start ping: non_interrupting signal("ping", apply = |o, n: &u32| o.pings += *n);
            task  note = note;
            end   noted;
            ping -> note -> noted;
        }
        event_subprocess on_nudge {
            start nudge: non_interrupting message("nudge", key = |o| o.id.clone(), apply = |o, p: &String| o.reason.push_str(p));
            end   nudged;
            nudge -> nudged;
        }
    }
}

/// Non-interrupting signal and message starts, each triggered twice while the main
/// path waits: four runs beside it, each applying its payload; the main path then
/// completes the instance, after which nothing is armed. The two messages, with the
/// same key, are published back to back: the second waits in the buffer until the
/// start has subscribed again.
#[tokio::test(start_paused = true)]
async fn non_interrupting_starts_run_beside_the_main_path_as_often_as_triggered() {
    let engine = Engine::new();
    let handle = engine.start(&PINGED, order("P-1")).await.unwrap();
    expect_open_work(&handle, "review").await;
    assert_eq!(engine.broadcast_signal("ping", 2_u32).await.unwrap(), 1);
    expect_that(&handle, "the first ping is caught", |h| {
        count(h, "ping", &caught(&["pings"])) == 1
    })
    .await;
    assert_eq!(engine.broadcast_signal("ping", 5_u32).await.unwrap(), 1);
    assert_eq!(
        engine
            .publish_message("nudge", "P-1", "a".to_string())
            .await
            .unwrap(),
        Published::Delivered
    );
    assert_eq!(
        engine
            .publish_message("nudge", "P-1", "b".to_string())
            .await
            .unwrap(),
        Published::Buffered
    );
    expect_that(&handle, "every run ended", |h| {
        ends(h, "noted") == 2 && ends(h, "nudged") == 2
    })
    .await;
    assert_eq!(open_work(&handle).await, ["review"]);
    complete(&handle, "review", |_| {}).await;
    let (outcome, history) = outcome_of(&handle).await;
    let data = completed(outcome, &history);
    assert_eq!((data.pings, data.notes), (7, 2));
    // Both runs caught their message. Each run applies its payload to its own copy
    // of the data as it was when its trigger came, and a commit keeps the later
    // write of a field: when the second message came before the first run's commit,
    // "a" is overwritten.
    assert!(["b", "ab"].contains(&data.reason.as_str()), "{data:?}");
    assert_eq!((runs(&history, "ping"), runs(&history, "nudge")), (2, 2));
    assert_eq!(count(&history, "review", &done(&[])), 1);
    assert_eq!(ends(&history, "done"), 1);
    assert_eq!(engine.broadcast_signal("ping", 1_u32).await.unwrap(), 0);
    assert_eq!(
        engine
            .publish_message("nudge", "P-1", "c".to_string())
            .await
            .unwrap(),
        Published::Buffered
    );
    assert_eq!(engine.broker_stats().delivered, 2);
}

/// The main path completing at once is not held up by armed event sub-processes.
#[tokio::test(start_paused = true)]
async fn armed_event_sub_processes_do_not_keep_an_instance_alive() {
    let engine = Engine::new();
    let handle = engine.start(&PINGED, order("P-2")).await.unwrap();
    complete(&handle, "review", |_| {}).await;
    let (outcome, history) = outcome_of(&handle).await;
    completed(outcome, &history);
    assert_eq!(
        steps(&history),
        vec![
            (0, "begin", Happening::Started),
            (0, "review", Happening::Parked),
            (0, "review", done(&[])),
            (0, "done", Happening::Ended),
        ]
    );
    assert_eq!(engine.broadcast_signal("ping", 1_u32).await.unwrap(), 0);
}
