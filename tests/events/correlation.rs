//! T-6: correlation; a mismatch keeps the receiver waiting, and a waiting catch's
//! subscription follows the data its key reads.

use super::*;

/// T-6 (FR-8), coarse: a message with another key does not reach the waiter (it is
/// buffered for its own key, the history shows no catch); one with its key does.
#[tokio::test(start_paused = true)]
async fn t6_a_mismatching_key_leaves_the_receiver_waiting() {
    let engine = Engine::new();
    let h = engine.start(&PAY, deal("A")).await.unwrap();
    expect_parked(&h, "paid").await;
    assert_eq!(
        engine.publish_message("payment", "B", 1_u64).await.unwrap(),
        Published::Buffered
    );
    assert_eq!(
        engine.publish_message("pay", "A", 1_u64).await.unwrap(),
        Published::Buffered
    );
    an_hour_later().await;
    assert!(!h.is_finished());
    assert_eq!(steps(&h.history().await), pay_parked());
    assert_eq!(
        engine.broker_stats(),
        BrokerStats {
            buffered: 2,
            ..BrokerStats::default()
        }
    );
    assert_eq!(
        engine.publish_message("payment", "A", 2_u64).await.unwrap(),
        Published::Delivered
    );
    let (outcome, history) = finish(&h).await;
    assert_eq!(completed(outcome, &history).paid, 2);
    assert_eq!(steps(&history), pay_completed());
    assert_eq!(
        engine.broker_stats(),
        BrokerStats {
            delivered: 1,
            buffered: 2,
            ..BrokerStats::default()
        }
    );
}

/// The history of `KEYED` up to the point where `paid` waits and `rekey` is done.
fn keyed_waiting() -> Vec<(u32, &'static str, Happening)> {
    vec![
        (0, "s", Happening::Started),
        (0, "fork", routed(&["paid", "rekey"])),
        (1, "fork", Happening::Spawned { from: TrackId(0) }),
        (0, "paid", Happening::Parked),
        (1, "rekey", Happening::TaskStarted),
        (1, "rekey", done(&["key"])),
        (1, "join", Happening::Waiting),
    ]
}

/// Wait until the history has at least as many steps as `expected`, then assert that
/// it is exactly `expected`.
async fn history_becomes<D: Clone>(
    handle: &InstanceHandle<D>,
    expected: &[(u32, &'static str, Happening)],
) {
    let what = format!("{} steps", expected.len());
    let history = expect_that(handle, &what, |h| h.steps().len() >= expected.len()).await;
    assert_eq!(steps(&history), expected, "\n{history}");
}

process! {
    /// The fine correlation check: `rekey` changes the catch's key while it waits.
    KEYED: Deal {
        start    s;
        parallel fork;
        catch    paid: message("payment", key = |d| d.key.clone(), apply = |d, p: &u64| d.paid = *p);
        task     rekey = |d| async move {
            d.key = format!("{}-new", d.id);
            Ok(())
        };
        parallel join;
        end      e;
        s -> fork -> paid, rekey;
        paid, rekey -> join -> e;
    }
}

/// T-6 (FR-8), fine: `paid` subscribes under `<id>-old`, then the parallel `rekey`
/// changes the key to `<id>-new` while `paid` waits: the subscription moves with the
/// commit. A message for the old key then finds no waiter — buffered, not taken —
/// and the track stays parked; one for `<id>-new` reaches it (`Delivered`). In odd
/// runs the `<id>-new` message was buffered before the start, and the move to the
/// new key takes it from the buffer.
async fn t6_the_subscription_follows_the_current_key(_: Engine, i: usize) {
    let engine = Engine::new();
    let id = format!("k{i}");
    let (old, new) = (format!("{id}-old"), format!("{id}-new"));
    let early = i % 2 == 1;
    if early {
        assert_eq!(
            engine
                .publish_message("payment", &new, 2_u64)
                .await
                .unwrap(),
            Published::Buffered
        );
    }
    let h = engine
        .start(
            &KEYED,
            Deal {
                key: old.clone(),
                ..deal(&id)
            },
        )
        .await
        .unwrap();
    if !early {
        history_becomes(&h, &keyed_waiting()).await;
        assert_eq!(
            engine
                .publish_message("payment", &old, 1_u64)
                .await
                .unwrap(),
            Published::Buffered
        );
        for _ in 0..50 {
            tokio::task::yield_now().await;
        }
        assert!(!h.is_finished());
        assert_eq!(steps(&h.history().await), keyed_waiting());
        assert_eq!(
            engine.broker_stats(),
            BrokerStats {
                buffered: 1,
                ..BrokerStats::default()
            }
        );
        assert_eq!(
            engine
                .publish_message("payment", &new, 2_u64)
                .await
                .unwrap(),
            Published::Delivered
        );
    }
    let (outcome, history) = finish(&h).await;
    let data = completed(outcome, &history);
    assert_eq!((data.paid, data.key.as_str()), (2, new.as_str()));
    let mut expected = keyed_waiting();
    expected.extend([
        (0, "paid", caught(&["paid"])),
        (1, "join", Happening::Merged),
        (0, "join", Happening::Fired),
        (0, "join", routed(&["e"])),
        (0, "e", Happening::Ended),
    ]);
    assert_eq!(steps(&history), expected, "\n{history}");
    // Delivered once; the old key's message (late runs) is still buffered, for
    // whoever waits under that key.
    assert_eq!(
        engine.broker_stats(),
        BrokerStats {
            delivered: 1,
            buffered: usize::from(!early),
            ..BrokerStats::default()
        }
    );
    if !early {
        assert_eq!(
            engine
                .publish_message("payment", &old, 3_u64)
                .await
                .unwrap(),
            Published::Buffered
        );
    }
    engine.shutdown(HANG).await.expect("the loop stops");
}

flavors!(t6_the_subscription_follows_the_current_key);
