//! Deadlock detection with event sub-processes armed: a stuck instance fails, unless an
//! armed trigger may still free it.

use super::*;

process! {
    /// The same as `STUCK` without the event sub-process. (`may_deadlock`: the
    /// compiler would reject the join that never fires; here that is the point.)
    STUCK_PLAIN: Order {
        start     begin;
        exclusive pick;
        task      a = after;
        task      b = after;
        parallel  join: may_deadlock;
        end       done;
        begin -> pick;
        pick -> a when |o| o.total == 0;
        pick -> b else;
        a, b -> join -> done;
    }
}

/// Without event sub-processes, a token stuck at a parallel join fails the instance
/// with `Deadlock` (the baseline of the next test).
#[tokio::test(start_paused = true)]
async fn a_deadlock_fails_the_instance() {
    let engine = Engine::new();
    let (outcome, history) =
        outcome_of(&engine.start(&STUCK_PLAIN, order("N-7")).await.unwrap()).await;
    assert_eq!(
        failed(outcome, &history),
        InstanceError::Deadlock {
            joins: vec!["join"]
        }
    );
}

process! {
    /// A token that can never leave the parallel join (the exclusive split sends one
    /// token only); the only event sub-process is non-interrupting.
    STUCK: Order {
        start     begin;
        exclusive pick;
        task      a = after;
        task      b = after;
        parallel  join: may_deadlock;
        end       done;
        begin -> pick;
        pick -> a when |o| o.total == 0;
        pick -> b else;
        a, b -> join -> done;
        event_subprocess on_ping {
            start ping: non_interrupting signal("ping");
            task  note = note;
            end   noted;
            ping -> note -> noted;
        }
    }
}

/// A token stuck at a parallel join does not fail the instance while a message,
/// signal or timer event sub-process is armed: its run could still change things
/// (raise an error a boundary catches, commit data a condition waits for). This
/// one's run cannot, so the instance waits — through the run — until cancelled.
/// (With only a conditional trigger armed, `Deadlock` comes at once:
/// tests/failures/deadlocks.rs.)
#[tokio::test(start_paused = true)]
async fn an_armed_event_sub_process_keeps_a_stuck_instance_waiting() {
    let engine = Engine::new();
    let handle = engine.start(&STUCK, order("N-6")).await.unwrap();
    tokio::time::sleep(Duration::from_secs(3600)).await;
    assert!(!handle.is_finished(), "{}", handle.history().await);
    assert_eq!(engine.broadcast_signal("ping", ()).await.unwrap(), 1);
    tokio::time::sleep(Duration::from_secs(3600)).await;
    assert!(!handle.is_finished(), "{}", handle.history().await);
    handle.cancel();
    let (outcome, history) = outcome_of(&handle).await;
    assert!(matches!(outcome, Outcome::Cancelled(_)), "{outcome:?}");
    assert_eq!(
        history.count("note", |h| matches!(h, Happening::Completed { .. })),
        1
    );
    assert_eq!(history.count("join", |h| *h == Happening::Cancelled), 1);
}
