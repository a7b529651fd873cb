//! Cancelling a durable instance by id (`DurableEngine::cancel_instance`): a live
//! loop, an evicted one (with a handle: its intake kept; without: loaded on a new
//! one), a resumed one, one stored running that nothing here runs, unknown and
//! ended ids. Each cancelled one is stored cancelled once the call returns.

use super::*;
use thresh::CancelError;

#[derive(Clone, Debug, Default, PartialEq, ProcessData, Serialize, Deserialize)]
pub struct Leave {
    pub days: u32,
    pub approved: bool,
}

process! {
    LEAVE: Leave {
        start s;
        user  approve;
        end   e;
        s -> approve -> e;
    }
}

process! {
    TRIP: Leave {
        start s;
        user  book;
        end   e;
        s -> book -> e;
    }
}

fn stored_status(store: &TestStore, id: InstanceId) -> Option<Status> {
    store.store().instance(id.0).unwrap().map(|r| r.status)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_live_instance_is_cancelled_by_id_and_stored_cancelled() {
    let store = test_store();
    let engine = store.engine().unwrap();
    let handle = engine.start(&LEAVE, Leave::default()).await.unwrap();
    until_open(&handle, "approve").await;
    engine
        .cancel_instance(&LEAVE, handle.id())
        .await
        .expect("cancelled");
    // `Ok` once the end is stored.
    assert_eq!(stored_status(&store, handle.id()), Some(Status::Cancelled));
    let outcome = tokio::time::timeout(HANG, handle.outcome()).await.unwrap();
    assert!(matches!(outcome, Outcome::Cancelled(_)), "{outcome:?}");
    assert!(engine
        .tasks(&thresh::TaskQuery::new())
        .await
        .unwrap()
        .is_empty());
    // Again: ended, as the store says.
    assert!(matches!(
        engine.cancel_instance(&LEAVE, handle.id()).await,
        Err(CancelError::Ended {
            status: Some(Status::Cancelled),
            ..
        })
    ));
    engine.shutdown(HANG).await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unknown_and_other_process_ids_are_refused() {
    let store = test_store();
    let engine = store.engine().unwrap();
    assert!(matches!(
        engine.cancel_instance(&LEAVE, InstanceId(424_242)).await,
        Err(CancelError::NoInstance(_))
    ));
    let handle = engine.start(&LEAVE, Leave::default()).await.unwrap();
    until_open(&handle, "approve").await;
    assert!(matches!(
        engine.cancel_instance(&TRIP, handle.id()).await,
        Err(CancelError::OtherProcess { .. })
    ));
    assert_eq!(stored_status(&store, handle.id()), Some(Status::Running));
    engine.shutdown(HANG).await.unwrap();
}

/// Evicted with its handle kept (its intake kept) and without (nothing could send
/// to it: loaded on a new intake): the cancel loads each, which ends cancelled.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn evicted_instances_are_loaded_and_cancelled() {
    let store = test_store();
    let engine = store.engine().unwrap();
    engine.evict_idle(Some(Duration::ZERO));
    let kept = engine.start(&LEAVE, Leave::default()).await.unwrap();
    let dropped = engine.start(&LEAVE, Leave::default()).await.unwrap().id();
    until("both evicted", || engine.evicted_instances() == 2).await;
    engine
        .cancel_instance(&LEAVE, kept.id())
        .await
        .expect("cancelled");
    let outcome = tokio::time::timeout(HANG, kept.outcome()).await.unwrap();
    assert!(matches!(outcome, Outcome::Cancelled(_)), "{outcome:?}");
    engine
        .cancel_instance(&LEAVE, dropped)
        .await
        .expect("cancelled");
    assert_eq!(stored_status(&store, kept.id()), Some(Status::Cancelled));
    assert_eq!(stored_status(&store, dropped), Some(Status::Cancelled));
    assert_eq!(engine.evicted_instances(), 0);
    assert!(engine.evicted_loads() >= 2);
    engine.shutdown(HANG).await.unwrap();
}

/// After a restart: stored running but not resumed here — `NotRunning`, nothing
/// changed; resumed, it is cancelled.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stored_instance_is_cancelled_once_resumed() {
    let store = test_store();
    let engine = store.engine().unwrap();
    let handle = engine.start(&LEAVE, Leave::default()).await.unwrap();
    until_open(&handle, "approve").await;
    let id = handle.id();
    engine.shutdown(HANG).await.unwrap();
    drop(engine);
    let engine = store.engine().unwrap();
    engine.register(&LEAVE).unwrap();
    assert!(matches!(
        engine.cancel_instance(&LEAVE, id).await,
        Err(CancelError::NotRunning(_))
    ));
    assert_eq!(stored_status(&store, id), Some(Status::Running));
    engine.resume().await.unwrap();
    engine.cancel_instance(&LEAVE, id).await.expect("cancelled");
    assert_eq!(stored_status(&store, id), Some(Status::Cancelled));
    engine.shutdown(HANG).await.unwrap();
}

/// Many cancels by id at once, each racing its instance's completion, on several
/// threads: every instance ends one way, stored so, and the cancel's answer agrees.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn cancels_racing_completions_agree_with_the_stored_end() {
    let store = test_store();
    let engine = store.engine().unwrap();
    let mut runs = Vec::new();
    for _ in 0..40 {
        let handle = engine.start(&LEAVE, Leave::default()).await.unwrap();
        until_open(&handle, "approve").await;
        let (e, h) = (engine.clone(), handle.clone());
        let id = handle.id();
        let cancel = tokio::spawn(async move { e.cancel_instance(&LEAVE, id).await });
        let complete =
            tokio::spawn(async move { h.complete("approve", |l| l.approved = true).await });
        runs.push((handle, cancel, complete));
    }
    for (handle, cancel, complete) in runs {
        let (cancel, complete) = (cancel.await.unwrap(), complete.await.unwrap());
        let outcome = tokio::time::timeout(HANG, handle.outcome()).await.unwrap();
        let stored = stored_status(&store, handle.id());
        match outcome {
            Outcome::Cancelled(_) => {
                assert!(cancel.is_ok(), "cancelled, yet the cancel said {cancel:?}");
                assert_eq!(stored, Some(Status::Cancelled));
            }
            Outcome::Completed(_) => {
                assert!(complete.is_ok());
                assert!(
                    matches!(cancel, Err(CancelError::Ended { .. })),
                    "completed, yet the cancel said {cancel:?}"
                );
                assert_eq!(stored, Some(Status::Completed));
            }
            other => panic!("{other:?}"),
        }
    }
    engine.shutdown(HANG).await.unwrap();
}
