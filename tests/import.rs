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

// Round trip: every example's processes exported to `tests/import/roundtrip/<example>/
// <process>.bpmn` (checked in; `cargo test --test import -- --ignored` writes them
// afresh), imported back with the inline process's bindings: the same model, so the
// same fingerprint.

#[allow(clippy::all, unused)]
#[path = "../examples/approval.rs"]
mod approval;
#[allow(clippy::all, unused)]
#[path = "../examples/claims.rs"]
mod claims;
#[allow(clippy::all, unused)]
#[path = "../examples/durable.rs"]
mod durable;
#[allow(clippy::all, unused)]
#[path = "../examples/loan.rs"]
mod loan;
#[allow(clippy::all, unused)]
#[path = "../examples/order.rs"]
mod order;
#[allow(clippy::all, unused)]
#[path = "../examples/payment.rs"]
mod payment;
#[allow(clippy::all, unused)]
#[path = "../examples/review.rs"]
mod review;

/// Each example's process: (example, process, its export now).
macro_rules! each_example_process {
    ($m:ident) => {
        vec![
            $m!(approval, APPROVAL),
            $m!(claims, CLAIMS),
            $m!(durable, APPROVAL),
            $m!(loan, LOAN),
            $m!(order, ORDER),
            $m!(payment, PAYMENT),
            $m!(payment, LEDGER),
            $m!(review, REVIEW),
        ]
    };
}

fn exports() -> Vec<(&'static str, &'static str, String)> {
    macro_rules! export {
        ($e:ident, $p:ident) => {
            (stringify!($e), stringify!($p), $e::$p.to_bpmn())
        };
    }
    each_example_process!(export)
}

/// `tests/import/roundtrip/<example>/<process>.bpmn`.
fn roundtrip_file(example: &str, process: &str) -> std::path::PathBuf {
    std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/import/roundtrip")
        .join(example)
        .join(format!("{}.bpmn", process.to_lowercase()))
}

#[test]
#[ignore = "writes the round-trip fixtures afresh"]
fn write_the_roundtrip_files() {
    for (example, process, xml) in exports() {
        let file = roundtrip_file(example, process);
        std::fs::create_dir_all(file.parent().expect("a folder")).expect("create");
        std::fs::write(file, xml).expect("write");
    }
}

#[test]
fn the_roundtrip_files_are_todays_exports() {
    for (example, process, xml) in exports() {
        let file = roundtrip_file(example, process);
        let kept = std::fs::read_to_string(&file).unwrap_or_else(|e| {
            panic!(
                "{}: {e}; run `cargo test --test import -- --ignored`",
                file.display()
            )
        });
        assert!(
            kept == xml,
            "{} is not today's export: run `cargo test --test import -- --ignored` and review the change",
            file.display()
        );
    }
}

/// Each example's process imported back from its export, with the bindings the inline
/// process has in code: handlers, conditions, message keys and `apply` closures, and
/// timers (the file's `PT0.2S` reads as `Duration::from_millis(200)`, the same time but
/// not the same expression text, which the fingerprint hashes: binding the inline
/// expression gives back the inline model exactly).
mod back {
    use std::time::Duration;

    pub mod approval {
        use crate::approval::{approve, Purchase};
        use thresh::process;

        process! {
            pub APPROVAL: Purchase from "tests/import/roundtrip/approval/approval.bpmn" {
                task     manager = |p| approve(&mut p.manager_ok, p.delays[0]);
                task     cfo = |p| approve(&mut p.cfo_ok, p.delays[1]);
                task     legal = |p| approve(&mut p.legal_ok, p.delays[2]);
                complex  approved: activate(count = 2, require = [cfo])
                                 | activate(count = 1, require = [cfo], when = |p| p.urgent);
                task     order = |p| async move { p.ordered = true; Ok(()) };
            }
        }
    }

    pub mod claims {
        use crate::claims::{assess, pay, Claim, Filed};
        use thresh::events::BpmnError;
        use thresh::process;

        process! {
            pub CLAIMS: Claim from "tests/import/roundtrip/claims/claims.bpmn" {
                start    filed: message("claim", apply = |c, f: &Filed| {
                             c.id = f.id.clone();
                             c.amount = f.amount;
                             c.suspicious = f.suspicious;
                         });
                task     assess = assess;
                receive  documents: message("documents", key = |c| c.id.clone(), apply = |c, _: &()| c.documents = true);
                task     pay = pay;
                boundary fraud: error("FRAUD", apply = |c, e: &BpmnError| c.reason = e.message.clone());
                task     reject = |c| async move { c.status = "rejected".into(); Ok(()) };
                start    withdrawn: message("withdraw", key = |c| c.id.clone());
                task     close = |c| async move { c.status = "withdrawn".into(); Ok(()) };
                flow Flow_needs_documents_documents when |c| c.amount > 1_000;
            }
        }
    }

    pub mod durable {
        use super::Duration;
        use crate::durable::{check_stock, Order};
        use thresh::process;

        process! {
            pub APPROVAL: Order from "tests/import/roundtrip/durable/approval.bpmn" {
                task     check = check_stock;
                boundary expired: timer(Duration::from_secs(86_400));
            }
        }
    }

    pub mod loan {
        use super::Duration;
        use crate::loan::{credit_check, gather_documents, improve, Loan};
        use thresh::process;

        process! {
            pub LOAN: Loan from "tests/import/roundtrip/loan/loan.bpmn" {
                task     check = credit_check;
                boundary blacklisted: error("BLACKLISTED", apply = |l, e: &thresh::events::BpmnError| l.rejected_reason = e.message.clone());
                task     documents = gather_documents;
                boundary remind: timer(every = Duration::from_millis(20), times = 10);
                task     send_reminder = |l| async move { l.reminders += 1; Ok(()) };
                boundary too_slow: timer(Duration::from_millis(200));
                task     improve = improve;
                catch    score_ok: condition(|l| l.score >= 70, on = [score]);
                task     approve = |l| async move { l.approved = true; Ok(()) };
                flow Flow_more_again when |l| l.score < 70;
            }
        }
    }

    pub mod order {
        use crate::order::{handlers, Order};
        use thresh::process;

        process! {
            pub ORDER: Order from "tests/import/roundtrip/order/order.bpmn" {
                task screen = handlers::screen;
                task check_stock = handlers::check_stock;
                task pack = handlers::pack;
                task invoice = handlers::invoice;
                flow Flow_fraud_rejected when |o| o.flagged;
                flow Flow_stock_fork when |o| o.in_stock;
            }
        }
    }

    pub mod payment {
        use super::Duration;
        use crate::payment::{ship, Order, Payment};
        use thresh::process;

        process! {
            pub PAYMENT: Order from "tests/import/roundtrip/payment/payment.bpmn" {
                catch paid: message("payment", key = |o| o.id.clone(), apply = |o, p: &Payment| o.paid = p.amount);
                catch too_late: timer(Duration::from_millis(200));
                task  ship = ship;
                throw announce: signal("shipped", payload = |o| o.id.clone());
            }

            pub LEDGER: Order from "tests/import/roundtrip/payment/ledger.bpmn" {
                catch heard: signal("shipped", apply = |o, id: &String| o.id = id.clone());
            }
        }
    }

    pub mod review {
        use crate::review::{handlers, Document};
        use thresh::process;

        /// The example's (private) `MAX_ROUNDS`, for the condition that names it.
        const MAX_ROUNDS: u32 = 3;

        process! {
            pub REVIEW: Document from "tests/import/roundtrip/review/review.bpmn" {
                task intake = handlers::intake;
                task legal = handlers::legal;
                task finance = handlers::finance;
                task security = handlers::security;
                task editorial = handlers::editorial;
                task consolidate = handlers::consolidate;
                task decide = handlers::decide;
                task revise = handlers::revise;
                flow Flow_route_legal when |d| d.contract;
                flow Flow_route_finance when |d| d.amount >= 10_000;
                flow Flow_route_security when |d| d.personal_data;
                flow Flow_verdict_published when |d| d.approved;
                flow Flow_verdict_revise when |d| d.round < MAX_ROUNDS;
            }
        }
    }
}

/// (example, process, the inline fingerprint, the imported one).
fn fingerprints() -> Vec<(&'static str, &'static str, u64, u64)> {
    macro_rules! both {
        ($e:ident, $p:ident) => {
            (
                stringify!($e),
                stringify!($p),
                $e::$p.fingerprint(),
                back::$e::$p.fingerprint(),
            )
        };
    }
    each_example_process!(both)
}

#[test]
fn every_export_imports_back_to_the_same_model() {
    for (example, process, inline, imported) in fingerprints() {
        assert_eq!(
            imported, inline,
            "examples/{example}.rs: {process} imported from its export has another fingerprint"
        );
    }
}

/// The `pub NAME: Type {` headers of the `process!` invocations in `source`.
fn declared_processes(source: &str) -> Vec<String> {
    let mut names = Vec::new();
    let mut in_process = false;
    for line in source.lines().map(str::trim) {
        if line.starts_with("process!") || line.starts_with("thresh::process!") {
            in_process = true;
            continue;
        }
        if line.starts_with("#[") || line.starts_with("fn ") || line.starts_with("async fn") {
            in_process = false;
        }
        let Some(rest) = line.strip_prefix("pub ") else {
            continue;
        };
        let Some((name, _)) = rest.split_once(':') else {
            continue;
        };
        let static_name = !name.is_empty()
            && name
                .chars()
                .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_');
        if in_process && static_name && line.ends_with('{') {
            names.push(name.to_string());
        }
    }
    names
}

#[test]
fn every_example_has_a_roundtrip_case() {
    let dir = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("examples");
    let cases: Vec<(&str, &str)> = exports().iter().map(|(e, p, _)| (*e, *p)).collect();
    let tested: Vec<(&str, &str)> = fingerprints().iter().map(|(e, p, _, _)| (*e, *p)).collect();
    let mut missing = Vec::new();
    let mut examples = 0;
    for entry in std::fs::read_dir(&dir).expect("examples/") {
        let path = entry.expect("an entry").path();
        if path.extension().is_none_or(|e| e != "rs") {
            continue;
        }
        let example = path.file_stem().and_then(|s| s.to_str()).expect("a name");
        let source = std::fs::read_to_string(&path).expect("read");
        // An example with no `process!` of its own (diagram.rs draws order.rs's).
        for process in declared_processes(&source) {
            examples += 1;
            let case = (example, process.as_str());
            if !cases.contains(&case)
                || !tested.contains(&case)
                || !roundtrip_file(example, &process).is_file()
            {
                missing.push(format!("examples/{example}.rs: {process}"));
            }
        }
    }
    assert!(examples >= 8, "found only {examples} example processes");
    assert!(
        missing.is_empty(),
        "no round-trip case for {missing:?}: add it to `each_example_process!` in tests/import.rs and a `back::<example>` import with its bindings, then run `cargo test --test import -- --ignored`"
    );
}
