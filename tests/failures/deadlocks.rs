//! Deadlock detection: tokens that can never move fail the instance with `Deadlock`;
//! an armed trigger whose run may still free them keeps it waiting.

use super::*;

// The processes below deadlock on purpose, to test the engine's run-time detection
// (which processes built without `process!`, and models too large for the compile-
// time analysis, still rely on): each join that never fires is marked
// `may_deadlock`, each deliberate multi-merge `multi`.

process! {
    DEADLOCK: Job {
        start s;
        exclusive x;
        task a = step;
        task b = step;
        parallel join: may_deadlock;
        end done;

        s -> x;
        x -> a when |j| j.a;
        x -> b else;
        a, b -> join -> done;
    }
}

/// An exclusive split feeds a parallel join: the one token waits for ever, so the
/// instance fails with a deadlock at the join.
async fn exclusive_into_parallel_join_deadlocks(engine: Engine, i: usize) {
    let mut job = Job::new();
    job.a = i.is_multiple_of(2);
    let taken = if job.a { "a" } else { "b" };
    let (outcome, h) = run(&engine, &DEADLOCK, job).await;
    assert_eq!(
        failed(outcome, &h),
        InstanceError::Deadlock {
            joins: vec!["join"]
        }
    );
    assert_eq!(h.completed_tasks(), [taken]);
    assert_eq!(h.count("join", |w| *w == Happening::Waiting), 1);
    assert_eq!(h.count("join", |w| *w == Happening::Cancelled), 1);
    assert_eq!(h.fired("join"), 0);
}

flavors!(exclusive_into_parallel_join_deadlocks);

process! {
    DEADLOCK_AT_ONCE: Job {
        start s;
        exclusive x;
        exclusive other;
        parallel join: may_deadlock;
        end done;

        s -> x;
        x -> join when |j| j.a;
        x -> other else;
        other -> join -> done;
    }
}

/// The same without tasks: the deadlock is found in the loop's very first step.
async fn deadlock_in_the_first_step(engine: Engine, i: usize) {
    let mut job = Job::new();
    job.a = i.is_multiple_of(2);
    let (outcome, h) = run(&engine, &DEADLOCK_AT_ONCE, job).await;
    assert_eq!(
        failed(outcome, &h),
        InstanceError::Deadlock {
            joins: vec!["join"]
        }
    );
    assert_eq!(h.count("join", |w| *w == Happening::Cancelled), 1);
}

flavors!(deadlock_in_the_first_step);

process! {
    /// Two tokens reach one flow of `join`, one the other: it fires once and the
    /// second token waits for a partner that never comes.
    UNEVEN: Job {
        start s;
        parallel fork;
        task x1 = step;
        task x2 = step;
        task y1 = step;
        exclusive xm: multi;
        task a = step;
        task b = step;
        parallel join: may_deadlock;
        task c = step;
        end done;

        s -> fork -> x1, x2, y1;
        x1, x2 -> xm -> a -> join;
        y1 -> b -> join;
        join -> c -> done;
    }
}

async fn parallel_join_leftover_token_deadlocks(engine: Engine, _: usize) {
    let (outcome, h) = run(&engine, &UNEVEN, Job::new()).await;
    assert_eq!(
        failed(outcome, &h),
        InstanceError::Deadlock {
            joins: vec!["join"]
        }
    );
    assert_eq!(h.fired("join"), 1, "{h}");
    assert_eq!(completions(&h, "a"), 2);
    assert_eq!(completions(&h, "c"), 1, "{h}");
    assert_eq!(h.ended_at(), ["done"]);
    assert_eq!(h.count("join", |w| *w == Happening::Cancelled), 1, "{h}");
}

flavors!(parallel_join_leftover_token_deadlocks);

process! {
    /// A deadlocked parallel join upstream of an OR-join: the token waiting at the
    /// OR-join can still be reached from the parallel join, so it waits too.
    DEADLOCK_BEHIND_OR: Job {
        start s;
        inclusive os;
        task a = step;
        exclusive x;
        task p1 = step;
        task p2 = step;
        parallel pj: may_deadlock;
        inclusive oj;
        end done;

        s -> os;
        os -> a when |_| true;
        os -> x when |_| true;
        x -> p1 when |j| j.a;
        x -> p2 else;
        p1, p2 -> pj -> oj;
        a -> oj -> done;
    }
}

async fn deadlock_behind_an_or_join_names_both_joins(engine: Engine, i: usize) {
    let mut job = Job::new();
    job.a = i.is_multiple_of(2);
    let (outcome, h) = run(&engine, &DEADLOCK_BEHIND_OR, job).await;
    let InstanceError::Deadlock { mut joins } = failed(outcome, &h) else {
        panic!("expected a deadlock\n{h}");
    };
    joins.sort_unstable();
    assert_eq!(joins, ["oj", "pj"], "{h}");
    assert_eq!(h.fired("oj"), 0);
    assert_eq!(h.fired("pj"), 0);
}

flavors!(deadlock_behind_an_or_join_names_both_joins);

// Each test below pinned a bug of the instance loop (it failed before its fix).

process! {
    STUCK_COND: D {
        start     begin;
        exclusive pick;
        task      a = ok;
        task      b = ok;
        parallel  join: may_deadlock;
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
}

process! {
    STUCK_SUB_COND: D {
        start     begin;
        subprocess sub {
            start     s1;
            exclusive pick;
            task      a = ok;
            task      b = ok;
            parallel  join: may_deadlock;
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
    let h = engine.start(&STUCK_COND, D::default()).await.unwrap();
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
    let h = engine.start(&STUCK_SUB_COND, D::default()).await.unwrap();
    let outcome = tokio::time::timeout(Duration::from_secs(3600), h.outcome()).await;
    let history = h.history().await;
    assert!(
        outcome.is_ok(),
        "instance hung (expected Deadlock at `join`)\n{history}"
    );
}

process! {
    RESCUABLE: D {
        start begin;
        subprocess sub {
            start     s1;
            exclusive pick;
            task      a = ok;
            task      b = ok;
            parallel  join: may_deadlock;
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
    let h = engine
        .start(
            &RESCUABLE,
            D {
                x: 0,
                id: "k".into(),
            },
        )
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_millis(10)).await;
    let _ = engine.publish_message("ping", "k", ()).await.unwrap();
    let outcome = tokio::time::timeout(Duration::from_secs(60), h.outcome())
        .await
        .expect("outcome");
    let history = h.history().await;
    assert!(
        matches!(outcome, Outcome::Completed(_)),
        "the ping's error reaches the boundary on `sub` and frees the stuck token, yet {outcome:?}\n{history}"
    );
}
