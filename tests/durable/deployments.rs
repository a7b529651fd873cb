//! Deployments on a durable engine: their start events start durable instances.

use super::*;

#[derive(Clone, Debug, Default, PartialEq, ProcessData, Serialize, Deserialize)]
pub struct Ticket {
    pub id: String,
    pub seats: u32,
    pub confirmed: bool,
}

process! {
    BOOKING: Ticket {
        start booked: message("booking", apply = |t, seats: &u32| t.seats = *seats);
        user  confirm;
        end   done;
        booked -> confirm -> done;
    }
}

process! {
    QUICK_BOOKING: Ticket {
        start booked: message("quick", apply = |t, seats: &u32| t.seats = *seats);
        end   done;
        booked -> done;
    }
}

/// A durable engine's deployment starts durable instances: a durably published start
/// message is consumed by the started instance's first checkpoint, so after a restart
/// the instance is there and the message is not (no second instance); one that ends
/// in its first step is stored with its end.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_deployed_message_start_starts_a_durable_instance_once() {
    let store = Arc::new(MemoryStore::new());
    let engine = DurableEngine::with_store(store.clone()).expect("open");
    let mut bookings = engine
        .deploy(&BOOKING, Ticket::default())
        .expect("deployed");
    let mut quick = engine
        .deploy(&QUICK_BOOKING, Ticket::default())
        .expect("deployed");
    assert_eq!(
        engine
            .publish_message("booking", "B-1", 3_u32)
            .await
            .expect("stored"),
        thresh::Published::Started
    );
    let handle = tokio::time::timeout(HANG, bookings.next())
        .await
        .expect("started")
        .expect("a handle");
    let id = handle.id();
    until_open(&handle, "confirm").await;
    engine
        .publish_message("quick", "Q-1", 1_u32)
        .await
        .expect("stored");
    let fast = quick.next().await.expect("a handle");
    let ended = tokio::time::timeout(HANG, fast.outcome())
        .await
        .expect("ended");
    assert_eq!(ended.completed().map(|t| t.seats), Some(1));
    let stored = store.instance(fast.id().0).expect("read").expect("stored");
    assert_eq!(stored.status, Status::Completed);
    assert!(
        store.messages().expect("read").is_empty(),
        "both start messages consumed"
    );
    engine.shutdown(HANG).await.expect("shutdown");

    let engine = DurableEngine::with_store(store.clone()).expect("reopen");
    engine.register(&BOOKING).expect("register");
    engine.message_type::<u32>("booking");
    let mut bookings = engine
        .deploy(&BOOKING, Ticket::default())
        .expect("deployed again");
    let report = engine.resume().await.expect("resume");
    assert_eq!(report.resumed, [(id, "BOOKING")]);
    assert_eq!(report.messages, 0, "the start message was consumed");
    // The resumed instance owns its key again: another booking for B-1 waits for it
    // (buffered) instead of starting a second instance.
    assert_eq!(
        engine
            .publish_message("booking", "B-1", 9_u32)
            .await
            .expect("stored"),
        thresh::Published::Buffered
    );
    let handle = engine.handle(&BOOKING, id).expect("resumed");
    until_open(&handle, "confirm").await;
    handle
        .complete("confirm", |t: &mut Ticket| t.confirmed = true)
        .await
        .expect("confirmed");
    let ticket = tokio::time::timeout(HANG, handle.outcome())
        .await
        .expect("ended")
        .completed()
        .expect("completed");
    assert_eq!((ticket.seats, ticket.confirmed), (3, true));
    engine.shutdown(HANG).await.expect("shutdown");
    assert!(bookings.next().await.is_none(), "no second instance");
}
