//! Cancel and shutdown with event sub-processes armed leave no subscription.

use super::*;

/// Cancel or shut down an instance whose process and sub-process have every kind of
/// subscribing start armed (message, signal, timer, condition), with `pings`
/// non-interrupting runs waiting at their user tasks in each: every track ends
/// cancelled, and no subscription is left — a signal reaches no catcher, a message is
/// buffered.
async fn stopping_with_event_sub_processes_armed(_: Engine, i: usize) {
    let engine = Engine::new();
    let id = format!("armed-{i}");
    let shutdown = i % 2 == 1;
    let pings = i / 2 % 3;
    let handle = engine.start(&ARMED, order(&id)).await.unwrap();
    expect_open_work(&handle, "review").await;
    expect_open_work(&handle, "inner").await;
    for k in 1..=pings {
        assert_eq!(engine.broadcast_signal("ping", ()).await.unwrap(), 1);
        assert_eq!(engine.broadcast_signal("poke", ()).await.unwrap(), 1);
        expect_that(&handle, "the pings wait", |h| {
            count(h, "ping_ack", &Happening::Parked) == k
                && count(h, "poke_ack", &Happening::Parked) == k
        })
        .await;
    }
    if shutdown {
        engine
            .shutdown(Duration::from_secs(10))
            .await
            .expect("the loop stops");
    } else {
        handle.cancel();
    }
    let (outcome, history) = outcome_of(&handle).await;
    assert!(matches!(outcome, Outcome::Cancelled(_)), "{history}");
    let mut cancelled: Vec<&str> = steps(&history)
        .into_iter()
        .filter(|r| r.2 == Happening::Cancelled)
        .map(|r| r.1)
        .collect();
    cancelled.sort_unstable();
    let mut want = vec!["inner", "review", "work"];
    want.extend(std::iter::repeat_n("ping_ack", pings));
    want.extend(std::iter::repeat_n("poke_ack", pings));
    want.sort_unstable();
    assert_eq!(cancelled, want, "{history}");
    // The loop publishes the outcome just before its task ends.
    until_true("the instance loop stops", || {
        engine.running_instances() == 0
    })
    .await;
    assert_eq!(engine.broadcast_signal("ping", ()).await.unwrap(), 0);
    assert_eq!(engine.broadcast_signal("poke", ()).await.unwrap(), 0);
    for name in ["cancel", "abort"] {
        assert_eq!(
            engine.publish_message(name, &id, ()).await.unwrap(),
            Published::Buffered
        );
    }
    assert_eq!(engine.broker_stats().buffered, 2);
    assert_eq!(engine.broker_stats().delivered, 0);
}

flavors!(stopping_with_event_sub_processes_armed);

/// Cancelling an instance races a storm of signals for its non-interrupting
/// start, from another thread: it always ends cancelled, every run it started is
/// either ended or cancelled, and nothing is left subscribed.
async fn a_cancel_racing_event_sub_process_signals(_: Engine, i: usize) {
    let engine = Engine::new();
    let id = format!("storm-{i}");
    let handle = engine.start(&ARMED, order(&id)).await.unwrap();
    expect_open_work(&handle, "review").await;
    expect_open_work(&handle, "inner").await;
    let storm = storm(&engine, "ping");
    jitter().await;
    handle.cancel();
    let reached = storm.join().expect("the storm");
    let (outcome, history) = outcome_of(&handle).await;
    assert!(matches!(outcome, Outcome::Cancelled(_)), "{history}");
    let started = runs(&history, "ping");
    assert!(
        started <= reached,
        "{started} runs, {reached} reached\n{history}"
    );
    // Each run was cancelled where it was: at its start (its catch not yet in) or
    // at its user task.
    let cancelled = count(&history, "ping", &Happening::Cancelled)
        + count(&history, "ping_ack", &Happening::Cancelled);
    assert_eq!(cancelled, started, "{history}");
    assert_eq!(engine.broadcast_signal("ping", ()).await.unwrap(), 0);
    assert_eq!(
        engine.publish_message("cancel", &id, ()).await.unwrap(),
        Published::Buffered
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_cancel_racing_event_sub_process_signals_multi_thread() {
    repeat(RUNS, a_cancel_racing_event_sub_process_signals).await;
}
