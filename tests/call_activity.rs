//! Call activities (issue 13): `call ship = SHIPPING(input = .., output = ..);` runs
//! another process as a child instance in the same engine.
//!
//! - the typed mappings: the child starts with `input(parent)`, its final data is
//!   mapped back by `output` (omitted: `Default`, nothing mapped);
//! - the child is a real instance: its own id and history, `parent()` names the
//!   caller, the parent's history records `Called { child }`, `children()` and
//!   `children_of(&P)` list it while the call runs;
//! - the child's uncaught BPMN error is raised at the call activity (its boundary,
//!   then the scopes outward; uncaught, the parent fails with it); an escalation the
//!   child does not catch is raised at the call activity while the child goes on (a
//!   non-interrupting boundary runs beside it; an interrupting one cancels it);
//! - a terminated child completes the call; a failing child fails it as a task; a
//!   child cancelled from outside fails it;
//! - cancelling the parent, or an interrupting timer boundary on the call, cancels
//!   the child;
//! - recursion: a process calling itself runs while its data bounds it, and the
//!   engine's `max_call_depth` stops one that does not, with `CallDepthExceeded`.
//!
//! Races (the child ends while a boundary fires, the parent is cancelled while the
//! child starts) run hundreds of times on a four-worker runtime.

#[macro_use]
mod common;

use std::time::Duration;

use common::*;
use thresh::events::{BpmnError, Escalation};
use thresh::testing::expect_parked;
use thresh::{process, Engine, EngineConfig, Happening, InstanceError, Outcome, ProcessData};

#[derive(Clone, Debug, Default, PartialEq, ProcessData)]
struct Order {
    id: String,
    weight: u32,
    tracking: String,
    note: String,
    path: Vec<String>,
}

#[derive(Clone, Debug, Default, PartialEq, ProcessData)]
struct Shipment {
    order: String,
    kilos: u32,
    tracking: String,
    /// What the shipping process does: "" ships, else the named way out.
    mode: String,
}

process! {
    /// The called process: ships, or (by `mode`) fails, raises, escalates, stops.
    SHIPPING: Shipment {
        start begin;
        exclusive how;
        task label = |s| async move {
            tokio::task::yield_now().await;
            s.tracking = format!("T-{}-{}", s.order, s.kilos);
            Ok(())
        };
        task broken = |_s| async move { Err(thresh::TaskError::new("printer jammed")) };
        end shipped;
        end lost: error("LOST");
        end stopped: terminate;
        user wait_here;
        throw late: escalation("LATE");
        task after_late = |s| async move { s.tracking = "late".into(); Ok(()) };
        begin -> how;
        how -> label when |s| s.mode.is_empty();
        how -> broken when |s| s.mode == "fail";
        how -> lost when |s| s.mode == "lose";
        how -> stopped when |s| s.mode == "stop";
        how -> late when |s| s.mode == "late";
        how -> wait_here else;
        label -> shipped;
        broken -> shipped;
        late -> after_late -> wait_here;
        wait_here -> shipped;
    }
}

process! {
    ORDER: Order {
        start placed;
        call ship = SHIPPING(
            input = |o| Shipment { order: o.id.clone(), kilos: o.weight, tracking: String::new(), mode: o.note.clone() },
            output = |o, s| o.tracking = s.tracking
        );
        boundary lost on ship: error("LOST", apply = |o, e: &BpmnError| o.path.push(format!("lost: {}", e.code)));
        boundary late on ship: non_interrupting escalation("LATE", apply = |o, _e: &Escalation| o.path.push("late".into()));
        end done;
        end refunded;
        end noted;
        placed -> ship -> done;
        lost -> refunded;
        late -> noted;
    }
}

process! {
    /// No boundary: what the child raises goes outward.
    BARE: Order {
        start placed;
        call ship = SHIPPING(input = |o| Shipment { order: o.id.clone(), mode: o.note.clone(), ..Shipment::default() });
        end done;
        placed -> ship -> done;
    }
}

process! {
    /// An interrupting escalation boundary and a timer boundary on the call.
    STRICT: Order {
        start placed;
        call ship = SHIPPING(
            input = |o| Shipment { order: o.id.clone(), mode: o.note.clone(), ..Shipment::default() },
            output = |o, s| o.tracking = s.tracking
        );
        boundary late on ship: escalation("LATE");
        boundary slow on ship: timer(Duration::from_secs(3600));
        end done;
        end gave_up;
        end too_slow;
        placed -> ship -> done;
        late -> gave_up;
        slow -> too_slow;
    }
}

process! {
    /// Two calls at once, in parallel branches.
    TWO: Order {
        start placed;
        parallel fork;
        call first = SHIPPING(
            input = |o| Shipment { order: format!("{}-a", o.id), kilos: 1, ..Shipment::default() },
            output = |o, s| o.tracking = s.tracking
        );
        call second = SHIPPING(
            input = |o| Shipment { order: format!("{}-b", o.id), kilos: 2, ..Shipment::default() },
            output = |o, s| o.note = s.tracking
        );
        parallel join;
        end done;
        placed -> fork -> first, second -> join -> done;
    }
}

#[derive(Clone, Debug, Default, PartialEq, ProcessData)]
struct Countdown {
    n: u32,
    calls: u32,
}

process! {
    /// Calls itself while `n > 0`: recursion bounded by the data.
    COUNTDOWN: Countdown {
        start s;
        exclusive more;
        call again = COUNTDOWN(input = |c| Countdown { n: c.n - 1, calls: 0 }, output = |c, inner| c.calls = inner.calls + 1);
        end e;
        s -> more;
        more -> again when |c| c.n > 0;
        more -> e else;
        again -> e;
    }
}

fn order(i: usize, mode: &str) -> Order {
    Order {
        id: format!("o{i}"),
        weight: (i % 7) as u32 + 1,
        note: mode.to_string(),
        ..Order::default()
    }
}

// ----- scenarios, many times on both runtimes ---------------------------------------

async fn the_child_ships_and_its_output_comes_back(engine: Engine, i: usize) {
    let parent = engine.start(&ORDER, order(i, "")).await.unwrap();
    let outcome = parent.outcome().await;
    let history = parent.history().await;
    check_scoped_history(&history, &outcome);
    let o = outcome.completed().expect("completed");
    assert_eq!(o.tracking, format!("T-o{i}-{}", (i % 7) + 1));
    let called: Vec<_> = history
        .steps()
        .iter()
        .filter_map(|s| match s.what {
            Happening::Called { child } => Some((s.node, child)),
            _ => None,
        })
        .collect();
    assert_eq!(called.len(), 1);
    assert_eq!(called[0].0, "ship");
    assert_ne!(called[0].1, parent.id(), "the child has its own id");
    assert_eq!(history.completed_tasks(), ["ship"]);
}

async fn a_childs_error_is_caught_by_the_call_activitys_boundary(engine: Engine, i: usize) {
    let parent = engine.start(&ORDER, order(i, "lose")).await.unwrap();
    let outcome = parent.outcome().await;
    check_scoped_history(&parent.history().await, &outcome);
    let o = outcome.completed().expect("completed");
    assert_eq!(o.path, ["lost: LOST"]);
    assert_eq!(o.tracking, "", "an error maps nothing back");
    assert_eq!(parent.history().await.ended_at(), ["refunded"]);
}

async fn a_childs_uncaught_error_fails_the_parent_at_the_call(engine: Engine, i: usize) {
    let parent = engine.start(&BARE, order(i, "lose")).await.unwrap();
    match parent.outcome().await {
        Outcome::Failed(InstanceError::UncaughtError { node, code, .. }) => {
            assert_eq!((node, code.as_str()), ("ship", "LOST"));
        }
        other => panic!("expected LOST uncaught at `ship`, got {other:?}"),
    }
}

async fn a_terminated_child_completes_the_call(engine: Engine, i: usize) {
    let parent = engine.start(&ORDER, order(i, "stop")).await.unwrap();
    let o = parent.outcome().await.completed().expect("completed");
    assert!(o.path.is_empty());
    assert_eq!(parent.history().await.ended_at(), ["done"]);
}

async fn a_failing_child_fails_the_call_as_a_task(engine: Engine, i: usize) {
    let parent = engine.start(&ORDER, order(i, "fail")).await.unwrap();
    match parent.outcome().await {
        Outcome::Failed(InstanceError::TaskFailed { node, message }) => {
            assert_eq!(node, "ship");
            assert!(message.contains("printer jammed"), "{message}");
            assert!(message.contains("`SHIPPING`"), "{message}");
        }
        other => panic!("expected the call to fail, got {other:?}"),
    }
}

async fn two_calls_run_side_by_side(engine: Engine, i: usize) {
    let parent = engine.start(&TWO, order(i, "")).await.unwrap();
    let outcome = parent.outcome().await;
    check_scoped_history(&parent.history().await, &outcome);
    let o = outcome.completed().expect("completed");
    assert_eq!(o.tracking, format!("T-o{i}-a-1"));
    assert_eq!(o.note, format!("T-o{i}-b-2"));
}

flavors!(
    the_child_ships_and_its_output_comes_back,
    a_childs_error_is_caught_by_the_call_activitys_boundary,
    a_childs_uncaught_error_fails_the_parent_at_the_call,
    a_terminated_child_completes_the_call,
    a_failing_child_fails_the_call_as_a_task,
    two_calls_run_side_by_side,
);

// ----- the child as an instance of its own ------------------------------------------

/// While the call runs the parent lists its child; the child knows its parent, has
/// its own history, and its user task is worked through its own handle.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn the_child_is_an_instance_of_its_own() {
    let engine = Engine::new();
    let parent = engine.start(&ORDER, order(1, "wait")).await.unwrap();
    let child = until_child(&parent).await;
    expect_parked(&child, "wait_here").await;
    assert_eq!(child.parent(), Some(parent.id()));
    assert_eq!(parent.parent(), None);
    assert_eq!(parent.children().await, [child.id()]);
    assert_eq!(child.data().await.expect("data").order, "o1");
    child
        .complete("wait_here", |s: &mut Shipment| {
            s.tracking = "by hand".into()
        })
        .await
        .unwrap();
    let o = parent.outcome().await.completed().expect("completed");
    assert_eq!(o.tracking, "by hand");
    assert!(parent.children().await.is_empty());
    let child_history = child.history().await;
    assert_eq!(child_history.ended_at(), ["shipped"]);
    assert_eq!(
        child_history.steps()[0].what,
        Happening::Started,
        "the child's history is its own, from its start"
    );
    assert!(parent
        .history()
        .await
        .steps()
        .iter()
        .any(|s| s.what == Happening::Called { child: child.id() }));
}

/// An escalation the child does not catch is raised at the call activity: the
/// non-interrupting boundary runs, the child goes on and the call completes later.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_childs_escalation_reaches_a_non_interrupting_boundary() {
    let engine = Engine::new();
    for i in 0..100 {
        let parent = engine.start(&ORDER, order(i, "late")).await.unwrap();
        let child = until_child(&parent).await;
        expect_parked(&child, "wait_here").await;
        // The boundary's path ran beside the waiting child.
        wait_for_end_at(&parent, "noted").await;
        child
            .complete("wait_here", |_: &mut Shipment| {})
            .await
            .unwrap();
        let outcome = parent.outcome().await;
        check_scoped_history(&parent.history().await, &outcome);
        let o = outcome.completed().expect("completed");
        assert_eq!(o.path, ["late"]);
        assert_eq!(o.tracking, "late");
        let mut ends = parent.history().await.ended_at();
        ends.sort();
        assert_eq!(ends, ["done", "noted"]);
    }
}

/// An interrupting escalation boundary on the call cancels the child.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn an_interrupting_escalation_cancels_the_child() {
    let engine = Engine::new();
    for i in 0..100 {
        let parent = engine.start(&STRICT, order(i, "late")).await.unwrap();
        let outcome = parent.outcome().await;
        check_scoped_history(&parent.history().await, &outcome);
        assert!(outcome.completed().is_some());
        assert_eq!(parent.history().await.ended_at(), ["gave_up"]);
        assert_ne!(called_child(&parent).await, parent.id());
    }
    wait_until_idle(&engine).await;
}

/// A timer boundary on the call (paused clock) interrupts it: the child is cancelled.
#[tokio::test(start_paused = true)]
async fn a_timer_boundary_cancels_the_child() {
    let engine = Engine::new();
    let parent = engine.start(&STRICT, order(1, "wait")).await.unwrap();
    let child = until_child(&parent).await;
    expect_parked(&child, "wait_here").await;
    tokio::time::sleep(Duration::from_secs(3601)).await;
    assert_eq!(child.outcome().await.kind(), "cancelled");
    let o = parent.outcome().await.completed().expect("completed");
    assert_eq!(o.tracking, "");
    assert_eq!(parent.history().await.ended_at(), ["too_slow"]);
}

/// Cancelling the parent cancels its child.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn cancelling_the_parent_cancels_the_child() {
    let engine = Engine::new();
    let parent = engine.start(&ORDER, order(1, "wait")).await.unwrap();
    let child = until_child(&parent).await;
    expect_parked(&child, "wait_here").await;
    parent.cancel();
    assert_eq!(parent.outcome().await.kind(), "cancelled");
    assert_eq!(child.outcome().await.kind(), "cancelled");
}

/// A parent cancelled at any moment of its call's start leaves no child behind.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_parent_cancelled_during_the_call_leaves_no_child_running() {
    let engine = Engine::new();
    for i in 0..300 {
        let parent = engine.start(&ORDER, order(i, "wait")).await.unwrap();
        for _ in 0..(i % 5) {
            tokio::task::yield_now().await;
        }
        parent.cancel();
        assert_eq!(parent.outcome().await.kind(), "cancelled");
    }
    wait_until_idle(&engine).await;
}

/// A child cancelled from outside fails the call.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_child_cancelled_from_outside_fails_the_call() {
    let engine = Engine::new();
    let parent = engine.start(&BARE, order(1, "wait")).await.unwrap();
    let child = until_child(&parent).await;
    child.cancel();
    match parent.outcome().await {
        Outcome::Failed(InstanceError::TaskFailed { node, message }) => {
            assert_eq!(node, "ship");
            assert!(message.contains("was cancelled"), "{message}");
        }
        other => panic!("expected the call to fail, got {other:?}"),
    }
}

// ----- recursion --------------------------------------------------------------------

/// A process calling itself runs as deep as its data says.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn recursion_bounded_by_the_data_completes() {
    let engine = Engine::new();
    let h = engine
        .start(&COUNTDOWN, Countdown { n: 10, calls: 0 })
        .await
        .unwrap();
    assert_eq!(h.outcome().await.completed().expect("completed").calls, 10);
}

/// Deeper than the engine allows: the call that would pass the limit fails with
/// `CallDepthExceeded`, and each caller above it fails at its call in turn.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn recursion_past_the_depth_limit_fails_clearly() {
    let engine = Engine::with_config(EngineConfig {
        max_call_depth: 3,
        ..EngineConfig::default()
    });
    let ok = engine
        .start(&COUNTDOWN, Countdown { n: 3, calls: 0 })
        .await
        .unwrap();
    assert_eq!(ok.outcome().await.completed().expect("completed").calls, 3);
    let h = engine
        .start(&COUNTDOWN, Countdown { n: 100, calls: 0 })
        .await
        .unwrap();
    match h.outcome().await {
        Outcome::Failed(InstanceError::TaskFailed { node, message }) => {
            assert_eq!(node, "again");
            assert!(
                message
                    .contains("would start `COUNTDOWN` 4 calls deep; the engine allows at most 3"),
                "{message}"
            );
        }
        other => panic!("expected the depth limit, got {other:?}"),
    }
    // At depth 3 the error itself.
    let err = InstanceError::CallDepthExceeded {
        node: "again",
        callee: "COUNTDOWN",
        depth: 4,
        limit: 3,
    };
    assert!(err.to_string().contains("EngineConfig::max_call_depth"));
    wait_until_idle(&engine).await;
}

// ----- helpers ----------------------------------------------------------------------

/// The parent's running child, once its call has started it.
async fn until_child(parent: &thresh::InstanceHandle<Order>) -> thresh::InstanceHandle<Shipment> {
    for _ in 0..100_000 {
        if let Some(child) = parent.children_of(&SHIPPING).await.pop() {
            return child;
        }
        tokio::task::yield_now().await;
    }
    panic!("the call never started its child");
}

/// The child id the parent's history records.
async fn called_child(parent: &thresh::InstanceHandle<Order>) -> thresh::InstanceId {
    parent
        .history()
        .await
        .steps()
        .iter()
        .find_map(|s| match s.what {
            Happening::Called { child } => Some(child),
            _ => None,
        })
        .expect("a call was recorded")
}

async fn wait_for_end_at(parent: &thresh::InstanceHandle<Order>, end: &str) {
    for _ in 0..100_000 {
        if parent.history().await.ended_at().contains(&end) {
            return;
        }
        tokio::task::yield_now().await;
    }
    panic!("never ended at {end}");
}

/// Every instance of the engine (children included) has ended.
async fn wait_until_idle(engine: &Engine) {
    for _ in 0..100_000 {
        if engine.running_instances() == 0 {
            return;
        }
        tokio::task::yield_now().await;
    }
    panic!(
        "{} instance(s) still running: a child outlived its call",
        engine.running_instances()
    );
}

// ----- the model -------------------------------------------------------------------

mod model {
    use super::{Order, Shipment};
    use thresh::process;

    process! {
        pub OTHER: Shipment { start s; end e; s -> e; }
    }

    pub mod a {
        use super::*;
        process! {
            pub CALLER: Order {
                start s;
                call ship = OTHER(input = |o| Shipment { order: o.id.clone(), ..Shipment::default() });
                boundary late on ship: escalation("LATE");
                end e;
                end late_end;
                s -> ship -> e;
                late -> late_end;
            }
        }
    }

    pub mod b {
        use super::*;
        // The same model: only the mappings (code) differ.
        process! {
            pub CALLER: Order {
                start s;
                call ship = OTHER(output = |o, s| o.tracking = s.tracking);
                boundary late on ship: escalation("LATE");
                end e;
                end late_end;
                s -> ship -> e;
                late -> late_end;
            }
        }
    }

    pub mod c {
        use super::*;
        // Another callee: another model.
        process! {
            pub CALLER: Order {
                start s;
                call ship = crate::SHIPPING;
                boundary late on ship: escalation("LATE");
                end e;
                end late_end;
                s -> ship -> e;
                late -> late_end;
            }
        }
    }
}

/// The fingerprint has the called process by name, not the mappings; the node's
/// keyword is `call` and the diagram names the callee.
#[test]
fn the_callee_is_in_the_model_the_mappings_are_not() {
    assert_eq!(
        model::a::CALLER.fingerprint(),
        model::b::CALLER.fingerprint()
    );
    assert_ne!(
        model::a::CALLER.fingerprint(),
        model::c::CALLER.fingerprint()
    );
    assert_eq!(model::a::CALLER.node("ship").unwrap().keyword(), "call");
    assert!(model::c::CALLER
        .to_bpmn()
        .contains(r#"<bpmn:callActivity id="ship" name="ship" calledElement="SHIPPING">"#));
}
