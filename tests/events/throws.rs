//! Throw events and throwing end events.

use super::*;

process! {
    /// A signal throw in mid-flow.
    PINGER: Deal {
        start s;
        throw ping: signal("ping", payload = |d| d.amount);
        end   e;
        s -> ping -> e;
    }
}

/// An intermediate signal throw reaches every waiting catch in other instances (and
/// says how many); with none waiting it reaches 0 and goes on all the same.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_signal_throw_reaches_other_instances() {
    for round in 0..50_u64 {
        let engine = Engine::new();
        let mut listeners: Vec<_> = Vec::new();
        for i in 0..3 {
            listeners.push(
                engine
                    .start(&LISTENER, deal(format!("l{i}")))
                    .await
                    .unwrap(),
            );
        }
        for h in &listeners {
            expect_parked(h, "heard").await;
        }
        let thrower = Deal {
            amount: 70 + round,
            ..deal("pinger")
        };
        let (outcome, history) = run(&engine, &PINGER, thrower.clone()).await;
        assert_eq!(completed(outcome, &history), thrower);
        assert_eq!(
            steps(&history),
            [
                (0, "s", Happening::Started),
                (0, "ping", thrown(3)),
                (0, "e", Happening::Ended),
            ]
        );
        for h in &listeners {
            let (outcome, history) = finish(h).await;
            assert_eq!(completed(outcome, &history).paid, 70 + round);
        }
        let (outcome, history) = run(&engine, &PINGER, thrower).await;
        completed(outcome, &history);
        assert_eq!(history.count("ping", |w| *w == thrown(0)), 1);
    }
}

process! {
    /// A message throw in mid-flow, correlated by `id`.
    SENDER: Deal {
        start s;
        throw send: message("order", key = |d| d.id.clone(), payload = |d| d.amount);
        end   e;
        s -> send -> e;
    }
}

/// A message throw goes to the one receive task correlated by its key: delivered to a
/// waiting one (`Thrown { catchers: 1 }`), buffered for a later one (`0`).
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_message_throw_reaches_the_correlated_receiver() {
    let engine = Engine::new();
    for i in 0..100_u64 {
        let waiting = engine
            .start(&RECEIVER, deal(format!("o{i}")))
            .await
            .unwrap();
        let other = engine
            .start(&RECEIVER, deal(format!("x{i}")))
            .await
            .unwrap();
        expect_parked(&waiting, "take").await;
        expect_parked(&other, "take").await;
        let sender = Deal {
            amount: i + 1,
            ..deal(format!("o{i}"))
        };
        let (outcome, history) = run(&engine, &SENDER, sender).await;
        completed(outcome, &history);
        assert_eq!(
            steps(&history),
            [
                (0, "s", Happening::Started),
                (0, "send", thrown(1)),
                (0, "e", Happening::Ended),
            ]
        );
        let (outcome, history) = finish(&waiting).await;
        assert_eq!(completed(outcome, &history).amount, i + 1);
        assert!(!other.is_finished());
        other.cancel();
        assert!(matches!(other.outcome().await, Outcome::Cancelled(_)));

        // Nobody waits for `later{i}` yet: the message is buffered.
        let sender = Deal {
            amount: 500 + i,
            ..deal(format!("later{i}"))
        };
        let (outcome, history) = run(&engine, &SENDER, sender).await;
        completed(outcome, &history);
        assert_eq!(history.count("send", |w| *w == thrown(0)), 1);
        let (outcome, history) = run(&engine, &RECEIVER, deal(format!("later{i}"))).await;
        assert_eq!(completed(outcome, &history).amount, 500 + i);
    }
    assert_eq!(
        engine.broker_stats(),
        BrokerStats {
            delivered: 200,
            ..BrokerStats::default()
        }
    );
    engine.shutdown(HANG).await.expect("loops stop");
}

process! {
    /// A throwing end: a signal.
    END_SIGNAL: Deal {
        start s;
        end   finished: signal("ping", payload = |d| d.amount);
        s -> finished;
    }
}

process! {
    /// A throwing end: a message.
    END_MESSAGE: Deal {
        start s;
        end   sent: message("order", key = |d| d.id.clone(), payload = |d| d.amount);
        s -> sent;
    }
}

/// Throwing ends: a signal end and a message end send as they end.
#[tokio::test(start_paused = true)]
async fn throwing_ends_send_as_they_end() {
    let engine = Engine::new();
    let listener = engine.start(&LISTENER, deal("l")).await.unwrap();
    let receiver = engine.start(&RECEIVER, deal("r")).await.unwrap();
    expect_parked(&listener, "heard").await;
    expect_parked(&receiver, "take").await;

    let (outcome, history) = run(
        &engine,
        &END_SIGNAL,
        Deal {
            amount: 11,
            ..deal("x")
        },
    )
    .await;
    completed(outcome, &history);
    assert_eq!(
        steps(&history),
        [
            (0, "s", Happening::Started),
            (0, "finished", thrown(1)),
            (0, "finished", Happening::Ended),
        ]
    );
    let (outcome, history) = finish(&listener).await;
    assert_eq!(completed(outcome, &history).paid, 11);

    let (outcome, history) = run(
        &engine,
        &END_MESSAGE,
        Deal {
            amount: 12,
            ..deal("r")
        },
    )
    .await;
    completed(outcome, &history);
    assert_eq!(
        steps(&history),
        [
            (0, "s", Happening::Started),
            (0, "sent", thrown(1)),
            (0, "sent", Happening::Ended),
        ]
    );
    let (outcome, history) = finish(&receiver).await;
    assert_eq!(completed(outcome, &history).amount, 12);
}

process! {
    /// One branch throws what the other catches: a signal, then a message.
    TALK_TO_SELF: Deal {
        start    s;
        parallel fork;
        catch    heard: signal("self", apply = |d, n: &u64| d.paid = *n);
        receive  take: message("self", key = |d| d.id.clone(), apply = |d, n: &String| d.note = n.clone());
        task     prep = |d| async move {
            d.amount = 5;
            Ok(())
        };
        throw    shout: signal("self", payload = |d| d.amount);
        throw    write: message("self", key = |d| d.id.clone(), payload = |d| format!("{} to self", d.id));
        parallel join;
        end      e;
        s -> fork -> heard, take, prep;
        prep -> shout -> write;
        heard, take, write -> join -> e;
    }
}

/// A throw reaches a catch of its own instance: one branch signals and then messages
/// what the other two branches wait for.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn an_instance_reaches_its_own_catches() {
    let engine = Engine::new();
    for i in 0..200 {
        let id = format!("me{i}");
        let (outcome, history) = run(&engine, &TALK_TO_SELF, deal(&id)).await;
        let data = completed(outcome, &history);
        assert_eq!((data.paid, data.note), (5, format!("{id} to self")));
        assert_eq!(history.count("shout", |w| *w == thrown(1)), 1, "{history}");
        assert_eq!(history.count("write", |w| *w == thrown(1)), 1, "{history}");
        assert_eq!(history.count("heard", |w| *w == caught(&["paid"])), 1);
        assert_eq!(history.count("take", |w| *w == done(&["note"])), 1);
    }
    assert_eq!(
        engine.broker_stats(),
        BrokerStats {
            delivered: 200,
            ..BrokerStats::default()
        }
    );
}
