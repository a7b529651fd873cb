//! Durable instances: stored at start, checkpointed after every step, resumed after a
//! restart from their last checkpoint — on the reference store in memory, on a SQLite
//! file, and after a real SIGKILL of the process that ran them.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use thresh::store::{MemoryStore, Status, Store};
use thresh::testing::TestStore;
use thresh::{
    process, DurableEngine, InstanceHandle, InstanceId, Outcome, ProcessData, SkipReason,
};

const HANG: Duration = Duration::from_secs(20);

#[derive(Clone, Debug, Default, PartialEq, ProcessData, Serialize, Deserialize)]
pub struct Order {
    pub id: String,
    pub checked: u32,
    pub approved: bool,
    pub shipped: u32,
}

/// Runs of `check`'s handler in this test binary (each test uses its own process
/// where it counts runs).
static CHECKS: AtomicUsize = AtomicUsize::new(0);

process! {
    APPROVAL: Order {
        start received;
        task  check = |o| async move {
            CHECKS.fetch_add(1, Ordering::SeqCst);
            o.checked += 1;
            Ok(())
        };
        user  approve;
        task  ship = |o| async move { o.shipped += 1; Ok(()) };
        end   done;
        received -> check -> approve -> ship -> done;
    }
}

/// Wait until a user task called `node` is open on `handle`.
async fn until_open<D: Clone>(handle: &InstanceHandle<D>, node: &str) {
    tokio::time::timeout(HANG, async {
        while !handle.open_work().await.iter().any(|w| w.node == node) {
            tokio::task::yield_now().await;
        }
    })
    .await
    .expect("the user task opened");
}

/// Yield until `done` holds, for at most a minute of real time. Also on a paused
/// clock: between rounds of yields it sleeps the thread, not the runtime's clock,
/// so the clock moves only where a test advances it.
async fn until(what: &str, mut done: impl FnMut() -> bool) {
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    while std::time::Instant::now() < deadline {
        for _ in 0..100 {
            if done() {
                return;
            }
            tokio::task::yield_now().await;
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    panic!("{what}: not reached");
}

/// Read the store until instance `id` is no longer running, for at most a minute
/// of real time (also on a paused clock, as `until`): its status and outcome.
async fn ended(engine: &DurableEngine, id: InstanceId) -> (Status, String) {
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    while std::time::Instant::now() < deadline {
        for _ in 0..100 {
            match engine.instance(id).await.expect("read") {
                Some((Status::Running, _)) => tokio::task::yield_now().await,
                Some((status, outcome)) => return (status, outcome.unwrap_or_default()),
                None => panic!("instance {id:?} is not stored"),
            }
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    panic!("instance {id:?} still running");
}

async fn outcome(handle: &InstanceHandle<Order>) -> Outcome<Order> {
    tokio::time::timeout(HANG, handle.outcome())
        .await
        .expect("the instance ended")
}

/// The store of a test: the ONE place the suite opens its stores, so it runs on each
/// kind by setting `THRESH_TEST_STORE` (`memory`, the default; `sqlite`, a temporary
/// file removed afterwards).
fn test_store() -> TestStore {
    TestStore::from_env("durable").expect("the store THRESH_TEST_STORE names")
}

/// A restart: the first engine shuts down (its instances stay stored as running), a
/// new one on the same store registers the process and resumes.
async fn restart(store: &TestStore, old: DurableEngine) -> (DurableEngine, thresh::ResumeReport) {
    let restarted = thresh::testing::restart(old, store, |engine| engine.register(&APPROVAL))
        .await
        .expect("restarted");
    (restarted.engine, restarted.report)
}

mod asleep_timers;
mod cancel;
mod checkpoints;
mod deployments;
mod eviction;
mod faults;
mod instance_queries;
mod messages;
mod migration;
mod migration_live;
mod migration_prop;
mod models;
mod queries;
mod sigkill;
mod signals;
mod tasks;
mod timer_starts;
mod versions;
mod waits;
mod wake;
mod wake_kinds;
mod wake_thrown;
