//! A saga: charge the card, reserve the stock, ship — and when a step fails, undo
//! the steps that completed, latest first: release the stock, refund the card.
//!
//! Each step that can be undone has a compensation boundary naming its handler;
//! the handler has no flows. A failure anywhere is a BPMN error, caught by an error
//! event sub-process that throws compensation for the whole process: the handlers of
//! the completed steps run in reverse order of completion, each working from the
//! data its step left (the refund reads the charge id the charge made), and the
//! throw waits for them before the order is marked rolled back. A step that never
//! completed is not undone.
//!
//! Run: `cargo run --example saga`

use thresh::{process, Engine, Outcome, ProcessData, TaskError};

#[derive(Clone, Debug, Default, ProcessData)]
pub struct Order {
    pub id: String,
    pub amount: u64,
    pub in_stock: bool,
    pub courier: bool,
    /// Set by `charge`; read by `refund` from the snapshot `charge` left.
    pub charge_id: String,
    pub reserved: bool,
    pub shipped: bool,
    pub refunded: String,
    pub released: bool,
    pub status: String,
}

pub async fn charge(order: &mut Order) -> Result<(), TaskError> {
    order.charge_id = format!("ch_{}", order.id);
    Ok(())
}

pub async fn reserve(order: &mut Order) -> Result<(), TaskError> {
    if !order.in_stock {
        return Err(TaskError::bpmn("OUT_OF_STOCK", "nothing left on the shelf"));
    }
    order.reserved = true;
    Ok(())
}

pub async fn ship(order: &mut Order) -> Result<(), TaskError> {
    if !order.courier {
        return Err(TaskError::bpmn(
            "NO_COURIER",
            "no courier picked the parcel up",
        ));
    }
    order.shipped = true;
    Ok(())
}

pub async fn refund(order: &mut Order) -> Result<(), TaskError> {
    order.refunded = order.charge_id.clone();
    Ok(())
}

pub async fn release(order: &mut Order) -> Result<(), TaskError> {
    order.reserved = false;
    order.released = true;
    Ok(())
}

process! {
    /// Charge, reserve, ship; on any failure, undo what completed.
    pub SAGA: Order {
        start    placed;
        task     charge = charge;
        task     reserve = reserve;
        task     ship = ship;
        /// Undo a charge: refund it.
        boundary undo_charge on charge: compensation -> refund;
        /// Undo a reservation: put the stock back.
        boundary undo_reserve on reserve: compensation -> release;
        task     refund = refund: compensation;
        task     release = release: compensation;
        task     done = |o| async move { o.status = "shipped".into(); Ok(()) };
        end      shipped;

        placed -> charge -> reserve -> ship -> done -> shipped;

        /// Any failure: undo the completed steps, latest first, then say so.
        event_subprocess failed {
            start    failure: error;
            throw    undo: compensation;
            task     mark = |o| async move { o.status = "rolled back".into(); Ok(()) };
            end      rolled_back;
            failure -> undo -> mark -> rolled_back;
        }
    }
}

#[tokio::main]
async fn main() {
    let engine = Engine::new();
    let orders = [
        ("A-1", true, true),
        ("B-2", true, false),
        ("C-3", false, true),
    ];
    for (id, in_stock, courier) in orders {
        let order = Order {
            id: id.into(),
            amount: 40,
            in_stock,
            courier,
            ..Order::default()
        };
        let handle = engine.start(&SAGA, order).await.unwrap();
        let outcome = handle.outcome().await;
        let ran = handle.history().await.completed_tasks();
        match outcome {
            Outcome::Completed(o) => {
                println!("order {}: {} — ran {}", o.id, o.status, ran.join(", "));
                if !o.refunded.is_empty() {
                    println!("  refunded {}, stock released: {}", o.refunded, o.released);
                }
            }
            other => println!("order {id}: {other:?}"),
        }
    }
}
