//! Versions of a process under one name on a durable engine (README, "Versions"):
//! stored instances resume on the version they were stored with, whichever is the
//! newest; a query says which version each runs on; a deploy of a newer version
//! goes on with the older one's timer-start schedule. (The in-memory side is
//! `tests/versions.rs`.)

use super::*;
use thresh::{Query, SkipReason};
use tokio::time::Instant;

#[derive(Clone, Debug, Default, PartialEq, ProcessData, Serialize, Deserialize)]
pub struct Claim {
    pub total: u64,
    pub reviewed: bool,
    pub beats: u32,
}

process! {
    CLAIM_V1: Claim = "claim" version 1 {
        start received;
        task  price = |c| async move { c.total = 100; Ok(()) };
        user  approve;
        end   done;
        received -> price -> approve -> done;
    }

    CLAIM_V2: Claim = "claim" version 2 {
        start received;
        task  price = |c| async move { c.total = 120; Ok(()) };
        user  approve;
        task  review = |c| async move { c.reviewed = true; Ok(()) };
        end   done;
        received -> price -> approve -> review -> done;
    }

    BEAT_V1: Claim = "beat" version 1 {
        start tick: timer(every = Duration::from_secs(3600), times = 5);
        task  count = |c| async move { c.beats += 1; Ok(()) };
        end   done;
        tick -> count -> done;
    }

    BEAT_V2: Claim = "beat" version 2 {
        start tick: timer(every = Duration::from_secs(3600), times = 5);
        task  count = |c| async move { c.beats += 10; Ok(()) };
        task  review = |c| async move { c.reviewed = true; Ok(()) };
        end   done;
        tick -> count -> review -> done;
    }
}

fn both(engine: &DurableEngine) -> Result<(), thresh::EngineError> {
    engine.register(&CLAIM_V1)?;
    engine.register(&CLAIM_V2)
}

/// Approve the open `approve` of `handle` and read the outcome.
async fn approved(handle: InstanceHandle<Claim>) -> Claim {
    until_open(&handle, "approve").await;
    handle
        .complete("approve", |_: &mut Claim| {})
        .await
        .expect("approved");
    tokio::time::timeout(HANG, handle.outcome())
        .await
        .expect("ended")
        .completed()
        .expect("completed")
}

/// Instances of two versions, parked, resume after a restart each on its own
/// version and finish as its model says.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stored_instances_resume_each_on_its_version() {
    let store = test_store();
    let engine = store.engine().expect("open");
    both(&engine).expect("registered");
    let v1 = engine
        .start_version("claim", 1, Claim::default())
        .await
        .expect("v1");
    let v2 = engine
        .start_newest("claim", Claim::default())
        .await
        .expect("v2");
    until_open(&v1, "approve").await;
    until_open(&v2, "approve").await;
    let (v1, v2) = (v1.id(), v2.id());

    let restarted = thresh::testing::restart(engine, &store, both)
        .await
        .expect("restarted");
    assert!(
        restarted.report.skipped.is_empty(),
        "{:?}",
        restarted.report.skipped
    );
    assert_eq!(restarted.report.resumed.len(), 2);
    assert!(
        restarted.handle(&CLAIM_V2, v1).is_none(),
        "a version 1 instance is not one of version 2"
    );
    let first = approved(restarted.handle(&CLAIM_V1, v1).expect("v1 resumed")).await;
    assert_eq!((first.total, first.reviewed), (100, false));
    let second = approved(restarted.handle(&CLAIM_V2, v2).expect("v2 resumed")).await;
    assert_eq!((second.total, second.reviewed), (120, true));
    restarted.engine.shutdown(HANG).await.expect("shutdown");
}

/// With only the newer version registered, an instance of the older one is
/// skipped (the model it was stored with is not here) and left stored.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_instance_of_a_version_not_registered_is_skipped_and_kept() {
    let store = test_store();
    let engine = store.engine().expect("open");
    let v1 = engine.start(&CLAIM_V1, Claim::default()).await.expect("v1");
    until_open(&v1, "approve").await;
    let id = v1.id();

    let restarted = thresh::testing::restart(engine, &store, |e| e.register(&CLAIM_V2))
        .await
        .expect("restarted");
    let skipped: Vec<_> = restarted
        .report
        .skipped
        .iter()
        .map(|s| (s.id, s.reason.clone()))
        .collect();
    assert_eq!(
        skipped,
        [(
            id,
            SkipReason::ModelChanged {
                stored: CLAIM_V1.fingerprint(),
                registered: CLAIM_V2.fingerprint(),
            }
        )]
    );
    restarted.engine.shutdown(HANG).await.expect("shutdown");

    // Registered again, it resumes.
    let restarted = thresh::testing::restart(restarted.engine, &store, both)
        .await
        .expect("restarted");
    let first = approved(restarted.handle(&CLAIM_V1, id).expect("resumed")).await;
    assert_eq!(first.total, 100);
    restarted.engine.shutdown(HANG).await.expect("shutdown");
}

/// A stored query by name lists every version's instances with their version; a
/// query of a version's static lists that version's.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn queries_say_which_version_an_instance_runs_on() {
    let store = test_store();
    let engine = store.engine().expect("open");
    both(&engine).expect("registered");
    let v1 = engine.start(&CLAIM_V1, Claim::default()).await.expect("v1");
    let v2 = engine.start(&CLAIM_V2, Claim::default()).await.expect("v2");
    until_open(&v1, "approve").await;
    until_open(&v2, "approve").await;
    // Waits are stored with the checkpoint that parks the instance.
    let named = Query::<serde_json::Value>::named("claim").waiting_at("approve");
    let listed = tokio::time::timeout(HANG, async {
        loop {
            let page = engine.instances(&named).await.expect("query");
            if page.items.len() == 2 {
                return page;
            }
            tokio::task::yield_now().await;
        }
    })
    .await
    .expect("both listed");
    let versions: Vec<_> = listed.items.iter().map(|s| (s.id, s.version)).collect();
    assert_eq!(versions, [(v1.id(), Some(1)), (v2.id(), Some(2))]);
    let of_v2 = engine
        .instances(&Query::of(&CLAIM_V2))
        .await
        .expect("query");
    let ids: Vec<_> = of_v2.items.iter().map(|s| s.id).collect();
    assert_eq!(ids, [v2.id()]);
    // The picture of a version 1 instance asked through version 2 is drawn on
    // version 1, and says so.
    let picture = engine
        .picture(&CLAIM_V2, v1.id())
        .await
        .expect("read")
        .expect("drawn");
    assert!(picture.contains("<title>claim</title>"), "{picture}");
    assert!(!picture.contains("review"), "drawn on version 1");
    engine.shutdown(HANG).await.expect("shutdown");
}

/// Await `work` without letting the paused clock run (see `timer_starts::busy`).
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

/// The next tick's instance, finished.
async fn beat(ticks: &mut thresh::Deployment<Claim>) -> Claim {
    let handle = ticks.next().await.expect("a tick");
    busy(handle.outcome()).await.completed().expect("completed")
}

/// An hourly timer start of version 1 ticks twice; after a restart a deploy of
/// version 2 goes on with its schedule: the third tick comes at version 1's
/// anchor (half an hour after the redeploy, not an hour) and starts version 2.
/// Deployed again on the same engine, version 1 is refused; and a newer deploy on
/// a running engine takes the deployment over with its count.
#[tokio::test(start_paused = true)]
async fn a_redeploy_moves_a_timer_start_to_the_new_version() {
    let store = test_store();
    let engine = store.engine().expect("open");
    let mut ticks = engine.deploy(&BEAT_V1, Claim::default()).expect("v1");
    for _ in 0..2 {
        assert_eq!(beat(&mut ticks).await.beats, 1);
    }
    tokio::time::sleep(Duration::from_secs(1800)).await;
    busy(engine.shutdown(HANG)).await.expect("shutdown");

    let engine = store.engine().expect("reopen");
    engine.register(&BEAT_V1).expect("v1");
    busy(engine.resume()).await.expect("resume");
    let redeployed = Instant::now();
    let mut ticks = engine.deploy(&BEAT_V2, Claim::default()).expect("v2");
    let third = beat(&mut ticks).await;
    let waited = redeployed.elapsed();
    assert_eq!((third.beats, third.reviewed), (10, true), "version 2 ran");
    assert!(
        waited >= Duration::from_secs(1799) && waited <= Duration::from_secs(1801),
        "the third tick came {waited:?} after the redeploy, not at version 1's anchor"
    );
    assert!(
        engine.deploy(&BEAT_V1, Claim::default()).is_err(),
        "version 2 is deployed"
    );
    busy(engine.shutdown(HANG)).await.expect("shutdown");
    let stored = store.deployments().expect("read");
    assert_eq!(stored.len(), 1, "one deployment record, reused: {stored:?}");
    assert_eq!(stored[0].fingerprint, BEAT_V2.fingerprint());
    assert!(
        stored[0].timer_anchors.contains(r#""fired":3"#),
        "{}",
        stored[0].timer_anchors
    );
}

/// On a running engine, a deploy of version 2 replaces version 1's deployment
/// and goes on with its schedule: the older stream ends, the next tick comes an
/// hour after the last one and runs version 2, and the count of five is kept.
#[tokio::test(start_paused = true)]
async fn a_newer_deploy_takes_over_a_running_timer_start() {
    let store = test_store();
    let engine = store.engine().expect("open");
    engine.register(&BEAT_V1).expect("v1");
    let t0 = Instant::now();
    let mut old = engine.deploy(&BEAT_V1, Claim::default()).expect("v1");
    for _ in 0..3 {
        assert_eq!(beat(&mut old).await.beats, 1);
    }
    tokio::time::sleep(Duration::from_secs(600)).await;
    let mut new = engine.deploy(&BEAT_V2, Claim::default()).expect("v2");
    assert!(
        busy(old.next()).await.is_none(),
        "version 1's deployment ended"
    );
    for _ in 0..2 {
        assert_eq!(beat(&mut new).await.beats, 10);
    }
    assert_eq!(t0.elapsed(), Duration::from_secs(5 * 3600), "on schedule");
    assert!(busy(new.next()).await.is_none(), "five in all");
    busy(engine.shutdown(HANG)).await.expect("shutdown");
}
