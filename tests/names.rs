//! Names and task types given inline (`task notify = h: "Notify customer" | kind(send);`)
//! are kept by the exports, and an export imported back keeps them (issue 37).

use thresh::{process, ProcessData, TaskError};

#[derive(Clone, Debug, Default, ProcessData)]
pub struct Order {
    pub ok: bool,
}

async fn work(_o: &mut Order) -> Result<(), TaskError> {
    Ok(())
}

process! {
    pub NAMED: Order {
        start placed: "Order placed";
        task check = work: "Check stock" | kind(business_rule);
        exclusive in_stock: "In stock?";
        task notify = work: "Notify customer" | kind(send);
        task pack = work: spawn | "Pack";
        end done: "Shipped";
        end sorry;
        placed -> check -> in_stock;
        in_stock -> notify when |o| o.ok;
        in_stock -> sorry else;
        notify -> pack -> done;
    }
}

/// `NAMED`'s export imported back (under the same name: the fingerprint hashes it).
mod back {
    use super::{work, Order};

    thresh::process! {
        pub NAMED: Order from "tests/import/names/named.bpmn" {
            task check = work;
            task notify = work;
            task pack = work;
            flow Flow_in_stock_notify when |o| o.ok;
        }
    }
}

fn file() -> std::path::PathBuf {
    std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/import/names/named.bpmn")
}

#[test]
#[ignore = "writes the export afresh"]
fn write_the_export() {
    std::fs::write(file(), NAMED.to_bpmn()).expect("write");
}

#[test]
fn names_and_task_types_are_exported() {
    let xml = NAMED.to_bpmn();
    assert_eq!(
        std::fs::read_to_string(file()).expect("the export"),
        xml,
        "run `cargo test --test names -- --ignored`"
    );
    assert!(
        xml.contains(r#"<bpmn:businessRuleTask id="check" name="Check stock">"#),
        "{xml}"
    );
    assert!(xml.contains(r#"<bpmn:sendTask id="notify" name="Notify customer">"#));
    assert!(xml.contains(r#"<bpmn:serviceTask id="pack" name="Pack">"#));
    assert!(xml.contains(r#"<bpmn:exclusiveGateway id="in_stock" name="In stock?""#));
    // Unnamed: labelled by its id, as before.
    assert!(xml.contains(r#"<bpmn:endEvent id="sorry" name="sorry">"#));
    assert!(
        NAMED.to_svg().contains(">Notify customer</text>")
            || NAMED.to_svg().contains(">Notify</text>")
    );
}

#[test]
fn the_export_imports_back_with_its_names_and_types() {
    assert_eq!(back::NAMED.fingerprint(), NAMED.fingerprint());
    let of = |p: &thresh::Process<Order>| {
        let mut v: Vec<_> = p
            .nodes()
            .iter()
            .map(|n| (n.id(), n.name(), n.element()))
            .collect();
        v.sort();
        v
    };
    let back = of(&back::NAMED);
    assert!(
        back.contains(&("notify", "Notify customer", "sendTask")),
        "{back:?}"
    );
    assert!(back.contains(&("check", "Check stock", "businessRuleTask")));
    assert!(of(&NAMED).contains(&("notify", "Notify customer", "sendTask")));
}

/// The SVG draws each task type's own icon, not a service task's gear for all: the
/// send task a filled envelope, the business rule task a table, the service task
/// (only it) a gear; a manual task (imported) a hand, a plain `task` none.
#[test]
fn the_svg_draws_each_task_types_icon() {
    let svg = NAMED.to_svg();
    let gears = svg.matches("stroke-dasharray=\"2.4 2.3\"").count();
    assert_eq!(gears, 1, "only `pack` is a service task\n{svg}");
    assert!(
        svg.contains("stroke=\"white\" stroke-width=\"1.3\""),
        "the send task's filled envelope\n{svg}"
    );
    assert!(
        svg.contains("width=\"18\" height=\"4\""),
        "the business rule task's table header\n{svg}"
    );
}
