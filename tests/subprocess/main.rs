//! Embedded sub-processes at run time (ARCHITECTURE.md, "Events").
//!
//! - shape: the token entering a sub-process waits at it (`TaskStarted`) while a
//!   track spawned from it runs the inside; the sub-process completes when nothing
//!   runs inside and the token goes on — one level and two levels deep, exact
//!   histories;
//! - gateways: a parallel split/join and an inclusive split/OR-join inside, racing
//!   branches; an OR-join in the parent after a sub-process on a parallel branch
//!   waits for its completion (a user task, then a task two levels down), also
//!   racing; it does not wait for a sub-process that cannot reach it; reached only
//!   through a non-interrupting boundary on the sub-process, it waits while the
//!   boundary is armed; an OR-join inside ignores a parent token that could enter
//!   the sub-process later, and the tokens of another entry of the same sub-process;
//! - terminate inside ends only its scope (its user task withdrawn; the parent, and
//!   a task already running on a parallel parent branch, go on; `Completed`), also
//!   two levels down; terminate at the top level still terminates the instance;
//! - errors: from a task two scopes down caught by the boundary on the outer
//!   sub-process (both scopes' tracks cancelled, `BpmnError` in `apply`, the
//!   handler's write dropped, the token goes on from the boundary); the code-specific
//!   boundary beats the catch-all declared first; the most specific catcher wins —
//!   the task's own boundary, then the one on the inner sub-process, then an error
//!   event sub-process of the scope before the boundary on its sub-process; a plain
//!   failure is no BPMN error; uncaught (from a task or an error end event inside),
//!   the instance fails with `UncaughtError` naming the thrower; an error end event
//!   inside caught by the boundary on the sub-process;
//! - escalations from a handler two levels down, and from throw and end events
//!   inside: a non-interrupting boundary on the sub-process runs beside it (the
//!   sub-process completes too), an interrupting one stops it, uncaught is no error;
//! - timers on the paused clock: an interrupting timer on a sub-process cancels a
//!   user task waiting inside and a nested sub-process with its running task, while
//!   a non-interrupting cycle fires beside it; once the sub-process completes its
//!   timers are gone;
//! - message and signal boundaries, interrupting and not, on a sub-process: they
//!   correlate like any boundary (another key's message is buffered; a key changed
//!   inside is picked up after one stale message is dropped) and go with it;
//!   condition boundaries see the commits inside;
//! - a sub-process entered once per lap of a loop (its parallel join fires once per
//!   entry), and entered twice at once (each entry's join counts only its tokens);
//! - the user-task API inside a sub-process (`open_work` names the inner track,
//!   `complete`, `fail_work`, the errors of a wrong or finished task);
//! - cancel while work waits two sub-processes deep (user tasks, a never-ending
//!   handler, a signal catch, a receive task, boundaries and an event sub-process
//!   armed): every track cancelled, no subscription or timer left — also racing a
//!   storm of signals;
//! - races, 200 times on four workers: a message boundary on a sub-process against
//!   the work inside completing (one winner; a late message is left in the broker),
//!   an error inside against a signal boundary (one winner).
//!
//! `a_timer_cycle_keeps_its_schedule_across_a_clock_jump` pinned an engine bug (a
//! cycle re-armed from the instant it fired, not from its schedule, so a clock jump
//! dropped occurrences), now fixed.
//!
//! Every history is checked with `common::check_scoped_history`. Scenarios with
//! signals or broker counts use an engine per run.

#[macro_use]
#[path = "../common/mod.rs"]
mod common;

use std::time::Duration;

use common::{
    caught, complete, completed, count, done, error_thrown, escalated, interrupted, routed, settle,
    spawned, spawns, steps, yield_jitter, Row, DAY, HANG,
};
use thresh::events::{BpmnError, Escalation};
use thresh::testing::{expect_open_work, expect_that};
use thresh::{
    process, BrokerStats, Engine, Happening, History, InstanceError, InstanceHandle, OpenWork,
    Outcome, ProcessData, Published, TaskError, TrackId, WorkError,
};
use tokio::time::Instant;

mod boundaries;
mod cancel;
mod errors;
mod escalations;
mod joins;
mod joins_around_scopes;
mod races;
mod shape;
mod terminate;
mod timers;

#[derive(Clone, Debug, Default, PartialEq, ProcessData)]
struct Claim {
    id: String,
    /// What `pay` (a BPMN error) and `work` (an escalation) end with; "" is `Ok`.
    code: String,
    /// How long `slow` (and `pay`, when not zero) sleeps, in seconds.
    secs: u64,
    limit: u32,
    a: u32,
    b: u32,
    after: u32,
    left: u32,
    right: u32,
    x: u32,
    y: u32,
    want_x: bool,
    want_y: bool,
    caught: String,
    message: String,
    reason: String,
    /// The correlation key of `REKEYED`'s message boundary.
    key: String,
}

fn claim(id: impl Into<String>) -> Claim {
    Claim {
        id: id.into(),
        ..Claim::default()
    }
}

/// `a += 1`, after `secs` seconds when not zero; then the BPMN error `code`, if any.
async fn pay(c: &mut Claim) -> Result<(), TaskError> {
    if c.secs > 0 {
        tokio::time::sleep(Duration::from_secs(c.secs)).await;
    }
    c.a += 1;
    if c.code.is_empty() {
        Ok(())
    } else {
        Err(TaskError::bpmn(c.code.clone(), format!("{} refused", c.id)))
    }
}

/// `b += 1`, then the escalation `code`, if any.
async fn work(c: &mut Claim) -> Result<(), TaskError> {
    yield_jitter().await;
    c.b += 1;
    if c.code.is_empty() {
        Ok(())
    } else {
        Err(TaskError::escalate(c.code.clone()))
    }
}

async fn slow(c: &mut Claim) -> Result<(), TaskError> {
    tokio::time::sleep(Duration::from_secs(c.secs)).await;
    c.b += 1;
    Ok(())
}

// ----- helpers ---------------------------------------------------------------------

/// Wait for the outcome (failing the test if the instance hangs), read the history
/// and check its structure with [`common::check_scoped_history`].
async fn finish<D: Clone + std::fmt::Debug>(handle: &InstanceHandle<D>) -> (Outcome<D>, History) {
    finish_in(handle, HANG).await
}

/// [`finish`], for an instance that may take up to `limit` (of paused time).
async fn finish_in<D: Clone + std::fmt::Debug>(
    handle: &InstanceHandle<D>,
    limit: Duration,
) -> (Outcome<D>, History) {
    common::finish_with(handle, limit, common::check_scoped_history).await
}

/// The `(track, node)` of every `Cancelled` step, sorted by track.
fn cancelled(history: &History) -> Vec<(u32, &'static str)> {
    let mut rows: Vec<(u32, &'static str)> = history
        .steps()
        .iter()
        .filter(|s| s.what == Happening::Cancelled)
        .map(|s| (s.track.0, s.node))
        .collect();
    rows.sort_unstable();
    rows
}

/// Index of the first step at `node` that is `what`.
#[track_caller]
fn at(history: &History, node: &str, what: &Happening) -> usize {
    common::index_of(history, node, what)
}

/// Index of the first step at `node` matching `pick`.
#[track_caller]
fn first(history: &History, node: &str, pick: impl Fn(&Happening) -> bool) -> usize {
    common::position(history, node, pick)
}

/// Poll the history, sleeping a millisecond in between (so a paused clock moves on
/// once everything is idle), until `holds`; the history then. Fails if the instance
/// ends first or it never holds within `HANG`.
async fn until_slept<D: Clone>(
    handle: &InstanceHandle<D>,
    what: &str,
    holds: impl Fn(&History) -> bool,
) -> History {
    let t0 = Instant::now();
    loop {
        let history = handle.history().await;
        if holds(&history) {
            return history;
        }
        assert!(
            !handle.is_finished() && t0.elapsed() < HANG,
            "instance {}: never {what}\n{history}",
            handle.id()
        );
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
}

/// The names of the open user tasks.
async fn open_work<D: Clone>(handle: &InstanceHandle<D>) -> Vec<&'static str> {
    handle.open_work().await.iter().map(|w| w.node).collect()
}

/// The inner track an inner `track` descends from (following `Spawned` back to the
/// track that started at `s1`).
fn entry_of(history: &History, mut track: TrackId) -> TrackId {
    loop {
        let first = history
            .steps()
            .iter()
            .find(|s| s.track == track)
            .expect("the track has steps");
        match first.what {
            Happening::Spawned { .. } if first.node == "s1" => return track,
            Happening::Spawned { from } => track = from,
            _ => panic!("{track} is not inside `sub`\n{history}"),
        }
    }
}
