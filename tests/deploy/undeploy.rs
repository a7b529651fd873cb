//! Undeploying a process.

use super::*;

/// Undeploying a message start: further messages are buffered, the deployment's
/// `next()` yields what was started and then `None`; a second undeploy is `false`.
#[tokio::test(start_paused = true)]
async fn undeploy_stops_message_starts() {
    let engine = Engine::new();
    let mut orders = engine.deploy(&ORDER, Order::default()).expect("deployed");
    assert_eq!(
        engine
            .publish_message("order", "K1", placed("K1", 1))
            .await
            .unwrap(),
        Published::Started
    );
    assert!(engine.undeploy(orders.id()));
    assert_eq!(
        engine
            .publish_message("order", "K2", placed("K2", 2))
            .await
            .unwrap(),
        Published::Buffered
    );
    let h = next_handle(&mut orders).await;
    ended(&mut orders).await;
    let (outcome, history) = finish(&h).await;
    assert_eq!(completed(outcome, &history).id, "K1");
    assert!(!engine.undeploy(orders.id()));
    assert_eq!(
        engine.broker_stats(),
        BrokerStats {
            delivered: 1,
            buffered: 1,
            ..BrokerStats::default()
        }
    );
    // Deployed again, it starts afresh (the buffered message stays in the buffer).
    let mut again = engine.deploy(&ORDER, Order::default()).expect("deployed");
    assert_ne!(again.id(), orders.id());
    assert_eq!(
        engine
            .publish_message("order", "K3", placed("K3", 3))
            .await
            .unwrap(),
        Published::Started
    );
    let (outcome, history) = finish(&next_handle(&mut again).await).await;
    assert_eq!(completed(outcome, &history).id, "K3");
    engine.shutdown(HANG).await.expect("every loop stops");
    ended(&mut again).await;
}

/// Undeploying a signal start: a broadcast then reaches nobody.
#[tokio::test(start_paused = true)]
async fn undeploy_stops_signal_starts() {
    let engine = Engine::new();
    let mut a = engine.deploy(&GO_A, Order::default()).expect("deployed");
    let mut b = engine.deploy(&GO_B, Order::default()).expect("deployed");
    assert_eq!(engine.broadcast_signal("go", 1_u64).await.unwrap(), 2);
    assert!(engine.undeploy(a.id()));
    assert_eq!(engine.broadcast_signal("go", 2_u64).await.unwrap(), 1);
    assert!(engine.undeploy(b.id()));
    assert_eq!(engine.broadcast_signal("go", 3_u64).await.unwrap(), 0);
    assert!(!engine.undeploy(a.id()));
    assert!(!engine.undeploy(b.id()));
    let (outcome, history) = finish(&next_handle(&mut a).await).await;
    assert_eq!(completed(outcome, &history).amount, 1);
    ended(&mut a).await;
    for _ in 0..2 {
        let (outcome, history) = finish(&next_handle(&mut b).await).await;
        completed(outcome, &history);
    }
    ended(&mut b).await;
    engine.shutdown(HANG).await.expect("every loop stops");
}

process! {
    /// Started every second without end.
    ENDLESS: Order {
        start tick: timer(every = Duration::from_secs(1));
        end   done;
        tick -> done;
    }
}

/// Undeploying an endless timer start: no instance after it.
#[tokio::test(start_paused = true)]
async fn undeploy_stops_timer_starts() {
    let engine = Engine::new();
    let t0 = Instant::now();
    let mut ticks = engine.deploy(&ENDLESS, Order::default()).expect("deployed");
    for s in 1..=3 {
        let (outcome, history) = finish(&next_handle(&mut ticks).await).await;
        assert_eq!(t0.elapsed(), Duration::from_secs(s));
        completed(outcome, &history);
        assert_eq!(steps(&history), timer_history());
    }
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert!(engine.undeploy(ticks.id()));
    ended(&mut ticks).await;
    tokio::time::sleep(Duration::from_secs(3600)).await;
    assert_eq!(engine.running_instances(), 0);
    // Ids 0..3 went to the three ticks: nothing else was started.
    assert_eq!(
        engine.start(&PLAIN, Order::default()).await.unwrap().id(),
        InstanceId(3)
    );
    assert!(!engine.undeploy(ticks.id()));
    engine.shutdown(HANG).await.expect("every loop stops");
}

process! {
    /// Started every second without end; each instance then waits an hour.
    ENDLESS_NAPS: Order {
        start tick: timer(every = Duration::from_secs(1));
        catch nap: timer(Duration::from_secs(3600));
        end   done;
        tick -> nap -> done;
    }
}

/// `running_instances` counts instance loops; a deployed timer start is none.
#[tokio::test(start_paused = true)]
async fn running_instances_counts_no_timer_start() {
    let engine = Engine::new();
    let mut naps = engine
        .deploy(&ENDLESS_NAPS, Order::default())
        .expect("deployed");
    assert_eq!(engine.running_instances(), 0);
    let nap = next_handle(&mut naps).await;
    expect_parked(&nap, "nap").await;
    assert_eq!(engine.running_instances(), 1);
    engine.shutdown(HANG).await.expect("every loop stops");
}

/// `shutdown` undeploys everything: timers stop, messages are buffered, broadcasts
/// reach nobody, every deployment's `next()` ends, and running instances are
/// cancelled.
#[tokio::test(start_paused = true)]
async fn shutdown_stops_every_start_event() {
    let engine = Engine::new();
    let t0 = Instant::now();
    let mut naps = engine
        .deploy(&ENDLESS_NAPS, Order::default())
        .expect("deployed");
    let mut orders = engine
        .deploy(&ORDER_MORE, Order::default())
        .expect("deployed");
    let mut a = engine.deploy(&GO_A, Order::default()).expect("deployed");
    assert_eq!(
        engine
            .publish_message("order", "K", placed("K", 1))
            .await
            .unwrap(),
        Published::Started
    );
    let order = next_handle(&mut orders).await;
    expect_parked(&order, "more").await;
    tokio::time::sleep(Duration::from_millis(2500)).await;
    let mut napping = Vec::new();
    for _ in 0..2 {
        let nap = next_handle(&mut naps).await;
        expect_parked(&nap, "nap").await;
        napping.push(nap);
    }

    engine.shutdown(HANG).await.expect("every loop stops");
    assert_eq!(engine.running_instances(), 0);
    assert_eq!(t0.elapsed(), Duration::from_millis(2500));
    for nap in napping {
        assert!(matches!(nap.outcome().await, Outcome::Cancelled(_)));
    }
    ended(&mut naps).await;
    ended(&mut orders).await;
    ended(&mut a).await;
    assert!(matches!(order.outcome().await, Outcome::Cancelled(_)));
    for deployment in [naps.id(), orders.id(), a.id()] {
        assert!(!engine.undeploy(deployment));
    }
    assert_eq!(
        engine
            .publish_message("order", "K2", placed("K2", 2))
            .await
            .unwrap(),
        Published::Buffered
    );
    assert_eq!(engine.broadcast_signal("go", 1_u64).await.unwrap(), 0);
    tokio::time::sleep(Duration::from_secs(3600)).await;
    assert_eq!(engine.running_instances(), 0);
}
