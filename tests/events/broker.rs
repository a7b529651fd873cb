//! The broker's bounded buffer and its time-to-live.

use super::*;

/// With room for two messages, a third with no waiter is dropped and counted; the two
/// buffered ones are delivered on subscribe; the dropped one is gone (its waiter waits
/// until it is published again).
#[tokio::test(start_paused = true)]
async fn the_buffer_is_bounded() {
    let engine = Engine::with_broker(BrokerConfig {
        capacity: 2,
        ttl: Duration::from_secs(60),
    });
    assert_eq!(
        engine.publish_message("payment", "a", 1_u64).await.unwrap(),
        Published::Buffered
    );
    assert_eq!(
        engine.publish_message("payment", "b", 2_u64).await.unwrap(),
        Published::Buffered
    );
    assert_eq!(
        engine.publish_message("payment", "c", 3_u64).await.unwrap(),
        Published::Dropped
    );
    assert_eq!(
        engine.broker_stats(),
        BrokerStats {
            buffered: 2,
            dropped_full: 1,
            ..BrokerStats::default()
        }
    );
    for (id, paid) in [("a", 1), ("b", 2)] {
        let (outcome, history) = run(&engine, &PAY, deal(id)).await;
        assert_eq!(completed(outcome, &history).paid, paid);
    }
    let c = engine.start(&PAY, deal("c")).await.unwrap();
    expect_parked(&c, "paid").await;
    an_hour_later().await;
    assert!(!c.is_finished());
    assert_eq!(steps(&c.history().await), pay_parked());
    // The buffer has room again.
    assert_eq!(
        engine.publish_message("payment", "d", 4_u64).await.unwrap(),
        Published::Buffered
    );
    assert_eq!(
        engine.publish_message("payment", "c", 3_u64).await.unwrap(),
        Published::Delivered
    );
    let (outcome, history) = finish(&c).await;
    assert_eq!(completed(outcome, &history).paid, 3);
    assert_eq!(
        engine.broker_stats(),
        BrokerStats {
            delivered: 3,
            buffered: 1,
            dropped_full: 1,
            ..BrokerStats::default()
        }
    );
}

/// A buffered message expires after its time-to-live: a catch subscribing later gets
/// nothing (and the expiry is counted); one subscribing in time gets it.
#[tokio::test(start_paused = true)]
async fn a_buffered_message_expires() {
    let ttl = Duration::from_secs(5);
    let engine = Engine::with_broker(BrokerConfig { capacity: 10, ttl });
    assert_eq!(
        engine
            .publish_message("payment", "late", 1_u64)
            .await
            .unwrap(),
        Published::Buffered
    );
    tokio::time::sleep(ttl - Duration::from_millis(1)).await;
    assert_eq!(
        engine
            .publish_message("payment", "fresh", 2_u64)
            .await
            .unwrap(),
        Published::Buffered
    );
    tokio::time::sleep(Duration::from_millis(2)).await;
    // `late` is past its time-to-live, `fresh` is not.
    let late = engine.start(&PAY, deal("late")).await.unwrap();
    expect_parked(&late, "paid").await;
    assert_eq!(
        engine.broker_stats(),
        BrokerStats {
            buffered: 1,
            expired: 1,
            ..BrokerStats::default()
        }
    );
    let (outcome, history) = run(&engine, &PAY, deal("fresh")).await;
    assert_eq!(completed(outcome, &history).paid, 2);
    an_hour_later().await;
    assert!(!late.is_finished());
    assert_eq!(steps(&late.history().await), pay_parked());
    assert_eq!(
        engine
            .publish_message("payment", "late", 3_u64)
            .await
            .unwrap(),
        Published::Delivered
    );
    let (outcome, history) = finish(&late).await;
    assert_eq!(completed(outcome, &history).paid, 3);
    assert_eq!(
        engine.broker_stats(),
        BrokerStats {
            delivered: 2,
            expired: 1,
            ..BrokerStats::default()
        }
    );
}

/// A full buffer first purges what has expired: the new message fits.
#[tokio::test(start_paused = true)]
async fn a_full_buffer_purges_expired_messages() {
    let engine = Engine::with_broker(BrokerConfig {
        capacity: 1,
        ttl: Duration::from_secs(5),
    });
    assert_eq!(
        engine.publish_message("payment", "a", 1_u64).await.unwrap(),
        Published::Buffered
    );
    assert_eq!(
        engine.publish_message("payment", "b", 2_u64).await.unwrap(),
        Published::Dropped
    );
    tokio::time::sleep(Duration::from_secs(6)).await;
    assert_eq!(
        engine.publish_message("payment", "c", 3_u64).await.unwrap(),
        Published::Buffered
    );
    assert_eq!(
        engine.broker_stats(),
        BrokerStats {
            buffered: 1,
            dropped_full: 1,
            expired: 1,
            ..BrokerStats::default()
        }
    );
    let (outcome, history) = run(&engine, &PAY, deal("c")).await;
    assert_eq!(completed(outcome, &history).paid, 3);
}

/// A message published with its own time-to-live waits that long, whatever the
/// broker's: a long one outlives the broker's, a short one expires before it.
#[tokio::test(start_paused = true)]
async fn a_message_published_with_its_own_time_to_live_waits_that_long() {
    let engine = Engine::with_broker(BrokerConfig {
        capacity: 10,
        ttl: Duration::from_secs(5),
    });
    let day = Duration::from_secs(24 * 3600);
    assert_eq!(
        engine
            .publish_message_ttl("payment", "long", 1_u64, day)
            .await
            .unwrap(),
        Published::Buffered
    );
    assert_eq!(
        engine
            .publish_message_ttl("payment", "short", 2_u64, Duration::from_secs(1))
            .await
            .unwrap(),
        Published::Buffered
    );
    assert_eq!(
        engine
            .publish_message("payment", "default", 3_u64)
            .await
            .unwrap(),
        Published::Buffered
    );
    tokio::time::sleep(Duration::from_secs(2)).await;
    // `short` is gone; `default` (5 s) and `long` wait.
    let short = engine.start(&PAY, deal("short")).await.unwrap();
    expect_parked(&short, "paid").await;
    let (outcome, history) = run(&engine, &PAY, deal("default")).await;
    assert_eq!(completed(outcome, &history).paid, 3);
    tokio::time::sleep(Duration::from_secs(3600)).await;
    let (outcome, history) = run(&engine, &PAY, deal("long")).await;
    assert_eq!(completed(outcome, &history).paid, 1);
    assert_eq!(
        engine.broker_stats(),
        BrokerStats {
            delivered: 2,
            expired: 1,
            ..BrokerStats::default()
        }
    );
    assert!(!short.is_finished());
}
