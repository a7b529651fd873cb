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
        let handle = engine
            .start(
                p,
                Order {
                    id: "A-1".into(),
                    total: 10,
                    ..Order::default()
                },
            )
            .await
            .unwrap();
        let outcome = handle.outcome().await;
        let history = handle.history().await;
        assert_eq!(history.ended_at(), vec!["shipped"], "{}", outcome.kind());
        assert_eq!(
            history.completed_tasks(),
            vec!["check_stock", "Activity_ship"]
        );
    }
}

// A second Camunda Modeler 5 diagram: a sub-process with a user task, an
// exclusive gateway with a default flow and a condition in JUEL, an interrupting
// timer boundary on the sub-process, `camunda:` attributes and extension elements
// everywhere (listeners, input/output, form data, retry cycles) — all ignored.

#[derive(Clone, Debug, Default, ProcessData)]
pub struct Claim {
    pub amount: u64,
    pub assessed: bool,
    pub paid: bool,
    pub escalated: bool,
}

process! {
    pub CLAIM: Claim from "tests/import/modelers/claim_camunda.bpmn" {
        task Activity_0assess = |c| async move { c.assessed = true; Ok(()) };
        task Activity_0pay = |c| async move { c.paid = true; Ok(()) };
        task Activity_0escalate = |c| async move { c.escalated = true; Ok(()) };
        flow Flow_1large when |c| c.amount > 1_000;
    }
}

/// The same process written inline, declared in the file's order: the same model.
mod twin {
    use super::Claim;
    use thresh::process;

    process! {
        pub CLAIM: Claim {
            start StartEvent_1;
            subprocess Activity_1handle {
                start     Event_0g5hx1t;
                task      Activity_0assess = |c| async move { c.assessed = true; Ok(()) };
                exclusive Gateway_0amount;
                user      Activity_1review;
                exclusive Gateway_1merge;
                task      Activity_0pay = |c| async move { c.paid = true; Ok(()) };
                end       Event_1settled;

                Event_0g5hx1t -> Activity_0assess -> Gateway_0amount;
                Gateway_0amount -> Activity_1review when |c| c.amount > 1_000;
                Gateway_0amount -> Gateway_1merge else;
                Activity_1review -> Gateway_1merge -> Activity_0pay -> Event_1settled;
            }
            end      Event_0paid;
            boundary Event_1timeout on Activity_1handle: timer(::core::time::Duration::from_millis(300));
            task     Activity_0escalate = |c| async move { c.escalated = true; Ok(()) };
            end      Event_0escalated;

            StartEvent_1 -> Activity_1handle -> Event_0paid;
            Event_1timeout -> Activity_0escalate -> Event_0escalated;
        }
    }
}

#[test]
fn a_camunda_diagram_with_a_sub_process_imports_as_its_inline_twin() {
    assert_eq!(CLAIM.fingerprint(), twin::CLAIM.fingerprint());
    let keyword = |id: &str| CLAIM.node(id).map(|n| n.keyword());
    assert_eq!(keyword("Activity_1handle"), Some("subprocess"));
    assert_eq!(keyword("Activity_1review"), Some("user"));
    assert_eq!(keyword("Event_1timeout"), Some("boundary"));
    let gate = CLAIM.node("Gateway_0amount").expect("the gateway");
    assert_eq!(gate.outgoing().len(), 2);
}

#[tokio::test]
async fn the_camunda_claim_runs_its_default_flow_and_its_timer() {
    let engine = Engine::new();
    // A small claim takes the default flow and is paid.
    let small = engine
        .start(
            &CLAIM,
            Claim {
                amount: 400,
                ..Claim::default()
            },
        )
        .await
        .unwrap();
    let outcome = small.outcome().await;
    let history = small.history().await;
    assert_eq!(
        history.ended_at(),
        vec!["Event_1settled", "Event_0paid"],
        "{}",
        outcome.kind()
    );
    assert_eq!(
        history.completed_tasks(),
        vec!["Activity_0assess", "Activity_0pay", "Activity_1handle"]
    );
    // A large one waits for the expert, who never answers: the timer on the
    // sub-process interrupts it and the claim is escalated.
    let large = engine
        .start(
            &CLAIM,
            Claim {
                amount: 5_000,
                ..Claim::default()
            },
        )
        .await
        .unwrap();
    let outcome = large.outcome().await;
    let history = large.history().await;
    assert_eq!(
        history.ended_at(),
        vec!["Event_0escalated"],
        "{}",
        outcome.kind()
    );
    let claim = outcome.completed().expect("completed");
    assert!(
        claim.assessed && claim.escalated && !claim.paid,
        "{claim:?}"
    );
}

// As the bpmn.io demo (demo.bpmn.io) saves a diagram: `bpmn:` prefix, plain
// `bpmn:task`s, generated ids (`StartEvent_1`, `Activity_0abc123`, `Gateway_...`),
// a condition as free text, `bpmndi` shapes with `dc:Bounds` and edges with
// `di:waypoint`, a non-executable process.

#[derive(Clone, Debug, Default, ProcessData)]
pub struct Shop {
    pub id: String,
    pub total: u64,
    pub picked: bool,
    pub credit_checked: bool,
    pub packed: bool,
}

process! {
    pub SHOP: Shop from "tests/import/modelers/order_bpmn_io.bpmn" {
        task  Activity_0abc123 = |s| async move { s.picked = true; Ok(()) };
        task  Activity_1qz8k0m = |s| async move { s.credit_checked = true; Ok(()) };
        task  Activity_0pack1x = |s| async move { s.packed = true; Ok(()) };
        catch Event_0m2n4b6: message("payment", key = |s| s.id.clone());
        flow  Flow_1b7v5cx when |s| s.total > 100;
    }
}

/// The same process written inline, in the file's order.
mod bpmn_io_twin {
    use super::Shop;
    use thresh::process;

    process! {
        pub SHOP: Shop {
            start     StartEvent_1;
            task      Activity_0abc123 = |s| async move { s.picked = true; Ok(()) };
            exclusive Gateway_0w1x2y3;
            task      Activity_1qz8k0m = |s| async move { s.credit_checked = true; Ok(()) };
            exclusive Gateway_1n3m5b7;
            parallel  Gateway_0p4o6i8;
            task      Activity_0pack1x = |s| async move { s.packed = true; Ok(()) };
            catch     Event_0m2n4b6: message("payment", key = |s| s.id.clone());
            parallel  Gateway_1y2u4i6;
            end       Event_1s2d4f6;

            StartEvent_1 -> Activity_0abc123 -> Gateway_0w1x2y3;
            Gateway_0w1x2y3 -> Activity_1qz8k0m when |s| s.total > 100;
            Activity_1qz8k0m -> Gateway_1n3m5b7;
            Gateway_0w1x2y3 -> Gateway_1n3m5b7 else;
            Gateway_1n3m5b7 -> Gateway_0p4o6i8;
            Gateway_0p4o6i8 -> Activity_0pack1x, Event_0m2n4b6;
            Activity_0pack1x -> Gateway_1y2u4i6;
            Event_0m2n4b6 -> Gateway_1y2u4i6;
            Gateway_1y2u4i6 -> Event_1s2d4f6;
        }
    }
}

#[test]
fn a_bpmn_io_diagram_imports_as_its_inline_twin() {
    assert_eq!(SHOP.fingerprint(), bpmn_io_twin::SHOP.fingerprint());
    assert_eq!(SHOP.nodes().len(), 10);
    assert_eq!(SHOP.flows().len(), 11);
}

#[tokio::test]
async fn the_bpmn_io_diagram_runs() {
    let engine = Engine::new();
    for (id, total, credit) in [("S-1", 500, true), ("S-2", 20, false)] {
        let handle = engine
            .start(
                &SHOP,
                Shop {
                    id: id.into(),
                    total,
                    ..Shop::default()
                },
            )
            .await
            .unwrap();
        engine.publish_message("payment", id, ()).await.unwrap();
        let outcome = handle.outcome().await;
        let history = handle.history().await;
        assert_eq!(
            history.ended_at(),
            vec!["Event_1s2d4f6"],
            "{}",
            outcome.kind()
        );
        let shop = outcome.completed().expect("completed");
        assert!(shop.picked && shop.packed, "{shop:?}");
        assert_eq!(
            shop.credit_checked, credit,
            "{id}: the credit check runs on large orders only"
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
// The console example needs the suite's feature `console` (.ci/run tests the round
// trip with it).
#[cfg(feature = "console")]
#[allow(clippy::all, unused)]
#[path = "../examples/console.rs"]
mod console;
#[allow(clippy::all, unused)]
#[path = "../examples/durable.rs"]
mod durable;
#[allow(clippy::all, unused)]
#[path = "../examples/expenses.rs"]
mod expenses;
#[allow(clippy::all, unused)]
#[path = "../examples/loan.rs"]
mod loan;
#[allow(clippy::all, unused)]
#[path = "../examples/order.rs"]
mod order;
#[allow(clippy::all, unused)]
#[path = "../examples/payment.rs"]
mod payment;
/// The diagram tests' processes: `COMPENSATION` has what the examples do not (a
/// transaction, cancel events, a compensation event sub-process, a named throw).
#[allow(clippy::all, unused)]
#[path = "diagram/processes.rs"]
mod processes;
#[allow(clippy::all, unused)]
#[path = "../examples/review.rs"]
mod review;
#[allow(clippy::all, unused)]
#[path = "../examples/saga.rs"]
mod saga;
#[allow(clippy::all, unused)]
#[path = "../examples/shipping.rs"]
mod shipping;

/// Each example's process: (example, process, its export now).
macro_rules! each_example_process {
    ($m:ident) => {
        vec![
            $m!(approval, APPROVAL),
            $m!(claims, CLAIMS),
            #[cfg(feature = "console")]
            $m!(console, ORDER),
            $m!(durable, APPROVAL),
            $m!(expenses, EXPENSE),
            $m!(loan, LOAN),
            $m!(order, ORDER),
            $m!(payment, PAYMENT),
            $m!(payment, LEDGER),
            $m!(review, REVIEW),
            $m!(saga, SAGA),
            $m!(shipping, ORDER),
            $m!(shipping, SHIPPING),
            $m!(processes, COMPENSATION),
            $m!(processes, MULTI),
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
#[path = "import/back.rs"]
mod back;

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
        // An example that needs a cargo feature the suite is built without.
        if example == "console" && !cfg!(feature = "console") {
            continue;
        }
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
