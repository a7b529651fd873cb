//! Deployed processes started by messages.

use super::*;

/// A published message starts an instance: `Published::Started`, the deployment yields
/// its handle, and it completes with the deployment's data and the payload applied.
/// Nothing else starts.
#[tokio::test(start_paused = true)]
async fn a_message_starts_an_instance_with_its_payload() {
    let engine = Engine::new();
    let mut orders = engine.deploy(&ORDER, tagged("shop")).expect("deployed");
    assert_eq!(
        engine
            .publish_message("order", "A-1", placed("A-1", 250))
            .await
            .unwrap(),
        Published::Started
    );
    let h = next_handle(&mut orders).await;
    let (outcome, history) = finish(&h).await;
    assert_eq!(
        completed(outcome, &history),
        Order {
            id: "A-1".into(),
            amount: 250,
            extra: 0,
            tag: "shop".into(),
        }
    );
    assert_eq!(steps(&history), order_history());
    assert_eq!(
        engine.broker_stats(),
        BrokerStats {
            delivered: 1,
            ..BrokerStats::default()
        }
    );
    no_handle_for_an_hour(&mut orders).await;
    engine.shutdown(HANG).await.expect("every loop stops");
    ended(&mut orders).await;
    assert_eq!(engine.running_instances(), 0);
}

/// While an instance started by key `K` runs, a message with `K` goes to it — here to
/// its `catch more`, which is already waiting: `Published::Delivered` — and starts no
/// new instance. Once it has ended, `K` starts a new instance.
#[tokio::test(start_paused = true)]
async fn a_message_with_a_running_key_goes_to_that_instance() {
    let engine = Engine::new();
    let mut orders = engine
        .deploy(&ORDER_MORE, tagged("shop"))
        .expect("deployed");
    assert_eq!(
        engine
            .publish_message("order", "K", placed("K", 10))
            .await
            .unwrap(),
        Published::Started
    );
    let first = next_handle(&mut orders).await;
    expect_parked(&first, "more").await;
    assert_eq!(
        engine
            .publish_message("order", "K", placed("K", 5))
            .await
            .unwrap(),
        Published::Delivered
    );
    let (outcome, history) = finish(&first).await;
    assert_eq!(
        completed(outcome, &history),
        Order {
            id: "K".into(),
            amount: 10,
            extra: 5,
            tag: "shop".into(),
        }
    );
    assert_eq!(steps(&history), order_more_history());
    no_handle_for_an_hour(&mut orders).await;

    // It has ended: the same key starts a new instance.
    assert_eq!(
        engine
            .publish_message("order", "K", placed("K", 20))
            .await
            .unwrap(),
        Published::Started
    );
    let second = next_handle(&mut orders).await;
    assert_ne!(second.id(), first.id());
    expect_parked(&second, "more").await;
    assert!(!second.is_finished());
    assert_eq!(
        engine
            .publish_message("order", "K", placed("K", 2))
            .await
            .unwrap(),
        Published::Delivered
    );
    let (outcome, history) = finish(&second).await;
    let data = completed(outcome, &history);
    assert_eq!((data.amount, data.extra), (20, 2));
    assert_eq!(steps(&history), order_more_history());
    no_handle_for_an_hour(&mut orders).await;
    assert_eq!(
        engine.broker_stats(),
        BrokerStats {
            delivered: 4,
            ..BrokerStats::default()
        }
    );
    engine.shutdown(HANG).await.expect("every loop stops");
}

/// The second message with the key comes before the instance it started has run at
/// all: no catch waits yet, so it is buffered (not a new instance), and the instance's
/// catch takes it from the buffer.
#[tokio::test(start_paused = true)]
async fn a_message_for_a_starting_instance_is_buffered_for_it() {
    let engine = Engine::new();
    let mut orders = engine
        .deploy(&ORDER_MORE, Order::default())
        .expect("deployed");
    // No await in between: on the current-thread runtime the instance has not run.
    assert_eq!(
        engine
            .publish_message("order", "K", placed("K", 10))
            .await
            .unwrap(),
        Published::Started
    );
    assert_eq!(
        engine
            .publish_message("order", "K", placed("K", 5))
            .await
            .unwrap(),
        Published::Buffered
    );
    assert_eq!(engine.broker_stats().buffered, 1);
    let h = next_handle(&mut orders).await;
    let (outcome, history) = finish(&h).await;
    let data = completed(outcome, &history);
    assert_eq!((data.id.as_str(), data.amount, data.extra), ("K", 10, 5));
    // The catch parked, subscribed and found the message in the buffer.
    assert_eq!(steps(&history), order_more_history());
    no_handle_for_an_hour(&mut orders).await;
    assert_eq!(
        engine.broker_stats(),
        BrokerStats {
            delivered: 2,
            ..BrokerStats::default()
        }
    );
    engine.shutdown(HANG).await.expect("every loop stops");
}

/// A different key starts a second instance while the first runs; each then gets the
/// message with its own key.
#[tokio::test(start_paused = true)]
async fn different_keys_start_instances_side_by_side() {
    let engine = Engine::new();
    let mut orders = engine
        .deploy(&ORDER_MORE, Order::default())
        .expect("deployed");
    assert_eq!(
        engine
            .publish_message("order", "K1", placed("K1", 1))
            .await
            .unwrap(),
        Published::Started
    );
    let one = next_handle(&mut orders).await;
    expect_parked(&one, "more").await;
    assert_eq!(
        engine
            .publish_message("order", "K2", placed("K2", 2))
            .await
            .unwrap(),
        Published::Started
    );
    let two = next_handle(&mut orders).await;
    expect_parked(&two, "more").await;
    assert_ne!(one.id(), two.id());
    assert!(!one.is_finished() && !two.is_finished());
    assert_eq!(engine.running_instances(), 2);

    assert_eq!(
        engine
            .publish_message("order", "K2", placed("K2", 20))
            .await
            .unwrap(),
        Published::Delivered
    );
    let (outcome, history) = finish(&two).await;
    let data = completed(outcome, &history);
    assert_eq!((data.id.as_str(), data.amount, data.extra), ("K2", 2, 20));
    assert!(!one.is_finished());
    assert_eq!(
        engine
            .publish_message("order", "K1", placed("K1", 10))
            .await
            .unwrap(),
        Published::Delivered
    );
    let (outcome, history) = finish(&one).await;
    let data = completed(outcome, &history);
    assert_eq!((data.id.as_str(), data.amount, data.extra), ("K1", 1, 10));
    assert_eq!(steps(&history), order_more_history());
    no_handle_for_an_hour(&mut orders).await;
    engine.shutdown(HANG).await.expect("every loop stops");
}

/// Messages with a running instance's key are buffered for it, not new instances —
/// even more of them than it catches: when it ends, the oldest one it did not take
/// starts the next instance with that key (Zeebe's rule), which then waits at its
/// catch for a further message.
#[tokio::test(start_paused = true)]
async fn a_message_its_instance_did_not_take_starts_the_next_with_that_key() {
    let engine = Engine::new();
    let mut orders = engine
        .deploy(&ORDER_MORE, Order::default())
        .expect("deployed");
    assert_eq!(
        engine
            .publish_message("order", "K", placed("K", 1))
            .await
            .unwrap(),
        Published::Started
    );
    assert_eq!(
        engine
            .publish_message("order", "K", placed("K", 2))
            .await
            .unwrap(),
        Published::Buffered
    );
    assert_eq!(
        engine
            .publish_message("order", "K", placed("K", 3))
            .await
            .unwrap(),
        Published::Buffered
    );
    let first = next_handle(&mut orders).await;
    let (outcome, history) = finish(&first).await;
    let data = completed(outcome, &history);
    assert_eq!((data.amount, data.extra), (1, 2));

    // The leftover `3` started the next instance for `K` as the first ended.
    let second = next_handle(&mut orders).await;
    assert_ne!(second.id(), first.id());
    expect_parked(&second, "more").await;
    assert_eq!(engine.broker_stats().buffered, 0);
    assert_eq!(
        engine
            .publish_message("order", "K", placed("K", 4))
            .await
            .unwrap(),
        Published::Delivered
    );
    let (outcome, history) = finish(&second).await;
    let data = completed(outcome, &history);
    assert_eq!((data.amount, data.extra), (3, 4));
    // Nothing is left for a third.
    no_handle_for(&mut orders, Duration::from_secs(10)).await;
    assert_eq!(engine.broker_stats().buffered, 0);
    engine.shutdown(HANG).await.expect("every loop stops");
}

process! {
    /// Started by an `order` message, then held at a user task until completed.
    ORDER_REVIEWED: Order {
        start received: message("order", apply = |o, p: &Placed| {
            o.id = p.id.clone();
            o.amount = p.amount;
        });
        user  review;
        end   done;
        received -> review -> done;
    }
}

/// Start messages for a running key wait in publication order: as each instance ends,
/// the oldest left starts the next, one at a time, until none is left.
#[tokio::test(start_paused = true)]
async fn buffered_start_messages_start_the_next_instances_oldest_first() {
    let engine = Engine::new();
    let mut orders = engine
        .deploy(&ORDER_REVIEWED, Order::default())
        .expect("deployed");
    for amount in 1..=4 {
        let published = engine
            .publish_message("order", "K", placed("K", amount))
            .await
            .unwrap();
        let expected = match amount {
            1 => Published::Started,
            _ => Published::Buffered,
        };
        assert_eq!(published, expected);
    }
    let mut amounts = Vec::new();
    for _ in 0..4 {
        let h = next_handle(&mut orders).await;
        // One instance for `K` at a time.
        assert_eq!(engine.running_instances(), 1);
        while h.complete("review", |_| {}).await.is_err() {
            tokio::task::yield_now().await;
        }
        let (outcome, history) = finish(&h).await;
        amounts.push(completed(outcome, &history).amount);
    }
    assert_eq!(amounts, [1, 2, 3, 4]);
    no_handle_for(&mut orders, Duration::from_secs(10)).await;
    assert_eq!(engine.broker_stats().buffered, 0);
    engine.shutdown(HANG).await.expect("every loop stops");
}

/// Two deployments with a start on the same message: the first deployed starts the
/// instance for a new key; while that instance runs, a further message with its key is
/// buffered for it — it does not start an instance of the other deployment, which
/// would then run a second instance with the same correlation key.
#[tokio::test(start_paused = true)]
async fn a_running_key_starts_no_instance_in_another_deployment() {
    let engine = Engine::new();
    let mut first = engine
        .deploy(&ORDER_MORE, tagged("first"))
        .expect("deployed");
    let mut second = engine
        .deploy(&ORDER_MORE, tagged("second"))
        .expect("deployed");
    assert_eq!(
        engine
            .publish_message("order", "K", placed("K", 1))
            .await
            .unwrap(),
        Published::Started
    );
    // No await in between: the instance has not run, no catch waits.
    assert_eq!(
        engine
            .publish_message("order", "K", placed("K", 2))
            .await
            .unwrap(),
        Published::Buffered
    );
    let h = next_handle(&mut first).await;
    assert_eq!(h.data().await.map(|d| d.tag), Some("first".to_string()));
    no_handle_for(&mut second, Duration::from_secs(10)).await;
    let (outcome, history) = finish(&h).await;
    let data = completed(outcome, &history);
    assert_eq!((data.amount, data.extra), (1, 2));
    engine.shutdown(HANG).await.expect("every loop stops");
}

/// A payload of another type than the start's `apply` maps: the instance still starts
/// (`Published::Started`), then fails with `TaskFailed` naming the start event and
/// the type it expected.
#[tokio::test(start_paused = true)]
async fn a_payload_of_the_wrong_type_fails_the_started_instance() {
    let engine = Engine::new();
    let mut orders = engine.deploy(&ORDER, tagged("shop")).expect("deployed");
    assert_eq!(
        engine.publish_message("order", "W", 7_u64).await.unwrap(),
        Published::Started
    );
    let h = next_handle(&mut orders).await;
    let (outcome, history) = finish(&h).await;
    let InstanceError::TaskFailed { node, message } = failed(outcome, &history) else {
        panic!("expected TaskFailed\n{history}");
    };
    assert_eq!(node, "received");
    assert!(
        message.contains(std::any::type_name::<Placed>()),
        "the message names the expected type: {message}"
    );
    assert_eq!(
        steps(&history),
        [
            (0, "received", Happening::Started),
            (0, "received", Happening::Failed { message }),
            (0, "received", Happening::Cancelled),
        ]
    );
    // The data is the deployment's, untouched.
    assert_eq!(h.data().await, Some(tagged("shop")));
    // A right payload with the same key starts the next one normally.
    assert_eq!(
        engine
            .publish_message("order", "W", placed("W", 3))
            .await
            .unwrap(),
        Published::Started
    );
    let (outcome, history) = finish(&next_handle(&mut orders).await).await;
    assert_eq!(completed(outcome, &history).amount, 3);
    engine.shutdown(HANG).await.expect("every loop stops");
}
