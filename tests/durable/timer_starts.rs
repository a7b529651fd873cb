//! Durable timer-start schedules: a redeploy after a restart goes on with the stored
//! schedule — the next tick a period after the last, missed ticks each once and in
//! order, a spent schedule (a date that fired, a cycle's count) spent for good.

use super::*;
use tokio::time::Instant;

#[derive(Clone, Debug, Default, PartialEq, ProcessData, Serialize, Deserialize)]
pub struct Beat {
    pub beats: u32,
}

process! {
    HOURLY: Beat {
        start tick: timer(every = Duration::from_secs(3600), times = 5);
        task  count = |b| async move { b.beats += 1; Ok(()) };
        end   done;
        tick -> count -> done;
    }
}

process! {
    ONCE_SOON: Beat {
        start tick: timer(Duration::from_secs(600));
        end   done;
        tick -> done;
    }
}

/// Await `work` without letting the paused clock run: the store's writer thread
/// answers from outside the runtime, and an idle runtime on a paused clock jumps to
/// its next timer — the next tick — meanwhile. So the test never idles while it waits
/// for the writer (and uses no timeout); it awaits plainly only what needs the clock
/// to move (a tick), while no other timer is pending.
async fn busy<F: std::future::Future>(work: F) -> F::Output {
    tokio::pin!(work);
    loop {
        tokio::select! {
            biased;
            out = &mut work => return out,
            _ = tokio::task::yield_now() => {}
        }
    }
}

/// The next tick of a deployment, finished; `None` once its schedule ran out.
async fn tick_done(ticks: &mut thresh::Deployment<Beat>) -> Option<InstanceId> {
    let handle = ticks.next().await?;
    let beat = busy(handle.outcome()).await.completed().expect("completed");
    assert_eq!(beat.beats, 1);
    Some(handle.id())
}

fn ended_instances(store: &TestStore, process: &str) -> Vec<u64> {
    let all = store.list(Some(process), None).expect("read");
    assert!(all.iter().all(|r| r.status == Status::Completed), "{all:?}");
    all.iter().map(|r| r.id).collect()
}

/// An hourly cycle of five: two ticks, a restart half an hour before the third (it
/// comes half an hour after the redeploy, not an hour), a stop of five hours (ticks
/// four and five fire at once at the redeploy, in order), and no sixth.
#[tokio::test(start_paused = true)]
async fn a_timer_cycle_goes_on_from_its_stored_anchor_across_restarts() {
    let store = test_store();
    let engine = store.engine().expect("open");
    let t0 = Instant::now();
    let mut ticks = engine.deploy(&HOURLY, Beat::default()).expect("deployed");
    let mut ids = Vec::new();
    for _ in 0..2 {
        ids.push(tick_done(&mut ticks).await.expect("a tick"));
    }
    assert_eq!(t0.elapsed(), Duration::from_secs(2 * 3600));
    tokio::time::sleep(Duration::from_secs(1800)).await;
    busy(engine.shutdown(HANG)).await.expect("shutdown");

    let engine = store.engine().expect("reopen");
    busy(engine.resume()).await.expect("resume");
    let redeployed = Instant::now();
    let mut ticks = engine.deploy(&HOURLY, Beat::default()).expect("deployed");
    let third = ticks.next().await.expect("the third tick");
    let waited = redeployed.elapsed();
    assert!(busy(third.outcome()).await.completed().is_some());
    ids.push(third.id());
    assert!(
        waited >= Duration::from_secs(1799) && waited <= Duration::from_secs(1801),
        "the third tick came {waited:?} after the redeploy, not at its anchor"
    );
    busy(engine.shutdown(HANG)).await.expect("shutdown");

    // Five hours with no engine: ticks four and five are overdue.
    tokio::time::sleep(Duration::from_secs(5 * 3600)).await;
    let engine = store.engine().expect("reopen");
    busy(engine.resume()).await.expect("resume");
    let redeployed = Instant::now();
    let mut ticks = engine.deploy(&HOURLY, Beat::default()).expect("deployed");
    for _ in 0..2 {
        ids.push(tick_done(&mut ticks).await.expect("a caught-up tick"));
    }
    assert!(
        redeployed.elapsed() < Duration::from_secs(1),
        "caught up at once"
    );
    // The count is kept: the schedule is spent, the deployment says so.
    assert!(busy(ticks.next()).await.is_none(), "no sixth tick");
    busy(engine.shutdown(HANG)).await.expect("shutdown");
    assert!(ids.windows(2).all(|w| w[0] < w[1]), "in order: {ids:?}");
    assert_eq!(ended_instances(&store, "HOURLY").len(), 5);

    // Spent for good: a further redeploy starts nothing, even after a day.
    let engine = store.engine().expect("reopen");
    let mut ticks = engine.deploy(&HOURLY, Beat::default()).expect("deployed");
    assert!(
        busy(ticks.next()).await.is_none(),
        "a spent schedule stays spent"
    );
    tokio::time::sleep(Duration::from_secs(24 * 3600)).await;
    busy(engine.shutdown(HANG)).await.expect("shutdown");
    assert_eq!(ended_instances(&store, "HOURLY").len(), 5);
    let stored = store.deployments().expect("read");
    assert_eq!(stored.len(), 1, "one deployment record, reused: {stored:?}");
    assert!(
        stored[0].timer_anchors.contains(r#""fired":5"#),
        "{}",
        stored[0].timer_anchors
    );
}

/// A once-only timer that fired does not fire again at a redeploy; one that had not
/// fired yet keeps its deadline; `undeploy` forgets the schedule, so a later deploy
/// begins anew.
#[tokio::test(start_paused = true)]
async fn a_fired_date_does_not_fire_again_and_undeploy_forgets_the_schedule() {
    let store = test_store();
    let engine = store.engine().expect("open");
    let t0 = Instant::now();
    let ticks = engine
        .deploy(&ONCE_SOON, Beat::default())
        .expect("deployed");
    tokio::time::sleep(Duration::from_secs(300)).await;
    busy(engine.shutdown(HANG)).await.expect("shutdown");
    drop(ticks);

    // Redeployed five minutes in: it fires at its deadline, ten minutes after the
    // first deploy.
    let engine = store.engine().expect("reopen");
    let mut ticks = engine
        .deploy(&ONCE_SOON, Beat::default())
        .expect("deployed");
    let handle = ticks.next().await.expect("the tick");
    assert_eq!(t0.elapsed(), Duration::from_secs(600));
    assert!(busy(handle.outcome()).await.completed().is_some());
    assert!(busy(ticks.next()).await.is_none(), "once");
    busy(engine.shutdown(HANG)).await.expect("shutdown");

    let engine = store.engine().expect("reopen");
    let mut ticks = engine
        .deploy(&ONCE_SOON, Beat::default())
        .expect("deployed");
    assert!(
        busy(ticks.next()).await.is_none(),
        "a fired date does not fire again"
    );
    assert!(busy(engine.undeploy(ticks.id())).await.expect("stored"));
    assert!(store.deployments().expect("read").is_empty());
    busy(engine.shutdown(HANG)).await.expect("shutdown");
    assert_eq!(store.list(Some("ONCE_SOON"), None).expect("read").len(), 1);

    let engine = store.engine().expect("reopen");
    let begun = Instant::now();
    let mut ticks = engine
        .deploy(&ONCE_SOON, Beat::default())
        .expect("deployed");
    let handle = ticks.next().await.expect("a new schedule");
    assert_eq!(begun.elapsed(), Duration::from_secs(600));
    assert!(busy(handle.outcome()).await.completed().is_some());
    busy(engine.shutdown(HANG)).await.expect("shutdown");
    assert_eq!(store.list(Some("ONCE_SOON"), None).expect("read").len(), 2);
}
