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

// `i.is_multiple_of(n)` needs Rust 1.87; the workspace's MSRV is 1.85.
#![allow(clippy::manual_is_multiple_of)]

#[macro_use]
mod common;

use std::collections::HashSet;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::Duration;

use common::*;
use thresh::{process, Engine, Happening, InstanceError, Outcome, ProcessData, TaskError};

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

// ----- terminate -----------------------------------------------------------------

process! {
    TERMINATE: Job {
        start s;
        parallel fork;
        task slow = long;
        task quick = quick;
        end done;
        end kill: terminate;

        s -> fork -> slow, quick;
        quick -> kill;
        slow -> done;
    }
}

/// One track reaches a terminate end while the other works in a task that would take
/// an hour (or spins): the instance is terminated with the data committed so far, the
/// working task is cancelled and never completes.
async fn terminate_end_stops_the_other_tracks(engine: Engine, i: usize) {
    let mut job = Job::new();
    job.spin = i % 2 == 1 && can_spin();
    let id = job.id;
    let (outcome, h) = run(&engine, &TERMINATE, job.clone()).await;
    let Outcome::Terminated(data) = outcome else {
        panic!("expected terminated, got {outcome:?}\n{h}");
    };
    assert_eq!(data, Job { quick: true, ..job });
    assert_eq!(h.completed_tasks(), ["quick"], "{h}");
    assert_eq!(h.ended_at(), ["kill"]);
    assert_eq!(h.count("kill", |w| *w == Happening::Terminated), 1);
    assert_eq!(h.count("slow", |w| *w == Happening::TaskStarted), 1);
    assert_eq!(h.count("slow", |w| *w == Happening::Cancelled), 1, "{h}");
    assert_eq!(completions(&h, "slow"), 0);
    assert_eq!(h.count("done", |_| true), 0);
    assert_stopped(id, "long");
}

// ----- a failing and a panicking handler -----------------------------------------

process! {
    FAILING: Job {
        start s;
        task prep = prepare;
        parallel fork;
        task boom = fail;
        task wait = forever;
        parallel join;
        end done;

        s -> prep -> fork -> wait, boom;
        boom, wait -> join -> done;
    }
}

async fn failing_handler_fails_the_instance(engine: Engine, i: usize) {
    let mut job = Job::new();
    job.how = (i % 2) as u8;
    let id = job.id;
    let handle = engine.start(&FAILING, job.clone());
    let (outcome, h) = finish(&handle).await;
    let message = match job.how {
        0 => "card declined",
        _ => "invalid digit found in string",
    };
    assert_eq!(
        failed(outcome, &h),
        InstanceError::TaskFailed {
            node: "boom",
            message: message.into()
        }
    );
    assert_eq!(
        h.count("boom", |w| *w
            == Happening::Failed {
                message: message.into()
            }),
        1,
        "{h}"
    );
    assert_eq!(h.count("wait", |w| *w == Happening::Cancelled), 1, "{h}");
    assert_eq!(h.completed_tasks(), ["prep"]);
    // The committed data: prep's write, not the failed handler's.
    let data = handle.data().await.expect("the loop reported");
    assert_eq!(
        data,
        Job {
            prepared: true,
            ..job
        }
    );
    assert_stopped(id, "forever");
}

process! {
    PANICKING: Job {
        start s;
        task prep = prepare;
        parallel fork;
        task explode = explode;
        task wait = forever;
        parallel join;
        end done;

        s -> prep -> fork -> wait, explode;
        explode, wait -> join -> done;
    }
}

async fn panicking_handler_fails_the_instance(engine: Engine, i: usize) {
    let mut job = Job::new();
    job.how = (i % 3) as u8;
    let id = job.id;
    let handle = engine.start(&PANICKING, job.clone());
    let (outcome, h) = finish(&handle).await;
    let message = match job.how {
        0 => "kaboom".to_string(),
        1 => format!("kaboom #{id}"),
        _ => "a non-string panic payload".to_string(),
    };
    assert_eq!(
        failed(outcome, &h),
        InstanceError::TaskPanicked {
            node: "explode",
            message: message.clone()
        }
    );
    assert_eq!(
        h.count("explode", |w| *w
            == Happening::Failed {
                message: message.clone()
            }),
        1,
        "{h}"
    );
    assert_eq!(h.count("wait", |w| *w == Happening::Cancelled), 1, "{h}");
    assert_eq!(
        handle.data().await,
        Some(Job {
            prepared: true,
            ..job
        })
    );
    assert_stopped(id, "forever");
}

// ----- a panicking condition -------------------------------------------------------

process! {
    CONDITION_PANICS: Job {
        start s;
        task prep = prepare;
        exclusive x;
        inclusive os;
        task a = step;
        task b = step;
        task c = step;
        end done;

        s -> prep -> x;
        x -> a when |j| j.a;
        x -> os else;
        // An inclusive split evaluates every condition, so the second one panics even
        // though the first holds.
        os -> b when |j| !j.a;
        os -> c when |j| {
            assert!(!j.b, "condition on {}", j.id);
            true
        };
        a, b, c -> done;
    }
}

async fn panicking_condition_fails_the_instance(engine: Engine, i: usize) {
    let mut job = Job::new();
    job.b = i % 4 != 0;
    let id = job.id;
    let (outcome, h) = run(&engine, &CONDITION_PANICS, job.clone()).await;
    if !job.b {
        completed(outcome, &h);
        assert_eq!(sorted(&h.completed_tasks()), ["b", "c", "prep"]);
        return;
    }
    assert_eq!(
        failed(outcome, &h),
        InstanceError::ConditionPanicked {
            from: "os",
            to: "c",
            message: format!("condition on {id}"),
        }
    );
    assert_eq!(h.completed_tasks(), ["prep"]);
    assert_eq!(routes(&h, "x"), [["os"]]);
    assert!(routes(&h, "os").is_empty(), "{h}");
    assert_eq!(h.count("os", |w| *w == Happening::Cancelled), 1, "{h}");
}

// ----- deadlocks -----------------------------------------------------------------

process! {
    DEADLOCK: Job {
        start s;
        exclusive x;
        task a = step;
        task b = step;
        parallel join;
        end done;

        s -> x;
        x -> a when |j| j.a;
        x -> b else;
        a, b -> join -> done;
    }
}

/// An exclusive split feeds a parallel join: the one token waits for ever, so the
/// instance fails with a deadlock at the join.
async fn exclusive_into_parallel_join_deadlocks(engine: Engine, i: usize) {
    let mut job = Job::new();
    job.a = i % 2 == 0;
    let taken = if job.a { "a" } else { "b" };
    let (outcome, h) = run(&engine, &DEADLOCK, job).await;
    assert_eq!(
        failed(outcome, &h),
        InstanceError::Deadlock {
            joins: vec!["join"]
        }
    );
    assert_eq!(h.completed_tasks(), [taken]);
    assert_eq!(h.count("join", |w| *w == Happening::Waiting), 1);
    assert_eq!(h.count("join", |w| *w == Happening::Cancelled), 1);
    assert_eq!(h.fired("join"), 0);
}

process! {
    DEADLOCK_AT_ONCE: Job {
        start s;
        exclusive x;
        exclusive other;
        parallel join;
        end done;

        s -> x;
        x -> join when |j| j.a;
        x -> other else;
        other -> join -> done;
    }
}

/// The same without tasks: the deadlock is found in the loop's very first step.
async fn deadlock_in_the_first_step(engine: Engine, i: usize) {
    let mut job = Job::new();
    job.a = i % 2 == 0;
    let (outcome, h) = run(&engine, &DEADLOCK_AT_ONCE, job).await;
    assert_eq!(
        failed(outcome, &h),
        InstanceError::Deadlock {
            joins: vec!["join"]
        }
    );
    assert_eq!(h.count("join", |w| *w == Happening::Cancelled), 1);
}

process! {
    /// Two tokens reach one flow of `join`, one the other: it fires once and the
    /// second token waits for a partner that never comes.
    UNEVEN: Job {
        start s;
        parallel fork;
        task x1 = step;
        task x2 = step;
        task y1 = step;
        exclusive xm;
        task a = step;
        task b = step;
        parallel join;
        task c = step;
        end done;

        s -> fork -> x1, x2, y1;
        x1, x2 -> xm -> a -> join;
        y1 -> b -> join;
        join -> c -> done;
    }
}

async fn parallel_join_leftover_token_deadlocks(engine: Engine, _: usize) {
    let (outcome, h) = run(&engine, &UNEVEN, Job::new()).await;
    assert_eq!(
        failed(outcome, &h),
        InstanceError::Deadlock {
            joins: vec!["join"]
        }
    );
    assert_eq!(h.fired("join"), 1, "{h}");
    assert_eq!(completions(&h, "a"), 2);
    assert_eq!(completions(&h, "c"), 1, "{h}");
    assert_eq!(h.ended_at(), ["done"]);
    assert_eq!(h.count("join", |w| *w == Happening::Cancelled), 1, "{h}");
}

process! {
    /// A deadlocked parallel join upstream of an OR-join: the token waiting at the
    /// OR-join can still be reached from the parallel join, so it waits too.
    DEADLOCK_BEHIND_OR: Job {
        start s;
        inclusive os;
        task a = step;
        exclusive x;
        task p1 = step;
        task p2 = step;
        parallel pj;
        inclusive oj;
        end done;

        s -> os;
        os -> a when |_| true;
        os -> x when |_| true;
        x -> p1 when |j| j.a;
        x -> p2 else;
        p1, p2 -> pj -> oj;
        a -> oj -> done;
    }
}

async fn deadlock_behind_an_or_join_names_both_joins(engine: Engine, i: usize) {
    let mut job = Job::new();
    job.a = i % 2 == 0;
    let (outcome, h) = run(&engine, &DEADLOCK_BEHIND_OR, job).await;
    let InstanceError::Deadlock { mut joins } = failed(outcome, &h) else {
        panic!("expected a deadlock\n{h}");
    };
    joins.sort_unstable();
    assert_eq!(joins, ["oj", "pj"], "{h}");
    assert_eq!(h.fired("oj"), 0);
    assert_eq!(h.fired("pj"), 0);
}

// ----- no flow to take -------------------------------------------------------------

process! {
    NO_FLOW_EXCLUSIVE: Job {
        start s;
        task prep = prepare;
        exclusive x;
        task a = step;
        task b = step;
        end done;

        s -> prep -> x;
        x -> a when |j| j.a;
        x -> b when |j| j.b;
        a, b -> done;
    }
}

process! {
    NO_FLOW_INCLUSIVE: Job {
        start s;
        task prep = prepare;
        inclusive os;
        task a = step;
        task b = step;
        inclusive oj;
        end done;

        s -> prep -> os;
        os -> a when |j| j.a;
        os -> b when |j| j.b;
        a, b -> oj -> done;
    }
}

process! {
    NO_FLOW_TASK: Job {
        start s;
        task prep = prepare;
        task a = step;
        task b = step;
        end done;

        // A task's conditional outgoing flows: every true one, else the default, else
        // the instance fails naming the task.
        s -> prep;
        prep -> a when |j| j.a;
        prep -> b when |j| j.b;
        a, b -> done;
    }
}

async fn no_flow_taken_fails_naming_the_node(engine: Engine, i: usize) {
    let (process, node) = [
        (&NO_FLOW_EXCLUSIVE, "x"),
        (&NO_FLOW_INCLUSIVE, "os"),
        (&NO_FLOW_TASK, "prep"),
    ][i % 3];
    let mut job = Job::new();
    // Every sixth run takes a flow, to show the same process can complete.
    job.a = i % 6 >= 3;
    let handle = engine.start(process, job.clone());
    let (outcome, h) = finish(&handle).await;
    if job.a {
        completed(outcome, &h);
        assert_eq!(h.completed_tasks(), ["prep", "a"]);
        return;
    }
    assert_eq!(failed(outcome, &h), InstanceError::NoFlowTaken { node });
    assert_eq!(h.completed_tasks(), ["prep"]);
    assert!(routes(&h, node).is_empty());
    assert_eq!(h.count(node, |w| *w == Happening::Cancelled), 1, "{h}");
    assert_eq!(
        handle.data().await,
        Some(Job {
            prepared: true,
            ..job
        })
    );
}

// ----- cancel ----------------------------------------------------------------------

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

/// `cancel` on an instance whose tasks wait for ever (one on a pending future, one
/// spinning on yields): the outcome is `Cancelled` with the committed data, both
/// tasks are dropped. Every fourth run cancels right after the start instead.
async fn cancel_stops_waiting_tasks(engine: Engine, i: usize) {
    let mut job = Job::new();
    job.spin = can_spin();
    let id = job.id;
    let handle = engine.start(&WAITS, job.clone());
    let at_once = i % 4 == 0;
    if !at_once {
        started(&handle, &["wait", "spin"]).await;
        entered(id, "forever").await;
        entered(id, "long").await;
    }
    handle.cancel();
    let observer = handle.clone();
    let (outcome, h) = finish(&handle).await;
    let Outcome::Cancelled(data) = outcome else {
        panic!("expected cancelled, got {outcome:?}\n{h}");
    };
    assert_eq!(observer.outcome().await, Outcome::Cancelled(data.clone()));
    if at_once {
        assert!(h.completed_tasks().len() <= 1, "{h}");
        return;
    }
    assert_eq!(
        data,
        Job {
            prepared: true,
            ..job
        }
    );
    assert_eq!(h.completed_tasks(), ["prep"]);
    assert_eq!(h.count("wait", |w| *w == Happening::Cancelled), 1, "{h}");
    assert_eq!(h.count("spin", |w| *w == Happening::Cancelled), 1, "{h}");
    assert_stopped(id, "forever");
    assert_stopped(id, "long");
    assert!(noted(&DROPPED, id, "forever") && noted(&DROPPED, id, "long"));
    // Cancelling an ended instance changes nothing.
    handle.cancel();
    assert_eq!(handle.outcome().await, Outcome::Cancelled(data));
    assert_eq!(handle.history().await, h);
}

process! {
    QUICK: Job {
        start s;
        task quick = quick;
        end done;
        s -> quick -> done;
    }
}

async fn cancel_after_the_end_changes_nothing(engine: Engine, _: usize) {
    let job = Job::new();
    let handle = engine.start(&QUICK, job.clone());
    let (outcome, h) = finish(&handle).await;
    let expected = Job { quick: true, ..job };
    assert_eq!(outcome, Outcome::Completed(expected.clone()));
    handle.cancel();
    assert_eq!(handle.outcome().await, Outcome::Completed(expected));
    assert_eq!(handle.history().await, h);
}

/// Dropping every handle does not stop an instance: it runs to its end.
async fn dropped_handle_leaves_the_instance_running(_: Engine, _: usize) {
    let engine = Engine::new();
    let job = Job::new();
    let id = job.id;
    drop(engine.start(&RELEASED_BY_ID, job));
    entered(id, "gate").await;
    assert_eq!(engine.running_instances(), 1);
    note(&FINISHED, id, "release");
    let ended = async {
        while engine.running_instances() > 0 {
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
    };
    tokio::time::timeout(HANG, ended)
        .await
        .expect("the instance ended");
    assert!(noted(&FINISHED, id, "gate"));
    assert_eq!(engine.shutdown(Duration::from_secs(1)).await, Ok(()));
}

process! {
    RELEASED_BY_ID: Job {
        start s;
        task gate = |j| async move {
            let probe = Probe::enter(j.id, "gate");
            while !noted(&FINISHED, j.id, "release") {
                tokio::time::sleep(Duration::from_millis(1)).await;
            }
            probe.finish();
            Ok(())
        };
        end done;
        s -> gate -> done;
    }
}

// ----- shutdown --------------------------------------------------------------------

/// `shutdown` cancels every running instance, waits for their loops and returns
/// `Ok`; instances that had ended keep their outcome; an instance started afterwards
/// is cancelled at once.
async fn shutdown_cancels_running_instances(_: Engine, i: usize) {
    let engine = Engine::new();
    let waiting: Vec<_> = (0..4)
        .map(|k| {
            let mut job = Job::new();
            job.spin = (i + k) % 2 == 0 && can_spin();
            (job.id, engine.start(&WAITS, job))
        })
        .collect();
    let quick = engine.start(&QUICK, Job::new());
    assert_eq!(finish(&quick).await.0.kind(), "completed");
    for (id, handle) in &waiting {
        started(handle, &["wait", "spin"]).await;
        entered(*id, "forever").await;
        entered(*id, "long").await;
    }
    assert_eq!(
        tokio::time::timeout(HANG, engine.shutdown(Duration::from_secs(10)))
            .await
            .expect("shutdown hung"),
        Ok(())
    );
    assert_eq!(engine.running_instances(), 0);
    for (id, handle) in &waiting {
        assert!(handle.is_finished());
        let (outcome, h) = finish(handle).await;
        let Outcome::Cancelled(data) = outcome else {
            panic!("expected cancelled, got {outcome:?}\n{h}");
        };
        assert!(data.prepared);
        assert_eq!(h.count("wait", |w| *w == Happening::Cancelled), 1, "{h}");
        assert_eq!(h.count("spin", |w| *w == Happening::Cancelled), 1, "{h}");
        assert!(noted(&DROPPED, *id, "forever") && noted(&DROPPED, *id, "long"));
        assert_stopped(*id, "forever");
        assert_stopped(*id, "long");
    }
    assert_eq!(finish(&quick).await.0.kind(), "completed");
    let late = engine.start(&WAITS, Job::new());
    assert_eq!(finish(&late).await.0.kind(), "cancelled");
}

/// A handler that blocks its thread (no await) cannot be dropped: `shutdown` reports
/// the instance still running at its deadline, and the instance ends cancelled once
/// the handler returns.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn shutdown_reports_instances_past_the_deadline() {
    process! {
        BLOCKING: Job {
            start s;
            task block = |j| async move {
                // Wait once first: a handler runs on its instance's loop until it
                // first waits, and this one must block a track's thread, not the loop.
                tokio::task::yield_now().await;
                let probe = Probe::enter(j.id, "block");
                std::thread::sleep(Duration::from_millis(500));
                probe.finish();
                Ok(())
            };
            end done;
            s -> block -> done;
        }
    }
    let engine = Engine::new();
    let job = Job::new();
    let id = job.id;
    let handle = engine.start(&BLOCKING, job);
    // Shut down only once the handler blocks its thread: a track's task aborted
    // before its first poll stops at once.
    entered(id, "block").await;
    let result = engine.shutdown(Duration::from_millis(20)).await;
    assert_eq!(
        result,
        Err(thresh::ShutdownError { still_running: 1 }),
        "{:?}",
        handle.history().await
    );
    let (outcome, h) = finish(&handle).await;
    assert_eq!(outcome.kind(), "cancelled", "{h}");
    assert_eq!(h.count("block", |w| *w == Happening::Cancelled), 1);
    assert_eq!(completions(&h, "block"), 0);
    assert!(
        noted(&FINISHED, id, "block"),
        "the blocking handler ran to its end"
    );
    assert_eq!(engine.shutdown(Duration::from_secs(5)).await, Ok(()));
}

// ----- no runtime ------------------------------------------------------------------

#[test]
fn start_outside_a_runtime_fails_with_no_runtime() {
    let engine = Engine::new();
    let job = Job::new();
    let handle = engine.start(&WAITS, job.clone());
    assert!(handle.is_finished());
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime");
    runtime.block_on(async {
        assert_eq!(
            handle.outcome().await,
            Outcome::Failed(InstanceError::NoRuntime)
        );
        assert_eq!(handle.data().await, Some(job));
        assert!(handle.history().await.steps().is_empty());
        handle.cancel();
        assert_eq!(
            handle.outcome().await,
            Outcome::Failed(InstanceError::NoRuntime)
        );
    });
    assert_eq!(engine.running_instances(), 0);
}

flavors!(
    terminate_end_stops_the_other_tracks,
    failing_handler_fails_the_instance,
    panicking_handler_fails_the_instance,
    panicking_condition_fails_the_instance,
    exclusive_into_parallel_join_deadlocks,
    deadlock_in_the_first_step,
    parallel_join_leftover_token_deadlocks,
    no_flow_taken_fails_naming_the_node,
    cancel_stops_waiting_tasks,
    cancel_after_the_end_changes_nothing,
    shutdown_cancels_running_instances,
    deadlock_behind_an_or_join_names_both_joins,
    dropped_handle_leaves_the_instance_running,
);
