//! Failures that heal (issue 32): retries with backoff, task timeouts, incidents an
//! operator retries, fail-fast; in memory, on the paused clock (backoffs are the
//! instance's own timers), and on a multi-thread runtime for parallel branches.
//! The durable cases (checkpointed backoffs and incidents, a SIGKILL in each) are in
//! `durable.rs`.

use std::sync::Mutex;
use std::time::Duration;

use thresh::retry::Incident;
use thresh::{
    process, Engine, EngineConfig, Happening, InstanceError, Outcome, ProcessData, TaskError,
};

mod basics;
mod durable;
mod waits;

#[derive(Clone, Debug, Default, PartialEq, ProcessData, serde::Serialize, serde::Deserialize)]
pub struct Order {
    /// Attempts that fail before one succeeds.
    pub fail_first: u32,
    /// Empty: the charge fails (what an operator mends).
    pub card: String,
    /// The attempt that charged.
    pub charged: u32,
    pub amount: i64,
    /// Branch results.
    pub a: u32,
    pub b: u32,
}

/// The attempt this handler runs as.
pub fn attempt() -> u32 {
    thresh::task::current().expect("in a handler").attempt
}

/// Fails its first `fail_first` attempts, then charges.
pub async fn flaky(order: &mut Order) -> Result<(), TaskError> {
    let attempt = attempt();
    order.charged = attempt;
    match attempt <= order.fail_first {
        true => Err(TaskError::new(format!("network blip #{attempt}"))),
        false => Ok(()),
    }
}

/// Fails while there is no card.
pub async fn needs_card(order: &mut Order) -> Result<(), TaskError> {
    order.charged = attempt();
    match order.card.is_empty() {
        true => Err(TaskError::new("no card")),
        false => Ok(()),
    }
}

/// Waits for the next incident of `engine` (the paused clock moves while it sleeps).
pub async fn next_incident(engine: &Engine) -> Incident {
    for _ in 0..100_000 {
        if let Some(incident) = engine.incidents().await.unwrap().into_iter().next() {
            return incident;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("no incident opened");
}

/// The instants each attempt of a test's handler started at, by test.
pub static STARTS: Mutex<Vec<(u64, tokio::time::Instant)>> = Mutex::new(Vec::new());
