//! Call activities on a durable engine: the child of a durable parent is durable
//! too (its process registered), the parent's checkpoint records the call's child,
//! and after a restart the resumed parent waits on the resumed child — which knows
//! its parent again — and maps its output when it ends. A child whose process is not
//! registered cannot start: an incident at the call, retried once it is registered
//! (fail-fast: the call fails, `CallNotStarted`); one whose process is
//! not registered after a restart is reported skipped, and the parent's call fails
//! saying so.

use std::sync::Arc;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use thresh::store::{MemoryStore, Status, Store};
use thresh::{
    process, DurableEngine, Happening, InstanceError, InstanceHandle, Outcome, ProcessData,
    SkipReason,
};

const HANG: Duration = Duration::from_secs(20);

#[derive(Clone, Debug, Default, PartialEq, ProcessData, Serialize, Deserialize)]
pub struct Order {
    pub id: String,
    pub tracking: String,
    pub late: bool,
}

#[derive(Clone, Debug, Default, PartialEq, ProcessData, Serialize, Deserialize)]
pub struct Shipment {
    pub order: String,
    pub tracking: String,
}

process! {
    SHIPPING: Shipment {
        start begin;
        user pack;
        task label = |s| async move { s.tracking = format!("T-{}", s.order); Ok(()) };
        end shipped;
        begin -> pack -> label -> shipped;
    }
}

process! {
    /// A call that retries starting its child twice, 10 ms apart.
    RETRYING: Order {
        start placed;
        call ship = SHIPPING(
            input = |o| Shipment { order: o.id.clone(), ..Shipment::default() },
            output = |o, s| o.tracking = s.tracking
        ): retry(2, backoff = 10ms);
        end done;
        placed -> ship -> done;
    }
}

process! {
    ORDER: Order {
        start placed;
        call ship = SHIPPING(
            input = |o| Shipment { order: o.id.clone(), ..Shipment::default() },
            output = |o, s| o.tracking = s.tracking
        );
        end done;
        placed -> ship -> done;
    }
}

async fn until_open<D: Clone>(handle: &InstanceHandle<D>, node: &str) {
    tokio::time::timeout(HANG, async {
        while !handle.open_work().await.iter().any(|w| w.node == node) {
            tokio::task::yield_now().await;
        }
    })
    .await
    .expect("the user task opened");
}

/// Complete the child's user task once it is open.
async fn pack(child: &InstanceHandle<Shipment>) {
    until_open(child, "pack").await;
    child
        .complete("pack", |_: &mut Shipment| {})
        .await
        .expect("completed");
}

/// The instance's data once it completed.
async fn completed<D: Clone + std::fmt::Debug>(h: &InstanceHandle<D>) -> D {
    let outcome = tokio::time::timeout(HANG, h.outcome())
        .await
        .expect("ended");
    let Outcome::Completed(data) = outcome else {
        panic!("not completed: {outcome:?}")
    };
    data
}

async fn until_child(parent: &InstanceHandle<Order>) -> InstanceHandle<Shipment> {
    tokio::time::timeout(HANG, async {
        loop {
            if let Some(child) = parent.children_of(&SHIPPING).await.pop() {
                return child;
            }
            tokio::task::yield_now().await;
        }
    })
    .await
    .expect("the call started its child")
}

/// Until the store holds the parent's checkpoint recording its call (and the child's
/// first checkpoint): the writer is a group commit, and a restart before it would
/// test the crash window instead.
async fn until_stored(store: &MemoryStore, ids: &[u64]) {
    tokio::time::timeout(HANG, async {
        loop {
            let stored = ids.iter().all(|id| {
                store
                    .instance(*id)
                    .ok()
                    .flatten()
                    .is_some_and(|r| r.state.contains("\"tracks\""))
            });
            if stored
                && store
                    .instance(ids[0])
                    .unwrap()
                    .unwrap()
                    .state
                    .contains("\"calls\"")
            {
                return;
            }
            tokio::task::yield_now().await;
        }
    })
    .await
    .expect("the checkpoints were stored");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restart_mid_call_resumes_parent_and_child_together() {
    let store = Arc::new(MemoryStore::new());
    let engine = DurableEngine::with_store(store.clone()).expect("open");
    engine.register(&SHIPPING).expect("register the callee");
    let parent = engine
        .start(
            &ORDER,
            Order {
                id: "A-1".into(),
                ..Order::default()
            },
        )
        .await
        .expect("stored");
    let child = until_child(&parent).await;
    until_open(&child, "pack").await;
    let (parent_id, child_id) = (parent.id(), child.id());
    assert_eq!(child.parent(), Some(parent_id));
    until_stored(&store, &[parent_id.0, child_id.0]).await;

    // Restart: both stay stored as running and both resume.
    engine.shutdown(HANG).await.expect("shutdown");
    let engine = DurableEngine::with_store(store.clone()).expect("reopen");
    engine.register(&ORDER).expect("register");
    engine.register(&SHIPPING).expect("register");
    let report = engine.resume().await.expect("resume");
    let mut resumed: Vec<_> = report.resumed.iter().map(|(id, _)| *id).collect();
    resumed.sort();
    assert_eq!(resumed, [parent_id, child_id]);
    let parent = engine.handle(&ORDER, parent_id).expect("parent resumed");
    let child = engine.handle(&SHIPPING, child_id).expect("child resumed");
    assert_eq!(
        child.parent(),
        Some(parent_id),
        "the child knows its parent again"
    );
    tokio::time::timeout(HANG, async {
        while parent.children().await != [child_id] {
            tokio::task::yield_now().await;
        }
    })
    .await
    .expect("the resumed parent lists its recorded child");
    pack(&child).await;
    let order = completed(&parent).await;
    assert_eq!(
        order.tracking, "T-A-1",
        "the resumed child's output came back"
    );
    // The parent waited on the resumed child: no second child was started.
    assert!(!parent
        .history()
        .await
        .steps()
        .iter()
        .any(|s| matches!(s.what, Happening::Called { child } if child != child_id)));
    engine.shutdown(HANG).await.expect("shutdown");
    for id in [parent_id, child_id] {
        let record = store.instance(id.0).expect("read").expect("kept");
        assert_eq!(record.status, Status::Completed);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_callee_not_registered_after_a_restart_fails_the_call_and_is_reported() {
    let store = Arc::new(MemoryStore::new());
    let engine = DurableEngine::with_store(store.clone()).expect("open");
    engine.register(&SHIPPING).expect("register the callee");
    let parent = engine
        .start(
            &ORDER,
            Order {
                id: "B-1".into(),
                ..Order::default()
            },
        )
        .await
        .expect("stored");
    let child = until_child(&parent).await;
    until_open(&child, "pack").await;
    let (parent_id, child_id) = (parent.id(), child.id());
    until_stored(&store, &[parent_id.0, child_id.0]).await;
    engine.shutdown(HANG).await.expect("shutdown");

    let engine = DurableEngine::with_store(store.clone()).expect("reopen");
    engine.register(&ORDER).expect("register");
    let report = engine.resume().await.expect("resume");
    assert_eq!(report.resumed, [(parent_id, "ORDER")]);
    assert_eq!(report.skipped.len(), 1);
    assert_eq!(report.skipped[0].id, child_id);
    assert!(matches!(
        report.skipped[0].reason,
        SkipReason::NotRegistered
    ));
    let parent = engine.handle(&ORDER, parent_id).expect("parent resumed");
    match tokio::time::timeout(HANG, parent.outcome())
        .await
        .expect("ended")
    {
        Outcome::Failed(InstanceError::TaskFailed { node, message }) => {
            assert_eq!(node, "ship");
            assert!(message.contains("was not resumed"), "{message}");
            assert!(
                message.contains("`SHIPPING` is not registered"),
                "{message}"
            );
        }
        other => panic!("expected the call to fail, got {other:?}"),
    }
    engine.shutdown(HANG).await.expect("shutdown");
    // The child stays stored, untouched, for an engine that registers its process.
    let record = store.instance(child_id.0).expect("read").expect("kept");
    assert_eq!(record.status, Status::Running);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_callee_never_registered_cannot_start() {
    let store = Arc::new(MemoryStore::new());
    let engine = DurableEngine::with_store_config(store.clone(), thresh::EngineConfig::fail_fast())
        .expect("open");
    let parent = engine
        .start(
            &ORDER,
            Order {
                id: "C-1".into(),
                ..Order::default()
            },
        )
        .await
        .expect("stored");
    match tokio::time::timeout(HANG, parent.outcome())
        .await
        .expect("ended")
    {
        Outcome::Failed(InstanceError::CallNotStarted {
            node,
            callee,
            reason,
        }) => {
            assert_eq!((node, callee), ("ship", "SHIPPING"));
            assert!(reason.contains("DurableEngine::register"), "{reason}");
        }
        other => panic!("expected CallNotStarted, got {other:?}"),
    }
    engine.shutdown(HANG).await.expect("shutdown");
}

#[derive(Clone, Debug, Default, PartialEq, ProcessData, Serialize, Deserialize)]
pub struct Lines {
    pub id: String,
    pub lines: Vec<String>,
    pub tracking: Vec<String>,
}

process! {
    /// One shipping child per line, in parallel; the children's tracking numbers
    /// merged in line order.
    LINES: Lines {
        start placed;
        #[multi_instance(each = |o| o.lines.clone(), output = |o, _i, s| o.tracking.push(s.tracking))]
        call ship = SHIPPING(input = |o, line, _i| Shipment { order: format!("{}-{line}", o.id), ..Shipment::default() });
        end done;
        placed -> ship -> done;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restart_mid_multi_instance_call_resumes_every_child_and_merges_in_order() {
    let store = Arc::new(MemoryStore::new());
    let engine = DurableEngine::with_store(store.clone()).expect("open");
    engine.register(&SHIPPING).expect("register the callee");
    let parent = engine
        .start(
            &LINES,
            Lines {
                id: "M".into(),
                lines: vec!["a".into(), "b".into(), "c".into()],
                ..Lines::default()
            },
        )
        .await
        .expect("stored");
    let children = tokio::time::timeout(HANG, async {
        loop {
            let children = parent.children_of(&SHIPPING).await;
            if children.len() == 3 {
                return children;
            }
            tokio::task::yield_now().await;
        }
    })
    .await
    .expect("three children");
    for child in &children {
        until_open(child, "pack").await;
    }
    let parent_id = parent.id();
    let mut ids: Vec<u64> = vec![parent_id.0];
    ids.extend(children.iter().map(|c| c.id().0));
    until_stored(&store, &ids).await;
    tokio::time::timeout(HANG, async {
        while store
            .instance(parent_id.0)
            .unwrap()
            .unwrap()
            .state
            .matches("\"child\"")
            .count()
            < 3
        {
            tokio::task::yield_now().await;
        }
    })
    .await
    .expect("the parent's checkpoint records the three calls");

    engine.shutdown(HANG).await.expect("shutdown");
    let engine = DurableEngine::with_store(store.clone()).expect("reopen");
    engine.register(&LINES).expect("register");
    engine.register(&SHIPPING).expect("register");
    let report = engine.resume().await.expect("resume");
    assert_eq!(report.resumed.len(), 4, "{report:?}");
    let parent = engine.handle(&LINES, parent_id).expect("parent resumed");
    // Completed last line first: the outputs still merge in line order.
    for child in children.iter().rev() {
        pack(&engine.handle(&SHIPPING, child.id()).expect("child resumed")).await;
    }
    let done = completed(&parent).await;
    assert_eq!(done.tracking, ["T-M-a", "T-M-b", "T-M-c"]);
    // The resumed parent waited on its recorded children: no other was started.
    let called = parent
        .history()
        .await
        .count("ship", |w| matches!(w, Happening::Called { .. }));
    assert_eq!(called, 3);
    engine.shutdown(HANG).await.expect("shutdown");
}

/// A callee not registered yet: the call tries starting it (two attempts), then
/// holds at an incident; once the process is registered, a retry starts the child
/// and the parent completes with its output.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_whose_child_cannot_start_opens_an_incident_a_retry_mends() {
    let store = Arc::new(MemoryStore::new());
    let engine = DurableEngine::with_store(store.clone()).expect("open");
    engine.register(&RETRYING).expect("register");
    let parent = engine
        .start(
            &RETRYING,
            Order {
                id: "R-1".into(),
                ..Order::default()
            },
        )
        .await
        .expect("stored");
    let incident = tokio::time::timeout(HANG, async {
        loop {
            if let Some(incident) = engine.incidents().await.expect("list").pop() {
                return incident;
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    })
    .await
    .expect("an incident at the call");
    assert_eq!((incident.node, incident.attempts), ("ship", 2));
    assert!(
        incident.error.contains("DurableEngine::register"),
        "{}",
        incident.error
    );
    assert!(!parent.is_finished());
    engine.register(&SHIPPING).expect("register");
    engine.retry(incident.id).await.expect("retried");
    let child = until_child(&parent).await;
    until_open(&child, "pack").await;
    child
        .complete("pack", |_: &mut Shipment| {})
        .await
        .expect("packed");
    let order = tokio::time::timeout(HANG, parent.outcome())
        .await
        .expect("ended")
        .completed()
        .expect("completed");
    assert!(!order.tracking.is_empty(), "{order:?}");
    engine.shutdown(HANG).await.expect("shutdown");
}
