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
    let store = test_store();
    let engine = store.engine().expect("open");
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

    let engine = store.engine().expect("reopen");
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
    // Ended: the booking buffered for B-1 starts the next instance for the key — a
    // durable one, which consumed the stored message.
    let next = tokio::time::timeout(HANG, bookings.next())
        .await
        .expect("started")
        .expect("a handle");
    until_open(&next, "confirm").await;
    assert_eq!(next.data().await.map(|t| t.seats), Some(9));
    // Consumed by its first checkpoint (written without the loop waiting for it).
    tokio::time::timeout(HANG, async {
        while !store.messages().expect("read").is_empty() {
            tokio::task::yield_now().await;
        }
    })
    .await
    .expect("consumed");
    assert_eq!(
        store.instance(next.id().0).expect("read").map(|r| r.status),
        Some(Status::Running)
    );
    engine.shutdown(HANG).await.expect("shutdown");
    assert!(bookings.next().await.is_none(), "no third instance");
}

/// A start message buffered for a running key is stored: it survives a restart (the
/// resumed instance owns its key again, so it waits), and when that instance ends it
/// starts the next instance for the key — once, consuming it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_start_message_buffered_for_a_running_key_starts_the_next_after_a_restart() {
    let store = test_store();
    let engine = store.engine().expect("open");
    let mut bookings = engine
        .deploy(&BOOKING, Ticket::default())
        .expect("deployed");
    let published = engine.publish_message("booking", "B-7", 1_u32).await;
    assert_eq!(published.expect("stored"), thresh::Published::Started);
    let first = bookings.next().await.expect("a handle");
    until_open(&first, "confirm").await;
    for seats in [2_u32, 3] {
        let published = engine.publish_message("booking", "B-7", seats).await;
        assert_eq!(published.expect("stored"), thresh::Published::Buffered);
    }
    assert_eq!(store.messages().expect("read").len(), 2);
    engine.shutdown(HANG).await.expect("shutdown");

    let engine = store.engine().expect("reopen");
    engine.register(&BOOKING).expect("register");
    engine.message_type::<u32>("booking");
    let mut bookings = engine
        .deploy(&BOOKING, Ticket::default())
        .expect("deployed again");
    let report = engine.resume().await.expect("resume");
    assert_eq!(report.resumed, [(first.id(), "BOOKING")]);
    assert_eq!(report.messages, 2, "both buffered bookings published again");
    let first = engine.handle(&BOOKING, first.id()).expect("resumed");
    until_open(&first, "confirm").await;
    let mut seats = Vec::new();
    let mut current = first;
    for _ in 0..3 {
        current
            .complete("confirm", |t: &mut Ticket| t.confirmed = true)
            .await
            .expect("confirmed");
        let ticket = tokio::time::timeout(HANG, current.outcome())
            .await
            .expect("ended")
            .completed()
            .expect("completed");
        seats.push(ticket.seats);
        if seats.len() == 3 {
            break;
        }
        current = tokio::time::timeout(HANG, bookings.next())
            .await
            .expect("the next started")
            .expect("a handle");
        until_open(&current, "confirm").await;
    }
    assert_eq!(seats, [1, 2, 3], "oldest first, each once");
    assert!(store.messages().expect("read").is_empty(), "all consumed");
    engine.shutdown(HANG).await.expect("shutdown");
    assert!(bookings.next().await.is_none(), "no fourth instance");
    let stored = store.list(Some("BOOKING"), None).expect("read");
    assert_eq!(stored.len(), 3);
    assert!(stored.iter().all(|r| r.status == Status::Completed));
}

process! {
    PAIRED: Ticket {
        event_based first: instantiate(parallel);
        catch left: message("left", key = |t| t.id.clone(), apply = |t, id: &String| t.id = id.clone());
        catch right: message("right", key = |t| t.id.clone(), apply = |t, id: &String| t.id = id.clone());
        parallel both;
        end   done;
        first -> left, right;
        left, right -> both -> done;
    }
}

/// A parallel instantiating gate on a durable engine: a repeat of the arm its
/// instance already took is stale when the instance ends — dropped from the broker
/// and from the store, so no restart delivers it and no next instance takes it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stale_arm_repeat_leaves_the_store_when_its_instance_ends() {
    let store = test_store();
    let engine = store.engine().expect("open");
    let mut paired = engine.deploy(&PAIRED, Ticket::default()).expect("deployed");
    let left = |engine: &DurableEngine| {
        let engine = engine.clone();
        async move {
            engine
                .publish_message("left", "P-1", "P-1".to_string())
                .await
        }
    };
    assert_eq!(
        left(&engine).await.expect("stored"),
        thresh::Published::Started
    );
    let first = paired.next().await.expect("a handle");
    assert_eq!(
        left(&engine).await.expect("stored"),
        thresh::Published::Buffered
    );
    // The instance's `right` arm takes it: at once (`Delivered`), or from the
    // buffer if the publish reached the broker before the arm subscribed.
    let right = engine.publish_message("right", "P-1", "P-1".to_string());
    let answer = right.await.expect("stored");
    assert!(
        matches!(
            answer,
            thresh::Published::Delivered | thresh::Published::Buffered
        ),
        "{answer:?}"
    );
    tokio::time::timeout(HANG, first.outcome())
        .await
        .expect("ended")
        .completed()
        .expect("completed");
    // The instance's end drops the repeat from the store (with the end's write) and
    // then from the broker, counted stale (when the deployment hears of the end).
    tokio::time::timeout(HANG, async {
        while !store.messages().expect("read").is_empty() || engine.broker_stats().stale == 0 {
            tokio::task::yield_now().await;
        }
    })
    .await
    .expect("the stale repeat left the store and the broker");
    assert_eq!(engine.broker_stats().stale, 1);
    engine.shutdown(HANG).await.expect("shutdown");

    let setup = |engine: &DurableEngine| {
        engine.message_type::<String>("left");
        engine.deploy(&PAIRED, Ticket::default())
    };
    let restarted = thresh::testing::restart(engine, &store, setup)
        .await
        .expect("restarted");
    assert_eq!(restarted.report.messages, 0);
    restarted.engine.shutdown(HANG).await.expect("shutdown");
    let mut paired = restarted.setup;
    assert!(paired.next().await.is_none(), "no second instance");
    assert_eq!(store.list(Some("PAIRED"), None).expect("read").len(), 1);
}
