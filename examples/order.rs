//! The order process, with the elements the core builds: check stock, then
//! either pack and invoice in parallel, or back-order; a fraud check terminates.
//!
//! Run: `cargo run --example order`

use thresh::{process, Engine, Outcome, ProcessData, TaskError};

#[derive(Clone, Debug, Default, ProcessData)]
pub struct Order {
    pub id: String,
    pub total: u64,
    pub in_stock: bool,
    pub packed: bool,
    pub invoiced: bool,
    pub flagged: bool,
}

pub mod handlers {
    use super::*;

    pub async fn check_stock(order: &mut Order) -> Result<(), TaskError> {
        order.in_stock = order.total <= 1_000;
        Ok(())
    }

    pub async fn pack(order: &mut Order) -> Result<(), TaskError> {
        order.packed = true;
        Ok(())
    }

    pub async fn invoice(order: &mut Order) -> Result<(), TaskError> {
        order.invoiced = true;
        Ok(())
    }

    pub async fn screen(order: &mut Order) -> Result<(), TaskError> {
        order.flagged = order.id.starts_with("X-");
        Ok(())
    }
}

process! {
    /// From receipt to shipment.
    pub ORDER: Order {
        start     received;
        task      screen = handlers::screen;
        exclusive fraud;
        task      check_stock = handlers::check_stock;
        exclusive stock;
        parallel  fork;
        task      pack = handlers::pack;
        /// Invoicing runs beside packing; each commits its own field.
        task      invoice = handlers::invoice;
        parallel  join;
        end       shipped;
        end       backordered;
        end       rejected: terminate;

        received -> screen -> fraud;
        fraud -> rejected when |o| o.flagged;
        fraud -> check_stock else;
        check_stock -> stock;
        stock -> fork when |o| o.in_stock;
        stock -> backordered else;          // the default flow
        fork -> pack, invoice;
        pack, invoice -> join -> shipped;
    }
}

#[tokio::main]
async fn main() {
    let engine = Engine::new();
    for (id, total) in [("A-1", 250), ("A-2", 5_000), ("X-3", 10)] {
        let handle = engine
            .start(
                &ORDER,
                Order {
                    id: id.into(),
                    total,
                    ..Order::default()
                },
            )
            .await
            .unwrap();
        let outcome = handle.outcome().await;
        let history = handle.history().await;
        println!("order {id} (total {total}): {}", outcome.kind());
        println!("  tasks completed: {:?}", history.completed_tasks());
        println!("  ended at:        {:?}", history.ended_at());
        match outcome {
            Outcome::Completed(order) => {
                println!("  packed={} invoiced={}", order.packed, order.invoiced)
            }
            Outcome::Terminated(order) => println!("  flagged={}", order.flagged),
            other => {
                eprintln!("unexpected outcome: {other:?}");
                std::process::exit(1);
            }
        }
    }
    if let Err(e) = engine.shutdown(std::time::Duration::from_secs(5)).await {
        eprintln!("{e}");
        std::process::exit(1);
    }
}
