//! The loop under edge cases a review found (each test failed before its fix):
//!
//! - a join fires and its split fails (`NoFlowTaken`): no other join fires after the
//!   instance failed, the outcome names the failing join, and the handle still
//!   answers;
//! - a handler panics after its activity was interrupted: the late report is
//!   ignored, the instance completes along the boundary;
//! - tokens stuck at a join with only a conditional trigger armed (an event
//!   sub-process, a boundary on a sub-process) fail with `Deadlock` — nothing can
//!   commit, so no condition can turn true; with a message trigger armed the instance
//!   waits, and the message's run can rescue it;
//! - a loop lost with its runtime: the handle's requests answer at once (no hang),
//!   and a message for the lost instance is buffered, not swallowed;
//! - a timer cycle with a zero period fires once instead of spinning the loop;
//! - a message delivered to a receive task is not lost to an interrupting boundary
//!   whose event was queued right behind it.

use std::sync::Arc;
use std::time::Duration;

use thresh::{process, Engine, InstanceError, Outcome, ProcessData, TaskError};
use tokio::sync::Notify;

#[derive(Clone, Debug, Default, PartialEq, ProcessData)]
struct D {
    x: u32,
    id: String,
}

async fn ok(_: &mut D) -> Result<(), TaskError> {
    Ok(())
}

// ----- 1. a second reachability join fires after the first one's split failed ----

process! {
    TWO_OR_JOINS: D {
        start s;
        parallel fork;
        inclusive os1;
        task a1 = ok;
        task b1 = ok;
        inclusive j1;
        end e1;
        end e1b;
        inclusive os2;
        task a2 = ok;
        task b2 = ok;
        inclusive j2;
        end e2;
        s -> fork -> os1, os2;
        os1 -> a1 when |_| true;
        os1 -> b1 when |_| false;
        a1, b1 -> j1;
        j1 -> e1 when |_| false;
        j1 -> e1b when |_| false;
        os2 -> a2 when |_| true;
        os2 -> b2 when |_| false;
        a2, b2 -> j2 -> e2;
    }
}

#[tokio::test]
async fn no_join_fires_after_a_split_failed() {
    let engine = Engine::new();
    let h = engine.start(&TWO_OR_JOINS, D::default());
    let outcome = tokio::time::timeout(Duration::from_secs(5), h.outcome())
        .await
        .expect("outcome");
    assert_eq!(
        outcome.error(),
        Some(&InstanceError::NoFlowTaken { node: "j1" }),
        "expected NoFlowTaken at j1, got {outcome:?}"
    );
}

/// After the loop is lost, the handle's requests must not hang.
#[tokio::test]
async fn handle_requests_after_a_lost_loop_do_not_hang() {
    let engine = Engine::new();
    let h = engine.start(&TWO_OR_JOINS, D::default());
    let _ = tokio::time::timeout(Duration::from_secs(5), h.outcome()).await;
    let data = tokio::time::timeout(Duration::from_secs(5), h.data()).await;
    assert!(data.is_ok(), "handle.data() hung after the instance ended");
}

// ----- 2. a handler's panic reported after its activity was interrupted ----------

static GO: std::sync::OnceLock<Arc<Notify>> = std::sync::OnceLock::new();

async fn panics_later(_: &mut D) -> Result<(), TaskError> {
    GO.get().unwrap().notified().await;
    panic!("late panic");
}

process! {
    INTERRUPTED_PANIC: D {
        start s;
        task t = panics_later;
        boundary stop on t: signal("probe-stop");
        end e;
        end stopped;
        s -> t -> e;
        stop -> stopped;
    }
}

#[tokio::test]
async fn a_panic_after_an_interrupt_is_ignored() {
    let go = GO.get_or_init(|| Arc::new(Notify::new())).clone();
    let engine = Engine::new();
    let h = engine.start(&INTERRUPTED_PANIC, D::default());
    // wait until the task runs on its track
    for _ in 0..1000 {
        if h.history()
            .await
            .count("t", |w| *w == thresh::Happening::TaskStarted)
            > 0
        {
            break;
        }
        tokio::task::yield_now().await;
    }
    for _ in 0..10 {
        tokio::task::yield_now().await;
    }
    // the handler wakes first (scheduled before the loop), panics, reports;
    // the signal delivery is already in the loop's intake before the report.
    go.notify_one();
    engine.broadcast_signal("probe-stop", ());
    let outcome = tokio::time::timeout(Duration::from_secs(5), h.outcome())
        .await
        .expect("outcome");
    let history = h.history().await;
    assert!(
        matches!(outcome, Outcome::Completed(_)),
        "the boundary interrupted `t`, yet: {outcome:?}\n{history}"
    );
}

// ----- 3. Deadlock held off for ever by an interrupting conditional start --------

process! {
    STUCK_COND: D {
        start     begin;
        exclusive pick;
        task      a = ok;
        task      b = ok;
        parallel  join;
        end       done;
        begin -> pick;
        pick -> a when |d| d.x == 0;
        pick -> b else;
        a, b -> join -> done;
        event_subprocess on_big {
            // nothing can commit any more once the token is stuck: this never fires
            start big: condition(|d| d.x > 100);
            end   bigged;
            big -> bigged;
        }
    }

    STUCK_SUB_COND: D {
        start     begin;
        subprocess sub {
            start     s1;
            exclusive pick;
            task      a = ok;
            task      b = ok;
            parallel  join;
            end       e1;
            s1 -> pick;
            pick -> a when |d| d.x == 0;
            pick -> b else;
            a, b -> join -> e1;
        }
        boundary hot on sub: condition(|d| d.x > 100);
        end done;
        end hotted;
        begin -> sub -> done;
        hot -> hotted;
    }
}

#[tokio::test(start_paused = true)]
async fn a_conditional_event_sub_process_alone_does_not_hold_off_deadlock() {
    let engine = Engine::new();
    let h = engine.start(&STUCK_COND, D::default());
    let outcome = tokio::time::timeout(Duration::from_secs(3600), h.outcome()).await;
    let history = h.history().await;
    assert!(
        outcome.is_ok(),
        "instance hung (expected Deadlock at `join`)\n{history}"
    );
}

#[tokio::test(start_paused = true)]
async fn a_conditional_boundary_alone_does_not_hold_off_deadlock() {
    let engine = Engine::new();
    let h = engine.start(&STUCK_SUB_COND, D::default());
    let outcome = tokio::time::timeout(Duration::from_secs(3600), h.outcome()).await;
    let history = h.history().await;
    assert!(
        outcome.is_ok(),
        "instance hung (expected Deadlock at `join`)\n{history}"
    );
}

// ----- 4. a lost loop (runtime dropped): handle requests hang -------------------

process! {
    WAITS: D {
        start s;
        user u;
        end e;
        s -> u -> e;
    }
}

#[test]
fn a_handle_answers_after_its_runtime_was_dropped() {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let (engine, h) = rt.block_on(async {
        let engine = Engine::new();
        let h = engine.start(&WAITS, D::default());
        while h.open_work().await.is_empty() {
            tokio::task::yield_now().await;
        }
        (engine, h)
    });
    drop(rt); // the instance's loop is dropped: its end is `Lost`
    let rt2 = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt2.block_on(async {
        let outcome = h.outcome().await;
        assert_eq!(outcome.error(), Some(&InstanceError::Lost));
        let data = tokio::time::timeout(Duration::from_secs(2), h.data()).await;
        assert!(
            data.is_ok(),
            "handle.data() hung on a lost instance (doc: `None` only if the loop was lost)"
        );
    });
    drop(engine);
}

// ----- 5. premature Deadlock: a non-interrupting event sub-process could still ----
// ----- free the stuck tokens by an error its run throws to the sub-process's  ----
// ----- error boundary                                                          ----

process! {
    RESCUABLE: D {
        start begin;
        subprocess sub {
            start     s1;
            exclusive pick;
            task      a = ok;
            task      b = ok;
            parallel  join;
            end       e1;
            s1 -> pick;
            pick -> a when |d| d.x == 0;
            pick -> b else;
            a, b -> join -> e1;
            event_subprocess on_ping {
                start ping: non_interrupting message("ping", key = |d| d.id.clone());
                end   boom: error("BOOM");
                ping -> boom;
            }
        }
        boundary caught on sub: error("BOOM");
        end done;
        end rescued;
        begin -> sub -> done;
        caught -> rescued;
    }
}

#[tokio::test(start_paused = true)]
async fn an_armed_message_start_keeps_stuck_tokens_waiting_for_their_rescue() {
    let engine = Engine::new();
    let h = engine.start(
        &RESCUABLE,
        D {
            x: 0,
            id: "k".into(),
        },
    );
    tokio::time::sleep(Duration::from_millis(10)).await;
    let _ = engine.publish_message("ping", "k", ());
    let outcome = tokio::time::timeout(Duration::from_secs(60), h.outcome())
        .await
        .expect("outcome");
    let history = h.history().await;
    assert!(
        matches!(outcome, Outcome::Completed(_)),
        "the ping's error reaches the boundary on `sub` and frees the stuck token, yet {outcome:?}\n{history}"
    );
}

// ----- 6. a zero-period timer cycle spins the loop for ever ----------------------

process! {
    ZERO_CYCLE: D {
        start s;
        user  u;
        boundary tick on u: non_interrupting timer(every = Duration::ZERO);
        end   e;
        end   ticked;
        s -> u -> e;
        tick -> ticked;
    }
}

#[test]
fn a_zero_period_cycle_fires_once() {
    // The runtime is leaked: its worker spins and could not be shut down.
    let rt = Box::leak(Box::new(
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap(),
    ));
    let answered = rt.block_on(async {
        let engine = Engine::new();
        let h = engine.start(&ZERO_CYCLE, D::default());
        tokio::time::sleep(Duration::from_millis(50)).await;
        tokio::time::timeout(Duration::from_millis(500), h.open_work()).await
    });
    assert!(
        answered.is_ok(),
        "the instance's loop no longer answers: it fires the zero-period cycle for ever"
    );
}

process! {
    RECEIVES: D {
        start s;
        receive r: message("probe-m", key = |d| d.id.clone());
        end e;
        s -> r -> e;
    }
}

/// A lost instance's subscription swallows the message: its intake was never closed.
#[test]
fn a_message_for_a_lost_instance_is_buffered() {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let (engine, h) = rt.block_on(async {
        let engine = Engine::new();
        let h = engine.start(
            &RECEIVES,
            D {
                x: 0,
                id: "lost".into(),
            },
        );
        for _ in 0..1000 {
            if h.history()
                .await
                .count("r", |w| *w == thresh::Happening::Parked)
                > 0
            {
                break;
            }
            tokio::task::yield_now().await;
        }
        (engine, h)
    });
    drop(rt);
    let rt2 = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt2.block_on(async {
        assert_eq!(h.outcome().await.error(), Some(&InstanceError::Lost));
        let published = engine.publish_message("probe-m", "lost", ());
        assert_ne!(
            published,
            thresh::Published::Delivered,
            "the message went into the dead instance's intake and is gone"
        );
    });
}

// ----- a delivery and an interrupting boundary in one batch ----------------------

#[derive(Clone, Debug, Default, PartialEq, ProcessData)]
struct Pay {
    id: String,
    paid: u64,
}

process! {
    RECEIVE_OR_STOP: Pay {
        start s;
        receive pay: message("robust-pay", key = |p| p.id.clone(), apply = |p, amount: &u64| p.paid = *amount);
        boundary stop on pay: signal("robust-stop");
        end paid;
        end stopped;
        s -> pay -> paid;
        stop -> stopped;
    }
}

/// The message is delivered first; the signal, queued behind it before the loop
/// runs, finds the receive task completing and its boundary gone: the message is
/// not lost to an interruption.
#[tokio::test]
async fn a_delivered_message_is_not_lost_to_a_boundary_queued_behind_it() {
    let engine = Engine::new();
    let handle = engine.start(
        &RECEIVE_OR_STOP,
        Pay {
            id: "r-1".into(),
            ..Pay::default()
        },
    );
    for _ in 0..1000 {
        if handle
            .history()
            .await
            .count("pay", |w| *w == thresh::Happening::Parked)
            > 0
        {
            break;
        }
        tokio::task::yield_now().await;
    }
    // No await between the two: both are queued before the loop runs again.
    engine.publish_message("robust-pay", "r-1", 40_u64);
    engine.broadcast_signal("robust-stop", ());
    let outcome = tokio::time::timeout(Duration::from_secs(5), handle.outcome())
        .await
        .expect("outcome");
    let history = handle.history().await;
    let Outcome::Completed(pay) = outcome else {
        panic!("{outcome:?}\n{history}");
    };
    assert_eq!(pay.paid, 40, "{history}");
    assert_eq!(history.ended_at(), ["paid"], "{history}");
}
