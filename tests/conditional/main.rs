//! Conditional events at run time (ARCHITECTURE.md, "Events"): evaluated when armed (true then:
//! fires at once), re-evaluated after commits — only those touching a field in `on`
//! when it is given, every commit otherwise — firing on false→true edges, several
//! firings of one commit applied in arming order.
//!
//! The commits are driven from outside through a user task `set` in a link loop, so
//! each one is a commit of its own. A conditional boundary's firing is recorded in
//! the very loop step of the commit that caused it (`Spawned` or `Interrupted` right
//! after the commit's `Completed`), so those histories are exact; an intermediate
//! catch's firing shows later (its `Caught` comes from its track), so a task behind
//! the catch stamps the data it sees and the test never commits again until the
//! stamp is in — which pins down the commit that fired it.
//!
//! Two ignored tests pin engine bugs: a condition true when armed is first evaluated
//! only after a commit later in the same loop step (so a sibling task that is ready
//! at once can falsify it before it is ever looked at), and a conditional boundary on
//! a task whose handler is ready at once is armed and disarmed without being
//! evaluated.

#[macro_use]
#[path = "../common/mod.rs"]
mod common;

use std::time::Duration;

use common::*;
use thresh::{process, Engine, Happening, History, InstanceError, InstanceHandle, ProcessData};
use tokio::time::Instant;

mod boundaries;
mod edges;
mod filters;
mod gateway_arm;
mod panics;
mod true_when_armed;

#[derive(Clone, Debug, Default, PartialEq, ProcessData)]
struct Gauge {
    id: String,
    a: u32,
    b: u32,
    gate: bool,
    finished: bool,
    seen_a: u32,
    seen_b: u32,
    seen_gate: bool,
    level: u32,
    temp: u32,
    x: u32,
    alarms: u32,
    rounds: u32,
    limit: u32,
}

/// Complete the next lap of the `set` loop with `update`, and wait until the loop is
/// back at `set` (the commit and every firing it caused are done; a catch's `Caught`
/// may still be on its way).
async fn set(handle: &InstanceHandle<Gauge>, update: impl FnOnce(&mut Gauge) + Send + 'static) {
    let before = completions(&handle.history().await, "set");
    complete(handle, "set", update).await;
    expect_that(handle, "`set` committed", |h| {
        completions(h, "set") == before + 1
    })
    .await;
}

/// Leave the `set` loop.
async fn finish_setting(handle: &InstanceHandle<Gauge>) {
    complete(handle, "set", |d: &mut Gauge| d.finished = true).await;
}

/// Whether the catch `ready` has been caught and its stamp is in.
fn stamped(history: &History) -> bool {
    completions(history, "stamp") == 1
}

/// After a commit that must not fire `ready`: nothing caught and no stamp, even after
/// every ready task ran (exact on the paused clock).
async fn not_fired(handle: &InstanceHandle<Gauge>, after: &str) {
    settle().await;
    let history = handle.history().await;
    assert_eq!(
        count(&history, "ready", &caught(&[])),
        0,
        "`ready` fired after {after}\n{history}"
    );
    assert!(!stamped(&history), "`ready` fired after {after}\n{history}");
}
