//! `task t = h: spawn;` — a handler that runs on its track's own tokio task from the
//! start (issue 13, fix 4). Without the marker a handler's first poll is on the
//! instance's loop, so two parallel branches whose handlers compute without awaiting
//! run one after the other; with it they run at once on a multi-thread runtime.
//!
//! Overlap is shown by a rendezvous, not by a clock: each handler checks in and then
//! waits (without awaiting) until the other has checked in too. Both pass only if both
//! run at the same time. The wait gives up after a bound (real time, only so that a
//! missing overlap fails the test instead of hanging it) and the handler then fails.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use thresh::{process, Engine, InstanceError, Outcome, ProcessData, TaskError};

#[derive(Clone, Debug, Default, ProcessData)]
struct Work {
    /// The rendezvous both branches check in at.
    meet: Meeting,
    /// How long a branch waits for the other before it gives up.
    patience_ms: u64,
    left: bool,
    right: bool,
}

/// A two-party rendezvous with a bound on the wait, shared by an instance's branches.
#[derive(Clone, Debug, Default)]
struct Meeting(Arc<AtomicUsize>);

impl PartialEq for Meeting {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

impl Meeting {
    /// Check in, then block this thread (no await) until the other party has too.
    fn meet(&self, patience: Duration) -> Result<(), TaskError> {
        self.0.fetch_add(1, Ordering::SeqCst);
        let deadline = Instant::now() + patience;
        while self.0.load(Ordering::SeqCst) < 2 {
            if Instant::now() > deadline {
                return Err(TaskError::new("the other branch never ran beside this one"));
            }
            std::thread::yield_now();
        }
        Ok(())
    }
}

process! {
    SPAWNED: Work {
        start s;
        parallel fork;
        task left = |w| async move {
            w.meet.meet(Duration::from_millis(w.patience_ms))?;
            w.left = true;
            Ok(())
        }: spawn;
        task right = |w| async move {
            w.meet.meet(Duration::from_millis(w.patience_ms))?;
            w.right = true;
            Ok(())
        }: spawn;
        parallel join;
        end e;
        s -> fork -> left, right -> join -> e;
    }
}

process! {
    /// The same without the marker: the first handler runs on the loop and holds it.
    INLINE: Work {
        start s;
        parallel fork;
        task left = |w| async move {
            w.meet.meet(Duration::from_millis(w.patience_ms))?;
            w.left = true;
            Ok(())
        };
        task right = |w| async move {
            w.meet.meet(Duration::from_millis(w.patience_ms))?;
            w.right = true;
            Ok(())
        };
        parallel join;
        end e;
        s -> fork -> left, right -> join -> e;
    }
}

process! {
    /// `spawn` beside `multi` on a task that merges two paths.
    BOTH_MARKERS: Work {
        start s;
        parallel fork;
        task a = |_w| async move { Ok(()) };
        task b = |_w| async move { Ok(()) };
        task twice = |w| async move { w.left = true; Ok(()) }: multi | spawn;
        end e;
        s -> fork -> a, b -> twice -> e;
    }
}

fn work(patience_ms: u64) -> Work {
    Work {
        patience_ms,
        ..Work::default()
    }
}

/// Two `spawn` branches that never await both run at once, every time (one instance
/// at a time, so the four workers are never all taken by waiting handlers).
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn two_spawned_branches_overlap() {
    let engine = Engine::with_config(thresh::EngineConfig::fail_fast());
    for _ in 0..300 {
        let h = engine.start(&SPAWNED, work(20_000)).await.unwrap();
        match tokio::time::timeout(Duration::from_secs(30), h.outcome()).await {
            Ok(Outcome::Completed(w)) => assert!(w.left && w.right),
            Ok(other) => panic!("the branches did not overlap: {other:?}"),
            Err(_) => panic!("the instance hung"),
        }
    }
    engine.shutdown(Duration::from_secs(10)).await.unwrap();
}

/// The control: without the marker the first handler holds the loop, the second never
/// starts while it waits, and the first gives up — deterministic, whatever the timing.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn inline_branches_do_not_overlap() {
    let engine = Engine::with_config(thresh::EngineConfig::fail_fast());
    let h = engine.start(&INLINE, work(50)).await.unwrap();
    match h.outcome().await {
        Outcome::Failed(InstanceError::TaskFailed { node, message }) => {
            assert_eq!(node, "left");
            assert_eq!(message, "the other branch never ran beside this one");
        }
        other => panic!("expected the first branch to give up, got {other:?}"),
    }
}

/// A spawned task still commits, routes and records as any task: the history is the
/// same shape, and `multi | spawn` runs the merging task once per token.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn spawned_tasks_complete_as_tasks_do() {
    let engine = Engine::with_config(thresh::EngineConfig::fail_fast());
    let h = engine.start(&BOTH_MARKERS, work(0)).await.unwrap();
    let outcome = h.outcome().await;
    assert!(outcome.completed().expect("completed").left);
    let done = h.history().await.completed_tasks();
    assert_eq!(
        done.iter().filter(|n| **n == "twice").count(),
        2,
        "{done:?}"
    );
    assert!(
        SPAWNED
            .nodes()
            .iter()
            .filter(|n| n.keyword() == "task")
            .count()
            == 2
    );
}
