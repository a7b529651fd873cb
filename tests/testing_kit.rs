//! A user's tests of the `order` example with the public test kit
//! (`thresh::testing`): waits that never sleep, assertions that read as the model,
//! and a flow-coverage threshold over the scenarios. The `payment` example shows a
//! message wait and its timer on the paused clock.

#[allow(clippy::all, unused)]
#[path = "../examples/order.rs"]
mod order;
#[allow(clippy::all, unused)]
#[path = "../examples/payment.rs"]
mod payment;

use std::time::Duration;

use order::{Order, ORDER};
use payment::PAYMENT;
use thresh::testing::{
    advance_to_next_timer, expect_ended, expect_parked, observe, wait_until_parked, AssertHistory,
    Coverage, StuckReason, Wait,
};
use thresh::Engine;

fn order(id: &str, total: u64) -> Order {
    Order {
        id: id.into(),
        total,
        ..Order::default()
    }
}

/// Counted by every scenario of the coverage test.
static COVERAGE: Coverage = Coverage::new();

async fn in_stock(engine: &Engine) {
    let handle = engine.start(&ORDER, order("A-1", 250)).await.unwrap();
    expect_ended(&handle).await;
    observe(&handle)
        .await
        .assert_passed(["received", "screen", "check_stock", "fork"])
        .assert_passed_any_order(["pack", "invoice"])
        .assert_passed(["join", "shipped"])
        .assert_not_passed(["backordered", "rejected"])
        .assert_ended_at(["shipped"])
        .assert_outcome_completed()
        .assert_data("packed and invoiced", |o| o.packed && o.invoiced);
    COVERAGE.add(&ORDER, &handle).await;
}

async fn out_of_stock(engine: &Engine) {
    let handle = engine.start(&ORDER, order("A-2", 5_000)).await.unwrap();
    expect_ended(&handle).await;
    observe(&handle)
        .await
        .assert_passed(["check_stock", "stock", "backordered"])
        .assert_not_passed(["fork", "pack", "invoice"])
        .assert_ended_at(["backordered"])
        .assert_outcome_completed()
        .assert_data("not packed", |o| !o.packed);
    COVERAGE.add(&ORDER, &handle).await;
}

async fn fraud(engine: &Engine) {
    let handle = engine.start(&ORDER, order("X-3", 10)).await.unwrap();
    expect_ended(&handle).await;
    observe(&handle)
        .await
        .assert_passed(["screen", "fraud", "rejected"])
        .assert_not_passed(["check_stock"])
        .assert_ended_at(["rejected"])
        .assert_outcome_terminated()
        .assert_data("flagged", |o| o.flagged);
    COVERAGE.add(&ORDER, &handle).await;
}

#[tokio::test]
async fn every_path_of_the_order_process_is_covered() {
    let engine = Engine::with_config(thresh::EngineConfig::fail_fast());
    in_stock(&engine).await;
    out_of_stock(&engine).await;
    // Two paths of three: the fraud path (its flow and its terminate end) is missing.
    assert!(COVERAGE.percent(&ORDER).unwrap() < 95.0);
    let report = COVERAGE.report();
    assert!(
        report.contains("not taken: rejected; fraud -> rejected"),
        "{report}"
    );
    // The SVG highlights what was taken, and leaves the fraud path plain.
    let svg = COVERAGE.to_svg(&ORDER).expect("ORDER was counted");
    assert!(svg.starts_with("<svg"));
    for taken in ["check_stock", "pack", "backordered"] {
        assert!(
            svg.contains(&format!("<g id=\"{taken}\" class=\"passed\">")),
            "{taken}"
        );
    }
    assert!(svg.contains("<g id=\"rejected\" class=\"idle\">"), "{svg}");
    fraud(&engine).await;
    COVERAGE.assert_at_least(&ORDER, 100.0);
    let report = COVERAGE.report();
    assert!(report.starts_with("ORDER: 3 instances, elements 12/12, flows 12/12, 100.0%"));
    let svg = COVERAGE.to_svg(&ORDER).expect("ORDER was counted");
    assert!(
        svg.contains("<g id=\"rejected\" class=\"passed\">"),
        "{svg}"
    );
    assert!(!svg.contains("class=\"idle\""), "everything taken\n{svg}");
    assert!(!svg.contains("arrow-ink)"), "every flow taken\n{svg}");
}

#[tokio::test]
async fn coverage_under_the_threshold_fails_listing_what_was_not_taken() {
    let coverage = Coverage::new();
    let engine = Engine::with_config(thresh::EngineConfig::fail_fast());
    let handle = engine.start(&ORDER, order("A-9", 1)).await.unwrap();
    expect_ended(&handle).await;
    coverage.add(&ORDER, &handle).await;
    let failure = std::panic::catch_unwind(|| coverage.assert_at_least(&ORDER, 95.0))
        .expect_err("one path of three is under 95%");
    let message = failure.downcast_ref::<String>().expect("a message");
    assert!(
        message.contains("coverage of ORDER is under 95%"),
        "{message}"
    );
    assert!(
        message
            .contains("not taken: backordered, rejected; fraud -> rejected, stock -> backordered"),
        "{message}"
    );
}

#[tokio::test]
async fn a_failed_assertion_shows_the_path_the_instance_took() {
    let engine = Engine::with_config(thresh::EngineConfig::fail_fast());
    let handle = engine.start(&ORDER, order("A-5", 5_000)).await.unwrap();
    expect_ended(&handle).await;
    let history = handle.history().await;
    let failure = std::panic::catch_unwind(|| {
        history.assert_passed(["check_stock", "pack"]);
    })
    .expect_err("an out-of-stock order is not packed");
    let message = failure.downcast_ref::<String>().expect("a message");
    assert!(
        message.starts_with(
            "expected the instance to pass `check_stock`, `pack` in this order, but `pack` was never passed"
        ),
        "{message}"
    );
    assert!(
        message.contains("stock                 routed to backordered"),
        "{message}"
    );
}

#[tokio::test(start_paused = true)]
async fn a_payment_wait_is_parked_then_a_message_or_the_timer_decides() {
    let engine = Engine::with_config(thresh::EngineConfig::fail_fast());
    let paid = engine
        .start(
            &PAYMENT,
            payment::Order {
                id: "P-1".into(),
                amount: 30,
                ..Default::default()
            },
        )
        .await
        .unwrap();
    // Parked: the message subscription is live, so the publish cannot be lost.
    expect_parked(&paid, "await_payment").await;
    engine
        .publish_message("payment", "P-1", payment::Payment { amount: 30 })
        .await
        .unwrap();
    expect_ended(&paid).await;
    observe(&paid)
        .await
        .assert_passed(["paid", "ship", "announce", "done"])
        .assert_not_passed(["too_late"])
        .assert_data("paid in full", |o| o.paid == 30);

    let late = engine
        .start(
            &PAYMENT,
            payment::Order {
                id: "P-2".into(),
                ..Default::default()
            },
        )
        .await
        .unwrap();
    expect_parked(&late, "await_payment").await;
    // Waits never move the paused clock: the timer has not fired.
    let stuck = Wait::within(Duration::from_millis(50))
        .ended(&late)
        .await
        .expect_err("nothing moves the clock");
    assert_eq!(
        stuck.reason,
        StuckReason::TimedOut(Duration::from_millis(50))
    );
    assert!(
        stuck
            .to_string()
            .contains("t0 at `await_payment`: parked, waiting for its event"),
        "{stuck}"
    );
    let moved = advance_to_next_timer(&late)
        .await
        .expect("a timer is armed");
    assert_eq!(moved, Duration::from_millis(200));
    expect_ended(&late).await;
    observe(&late)
        .await
        .assert_passed(["await_payment", "too_late", "cancelled"])
        .assert_ended_at(["cancelled"]);
}

#[tokio::test]
async fn a_wait_for_what_never_comes_fails_when_the_instance_ends() {
    let engine = Engine::with_config(thresh::EngineConfig::fail_fast());
    let handle = engine.start(&ORDER, order("A-6", 10)).await.unwrap();
    let stuck = wait_until_parked(&handle, "pack")
        .await
        .expect_err("pack is a task: nothing parks there");
    assert_eq!(stuck.reason, StuckReason::Ended);
    let text = stuck.to_string();
    assert!(
        text.starts_with(&format!(
            "instance {}: waited for `pack` to be parked, but the instance ended first\n",
            handle.id()
        )),
        "{text}"
    );
    assert!(text.contains("ended, completed"), "{text}");
    assert!(text.contains("shipped               ended"), "{text}");
    observe(&handle).await.assert_outcome_completed();
}

// ----- handler overrides: the order process with its services mocked ---------------

use thresh::testing::{OverrideError, Overrides};
use thresh::{Happening, InstanceError};

#[tokio::test]
async fn a_mocked_stock_service_ships_a_large_order() {
    let engine = Engine::with_config(thresh::EngineConfig::fail_fast());
    Overrides::new(&ORDER)
        .replace("check_stock", |o| {
            o.in_stock = true; // the warehouse has everything
            Ok(())
        })
        .unwrap()
        .install(&engine);
    let handle = engine.start(&ORDER, order("A-7", 5_000)).await.unwrap();
    expect_ended(&handle).await;
    observe(&handle)
        .await
        .assert_passed(["check_stock", "fork", "join", "shipped"])
        .assert_outcome_completed()
        .assert_data("packed", |o| o.packed && o.in_stock);
    // Another engine runs the real handlers.
    let real = Engine::with_config(thresh::EngineConfig::fail_fast())
        .start(&ORDER, order("A-7", 5_000))
        .await
        .unwrap();
    expect_ended(&real).await;
    observe(&real).await.assert_ended_at(["backordered"]);
}

#[tokio::test]
async fn a_failing_invoice_service_fails_the_order_naming_the_task() {
    let engine = Engine::with_config(thresh::EngineConfig::fail_fast());
    Overrides::new(&ORDER)
        .fail("invoice", "the invoicing service is down")
        .unwrap()
        .install(&engine);
    let handle = engine.start(&ORDER, order("A-8", 10)).await.unwrap();
    expect_ended(&handle).await;
    observe(&handle)
        .await
        .assert_failed_with(&InstanceError::TaskFailed {
            node: "invoice",
            message: "the invoicing service is down".into(),
        });
}

#[tokio::test]
async fn a_task_raising_a_bpmn_error_or_an_escalation() {
    let engine = Engine::with_config(thresh::EngineConfig::fail_fast());
    Overrides::new(&ORDER)
        .raise_error("screen", "FRAUD_DB", "unreachable")
        .unwrap()
        .escalate("pack", "SLOW")
        .unwrap()
        .install(&engine);
    let handle = engine.start(&ORDER, order("A-9", 10)).await.unwrap();
    expect_ended(&handle).await;
    observe(&handle)
        .await
        .assert_failed_with(&InstanceError::UncaughtError {
            node: "screen",
            code: "FRAUD_DB".into(),
            message: "unreachable".into(),
        })
        .assert_not_passed(["pack"]);

    // Installing again replaces the set: only the escalation now.
    Overrides::new(&ORDER)
        .escalate("pack", "SLOW")
        .unwrap()
        .install(&engine);
    let handle = engine.start(&ORDER, order("A-10", 10)).await.unwrap();
    expect_ended(&handle).await;
    let history = handle.history().await;
    assert_eq!(
        history.count(
            "pack",
            |h| matches!(h, Happening::Escalated { code } if code == "SLOW")
        ),
        1,
        "{history}"
    );
}

#[tokio::test]
async fn a_held_task_waits_until_the_test_releases_it() {
    let engine = Engine::with_config(thresh::EngineConfig::fail_fast());
    let (overrides, pack) = Overrides::new(&ORDER).hold("pack").unwrap();
    overrides.install(&engine);
    let handle = engine.start(&ORDER, order("A-11", 10)).await.unwrap();
    let history = thresh::testing::expect_that(&handle, "invoice done", |h| {
        h.completed_tasks().contains(&"invoice")
    })
    .await;
    history.assert_waits_at("pack").assert_waits_at("join");
    assert!(!handle.is_finished());
    pack.release();
    expect_ended(&handle).await;
    observe(&handle)
        .await
        .assert_passed(["pack", "join", "shipped"])
        .assert_data("packed by the real handler", |o| o.packed);
}

#[test]
fn an_override_names_a_task_of_the_process() {
    assert_eq!(
        Overrides::new(&ORDER).fail("chek_stock", "x").err(),
        Some(OverrideError::UnknownElement {
            process: "ORDER",
            id: "chek_stock".into()
        })
    );
    assert_eq!(
        Overrides::new(&ORDER).fail("fork", "x").err(),
        Some(OverrideError::NotATask {
            process: "ORDER",
            id: "fork",
            kind: "parallel"
        })
    );
}

// ----- handler overrides for one instance --------------------------------------------

#[tokio::test]
async fn one_instance_runs_its_mocks_and_the_others_the_real_handlers() {
    let engine = Engine::with_config(thresh::EngineConfig::fail_fast());
    let mocked = Overrides::new(&ORDER)
        .replace("check_stock", |o| {
            o.in_stock = true;
            Ok(())
        })
        .unwrap()
        .start(&engine, order("B-1", 5_000))
        .await
        .unwrap();
    let real = engine.start(&ORDER, order("B-2", 5_000)).await.unwrap();
    expect_ended(&mocked).await;
    expect_ended(&real).await;
    observe(&mocked)
        .await
        .assert_ended_at(["shipped"])
        .assert_data("packed from mocked stock", |o| o.in_stock && o.packed);
    observe(&real)
        .await
        .assert_ended_at(["backordered"])
        .assert_not_passed(["pack"]);
}

#[tokio::test]
async fn an_instances_overrides_go_over_the_engines() {
    let engine = Engine::with_config(thresh::EngineConfig::fail_fast());
    Overrides::new(&ORDER)
        .replace("check_stock", |o| {
            o.in_stock = true;
            Ok(())
        })
        .unwrap()
        .install(&engine);
    // Its own: `invoice` fails; the engine's `check_stock` mock still applies, or
    // a large order would never reach `invoice`.
    let failing = Overrides::new(&ORDER)
        .fail("invoice", "the invoicing service is down")
        .unwrap()
        .start(&engine, order("B-3", 5_000))
        .await
        .unwrap();
    let installed = engine.start(&ORDER, order("B-4", 5_000)).await.unwrap();
    expect_ended(&failing).await;
    expect_ended(&installed).await;
    observe(&failing)
        .await
        .assert_passed(["check_stock", "fork"])
        .assert_failed_with(&InstanceError::TaskFailed {
            node: "invoice",
            message: "the invoicing service is down".into(),
        });
    observe(&installed)
        .await
        .assert_ended_at(["shipped"])
        .assert_data("invoiced by the real handler", |o| o.invoiced);
}

#[tokio::test]
async fn one_instance_raises_an_error_or_escalates_while_another_does_not() {
    let engine = Engine::with_config(thresh::EngineConfig::fail_fast());
    let raising = Overrides::new(&ORDER)
        .raise_error("screen", "FRAUD_DB", "unreachable")
        .unwrap()
        .start(&engine, order("B-5", 10))
        .await
        .unwrap();
    let escalating = Overrides::new(&ORDER)
        .escalate("pack", "SLOW")
        .unwrap()
        .start(&engine, order("B-6", 10))
        .await
        .unwrap();
    let plain = engine.start(&ORDER, order("B-7", 10)).await.unwrap();
    for handle in [&raising, &escalating, &plain] {
        expect_ended(handle).await;
    }
    observe(&raising)
        .await
        .assert_failed_with(&InstanceError::UncaughtError {
            node: "screen",
            code: "FRAUD_DB".into(),
            message: "unreachable".into(),
        });
    let escalated = |h: &thresh::History| {
        h.count(
            "pack",
            |w| matches!(w, Happening::Escalated { code } if code == "SLOW"),
        )
    };
    assert_eq!(escalated(&escalating.history().await), 1);
    assert_eq!(escalated(&plain.history().await), 0);
    observe(&plain)
        .await
        .assert_ended_at(["shipped"])
        .assert_data("packed", |o| o.packed);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn one_held_instance_waits_while_the_others_go_on() {
    for run in 0..50 {
        let engine = Engine::with_config(thresh::EngineConfig::fail_fast());
        let (overrides, pack) = Overrides::new(&ORDER).hold("pack").unwrap();
        let held = overrides
            .start(&engine, order(&format!("H-{run}"), 10))
            .await
            .unwrap();
        let free = engine
            .start(&ORDER, order(&format!("F-{run}"), 10))
            .await
            .unwrap();
        expect_ended(&free).await;
        observe(&free).await.assert_ended_at(["shipped"]);
        thresh::testing::expect_that(&held, "invoice done", |h| {
            h.completed_tasks().contains(&"invoice")
        })
        .await
        .assert_waits_at("pack");
        assert!(!held.is_finished());
        pack.release();
        expect_ended(&held).await;
        observe(&held)
            .await
            .assert_passed(["pack", "join", "shipped"])
            .assert_data("packed by the real handler", |o| o.packed);
    }
}

#[test]
fn an_instances_override_names_a_task_of_the_process() {
    let unknown = Overrides::new(&ORDER).hold("pak").err();
    assert_eq!(
        unknown.map(|e| e.to_string()).as_deref(),
        Some("process ORDER has no element `pak`")
    );
    let not_a_task = Overrides::new(&ORDER).escalate("join", "SLOW").err();
    assert_eq!(
        not_a_task,
        Some(OverrideError::NotATask {
            process: "ORDER",
            id: "join",
            kind: "parallel"
        })
    );
}
