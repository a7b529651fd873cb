//! An event-based gateway of a durable instance, restored after a restart, is still
//! one choice (issue 13, fix 2): two durably published messages racing for its arms
//! are answered truthfully — one `Delivered` and consumed with the checkpoint that
//! records its effect, the other `Buffered` and kept stored, for the next instance
//! with that key, also after another restart.

use std::sync::Arc;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use thresh::store::{MemoryStore, Store};
use thresh::testing::{expect_ended, expect_parked, observe};
use thresh::{process, DurableEngine, ProcessData, Published};

const HANG: Duration = Duration::from_secs(20);

#[derive(Clone, Debug, Default, PartialEq, ProcessData, Serialize, Deserialize)]
pub struct Quote {
    pub id: String,
    pub price: u64,
    pub refusal: String,
}

process! {
    ANSWER: Quote {
        start       s;
        event_based gate;
        catch       accepted: message("accept", key = |q| q.id.clone(), apply = |q, p: &u64| q.price = *p);
        catch       refused: message("refuse", key = |q| q.id.clone(), apply = |q, why: &String| q.refusal = why.clone());
        end         accepted_end;
        end         refused_end;
        s -> gate -> accepted, refused;
        accepted -> accepted_end;
        refused -> refused_end;
    }
}

fn open(store: &Arc<MemoryStore>) -> DurableEngine {
    let engine = DurableEngine::with_store(store.clone()).expect("open");
    engine.register(&ANSWER).expect("register");
    engine.message_type::<u64>("accept");
    engine.message_type::<String>("refuse");
    engine
}

fn quote(id: &str) -> Quote {
    Quote {
        id: id.into(),
        ..Quote::default()
    }
}

async fn one_race(i: usize) {
    let store = Arc::new(MemoryStore::new());
    let id = format!("q{i}");
    let engine = open(&store);
    let handle = engine.start(&ANSWER, quote(&id)).await.expect("stored");
    let instance = handle.id();
    expect_parked(&handle, "gate").await;
    engine.shutdown(HANG).await.expect("shutdown");

    // Restored: the gateway's arms are one choice again.
    let engine = open(&store);
    let report = engine.resume().await.expect("resume");
    assert_eq!(report.resumed, [(instance, "ANSWER")]);
    let handle = engine.handle(&ANSWER, instance).expect("resumed");
    // Published while the restored loop arms its gateway, or after: either way
    // one arm is served.
    let (e1, e2) = (engine.clone(), engine.clone());
    let (k1, k2) = (id.clone(), id.clone());
    let accept = tokio::spawn(async move { e1.publish_message("accept", k1, 9_u64).await });
    let refuse =
        tokio::spawn(async move { e2.publish_message("refuse", k2, "no".to_string()).await });
    let accept = accept.await.expect("task").expect("stored");
    let refuse = refuse.await.expect("task").expect("stored");
    expect_ended(&handle).await;
    let history = observe(&handle).await.history;
    let won_accept = history.count("accepted_end", |w| *w == thresh::Happening::Ended) == 1;
    let said = format!("run {i}: accept {accept:?}, refuse {refuse:?}\n{history}");
    let (winner, loser) = if won_accept {
        (accept, refuse)
    } else {
        (refuse, accept)
    };
    // The resumed instance subscribes as it restores; a message published before
    // that is buffered and taken then — but the loser is never taken.
    assert_eq!(loser, Published::Buffered, "{said}");
    assert_ne!(winner, Published::Dropped, "{said}");
    let data = handle.data().await.expect("data");
    if won_accept {
        assert_eq!((data.price, data.refusal.as_str()), (9, ""), "{said}");
    } else {
        assert_eq!((data.price, data.refusal.as_str()), (0, "no"), "{said}");
    }
    let stats = engine.broker_stats();
    assert_eq!(
        (stats.delivered, stats.buffered),
        (1, 1),
        "{said}: {stats:?}"
    );
    // Exactly the loser is still stored: the winner was consumed once.
    assert_eq!(store.messages().expect("read").len(), 1, "{said}");
    engine.shutdown(HANG).await.expect("shutdown");

    // After another restart the loser is published again and the next instance
    // with the key takes it.
    let engine = open(&store);
    let report = engine.resume().await.expect("resume");
    assert_eq!(report.messages, 1, "{said}");
    let next = engine.start(&ANSWER, quote(&id)).await.expect("stored");
    expect_ended(&next).await;
    let ended_at = if won_accept {
        "refused_end"
    } else {
        "accepted_end"
    };
    observe(&next).await.assert_ended_at([ended_at]);
    engine.shutdown(HANG).await.expect("shutdown");
    assert!(store.messages().expect("read").is_empty(), "{said}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_restored_gateway_serves_one_durable_message_and_keeps_the_other() {
    for i in 0..100 {
        one_race(i).await;
    }
}
