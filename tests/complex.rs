//! The complex gateway at run time (ADR-005 §2.11): a converging complex gateway fires
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

// ----- processes: three approvers into one complex join ----------------------------

process! {
    /// 1 of 3: the discriminator.
    DISCRIMINATOR: Purchase {
        start requested;
        parallel ask;
        task manager = approve_manager;
        task cfo = approve_cfo;
        task legal = approve_legal;
        complex approved: activate(count = 1);
        task order = place_order;
        end done;

        requested -> ask -> manager, cfo, legal;
        manager, cfo, legal -> approved -> order -> done;
    }

    /// 2 of 3: a partial join.
    PARTIAL: Purchase {
        start requested;
        parallel ask;
        task manager = approve_manager;
        task cfo = approve_cfo;
        task legal = approve_legal;
        complex approved: activate(count = 2);
        task order = place_order;
        end done;

        requested -> ask -> manager, cfo, legal;
        manager, cfo, legal -> approved -> order -> done;
    }

    /// 3 of 3: N = M, a parallel join by another name.
    ALL: Purchase {
        start requested;
        parallel ask;
        task manager = approve_manager;
        task cfo = approve_cfo;
        task legal = approve_legal;
        complex approved: activate(count = 3);
        task order = place_order;
        end done;

        requested -> ask -> manager, cfo, legal;
        manager, cfo, legal -> approved -> order -> done;
    }

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

    /// 2 of 3 with the CFO; when urgent, the CFO alone.
    URGENT: Purchase {
        start requested;
        parallel ask;
        task manager = approve_manager;
        task cfo = approve_cfo;
        task legal = approve_legal;
        complex approved: activate(count = 2, require = [cfo])
                        | activate(count = 1, require = [cfo], when = |p| p.urgent);
        task order = place_order;
        end done;

        requested -> ask -> manager, cfo, legal;
        manager, cfo, legal -> approved -> order -> done;
    }

    /// Any one arrival, once legal has approved: the guard reads data a branch writes.
    LEGAL_DECIDES: Purchase {
        start requested;
        parallel ask;
        task manager = approve_manager;
        task cfo = approve_cfo;
        task legal = approve_legal;
        complex approved: activate(count = 1, when = |p| p.legal_ok);
        task order = place_order;
        end done;

        requested -> ask -> manager, cfo, legal;
        manager, cfo, legal -> approved -> order -> done;
    }
}

process! {
    /// 2 of 3, then an inclusive-style split on what the arrivals wrote.
    JOIN_AND_SPLIT: Purchase {
        start requested;
        parallel ask;
        task manager = approve_manager;
        task cfo = approve_cfo;
        task legal = approve_legal;
        complex approved: activate(count = 2);
        task order = place_order;
        task file = file_it;
        end done;
        end filed;

        requested -> ask -> manager, cfo, legal;
        manager, cfo, legal -> approved;
        approved -> order when |p| p.cfo_ok;
        approved -> file when |p| p.legal_ok;
        order -> done;
        file -> filed;
    }

    /// The manager's and legal's tokens share one incoming flow (through the exclusive
    /// merge `desk`); 2 of the 2 flows: the CFO's and one from the desk.
    FUNNEL: Purchase {
        start requested;
        parallel ask;
        task manager = approve_manager;
        task legal = approve_legal;
        exclusive desk;
        task cfo = approve_cfo;
        complex approved: activate(count = 2);
        task order = place_order;
        end done;

        requested -> ask -> manager, legal, cfo;
        manager, legal -> desk -> approved;
        cfo -> approved;
        approved -> order -> done;
    }

    /// The activation condition panics when it is evaluated (not urgent).
    GUARD_PANICS: Purchase {
        start requested;
        parallel ask;
        task manager = approve_manager;
        task cfo = approve_cfo;
        task legal = approve_legal;
        complex approved: activate(count = 1, when = |p| p.urgent || panic!("the guard exploded"));
        task order = place_order;
        end done;

        requested -> ask -> manager, cfo, legal;
        manager, cfo, legal -> approved -> order -> done;
    }
}

// ----- processes: the CFO's and legal's branches may end before the join -----------

process! {
    /// 2 of 3 with the CFO, whose branch may end at `cfo_declined`.
    DECLINE_REQUIRED: Purchase {
        start requested;
        parallel ask;
        task manager = approve_manager;
        task cfo_review = review_cfo;
        exclusive cfo_decides;
        task cfo = approve_cfo;
        end cfo_declined;
        task legal_review = review_legal;
        exclusive legal_decides;
        task legal = approve_legal;
        end legal_declined;
        complex approved: activate(count = 2, require = [cfo]);
        task order = place_order;
        end done;

        requested -> ask -> manager, cfo_review, legal_review;
        cfo_review -> cfo_decides;
        cfo_decides -> cfo when |p| !p.cfo_declines;
        cfo_decides -> cfo_declined else;
        legal_review -> legal_decides;
        legal_decides -> legal when |p| !p.legal_declines;
        legal_decides -> legal_declined else;
        manager, cfo, legal -> approved -> order -> done;
    }

    /// 2 of 3, any two; the CFO's and legal's branches may end early.
    DECLINE_COUNT: Purchase {
        start requested;
        parallel ask;
        task manager = approve_manager;
        task cfo_review = review_cfo;
        exclusive cfo_decides;
        task cfo = approve_cfo;
        end cfo_declined;
        task legal_review = review_legal;
        exclusive legal_decides;
        task legal = approve_legal;
        end legal_declined;
        complex approved: activate(count = 2);
        task order = place_order;
        end done;

        requested -> ask -> manager, cfo_review, legal_review;
        cfo_review -> cfo_decides;
        cfo_decides -> cfo when |p| !p.cfo_declines;
        cfo_decides -> cfo_declined else;
        legal_review -> legal_decides;
        legal_decides -> legal when |p| !p.legal_declines;
        legal_decides -> legal_declined else;
        manager, cfo, legal -> approved -> order -> done;
    }

    /// 2 of 3, only when urgent; legal's branch may end early.
    DECLINE_GUARDED: Purchase {
        start requested;
        parallel ask;
        task manager = approve_manager;
        task cfo_review = review_cfo;
        exclusive cfo_decides;
        task cfo = approve_cfo;
        end cfo_declined;
        task legal_review = review_legal;
        exclusive legal_decides;
        task legal = approve_legal;
        end legal_declined;
        complex approved: activate(count = 2, when = |p| p.urgent);
        task order = place_order;
        end done;

        requested -> ask -> manager, cfo_review, legal_review;
        cfo_review -> cfo_decides;
        cfo_decides -> cfo when |p| !p.cfo_declines;
        cfo_decides -> cfo_declined else;
        legal_review -> legal_decides;
        legal_decides -> legal when |p| !p.legal_declines;
        legal_decides -> legal_declined else;
        manager, cfo, legal -> approved -> order -> done;
    }
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

process! {
    /// One incoming flow: the complex gateway only splits, like an inclusive one.
    SPLIT: Pick {
        start s;
        complex pick;
        task a = run_a;
        task b = run_b;
        task c = run_c;
        inclusive merge;
        end done;

        s -> pick;
        pick -> a when |p| p.a;
        pick -> b when |p| p.b;
        pick -> c else;
        a, b, c -> merge -> done;
    }

    SPLIT_NO_DEFAULT: Pick {
        start s;
        complex pick;
        task a = run_a;
        task b = run_b;
        inclusive merge;
        end done;

        s -> pick;
        pick -> a when |p| p.a;
        pick -> b when |p| p.b;
        a, b -> merge -> done;
    }
}

// ----- running ---------------------------------------------------------------------

/// Run `scenario(engine, i)` for `i` in `0..runs`, all at once on one engine; re-raise
/// the first failure; then shut the engine down and check no instance loop is left.
async fn repeat<F, Fut>(runs: usize, scenario: F)
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

/// Start an instance and wait for its end.
async fn run<D: ProcessData + std::fmt::Debug>(
    engine: &Engine,
    process: &'static Process<D>,
    data: D,
) -> (Outcome<D>, History) {
    finish(&engine.start(process, data)).await
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
        Some((_, t, Happening::Routed { to })) if *t == fired_track => to.clone(),
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

// ----- N of M ----------------------------------------------------------------------

/// 1 of 3: fires once, on the first arrival; the other two are consumed; the task
/// after the join runs exactly once.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn discriminator_fires_once_on_the_first_arrival() {
    repeat(RUNS, |engine, _| async move {
        let (outcome, history) = run(&engine, &DISCRIMINATOR, Purchase::new()).await;
        let firing = check_fired(&history, "approved", |arrived| !arrived.is_empty());
        let data = completed(outcome, &history);
        assert_eq!(firing.arrived.len(), 1, "{history}");
        assert_eq!(firing.consumed.len(), 2, "{history}");
        assert_eq!(
            sorted([firing.arrived.clone(), firing.consumed.clone()].concat()),
            ["cfo", "legal", "manager"]
        );
        assert_eq!(history.fired("approved"), 1);
        assert_eq!(history.count("approved", |h| *h == Happening::Merged), 0);
        assert_eq!(completions(&history, "order"), 1, "{history}");
        assert_eq!(data.ordered, 1);
        assert!(data.manager_ok && data.cfo_ok && data.legal_ok);
        assert_eq!(history.ended_at(), ["done"]);
    })
    .await;
}

/// 2 of 3: fires on the second arrival, which carries on; the first is merged, the
/// third consumed.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn partial_join_fires_on_the_second_arrival() {
    repeat(RUNS, |engine, _| async move {
        let (outcome, history) = run(&engine, &PARTIAL, Purchase::new()).await;
        let firing = check_fired(&history, "approved", |arrived| arrived.len() >= 2);
        let data = completed(outcome, &history);
        assert_eq!(firing.arrived.len(), 2, "{history}");
        assert_eq!(firing.consumed.len(), 1, "{history}");
        assert_eq!(history.fired("approved"), 1);
        assert_eq!(history.count("approved", |h| *h == Happening::Merged), 1);
        assert_eq!(completions(&history, "order"), 1, "{history}");
        assert_eq!(data.ordered, 1);
    })
    .await;
}

/// 3 of 3: waits for every branch, fires on the last, consumes nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn all_of_three_waits_for_every_branch() {
    repeat(RUNS, |engine, _| async move {
        let (outcome, history) = run(&engine, &ALL, Purchase::new()).await;
        let firing = check_fired(&history, "approved", |arrived| arrived.len() == 3);
        let data = completed(outcome, &history);
        assert!(firing.consumed.is_empty(), "{history}");
        assert_eq!(history.count("approved", |h| *h == Happening::Merged), 2);
        assert_eq!(completions(&history, "order"), 1, "{history}");
        assert_eq!(data.ordered, 1);
        assert!(data.manager_ok && data.cfo_ok && data.legal_ok);
    })
    .await;
}

/// A join that also splits: after 2 of 3 the fired token takes every outgoing flow
/// whose condition holds on the data the arrivals committed — `order` when the CFO was
/// among them, `file` when legal was — and the third arrival is consumed.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn join_that_splits_takes_every_true_flow() {
    repeat(RUNS, |engine, _| async move {
        let (outcome, history) = run(&engine, &JOIN_AND_SPLIT, Purchase::new()).await;
        let firing = check_fired_to(&history, "approved", |arrived| arrived.len() >= 2);
        let data = completed(outcome, &history);
        let mut expected = Vec::new();
        if firing.arrived.contains(&"cfo") {
            expected.push("order");
        }
        if firing.arrived.contains(&"legal") {
            expected.push("file");
        }
        assert_eq!(firing.routed, expected, "{history}");
        assert_eq!(firing.consumed.len(), 1, "{history}");
        assert_eq!(
            (data.ordered, data.filed),
            (
                u32::from(expected.contains(&"order")),
                u32::from(expected.contains(&"file"))
            )
        );
        let mut ends = history.ended_at();
        ends.sort_unstable();
        let mut want: Vec<&str> = expected
            .iter()
            .map(|t| if *t == "order" { "done" } else { "filed" })
            .collect();
        want.sort_unstable();
        assert_eq!(ends, want, "{history}");
    })
    .await;
}

/// Two tokens on one incoming flow: `count` counts flows, not tokens. The join fires
/// once the CFO's flow and the desk's flow both hold a token, taking one from each (the
/// later carries on); the other desk token is consumed — drained from the queue if it
/// was already waiting, or on arrival if it comes later.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn two_tokens_on_one_flow_count_once() {
    repeat(RUNS, |engine, _| async move {
        let (outcome, history) = run(&engine, &FUNNEL, Purchase::new()).await;
        let data = completed(outcome, &history);
        assert_eq!(data.ordered, 1);
        let steps = steps_at(&history, "approved");
        let name = |i: usize, t: TrackId| source(&history, t, i);
        let waiting: Vec<TrackId> = steps
            .iter()
            .filter(|(_, _, w)| *w == Happening::Waiting)
            .map(|(_, t, _)| *t)
            .collect();
        let pick = |what: Happening| -> Vec<TrackId> {
            steps
                .iter()
                .filter(|(_, _, w)| *w == what)
                .map(|(_, t, _)| *t)
                .collect()
        };
        // Arrivals in order: those that waited, then the one that completed the rule
        // (it fires on the spot), then any that came after (consumed on arrival).
        let fired = pick(Happening::Fired);
        assert_eq!(fired.len(), 1, "{history}");
        let consumed = pick(Happening::Consumed);
        assert_eq!(consumed.len(), 1, "{history}");
        let (i, _, _) = steps
            .iter()
            .find(|(_, t, w)| *t == fired[0] && *w == Happening::Fired)
            .expect("fired");
        let cfo_fired = name(*i, fired[0]) == "cfo";
        if waiting.len() == 2 {
            assert!(
                cfo_fired,
                "two tokens waited, so they were the desk's\n{history}"
            );
            // The CFO came last: both desk tokens waited on one flow; the first merged
            // and the second, left on its flow when the join fired, was consumed.
            assert_eq!(waiting.len(), 2, "{history}");
            assert_eq!(pick(Happening::Merged), [waiting[0]], "{history}");
            assert_eq!(consumed, [waiting[1]], "{history}");
        } else {
            // The join fired as soon as both flows held a token; the third arrived
            // later and was consumed without waiting.
            assert_eq!(
                waiting.len(),
                1,
                "the join fires as soon as both flows hold a token\n{history}"
            );
            assert_eq!(pick(Happening::Merged), waiting, "{history}");
            assert!(!waiting.contains(&consumed[0]), "{history}");
        }
        assert_eq!(completions(&history, "order"), 1, "{history}");
    })
    .await;
}

// ----- required flows --------------------------------------------------------------

/// "The CFO must be one of the two", in whatever order the branches come: the join
/// fires exactly when the CFO and one other have arrived, never on the manager and
/// legal alone. (The first of the Go engine's flaky trio: the required gate.)
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn required_flow_must_be_among_the_arrivals() {
    repeat(RUNS, |engine, _| async move {
        let (outcome, history) = run(&engine, &CFO_REQUIRED, Purchase::new()).await;
        let firing = check_fired(&history, "approved", |arrived| {
            arrived.len() >= 2 && arrived.contains(&"cfo")
        });
        completed(outcome, &history);
        assert!(firing.arrived.contains(&"cfo"), "{history}");
        assert_eq!(firing.arrived.len() + firing.consumed.len(), 3, "{history}");
        assert_eq!(completions(&history, "order"), 1, "{history}");
    })
    .await;
}

/// The manager and legal arrive first: the join holds both; when the CFO arrives it
/// fires on all three, the CFO carrying on.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn required_flow_holds_the_join_until_it_arrives() {
    repeat(RUNS, |engine, i| async move {
        let gates = Gates::closed();
        let data = Purchase {
            gates: gates.clone(),
            ..Purchase::new()
        };
        let handle = engine.start(&CFO_REQUIRED, data);
        let (first, second) = [(MANAGER, LEGAL), (LEGAL, MANAGER)][i % 2];
        gates.release(first);
        if random() & 1 == 0 {
            tokio::task::yield_now().await;
        }
        gates.release(second);
        let held = until(&handle, "manager and legal wait at the join", |h| {
            h.count("approved", |w| *w == Happening::Waiting) == 2
        })
        .await;
        assert_eq!(
            held.fired("approved"),
            0,
            "two arrivals without the CFO must not fire the join\n{held}"
        );
        assert_eq!(held.count("cfo", |w| *w == Happening::TaskStarted), 1);
        assert_eq!(completions(&held, "cfo"), 0);
        gates.release(CFO);
        let (outcome, history) = finish(&handle).await;
        let firing = check_fired(&history, "approved", |arrived| {
            arrived.len() >= 2 && arrived.contains(&"cfo")
        });
        completed(outcome, &history);
        assert_eq!(firing.arrived.len(), 3, "{history}");
        assert_eq!(firing.arrived[2], "cfo", "{history}");
        assert!(firing.consumed.is_empty(), "{history}");
        assert_eq!(history.count("approved", |h| *h == Happening::Merged), 2);
        assert_eq!(completions(&history, "order"), 1, "{history}");
    })
    .await;
}

// ----- data-guarded triples --------------------------------------------------------

/// The CFO arrives alone: when urgent, the guarded triple (the CFO alone) fires at
/// once and the others are consumed; otherwise the join waits for a second approval.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn data_guard_chooses_the_triple() {
    for urgent in [true, false] {
        repeat(RUNS, move |engine, _| async move {
            let gates = Gates::closed();
            let data = Purchase {
                urgent,
                gates: gates.clone(),
                ..Purchase::new()
            };
            let handle = engine.start(&URGENT, data);
            gates.release(CFO);
            // Urgent, the CFO's arrival fires on the spot; otherwise it waits.
            let seen = until(&handle, "the CFO reaches the join", |h| {
                h.count("approved", |w| {
                    matches!(w, Happening::Waiting | Happening::Fired)
                }) == 1
            })
            .await;
            assert_eq!(
                seen.fired("approved"),
                usize::from(urgent),
                "urgent: {urgent}\n{seen}"
            );
            gates.release(MANAGER);
            until(&handle, "the join fires", |h| h.fired("approved") == 1).await;
            gates.release(LEGAL);
            let (outcome, history) = finish(&handle).await;
            let firing = check_fired(&history, "approved", |arrived| {
                arrived.contains(&"cfo") && (urgent || arrived.len() >= 2)
            });
            let data = completed(outcome, &history);
            if urgent {
                assert_eq!(firing.arrived, ["cfo"], "{history}");
                assert_eq!(sorted(firing.consumed), ["legal", "manager"], "{history}");
            } else {
                assert_eq!(firing.arrived, ["cfo", "manager"], "{history}");
                assert_eq!(firing.consumed, ["legal"], "{history}");
            }
            assert_eq!(data.ordered, 1);
        })
        .await;
    }
}

/// A guard over data a branch writes: `count = 1, when = legal_ok` fires exactly on
/// legal's arrival (its commit and arrival are one loop step), whatever came before.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn data_guard_reads_data_a_branch_wrote() {
    repeat(RUNS, |engine, _| async move {
        let (outcome, history) = run(&engine, &LEGAL_DECIDES, Purchase::new()).await;
        let firing = check_fired(&history, "approved", |arrived| arrived.contains(&"legal"));
        completed(outcome, &history);
        assert_eq!(firing.arrived.last(), Some(&"legal"), "{history}");
        assert_eq!(completions(&history, "order"), 1, "{history}");
    })
    .await;
}

// ----- abort and exhaustion --------------------------------------------------------

/// The CFO declines: its branch ends at `cfo_declined` instead of reaching the join,
/// so `require = [cfo]` can never hold: the instance fails with ActivationUnsatisfiable
/// in the step where that became certain, and `order` never runs. The control run,
/// where the CFO approves and legal declines, completes. (The second of the Go
/// engine's flaky trio: abort on death.)
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn abort_when_a_required_branch_dies() {
    repeat(RUNS, |engine, _| async move {
        let data = Purchase {
            cfo_declines: true,
            ..Purchase::new()
        };
        let (outcome, history) = run(&engine, &DECLINE_REQUIRED, data).await;
        assert_eq!(
            failed(outcome, &history),
            InstanceError::ActivationUnsatisfiable { node: "approved" },
            "{history}"
        );
        check_failed_at_once(&history, "approved", &["cfo_declined"], false);
        assert_eq!(history.count("cfo", |h| *h == Happening::TaskStarted), 0);
    })
    .await;
    repeat(RUNS, |engine, _| async move {
        let data = Purchase {
            legal_declines: true,
            ..Purchase::new()
        };
        let (outcome, history) = run(&engine, &DECLINE_REQUIRED, data).await;
        let firing = check_fired(&history, "approved", |arrived| {
            arrived.len() >= 2 && arrived.contains(&"cfo")
        });
        completed(outcome, &history);
        assert_eq!(sorted(firing.arrived), ["cfo", "manager"], "{history}");
        assert_eq!(completions(&history, "order"), 1, "{history}");
    })
    .await;
}

/// 2 of 3, and both the CFO and legal decline: once both are gone and the manager has
/// arrived, the count can never be reached: ActivationUnsatisfiable. With one decline
/// the other two make the count and the instance completes.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn abort_when_the_count_becomes_unreachable() {
    repeat(RUNS, |engine, _| async move {
        let data = Purchase {
            cfo_declines: true,
            legal_declines: true,
            ..Purchase::new()
        };
        let (outcome, history) = run(&engine, &DECLINE_COUNT, data).await;
        assert_eq!(
            failed(outcome, &history),
            InstanceError::ActivationUnsatisfiable { node: "approved" },
            "{history}"
        );
        check_failed_at_once(
            &history,
            "approved",
            &["cfo_declined", "legal_declined"],
            false,
        );
    })
    .await;
    for cfo_declines in [true, false] {
        repeat(RUNS, move |engine, _| async move {
            let data = Purchase {
                cfo_declines,
                legal_declines: !cfo_declines,
                ..Purchase::new()
            };
            let (outcome, history) = run(&engine, &DECLINE_COUNT, data).await;
            let firing = check_fired(&history, "approved", |arrived| arrived.len() >= 2);
            completed(outcome, &history);
            let other = if cfo_declines { "legal" } else { "cfo" };
            assert_eq!(sorted(firing.arrived), sorted(vec!["manager", other]));
            assert!(firing.consumed.is_empty(), "{history}");
        })
        .await;
    }
}

/// `count = 2, when = urgent` with urgent false: the count is met but the condition
/// never holds; when nothing more can arrive (the last arrival, or legal's branch
/// ending after the others arrived) the instance fails with ArrivalsExhausted. When
/// urgent, it fires on the second arrival.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn exhausted_when_no_condition_holds() {
    for legal_declines in [false, true] {
        repeat(RUNS, move |engine, _| async move {
            let data = Purchase {
                legal_declines,
                ..Purchase::new()
            };
            let (outcome, history) = run(&engine, &DECLINE_GUARDED, data).await;
            assert_eq!(
                failed(outcome, &history),
                InstanceError::ArrivalsExhausted { node: "approved" },
                "{history}"
            );
            let deaths: &[&str] = if legal_declines {
                &["legal_declined"]
            } else {
                &[]
            };
            check_failed_at_once(&history, "approved", deaths, true);
            assert_eq!(
                history.count("approved", |h| *h == Happening::Waiting),
                if legal_declines { 2 } else { 3 },
                "every branch that could arrive did\n{history}"
            );
        })
        .await;
    }
    repeat(RUNS, |engine, _| async move {
        let data = Purchase {
            urgent: true,
            ..Purchase::new()
        };
        let (outcome, history) = run(&engine, &DECLINE_GUARDED, data).await;
        let firing = check_fired(&history, "approved", |arrived| arrived.len() >= 2);
        completed(outcome, &history);
        assert_eq!(firing.consumed.len(), 1, "{history}");
    })
    .await;
}

/// Silence the panic messages of the activation condition that panics on purpose;
/// every other panic (a failing assertion) still prints.
fn quiet_guard_panics() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let default = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            let payload = info.payload();
            let message = payload
                .downcast_ref::<&str>()
                .copied()
                .or_else(|| payload.downcast_ref::<String>().map(String::as_str));
            if message != Some("the guard exploded") {
                default(info);
            }
        }));
    });
}

/// An activation condition that panics fails the instance with
/// ActivationConditionPanicked, carrying the message, at the first arrival (the first
/// time the triple's count is met and its condition is evaluated).
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn activation_condition_panic_fails_the_instance() {
    quiet_guard_panics();
    repeat(RUNS, |engine, _| async move {
        let (outcome, history) = run(&engine, &GUARD_PANICS, Purchase::new()).await;
        assert_eq!(
            failed(outcome, &history),
            InstanceError::ActivationConditionPanicked {
                node: "approved",
                message: "the guard exploded".into()
            },
            "{history}"
        );
        // The first arrival meets the count, so the guard runs on the spot and its
        // panic fails the instance: the arriving token is cancelled at the join.
        let at_join: Vec<_> = steps_at(&history, "approved")
            .into_iter()
            .map(|(_, _, w)| w)
            .collect();
        assert_eq!(at_join, [Happening::Cancelled], "{history}");
        assert_eq!(history.count("order", |h| *h == Happening::TaskStarted), 0);
        assert_eq!(
            history.steps().last().map(|s| &s.what),
            Some(&Happening::Cancelled)
        );
    })
    .await;
}

// ----- tail tokens -----------------------------------------------------------------

/// A discriminator fires on the CFO; the manager and legal are held until the task
/// after the join has completed, then arrive: both are consumed at the join (no
/// waiting, no second firing) and the instance still completes.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn tail_tokens_are_consumed_and_the_instance_completes() {
    for first in [MANAGER, CFO, LEGAL] {
        repeat(RUNS, move |engine, _| async move {
            let gates = Gates::closed();
            let data = Purchase {
                gates: gates.clone(),
                ..Purchase::new()
            };
            let handle = engine.start(&DISCRIMINATOR, data);
            gates.release(first);
            let before = until(&handle, "`order` completes", |h| {
                completions(h, "order") == 1
            })
            .await;
            assert_eq!(
                before.count("approved", |h| *h == Happening::Consumed),
                0,
                "{before}"
            );
            for who in [MANAGER, CFO, LEGAL] {
                if who != first {
                    gates.release(who);
                }
            }
            let (outcome, history) = finish(&handle).await;
            let firing = check_fired(&history, "approved", |arrived| !arrived.is_empty());
            let data = completed(outcome, &history);
            assert_eq!(
                firing.arrived,
                [["manager", "cfo", "legal"][first]],
                "{history}"
            );
            assert_eq!(firing.consumed.len(), 2, "{history}");
            let order_done = history
                .steps()
                .iter()
                .position(|s| s.node == "order" && matches!(s.what, Happening::Completed { .. }))
                .expect("order completed");
            assert!(
                firing.consumed_at.iter().all(|&c| c > order_done),
                "the tail arrived after `order`\n{history}"
            );
            assert!(firing.fired_at < order_done);
            assert_eq!(history.fired("approved"), 1);
            assert_eq!(completions(&history, "order"), 1);
            assert_eq!(data.ordered, 1);
            assert!(data.manager_ok && data.cfo_ok && data.legal_ok);
            assert_eq!(history.ended_at(), ["done"]);
        })
        .await;
    }
}

// ----- the instance fails, never completes -----------------------------------------

/// The third of the Go engine's flaky trio: the dying required branch races with the
/// arrivals (every handler yields exactly once, so the CFO's death and the others'
/// arrivals land in adjacent loop steps in any order). The outcome is always
/// Failed(ActivationUnsatisfiable), never Completed; every track still live when the
/// join aborts is cancelled; nothing runs after the join.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn abort_fails_the_instance_even_when_the_death_races_arrivals() {
    // The CFO's required branch dies; or, for a plain 2 of 3, the CFO's and legal's.
    for both_die in [false, true] {
        repeat(RUNS, move |engine, _| async move {
            let data = Purchase {
                cfo_declines: true,
                legal_declines: both_die,
                race: true,
                ..Purchase::new()
            };
            let process = if both_die {
                &DECLINE_COUNT
            } else {
                &DECLINE_REQUIRED
            };
            let (outcome, history) = run(&engine, process, data).await;
            match &outcome {
                Outcome::Failed(InstanceError::ActivationUnsatisfiable { node: "approved" }) => {}
                other => {
                    panic!("expected Failed(ActivationUnsatisfiable), got {other:?}\n{history}")
                }
            }
            let deaths: &[&str] = if both_die {
                &["cfo_declined", "legal_declined"]
            } else {
                &["cfo_declined"]
            };
            check_failed_at_once(&history, "approved", deaths, false);
            // Every track that had not ended was cancelled, once.
            let live: Vec<TrackId> = history
                .steps()
                .iter()
                .filter(|s| s.what == Happening::Cancelled)
                .map(|s| s.track)
                .collect();
            assert!(!live.is_empty(), "{history}");
            assert_eq!(
                history.count("approved", |h| *h == Happening::Waiting),
                history.count("approved", |h| *h == Happening::Cancelled),
                "every token waiting at the join was cancelled\n{history}"
            );
        })
        .await;
    }
}

/// Cancelling an instance while a token waits at the complex join: Cancelled, the
/// join never fires, the waiting token and the held branches are cancelled.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn cancel_while_waiting_at_the_join() {
    repeat(RUNS, |engine, _| async move {
        let gates = Gates::closed();
        let data = Purchase {
            gates: gates.clone(),
            ..Purchase::new()
        };
        let handle = engine.start(&CFO_REQUIRED, data);
        gates.release(MANAGER);
        until(&handle, "the manager waits at the join", |h| {
            h.count("approved", |w| *w == Happening::Waiting) == 1
        })
        .await;
        handle.cancel();
        let (outcome, history) = finish(&handle).await;
        assert!(
            matches!(outcome, Outcome::Cancelled(_)),
            "{outcome:?}\n{history}"
        );
        assert_eq!(history.fired("approved"), 0, "{history}");
        assert_eq!(
            history.count("approved", |h| *h == Happening::Cancelled),
            1,
            "{history}"
        );
        for task in ["cfo", "legal"] {
            assert_eq!(
                history.count(task, |h| *h == Happening::Cancelled),
                1,
                "{history}"
            );
        }
        assert_eq!(history.count("order", |h| *h == Happening::TaskStarted), 0);
    })
    .await;
}

// ----- diverging -------------------------------------------------------------------

/// A complex gateway with one incoming flow splits like an inclusive gateway: every
/// true flow is taken, the default only when none is, and with no default and no true
/// condition the instance fails with NoFlowTaken.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn diverging_complex_splits_like_an_inclusive_gateway() {
    for (a, b) in [(true, true), (true, false), (false, true), (false, false)] {
        repeat(RUNS, move |engine, _| async move {
            let (outcome, history) = run(
                &engine,
                &SPLIT,
                Pick {
                    a,
                    b,
                    ..Pick::default()
                },
            )
            .await;
            let data = completed(outcome, &history);
            let mut expected = Vec::new();
            if a {
                expected.push("a");
            }
            if b {
                expected.push("b");
            }
            if expected.is_empty() {
                expected.push("c");
            }
            let routed: Vec<Vec<&str>> = steps_at(&history, "pick")
                .into_iter()
                .filter_map(|(_, _, w)| match w {
                    Happening::Routed { to } => Some(to),
                    _ => None,
                })
                .collect();
            assert_eq!(routed, [expected.clone()], "{history}");
            assert_eq!(sorted(history.completed_tasks()), expected, "{history}");
            assert_eq!((data.a_ran, data.b_ran, data.c_ran), (a, b, !a && !b));
            assert_eq!(history.fired("merge"), 1, "{history}");
            assert_eq!(history.ended_at(), ["done"]);
        })
        .await;
        repeat(RUNS, move |engine, _| async move {
            let (outcome, history) = run(
                &engine,
                &SPLIT_NO_DEFAULT,
                Pick {
                    a,
                    b,
                    ..Pick::default()
                },
            )
            .await;
            if a || b {
                let data = completed(outcome, &history);
                assert_eq!((data.a_ran, data.b_ran), (a, b));
            } else {
                assert_eq!(
                    failed(outcome, &history),
                    InstanceError::NoFlowTaken { node: "pick" },
                    "{history}"
                );
                assert!(history.completed_tasks().is_empty(), "{history}");
            }
        })
        .await;
    }
}
