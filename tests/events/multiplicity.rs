//! Multiplicity: a message serves one waiter, a signal every waiter (T-4), a timer its own.

use super::*;

// ----- multiplicity: a message one waiter, a signal every waiter, a timer its own ---

/// Two instances wait for the same message name and key: one publish advances
/// exactly one (the one that subscribed first), a second publish the other.
#[tokio::test(start_paused = true)]
async fn a_message_serves_exactly_one_correlated_waiter() {
    let engine = Engine::new();
    let first = engine.start(&PAY, deal("same")).await.unwrap();
    expect_parked(&first, "paid").await;
    let second = engine.start(&PAY, deal("same")).await.unwrap();
    expect_parked(&second, "paid").await;

    assert_eq!(
        engine
            .publish_message("payment", "same", 1_u64)
            .await
            .unwrap(),
        Published::Delivered
    );
    let (outcome, history) = finish(&first).await;
    assert_eq!(completed(outcome, &history).paid, 1);
    an_hour_later().await;
    assert!(!second.is_finished());
    assert_eq!(steps(&second.history().await), pay_parked());

    assert_eq!(
        engine
            .publish_message("payment", "same", 2_u64)
            .await
            .unwrap(),
        Published::Delivered
    );
    let (outcome, history) = finish(&second).await;
    assert_eq!(completed(outcome, &history).paid, 2);
    assert_eq!(steps(&history), pay_completed());
    assert_eq!(
        engine.broker_stats(),
        BrokerStats {
            delivered: 2,
            ..BrokerStats::default()
        }
    );
}

/// The same, raced: two instances wait (or are about to) on one key and two messages
/// are published at once from two threads. Each instance takes exactly one, and the
/// two take different ones.
async fn two_messages_two_waiters(_: Engine, i: usize) {
    let engine = Engine::new();
    let key = format!("pair-{i}");
    let a = engine.start(&PAY, deal(&key)).await.unwrap();
    let b = engine.start(&PAY, deal(&key)).await.unwrap();
    if i.is_multiple_of(2) {
        expect_parked(&a, "paid").await;
        expect_parked(&b, "paid").await;
    }
    let publishers: Vec<_> = [1_u64, 2]
        .into_iter()
        .map(|amount| {
            let (engine, key) = (engine.clone(), key.clone());
            std::thread::spawn(move || {
                at_once(engine.publish_message("payment", key, amount)).unwrap()
            })
        })
        .collect();
    for publisher in publishers {
        assert_ne!(publisher.join().expect("publisher"), Published::Dropped);
    }
    let mut paid = Vec::new();
    for h in [&a, &b] {
        let (outcome, history) = finish(h).await;
        paid.push(completed(outcome, &history).paid);
        assert_eq!(steps(&history), pay_completed());
    }
    paid.sort_unstable();
    assert_eq!(paid, [1, 2]);
    assert_eq!(
        engine.broker_stats(),
        BrokerStats {
            delivered: 2,
            ..BrokerStats::default()
        }
    );
    engine.shutdown(HANG).await.expect("loops stop");
}

flavors!(two_messages_two_waiters);

process! {
    /// Two branches of one instance listen for the same signal.
    TWO_LISTENERS: Deal {
        start    s;
        parallel fork;
        catch    left: signal("ping", apply = |d, n: &u64| d.paid = *n);
        catch    right: signal("ping", apply = |d, n: &u64| d.amount = *n);
        parallel join;
        end      e;
        s -> fork -> left, right;
        left, right -> join -> e;
    }
}

/// One broadcast reaches every waiting catcher: two in one instance's parallel
/// branches and one in another instance.
#[tokio::test(start_paused = true)]
async fn a_signal_serves_every_waiter() {
    let engine = Engine::new();
    let both = engine.start(&TWO_LISTENERS, deal("both")).await.unwrap();
    let one = engine.start(&LISTENER, deal("one")).await.unwrap();
    expect_parked(&both, "left").await;
    expect_parked(&both, "right").await;
    expect_parked(&one, "heard").await;
    assert_eq!(engine.broadcast_signal("ping", 9_u64).await.unwrap(), 3);
    let (outcome, history) = finish(&both).await;
    let data = completed(outcome, &history);
    assert_eq!((data.paid, data.amount), (9, 9));
    assert_eq!(history.count("left", |w| *w == caught(&["paid"])), 1);
    assert_eq!(history.count("right", |w| *w == caught(&["amount"])), 1);
    assert_eq!(history.fired("join"), 1);
    let (outcome, history) = finish(&one).await;
    assert_eq!(completed(outcome, &history).paid, 9);
    // A signal is not a message: the broker saw nothing.
    assert_eq!(engine.broker_stats(), BrokerStats::default());
}

/// A signal broadcast before anyone waits is not kept for a later catcher.
#[tokio::test(start_paused = true)]
async fn a_signal_is_not_kept_for_a_later_catcher() {
    let engine = Engine::new();
    assert_eq!(engine.broadcast_signal("ping", 5_u64).await.unwrap(), 0);
    let h = engine.start(&LISTENER, deal("later")).await.unwrap();
    expect_parked(&h, "heard").await;
    an_hour_later().await;
    assert!(!h.is_finished());
    assert_eq!(engine.broadcast_signal("ping", 6_u64).await.unwrap(), 1);
    let (outcome, history) = finish(&h).await;
    assert_eq!(completed(outcome, &history).paid, 6);
}

process! {
    /// Three timers in three branches: each fires on its own registration.
    THREE_TIMERS: Deal {
        start    s;
        parallel fork;
        catch    one: timer(Duration::from_secs(1));
        catch    two: timer(Duration::from_secs(2));
        catch    also_one: timer(Duration::from_secs(1));
        parallel join;
        end      e;
        s -> fork -> one, two, also_one;
        one, two, also_one -> join -> e;
    }
}

/// Three timers in three branches (1 s, 2 s, 1 s) each fire on their own
/// registration: at 1.5 s both one-second timers have fired and the two-second one
/// has not; the instance completes at exactly 2 s.
#[tokio::test(start_paused = true)]
async fn each_timer_fires_on_its_own_registration() {
    let engine = Engine::new();
    let t0 = Instant::now();
    let h = engine.start(&THREE_TIMERS, deal("timers")).await.unwrap();
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let history = h.history().await;
    assert_eq!(history.count("one", |w| *w == caught(&[])), 1, "{history}");
    assert_eq!(
        history.count("also_one", |w| *w == caught(&[])),
        1,
        "{history}"
    );
    assert_eq!(
        history.count("two", |w| *w == Happening::Parked),
        1,
        "{history}"
    );
    assert_eq!(history.count("two", |w| *w == caught(&[])), 0, "{history}");
    let (outcome, history) = finish(&h).await;
    completed(outcome, &history);
    assert_eq!(t0.elapsed(), Duration::from_secs(2));
    for node in ["one", "two", "also_one"] {
        assert_eq!(history.count(node, |w| *w == caught(&[])), 1, "{history}");
    }
    assert_eq!(history.fired("join"), 1);
}

// ----- T-4: a signal reaches every catcher -------------------------------------------

/// T-4 (FR-6). Two hundred instances wait for `ping`; a bystander waits for a message.
/// A broadcast nobody catches reaches 0 and changes nothing. `ping`, broadcast from
/// another thread, reaches exactly the 200 and each completes with its payload; the
/// bystander is untouched; a second `ping` reaches nobody. Five rounds, each on a
/// fresh engine.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn t4_a_signal_reaches_every_catcher_across_instances() {
    for round in 0..5_u64 {
        let engine = Engine::new();
        let mut listeners: Vec<_> = Vec::new();
        for i in 0..200 {
            listeners.push(
                engine
                    .start(&LISTENER, deal(format!("l{i}")))
                    .await
                    .unwrap(),
            );
        }
        let bystander = engine.start(&PAY, deal("bystander")).await.unwrap();
        for h in &listeners {
            expect_parked(h, "heard").await;
        }
        expect_parked(&bystander, "paid").await;

        assert_eq!(
            engine
                .broadcast_signal("nobody-listens", 1_u64)
                .await
                .unwrap(),
            0
        );
        for _ in 0..100 {
            tokio::task::yield_now().await;
        }
        for h in &listeners {
            assert!(!h.is_finished());
            assert_eq!(
                steps(&h.history().await),
                [
                    (0, "s", Happening::Started),
                    (0, "heard", Happening::Parked)
                ]
            );
        }

        let payload = 1_000 + round;
        let broadcaster = engine.clone();
        let reached = tokio::task::spawn_blocking(move || {
            at_once(broadcaster.broadcast_signal("ping", payload)).unwrap()
        })
        .await
        .expect("broadcaster");
        assert_eq!(reached, 200);
        for h in &listeners {
            let (outcome, history) = finish(h).await;
            assert_eq!(completed(outcome, &history).paid, payload);
            assert_eq!(
                steps(&history),
                [
                    (0, "s", Happening::Started),
                    (0, "heard", Happening::Parked),
                    (0, "heard", caught(&["paid"])),
                    (0, "e", Happening::Ended),
                ]
            );
        }
        assert_eq!(engine.broadcast_signal("ping", 0_u64).await.unwrap(), 0);
        assert!(!bystander.is_finished());
        assert_eq!(steps(&bystander.history().await), pay_parked());
        assert_eq!(engine.broker_stats(), BrokerStats::default());
        engine.shutdown(HANG).await.expect("every loop stops");
        assert_eq!(engine.running_instances(), 0);
        assert!(matches!(bystander.outcome().await, Outcome::Cancelled(_)));
    }
}
