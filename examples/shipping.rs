//! An order whose lines each run a shipping process: a parallel multi-instance call
//! activity over the order's lines. Each line's child instance of SHIPPING gets the
//! line as its input, picks a carrier by weight and labels the parcel; the children's
//! final data come back as the instances' outputs, merged into the order in line
//! order whatever order the children end in. A line the carrier refuses raises a
//! BPMN error in its child, caught at the call activity: the order is held, and the
//! other lines' shipments are cancelled.
//!
//! Run: `cargo run --example shipping`

use std::time::Duration;

use thresh::{process, Engine, Happening, Outcome, ProcessData, TaskError};

/// One line of an order.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Line {
    pub sku: String,
    pub kilos: u32,
}

#[derive(Clone, Debug, Default, ProcessData)]
pub struct Order {
    pub id: String,
    pub lines: Vec<Line>,
    /// One label per line, in line order.
    pub labels: Vec<String>,
    pub held: String,
}

/// The shipping process's own data: one parcel.
#[derive(Clone, Debug, Default, ProcessData)]
pub struct Shipment {
    pub order: String,
    pub line: usize,
    pub sku: String,
    pub kilos: u32,
    pub carrier: String,
    pub label: String,
}

pub mod handlers {
    use super::*;

    /// Parcels up to 30 kg go by post, heavier ones by freight; a line of more than
    /// a tonne no carrier takes.
    pub async fn book(s: &mut Shipment) -> Result<(), TaskError> {
        if s.kilos > 1_000 {
            return Err(TaskError::bpmn(
                "REFUSED",
                format!("{} kg of {} is too heavy", s.kilos, s.sku),
            ));
        }
        // A heavier parcel takes longer to book: later lines may finish first.
        tokio::time::sleep(Duration::from_millis(u64::from(s.kilos.min(20)))).await;
        s.carrier = if s.kilos <= 30 { "post" } else { "freight" }.into();
        Ok(())
    }

    pub async fn label(s: &mut Shipment) -> Result<(), TaskError> {
        s.label = format!("{}-{}/{} via {}", s.order, s.line, s.sku, s.carrier);
        Ok(())
    }
}

process! {
    /// One parcel: book a carrier, print the label.
    pub SHIPPING: Shipment {
        start     parcel;
        task      book = handlers::book;
        task      label = handlers::label;
        end       sent;
        parcel -> book -> label -> sent;
    }
}

process! {
    /// Ship every line of the order, in parallel, each by its own SHIPPING instance.
    pub ORDER: Order {
        start     placed;
        #[multi_instance(each = |o| o.lines.clone(), output = |o, _i, s| o.labels.push(s.label))]
        call      ship = SHIPPING(
            input = |o, line, index| Shipment {
                order: o.id.clone(),
                line: index,
                sku: line.sku.clone(),
                kilos: line.kilos,
                ..Shipment::default()
            }
        );
        boundary  refused on ship: error("REFUSED", apply = |o, e: &thresh::events::BpmnError| o.held = e.message.clone());
        end       shipped;
        end       held;
        placed -> ship -> shipped;
        refused -> held;
    }
}

fn line(sku: &str, kilos: u32) -> Line {
    Line {
        sku: sku.into(),
        kilos,
    }
}

#[tokio::main]
async fn main() {
    let engine = Engine::new();
    let orders = [
        (
            "A-1",
            vec![line("desk", 18), line("lamp", 2), line("piano", 240)],
        ),
        (
            "A-2",
            vec![line("bolts", 12), line("anvil", 1_500), line("nails", 5)],
        ),
    ];
    for (id, lines) in orders {
        let handle = engine
            .start(
                &ORDER,
                Order {
                    id: id.into(),
                    lines,
                    ..Order::default()
                },
            )
            .await
            .unwrap();
        let outcome = handle.outcome().await;
        let history = handle.history().await;
        let children = history.count("ship", |w| matches!(w, Happening::Called { .. }));
        println!(
            "order {id}: {} ({children} shipping instances)",
            outcome.kind()
        );
        match outcome {
            Outcome::Completed(order) if order.held.is_empty() => {
                for label in &order.labels {
                    println!("  label {label}");
                }
            }
            Outcome::Completed(order) => {
                // The refused instance ends cancelled too, after its error.
                let refused = history.count("ship", |w| matches!(w, Happening::ErrorThrown { .. }));
                let cancelled =
                    history.count("ship", |w| matches!(w, Happening::Cancelled)) - refused;
                println!(
                    "  held: {}; {cancelled} other shipment(s) cancelled",
                    order.held
                );
            }
            other => {
                eprintln!("unexpected outcome: {other:?}");
                std::process::exit(1);
            }
        }
        println!("  ended at: {:?}", history.ended_at());
    }
    if let Err(e) = engine.shutdown(Duration::from_secs(5)).await {
        eprintln!("{e}");
        std::process::exit(1);
    }
}
