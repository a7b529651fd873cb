//! Timer starts on the paused clock, at the top level and in a sub-process.

use super::*;

process! {
    /// A user task; an interrupting timeout at 45 s and a cycle every 10 s, 3 times.
    TIMED: Order {
        start begin;
        user  review;
        end   done;
        begin -> review -> done;
        event_subprocess on_timeout {
            start timeout: timer(Duration::from_secs(45));
            task  undo = undo;
            end   expired;
            timeout -> undo -> expired;
        }
        event_subprocess on_tick {
            start tick: non_interrupting timer(every = Duration::from_secs(10), times = 3);
            task  count = tick;
            end   counted;
            tick -> count -> counted;
        }
    }
}

/// A top-level cycle (every 10 s, 3 times) runs beside the main path, and an
/// interrupting timer at 45 s cancels the waiting user task and completes the
/// instance.
#[tokio::test(start_paused = true)]
async fn timer_starts_at_the_top_level_cycle_then_interrupt() {
    let engine = Engine::new();
    let t0 = tokio::time::Instant::now();
    let handle = engine.start(&TIMED, order("T-1")).await.unwrap();
    expect_open_work(&handle, "review").await;
    tokio::time::advance(Duration::from_secs(9)).await;
    settle().await;
    assert_eq!(runs(&handle.history().await, "tick"), 0);
    for expected in 1..=3 {
        tokio::time::advance(Duration::from_secs(10)).await;
        settle().await;
        let history = handle.history().await;
        assert_eq!(runs(&history, "tick"), expected, "{history}");
    }
    let (outcome, history) = outcome_of(&handle).await;
    assert_eq!(t0.elapsed(), Duration::from_secs(45));
    let data = completed(outcome, &history);
    assert_eq!((data.ticks, data.undone), (3, 1));
    assert_eq!(count(&history, "review", &Happening::Cancelled), 1);
    assert_eq!(ends(&history, "done"), 0);
    assert_eq!(ends(&history, "expired"), 1);
}

/// The main path ends before the interrupting timer: the cycle ran twice, nothing
/// else fires.
#[tokio::test(start_paused = true)]
async fn timer_starts_at_the_top_level_end_with_the_instance() {
    let engine = Engine::new();
    let handle = engine.start(&TIMED, order("T-2")).await.unwrap();
    expect_open_work(&handle, "review").await;
    tokio::time::sleep(Duration::from_secs(25)).await;
    complete(&handle, "review", |_| {}).await;
    let (outcome, history) = outcome_of(&handle).await;
    let data = completed(outcome, &history);
    assert_eq!((data.ticks, data.undone), (2, 0));
    assert_eq!(runs(&history, "timeout"), 0);
}

process! {
    /// The same timers inside a sub-process (the cycle without a limit); a user task
    /// after it.
    TIMED_SCOPE: Order {
        start begin;
        subprocess work {
            start w_begin;
            user  inner;
            end   w_done;
            w_begin -> inner -> w_done;
            event_subprocess on_timeout {
                start timeout: timer(Duration::from_secs(45));
                task  undo = undo;
                end   expired;
                timeout -> undo -> expired;
            }
            event_subprocess on_tick {
                start tick: non_interrupting timer(every = Duration::from_secs(10));
                task  count = tick;
                end   counted;
                tick -> count -> counted;
            }
        }
        user  later;
        end   done;
        begin -> work -> later -> done;
    }
}

/// Timers in a sub-process: the cycle (no limit) fires every 10 s while it runs; once
/// it has completed, neither the cycle nor the 45 s timeout fires again, for an hour.
#[tokio::test(start_paused = true)]
async fn timer_starts_in_a_sub_process_stop_when_it_completes() {
    let engine = Engine::new();
    let handle = engine.start(&TIMED_SCOPE, order("T-3")).await.unwrap();
    expect_open_work(&handle, "inner").await;
    tokio::time::sleep(Duration::from_secs(25)).await;
    complete(&handle, "inner", |_| {}).await;
    expect_open_work(&handle, "later").await;
    tokio::time::sleep(Duration::from_secs(3600)).await;
    let history = handle.history().await;
    assert_eq!(
        (runs(&history, "tick"), runs(&history, "timeout")),
        (2, 0),
        "{history}"
    );
    complete(&handle, "later", |_| {}).await;
    let (outcome, history) = outcome_of(&handle).await;
    let data = completed(outcome, &history);
    assert_eq!((data.ticks, data.undone), (2, 0));
    assert_eq!(count(&history, "work", &done(&[])), 1);
}

/// The sub-process's interrupting timeout at 45 s cancels its user task (after four
/// cycles); the token goes on after the sub-process, and no timer of it fires again.
#[tokio::test(start_paused = true)]
async fn an_interrupting_timer_in_a_sub_process_lets_the_parent_go_on() {
    let engine = Engine::new();
    let t0 = tokio::time::Instant::now();
    let handle = engine.start(&TIMED_SCOPE, order("T-4")).await.unwrap();
    expect_open_work(&handle, "inner").await;
    tokio::time::sleep(Duration::from_secs(44)).await;
    assert_eq!(open_work(&handle).await, ["inner"]);
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert_eq!(open_work(&handle).await, ["later"]);
    let history = handle.history().await;
    let at = common::position(&history, "timeout", |w| *w == Happening::Started);
    assert_eq!(history.steps()[at - 1].node, "inner", "{history}");
    assert_eq!(
        history.steps()[at - 1].what,
        Happening::Cancelled,
        "{history}"
    );
    assert_eq!(t0.elapsed(), Duration::from_secs(46));
    tokio::time::sleep(Duration::from_secs(3600)).await;
    let history = handle.history().await;
    assert_eq!(
        (runs(&history, "tick"), runs(&history, "timeout")),
        (4, 1),
        "{history}"
    );
    assert_eq!(count(&history, "inner", &Happening::Cancelled), 1);
    complete(&handle, "later", |_| {}).await;
    let (outcome, history) = outcome_of(&handle).await;
    let data = completed(outcome, &history);
    assert_eq!((data.ticks, data.undone), (4, 1));
}
