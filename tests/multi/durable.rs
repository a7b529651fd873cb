use std::sync::Arc;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use thresh::store::MemoryStore;
use thresh::{process, DurableEngine, InstanceHandle, Outcome, ProcessData, TaskError};
use tokio::sync::Semaphore;

const HANG: Duration = Duration::from_secs(20);

#[derive(Clone, Debug, Default, PartialEq, ProcessData, Serialize, Deserialize)]
pub struct Batch {
    pub items: Vec<String>,
    pub labels: Vec<String>,
    pub approvals: u32,
}

/// Instance 0 of `LABELS` waits for a permit; the others finish at once.
static GATE: Semaphore = Semaphore::const_new(0);

async fn label(_b: &mut Batch, item: &String, index: usize) -> Result<String, TaskError> {
    if index == 0 {
        GATE.acquire()
            .await
            .map_err(TaskError::from_error)?
            .forget();
    }
    Ok(format!("{index}:{item}"))
}

process! {
    LABELS: Batch {
        start s;
        #[multi_instance(each = |b| b.items.clone(), output = |b, _i, l| b.labels.push(l))]
        task label = label;
        end e;
        s -> label -> e;
    }
}

process! {
    REVIEWS: Batch {
        start s;
        #[multi_instance(each = |b| b.items.clone())]
        user review;
        #[standard_loop(while = |_b, runs| runs < 3)]
        user sign;
        end e;
        s -> review -> sign -> e;
    }
}

async fn restart(store: &Arc<MemoryStore>, old: DurableEngine) -> DurableEngine {
    old.shutdown(HANG).await.expect("shutdown");
    let engine = DurableEngine::with_store(store.clone()).expect("reopen");
    engine.register(&LABELS).expect("register");
    engine.register(&REVIEWS).expect("register");
    let report = engine.resume().await.expect("resume");
    assert!(report.skipped.is_empty(), "{:?}", report.skipped);
    engine
}

async fn open(handle: &InstanceHandle<Batch>, node: &str) -> usize {
    tokio::time::timeout(HANG, async {
        loop {
            let n = handle
                .open_work()
                .await
                .iter()
                .filter(|w| w.node == node)
                .count();
            if n > 0 {
                return n;
            }
            tokio::task::yield_now().await;
        }
    })
    .await
    .expect("open work")
}

fn batch(n: usize) -> Batch {
    Batch {
        items: (0..n).map(|i| format!("x{i}")).collect(),
        ..Batch::default()
    }
}

/// Instances 1 and 2 complete while 0 still runs: their outputs wait for 0's (index
/// order) and cannot be stored, so after the restart they run again, 0 runs again,
/// and the outputs are merged once each, in index order.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn outputs_not_merged_at_a_restart_are_made_again_and_merged_once_in_order() {
    let store = Arc::new(MemoryStore::new());
    let engine = DurableEngine::with_store(store.clone()).expect("open");
    let handle = engine.start(&LABELS, batch(3)).await.expect("stored");
    let id = handle.id();
    tokio::time::timeout(HANG, async {
        while handle.history().await.count("label", |w| {
            matches!(w, thresh::Happening::Completed { .. })
        }) < 2
        {
            tokio::task::yield_now().await;
        }
    })
    .await
    .expect("two instances completed");
    let engine = restart(&store, engine).await;
    let handle = engine.handle(&LABELS, id).expect("resumed");
    GATE.add_permits(1);
    let Outcome::Completed(done) = tokio::time::timeout(HANG, handle.outcome()).await.unwrap()
    else {
        panic!("not completed")
    };
    assert_eq!(done.labels, ["0:x0", "1:x1", "2:x2"]);
    engine.shutdown(HANG).await.unwrap();
}

/// A multi-instance user task keeps its open instances and its counts across a
/// restart; a loop keeps its run count.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn instances_and_loop_runs_wait_across_a_restart() {
    let store = Arc::new(MemoryStore::new());
    let engine = DurableEngine::with_store(store.clone()).expect("open");
    let handle = engine.start(&REVIEWS, batch(3)).await.expect("stored");
    let id = handle.id();
    assert_eq!(open(&handle, "review").await, 3);
    handle
        .complete("review", |b| b.approvals += 1)
        .await
        .unwrap();
    let engine = restart(&store, engine).await;
    let handle = engine.handle(&REVIEWS, id).expect("resumed");
    assert_eq!(
        open(&handle, "review").await,
        2,
        "the completed instance stays completed"
    );
    handle
        .complete("review", |b| b.approvals += 1)
        .await
        .unwrap();
    handle
        .complete("review", |b| b.approvals += 1)
        .await
        .unwrap();
    open(&handle, "sign").await;
    handle.complete("sign", |_| {}).await.unwrap();
    let engine = restart(&store, engine).await;
    let handle = engine.handle(&REVIEWS, id).expect("resumed");
    // Run 1 of 3 waits again after the restart; then run 2, then the loop ends.
    for _ in 0..2 {
        open(&handle, "sign").await;
        handle.complete("sign", |_| {}).await.unwrap();
    }
    let outcome = tokio::time::timeout(HANG, handle.outcome()).await.unwrap();
    assert!(matches!(outcome, Outcome::Completed(_)), "{outcome:?}");
    engine.shutdown(HANG).await.unwrap();
}
