//! Bad payloads and panicking mappings fail an instance.

use super::*;

process! {
    /// A catch whose mapping expects a `Payment`.
    WANTS_PAYMENT: Deal {
        start s;
        catch paid: message("payment", key = |d| d.id.clone(), apply = |d, p: &Payment| d.paid = p.amount);
        end   e;
        s -> paid -> e;
    }
}

process! {
    /// A signal catch whose mapping expects a `String`.
    WANTS_TEXT: Deal {
        start s;
        catch heard: signal("ping", apply = |d, text: &String| d.note = text.clone());
        end   e;
        s -> heard -> e;
    }
}

/// A message whose payload is not the type the waiting catch maps is refused at
/// publish (`WrongPayload`, naming both types) and the catch goes on waiting; a
/// signal's, which reaches every catcher as it is, fails the instance with
/// `TaskFailed` naming the catch and the type it expected.
#[tokio::test(start_paused = true)]
async fn a_payload_of_the_wrong_type_fails_the_catch() {
    let engine = Engine::new();
    let h = engine.start(&WANTS_PAYMENT, deal("w")).await.unwrap();
    expect_parked(&h, "paid").await;
    let refused = engine.publish_message("payment", "w", 5_u64).await;
    let Err(EngineError::WrongPayload {
        expected, given, ..
    }) = refused
    else {
        panic!("not refused: {refused:?}");
    };
    assert_eq!((expected, given), (std::any::type_name::<Payment>(), "u64"));
    expect_parked(&h, "paid").await;
    engine
        .publish_message("payment", "w", Payment { amount: 3 })
        .await
        .unwrap();
    let (outcome, history) = finish(&h).await;
    assert_eq!(completed(outcome, &history).paid, 3);

    // The right type is caught.
    let h = engine.start(&WANTS_PAYMENT, deal("ok")).await.unwrap();
    engine
        .publish_message("payment", "ok", Payment { amount: 8 })
        .await
        .unwrap();
    let (outcome, history) = finish(&h).await;
    assert_eq!(completed(outcome, &history).paid, 8);

    // A signal too.
    let h = engine.start(&WANTS_TEXT, deal("t")).await.unwrap();
    expect_parked(&h, "heard").await;
    assert_eq!(engine.broadcast_signal("ping", 3_u64).await.unwrap(), 1);
    let (outcome, history) = finish(&h).await;
    let InstanceError::TaskFailed { node, message } = failed(outcome, &history) else {
        panic!("expected TaskFailed\n{history}");
    };
    assert_eq!(node, "heard");
    assert!(
        message.contains(std::any::type_name::<String>()),
        "{message}"
    );
}

process! {
    /// A mapping that panics on a zero payment.
    FRAGILE: Deal {
        start s;
        catch paid: message("payment", key = |d| d.id.clone(), apply = |d, p: &u64| {
            assert!(*p != 0, "a zero payment");
            d.paid = *p;
        });
        end   e;
        s -> paid -> e;
    }
}

/// A mapping that panics fails the instance with `TaskPanicked` naming the catch.
#[tokio::test(start_paused = true)]
async fn a_panicking_mapping_fails_the_catch() {
    let engine = Engine::new();
    let h = engine.start(&FRAGILE, deal("f")).await.unwrap();
    expect_parked(&h, "paid").await;
    engine.publish_message("payment", "f", 0_u64).await.unwrap();
    let (outcome, history) = finish(&h).await;
    assert_eq!(
        failed(outcome, &history),
        InstanceError::TaskPanicked {
            node: "paid",
            message: "a zero payment".into()
        }
    );
    assert_eq!(
        steps(&history),
        [
            (0, "s", Happening::Started),
            (0, "paid", Happening::Parked),
            (
                0,
                "paid",
                Happening::Failed {
                    message: "a zero payment".into()
                }
            ),
            (0, "paid", Happening::Cancelled),
        ]
    );
}

process! {
    /// A correlation key that panics on an empty id.
    BAD_KEY: Deal {
        start s;
        catch paid: message("payment", key = |d| {
            assert!(!d.id.is_empty(), "no id to correlate on");
            d.id.clone()
        }, apply = |d, p: &u64| d.paid = *p);
        end   e;
        s -> paid -> e;
    }
}

process! {
    /// A throw whose payload panics.
    BAD_PAYLOAD: Deal {
        start s;
        throw ping: signal("ping", payload = |d| {
            assert!(d.amount != 0, "nothing to announce");
            d.amount
        });
        end   e;
        s -> ping -> e;
    }
}

/// A correlation key that panics when the catch arms, and a throw payload that panics,
/// fail the instance with `TaskPanicked` naming the node.
#[tokio::test(start_paused = true)]
async fn panicking_keys_and_payloads_fail_their_node() {
    let engine = Engine::new();
    let (outcome, history) = run(&engine, &BAD_KEY, deal("")).await;
    assert_eq!(
        failed(outcome, &history),
        InstanceError::TaskPanicked {
            node: "paid",
            message: "no id to correlate on".into()
        }
    );
    assert_eq!(engine.broker_stats(), BrokerStats::default());

    let (outcome, history) = run(&engine, &BAD_PAYLOAD, deal("p")).await;
    assert_eq!(
        failed(outcome, &history),
        InstanceError::TaskPanicked {
            node: "ping",
            message: "nothing to announce".into()
        }
    );
}
