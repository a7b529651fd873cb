//! Timer boundaries on the paused clock: timeouts, cycles, user tasks.

use super::*;

/// The history of a reminder (`tick -> ring -> rung`) on track `track`.
fn ring_rows(
    track: u32,
    boundary: &'static str,
    task: &'static str,
    field: &'static str,
    end: &'static str,
) -> [Row; 5] {
    [
        (track, boundary, spawned(0)),
        (track, boundary, caught(&[])),
        (track, task, Happening::TaskStarted),
        (track, task, done(&[field])),
        (track, end, Happening::Ended),
    ]
}

process! {
    /// A handler that never finishes, an interrupting timeout and a reminder cycle.
    SLOW: Job {
        start    s;
        task     work = |j| async move {
            let _count = CountDrop;
            std::future::pending::<()>().await;
            j.worked = true;
            Ok(())
        };
        boundary late on work: timer(Duration::from_secs(30));
        boundary tick on work: non_interrupting timer(every = Duration::from_secs(7), times = 10);
        task     ring = |j| async move {
            j.rounds += 1;
            Ok(())
        };
        end      done;
        end      rung;
        end      gave_up;
        s -> work -> done;
        late -> gave_up;
        tick -> ring -> rung;
    }
}

/// A handler that never finishes is stopped by its 30 s timeout; meanwhile the
/// 7 s reminder cycle fired at 7, 14, 21 and 28 s — four times of its ten. The
/// handler's future is dropped, its write never lands, and the instance ends at
/// 30 s exactly.
#[tokio::test(start_paused = true)]
async fn a_timer_boundary_interrupts_a_handler_that_never_finishes() {
    let engine = Engine::new();
    let t0 = Instant::now();
    let handle = engine.start(&SLOW, job("slow")).await.unwrap();
    let (outcome, history) = finish_strict_in(&handle, DAY).await;
    assert_eq!(t0.elapsed(), Duration::from_secs(30));
    let data = completed(outcome, &history);
    assert_eq!((data.rounds, data.worked), (4, false));
    let mut rows = vec![
        (0, "s", Happening::Started),
        (0, "work", Happening::TaskStarted),
    ];
    for k in 1..=4 {
        rows.extend(ring_rows(k, "tick", "ring", "rounds", "rung"));
    }
    rows.extend([
        (0, "work", interrupted("late")),
        (5, "late", spawned(0)),
        (5, "late", caught(&[])),
        (5, "gave_up", Happening::Ended),
    ]);
    assert_eq!(steps(&history), rows);
    assert_eq!(
        SLOW_DROPS.load(Ordering::SeqCst),
        1,
        "the handler was dropped once"
    );
    // Nothing fires later: the cycle went with the activity (and the instance).
    tokio::time::sleep(Duration::from_secs(3600)).await;
    assert_eq!(handle.history().await, history);
}

process! {
    /// A task of `secs` seconds with a cycle of three and a one-off reminder.
    CYCLE: Job {
        start    s;
        task     work = |j| async move {
            tokio::time::sleep(Duration::from_secs(j.secs)).await;
            j.worked = true;
            Ok(())
        };
        boundary tick on work: non_interrupting timer(every = Duration::from_secs(10), times = 3);
        boundary once on work: non_interrupting timer(Duration::from_secs(5));
        task     ring = |j| async move {
            j.rounds += 1;
            Ok(())
        };
        task     remind = |j| async move {
            j.notified += 1;
            Ok(())
        };
        end      done;
        end      rung;
        end      reminded;
        s -> work -> done;
        tick -> ring -> rung;
        once -> remind -> reminded;
    }
}

/// A non-interrupting cycle of three fires exactly min(3, whole periods) times while
/// its task runs, and a one-off non-interrupting timer once; the task then completes
/// normally, at its own time.
#[tokio::test(start_paused = true)]
async fn cycle_boundaries_fire_exactly_as_often_as_they_say() {
    let engine = Engine::new();
    for (secs, ticks, once) in [(100_u64, 3_u32, 1_u32), (25, 2, 1), (4, 0, 0), (35, 3, 1)] {
        let t0 = Instant::now();
        let data = Job {
            secs,
            ..job("cycle")
        };
        let (outcome, history) =
            finish_strict_in(&engine.start(&CYCLE, data).await.unwrap(), DAY).await;
        assert_eq!(t0.elapsed(), Duration::from_secs(secs));
        let data = completed(outcome, &history);
        assert_eq!(
            (data.rounds, data.notified, data.worked),
            (ticks, once, true),
            "{secs} s\n{history}"
        );
        // Firings at 5 (once), then 10, 20, 30 (tick), in time order.
        let mut rows = vec![
            (0, "s", Happening::Started),
            (0, "work", Happening::TaskStarted),
        ];
        let mut track = 1;
        if once == 1 {
            rows.extend(ring_rows(track, "once", "remind", "notified", "reminded"));
            track += 1;
        }
        for _ in 0..ticks {
            rows.extend(ring_rows(track, "tick", "ring", "rounds", "rung"));
            track += 1;
        }
        rows.extend([
            (0, "work", done(&["worked"])),
            (0, "done", Happening::Ended),
        ]);
        assert_eq!(steps(&history), rows, "{secs} s");
    }
}

process! {
    /// A task of `secs` seconds with an endless cycle.
    ENDLESS: Job {
        start    s;
        task     work = |j| async move {
            tokio::time::sleep(Duration::from_secs(j.secs)).await;
            j.worked = true;
            Ok(())
        };
        boundary tick on work: non_interrupting timer(every = Duration::from_secs(10));
        task     ring = |j| async move {
            j.rounds += 1;
            Ok(())
        };
        end      done;
        end      rung;
        s -> work -> done;
        tick -> ring -> rung;
    }
}

/// A cycle without `times` fires every period for as long as its task runs.
#[tokio::test(start_paused = true)]
async fn an_endless_cycle_fires_every_period_while_its_task_runs() {
    let engine = Engine::new();
    for (secs, ticks) in [(55_u64, 5_u32), (101, 10), (9, 0)] {
        let t0 = Instant::now();
        let data = Job {
            secs,
            ..job("endless")
        };
        let (outcome, history) =
            finish_strict_in(&engine.start(&ENDLESS, data).await.unwrap(), DAY).await;
        assert_eq!(t0.elapsed(), Duration::from_secs(secs));
        assert_eq!(completed(outcome, &history).rounds, ticks);
        assert_eq!(spawns(&history, "tick"), ticks as usize);
        assert_eq!(completions(&history, "work"), 1);
    }
}

process! {
    /// A cycle of zero times.
    NO_TIMES: Job {
        start    s;
        task     work = |j| async move {
            tokio::time::sleep(Duration::from_secs(60)).await;
            j.worked = true;
            Ok(())
        };
        boundary tick on work: non_interrupting timer(every = Duration::from_secs(10), times = 0);
        end      done;
        end      rung;
        s -> work -> done;
        tick -> rung;
    }
}

/// `times = 0`: the cycle never fires.
#[tokio::test(start_paused = true)]
async fn a_cycle_of_zero_times_never_fires() {
    let engine = Engine::new();
    let (outcome, history) =
        finish_strict_in(&engine.start(&NO_TIMES, job("zero")).await.unwrap(), DAY).await;
    completed(outcome, &history);
    assert_eq!(spawns(&history, "tick"), 0, "{history}");
}

process! {
    /// A task that ends exactly when its timeout is due.
    TIE: Job {
        start    s;
        task     work = |j| async move {
            tokio::time::sleep(Duration::from_secs(30)).await;
            j.worked = true;
            Ok(())
        };
        boundary late on work: timer(Duration::from_secs(30));
        end      done;
        end      gave_up;
        s -> work -> done;
        late -> gave_up;
    }
}

/// The task ends exactly when its timeout is due: exactly one of them wins, and the
/// history and data agree on which.
#[tokio::test(start_paused = true)]
async fn a_timeout_due_as_the_task_ends_has_one_winner() {
    let engine = Engine::new();
    let mut runs: Vec<_> = Vec::new();
    for i in 0..RUNS {
        runs.push(engine.start(&TIE, job(format!("tie-{i}"))).await.unwrap());
    }
    for handle in &runs {
        let (outcome, history) = finish_strict_in(handle, DAY).await;
        let data = completed(outcome, &history);
        let rows = steps(&history);
        if data.worked {
            assert_eq!(
                rows,
                [
                    (0, "s", Happening::Started),
                    (0, "work", Happening::TaskStarted),
                    (0, "work", done(&["worked"])),
                    (0, "done", Happening::Ended),
                ]
            );
        } else {
            assert_eq!(
                rows,
                [
                    (0, "s", Happening::Started),
                    (0, "work", Happening::TaskStarted),
                    (0, "work", interrupted("late")),
                    (1, "late", spawned(0)),
                    (1, "late", caught(&[])),
                    (1, "gave_up", Happening::Ended),
                ]
            );
        }
    }
}

process! {
    /// An error after 5 s, a timeout at 10 s; the error path waits 20 s more.
    ERROR_BEFORE_TIMEOUT: Job {
        start    s;
        task     charge = |j| async move {
            tokio::time::sleep(Duration::from_secs(5)).await;
            j.worked = true;
            Err(TaskError::bpmn("DECLINED", "declined after 5 s"))
        };
        boundary late on charge: timer(Duration::from_secs(10));
        boundary declined on charge: error("DECLINED");
        catch    cool_off: timer(Duration::from_secs(20));
        end      done;
        end      gave_up;
        end      declined_end;
        s -> charge -> done;
        late -> gave_up;
        declined -> cool_off -> declined_end;
    }
}

/// An error at 5 s is caught and the 10 s timeout goes with the activity: the
/// instance is still alive at 10 s (cooling off) and nothing fires then.
#[tokio::test(start_paused = true)]
async fn an_error_boundary_disarms_the_timer_boundary() {
    let engine = Engine::new();
    let t0 = Instant::now();
    let (outcome, history) = finish_strict_in(
        &engine.start(&ERROR_BEFORE_TIMEOUT, job("e")).await.unwrap(),
        DAY,
    )
    .await;
    assert_eq!(t0.elapsed(), Duration::from_secs(25));
    assert!(!completed(outcome, &history).worked);
    assert_eq!(
        steps(&history),
        [
            (0, "s", Happening::Started),
            (0, "charge", Happening::TaskStarted),
            (0, "charge", error_thrown("DECLINED")),
            (0, "charge", interrupted("declined")),
            (1, "declined", spawned(0)),
            (1, "declined", caught(&[])),
            (1, "cool_off", Happening::Parked),
            (1, "cool_off", caught(&[])),
            (1, "declined_end", Happening::Ended),
        ]
    );
}

process! {
    /// A user task with an hour's deadline, then another user task.
    DEADLINE: Job {
        start    s;
        user     approve;
        boundary expire on approve: timer(Duration::from_secs(3600));
        user     next;
        end      done;
        end      expired;
        s -> approve -> next -> done;
        expire -> expired;
    }
}

/// A timer boundary on a user task: nobody approves within the hour, so it fires at
/// the hour and the work is withdrawn.
#[tokio::test(start_paused = true)]
async fn a_timer_boundary_withdraws_a_user_task() {
    let engine = Engine::new();
    let t0 = Instant::now();
    let handle = engine.start(&DEADLINE, job("late")).await.unwrap();
    expect_open_work(&handle, "approve").await;
    tokio::time::sleep(Duration::from_secs(3599)).await;
    assert_eq!(handle.open_work().await.len(), 1);
    let (outcome, history) = finish_strict_in(&handle, DAY).await;
    assert_eq!(t0.elapsed(), Duration::from_secs(3600));
    completed(outcome, &history);
    assert_eq!(
        steps(&history),
        [
            (0, "s", Happening::Started),
            (0, "approve", Happening::Parked),
            (0, "approve", interrupted("expire")),
            (1, "expire", spawned(0)),
            (1, "expire", caught(&[])),
            (1, "expired", Happening::Ended),
        ]
    );
    assert_eq!(
        handle.complete("approve", |_: &mut Job| {}).await,
        Err(WorkError::InstanceEnded)
    );
}

/// Approved in time, the deadline goes with the task: hours later, while the
/// instance waits at the next task, nothing has fired.
#[tokio::test(start_paused = true)]
async fn a_timer_boundary_is_gone_once_its_user_task_is_done() {
    let engine = Engine::new();
    let handle = engine.start(&DEADLINE, job("early")).await.unwrap();
    expect_open_work(&handle, "approve").await;
    tokio::time::sleep(Duration::from_secs(10)).await;
    handle
        .complete("approve", |j: &mut Job| j.rounds = 1)
        .await
        .expect("approve is open");
    expect_open_work(&handle, "next").await;
    tokio::time::sleep(Duration::from_secs(7200)).await;
    let expected = [
        (0, "s", Happening::Started),
        (0, "approve", Happening::Parked),
        (0, "approve", done(&["rounds"])),
        (0, "next", Happening::Parked),
    ];
    assert_eq!(steps(&handle.history().await), expected);
    assert_eq!(
        handle.complete("approve", |_: &mut Job| {}).await,
        Err(WorkError::NoOpenWork {
            node: "approve".into()
        })
    );
    complete(&handle, "next", |_: &mut Job| {}).await;
    let (outcome, history) = finish_strict_in(&handle, DAY).await;
    completed(outcome, &history);
    assert_eq!(history.ended_at(), ["done"]);
    assert_eq!(spawns(&history, "expire"), 0);
}

// Each test below pinned a bug of the instance loop (it failed before its fix).

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
    let (answered, fired, outcome) = rt.block_on(async {
        let engine = Engine::new();
        let h = engine.start(&ZERO_CYCLE, D::default()).await.unwrap();
        tokio::time::sleep(Duration::from_millis(50)).await;
        let answered = tokio::time::timeout(Duration::from_millis(500), h.open_work()).await;
        if answered.is_err() {
            return (answered, 0, None);
        }
        let fired = h
            .history()
            .await
            .count("tick", |w| matches!(w, Happening::Caught { .. }));
        h.complete("u", |_| ()).await.expect("u is open");
        (answered, fired, Some(h.outcome().await))
    });
    assert!(
        answered.is_ok(),
        "the instance's loop no longer answers: it fires the zero-period cycle for ever"
    );
    assert_eq!(fired, 1, "a zero-period cycle fires once");
    assert!(
        matches!(outcome, Some(Outcome::Completed(_))),
        "{outcome:?}"
    );
}
