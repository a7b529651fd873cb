//! The complex gateway at run time (ARCHITECTURE.md, "Joins"): a converging complex gateway fires
//! when one of its activation triples `(condition, count, required flows)` holds, with
//! the completing arrival carrying on (last-in) and the earlier ones merged; once fired
//! it consumes every later arrival (tail tokens); it fails the instance with
//! `ActivationUnsatisfiable` as soon as every triple is dead (its count or a required
//! flow out of reach) and with `ArrivalsExhausted` when nothing more can arrive and no
//! condition holds. A diverging complex gateway splits like an inclusive one.
//!
//! Every test runs on a four-worker multi-thread runtime and repeats its scenario
//! [`RUNS`] times per configuration, all instances at once on one engine, asserting the
//! exact same result every time. Handlers yield and do a little work a random number
//! of times, so the branches reach the join in varied orders; where a scenario needs
//! one order, gates (semaphores in the process data) hold branches back until the test
//! has seen the join's state in the history. Nothing here measures time: the only
//! timeout is the guard that turns a hang into a failure.

use std::future::Future;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use thresh::{
    process, Engine, Happening, History, InstanceError, InstanceHandle, Outcome, Process,
    ProcessData, TaskError, TrackId,
};
use tokio::sync::Semaphore;

mod abort;
mod diverging;
mod n_of_m;
mod required_and_guarded;

/// How many instances each scenario (and each configuration of it) runs.
const RUNS: usize = 500;

/// A run that takes longer than this is hung (a guard, not a measurement).
const HANG: Duration = Duration::from_secs(60);

// ----- interleaving ----------------------------------------------------------------

static SEED: AtomicU64 = AtomicU64::new(0x2545_F491_4F6C_DD1D);

/// A pseudo-random number (splitmix64 over a shared counter), different per call.
fn random() -> u64 {
    let mut z = SEED.fetch_add(0x9E37_79B9_7F4A_7C15, Ordering::Relaxed);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// A little CPU work that the optimiser cannot drop.
fn busy(rounds: u64) -> u64 {
    let mut x = rounds;
    for _ in 0..rounds {
        x = x
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
    }
    std::hint::black_box(x)
}

/// Vary the interleaving: yield up to five times, or work a little, or neither.
async fn jitter() {
    match random() % 8 {
        n @ 0..=4 => {
            for _ in 0..=n {
                tokio::task::yield_now().await;
            }
        }
        5 | 6 => {
            busy(random() % 5_000);
            tokio::task::yield_now().await;
        }
        _ => {}
    }
}

// ----- process data ----------------------------------------------------------------

/// The approvers, as indices into [`Gates`].
const MANAGER: usize = 0;
const CFO: usize = 1;
const LEGAL: usize = 2;

/// One semaphore per approver: its task waits for a permit before it approves, so a
/// test can hold a branch back. Shared by every copy of the data (equal by identity).
#[derive(Clone, Debug)]
struct Gates(Arc<[Semaphore; 3]>);

impl Gates {
    /// Every approver passes at once.
    fn open() -> Self {
        Gates(Arc::new([
            Semaphore::new(1),
            Semaphore::new(1),
            Semaphore::new(1),
        ]))
    }

    /// Every approver waits for [`Gates::release`].
    fn closed() -> Self {
        Gates(Arc::new([
            Semaphore::new(0),
            Semaphore::new(0),
            Semaphore::new(0),
        ]))
    }

    fn release(&self, who: usize) {
        self.0[who].add_permits(1);
    }

    async fn pass(&self, who: usize) {
        self.0[who]
            .acquire()
            .await
            .expect("gates are never closed")
            .forget();
    }
}

impl Default for Gates {
    fn default() -> Self {
        Gates::open()
    }
}

impl PartialEq for Gates {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

#[derive(Clone, Debug, Default, PartialEq, ProcessData)]
struct Purchase {
    urgent: bool,
    /// The CFO's (legal's) review sends the branch to an end event instead of the join.
    cfo_declines: bool,
    legal_declines: bool,
    /// Handlers only yield once: the branches finish as close together as they can.
    race: bool,
    gates: Gates,
    /// One field per approver, so parallel commits never touch the same field.
    manager_ok: bool,
    cfo_ok: bool,
    legal_ok: bool,
    reviewed_cfo: bool,
    reviewed_legal: bool,
    ordered: u32,
    filed: u32,
}

impl Purchase {
    fn new() -> Self {
        Purchase::default()
    }

    async fn work(&self) {
        if self.race {
            tokio::task::yield_now().await;
        } else {
            jitter().await;
        }
    }
}

async fn approve_manager(p: &mut Purchase) -> Result<(), TaskError> {
    p.gates.pass(MANAGER).await;
    p.work().await;
    p.manager_ok = true;
    Ok(())
}

async fn approve_cfo(p: &mut Purchase) -> Result<(), TaskError> {
    p.gates.pass(CFO).await;
    p.work().await;
    p.cfo_ok = true;
    Ok(())
}

async fn approve_legal(p: &mut Purchase) -> Result<(), TaskError> {
    p.gates.pass(LEGAL).await;
    p.work().await;
    p.legal_ok = true;
    Ok(())
}

async fn review_cfo(p: &mut Purchase) -> Result<(), TaskError> {
    p.work().await;
    p.reviewed_cfo = true;
    Ok(())
}

async fn review_legal(p: &mut Purchase) -> Result<(), TaskError> {
    p.work().await;
    p.reviewed_legal = true;
    Ok(())
}

async fn place_order(p: &mut Purchase) -> Result<(), TaskError> {
    p.work().await;
    p.ordered += 1;
    Ok(())
}

async fn file_it(p: &mut Purchase) -> Result<(), TaskError> {
    p.work().await;
    p.filed += 1;
    Ok(())
}

// ----- processes: a diverging complex gateway --------------------------------------

#[derive(Clone, Debug, Default, PartialEq, ProcessData)]
struct Pick {
    a: bool,
    b: bool,
    a_ran: bool,
    b_ran: bool,
    c_ran: bool,
}

async fn run_a(p: &mut Pick) -> Result<(), TaskError> {
    jitter().await;
    p.a_ran = true;
    Ok(())
}

async fn run_b(p: &mut Pick) -> Result<(), TaskError> {
    jitter().await;
    p.b_ran = true;
    Ok(())
}

async fn run_c(p: &mut Pick) -> Result<(), TaskError> {
    jitter().await;
    p.c_ran = true;
    Ok(())
}

// ----- running ---------------------------------------------------------------------

/// Run `scenario(engine, i)` for `i` in `0..runs`, all at once on one engine; re-raise
/// the first failure; then shut the engine down and check no instance loop is left.
async fn repeat<F, Fut>(runs: usize, scenario: F)
where
    F: Fn(Engine, usize) -> Fut,
    Fut: Future<Output = ()> + Send + 'static,
{
    let engine = Engine::with_config(thresh::EngineConfig::fail_fast());
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

/// Start an instance and wait for its end.
async fn run<D: ProcessData + std::fmt::Debug>(
    engine: &Engine,
    process: &'static Process<D>,
    data: D,
) -> (Outcome<D>, History) {
    finish(&engine.start(process, data).await.unwrap()).await
}

/// Wait for an instance's end (failing on a hang); its outcome and well-formed history.
async fn finish<D: Clone + std::fmt::Debug>(handle: &InstanceHandle<D>) -> (Outcome<D>, History) {
    let outcome = tokio::time::timeout(HANG, handle.outcome())
        .await
        .unwrap_or_else(|_| panic!("instance {} hung", handle.id()));
    let history = handle.history().await;
    check_tracks(&history);
    (outcome, history)
}

/// Poll a running instance's history until `ready` holds; fail if the instance ends
/// first or never gets there.
async fn until<D: Clone>(
    handle: &InstanceHandle<D>,
    what: &str,
    ready: impl Fn(&History) -> bool,
) -> History {
    let poll = async {
        loop {
            let finished = handle.is_finished();
            let history = handle.history().await;
            if ready(&history) {
                return history;
            }
            assert!(!finished, "the instance ended before {what}\n{history}");
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
    };
    tokio::time::timeout(HANG, poll)
        .await
        .unwrap_or_else(|_| panic!("never: {what}"))
}

fn terminal(what: &Happening) -> bool {
    matches!(
        what,
        Happening::Ended
            | Happening::Merged
            | Happening::Consumed
            | Happening::Terminated
            | Happening::Cancelled
    )
}

/// Every track ends with exactly one terminal step, and nothing follows it.
fn check_tracks(history: &History) {
    let mut ids: Vec<TrackId> = history.steps().iter().map(|s| s.track).collect();
    ids.sort_unstable();
    ids.dedup();
    for id in ids {
        let steps: Vec<_> = history.steps().iter().filter(|s| s.track == id).collect();
        let terminals = steps.iter().filter(|s| terminal(&s.what)).count();
        assert!(
            terminals == 1 && terminal(&steps.last().expect("a step").what),
            "track {id} must end with exactly one terminal step\n{history}"
        );
    }
}

#[track_caller]
fn completed<D: std::fmt::Debug>(outcome: Outcome<D>, history: &History) -> D {
    match outcome {
        Outcome::Completed(data) => data,
        other => panic!("expected Completed, got {other:?}\n{history}"),
    }
}

#[track_caller]
fn failed<D: std::fmt::Debug>(outcome: Outcome<D>, history: &History) -> InstanceError {
    match outcome {
        Outcome::Failed(error) => error,
        other => panic!("expected Failed, got {other:?}\n{history}"),
    }
}

fn completions(history: &History, task: &str) -> usize {
    history.count(task, |h| matches!(h, Happening::Completed { .. }))
}

/// The steps at `node`: (index in the history, track, what).
fn steps_at(history: &History, node: &str) -> Vec<(usize, TrackId, Happening)> {
    history
        .steps()
        .iter()
        .enumerate()
        .filter(|(_, s)| s.node == node)
        .map(|(i, s)| (i, s.track, s.what.clone()))
        .collect()
}

/// The task `track` completed last before history index `before`: which branch a
/// token at the join came from.
#[track_caller]
fn source(history: &History, track: TrackId, before: usize) -> &'static str {
    history.steps()[..before]
        .iter()
        .rev()
        .find(|s| s.track == track && matches!(s.what, Happening::Completed { .. }))
        .map(|s| s.node)
        .unwrap_or_else(|| panic!("{track} completed no task before step {before}\n{history}"))
}

/// How the join fired, read from the history.
#[derive(Debug, PartialEq)]
struct Firing {
    /// The branches whose tokens were at the join when it fired, in arrival order;
    /// the last one fired.
    arrived: Vec<&'static str>,
    /// Branches whose tokens reached the join after it fired.
    consumed: Vec<&'static str>,
    /// Where the fired token went (the targets of the outgoing flows taken).
    routed: Vec<&'static str>,
    /// History indices of the `Fired` step and of each `Consumed` step.
    fired_at: usize,
    consumed_at: Vec<usize>,
}

/// Check that `join` fired exactly once, at the first arrival after which `rule` (over
/// the branches arrived so far) holds: every arrival before it parked (`Waiting`) and
/// the rule did not hold yet; the completing arrival fired (last-in) and every earlier
/// one merged; the fired token went on to `order`; every arrival after it was consumed
/// without waiting. Returns the firing.
#[track_caller]
fn check_fired(history: &History, join: &str, rule: impl Fn(&[&str]) -> bool) -> Firing {
    let firing = check_fired_to(history, join, rule);
    assert_eq!(firing.routed, ["order"], "{history}");
    firing
}

/// [`check_fired`], wherever the fired token went.
#[track_caller]
fn check_fired_to(history: &History, join: &str, rule: impl Fn(&[&str]) -> bool) -> Firing {
    let steps = steps_at(history, join);
    let fail = |why: &str| -> ! { panic!("`{join}`: {why}\n{history}") };
    let waiting: Vec<(usize, TrackId)> = steps
        .iter()
        .take_while(|(_, _, w)| *w == Happening::Waiting)
        .map(|(i, t, _)| (*i, *t))
        .collect();
    let k = waiting.len();
    let mut rest = steps[k..].iter();
    let mut merged: Vec<TrackId> = Vec::new();
    let (fired_at, fired_track) = loop {
        match rest.next() {
            Some((_, t, Happening::Merged)) => merged.push(*t),
            Some((i, t, Happening::Fired)) => break (*i, *t),
            other => fail(&format!("expected Merged or Fired, found {other:?}")),
        }
    };
    // The arrival that completes the rule carries on: it fires on the spot without
    // waiting (or, decided at the end of its loop step, it is the last to have waited).
    let completing_waited = waiting.last().is_some_and(|(_, t)| *t == fired_track);
    if !completing_waited && waiting.iter().any(|(_, t)| *t == fired_track) {
        fail("the arrival that completed the rule must carry on (last-in)");
    }
    let before: &[(usize, TrackId)] = if completing_waited {
        &waiting[..k - 1]
    } else {
        &waiting
    };
    merged.sort_unstable();
    let mut earlier: Vec<TrackId> = before.iter().map(|(_, t)| *t).collect();
    earlier.sort_unstable();
    if merged != earlier {
        fail("every earlier arrival must be merged");
    }
    let mut arrived: Vec<&'static str> =
        before.iter().map(|&(i, t)| source(history, t, i)).collect();
    for n in 0..=arrived.len() {
        if rule(&arrived[..n]) {
            fail(&format!(
                "the rule held after {:?} already, yet the join waited",
                &arrived[..n]
            ));
        }
    }
    arrived.push(source(history, fired_track, fired_at));
    if !rule(&arrived) {
        fail(&format!(
            "the join fired on {arrived:?}, where the rule does not hold"
        ));
    }
    // The fired token leaves the gateway along the outgoing flows it takes.
    let routed = match rest.next() {
        Some((_, t, Happening::Routed { to })) if *t == fired_track => to.to_vec(),
        other => fail(&format!(
            "expected the fired token routed on, found {other:?}"
        )),
    };
    // One track forked at the gateway for each further flow taken.
    let rest: Vec<_> = rest.collect();
    let forks = routed.len().saturating_sub(1);
    for (_, _, what) in &rest[..forks.min(rest.len())] {
        if *what != (Happening::Spawned { from: fired_track }) {
            fail(&format!(
                "expected {forks} tracks forked from the fired one, found {what:?}"
            ));
        }
    }
    let mut consumed = Vec::new();
    let mut consumed_at = Vec::new();
    for (i, t, what) in rest.into_iter().skip(forks) {
        if *what != Happening::Consumed {
            fail(&format!(
                "after firing, every arrival is consumed; found {what:?}"
            ));
        }
        if waiting.iter().any(|(_, w)| w == t) {
            fail("a consumed token had waited before the join fired");
        }
        consumed.push(source(history, *t, *i));
        consumed_at.push(*i);
    }
    Firing {
        arrived,
        consumed,
        routed,
        fired_at,
        consumed_at,
    }
}

/// Check that the instance failed at `join` in the very step that made it fail: the
/// join never fired; after the later of `trigger` steps (the first arrival at the join,
/// the deaths of the branches named in `deaths`, or every arrival when `all_arrivals`)
/// only `Cancelled` steps follow; and `order` never started.
#[track_caller]
fn check_failed_at_once(history: &History, join: &str, deaths: &[&str], all_arrivals: bool) {
    let steps = steps_at(history, join);
    assert!(
        steps
            .iter()
            .all(|(_, _, w)| matches!(w, Happening::Waiting | Happening::Cancelled)),
        "`{join}` must neither fire nor merge nor consume\n{history}"
    );
    let arrivals: Vec<usize> = steps
        .iter()
        .filter(|(_, _, w)| *w == Happening::Waiting)
        .map(|(i, _, _)| *i)
        .collect();
    assert!(!arrivals.is_empty(), "nothing reached `{join}`\n{history}");
    let mut trigger = if all_arrivals {
        *arrivals.last().expect("non-empty")
    } else {
        arrivals[0]
    };
    for death in deaths {
        let (i, _, _) = steps_at(history, death)
            .into_iter()
            .find(|(_, _, w)| *w == Happening::Ended)
            .unwrap_or_else(|| panic!("no token ended at `{death}`\n{history}"));
        trigger = trigger.max(i);
    }
    // The loop decides when the tokens of the deciding step have come to rest (other
    // tokens of that step may still start or finish work first), then cancels every
    // live token: the history ends in their `Cancelled` steps.
    let after = &history.steps()[trigger + 1..];
    let tail = after
        .iter()
        .rev()
        .take_while(|s| s.what == Happening::Cancelled)
        .count();
    assert!(
        tail > 0 && after[..after.len() - tail].iter().all(|s| s.what != Happening::Cancelled),
        "the instance must fail once the deciding step (step {trigger}) settles, cancelling the tokens still live\n{history}"
    );
    assert_eq!(
        history.count("order", |h| *h == Happening::TaskStarted),
        0,
        "nothing runs after a failed join\n{history}"
    );
}

fn sorted(mut names: Vec<&'static str>) -> Vec<&'static str> {
    names.sort_unstable();
    names
}

// ----- processes used by several modules --------------------------------------

process! {
    /// 2 of 3, the CFO's among them.
    CFO_REQUIRED: Purchase {
        start requested;
        parallel ask;
        task manager = approve_manager;
        task cfo = approve_cfo;
        task legal = approve_legal;
        complex approved: activate(count = 2, require = [cfo]);
        task order = place_order;
        end done;

        requested -> ask -> manager, cfo, legal;
        manager, cfo, legal -> approved -> order -> done;
    }
}
