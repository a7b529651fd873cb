//! A user task raises a BPMN error or an escalation through its instance's handle
//! (`raise_error`, `raise_escalation`), as a task's handler does with
//! `TaskError::bpmn` / `TaskError::escalate`:
//!
//! - an error is caught by the user task's own error boundary (its `apply` sees the
//!   `BpmnError`), else by a boundary on an enclosing sub-process (the sub-process's
//!   other work is cancelled), else by an error event sub-process; uncaught, the
//!   instance fails with `UncaughtError` naming the user task;
//! - an escalation caught by a non-interrupting boundary starts its path and leaves the
//!   user task open (it can still be completed); by an interrupting one it ends the
//!   user task; uncaught, nothing happens and the user task stays open;
//! - raising on a name the process has no user task of is `WorkError::NoSuchUserTask`,
//!   listing the ones it has, and after the instance ended `WorkError::InstanceEnded`;
//! - the typed references (`OWN_BOUNDARY::user.review`, `::error.REJECTED`) name the
//!   same user task and code as the strings.
//!
//! The waits are the public test kit's (`thresh::testing`).

#[macro_use]
mod common;

use common::*;
use thresh::events::BpmnError;
use thresh::testing::{expect_parked, expect_that};
use thresh::{process, Engine, Happening, InstanceError, Outcome, ProcessData, WorkError};

#[derive(Clone, Debug, Default, PartialEq, ProcessData)]
struct Doc {
    note: String,
    path: Vec<String>,
}

process! {
    OWN_BOUNDARY: Doc {
        start begin;
        user review;
        boundary rejected on review: error("REJECTED", apply = |d, e: &BpmnError| d.note = e.message.clone());
        task approve = |d| async move { d.path.push("approved".into()); Ok(()) };
        task rework = |d| async move { d.path.push("rework".into()); Ok(()) };
        end approved;
        end returned;
        begin -> review -> approve -> approved;
        rejected -> rework -> returned;
    }
}

#[tokio::test]
async fn an_error_is_caught_by_the_user_tasks_own_boundary() {
    let engine = Engine::new();
    let handle = engine.start(&OWN_BOUNDARY, Doc::default()).await.unwrap();
    expect_parked(&handle, "review").await;
    handle
        .raise_error(
            OWN_BOUNDARY::user.review,
            OWN_BOUNDARY::error.REJECTED,
            "no signature",
        )
        .await
        .unwrap();
    let outcome = handle.outcome().await;
    let history = handle.history().await;
    check_scoped_history(&history, &outcome);
    let doc = outcome.completed().expect("completed");
    assert_eq!(doc.note, "no signature");
    assert_eq!(doc.path, ["rework"]);
    assert_eq!(history.ended_at(), ["returned"]);
    assert_eq!(
        history.count("review", |h| matches!(
            h,
            Happening::Interrupted { by: "rejected" }
        )),
        1
    );
}

#[tokio::test]
async fn raising_on_work_that_is_not_open_is_refused() {
    let engine = Engine::new();
    let handle = engine.start(&OWN_BOUNDARY, Doc::default()).await.unwrap();
    expect_parked(&handle, "review").await;
    let refused = handle.raise_error("approve", "REJECTED", "x").await;
    assert_eq!(
        refused,
        Err(WorkError::NoSuchUserTask {
            node: "approve".into(),
            process: "OWN_BOUNDARY",
            known: vec!["review"],
        })
    );
    assert_eq!(
        refused.unwrap_err().to_string(),
        "the process `OWN_BOUNDARY` has no user task `approve` (its user tasks: review)"
    );
    assert!(matches!(
        handle.raise_escalation("nowhere", "LATE").await,
        Err(WorkError::NoSuchUserTask { .. })
    ));
    handle
        .complete(OWN_BOUNDARY::user.review, |_| {})
        .await
        .unwrap();
    assert_eq!(
        handle.outcome().await.completed().expect("completed").path,
        ["approved"]
    );
}

process! {
    TWO_SCOPES: Doc {
        start begin;
        subprocess outer {
            start s1;
            subprocess inner {
                start s2;
                parallel fork;
                user review;
                user sign;
                parallel join;
                end e2;
                s2 -> fork -> review, sign -> join -> e2;
            }
            end e1;
            s1 -> inner -> e1;
        }
        boundary failed on outer: error("REJECTED");
        task recover = |d| async move { d.path.push("recovered".into()); Ok(()) };
        end done;
        end recovered;
        begin -> outer -> done;
        failed -> recover -> recovered;
    }
}

/// The scenario `flavors!` runs many times on both runtimes.
async fn an_error_two_scopes_down_is_caught_by_the_outer_boundary(engine: Engine, _: usize) {
    let handle = engine.start(&TWO_SCOPES, Doc::default()).await.unwrap();
    expect_parked(&handle, "sign").await;
    expect_parked(&handle, "review").await;
    handle
        .raise_error("review", "REJECTED", "stale")
        .await
        .unwrap();
    let outcome = handle.outcome().await;
    let history = handle.history().await;
    check_scoped_history(&history, &outcome);
    assert_eq!(outcome.completed().expect("completed").path, ["recovered"]);
    // The other user task inside was cancelled with its scopes.
    assert_eq!(history.count("sign", |h| *h == Happening::Cancelled), 1);
    assert_eq!(
        history.count("outer", |h| matches!(
            h,
            Happening::Interrupted { by: "failed" }
        )),
        1
    );
    assert!(handle.open_work().await.is_empty());
}

flavors!(an_error_two_scopes_down_is_caught_by_the_outer_boundary);

process! {
    EVENT_SUB: Doc {
        start begin;
        user review;
        end done;
        begin -> review -> done;
        event_subprocess on_error {
            start caught: error(apply = |d, e: &BpmnError| d.note = e.code.clone());
            end handled;
            caught -> handled;
        }
    }
}

#[tokio::test]
async fn an_error_is_caught_by_an_error_event_sub_process() {
    let engine = Engine::new();
    let handle = engine.start(&EVENT_SUB, Doc::default()).await.unwrap();
    expect_parked(&handle, "review").await;
    handle
        .raise_error("review", "ANY", "whatever")
        .await
        .unwrap();
    let outcome = handle.outcome().await;
    let history = handle.history().await;
    check_scoped_history(&history, &outcome);
    assert_eq!(outcome.completed().expect("completed").note, "ANY");
    assert_eq!(history.ended_at(), ["handled"]);
}

process! {
    UNCAUGHT: Doc {
        start begin;
        user review;
        end done;
        begin -> review -> done;
    }
}

#[tokio::test]
async fn an_uncaught_error_fails_the_instance_naming_the_user_task() {
    let engine = Engine::new();
    let handle = engine.start(&UNCAUGHT, Doc::default()).await.unwrap();
    expect_parked(&handle, "review").await;
    handle
        .raise_error("review", "NOPE", "no way")
        .await
        .unwrap();
    let outcome = handle.outcome().await;
    check_scoped_history(&handle.history().await, &outcome);
    assert_eq!(
        outcome,
        Outcome::Failed(InstanceError::UncaughtError {
            node: "review",
            code: "NOPE".into(),
            message: "no way".into(),
        })
    );
    assert_eq!(
        handle.raise_error("review", "NOPE", "again").await,
        Err(WorkError::InstanceEnded)
    );
}

process! {
    ESCALATIONS: Doc {
        start begin;
        user review;
        boundary nudge on review: non_interrupting escalation("LATE");
        boundary takeover on review: escalation("TAKEOVER");
        task note_late = |d| async move { d.path.push("late".into()); Ok(()) };
        task take_over = |d| async move { d.path.push("taken over".into()); Ok(()) };
        end done;
        end noted;
        end taken;
        begin -> review -> done;
        nudge -> note_late -> noted;
        takeover -> take_over -> taken;
    }
}

#[tokio::test]
async fn a_non_interrupting_escalation_leaves_the_user_task_open() {
    let engine = Engine::new();
    let handle = engine.start(&ESCALATIONS, Doc::default()).await.unwrap();
    expect_parked(&handle, "review").await;
    handle.raise_escalation("review", "LATE").await.unwrap();
    // Uncaught: nothing happens, the user task stays open.
    handle.raise_escalation("review", "OTHER").await.unwrap();
    // The boundary's path runs beside the open user task.
    expect_that(&handle, "the boundary's path to end", |h| {
        !h.ended_at().is_empty()
    })
    .await;
    assert_eq!(handle.open_work().await.len(), 1);
    handle.complete("review", |_| {}).await.unwrap();
    let outcome = handle.outcome().await;
    let history = handle.history().await;
    check_scoped_history(&history, &outcome);
    assert_eq!(outcome.completed().expect("completed").path, ["late"]);
    let mut ends = history.ended_at();
    ends.sort_unstable();
    assert_eq!(ends, ["done", "noted"]);
}

#[tokio::test]
async fn an_interrupting_escalation_ends_the_user_task() {
    let engine = Engine::new();
    let handle = engine.start(&ESCALATIONS, Doc::default()).await.unwrap();
    expect_parked(&handle, "review").await;
    handle.raise_escalation("review", "TAKEOVER").await.unwrap();
    let outcome = handle.outcome().await;
    let history = handle.history().await;
    check_scoped_history(&history, &outcome);
    assert_eq!(outcome.completed().expect("completed").path, ["taken over"]);
    assert_eq!(history.ended_at(), ["taken"]);
}
