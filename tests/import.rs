//! `process! { NAME: Data from "file.bpmn" { bindings } }`: processes imported from
//! .bpmn files run like their inline twins, diagrams saved by real modelers import,
//! and every example's export imports back to the same model (the same fingerprint).

#![allow(dead_code)]

use thresh::{process, Engine, ProcessData, TaskError};

#[derive(Clone, Debug, Default, ProcessData)]
pub struct Order {
    pub id: String,
    pub total: u64,
    pub in_stock: bool,
    pub shipped: bool,
}

async fn check_stock(o: &mut Order) -> Result<(), TaskError> {
    o.in_stock = o.total <= 1_000;
    Ok(())
}

async fn ship(o: &mut Order) -> Result<(), TaskError> {
    o.shipped = true;
    Ok(())
}

process! {
    /// As Camunda Modeler 5 saves it: `camunda:` attributes and extension elements,
    /// a text annotation, `bpmndi`, generated ids.
    pub CAMUNDA: Order from "tests/import/modelers/order_camunda.bpmn" {
        task check_stock = check_stock;
        task Activity_ship = ship;
        flow in_stock when |o| o.in_stock;
        catch Event_paid: message("payment", key = |o| o.id.clone());
    }
}

process! {
    /// The same process written inline.
    pub INLINE: Order {
        start received;
        task check_stock = check_stock;
        exclusive Gateway_1abc;
        catch Event_paid: message("payment", key = |o| o.id.clone());
        task Activity_ship = ship;
        boundary Event_slow on Activity_ship: non_interrupting timer(::core::time::Duration::from_secs(3600));
        end Event_warned;
        end shipped;

        received -> check_stock -> Gateway_1abc;
        Gateway_1abc -> Activity_ship when |o| o.in_stock;
        Gateway_1abc -> Event_paid else;
        Event_paid -> Activity_ship -> shipped;
        Event_slow -> Event_warned;
    }
}

#[test]
fn a_camunda_diagram_imports_as_its_inline_twin() {
    let ids = |p: &thresh::Process<Order>| {
        let mut v: Vec<(&str, &str)> = p.nodes().iter().map(|n| (n.id(), n.keyword())).collect();
        v.sort();
        v
    };
    assert_eq!(ids(&CAMUNDA), ids(&INLINE));
    assert_eq!(CAMUNDA.flows().len(), INLINE.flows().len());
    let gate = CAMUNDA.node("Gateway_1abc").expect("gateway");
    assert_eq!(gate.outgoing().len(), 2);
}

#[tokio::test]
async fn an_imported_process_runs_like_its_inline_twin() {
    let engine = Engine::new();
    for p in [&CAMUNDA, &INLINE] {
        let handle = engine.start(
            p,
            Order {
                id: "A-1".into(),
                total: 10,
                ..Order::default()
            },
        );
        let outcome = handle.outcome().await;
        let history = handle.history().await;
        assert_eq!(history.ended_at(), vec!["shipped"], "{}", outcome.kind());
        assert_eq!(
            history.completed_tasks(),
            vec!["check_stock", "Activity_ship"]
        );
    }
}

// Round trip: every example's process exported to `tests/import/roundtrip/` (checked
// in; `cargo test --test import -- --ignored` writes them afresh), imported back with
// the inline process's bindings: the same model, so the same fingerprint.

#[allow(clippy::all, unused)]
#[path = "../examples/approval.rs"]
mod approval;
#[allow(clippy::all, unused)]
#[path = "../examples/order.rs"]
mod order;

/// Each exported process: its file in `tests/import/roundtrip/` and its export now.
fn exports() -> Vec<(&'static str, String)> {
    vec![
        ("order.bpmn", order::ORDER.to_bpmn()),
        ("approval.bpmn", approval::APPROVAL.to_bpmn()),
    ]
}

fn roundtrip_dir() -> std::path::PathBuf {
    std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/import/roundtrip")
}

#[test]
#[ignore = "writes the round-trip fixtures afresh"]
fn write_the_roundtrip_files() {
    for (file, xml) in exports() {
        std::fs::write(roundtrip_dir().join(file), xml).expect("write");
    }
}

#[test]
fn the_roundtrip_files_are_todays_exports() {
    for (file, xml) in exports() {
        let kept = std::fs::read_to_string(roundtrip_dir().join(file)).expect("read");
        assert!(
            kept == xml,
            "tests/import/roundtrip/{file} is not today's export: run `cargo test --test import -- --ignored` and review the change"
        );
    }
}

mod back {
    use super::approval::{approve, Purchase};
    use super::order::{handlers, Order};
    use thresh::process;

    process! {
        pub ORDER: Order from "tests/import/roundtrip/order.bpmn" {
            task screen = handlers::screen;
            task check_stock = handlers::check_stock;
            task pack = handlers::pack;
            task invoice = handlers::invoice;
            flow Flow_fraud_rejected when |o| o.flagged;
            flow Flow_stock_fork when |o| o.in_stock;
        }
    }

    process! {
        pub APPROVAL: Purchase from "tests/import/roundtrip/approval.bpmn" {
            task     manager = |p| approve(&mut p.manager_ok, p.delays[0]);
            task     cfo = |p| approve(&mut p.cfo_ok, p.delays[1]);
            task     legal = |p| approve(&mut p.legal_ok, p.delays[2]);
            complex  approved: activate(count = 2, require = [cfo])
                             | activate(count = 1, require = [cfo], when = |p| p.urgent);
            task     order = |p| async move { p.ordered = true; Ok(()) };
        }
    }
}

#[test]
fn every_export_imports_back_to_the_same_model() {
    assert_eq!(back::ORDER.fingerprint(), order::ORDER.fingerprint());
    assert_eq!(
        back::APPROVAL.fingerprint(),
        approval::APPROVAL.fingerprint()
    );
}
