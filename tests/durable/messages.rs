//! Durable messages: stored before they are acknowledged, applied exactly once.

use super::*;

#[derive(Clone, Debug, Default, PartialEq, ProcessData, Serialize, Deserialize)]
pub struct Bill {
    pub id: String,
    pub paid: u64,
}

process! {
    BILLING: Bill {
        start s;
        receive pay: message("payment", key = |b| b.id.clone(), apply = |b, amount: &u64| b.paid += *amount);
        end   e;
        s -> pay -> e;
    }
}

async fn paid(handle: &InstanceHandle<Bill>) -> u64 {
    tokio::time::timeout(HANG, handle.outcome())
        .await
        .expect("ended")
        .completed()
        .expect("completed")
        .paid
}

/// A message published durably is stored before it is acknowledged, survives
/// restarts while no catch waits for it, and is applied exactly once: consumed in the
/// checkpoint that records its effect.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stored_message_survives_restarts_and_is_applied_once() {
    let store = test_store();
    let open = |store: &TestStore| {
        let engine = store.engine().expect("open");
        engine.register(&BILLING).expect("register");
        engine.message_type::<u64>("payment");
        engine
    };
    // First life: A waits for its payment; B's payment comes before B exists.
    let engine = open(&store);
    let a = engine
        .start(
            &BILLING,
            Bill {
                id: "A".into(),
                paid: 0,
            },
        )
        .await
        .expect("stored");
    let a_id = a.id();
    tokio::time::timeout(HANG, async {
        while a
            .history()
            .await
            .count("pay", |w| *w == thresh::Happening::Parked)
            == 0
        {
            tokio::task::yield_now().await;
        }
    })
    .await
    .expect("A waits");
    let published = engine
        .publish_message("payment", "B", 70_u64)
        .await
        .expect("stored");
    assert_eq!(published, thresh::Published::Buffered);
    assert_eq!(
        store.messages().expect("read").len(),
        1,
        "stored before the ack"
    );
    engine.shutdown(HANG).await.expect("shutdown");

    // Second life: nothing new; the message stays stored across it.
    let engine = open(&store);
    let report = engine.resume().await.expect("resume");
    assert_eq!((report.resumed.len(), report.messages), (1, 1));
    engine.shutdown(HANG).await.expect("shutdown");
    assert_eq!(store.messages().expect("read").len(), 1);

    // Third life: B starts and takes its stored payment; A gets its own.
    let engine = open(&store);
    let report = engine.resume().await.expect("resume");
    assert_eq!(report.resumed, [(a_id, "BILLING")]);
    let b = engine
        .start(
            &BILLING,
            Bill {
                id: "B".into(),
                paid: 0,
            },
        )
        .await
        .expect("stored");
    assert_eq!(paid(&b).await, 70);
    // A resumed instance's history starts empty; whether its catch is armed yet or
    // not, the payment reaches it (delivered, or buffered until it subscribes).
    let a = engine.handle(&BILLING, a_id).expect("A resumed");
    engine
        .publish_message("payment", "A", 30_u64)
        .await
        .expect("stored");
    assert_eq!(paid(&a).await, 30);
    engine.shutdown(HANG).await.expect("shutdown");
    assert!(
        store.messages().expect("read").is_empty(),
        "each consumed once"
    );
    assert!(store.running().expect("read").is_empty());
}

/// The broker's time-to-live is set where a durable engine is made, and per publish:
/// a message whose time ran out leaves the store untaken (a restart does not deliver
/// it), one with time left is delivered. A publish to a name no registered process
/// takes is counted as unknown (a misspelt name), one to a name it takes is not.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn message_time_to_live_is_set_where_the_engine_is_made_and_per_publish() {
    let store = test_store();
    let config = thresh::EngineConfig {
        broker: thresh::BrokerConfig {
            ttl: Duration::from_millis(50),
            ..thresh::BrokerConfig::default()
        },
        ..thresh::EngineConfig::default()
    };
    let open = || {
        let engine = DurableEngine::with_store_config(store.store(), config).expect("open");
        engine.register(&BILLING).expect("register");
        engine
    };
    let engine = open();
    // Short (the engine's 50 ms), long (its own hour), and a misspelt name.
    engine
        .publish_message("payment", "short", 1_u64)
        .await
        .expect("stored");
    engine
        .publish_message_ttl("payment", "long", 2_u64, Duration::from_secs(3600))
        .await
        .expect("stored");
    engine
        .publish_message("paymnet", "long", 3_u64)
        .await
        .expect("stored");
    let stats = engine.broker_stats();
    assert_eq!(stats.unknown, 1, "{stats:?}");
    let ttls: Vec<(String, i64)> = store
        .messages()
        .expect("read")
        .iter()
        .map(|m| (m.key.clone(), m.expires_ms))
        .collect();
    assert_eq!(ttls.len(), 3, "{ttls:?}");
    // Past the short time-to-live, then a restart.
    tokio::time::sleep(Duration::from_millis(200)).await;
    engine.shutdown(HANG).await.expect("shutdown");
    let engine = open();
    engine.resume().await.expect("resume");
    let keys = |store: &TestStore| -> Vec<String> {
        let mut keys: Vec<String> = store
            .messages()
            .expect("read")
            .iter()
            .map(|m| format!("{}/{}", m.name, m.key))
            .collect();
        keys.sort();
        keys
    };
    // The expired ones leave the store (the writer's expiry is asynchronous).
    tokio::time::timeout(HANG, async {
        while keys(&store).len() > 1 {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    })
    .await
    .unwrap_or_else(|_| panic!("expired messages still stored: {:?}", keys(&store)));
    assert_eq!(keys(&store), ["payment/long"]);
    let short = engine
        .start(
            &BILLING,
            Bill {
                id: "short".into(),
                paid: 0,
            },
        )
        .await
        .expect("stored");
    let long = engine
        .start(
            &BILLING,
            Bill {
                id: "long".into(),
                paid: 0,
            },
        )
        .await
        .expect("stored");
    assert_eq!(paid(&long).await, 2);
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert!(!short.is_finished(), "an expired message was delivered");
    engine.shutdown(HANG).await.expect("shutdown");
}

/// A payload type that is not `Deserialize`.
#[derive(Clone, Debug)]
pub struct Opaque(pub u64);

process! {
    OPAQUE: Bill {
        start s;
        receive pay: message("opaque", key = |b| b.id.clone(), apply = |b, o: &Opaque| b.paid += o.0);
        end   e;
        s -> pay -> e;
    }
}

/// A catch whose payload could never be read back from the store is refused at
/// `register`, saying what to do; with a readable type named first, it registers.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_catch_whose_payload_cannot_be_stored_is_refused_at_register() {
    let store = test_store();
    let engine = store.engine().expect("open");
    let error = engine.register(&OPAQUE).expect_err("refused");
    assert!(
        matches!(
            error,
            thresh::EngineError::PayloadNotStorable {
                process: "OPAQUE",
                node: "pay",
                message: "opaque"
            }
        ),
        "{error:?}"
    );
    assert!(
        error.to_string().contains("derive `serde::Deserialize`"),
        "{error}"
    );
    engine.message_type::<u64>("opaque");
    engine.register(&OPAQUE).expect("a decoder is known");
    engine.shutdown(HANG).await.expect("shutdown");
}
