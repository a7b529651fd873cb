//! Timers on the paused clock.

use super::*;

/// Start `process` and return its outcome's history and how long it took on the
/// paused clock.
async fn timed(engine: &Engine, process: &'static thresh::Process<Deal>) -> (History, Duration) {
    let t0 = Instant::now();
    let (outcome, history) = run(engine, process, deal("timer")).await;
    let took = t0.elapsed();
    completed(outcome, &history);
    assert_eq!(
        steps(&history),
        [
            (0, "s", Happening::Started),
            (0, "wait", Happening::Parked),
            (0, "wait", caught(&[])),
            (0, "e", Happening::Ended),
        ]
    );
    (history, took)
}

process! {
    /// Timers of every kind.
    AFTER: Deal {
        start s;
        catch wait: timer(Duration::from_secs(5));
        end   e;
        s -> wait -> e;
    }
    AT_PAST: Deal {
        start s;
        catch wait: timer(at = SystemTime::UNIX_EPOCH);
        end   e;
        s -> wait -> e;
    }
    AT_FUTURE: Deal {
        start s;
        catch wait: timer(at = SystemTime::now() + Duration::from_secs(15));
        end   e;
        s -> wait -> e;
    }
    EVERY: Deal {
        start s;
        catch wait: timer(every = Duration::from_secs(3), times = 4);
        end   e;
        s -> wait -> e;
    }
    EVERY_ENDLESS: Deal {
        start s;
        catch wait: timer(every = Duration::from_millis(250));
        end   e;
        s -> wait -> e;
    }
}

#[tokio::test(start_paused = true)]
async fn a_duration_timer_fires_after_its_duration() {
    let engine = Engine::new();
    let (_, took) = timed(&engine, &AFTER).await;
    assert_eq!(took, Duration::from_secs(5));
}

#[tokio::test(start_paused = true)]
async fn a_date_timer_in_the_past_fires_at_once() {
    let engine = Engine::new();
    let (_, took) = timed(&engine, &AT_PAST).await;
    assert_eq!(took, Duration::ZERO);
}

#[tokio::test(start_paused = true)]
async fn a_date_timer_fires_at_its_date() {
    let engine = Engine::new();
    let (_, took) = timed(&engine, &AT_FUTURE).await;
    // The date is 15 s after the (wall-clock) moment the timer was armed; the paused
    // clock gets there, give or take the instants between the two clock readings.
    assert!(
        took > Duration::from_secs(14) && took <= Duration::from_secs(15),
        "{took:?}"
    );
}

#[tokio::test(start_paused = true)]
async fn a_cycle_timer_catch_waits_for_the_first_occurrence() {
    let engine = Engine::new();
    let (_, took) = timed(&engine, &EVERY).await;
    assert_eq!(took, Duration::from_secs(3));
    let (_, took) = timed(&engine, &EVERY_ENDLESS).await;
    assert_eq!(took, Duration::from_millis(250));
}

process! {
    /// A timer catch on a cycle: armed afresh on every round.
    TICKS: Deal {
        start     s;
        exclusive again;
        catch     tick: timer(Duration::from_secs(1));
        task      count = |d| async move {
            d.ticks += 1;
            Ok(())
        };
        exclusive more;
        end       e;
        s -> again -> tick -> count -> more;
        more -> again when |d| d.ticks < 3;
        more -> e else;
    }
}

/// A timer catch on a cycle is armed afresh on each visit: three rounds, three
/// seconds.
#[tokio::test(start_paused = true)]
async fn a_timer_on_a_cycle_is_armed_on_every_visit() {
    let engine = Engine::new();
    let t0 = Instant::now();
    let (outcome, history) = run(&engine, &TICKS, deal("ticks")).await;
    assert_eq!(completed(outcome, &history).ticks, 3);
    assert_eq!(t0.elapsed(), Duration::from_secs(3));
    assert_eq!(history.count("tick", |w| *w == Happening::Parked), 3);
    assert_eq!(history.count("tick", |w| *w == caught(&[])), 3);
}

process! {
    /// A timer a hundred years away.
    CENTURY: Deal {
        start s;
        catch wait: timer(Duration::from_secs(100 * 365 * 86_400));
        end   e;
        s -> wait -> e;
    }
}

/// A timer a hundred years away just waits (an hour later, nothing happened), and a
/// cancel ends it.
#[tokio::test(start_paused = true)]
async fn a_far_timer_just_waits() {
    let engine = Engine::new();
    let h = engine.start(&CENTURY, deal("far")).await.unwrap();
    expect_parked(&h, "wait").await;
    an_hour_later().await;
    assert!(!h.is_finished());
    assert_eq!(
        steps(&h.history().await),
        [(0, "s", Happening::Started), (0, "wait", Happening::Parked)]
    );
    h.cancel();
    let (outcome, history) = finish(&h).await;
    assert!(
        matches!(outcome, Outcome::Cancelled(_)),
        "{outcome:?}\n{history}"
    );
}

process! {
    /// A timer that can never be represented as a deadline.
    NEVER: Deal {
        start s;
        catch wait: timer(Duration::MAX);
        end   e;
        s -> wait -> e;
    }
}

/// A timer whose deadline cannot be represented (`Duration::MAX` from now) must not
/// take the instance's loop down: either it waits (it never fires) or the instance
/// fails with an error naming the timer. What the engine does today: computing the
/// deadline (`Instant + Duration`, outside the code that guards user expressions)
/// panics on the loop's task, the loop dies, the history is lost and the outcome is
/// `Failed(Lost)` — "a bug in thresh".
#[tokio::test(start_paused = true)]
async fn an_unrepresentable_timer_does_not_kill_the_loop() {
    let engine = Engine::new();
    let h = engine.start(&NEVER, deal("never")).await.unwrap();
    an_hour_later().await;
    match tokio::time::timeout(Duration::from_secs(1), h.outcome()).await {
        Ok(outcome) => {
            let history = h.history().await;
            match failed(outcome, &history) {
                InstanceError::TaskFailed { node, .. }
                | InstanceError::TaskPanicked { node, .. } => {
                    assert_eq!(node, "wait")
                }
                other => panic!("expected a failure naming `wait`, got {other:?}\n{history}"),
            }
            check_history(&history, &h.outcome().await);
            assert_eq!(
                steps(&history)[..2],
                [(0, "s", Happening::Started), (0, "wait", Happening::Parked)]
            );
        }
        Err(_) => {
            assert_eq!(
                steps(&h.history().await),
                [(0, "s", Happening::Started), (0, "wait", Happening::Parked)]
            );
            h.cancel();
            let (outcome, history) = finish(&h).await;
            assert!(
                matches!(outcome, Outcome::Cancelled(_)),
                "{outcome:?}\n{history}"
            );
        }
    }
}
