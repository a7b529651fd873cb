//! Incidents across nodes (issue 32): listed from the store on every node, and
//! retried from a node other than the one running the instance.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use thresh::retry::RetryError;
use thresh::{process, TaskError};

use super::{one_at_a_time, order, Order, Schema, HANG};

/// The payment service: down until the test brings it back.
static SERVICE_UP: AtomicBool = AtomicBool::new(false);

async fn charge(order: &mut Order) -> Result<(), TaskError> {
    match SERVICE_UP.load(Ordering::SeqCst) {
        true => {
            order.checked += 1;
            Ok(())
        }
        false => Err(TaskError::permanent("payment service down")),
    }
}

process! {
    CHARGE: Order {
        start s;
        task  charge = charge;
        end   e;
        s -> charge -> e;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn an_incident_is_listed_on_every_node_and_retried_from_another() {
    let _serial = one_at_a_time().await;
    let schema = Schema::new("incidents");
    let a = schema.node("a").await;
    let b = schema.node("b").await;
    for node in [&a, &b] {
        node.register(&CHARGE).expect("register");
    }
    SERVICE_UP.store(false, Ordering::SeqCst);
    let handle = a.start(&CHARGE, order("I-1")).await.expect("start");
    // b reads it from the store: a holds the instance.
    let listed = tokio::time::timeout(HANG, async {
        loop {
            let listed = b.incidents().await.expect("list");
            if !listed.is_empty() {
                return listed;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await
    .expect("the incident stored");
    assert_eq!(listed.len(), 1, "{listed:?}");
    let incident = &listed[0];
    assert_eq!(
        (incident.id.instance, incident.node, incident.error.as_str()),
        (handle.id(), "charge", "payment service down")
    );
    assert_eq!(a.incidents().await.expect("list"), listed);
    // The stored instance shows it, from either node.
    let watched = b.watch(&CHARGE, handle.id());
    assert_eq!(watched.incidents().await.expect("read"), listed);
    // A data change is made where the instance runs, not from b.
    assert_eq!(
        b.retry_with(incident.id, |o: &mut Order| o.paid = 1).await,
        Err(RetryError::Elsewhere(incident.id))
    );
    // The service is back: b's retry reaches a, which runs the task again.
    SERVICE_UP.store(true, Ordering::SeqCst);
    b.retry(incident.id).await.expect("handed to a");
    let done = tokio::time::timeout(HANG, handle.outcome())
        .await
        .expect("ended")
        .completed()
        .expect("completed after the retry");
    assert_eq!((done.checked, done.paid), (1, 0));
    assert_eq!(
        b.retry(incident.id).await,
        Err(RetryError::NoIncident(incident.id))
    );
    // Another incident, retried from b with the data changed there: the new data
    // travels to a as JSON.
    SERVICE_UP.store(false, Ordering::SeqCst);
    let second = a.start(&CHARGE, order("I-2")).await.expect("start");
    let incident = tokio::time::timeout(HANG, async {
        loop {
            if let Some(i) = b.incidents().await.expect("list").pop() {
                return i;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await
    .expect("the second incident stored");
    assert_eq!(incident.id.instance, second.id());
    SERVICE_UP.store(true, Ordering::SeqCst);
    let mut fixed = second.data().await.expect("data");
    fixed.paid = 7;
    b.retry_with_data(incident.id, fixed)
        .await
        .expect("handed to a");
    let done = tokio::time::timeout(HANG, second.outcome())
        .await
        .expect("ended")
        .completed()
        .expect("completed after the retry");
    assert_eq!((done.checked, done.paid), (1, 7));
    tokio::time::timeout(HANG, async {
        while !b.incidents().await.expect("list").is_empty() {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await
    .expect("resolved in the store");
    for node in [a, b] {
        node.shutdown(HANG).await.expect("shutdown");
    }
}

/// An incident of an instance its node evicted (its handle dropped, so it sleeps
/// with nothing in memory to send to it), retried from another node: the retry
/// request loads it on its owner, which runs the task again.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn an_evicted_instances_incident_is_retried_from_another_node() {
    let _serial = one_at_a_time().await;
    let schema = Schema::new("incidents_evicted");
    let a = schema.node("a").await;
    let b = schema.node("b").await;
    a.evict_idle(Some(Duration::ZERO));
    for node in [&a, &b] {
        node.register(&CHARGE).expect("register");
    }
    SERVICE_UP.store(false, Ordering::SeqCst);
    let id = a.start(&CHARGE, order("E-1")).await.expect("start").id();
    let incident = tokio::time::timeout(HANG, async {
        loop {
            if let Some(i) = b.incidents().await.expect("list").pop() {
                if a.evicted_instances() == 1 {
                    return i;
                }
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await
    .expect("the incident stored and its instance evicted");
    assert_eq!(incident.id.instance, id);
    assert_eq!(a.running_instances(), 0, "evicted, not running");
    SERVICE_UP.store(true, Ordering::SeqCst);
    b.retry(incident.id).await.expect("handed to a");
    let (status, outcome) = tokio::time::timeout(HANG, async {
        loop {
            match b.instance(id).await.expect("read") {
                Some((thresh::store::Status::Running, _)) => {
                    tokio::time::sleep(Duration::from_millis(10)).await
                }
                Some((status, outcome)) => return (status, outcome.unwrap_or_default()),
                None => panic!("not stored"),
            }
        }
    })
    .await
    .expect("it ends after the retry");
    assert_eq!(status, thresh::store::Status::Completed, "{outcome}");
    assert!(outcome.contains("\"checked\":1"), "{outcome}");
    assert_eq!(a.evicted_loads(), 1, "loaded once, on its owner");
    assert!(b.incidents().await.expect("list").is_empty());
    for node in [a, b] {
        node.shutdown(HANG).await.expect("shutdown");
    }
}
