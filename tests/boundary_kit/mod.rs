//! Helpers shared by the boundary, conditional and link tests: exact history rows, a
//! structural history check that knows interruptions, errors and escalations, waits
//! that fail instead of hanging, and a runner that repeats a scenario many times at
//! once.
//!
//! Waiting: `until` polls with `yield_now`, which never moves a paused clock, so it
//! only waits for work that needs no time; `settle` sleeps a millisecond, which on a
//! paused current-thread runtime runs every ready task to idle first (the clock only
//! jumps when nothing can run) and on a multi-thread runtime gives the loop ample time.

#![allow(dead_code)]

use std::collections::BTreeMap;
use std::future::Future;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use thresh::{Happening, History, InstanceError, InstanceHandle, Outcome, TrackId};

/// How many times each concurrent scenario runs.
pub const RUNS: usize = 200;

/// How long an instance may take before the test calls it hung. On a paused clock an
/// instance that waits forever lets time jump, so this comes at once.
pub const HANG: Duration = Duration::from_secs(20);

/// A day: the limit for instances that wait on the paused clock.
pub const DAY: Duration = Duration::from_secs(86_400);

/// One history step as (track, node, happening), for exact comparisons.
pub type Row = (u32, &'static str, Happening);

/// The history as rows.
pub fn steps(history: &History) -> Vec<Row> {
    history
        .steps()
        .iter()
        .map(|s| (s.track.0, s.node, s.what.clone()))
        .collect()
}

pub fn done(changed: &[&'static str]) -> Happening {
    Happening::Completed {
        changed: changed.to_vec(),
    }
}

pub fn caught(changed: &[&'static str]) -> Happening {
    Happening::Caught {
        changed: changed.to_vec(),
    }
}

pub fn routed(to: &[&'static str]) -> Happening {
    Happening::Routed { to: to.to_vec() }
}

pub fn spawned(from: u32) -> Happening {
    Happening::Spawned {
        from: TrackId(from),
    }
}

pub fn interrupted(by: &'static str) -> Happening {
    Happening::Interrupted { by }
}

pub fn error_thrown(code: &str) -> Happening {
    Happening::ErrorThrown {
        code: code.to_string(),
    }
}

pub fn escalated(code: &str) -> Happening {
    Happening::Escalated {
        code: code.to_string(),
    }
}

/// How many steps at `node` are exactly `what`.
pub fn count(history: &History, node: &str, what: &Happening) -> usize {
    history.count(node, |h| h == what)
}

/// How many tokens a boundary (or any node) started: `Spawned` steps there.
pub fn spawns(history: &History, node: &str) -> usize {
    history.count(node, |h| matches!(h, Happening::Spawned { .. }))
}

/// How many times `node` completed (a task, a receive or user task).
pub fn completions(history: &History, node: &str) -> usize {
    history.count(node, |h| matches!(h, Happening::Completed { .. }))
}

/// Index of the first step at `node` that is `what`.
#[track_caller]
pub fn index_of(history: &History, node: &str, what: &Happening) -> usize {
    history
        .steps()
        .iter()
        .position(|s| s.node == node && s.what == *what)
        .unwrap_or_else(|| panic!("no {what:?} at `{node}`\n{history}"))
}

/// Indices of every step at `node` matching `pick`.
pub fn indices(history: &History, node: &str, pick: impl Fn(&Happening) -> bool) -> Vec<usize> {
    history
        .steps()
        .iter()
        .enumerate()
        .filter(|(_, s)| s.node == node && pick(&s.what))
        .map(|(i, _)| i)
        .collect()
}

/// Wait for the outcome (failing the test if the instance hangs), read the history
/// and check its structure.
pub async fn finish<D: Clone + std::fmt::Debug>(
    handle: &InstanceHandle<D>,
) -> (Outcome<D>, History) {
    finish_in(handle, HANG).await
}

/// [`finish`], for an instance that may take up to `limit` (of paused time).
pub async fn finish_in<D: Clone + std::fmt::Debug>(
    handle: &InstanceHandle<D>,
    limit: Duration,
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

/// Poll the history (yielding in between, so a paused clock stays put) until `holds`;
/// returns that history. Fails if the instance ends first or it never holds.
pub async fn until<D: Clone>(
    handle: &InstanceHandle<D>,
    what: &str,
    holds: impl Fn(&History) -> bool,
) -> History {
    for _ in 0..200_000 {
        let history = handle.history().await;
        if holds(&history) {
            return history;
        }
        assert!(
            !handle.is_finished(),
            "instance {} ended before {what}\n{history}",
            handle.id()
        );
        tokio::task::yield_now().await;
    }
    panic!(
        "instance {}: never {what}\n{}",
        handle.id(),
        handle.history().await
    );
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

/// Wait until the user task `node` is open.
pub async fn open<D: Clone>(handle: &InstanceHandle<D>, node: &str) {
    for _ in 0..200_000 {
        if handle.open_work().await.iter().any(|w| w.node == node) {
            return;
        }
        assert!(
            !handle.is_finished(),
            "instance {} ended before `{node}` opened\n{}",
            handle.id(),
            handle.history().await
        );
        tokio::task::yield_now().await;
    }
    panic!(
        "instance {}: `{node}` never opened\n{}",
        handle.id(),
        handle.history().await
    );
}

/// Wait until the user task `node` is open, then complete it with `update`.
pub async fn complete<D: Clone + Send + 'static>(
    handle: &InstanceHandle<D>,
    node: &str,
    update: impl FnOnce(&mut D) + Send + 'static,
) {
    open(handle, node).await;
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

static SEED: AtomicU64 = AtomicU64::new(0x9E37_79B9_7F4A_7C15);

/// A pseudo-random number (splitmix64 over a shared counter).
pub fn random() -> u64 {
    let mut z = SEED.fetch_add(0x9E37_79B9_7F4A_7C15, Ordering::Relaxed);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// Vary the interleaving: yield a few times, or not at all.
pub async fn jitter() {
    for _ in 0..random() % 4 {
        tokio::task::yield_now().await;
    }
}

/// Run `scenario(i)` for `i` in `0..runs`, all at once as separate tokio tasks, and
/// re-raise the first failure.
pub async fn repeat<F, Fut>(runs: usize, scenario: F)
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

#[allow(unused_macros)]
/// Two tests per scenario: `<scenario>::current_thread` (paused clock) and
/// `<scenario>::multi_thread` (four workers), each running it `runs` times at once.
macro_rules! both_runtimes {
    ($runs:expr => $($scenario:ident),+ $(,)?) => {$(
        mod $scenario {
            #[allow(unused_imports)]
            use super::*;

            #[tokio::test(start_paused = true)]
            async fn current_thread() {
                crate::boundary_kit::repeat($runs, super::$scenario).await;
            }

            #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
            async fn multi_thread() {
                crate::boundary_kit::repeat($runs, super::$scenario).await;
            }
        }
    )+};
}

#[allow(unused_macros)]
/// The scenario `runs` times at once on a four-worker multi-thread runtime.
macro_rules! multi_thread {
    ($runs:expr => $($scenario:ident),+ $(,)?) => {$(
        mod $scenario {
            #[allow(unused_imports)]
            use super::*;

            #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
            async fn multi_thread() {
                crate::boundary_kit::repeat($runs, super::$scenario).await;
            }
        }
    )+};
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
///   cancelled, interrupted), and every track has one;
/// - `TaskStarted` is followed on its track, at the same task, by `Completed`,
///   `Failed`, `Cancelled`, `Interrupted`, `ErrorThrown` or `Escalated`; `Failed` by
///   `Cancelled`; `ErrorThrown` by `Interrupted` or `Cancelled`; a task's `Escalated`
///   by `Completed`, `Interrupted` or `Cancelled`; `Parked` at an activity by
///   `Completed`, `Interrupted` or `Cancelled` there (at a catch or gateway by
///   `Caught`, `Routed` or `Cancelled`); `Waiting` by `Fired`, `Merged` or `Cancelled`;
/// - every `Interrupted { by }` is followed at once by the boundary `by` spawning a
///   track from the interrupted one;
/// - a completed instance has no `Cancelled`, `Terminated` or `Failed` step; a
///   terminated one exactly one `Terminated`; a cancelled or failed one at least one
///   `Cancelled`.
pub fn check<D>(history: &History, outcome: &Outcome<D>) {
    let all = history.steps();
    let fail = |why: String| -> ! { panic!("malformed history: {why}\n{history}") };
    let mut tracks: BTreeMap<TrackId, Vec<&thresh::Step>> = BTreeMap::new();
    for step in all {
        tracks.entry(step.track).or_default().push(step);
    }
    for (&track, steps) in &tracks {
        match &steps[0].what {
            Happening::Started if track == TrackId(0) => {}
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
                    )
                }
                Happening::Failed { .. } => same && next.what == Happening::Cancelled,
                Happening::ErrorThrown { .. } => {
                    same && matches!(
                        next.what,
                        Happening::Interrupted { .. } | Happening::Cancelled
                    )
                }
                Happening::Escalated { .. }
                    if k > 0 && steps[k - 1].what == Happening::TaskStarted =>
                {
                    same && matches!(
                        next.what,
                        Happening::Completed { .. }
                            | Happening::Interrupted { .. }
                            | Happening::Cancelled
                    )
                }
                Happening::Parked => {
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
    for (i, step) in all.iter().enumerate() {
        if let Happening::Interrupted { by } = step.what {
            let next = all.get(i + 1);
            let ok = next
                .is_some_and(|n| n.node == by && n.what == Happening::Spawned { from: step.track });
            if !ok {
                fail(format!(
                    "step {i}: {} interrupted by `{by}`, then {next:?}",
                    step.track
                ));
            }
        }
    }
    let number = |pick: fn(&Happening) -> bool| all.iter().filter(|s| pick(&s.what)).count();
    let cancelled = number(|h| *h == Happening::Cancelled);
    let terminated = number(|h| *h == Happening::Terminated);
    let task_failed = number(|h| matches!(h, Happening::Failed { .. }));
    match outcome {
        Outcome::Completed(_) => {
            if cancelled + terminated + task_failed != 0 {
                fail("a completed instance cancelled, terminated or failed something".into());
            }
        }
        Outcome::Terminated(_) => {
            if terminated != 1 {
                fail(format!("{terminated} terminate steps"));
            }
        }
        Outcome::Cancelled(_) | Outcome::Failed(_) => {
            if cancelled == 0 {
                fail("no track was cancelled".into());
            }
        }
    }
}
