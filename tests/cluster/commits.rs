//! A commit whose answer is lost (issue 39), made deterministic by the store's
//! fault hook (`PostgresStore::inject_commit_fault`: the connection dies right after
//! the server committed, or right before the COMMIT is sent): every start,
//! checkpoint, message consumption, publish, user-task completion and end is
//! acknowledged once and stored once, and nothing acknowledged fails.

use std::sync::Arc;

use thresh::store::{CommitFault, PostgresStore, Status, Store};
use thresh::{process, DurableEngine};

use super::{one_at_a_time, order, until_open, Order, HANG, ORDER};

process! {
    REVIEW: Order {
        start s;
        user  review;
        task  check = |o| async move { o.checked += 1; Ok(()) };
        user  approve;
        end   e;
        s -> review -> check -> approve -> e;
    }
}

/// A durable engine on a store of its own, and the store (to inject faults).
fn engine(
    tag: &str,
) -> (
    DurableEngine,
    Arc<PostgresStore>,
    thresh::testing::TempSchema,
) {
    let schema = thresh::testing::TempSchema::new(tag);
    let store = Arc::new(schema.connect().expect("store"));
    let engine = DurableEngine::with_store(store.clone()).expect("engine");
    engine.register(&ORDER).expect("register");
    engine.register(&REVIEW).expect("register");
    engine.message_type::<u64>("pay");
    (engine, store, schema)
}

/// Wait until the store has no injected fault left (the next commits made them).
async fn faults_made(store: &PostgresStore, what: &str) {
    tokio::time::timeout(HANG, async {
        while store.pending_commit_faults() > 0 {
            tokio::time::sleep(std::time::Duration::from_millis(5)).await;
        }
    })
    .await
    .unwrap_or_else(|_| {
        panic!(
            "{what}: {} injected faults not made",
            store.pending_commit_faults()
        )
    });
}

/// One instance through every kind of write, each commit's answer lost.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn every_write_of_an_instance_is_acknowledged_once_when_its_commit_answer_is_lost() {
    let _serial = one_at_a_time().await;
    for fault in [
        CommitFault::AnswerLost,
        CommitFault::Lost,
        CommitFault::Stalled,
    ] {
        let (engine, store, _schema) = engine("lost_answers");
        // The start (its birth record); then the checkpoint after `check`.
        store.inject_commit_fault(fault);
        store.inject_commit_fault(fault);
        let handle = engine
            .start(&ORDER, order("L-1"))
            .await
            .unwrap_or_else(|e| panic!("{fault:?}: start: {e}"));
        faults_made(&store, "the start and its first checkpoint").await;
        // The publish, and the checkpoint that consumes it.
        store.inject_commit_fault(fault);
        store.inject_commit_fault(fault);
        engine
            .publish_message("pay", "L-1", 5_u64)
            .await
            .unwrap_or_else(|e| panic!("{fault:?}: publish: {e}"));
        until_open(&handle, "approve").await;
        faults_made(&store, "the publish and its consumption").await;
        // The completion, stored with the end that follows it.
        store.inject_commit_fault(fault);
        handle
            .complete("approve", |o: &mut Order| o.approved = true)
            .await
            .unwrap_or_else(|e| panic!("{fault:?}: complete: {e}"));
        let done = tokio::time::timeout(HANG, handle.outcome())
            .await
            .expect("ended")
            .completed()
            .unwrap_or_else(|| panic!("{fault:?}: completed"));
        faults_made(&store, "the completion and its end").await;
        // Each effect once: the task ran once, the payment applied once.
        assert_eq!((done.checked, done.paid, done.approved), (1, 5, true));
        let reader = store.clone();
        let (record, messages) = tokio::task::spawn_blocking(move || {
            let id = handle.id().0;
            (reader.instance(id).unwrap(), reader.messages().unwrap())
        })
        .await
        .unwrap();
        assert_eq!(record.map(|r| r.status), Some(Status::Completed));
        assert!(messages.is_empty(), "{fault:?}: the message was consumed");
        // A completion stored by a checkpoint of its own (a task follows it).
        store.inject_commit_fault(fault);
        let review = engine.start(&REVIEW, order("R-1")).await.expect("start");
        faults_made(&store, "the review's start").await;
        until_open(&review, "review").await;
        store.inject_commit_fault(fault);
        review
            .complete("review", |o: &mut Order| o.paid = 7)
            .await
            .unwrap_or_else(|e| panic!("{fault:?}: complete: {e}"));
        faults_made(&store, "the review's completion").await;
        until_open(&review, "approve").await;
        review
            .complete("approve", |o: &mut Order| o.approved = true)
            .await
            .expect("approved");
        let done = tokio::time::timeout(HANG, review.outcome())
            .await
            .expect("ended")
            .completed()
            .expect("completed");
        assert_eq!((done.checked, done.paid, done.approved), (1, 7, true));
        engine.shutdown(HANG).await.expect("shutdown");
    }
}

/// The case: starts at once share a group commit whose answer is lost.
/// Every start is acknowledged (none refused as a stale checkpoint of itself) and
/// every instance ends once.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn starts_sharing_a_lost_group_commit_are_all_acknowledged() {
    let _serial = one_at_a_time().await;
    let (engine, store, _schema) = engine("lost_group");
    for _ in 0..3 {
        store.inject_commit_fault(CommitFault::AnswerLost);
    }
    let starts: Vec<_> = (0..40)
        .map(|n| {
            let engine = engine.clone();
            tokio::spawn(async move { engine.start(&ORDER, order(&format!("G-{n}"))).await })
        })
        .collect();
    let mut handles = Vec::new();
    for (n, start) in starts.into_iter().enumerate() {
        let handle = start
            .await
            .unwrap()
            .unwrap_or_else(|e| panic!("start {n}: {e}"));
        handles.push(handle);
    }
    faults_made(&store, "the group's starts").await;
    for (n, handle) in handles.iter().enumerate() {
        engine
            .publish_message("pay", format!("G-{n}"), 1_u64)
            .await
            .expect("published");
        until_open(handle, "approve").await;
        handle
            .complete("approve", |o: &mut Order| o.approved = true)
            .await
            .expect("completed");
    }
    for handle in &handles {
        let done = tokio::time::timeout(HANG, handle.outcome())
            .await
            .expect("ended")
            .completed()
            .expect("completed");
        assert_eq!((done.checked, done.paid, done.approved), (1, 1, true));
    }
    let reader = store.clone();
    let records = tokio::task::spawn_blocking(move || reader.list(None, None).unwrap())
        .await
        .unwrap();
    assert_eq!(records.len(), handles.len());
    assert!(records.iter().all(|r| r.status == Status::Completed));
    engine.shutdown(HANG).await.expect("shutdown");
}
