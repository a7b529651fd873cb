//! Reply or time out: an order waits for its payment message (correlated by order
//! id) or a timer, whichever comes first — an event-based gateway. A paid order is
//! shipped and a `shipped` signal is broadcast; an unpaid one is cancelled.
//!
//! Run: `cargo run --example payment`

use std::time::Duration;

use thresh::{process, Engine, Happening, Outcome, ProcessData, TaskError};

#[derive(Clone, Debug, Default, ProcessData)]
pub struct Order {
    pub id: String,
    pub amount: u64,
    pub paid: u64,
    pub shipped: bool,
}

/// What the payment service sends.
pub struct Payment {
    pub amount: u64,
}

pub async fn ship(order: &mut Order) -> Result<(), TaskError> {
    order.shipped = true;
    Ok(())
}

process! {
    /// Wait for the payment, at most 200 ms.
    pub PAYMENT: Order {
        start       placed;
        event_based await_payment;
        catch       paid: message("payment", key = |o| o.id.clone(), apply = |o, p: &Payment| o.paid = p.amount);
        catch       too_late: timer(Duration::from_millis(200));
        task        ship = ship;
        throw       announce: signal("shipped", payload = |o| o.id.clone());
        end         done;
        end         cancelled;

        placed -> await_payment -> paid, too_late;
        paid -> ship -> announce -> done;
        too_late -> cancelled;
    }

    /// Listens for shipments.
    pub LEDGER: Order {
        start    open;
        catch    heard: signal("shipped", apply = |o, id: &String| o.id = id.clone());
        end      noted;
        open -> heard -> noted;
    }
}

#[tokio::main]
async fn main() {
    let engine = Engine::new();
    let ledger = engine.start(&LEDGER, Order::default()).await.unwrap();
    let paid = engine
        .start(
            &PAYMENT,
            Order {
                id: "A-1".into(),
                amount: 250,
                ..Order::default()
            },
        )
        .await
        .unwrap();
    let unpaid = engine
        .start(
            &PAYMENT,
            Order {
                id: "A-2".into(),
                amount: 90,
                ..Order::default()
            },
        )
        .await
        .unwrap();

    // Let both orders park at their gateway, then pay only the first. A payment for
    // an order nobody waits for is buffered by the broker.
    tokio::time::sleep(Duration::from_millis(20)).await;
    println!(
        "publish payment for A-1: {:?}",
        engine
            .publish(PAYMENT::message.payment, "A-1", Payment { amount: 250 })
            .await
            .unwrap()
    );
    println!(
        "publish payment for Z-9: {:?}",
        engine
            .publish(PAYMENT::message.payment, "Z-9", Payment { amount: 5 })
            .await
            .unwrap()
    );

    let mut failed = false;
    for (name, handle) in [("A-1", &paid), ("A-2", &unpaid)] {
        let outcome = handle.outcome().await;
        let history = handle.history().await;
        println!("order {name}: {}", outcome.kind());
        println!(
            "  arm taken: {:?}",
            history.steps().iter().find_map(|s| match &s.what {
                Happening::Routed { to } if s.node == "await_payment" => Some(to.to_vec()),
                _ => None,
            })
        );
        println!("  ended at:  {:?}", history.ended_at());
        match outcome {
            Outcome::Completed(order) => println!(
                "  paid {} of {}, shipped: {}",
                order.paid, order.amount, order.shipped
            ),
            other => {
                eprintln!("unexpected: {other:?}");
                failed = true;
            }
        }
    }
    match ledger.outcome().await {
        Outcome::Completed(order) => println!("ledger heard the shipment of {}", order.id),
        other => {
            eprintln!("ledger: unexpected {other:?}");
            failed = true;
        }
    }
    println!("broker: {:?}", engine.broker_stats());
    if failed {
        std::process::exit(1);
    }
}
