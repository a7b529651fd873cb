//! Shared helpers of the runtime behaviour tests: jitter for handlers, runners that
//! repeat a scenario many times at once, waits that fail instead of hanging, outcome
//! helpers, exact history rows, and structural checks of every history the tests read.
//!
//! Scenarios come in two kinds:
//! - an `async fn(Engine, usize)` runs one instance on a shared engine (the `usize` is
//!   the run number, used to vary the data) and asserts its exact result. The
//!   [`flavors!`] macro turns it into two tests: one on a current-thread runtime with
//!   the paused clock, one on a four-worker multi-thread runtime; each runs the
//!   scenario [`RUNS`] times concurrently on one engine ([`repeat`]), then shuts the
//!   engine down;
//! - an `async fn(usize)` makes its own engine (for signals, which reach every
//!   instance of an engine, or broker counts). [`both_runtimes!`] and
//!   [`multi_thread!`] run it a given number of times at once ([`repeat_own_engines`]).
//!
//! Histories are checked by [`check_history`] (via [`run`] and [`finish`]), by
//! [`check_scoped_history`] for sub-processes, or by the stricter
//! [`check_strict_history`] (via [`finish_strict`]) that knows interruptions, errors
//! and escalations.
//!
//! Waiting is the public test kit's (`thresh::testing`, re-exported here):
//! `expect_that`, `expect_parked` and `expect_open_work` poll with `yield_now`, which
//! never moves a paused clock, so they only wait for work that needs no time, and fail
//! with a picture of the instance instead of hanging; [`settle`] sleeps a millisecond,
//! which on a paused current-thread runtime runs every ready task to idle first (the
//! clock only jumps when nothing can run) and on a multi-thread runtime gives the loop
//! ample time. [`finish`] waits for the outcome on tokio's clock (a paused one moves).

// Each suite uses only some of these helpers (and macros: each has its own
// `allow(unused_macros)`, as some suites allow it on `mod common;`).
#![allow(dead_code)]

use std::collections::BTreeMap;
use std::future::Future;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

// Not every suite uses every wait.
#[allow(unused_imports)]
pub use thresh::testing::{expect_open_work, expect_parked, expect_that};
use thresh::{
    Engine, Happening, History, InstanceError, InstanceHandle, Outcome, Process, ProcessData,
    TrackId,
};

/// How many times each scenario runs per runtime flavour.
pub const RUNS: usize = 200;

/// How long an instance may take before the test calls it hung. On the paused clock
/// time only moves when every task is idle, so a hang turns into this timeout at once.
pub const HANG: Duration = Duration::from_secs(20);

/// A day: the limit for instances that wait on the paused clock.
pub const DAY: Duration = Duration::from_secs(86_400);

static SEED: AtomicU64 = AtomicU64::new(0x2545_F491_4F6C_DD1D);

/// A pseudo-random number (splitmix64 over a shared counter): cheap, `Send`, and
/// different for every call across threads.
pub fn random() -> u64 {
    let mut z = SEED.fetch_add(0x9E37_79B9_7F4A_7C15, Ordering::Relaxed);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// Vary the interleaving: yield a few times, sometimes sleep a millisecond (free on
/// the paused clock), sometimes return at once.
pub async fn jitter() {
    match random() % 8 {
        n @ 0..=3 => {
            for _ in 0..=n {
                tokio::task::yield_now().await;
            }
        }
        4 | 5 => tokio::time::sleep(Duration::from_millis(1)).await,
        _ => {}
    }
}

/// Vary the interleaving: yield a few times, or not at all. Unlike [`jitter`] it never
/// sleeps, so it never moves a paused clock.
pub async fn yield_jitter() {
    for _ in 0..random() % 4 {
        tokio::task::yield_now().await;
    }
}

/// Run `scenario(engine, i)` for `i` in `0..runs`, all at once as separate tokio tasks
/// on one engine; re-raise the first failure; then shut the engine down and check that
/// no instance loop is left.
pub async fn repeat<F, Fut>(runs: usize, scenario: F)
where
    F: Fn(Engine, usize) -> Fut,
    Fut: Future<Output = ()> + Send + 'static,
{
    // Fail-fast: these scenarios assert how failures end their instances (the
    // incidents of the default are tests/retries' subject).
    let engine = Engine::with_config(thresh::EngineConfig::fail_fast());
    repeat_own_engines(runs, |i| scenario(engine.clone(), i)).await;
    engine
        .shutdown(Duration::from_secs(10))
        .await
        .expect("every instance loop stops");
    assert_eq!(engine.running_instances(), 0);
}

/// Run `scenario(i)` for `i` in `0..runs`, all at once as separate tokio tasks, and
/// re-raise the first failure. Each run makes its own engine (if any), so unlike
/// [`repeat`] nothing is shut down or checked for leftover loops here.
pub async fn repeat_own_engines<F, Fut>(runs: usize, scenario: F)
where
    F: Fn(usize) -> Fut,
    Fut: Future<Output = ()> + Send + 'static,
{
    let mut set = tokio::task::JoinSet::new();
    for i in 0..runs {
        set.spawn(scenario(i));
    }
    while let Some(result) = set.join_next().await {
        if let Err(error) = result {
            if error.is_panic() {
                std::panic::resume_unwind(error.into_panic());
            }
            panic!("scenario task: {error}");
        }
    }
}

/// Two tests per scenario: `<scenario>::current_thread` (paused clock) and
/// `<scenario>::multi_thread` (four workers), each running it [`RUNS`] times.
#[allow(unused_macros)]
macro_rules! flavors {
    ($($scenario:ident),+ $(,)?) => {$(
        mod $scenario {
            #[tokio::test(start_paused = true)]
            async fn current_thread() {
                crate::common::repeat(crate::common::RUNS, super::$scenario).await;
            }

            #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
            async fn multi_thread() {
                crate::common::repeat(crate::common::RUNS, super::$scenario).await;
            }
        }
    )+};
}

/// Two tests per scenario `async fn(usize)` that makes its own engine:
/// `<scenario>::current_thread` (paused clock) and `<scenario>::multi_thread` (four
/// workers), each running it `runs` times at once ([`repeat_own_engines`]).
#[allow(unused_macros)]
macro_rules! both_runtimes {
    ($runs:expr => $($scenario:ident),+ $(,)?) => {$(
        mod $scenario {
            #[allow(unused_imports)]
            use super::*;

            #[tokio::test(start_paused = true)]
            async fn current_thread() {
                crate::common::repeat_own_engines($runs, super::$scenario).await;
            }

            #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
            async fn multi_thread() {
                crate::common::repeat_own_engines($runs, super::$scenario).await;
            }
        }
    )+};
}

/// A scenario `async fn(usize)` that makes its own engine, `runs` times at once on a
/// four-worker multi-thread runtime ([`repeat_own_engines`]).
#[allow(unused_macros)]
macro_rules! multi_thread {
    ($runs:expr => $($scenario:ident),+ $(,)?) => {$(
        mod $scenario {
            #[allow(unused_imports)]
            use super::*;

            #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
            async fn multi_thread() {
                crate::common::repeat_own_engines($runs, super::$scenario).await;
            }
        }
    )+};
}

/// Start an instance, wait for its outcome (failing the test if it hangs), read its
/// history and check that the history is well formed for that outcome.
pub async fn run<D: ProcessData + std::fmt::Debug>(
    engine: &Engine,
    process: &'static Process<D>,
    data: D,
) -> (Outcome<D>, History) {
    finish(&engine.start(process, data).await.unwrap()).await
}

/// Wait for a started instance's outcome (failing the test if it hangs), read its
/// history and check that the history is well formed for that outcome.
pub async fn finish<D: Clone + std::fmt::Debug>(
    handle: &InstanceHandle<D>,
) -> (Outcome<D>, History) {
    let outcome = tokio::time::timeout(HANG, handle.outcome())
        .await
        .unwrap_or_else(|_| panic!("instance {} hung", handle.id()));
    let history = handle.history().await;
    check_history(&history, &outcome);
    (outcome, history)
}

/// [`finish`], but the history is checked with [`check_strict_history`], and a hang
/// fails with the history so far.
pub async fn finish_strict<D: Clone + std::fmt::Debug>(
    handle: &InstanceHandle<D>,
) -> (Outcome<D>, History) {
    finish_strict_in(handle, HANG).await
}

/// [`finish_strict`], for an instance that may take up to `limit` (of paused time).
pub async fn finish_strict_in<D: Clone + std::fmt::Debug>(
    handle: &InstanceHandle<D>,
    limit: Duration,
) -> (Outcome<D>, History) {
    finish_with(handle, limit, check_strict_history).await
}

/// Wait up to `limit` for the outcome (a hang fails the test with the history so
/// far), read the history and check it with `check`.
pub async fn finish_with<D: Clone + std::fmt::Debug>(
    handle: &InstanceHandle<D>,
    limit: Duration,
    check: fn(&History, &Outcome<D>),
) -> (Outcome<D>, History) {
    let Ok(outcome) = tokio::time::timeout(limit, handle.outcome()).await else {
        panic!(
            "instance {} hung; history so far:\n{}",
            handle.id(),
            handle.history().await
        );
    };
    let history = handle.history().await;
    check(&history, &outcome);
    (outcome, history)
}

/// Wait until the history of a running instance shows `TaskStarted` at every one of
/// `tasks` (failing the test if that never happens).
pub async fn started<D: Clone>(handle: &InstanceHandle<D>, tasks: &[&str]) {
    let all_started = async {
        loop {
            let h = handle.history().await;
            if tasks
                .iter()
                .all(|t| h.count(t, |w| *w == Happening::TaskStarted) > 0)
            {
                return;
            }
            // Sleep rather than yield: on the paused clock a busy poll would keep time
            // from moving, and a handler's sleep from ending.
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
    };
    tokio::time::timeout(HANG, all_started)
        .await
        .unwrap_or_else(|_| panic!("{tasks:?} never started"));
}

/// The data of a completed outcome; any other outcome fails the test.
#[track_caller]
pub fn completed<D: std::fmt::Debug>(outcome: Outcome<D>, history: &History) -> D {
    match outcome {
        Outcome::Completed(data) => data,
        other => panic!("expected a completed instance, got {other:?}\n{history}"),
    }
}

/// The error of a failed outcome; any other outcome fails the test.
#[track_caller]
pub fn failed<D: std::fmt::Debug>(outcome: Outcome<D>, history: &History) -> InstanceError {
    match outcome {
        Outcome::Failed(error) => error,
        other => panic!("expected a failed instance, got {other:?}\n{history}"),
    }
}

/// `names`, sorted.
pub fn sorted<'a>(names: impl IntoIterator<Item = &'a &'static str>) -> Vec<&'static str> {
    let mut names: Vec<&'static str> = names.into_iter().copied().collect();
    names.sort_unstable();
    names
}

/// How many times `node` completed (a task, a receive or user task).
pub fn completions(history: &History, node: &str) -> usize {
    history.count(node, |h| matches!(h, Happening::Completed { .. }))
}

/// How many steps at `node` are exactly `what`.
pub fn count(history: &History, node: &str, what: &Happening) -> usize {
    history.count(node, |h| h == what)
}

/// How many tokens a boundary (or any node) started: `Spawned` steps there.
pub fn spawns(history: &History, node: &str) -> usize {
    history.count(node, |h| matches!(h, Happening::Spawned { .. }))
}

/// The index of the first step at `node` matching `what`.
#[track_caller]
pub fn position(history: &History, node: &str, what: impl Fn(&Happening) -> bool) -> usize {
    history
        .steps()
        .iter()
        .position(|s| s.node == node && what(&s.what))
        .unwrap_or_else(|| panic!("no matching step at `{node}`\n{history}"))
}

/// The index of the first step at `node` that is exactly `what`.
#[track_caller]
pub fn index_of(history: &History, node: &str, what: &Happening) -> usize {
    history
        .steps()
        .iter()
        .position(|s| s.node == node && s.what == *what)
        .unwrap_or_else(|| panic!("no {what:?} at `{node}`\n{history}"))
}

/// The indices of every step at `node` matching `pick`.
pub fn indices(history: &History, node: &str, pick: impl Fn(&Happening) -> bool) -> Vec<usize> {
    history
        .steps()
        .iter()
        .enumerate()
        .filter(|(_, s)| s.node == node && pick(&s.what))
        .map(|(i, _)| i)
        .collect()
}

/// The `Routed { to }` lists of a gateway, in order.
pub fn routes(history: &History, node: &str) -> Vec<Vec<&'static str>> {
    history
        .steps()
        .iter()
        .filter(|s| s.node == node)
        .filter_map(|s| match &s.what {
            Happening::Routed { to } => Some(to.to_vec()),
            _ => None,
        })
        .collect()
}

fn terminal(what: &Happening) -> bool {
    matches!(
        what,
        Happening::Ended
            | Happening::Merged
            | Happening::Consumed
            | Happening::Terminated
            | Happening::Cancelled
            | Happening::Interrupted { .. }
    )
}

/// The structure every history must have, whatever the interleaving:
/// - track 0 begins with `Started`, every other track with `Spawned` from an older one;
/// - nothing follows a track's terminal step (ended, merged, consumed, terminated,
///   cancelled, interrupted by a boundary), and every track has one unless the
///   instance is still running;
/// - `TaskStarted` is followed on its track by `Completed`, `Failed`, `Cancelled`,
///   `Interrupted`, `ErrorThrown` or `Escalated` at the same task; `ErrorThrown` by
///   `Interrupted` (caught) or `Cancelled` (uncaught); `Failed` by `Cancelled`;
///   `Waiting` by `Fired`, `Merged` or `Cancelled` at the same join;
/// - a completed instance has no `Cancelled`/`Terminated`/`Failed` step and every
///   track ended or merged; a terminated one has exactly one `Terminated`; a cancelled
///   or failed one cancelled at least one track (a failure for want of a runtime
///   excepted).
pub fn check_history<D>(history: &History, outcome: &Outcome<D>) {
    check_history_in(history, outcome, Rules::Plain)
}

/// [`check_history`] for a process with sub-processes or event sub-processes, where
/// a completed instance may have terminated a scope or cancelled what an interrupting
/// event sub-process (or a caught error) took over, and a terminated one may have
/// terminated scopes before; a track may also begin with `Started` at an event
/// sub-process's start.
pub fn check_scoped_history<D>(history: &History, outcome: &Outcome<D>) {
    check_history_in(history, outcome, Rules::Scoped)
}

/// [`check_history`] with more rules, for processes with boundary events, errors and
/// escalations:
/// - on a track, a task's `Escalated` (right after its `TaskStarted`) is followed by
///   `Completed`, `Interrupted` or `Cancelled` there; `Parked` at an activity by
///   `Completed`, `Interrupted` or `Cancelled` there (at a catch or gateway by
///   `Caught`, `Routed` or `Cancelled`);
/// - every `Interrupted { by }` is followed at once by the boundary `by` spawning a
///   track from the interrupted one;
/// - a failed instance cancelled at least one track, whatever the error.
pub fn check_strict_history<D>(history: &History, outcome: &Outcome<D>) {
    check_history_in(history, outcome, Rules::Strict)
}

/// Which rules [`check_history_in`] applies.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Rules {
    /// [`check_history`].
    Plain,
    /// [`check_scoped_history`].
    Scoped,
    /// [`check_strict_history`].
    Strict,
}

fn check_history_in<D>(history: &History, outcome: &Outcome<D>, rules: Rules) {
    let scoped = rules == Rules::Scoped;
    let strict = rules == Rules::Strict;
    let all = history.steps();
    let mut tracks: BTreeMap<TrackId, Vec<&thresh::Step>> = BTreeMap::new();
    for step in all {
        tracks.entry(step.track).or_default().push(step);
    }
    let fail = |why: String| -> ! { panic!("malformed history: {why}\n{history}") };
    for (&track, steps) in &tracks {
        match &steps[0].what {
            Happening::Started if track == TrackId(0) || scoped => {}
            Happening::Spawned { from } if *from < track => {}
            other => fail(format!("{track} begins with {other:?}")),
        }
        for (k, pair) in steps.windows(2).enumerate() {
            let (prev, next) = (pair[0], pair[1]);
            if terminal(&prev.what) {
                fail(format!("{track}: {:?} after {:?}", next.what, prev.what));
            }
            let same = next.node == prev.node;
            let ok = match &prev.what {
                Happening::TaskStarted => {
                    same && matches!(
                        next.what,
                        Happening::Completed { .. }
                            | Happening::Failed { .. }
                            | Happening::Cancelled
                            | Happening::Interrupted { .. }
                            | Happening::ErrorThrown { .. }
                            | Happening::Escalated { .. }
                            | Happening::Called { .. }
                    )
                }
                // A call activity's child started: then as after `TaskStarted`.
                Happening::Called { .. } => {
                    same && matches!(
                        next.what,
                        Happening::Completed { .. }
                            | Happening::Failed { .. }
                            | Happening::Cancelled
                            | Happening::Interrupted { .. }
                            | Happening::ErrorThrown { .. }
                            | Happening::Escalated { .. }
                    )
                }
                Happening::ErrorThrown { .. } => {
                    same && matches!(
                        next.what,
                        Happening::Interrupted { .. } | Happening::Cancelled
                    )
                }
                Happening::Failed { .. } => same && next.what == Happening::Cancelled,
                Happening::Escalated { .. }
                    if strict && k > 0 && steps[k - 1].what == Happening::TaskStarted =>
                {
                    same && matches!(
                        next.what,
                        Happening::Completed { .. }
                            | Happening::Interrupted { .. }
                            | Happening::Cancelled
                    )
                }
                Happening::Parked if strict => {
                    same && matches!(
                        next.what,
                        Happening::Completed { .. }
                            | Happening::Caught { .. }
                            | Happening::Routed { .. }
                            | Happening::Interrupted { .. }
                            | Happening::Cancelled
                    )
                }
                Happening::Waiting => {
                    same && matches!(
                        next.what,
                        Happening::Fired | Happening::Merged | Happening::Cancelled
                    )
                }
                _ => true,
            };
            if !ok {
                fail(format!(
                    "{track}: {:?} at `{}` after {:?} at `{}`",
                    next.what, next.node, prev.what, prev.node
                ));
            }
        }
        let last = steps.last().expect("a track has steps");
        if !terminal(&last.what) {
            fail(format!("{track} ends with {:?}", last.what));
        }
    }
    if strict {
        for (i, step) in all.iter().enumerate() {
            if let Happening::Interrupted { by } = step.what {
                let next = all.get(i + 1);
                let ok = next.is_some_and(|n| {
                    n.node == by && n.what == Happening::Spawned { from: step.track }
                });
                if !ok {
                    fail(format!(
                        "step {i}: {} interrupted by `{by}`, then {next:?}",
                        step.track
                    ));
                }
            }
        }
    }
    let count = |pick: fn(&Happening) -> bool| all.iter().filter(|s| pick(&s.what)).count();
    let cancelled = count(|h| *h == Happening::Cancelled);
    let terminated = count(|h| *h == Happening::Terminated);
    let task_failed = count(|h| matches!(h, Happening::Failed { .. }));
    match outcome {
        Outcome::Completed(_) if scoped => {
            if task_failed != 0 {
                fail("a completed instance failed a task".into());
            }
        }
        Outcome::Completed(_) => {
            if cancelled + terminated + task_failed != 0 {
                fail("a completed instance cancelled, terminated or failed something".into());
            }
        }
        Outcome::Terminated(_) => {
            if terminated == 0 || (terminated != 1 && !scoped) {
                fail(format!("{terminated} terminate steps"));
            }
        }
        Outcome::Cancelled(_) | Outcome::Failed(_) => {
            let no_runtime = matches!(outcome, Outcome::Failed(InstanceError::NoRuntime));
            if cancelled == 0 && (strict || !no_runtime) {
                fail("no track was cancelled".into());
            }
        }
    }
}

// ----- histories and deployments (events, event gate, deploy, instantiating) --------

/// One history step as `(track, node, what)`, for exact comparisons.
pub type Row = (u32, &'static str, Happening);

/// The history as rows.
pub fn steps(history: &History) -> Vec<Row> {
    history
        .steps()
        .iter()
        .map(|s| (s.track.0, s.node, s.what.clone()))
        .collect()
}

/// `Caught` with these changed fields.
pub fn caught(changed: &[&'static str]) -> Happening {
    Happening::Caught {
        changed: changed.to_vec().into(),
    }
}

/// `Completed` with these changed fields.
pub fn done(changed: &[&'static str]) -> Happening {
    Happening::Completed {
        changed: changed.to_vec().into(),
    }
}

/// `Routed` to these flows' targets.
pub fn routed(to: &[&'static str]) -> Happening {
    Happening::Routed {
        to: to.to_vec().into(),
    }
}

/// `Spawned` from track `from`.
pub fn spawned(from: u32) -> Happening {
    Happening::Spawned {
        from: TrackId(from),
    }
}

/// `Interrupted` by the boundary `by`.
pub fn interrupted(by: &'static str) -> Happening {
    Happening::Interrupted { by }
}

/// `ErrorThrown` with this code.
pub fn error_thrown(code: &str) -> Happening {
    Happening::ErrorThrown {
        code: code.to_string(),
    }
}

/// `Escalated` with this code.
pub fn escalated(code: &str) -> Happening {
    Happening::Escalated {
        code: code.to_string(),
    }
}

/// Poll `holds` (yielding in between) until it is true.
pub async fn until_true(what: &str, mut holds: impl FnMut() -> bool) {
    for _ in 0..2_000_000 {
        if holds() {
            return;
        }
        tokio::task::yield_now().await;
    }
    panic!("never happened: {what}");
}

/// Wait until the user task `node` is open, then complete it with `update`.
pub async fn complete<D: Clone + Send + 'static>(
    handle: &InstanceHandle<D>,
    node: &str,
    update: impl FnOnce(&mut D) + Send + 'static,
) {
    expect_open_work(handle, node).await;
    handle
        .complete(node, update)
        .await
        .unwrap_or_else(|e| panic!("completing `{node}`: {e}"));
}

/// Let every ready task run: exact on a paused current-thread runtime (time only
/// moves once nothing can run), a generous pause on a multi-thread one.
pub async fn settle() {
    tokio::time::sleep(Duration::from_millis(1)).await;
}

/// The next instance a deployment starts, within `HANG`.
pub async fn next_handle<D>(deployment: &mut thresh::Deployment<D>) -> InstanceHandle<D> {
    match tokio::time::timeout(HANG, deployment.next()).await {
        Ok(Some(handle)) => handle,
        Ok(None) => panic!("the deployment ended without starting another instance"),
        Err(_) => panic!("the deployment started no instance"),
    }
}

/// An in-memory engine's publish or broadcast from a thread that is no task (the
/// races these tests run against the loop): in memory it never waits, so one poll
/// finishes it.
pub fn at_once<F: Future>(call: F) -> F::Output {
    let mut call = std::pin::pin!(call);
    let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
    match call.as_mut().poll(&mut cx) {
        std::task::Poll::Ready(out) => out,
        std::task::Poll::Pending => panic!("an in-memory publish or broadcast waited"),
    }
}
