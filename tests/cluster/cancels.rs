//! Cancelling by id across nodes: a node cancels an instance another node runs
//! through a stored request, which the owner's claim poll takes; the owner's loop
//! ends it cancelled, stored so for every node. Unknown and ended ids are refused
//! on any node.

use std::time::Duration;

use thresh::store::Store;
use thresh::{CancelError, InstanceId, Outcome};

use super::{one_at_a_time, order, Schema, HANG, ORDER};

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_node_cancels_an_instance_another_node_runs() {
    let _serial = one_at_a_time().await;
    let schema = Schema::new("cancels");
    let a = schema.node("a").await;
    let b = schema.node("b").await;
    for node in [&a, &b] {
        node.register(&ORDER).expect("register");
        node.message_type::<u64>("pay");
    }
    let handle = a.start(&ORDER, order("C-1")).await.expect("start");
    let id = handle.id();
    // Waits for its payment, on a.
    until_checked(&handle).await;
    assert!(matches!(
        b.cancel_instance(&ORDER, InstanceId(id.0 + 1_000_000))
            .await,
        Err(CancelError::NoInstance(_))
    ));
    b.cancel_instance(&ORDER, id).await.expect("handed to a");
    let outcome = tokio::time::timeout(HANG, handle.outcome())
        .await
        .expect("a's loop ended it");
    assert!(matches!(outcome, Outcome::Cancelled(_)), "{outcome:?}");
    let store = schema.store().await;
    let status = tokio::task::spawn_blocking(move || store.instance(id.0))
        .await
        .unwrap()
        .unwrap()
        .map(|r| r.status);
    assert_eq!(status, Some(thresh::store::Status::Cancelled));
    // Ended, on either node.
    for node in [&a, &b] {
        assert!(matches!(
            node.cancel_instance(&ORDER, id).await,
            Err(CancelError::Ended { .. })
        ));
    }
    // A local one on b is cancelled at once.
    let local = b.start(&ORDER, order("C-2")).await.expect("start");
    until_checked(&local).await;
    b.cancel_instance(&ORDER, local.id())
        .await
        .expect("cancelled");
    assert!(matches!(local.outcome().await, Outcome::Cancelled(_)));
    for node in [a, b] {
        node.shutdown(HANG).await.expect("shutdown");
    }
}

/// Wait until the instance's first task ran (it waits for its payment then).
async fn until_checked(handle: &thresh::InstanceHandle<super::Order>) {
    tokio::time::timeout(HANG, async {
        while handle.history().await.completed_tasks().is_empty() {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    })
    .await
    .expect("checked");
}
