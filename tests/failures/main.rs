//! How instances end other than by completing, and that none of it hangs or panics
//! the caller: a terminate end while another track works, a handler's `Err`, a
//! handler's panic, a condition's panic, deadlocks, a split with no flow to take,
//! `InstanceHandle::cancel`, `Engine::shutdown`, and `Engine::start` outside a runtime.
//!
//! Handlers that must be stopped hold a probe: dropped unfinished, it records its
//! instance in `DROPPED`; a handler that runs to its end records it in `FINISHED`.
//!
//! Every scenario runs 200 times on a paused current-thread runtime and 200 times on a
//! four-worker multi-thread runtime (see `common`).

#[macro_use]
#[path = "../common/mod.rs"]
mod common;

use std::collections::HashSet;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::Duration;

use common::*;
use thresh::{
    process, Engine, EngineError, Happening, InstanceError, Outcome, ProcessData, TaskError,
};

mod cancel;
mod deadlocks;
mod handlers;
mod lost_loop;
mod no_flow;
mod no_runtime;
mod shutdown;
mod terminate;

#[derive(Clone, Debug, Default, PartialEq, ProcessData)]
struct Job {
    /// Identifies the instance to the probes.
    id: u64,
    a: bool,
    b: bool,
    /// The long-running handlers spin on `yield_now` instead of sleeping.
    spin: bool,
    /// Which kind of error or panic the failing handlers raise.
    how: u8,
    prepared: bool,
    quick: bool,
    broken: bool,
    slow_done: bool,
}

impl Job {
    fn new() -> Self {
        static NEXT: AtomicU64 = AtomicU64::new(1);
        Job {
            id: NEXT.fetch_add(1, Ordering::Relaxed),
            ..Job::default()
        }
    }
}

type Probes = Mutex<Option<HashSet<(u64, &'static str)>>>;

/// Long handlers that began to run, that were dropped before their end, and that ran
/// to their end; by instance id and handler.
static ENTERED: Probes = Mutex::new(None);
static DROPPED: Probes = Mutex::new(None);
static FINISHED: Probes = Mutex::new(None);

fn note(set: &Probes, id: u64, handler: &'static str) {
    set.lock()
        .unwrap_or_else(|e| e.into_inner())
        .get_or_insert_with(HashSet::new)
        .insert((id, handler));
}

fn noted(set: &Probes, id: u64, handler: &'static str) -> bool {
    set.lock()
        .unwrap_or_else(|e| e.into_inner())
        .as_ref()
        .is_some_and(|s| s.contains(&(id, handler)))
}

/// Held across a long handler's await: records that the handler began, and whether
/// it was dropped before its end.
struct Probe {
    id: u64,
    handler: &'static str,
    finished: bool,
}

impl Probe {
    fn enter(id: u64, handler: &'static str) -> Self {
        note(&ENTERED, id, handler);
        Probe {
            id,
            handler,
            finished: false,
        }
    }

    fn finish(mut self) {
        self.finished = true;
        note(&FINISHED, self.id, self.handler);
    }
}

impl Drop for Probe {
    fn drop(&mut self) {
        if !self.finished {
            note(&DROPPED, self.id, self.handler);
        }
    }
}

/// Assert that the long handler `handler` of instance `id` did not run to its end,
/// and if it began, that it was dropped. (A track's task can be aborted before its
/// first poll, so the handler may not have begun.)
#[track_caller]
fn assert_stopped(id: u64, handler: &'static str) {
    assert!(!noted(&FINISHED, id, handler), "{handler} ran to its end");
    if noted(&ENTERED, id, handler) {
        assert!(noted(&DROPPED, id, handler), "{handler} was not dropped");
    }
}

/// Wait until the long handler `handler` of instance `id` has begun.
async fn entered(id: u64, handler: &'static str) {
    let wait = async {
        while !noted(&ENTERED, id, handler) {
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
    };
    tokio::time::timeout(HANG, wait)
        .await
        .unwrap_or_else(|_| panic!("{handler} of {id} never began"));
}

/// Spinning on `yield_now` keeps a current-thread runtime busy, and a busy runtime
/// never advances the paused clock: spin only on the multi-thread runtime.
fn can_spin() -> bool {
    tokio::runtime::Handle::current().runtime_flavor() == tokio::runtime::RuntimeFlavor::MultiThread
}

async fn step(_: &mut Job) -> Result<(), TaskError> {
    jitter().await;
    Ok(())
}

async fn prepare(j: &mut Job) -> Result<(), TaskError> {
    jitter().await;
    j.prepared = true;
    Ok(())
}

async fn quick(j: &mut Job) -> Result<(), TaskError> {
    jitter().await;
    j.quick = true;
    Ok(())
}

/// A handler that does not end on its own: an hour's sleep, or spinning on yields.
async fn long(j: &mut Job) -> Result<(), TaskError> {
    let probe = Probe::enter(j.id, "long");
    if j.spin {
        loop {
            tokio::task::yield_now().await;
        }
    } else {
        tokio::time::sleep(Duration::from_secs(3600)).await;
    }
    probe.finish();
    j.slow_done = true;
    Ok(())
}

/// A handler that never ends: a pending future.
async fn forever(j: &mut Job) -> Result<(), TaskError> {
    let probe = Probe::enter(j.id, "forever");
    std::future::pending::<()>().await;
    probe.finish();
    Ok(())
}

/// Writes a field, then fails; the write must not be committed.
async fn fail(j: &mut Job) -> Result<(), TaskError> {
    jitter().await;
    j.broken = true;
    match j.how {
        0 => Err(TaskError::new("card declined")),
        _ => Err(TaskError::from_error(
            "x".parse::<u32>().expect_err("not a number"),
        )),
    }
}

/// Writes a field, then panics.
async fn explode(j: &mut Job) -> Result<(), TaskError> {
    jitter().await;
    j.broken = true;
    match j.how {
        0 => panic!("kaboom"),
        1 => panic!("kaboom #{}", j.id),
        _ => std::panic::panic_any(42_u32),
    }
}

// ----- processes used by several modules --------------------------------------

process! {
    WAITS: Job {
        start s;
        task prep = prepare;
        parallel fork;
        task wait = forever;
        task spin = long;
        parallel join;
        end done;

        s -> prep -> fork -> wait, spin;
        wait, spin -> join -> done;
    }
}

process! {
    QUICK: Job {
        start s;
        task quick = quick;
        end done;
        s -> quick -> done;
    }
}

// ----- the data of the loop's edge cases -----------------------------------------

/// The data of the tests in `no_flow`, `deadlocks` and `lost_loop` that pinned bugs of the instance loop.
#[derive(Clone, Debug, Default, PartialEq, ProcessData)]
struct D {
    x: u32,
    id: String,
}

async fn ok(_: &mut D) -> Result<(), TaskError> {
    Ok(())
}
