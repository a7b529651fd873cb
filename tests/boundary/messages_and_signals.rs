//! Message and signal boundaries, interrupting and not, on receive and user tasks, and
//! racing the end of the activity.

use super::*;

/// How a message/signal boundary scenario ends its activity.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Ending {
    /// The activity completes: the receive task's message, the user task's completion.
    Normally,
    /// The interrupting message boundary `revoke`.
    Revoked,
    /// The interrupting signal boundary `cancel`.
    Cancelled,
}

/// Message and signal boundaries on `activity` (the receive task `take` of `RECEIVE`
/// or the user task `review` of `REVIEW`): `nudges` non-interrupting messages and
/// `pokes` non-interrupting signals each start a token at their boundary (a message
/// boundary subscribes again after each; a message for another key is not its); then
/// the activity ends as `ending` says. At the next user task, every boundary is gone:
/// signals reach no catcher, messages are buffered — including the receive task's own
/// when it was interrupted.
async fn message_and_signal_boundaries(
    process: &'static thresh::Process<Job>,
    activity: &'static str,
    i: usize,
) {
    let engine = Engine::new();
    let id = format!("mb-{i}");
    let nudges = i % 3;
    let pokes = i / 3 % 3;
    let ending = [Ending::Normally, Ending::Revoked, Ending::Cancelled][i / 9 % 3];
    let handle = engine.start(process, job(&id)).await.unwrap();
    expect_that(&handle, "the activity waits", |h| {
        count(h, activity, &Happening::Parked) == 1
    })
    .await;
    // Another instance's key: buffered, not caught.
    assert_eq!(
        engine
            .publish_message("nudge", format!("{id}-other"), ())
            .await
            .unwrap(),
        Published::Buffered
    );
    for k in 0..nudges.max(pokes) {
        if k < nudges {
            let published = engine.publish_message("nudge", &id, ()).await.unwrap();
            assert_ne!(published, Published::Dropped);
        }
        if k < pokes {
            assert_eq!(engine.broadcast_signal("poke", ()).await.unwrap(), 1);
        }
    }
    expect_that(&handle, "every nudge and poke was caught", |h| {
        spawns(h, "nudge") == nudges && spawns(h, "poke") == pokes
    })
    .await;
    match ending {
        Ending::Normally if activity == "take" => {
            assert_eq!(
                engine.publish_message("order", &id, 7_u64).await.unwrap(),
                Published::Delivered
            );
        }
        Ending::Normally => {
            handle
                .complete(activity, |j: &mut Job| j.rounds = 1)
                .await
                .expect("the user task is open");
        }
        Ending::Revoked => {
            assert_eq!(
                engine
                    .publish_message("revoke", &id, String::from("revoked"))
                    .await
                    .unwrap(),
                Published::Delivered
            );
        }
        Ending::Cancelled => {
            assert_eq!(
                engine
                    .broadcast_signal("cancel", String::from("cancelled"))
                    .await
                    .unwrap(),
                1
            );
        }
    }
    expect_open_work(&handle, "after").await;
    // The activity is over: so are its boundaries.
    assert_eq!(engine.broadcast_signal("poke", ()).await.unwrap(), 0);
    assert_eq!(
        engine
            .broadcast_signal("cancel", String::new())
            .await
            .unwrap(),
        0
    );
    assert_eq!(
        engine.publish_message("nudge", &id, ()).await.unwrap(),
        Published::Buffered
    );
    assert_eq!(
        engine
            .publish_message("revoke", &id, String::new())
            .await
            .unwrap(),
        Published::Buffered
    );
    let mut buffered = 3;
    if activity == "take" && ending != Ending::Normally {
        assert_eq!(
            engine.publish_message("order", &id, 9_u64).await.unwrap(),
            Published::Buffered
        );
        buffered += 1;
    }
    let delivered = nudges
        + usize::from(ending == Ending::Revoked)
        + usize::from(ending == Ending::Normally && activity == "take");
    assert_eq!(
        engine.broker_stats(),
        BrokerStats {
            delivered: delivered as u64,
            buffered,
            ..BrokerStats::default()
        }
    );
    complete(&handle, "after", |_: &mut Job| {}).await;
    let (outcome, history) = finish_strict(&handle).await;
    let data = completed(outcome, &history);
    assert_eq!(spawns(&history, "nudge"), nudges);
    assert_eq!(spawns(&history, "poke"), pokes);
    assert_eq!(count(&history, "nudged", &Happening::Ended), nudges);
    assert_eq!(count(&history, "poked", &Happening::Ended), pokes);
    let interruptions = indices(&history, activity, |h| {
        matches!(h, Happening::Interrupted { .. })
    });
    match ending {
        Ending::Normally => {
            assert!(interruptions.is_empty(), "{history}");
            assert_eq!(completions(&history, activity), 1);
            let (amount, rounds) = if activity == "take" { (7, 0) } else { (0, 1) };
            assert_eq!(
                (data.amount, data.rounds, data.reason.as_str()),
                (amount, rounds, "")
            );
        }
        Ending::Revoked | Ending::Cancelled => {
            let (by, why) = if ending == Ending::Revoked {
                ("revoke", "revoked")
            } else {
                ("cancel", "cancelled")
            };
            assert_eq!(interruptions.len(), 1, "{history}");
            assert_eq!(history.steps()[interruptions[0]].what, interrupted(by));
            assert_eq!(count(&history, by, &caught(&["reason"])), 1);
            assert_eq!(completions(&history, activity), 0);
            assert_eq!(
                (data.amount, data.rounds, data.reason.as_str()),
                (0, 0, why)
            );
        }
    }
    assert_eq!(completions(&history, "after"), 1);
}

process! {
    /// A receive task with every kind of message and signal boundary.
    RECEIVE: Job {
        start    s;
        receive  take: message("order", key = |j| j.id.clone(), apply = |j, n: &u64| j.amount = *n);
        boundary nudge on take: non_interrupting message("nudge", key = |j| j.id.clone());
        boundary poke on take: non_interrupting signal("poke");
        boundary revoke on take: message("revoke", key = |j| j.id.clone(), apply = |j, why: &String| j.reason = why.clone());
        boundary cancel on take: signal("cancel", apply = |j, why: &String| j.reason = why.clone());
        user     after;
        end      done;
        end      nudged;
        end      poked;
        s -> take -> after -> done;
        revoke -> after;
        cancel -> after;
        nudge -> nudged;
        poke -> poked;
    }
}

async fn message_and_signal_boundaries_on_a_receive_task(i: usize) {
    message_and_signal_boundaries(&RECEIVE, "take", i).await;
}

process! {
    /// A user task with every kind of message and signal boundary.
    REVIEW: Job {
        start    s;
        user     review;
        boundary nudge on review: non_interrupting message("nudge", key = |j| j.id.clone());
        boundary poke on review: non_interrupting signal("poke");
        boundary revoke on review: message("revoke", key = |j| j.id.clone(), apply = |j, why: &String| j.reason = why.clone());
        boundary cancel on review: signal("cancel", apply = |j, why: &String| j.reason = why.clone());
        user     after;
        end      done;
        end      nudged;
        end      poked;
        s -> review -> after -> done;
        revoke -> after;
        cancel -> after;
        nudge -> nudged;
        poke -> poked;
    }
}

async fn message_and_signal_boundaries_on_a_user_task(i: usize) {
    message_and_signal_boundaries(&REVIEW, "review", i).await;
}

multi_thread!(RUNS => message_and_signal_boundaries_on_a_receive_task,
    message_and_signal_boundaries_on_a_user_task);

/// Non-interrupting messages and signals race the activity's completion from another
/// thread: no message is lost — each is either caught by the boundary or, once the
/// activity is done, left in the broker — and no signal is caught twice.
async fn boundary_messages_racing_the_end_of_the_activity(i: usize) {
    let engine = Engine::new();
    let id = format!("race-{i}");
    let handle = engine.start(&REVIEW, job(&id)).await.unwrap();
    expect_open_work(&handle, "review").await;
    const SENT: usize = 6;
    let sender = {
        let (engine, id) = (engine.clone(), id.clone());
        std::thread::spawn(move || {
            let mut reached = 0;
            for _ in 0..SENT {
                assert_ne!(
                    at_once(engine.publish_message("nudge", &id, ())).unwrap(),
                    Published::Dropped
                );
                reached += at_once(engine.broadcast_signal("poke", ())).unwrap();
                std::thread::yield_now();
            }
            reached
        })
    };
    yield_jitter().await;
    handle
        .complete("review", |_: &mut Job| {})
        .await
        .expect("review is open");
    let reached = sender.join().expect("the sender");
    expect_open_work(&handle, "after").await;
    settle().await;
    let history = handle.history().await;
    let nudges = spawns(&history, "nudge");
    let pokes = spawns(&history, "poke");
    assert_eq!(
        nudges + engine.broker_stats().buffered,
        SENT,
        "caught {nudges}, buffered {:?}\n{history}",
        engine.broker_stats()
    );
    assert!(pokes <= reached && reached <= SENT, "{pokes} {reached}");
    // Every firing came before the activity completed.
    let end = index_of(&history, "review", &done(&[]));
    for node in ["nudge", "poke"] {
        for s in indices(&history, node, |h| matches!(h, Happening::Spawned { .. })) {
            assert!(s < end, "{history}");
        }
    }
    assert_eq!(engine.broadcast_signal("poke", ()).await.unwrap(), 0);
    complete(&handle, "after", |_: &mut Job| {}).await;
    let (outcome, history) = finish_strict(&handle).await;
    completed(outcome, &history);
}

multi_thread!(RUNS => boundary_messages_racing_the_end_of_the_activity);

// Each test below pinned a bug of the instance loop (it failed before its fix).

#[derive(Clone, Debug, Default, PartialEq, ProcessData)]
struct Pay {
    id: String,
    paid: u64,
}

process! {
    RECEIVE_OR_STOP: Pay {
        start s;
        receive pay: message("robust-pay", key = |p| p.id.clone(), apply = |p, amount: &u64| p.paid = *amount);
        boundary stop on pay: signal("robust-stop");
        end paid;
        end stopped;
        s -> pay -> paid;
        stop -> stopped;
    }
}

/// The message is delivered first; the signal, queued behind it before the loop
/// runs, finds the receive task completing and its boundary gone: the message is
/// not lost to an interruption.
#[tokio::test]
async fn a_delivered_message_is_not_lost_to_a_boundary_queued_behind_it() {
    let engine = Engine::new();
    let handle = engine
        .start(
            &RECEIVE_OR_STOP,
            Pay {
                id: "r-1".into(),
                ..Pay::default()
            },
        )
        .await
        .unwrap();
    for _ in 0..1000 {
        if handle
            .history()
            .await
            .count("pay", |w| *w == thresh::Happening::Parked)
            > 0
        {
            break;
        }
        tokio::task::yield_now().await;
    }
    // No await between the two: both are queued before the loop runs again.
    engine
        .publish_message("robust-pay", "r-1", 40_u64)
        .await
        .unwrap();
    engine.broadcast_signal("robust-stop", ()).await.unwrap();
    let outcome = tokio::time::timeout(Duration::from_secs(5), handle.outcome())
        .await
        .expect("outcome");
    let history = handle.history().await;
    let Outcome::Completed(pay) = outcome else {
        panic!("{outcome:?}\n{history}");
    };
    assert_eq!(pay.paid, 40, "{history}");
    assert_eq!(history.ended_at(), ["paid"], "{history}");
}
