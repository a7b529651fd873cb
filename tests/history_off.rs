//! An engine that records no history: outcomes and data are the same as with history,
//! `history()` is empty, and a long loop does not grow anything per step.

use thresh::{process, Engine, EngineConfig, ProcessData, TaskError};

#[derive(Clone, Debug, Default, PartialEq, ProcessData)]
pub struct Counter {
    pub n: u32,
    pub left: u32,
    pub right: u32,
}

async fn bump(c: &mut Counter) -> Result<(), TaskError> {
    c.n += 1;
    Ok(())
}

process! {
    /// Counts to 1000 through a link loop, then forks two tasks and joins them.
    LOOP: Counter {
        start s;
        catch again: link("again");
        task bump = bump;
        exclusive more;
        throw back: link("again");
        parallel fork;
        task left = |c| async move { tokio::task::yield_now().await; c.left = 1; Ok(()) };
        task right = |c| async move { c.right = 2; Ok(()) };
        parallel join;
        end done;

        s -> bump -> more;
        again -> bump;
        more -> back when |c| c.n < 1000;
        more -> fork else;
        fork -> left, right;
        left, right -> join -> done;
    }
}

const EXPECTED: Counter = Counter {
    n: 1000,
    left: 1,
    right: 2,
};

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn without_history_the_outcome_is_the_same_and_the_history_empty() {
    let quiet = Engine::with_config(EngineConfig {
        history: false,
        ..EngineConfig::default()
    });
    let recording = Engine::new();
    let mut handles: Vec<_> = Vec::new();
    for _ in 0..200 {
        handles.push(quiet.start(&LOOP, Counter::default()).await.unwrap());
    }
    for handle in handles {
        assert_eq!(handle.outcome().await.completed(), Some(EXPECTED));
        assert!(handle.history().await.steps().is_empty());
    }
    let handle = recording.start(&LOOP, Counter::default()).await.unwrap();
    assert_eq!(handle.outcome().await.completed(), Some(EXPECTED));
    let history = handle.history().await;
    assert_eq!(history.completed_tasks().len(), 1002);
    assert_eq!(history.fired("join"), 1);
}

#[tokio::test]
async fn without_history_a_running_instance_reports_an_empty_history() {
    let quiet = Engine::with_config(EngineConfig {
        history: false,
        ..EngineConfig::default()
    });
    process! {
        WAITS: Counter {
            start s;
            user approve;
            end e;
            s -> approve -> e;
        }
    }
    let handle = quiet.start(&WAITS, Counter::default()).await.unwrap();
    thresh::testing::expect_open_work(&handle, "approve").await;
    assert!(handle.history().await.steps().is_empty());
    handle
        .complete("approve", |c| c.n = 7)
        .await
        .expect("open work");
    assert_eq!(handle.outcome().await.completed().map(|c| c.n), Some(7));
}
