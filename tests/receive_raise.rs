//! A receive task (or a message catch) whose message carries a failure: its `apply`
//! returns `Result<(), TaskError>` and `Err(TaskError::bpmn(..))` raises a BPMN error
//! at the element, as a task's handler does:
//!
//! - caught by the receive task's own error boundary (the mapping's data changes are
//!   dropped; the boundary's `apply` sees the `BpmnError`);
//! - else outward: by an error boundary on the enclosing sub-process;
//! - uncaught, the instance fails with `UncaughtError` naming the receive task;
//! - at a message catch the error travels outward from its scope;
//! - `Err(TaskError::escalate(..))` raises an escalation, another `Err` fails the
//!   instance as a task failure; `Ok(())` maps the payload as before.
//!
//! Each scenario runs many times at once on both runtimes (`flavors!`), the message
//! published from another task while the instance parks.

#[macro_use]
mod common;

use common::*;
use thresh::events::BpmnError;
use thresh::testing::expect_parked;
use thresh::{process, Engine, InstanceError, Outcome, ProcessData, TaskError};

#[derive(Clone, Debug, Default, PartialEq, ProcessData)]
struct Order {
    id: String,
    paid: u64,
    note: String,
    path: Vec<String>,
}

/// The reply of the payment service: paid, or declined with a reason.
#[derive(Debug)]
enum Reply {
    Paid(u64),
    Declined(&'static str),
    Slow,
    Garbled,
}

/// The receive task's mapping: a declined payment raises `DECLINED`.
fn take_reply(o: &mut Order, r: &Reply) -> Result<(), TaskError> {
    match r {
        Reply::Paid(n) => {
            o.paid = *n;
            Ok(())
        }
        Reply::Declined(why) => {
            // Dropped with the error: the mapping's copy is not committed.
            o.paid = 1;
            Err(TaskError::bpmn("DECLINED", *why))
        }
        Reply::Slow => Err(TaskError::escalate("SLOW")),
        Reply::Garbled => Err(TaskError::new("garbled reply")),
    }
}

process! {
    OWN_BOUNDARY: Order {
        start placed;
        receive pay: message("payment", key = |o| o.id.clone(), apply = take_reply);
        boundary declined on pay: error("DECLINED", apply = |o, e: &BpmnError| o.note = e.message.clone());
        boundary slow on pay: non_interrupting escalation("SLOW", apply = |o, _e: &thresh::events::Escalation| o.note = "slow".into());
        task ship = |o| async move { o.path.push("shipped".into()); Ok(()) };
        task cancel = |o| async move { o.path.push("cancelled".into()); Ok(()) };
        end done;
        end refused;
        end noted;
        placed -> pay -> ship -> done;
        declined -> cancel -> refused;
        slow -> noted;
    }
}

process! {
    IN_SCOPE: Order {
        start placed;
        subprocess paying {
            start s;
            receive pay: message("payment", key = |o| o.id.clone(), apply = |o, r: &Reply| match r {
                Reply::Declined(why) => Err(TaskError::bpmn("DECLINED", *why)),
                _ => { o.path.push("paid".into()); Ok(()) }
            });
            end e;
            s -> pay -> e;
        }
        boundary declined on paying: error("DECLINED");
        task cancel = |o| async move { o.path.push("cancelled".into()); Ok(()) };
        end done;
        end refused;
        placed -> paying -> done;
        declined -> cancel -> refused;
    }
}

process! {
    UNCAUGHT: Order {
        start placed;
        receive pay: message("payment", key = |o| o.id.clone(), apply = take_reply);
        end done;
        placed -> pay -> done;
    }
}

process! {
    /// A message catch raising: the error leaves its sub-process by the boundary.
    CATCH_RAISES: Order {
        start placed;
        subprocess waiting {
            start s;
            catch reply: message("payment", key = |o| o.id.clone(), apply = take_reply);
            end e;
            s -> reply -> e;
        }
        boundary declined on waiting: error("DECLINED", apply = |o, e: &BpmnError| o.note = e.message.clone());
        end done;
        end refused;
        placed -> waiting -> done;
        declined -> refused;
    }
}

fn order(i: usize) -> Order {
    Order {
        id: format!("o{i}"),
        ..Order::default()
    }
}

/// Park at `node`, then publish `reply` from another task.
async fn reply_at<D: ProcessData>(
    engine: &Engine,
    handle: &thresh::InstanceHandle<D>,
    node: &str,
    key: String,
    reply: Reply,
) {
    expect_parked(handle, node).await;
    let engine = engine.clone();
    tokio::spawn(async move { engine.publish_message("payment", key, reply).await.unwrap() })
        .await
        .unwrap();
}

async fn declined_is_caught_by_the_receive_tasks_boundary(engine: Engine, i: usize) {
    let h = engine.start(&OWN_BOUNDARY, order(i)).await.unwrap();
    reply_at(
        &engine,
        &h,
        "pay",
        format!("o{i}"),
        Reply::Declined("no funds"),
    )
    .await;
    let outcome = h.outcome().await;
    check_scoped_history(&h.history().await, &outcome);
    let o = outcome.completed().expect("completed");
    assert_eq!(o.note, "no funds");
    assert_eq!(o.paid, 0, "the raising mapping's changes are dropped");
    assert_eq!(o.path, ["cancelled"]);
}

async fn paid_goes_on(engine: Engine, i: usize) {
    let h = engine.start(&OWN_BOUNDARY, order(i)).await.unwrap();
    reply_at(&engine, &h, "pay", format!("o{i}"), Reply::Paid(7)).await;
    let o = h.outcome().await.completed().expect("completed");
    assert_eq!(o.paid, 7);
    assert_eq!(o.path, ["shipped"]);
}

async fn declined_leaves_the_sub_process_by_its_boundary(engine: Engine, i: usize) {
    let h = engine.start(&IN_SCOPE, order(i)).await.unwrap();
    reply_at(
        &engine,
        &h,
        "pay",
        format!("o{i}"),
        Reply::Declined("stolen card"),
    )
    .await;
    let outcome = h.outcome().await;
    check_scoped_history(&h.history().await, &outcome);
    assert_eq!(outcome.completed().expect("completed").path, ["cancelled"]);
    assert_eq!(h.history().await.ended_at(), ["refused"]);
}

async fn declined_uncaught_fails_the_instance(engine: Engine, i: usize) {
    let h = engine.start(&UNCAUGHT, order(i)).await.unwrap();
    reply_at(
        &engine,
        &h,
        "pay",
        format!("o{i}"),
        Reply::Declined("no funds"),
    )
    .await;
    match h.outcome().await {
        Outcome::Failed(InstanceError::UncaughtError {
            node,
            code,
            message,
        }) => {
            assert_eq!(
                (node, code.as_str(), message.as_str()),
                ("pay", "DECLINED", "no funds")
            );
        }
        other => panic!("expected an uncaught DECLINED, got {other:?}"),
    }
}

async fn a_catch_raises_outward(engine: Engine, i: usize) {
    let h = engine.start(&CATCH_RAISES, order(i)).await.unwrap();
    reply_at(
        &engine,
        &h,
        "reply",
        format!("o{i}"),
        Reply::Declined("late"),
    )
    .await;
    let o = h.outcome().await.completed().expect("completed");
    assert_eq!(o.note, "late");
    assert_eq!(h.history().await.ended_at(), ["refused"]);
}

flavors!(
    declined_is_caught_by_the_receive_tasks_boundary,
    paid_goes_on,
    declined_leaves_the_sub_process_by_its_boundary,
    declined_uncaught_fails_the_instance,
    a_catch_raises_outward,
);

/// An escalation from the mapping: the non-interrupting boundary runs beside it and
/// the receive task completes; another `Err` fails the instance naming the task.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn an_escalation_or_a_failure_from_the_mapping() {
    let engine = Engine::new();
    let h = engine.start(&OWN_BOUNDARY, order(1)).await.unwrap();
    reply_at(&engine, &h, "pay", "o1".into(), Reply::Slow).await;
    let o = h.outcome().await.completed().expect("completed");
    assert_eq!(
        (o.note.as_str(), o.path.as_slice()),
        ("slow", &["shipped".to_string()][..])
    );

    let h = engine.start(&UNCAUGHT, order(2)).await.unwrap();
    reply_at(&engine, &h, "pay", "o2".into(), Reply::Garbled).await;
    match h.outcome().await {
        Outcome::Failed(InstanceError::TaskFailed { node, message }) => {
            assert_eq!((node, message.as_str()), ("pay", "garbled reply"));
        }
        other => panic!("expected a task failure, got {other:?}"),
    }
}
