//! A receive task and its interrupting boundary events are one deferred choice (issue
//! 13, fix 2): the message that completes the task and a boundary's timer, message or
//! signal race, exactly one wins, and the broker's answers and counters say which —
//! a message that lost was never served (`Buffered`, not counted delivered).

use super::*;

process! {
    /// A receive task with a timer due at once and a recall message, both interrupting,
    /// and a non-interrupting nudge signal beside.
    AWAIT: Job {
        start    s;
        receive  pay: message("pay", key = |j| j.id.clone(), apply = |j, a: &u64| j.amount = *a);
        boundary late on pay: timer(Duration::ZERO);
        boundary recall on pay: message("recall", key = |j| j.id.clone(), apply = |j, r: &String| j.reason = r.clone());
        boundary nudge on pay: non_interrupting signal("nudge");
        end      paid;
        end      too_late;
        end      recalled;
        end      nudged;
        s -> pay -> paid;
        late -> too_late;
        recall -> recalled;
        nudge -> nudged;
    }
}

/// The timer due at once races a payment published from another thread: whichever
/// wins, the payment's publisher was told the truth.
async fn a_timer_boundary_and_the_message_race(i: usize) {
    let engine = Engine::new();
    let id = format!("p{i}");
    let handle = engine.start(&AWAIT, job(&id)).await.unwrap();
    let (publisher, key) = (engine.clone(), id.clone());
    let published = tokio::task::spawn_blocking(move || {
        at_once(publisher.publish_message("pay", key, 7_u64)).unwrap()
    })
    .await
    .expect("the publisher");
    let (outcome, history) = finish_strict(&handle).await;
    let data = completed(outcome, &history);
    let ended = |end: &str| count(&history, end, &Happening::Ended) == 1;
    let stats = engine.broker_stats();
    let said = format!("run {i}: published {published:?}, {stats:?}\n{history}");
    if ended("paid") {
        assert!(!ended("too_late"), "{said}");
        assert_eq!(data.amount, 7, "{said}");
        assert_eq!((stats.delivered, stats.buffered), (1, 0), "{said}");
    } else {
        assert!(ended("too_late"), "{said}");
        assert_eq!(data.amount, 0, "{said}");
        assert_eq!(published, Published::Buffered, "{said}");
        assert_eq!((stats.delivered, stats.buffered), (0, 1), "{said}");
    }
}

multi_thread!(500 => a_timer_boundary_and_the_message_race);

process! {
    /// A receive task with an interrupting recall message and nothing else.
    RECALLABLE: Job {
        start    s;
        receive  pay: message("pay", key = |j| j.id.clone(), apply = |j, a: &u64| j.amount = *a);
        boundary recall on pay: message("recall", key = |j| j.id.clone(), apply = |j, r: &String| j.reason = r.clone());
        boundary nudge on pay: non_interrupting signal("nudge");
        end      paid;
        end      recalled;
        end      nudged;
        s -> pay -> paid;
        recall -> recalled;
        nudge -> nudged;
    }
}

/// The payment and a recall published at the same moment from two threads once the
/// task waits: exactly one is served (`Delivered`, counted), the other `Buffered`;
/// a nudge before them fires beside, without deciding the choice.
async fn the_message_and_a_message_boundary_race(i: usize) {
    let engine = Engine::new();
    let id = format!("q{i}");
    let handle = engine.start(&RECALLABLE, job(&id)).await.unwrap();
    expect_parked(&handle, "pay").await;
    assert_eq!(engine.broadcast_signal("nudge", ()).await.unwrap(), 1);
    expect_that(&handle, "nudged", |h| {
        count(h, "nudged", &Happening::Ended) == 1
    })
    .await;
    let (e1, e2) = (engine.clone(), engine.clone());
    let (k1, k2) = (id.clone(), id.clone());
    let pay =
        tokio::task::spawn_blocking(move || at_once(e1.publish_message("pay", k1, 3_u64)).unwrap());
    let recall = tokio::task::spawn_blocking(move || {
        at_once(e2.publish_message("recall", k2, "oops".to_string())).unwrap()
    });
    let (pay, recall) = (pay.await.expect("payer"), recall.await.expect("recaller"));
    let (outcome, history) = finish_strict(&handle).await;
    let data = completed(outcome, &history);
    let stats = engine.broker_stats();
    let said = format!("run {i}: pay {pay:?}, recall {recall:?}, {stats:?}\n{history}");
    assert_eq!((stats.delivered, stats.buffered), (1, 1), "{said}");
    if count(&history, "paid", &Happening::Ended) == 1 {
        assert_eq!(
            (pay, recall),
            (Published::Delivered, Published::Buffered),
            "{said}"
        );
        assert_eq!((data.amount, data.reason.as_str()), (3, ""), "{said}");
    } else {
        assert_eq!(count(&history, "recalled", &Happening::Ended), 1, "{said}");
        assert_eq!(
            (pay, recall),
            (Published::Buffered, Published::Delivered),
            "{said}"
        );
        assert_eq!((data.amount, data.reason.as_str()), (0, "oops"), "{said}");
    }
}

multi_thread!(500 => the_message_and_a_message_boundary_race);
