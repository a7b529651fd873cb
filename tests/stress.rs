//! Load and races: many instances of one process that combines a parallel split and
//! join, an exclusive loop inside one branch and an inclusive split and OR-join inside
//! the other, with data-driven outcomes (completion or a failing task); cancels racing
//! with completion; and a shutdown racing with running instances. Each outcome is
//! predicted from the data, or, where a race decides it, checked for consistency
//! against the history.

#[macro_use]
mod common;

use std::time::Duration;

use common::*;
use thresh::{process, Engine, Happening, InstanceError, Outcome, ProcessData, TaskError};

#[derive(Clone, Debug, Default, PartialEq, ProcessData)]
struct Load {
    a: bool,
    b: bool,
    n: u32,
    limit: u32,
    /// `inc` fails on the round that would make `n` equal this (0: never).
    fail_at: u32,
    marks: u32,
}

impl Load {
    fn random(i: usize) -> Self {
        let r = random();
        let limit = 1 + (r % 6) as u32;
        Load {
            a: r >> 8 & 1 == 1,
            b: r >> 9 & 1 == 1,
            limit,
            fail_at: if i.is_multiple_of(5) {
                1 + (r >> 16) as u32 % limit
            } else {
                0
            },
            ..Load::default()
        }
    }

    /// The tasks of the inclusive side, in flow order.
    fn subset(&self) -> Vec<&'static str> {
        match (self.a, self.b) {
            (false, false) => vec!["c"],
            (a, b) => [(a, "a"), (b, "b")]
                .into_iter()
                .filter_map(|(on, t)| on.then_some(t))
                .collect(),
        }
    }
}

async fn step(_: &mut Load) -> Result<(), TaskError> {
    jitter().await;
    Ok(())
}

async fn mark(d: &mut Load) -> Result<(), TaskError> {
    jitter().await;
    d.marks += 1;
    Ok(())
}

async fn inc(d: &mut Load) -> Result<(), TaskError> {
    jitter().await;
    if d.n + 1 == d.fail_at {
        return Err(TaskError::new(format!("round {}", d.fail_at)));
    }
    d.n += 1;
    Ok(())
}

process! {
    LOAD: Load {
        start s;
        parallel fork;
        exclusive lx;
        task inc = inc;
        exclusive more;
        inclusive os;
        task a = step;
        task b = step;
        task c = step;
        inclusive oj;
        task mark = mark;
        parallel pj;
        end done;

        s -> fork -> lx, os;
        lx -> inc -> more;
        more -> lx when |d| d.n < d.limit;
        more -> pj else;
        os -> a when |d| d.a;
        os -> b when |d| d.b;
        os -> c else;
        a, b, c -> oj -> mark -> pj;
        pj -> done;
    }
}

/// The exact result of a run that was not interrupted.
fn check_uninterrupted(start: &Load, outcome: Outcome<Load>, h: &thresh::History) {
    if start.fail_at != 0 {
        assert_eq!(
            failed(outcome, h),
            InstanceError::TaskFailed {
                node: "inc",
                message: format!("round {}", start.fail_at),
            }
        );
        assert_eq!(completions(h, "inc"), start.fail_at as usize - 1, "{h}");
        assert_eq!(h.fired("pj"), 0);
        return;
    }
    let data = completed(outcome, h);
    assert_eq!(
        data,
        Load {
            n: start.limit,
            marks: 1,
            ..start.clone()
        }
    );
    assert_eq!(completions(h, "inc"), start.limit as usize);
    let subset = start.subset();
    assert_eq!(routes(h, "os"), std::slice::from_ref(&subset));
    for t in ["a", "b", "c"] {
        assert_eq!(completions(h, t), usize::from(subset.contains(&t)), "{h}");
    }
    assert_eq!(h.fired("oj"), 1, "{h}");
    assert_eq!(h.fired("pj"), 1, "{h}");
    assert_eq!(completions(h, "mark"), 1);
    assert_eq!(h.ended_at(), ["done"]);
}

/// The consistency of a run that a cancel or a shutdown stopped: the data holds
/// exactly what the completed tasks committed, and nothing reached the end.
fn check_interrupted(start: &Load, data: &Load, h: &thresh::History) {
    assert_eq!(data.n as usize, completions(h, "inc"), "{h}");
    assert_eq!(data.marks as usize, completions(h, "mark"), "{h}");
    assert!(data.n <= start.limit);
    assert!(h.ended_at().is_empty(), "{h}");
    assert!(
        h.steps().iter().any(|s| s.what == Happening::Cancelled),
        "{h}"
    );
}

/// 1000 instances at once on one engine; every outcome predicted from its data.
async fn load(engine: Engine, i: usize) {
    let start = Load::random(i);
    let (outcome, h) = run(&engine, &LOAD, start.clone()).await;
    check_uninterrupted(&start, outcome, &h);
}

#[tokio::test(start_paused = true)]
async fn load_current_thread() {
    repeat(1000, load).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn load_multi_thread() {
    repeat(1000, load).await;
}

/// A cancel after a random number of yields races with the instance: it ends either
/// completed (exactly as predicted) or cancelled (consistently), never otherwise.
async fn cancel_races_with_completion(engine: Engine, i: usize) {
    let mut start = Load::random(i);
    start.fail_at = 0;
    let handle = engine.start(&LOAD, start.clone()).await.unwrap();
    for _ in 0..random() % 24 {
        tokio::task::yield_now().await;
    }
    handle.cancel();
    let (outcome, h) = finish(&handle).await;
    match outcome {
        Outcome::Cancelled(data) => check_interrupted(&start, &data, &h),
        other => check_uninterrupted(&start, other, &h),
    }
}

/// A shutdown right after starting 100 instances: it returns `Ok`, and every instance
/// ended completed (as predicted) or cancelled (consistently).
async fn shutdown_races_with_running_instances(_: Engine, _: usize) {
    let engine = Engine::new();
    let mut runs = Vec::new();
    for i in 0..100 {
        let mut start = Load::random(i);
        start.fail_at = 0;
        runs.push((start.clone(), engine.start(&LOAD, start).await.unwrap()));
    }
    for _ in 0..random() % 16 {
        tokio::task::yield_now().await;
    }
    assert_eq!(
        tokio::time::timeout(HANG, engine.shutdown(Duration::from_secs(10)))
            .await
            .expect("shutdown hung"),
        Ok(())
    );
    assert_eq!(engine.running_instances(), 0);
    for (start, handle) in &runs {
        assert!(handle.is_finished());
        let (outcome, h) = finish(handle).await;
        match outcome {
            Outcome::Cancelled(data) => check_interrupted(start, &data, &h),
            other => check_uninterrupted(start, other, &h),
        }
    }
}

#[tokio::test(start_paused = true)]
async fn shutdown_races_with_running_instances_current_thread() {
    repeat(20, shutdown_races_with_running_instances).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn shutdown_races_with_running_instances_multi_thread() {
    repeat(20, shutdown_races_with_running_instances).await;
}

flavors!(cancel_races_with_completion);
