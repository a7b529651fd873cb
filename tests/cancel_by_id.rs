//! Cancelling an in-memory instance by id (`Engine::cancel_instance`): the same
//! request its handle's `cancel` sends, found through the engine's listing; unknown,
//! ended and other-process ids are told apart; a cancel racing a completion ends the
//! instance one way, which the cancel's answer says.

use std::time::Duration;

use thresh::{
    process, CancelError, Engine, EngineConfig, Happening, InstanceId, Outcome, ProcessData, Query,
    Status, TaskQuery,
};

const HANG: Duration = Duration::from_secs(20);

#[derive(Clone, Debug, Default, ProcessData)]
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
    OTHER: Leave {
        start s;
        user  sign;
        end   e;
        s -> sign -> e;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_waiting_instance_is_cancelled_by_id_as_its_handle_would() {
    let engine = Engine::with_config(EngineConfig {
        keep_ended: 10,
        ..EngineConfig::default()
    });
    let handle = engine.start(&LEAVE, Leave::default()).await.unwrap();
    let id = handle.id();
    assert_eq!(engine.tasks(&TaskQuery::new()).await.unwrap().len(), 1);
    engine.cancel_instance(&LEAVE, id).await.expect("cancelled");
    // Ended once the call returns: listed as cancelled.
    let page = engine
        .instances(&Query::of(&LEAVE).status(Status::Cancelled))
        .await
        .unwrap();
    assert_eq!(page.items.len(), 1, "listed as cancelled");
    let outcome = tokio::time::timeout(HANG, handle.outcome()).await.unwrap();
    assert!(matches!(outcome, Outcome::Cancelled(_)), "{outcome:?}");
    let history = handle.history().await;
    assert!(
        history
            .steps()
            .iter()
            .any(|s| s.node == "approve" && s.what == Happening::Cancelled),
        "the waiting token's cancel is in the history: {history:?}"
    );
    assert!(engine.tasks(&TaskQuery::new()).await.unwrap().is_empty());
    // Cancelled again: it has ended, and the kept summary says how.
    assert!(matches!(
        engine.cancel_instance(&LEAVE, id).await,
        Err(CancelError::Ended {
            status: Some(Status::Cancelled),
            ..
        })
    ));
}

#[tokio::test]
async fn unknown_ended_and_other_process_ids_are_refused() {
    let engine = Engine::new();
    assert!(matches!(
        engine.cancel_instance(&LEAVE, InstanceId(987_654)).await,
        Err(CancelError::NoInstance(InstanceId(987_654)))
    ));
    let handle = engine.start(&LEAVE, Leave::default()).await.unwrap();
    let refused = engine.cancel_instance(&OTHER, handle.id()).await;
    assert!(
        matches!(&refused, Err(CancelError::OtherProcess { actual, given: "OTHER", .. }) if actual == "LEAVE"),
        "{refused:?}"
    );
    assert_eq!(handle.open_work().await.len(), 1, "still waiting");
    handle
        .complete("approve", |l| l.approved = true)
        .await
        .unwrap();
    assert!(handle.outcome().await.completed().is_some());
    // Ended, and no summary kept (`keep_ended` is 0): not known any more.
    assert!(matches!(
        engine.cancel_instance(&LEAVE, handle.id()).await,
        Err(CancelError::NoInstance(_))
    ));
}

/// A cancel by id races the completion of the instance's one user task (after
/// which it ends): the cancel's answer agrees with the outcome — `Ok` for a cancelled
/// one, `Ended`/`NoInstance` for a completed one.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_cancel_racing_a_completion_agrees_with_the_outcome() {
    let engine = Engine::new();
    let (mut cancelled, mut completed) = (0, 0);
    for _ in 0..200 {
        let handle = engine.start(&LEAVE, Leave::default()).await.unwrap();
        let id = handle.id();
        let (e, h) = (engine.clone(), handle.clone());
        let cancel = tokio::spawn(async move { e.cancel_instance(&LEAVE, id).await });
        let complete =
            tokio::spawn(async move { h.complete("approve", |l| l.approved = true).await });
        let (cancel, complete) = (cancel.await.unwrap(), complete.await.unwrap());
        let outcome = tokio::time::timeout(HANG, handle.outcome()).await.unwrap();
        match outcome {
            Outcome::Cancelled(_) => {
                // The completion may have been taken before the token reached the end.
                assert!(cancel.is_ok(), "cancelled, yet the cancel said {cancel:?}");
                cancelled += 1;
            }
            Outcome::Completed(data) => {
                assert!(data.approved);
                assert!(
                    matches!(
                        cancel,
                        Err(CancelError::Ended { .. } | CancelError::NoInstance(_))
                    ),
                    "completed, yet the cancel said {cancel:?}"
                );
                assert!(complete.is_ok());
                completed += 1;
            }
            other => panic!("{other:?}"),
        }
    }
    assert_eq!(cancelled + completed, 200);
}
