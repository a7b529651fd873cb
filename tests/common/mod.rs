//! Shared helpers of the runtime behaviour tests: jitter for handlers, a runner that
//! repeats a scenario many times at once, outcome helpers, and a structural check of
//! every history the tests read.
//!
//! Every scenario is an `async fn(Engine, usize)` that runs one instance (the `usize`
//! is the run number, used to vary the data) and asserts its exact result. The
//! [`flavors!`] macro turns it into two tests: one on a current-thread runtime with the
//! paused clock, one on a four-worker multi-thread runtime; each runs the scenario
//! [`RUNS`] times concurrently on one engine, then shuts the engine down.

#![allow(dead_code)]

use std::collections::BTreeMap;
use std::future::Future;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use thresh::{
    Engine, Happening, History, InstanceError, InstanceHandle, Outcome, Process, ProcessData,
    TrackId,
};

/// How many times each scenario runs per runtime flavour.
pub const RUNS: usize = 200;

/// How long an instance may take before the test calls it hung. On the paused clock
/// time only moves when every task is idle, so a hang turns into this timeout at once.
pub const HANG: Duration = Duration::from_secs(20);

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

/// Run `scenario(engine, i)` for `i` in `0..runs`, all at once as separate tokio tasks
/// on one engine; re-raise the first failure; then shut the engine down and check that
/// no instance loop is left.
pub async fn repeat<F, Fut>(runs: usize, scenario: F)
where
    F: Fn(Engine, usize) -> Fut,
    Fut: Future<Output = ()> + Send + 'static,
{
    let engine = Engine::new();
    let mut set = tokio::task::JoinSet::new();
    for i in 0..runs {
        set.spawn(scenario(engine.clone(), i));
    }
    while let Some(result) = set.join_next().await {
        if let Err(error) = result {
            if error.is_panic() {
                std::panic::resume_unwind(error.into_panic());
            }
            panic!("scenario task: {error}");
        }
    }
    engine
        .shutdown(Duration::from_secs(10))
        .await
        .expect("every instance loop stops");
    assert_eq!(engine.running_instances(), 0);
}

/// Two tests per scenario: `<scenario>::current_thread` (paused clock) and
/// `<scenario>::multi_thread` (four workers), each running it [`RUNS`] times.
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

/// Start an instance, wait for its outcome (failing the test if it hangs), read its
/// history and check that the history is well formed for that outcome.
pub async fn run<D: ProcessData + std::fmt::Debug>(
    engine: &Engine,
    process: &'static Process<D>,
    data: D,
) -> (Outcome<D>, History) {
    finish(&engine.start(process, data)).await
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

/// How many times `task` completed.
pub fn completions(history: &History, task: &str) -> usize {
    history.count(task, |h| matches!(h, Happening::Completed { .. }))
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

/// The `Routed { to }` lists of a gateway, in order.
pub fn routes(history: &History, node: &str) -> Vec<Vec<&'static str>> {
    history
        .steps()
        .iter()
        .filter(|s| s.node == node)
        .filter_map(|s| match &s.what {
            Happening::Routed { to } => Some(to.clone()),
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
///   or failed one cancelled at least one track.
pub fn check_history<D>(history: &History, outcome: &Outcome<D>) {
    check_history_in(history, outcome, false)
}

/// [`check_history`] for a process with sub-processes or event sub-processes, where
/// a completed instance may have terminated a scope or cancelled what an interrupting
/// event sub-process (or a caught error) took over, and a terminated one may have
/// terminated scopes before; a track may also begin with `Started` at an event
/// sub-process's start.
pub fn check_scoped_history<D>(history: &History, outcome: &Outcome<D>) {
    check_history_in(history, outcome, true)
}

fn check_history_in<D>(history: &History, outcome: &Outcome<D>, scoped: bool) {
    let mut tracks: BTreeMap<TrackId, Vec<&thresh::Step>> = BTreeMap::new();
    for step in history.steps() {
        tracks.entry(step.track).or_default().push(step);
    }
    let fail = |why: String| -> ! { panic!("malformed history: {why}\n{history}") };
    for (&track, steps) in &tracks {
        match &steps[0].what {
            Happening::Started if track == TrackId(0) || scoped => {}
            Happening::Spawned { from } if *from < track => {}
            other => fail(format!("{track} begins with {other:?}")),
        }
        for pair in steps.windows(2) {
            let (prev, next) = (pair[0], pair[1]);
            if terminal(&prev.what) {
                fail(format!("{track}: {:?} after {:?}", next.what, prev.what));
            }
            let ok = match &prev.what {
                Happening::TaskStarted => {
                    next.node == prev.node
                        && matches!(
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
                    next.node == prev.node
                        && matches!(
                            next.what,
                            Happening::Interrupted { .. } | Happening::Cancelled
                        )
                }
                Happening::Failed { .. } => {
                    next.node == prev.node && next.what == Happening::Cancelled
                }
                Happening::Waiting => {
                    next.node == prev.node
                        && matches!(
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
    let count =
        |pick: fn(&Happening) -> bool| history.steps().iter().filter(|s| pick(&s.what)).count();
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
            if cancelled == 0 && !matches!(outcome, Outcome::Failed(InstanceError::NoRuntime)) {
                fail("no track was cancelled".into());
            }
        }
    }
}

// ----- histories and deployments (events, event gate, deploy, instantiating) --------

/// The history as `(track, node, what)` triples, for exact comparisons.
pub fn steps(history: &History) -> Vec<(u32, &'static str, Happening)> {
    history
        .steps()
        .iter()
        .map(|s| (s.track.0, s.node, s.what.clone()))
        .collect()
}

/// `Caught` with these changed fields.
pub fn caught(changed: &[&'static str]) -> Happening {
    Happening::Caught {
        changed: changed.to_vec(),
    }
}

/// `Completed` with these changed fields.
pub fn done(changed: &[&'static str]) -> Happening {
    Happening::Completed {
        changed: changed.to_vec(),
    }
}

/// Wait (yielding) until the instance has parked at `node` at least `times` times;
/// the history then. Fails if the instance ends first, or never parks there.
pub async fn parked_at<D: Clone>(handle: &InstanceHandle<D>, node: &str, times: usize) -> History {
    for _ in 0..200_000 {
        let history = handle.history().await;
        if history.count(node, |w| *w == Happening::Parked) >= times {
            return history;
        }
        assert!(
            !handle.is_finished(),
            "instance {} ended before it parked at `{node}`\n{history}",
            handle.id()
        );
        tokio::task::yield_now().await;
    }
    panic!("instance {} never parked at `{node}`", handle.id());
}

/// The next instance a deployment starts, within `HANG`.
pub async fn next_handle<D>(deployment: &mut thresh::Deployment<D>) -> InstanceHandle<D> {
    match tokio::time::timeout(HANG, deployment.next()).await {
        Ok(Some(handle)) => handle,
        Ok(None) => panic!("the deployment ended without starting another instance"),
        Err(_) => panic!("the deployment started no instance"),
    }
}
