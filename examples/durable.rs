//! An engine that survives its own crash: orders are started on a SQLite file, each
//! checks stock and then waits for a manager's approval (a user task) or gives up
//! after a day (a timer boundary). The first process starts them and is killed with
//! SIGKILL; a second one opens the same file, resumes the orders from their last
//! checkpoint and finishes them — the stock check that was already committed does not
//! run again.
//!
//! Run: `cargo run --example durable`

use std::time::Duration;

use serde::{Deserialize, Serialize};
use thresh::{process, Engine, Outcome, ProcessData, TaskError};

#[derive(Clone, Debug, Default, PartialEq, ProcessData, Serialize, Deserialize)]
pub struct Order {
    pub id: String,
    pub total: u64,
    pub checked: u32,
    pub approved: bool,
}

pub async fn check_stock(order: &mut Order) -> Result<(), TaskError> {
    order.checked += 1;
    Ok(())
}

process! {
    /// An order waits for its approval, at most a day.
    pub APPROVAL: Order {
        start    received;
        task     check = check_stock;
        user     approve;
        boundary expired on approve: timer(Duration::from_secs(86_400));
        end      approved;
        end      gave_up;
        received -> check -> approve -> approved;
        expired -> gave_up;
    }
}

const ORDERS: usize = 5;

fn main() {
    let store =
        std::env::temp_dir().join(format!("thresh-durable-example-{}.db", std::process::id()));
    match std::env::var("THRESH_EXAMPLE_STORE") {
        // The first life: start the orders, say which were stored, wait to be killed.
        Ok(path) => first_life(&path),
        Err(_) => {
            let _ = std::fs::remove_file(&store);
            crash(&store);
            second_life(&store);
            let _ = std::fs::remove_file(&store);
        }
    }
}

/// Run the first life as a child process and kill it (SIGKILL) once every order is
/// stored.
fn crash(store: &std::path::Path) {
    use std::io::{BufRead, BufReader};
    let mut child = std::process::Command::new(std::env::current_exe().expect("exe"))
        .env("THRESH_EXAMPLE_STORE", store)
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("the first life");
    let stdout = child.stdout.take().expect("stdout");
    let mut stored = 0;
    for line in BufReader::new(stdout).lines() {
        let line = line.expect("a line");
        println!("first life: {line}");
        if line.starts_with("stored") {
            stored += 1;
            if stored == ORDERS {
                break;
            }
        }
    }
    child.kill().expect("SIGKILL");
    let _ = child.wait();
    println!("first life killed with {stored} orders stored");
}

fn first_life(path: &str) {
    let runtime = tokio::runtime::Runtime::new().expect("runtime");
    runtime.block_on(async {
        let engine = Engine::open(path).await.expect("open the store");
        for i in 0..ORDERS {
            let order = Order {
                id: format!("A-{i}"),
                total: 100 * (i as u64 + 1),
                ..Order::default()
            };
            let handle = engine.start(&APPROVAL, order).await.expect("stored");
            // The stock check ran and its checkpoint is on its way; wait until the
            // order waits for its approval, then say so.
            while handle.open_work().await.is_empty() {
                tokio::task::yield_now().await;
            }
            println!("stored order {} as instance {}", i, handle.id());
        }
        std::future::pending::<()>().await;
    });
}

fn second_life(path: &std::path::Path) {
    let runtime = tokio::runtime::Runtime::new().expect("runtime");
    runtime.block_on(async {
        let engine = Engine::open(path).await.expect("reopen the store");
        engine.register(&APPROVAL).expect("register");
        let report = engine.resume().await.expect("resume");
        println!("second life: resumed {} orders", report.resumed.len());
        for (id, _) in &report.resumed {
            let handle = engine.handle(&APPROVAL, *id).expect("a resumed handle");
            while handle.open_work().await.is_empty() {
                tokio::task::yield_now().await;
            }
            handle
                .complete(APPROVAL::user.approve, |o| o.approved = true)
                .await
                .expect("approved");
            match handle.outcome().await {
                Outcome::Completed(order) => println!(
                    "  {}: approved={} (stock checked {} time{})",
                    order.id,
                    order.approved,
                    order.checked,
                    if order.checked == 1 { "" } else { "s" }
                ),
                other => println!("  {id}: {}", other.kind()),
            }
        }
        engine
            .shutdown(Duration::from_secs(5))
            .await
            .expect("shutdown");
    });
}
