//! Boundary events, errors and escalations at run time (ARCHITECTURE.md, "Events").
//!
//! - errors: caught by the error boundary with the exact code, else by one without a
//!   code (the exact one preferred, whatever the declaration order); the error reaches
//!   the boundary's `apply`; the failed handler's writes are dropped; a plain failure
//!   is no BPMN error; uncaught, the instance fails with `UncaughtError`; an error end
//!   event fails it too;
//! - escalations: a non-interrupting boundary starts a token and the task completes;
//!   an interrupting one stops the task; uncaught, the task completes (no error);
//!   escalation throw and end events;
//! - timers, on the paused clock: an interrupting timer stops a task whose handler
//!   never finishes (the handler is dropped) while a non-interrupting cycle fires
//!   every period until then; cycles with and without `times`; a one-off
//!   non-interrupting timer; a timer boundary on a user task fires, or is gone once
//!   the task is done; a timer and the task's end due at the same instant: exactly
//!   one wins;
//! - a late report: a handler that cannot be stopped finishes after its activity was
//!   interrupted; its report is ignored and its writes never land;
//! - message and signal boundaries, interrupting and non-interrupting, on a receive
//!   task and on a user task; they live exactly as long as the activity (afterwards a
//!   signal reaches no catcher and a message is buffered); a non-interrupting message
//!   boundary racing the activity's end loses no message;
//! - an activity's completion (a task, a user task, a sub-process, a call activity, a
//!   multi-instance task) racing its interrupting message boundary: the publisher is
//!   told `Delivered` only if the boundary fired, the user task's caller
//!   `Interrupted` then; a non-interrupting one served as the task completes or is
//!   interrupted fires all the same;
//! - a message boundary correlates on the current data (a stale key's message is
//!   dropped and counted, the boundary subscribes again under the new key);
//! - a retry loop: an error boundary links back to its task, armed anew each time;
//! - a token started by a non-interrupting boundary outlives a later interruption;
//! - cancel, terminate and shutdown while boundaries are armed leave no subscription,
//!   also with a storm of boundary signals racing the cancel.
//!
//! One ignored test pins an engine bug: a `times = 0` cycle fires once.
//!
//! Concurrent scenarios run on a four-worker multi-thread runtime, 200 times each;
//! scenarios with signals use an engine per run (a signal reaches every instance of
//! its engine).

#[macro_use]
#[path = "../common/mod.rs"]
mod common;

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use common::*;
use thresh::events::{BpmnError, Escalation};
use thresh::{
    process, BrokerStats, Engine, Happening, InstanceError, Outcome, ProcessData, Published,
    TaskError, WorkError,
};
use tokio::time::Instant;

mod completion_choice;
mod errors;
mod escalations;
mod late_reports;
mod messages_and_signals;
mod receive_choice;
mod retries_and_correlation;
mod stopping;
mod timers;

#[derive(Clone, Debug, Default, PartialEq, ProcessData)]
struct Job {
    id: String,
    /// What `charge` and `work` end with: "" is `Ok`, "PLAIN" a plain failure, any
    /// other code a BPMN error (`charge`) or an escalation (`work`).
    code: String,
    /// `charge` and `work` yield a few times first.
    slow: bool,
    /// Written by `charge` and `work` before they end.
    worked: bool,
    /// Which boundary caught what, written by the boundaries' `apply`.
    caught: String,
    message: String,
    notified: u32,
    amount: u64,
    reason: String,
    rounds: u32,
    secs: u64,
    /// The correlation key of `REKEYED`'s message boundary.
    key: String,
    /// How many attempts `RETRY`'s `charge` fails before it succeeds.
    limit: u32,
}

fn job(id: impl Into<String>) -> Job {
    Job {
        id: id.into(),
        ..Job::default()
    }
}

fn job_with(id: impl Into<String>, code: &str, slow: bool) -> Job {
    Job {
        code: code.into(),
        slow,
        ..job(id)
    }
}

async fn charge(j: &mut Job) -> Result<(), TaskError> {
    if j.slow {
        yield_jitter().await;
        tokio::task::yield_now().await;
    }
    j.worked = true;
    match j.code.as_str() {
        "" => Ok(()),
        "PLAIN" => Err(TaskError::new("plain failure")),
        code => Err(TaskError::bpmn(code, format!("{} refused", j.id))),
    }
}

async fn work(j: &mut Job) -> Result<(), TaskError> {
    if j.slow {
        yield_jitter().await;
        tokio::task::yield_now().await;
    }
    j.worked = true;
    if j.code.is_empty() {
        Ok(())
    } else {
        Err(TaskError::escalate(j.code.clone()))
    }
}

/// Counts the drops of `SLOW`'s never-ending handler.
static SLOW_DROPS: AtomicUsize = AtomicUsize::new(0);

struct CountDrop;

impl Drop for CountDrop {
    fn drop(&mut self) {
        SLOW_DROPS.fetch_add(1, Ordering::SeqCst);
    }
}

/// A gate a `BLOCKING` handler waits at, blocking its thread, so that no abort can
/// stop it: it finishes when the test opens the gate.
#[derive(Default)]
struct Gate {
    entered: AtomicBool,
    open: AtomicBool,
    finished: AtomicBool,
}

fn gates() -> &'static Mutex<HashMap<String, Arc<Gate>>> {
    static GATES: OnceLock<Mutex<HashMap<String, Arc<Gate>>>> = OnceLock::new();
    GATES.get_or_init(Default::default)
}

fn gate(id: &str) -> Arc<Gate> {
    gates()
        .lock()
        .unwrap()
        .entry(id.to_string())
        .or_default()
        .clone()
}

// ----- the data of the loop's edge cases -----------------------------------------

/// The data of the tests in `late_reports` and `timers` that pinned bugs of the instance loop.
#[derive(Clone, Debug, Default, PartialEq, ProcessData)]
struct D {
    x: u32,
    id: String,
}
