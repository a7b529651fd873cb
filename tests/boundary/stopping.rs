//! Cancel, terminate and shutdown with boundaries armed, also racing signals.

use super::*;

/// How the `ARMED` scenario stops its instance.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Stop {
    Cancel,
    Terminate,
    Shutdown,
}

process! {
    /// Boundaries of every kind armed on a user task and on a never-ending task;
    /// `kill` terminates.
    ARMED: Job {
        start    s;
        parallel fork;
        user     review;
        boundary ping on review: non_interrupting signal("ping");
        boundary recall on review: message("recall", key = |j| j.id.clone());
        boundary late on review: timer(Duration::from_secs(3600));
        boundary hot on review: non_interrupting condition(|j| j.rounds > 100, on = [rounds]);
        task     work = |j| async move {
            std::future::pending::<()>().await;
            j.worked = true;
            Ok(())
        };
        boundary work_ping on work: non_interrupting signal("ping");
        boundary work_recall on work: message("work_recall", key = |j| j.id.clone());
        user     kill;
        end      killed: terminate;
        end      reviewed;
        end      pinged;
        end      recalled;
        end      late_end;
        end      hot_end;
        end      worked_end;
        end      work_pinged;
        end      work_recalled;
        s -> fork -> review, work, kill;
        kill -> killed;
        review -> reviewed;
        ping -> pinged;
        recall -> recalled;
        late -> late_end;
        hot -> hot_end;
        work -> worked_end;
        work_ping -> work_pinged;
        work_recall -> work_recalled;
    }
}

/// Cancel, terminate or shut down an instance whose user task and running task both
/// have boundaries armed (signal, message, timer, condition), after a few
/// non-interrupting pings (each reaching both activities): every live track ends
/// cancelled, and no subscription is left — a signal reaches no catcher, a message
/// is buffered.
async fn stopping_with_boundaries_armed(i: usize) {
    let engine = Engine::new();
    let id = format!("armed-{i}");
    let stop = [Stop::Cancel, Stop::Terminate, Stop::Shutdown][i % 3];
    let pings = i / 3 % 3;
    let handle = engine.start(&ARMED, job(&id)).await.unwrap();
    expect_open_work(&handle, "review").await;
    expect_open_work(&handle, "kill").await;
    expect_that(&handle, "work runs", |h| {
        count(h, "work", &Happening::TaskStarted) == 1
    })
    .await;
    for _ in 0..pings {
        assert_eq!(engine.broadcast_signal("ping", ()).await.unwrap(), 2);
    }
    expect_that(&handle, "every ping ended", |h| {
        count(h, "pinged", &Happening::Ended) == pings
            && count(h, "work_pinged", &Happening::Ended) == pings
    })
    .await;
    match stop {
        Stop::Cancel => handle.cancel(),
        Stop::Terminate => complete(&handle, "kill", |_: &mut Job| {}).await,
        Stop::Shutdown => engine
            .shutdown(Duration::from_secs(10))
            .await
            .expect("the loop stops"),
    }
    let (outcome, history) = finish_strict(&handle).await;
    let expected = match stop {
        Stop::Terminate => "terminated",
        _ => "cancelled",
    };
    assert_eq!(outcome.kind(), expected, "{history}");
    let mut ends: Vec<(u32, &str, Happening)> = steps(&history)
        .into_iter()
        .filter(|r| matches!(r.2, Happening::Cancelled | Happening::Terminated))
        .collect();
    ends.sort_by_key(|r| r.0);
    // Tracks 0, 1 and 2 are `review`, `work` and `kill`.
    let kill = match stop {
        Stop::Terminate => (2, "killed", Happening::Terminated),
        _ => (2, "kill", Happening::Cancelled),
    };
    let want = vec![
        (0, "review", Happening::Cancelled),
        (1, "work", Happening::Cancelled),
        kill,
    ];
    assert_eq!(ends, want, "{history}");
    assert_eq!(engine.broadcast_signal("ping", ()).await.unwrap(), 0);
    assert_eq!(
        engine.publish_message("recall", &id, ()).await.unwrap(),
        Published::Buffered
    );
    assert_eq!(
        engine
            .publish_message("work_recall", &id, ())
            .await
            .unwrap(),
        Published::Buffered
    );
    assert_eq!(engine.broker_stats().buffered, 2);
    assert_eq!(spawns(&history, "ping"), pings);
    assert_eq!(spawns(&history, "work_ping"), pings);
}

both_runtimes!(RUNS => stopping_with_boundaries_armed);

/// A cancel races a storm of non-interrupting signals from another thread: the
/// instance always ends cancelled, every track stopped, no subscription left.
async fn a_cancel_racing_boundary_signals(i: usize) {
    let engine = Engine::new();
    let id = format!("storm-{i}");
    let handle = engine.start(&ARMED, job(&id)).await.unwrap();
    expect_open_work(&handle, "review").await;
    expect_that(&handle, "work runs", |h| {
        count(h, "work", &Happening::TaskStarted) == 1
    })
    .await;
    let storm = {
        let engine = engine.clone();
        std::thread::spawn(move || {
            (0..20)
                .map(|_| {
                    let reached = at_once(engine.broadcast_signal("ping", ())).unwrap();
                    std::thread::yield_now();
                    reached
                })
                .sum::<usize>()
        })
    };
    yield_jitter().await;
    handle.cancel();
    let reached = storm.join().expect("the storm");
    let (outcome, history) = finish_strict(&handle).await;
    assert!(matches!(outcome, Outcome::Cancelled(_)), "{history}");
    assert!(spawns(&history, "ping") + spawns(&history, "work_ping") <= reached);
    assert_eq!(engine.broadcast_signal("ping", ()).await.unwrap(), 0);
    assert_eq!(
        engine.publish_message("recall", &id, ()).await.unwrap(),
        Published::Buffered
    );
}

multi_thread!(RUNS => a_cancel_racing_boundary_signals);
