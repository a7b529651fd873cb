//! Loops, running activities, repeated throws, waiting for the handlers.

use super::*;

process! {
    /// `lap` runs three times; each completion is undone, latest first, from the
    /// data that lap left.
    LAPS: Trip {
        start     begin;
        task      lap = |t| async move { yield_jitter().await; t.laps += 1; Ok(()) };
        exclusive more;
        boundary  undo_lap on lap: compensation -> unlap;
        task      unlap = |t| async move {
            yield_jitter().await;
            // The snapshot of its lap: `laps` as that lap left it.
            t.undone_lap = t.laps;
            Ok(())
        }: compensation;
        throw     undo: compensation;
        end       done;
        begin -> lap -> more;
        more -> lap when |t| t.laps < 3;
        more -> undo else;
        undo -> done;
    }
}

async fn laps(engine: Engine, _: usize) {
    let handle = engine.start(&LAPS, Trip::default()).await.unwrap();
    let (outcome, history) = finish_trip(&handle).await;
    let trip = completed_trip(outcome, &history);
    assert_eq!(
        history.completed_tasks(),
        ["lap", "lap", "lap", "unlap", "unlap", "unlap"],
        "{history}"
    );
    // The last handler to run undid the first lap; the data keeps its write.
    assert_eq!((trip.laps, trip.undone_lap), (3, 1));
}

flavors!(laps);

/// What each `unlap` handler saw, per run, in the order they ran (the history does
/// not carry data).
static SEEN: std::sync::Mutex<Vec<(u64, u32)>> = std::sync::Mutex::new(Vec::new());

process! {
    LAPS_SEEN: Trip {
        start     begin;
        task      lap = |t| async move { t.laps += 1; Ok(()) };
        exclusive more;
        boundary  undo_lap on lap: compensation -> unlap;
        task      unlap = |t| async move {
            yield_jitter().await;
            SEEN.lock().unwrap().push((t.run, t.laps));
            Ok(())
        }: compensation;
        throw     undo: compensation;
        end       done;
        begin -> lap -> more;
        more -> lap when |t| t.laps < 3;
        more -> undo else;
        undo -> done;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn each_lap_is_undone_from_its_own_snapshot_latest_first() {
    common::repeat(100, |engine, i| async move {
        let handle = engine
            .start(
                &LAPS_SEEN,
                Trip {
                    run: 1000 + i as u64,
                    ..Trip::default()
                },
            )
            .await
            .unwrap();
        let (outcome, history) = finish_trip(&handle).await;
        completed_trip(outcome, &history);
    })
    .await;
    let seen = SEEN.lock().unwrap();
    for i in 0..100u64 {
        let mine: Vec<u32> = seen
            .iter()
            .filter(|(r, _)| *r == 1000 + i)
            .map(|&(_, l)| l)
            .collect();
        assert_eq!(mine, [3, 2, 1], "run {i}");
    }
}

process! {
    /// `slow` is still open (a user task) when `fast`'s branch throws: only `fast`
    /// is undone. Then the throw waits for `unfast`: `after` sees its write.
    RUNNING: Trip {
        start    begin;
        parallel fork;
        user     slow;
        task     fast = |t| async move { t.charged = true; Ok(()) };
        boundary undo_slow on slow: compensation -> unslow;
        boundary undo_fast on fast: compensation -> unfast;
        task     unslow = |t| async move { t.released = true; Ok(()) }: compensation;
        task     unfast = |t| async move {
            // Waits (on the paused clock: no real time) before it writes.
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
            t.refunded = 1;
            Ok(())
        }: compensation;
        throw    undo: compensation;
        task     after = |t| async move { t.after = t.refunded == 1; Ok(()) };
        end      e1;
        end      e2;
        begin -> fork -> slow, fast;
        slow -> e1;
        fast -> undo -> after -> e2;
    }
}

#[tokio::test(start_paused = true)]
async fn an_activity_still_running_is_not_undone_and_the_throw_waits_for_its_handlers() {
    let engine = Engine::new();
    let handle = engine.start(&RUNNING, Trip::default()).await.unwrap();
    // Sleeping lets the paused clock move on to the handler's timer.
    while !handle.history().await.completed_tasks().contains(&"after") {
        assert!(!handle.is_finished());
        tokio::time::sleep(std::time::Duration::from_millis(1)).await;
    }
    handle.complete("slow", |_| {}).await.expect("slow is open");
    let (outcome, history) = finish_trip(&handle).await;
    let trip = completed_trip(outcome, &history);
    assert!(trip.after && !trip.released, "{trip:?}");
    assert_eq!(
        history.completed_tasks(),
        ["fast", "unfast", "after", "slow"]
    );
}
