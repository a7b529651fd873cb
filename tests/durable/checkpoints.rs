//! Checkpoint granularity: by default a task after a task starts only once the
//! checkpoint recording its predecessor's completion is stored (so after a crash only
//! the tasks that were running run again); `Checkpoints::WaitStates` checkpoints only
//! when no task works, and a crash re-runs every task since the last wait state.

use super::*;
use std::sync::{Mutex, OnceLock};
use thresh::Checkpoints;

#[derive(Clone, Debug, Default, PartialEq, ProcessData, Serialize, Deserialize)]
pub struct Steps {
    pub id: String,
    pub a: bool,
    pub b: bool,
    pub b_saw_a: bool,
    pub c_saw_b: bool,
}

/// The store the chain's handlers read (one test uses it at a time).
static CHAIN_STORE: OnceLock<Mutex<Option<Arc<dyn Store>>>> = OnceLock::new();

/// Whether the store holds `field` of the running instance's data as `true`.
fn stored_true(field: &str) -> bool {
    let context = thresh::task::current().expect("in a task");
    let store = CHAIN_STORE
        .get_or_init(Default::default)
        .lock()
        .unwrap()
        .clone();
    let record = store
        .expect("a store")
        .instance(context.instance.0)
        .expect("read")
        .expect("stored");
    let state: serde_json::Value = serde_json::from_str(&record.state).expect("JSON");
    state["running"]["data"][field] == serde_json::Value::Bool(true)
}

process! {
    CHAIN: Steps {
        start s;
        task  a = |o| async move { o.a = true; Ok(()) };
        task  b = |o| async move { o.b_saw_a = stored_true("a"); o.b = true; Ok(()) };
        task  c = |o| async move { o.c_saw_b = stored_true("b"); Ok(()) };
        end   done;
        s -> a -> b -> c -> done;
    }
}

/// Inline tasks one after another: each sees its predecessor's completion in the
/// store when it starts — by default. Checkpointing at wait states, they run in one
/// go and the store holds only the start until the end.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_task_starts_only_once_its_predecessors_completion_is_stored() {
    for (checkpoints, seen) in [
        (Checkpoints::EveryTask, true),
        (Checkpoints::WaitStates, false),
    ] {
        for round in 0..50 {
            let store = test_store();
            *CHAIN_STORE.get_or_init(Default::default).lock().unwrap() = Some(store.store());
            let engine = store.engine().expect("open");
            engine.checkpoints(checkpoints);
            let handle = engine
                .start(&CHAIN, Steps::default())
                .await
                .expect("stored");
            let steps = tokio::time::timeout(HANG, handle.outcome())
                .await
                .expect("ended")
                .completed()
                .expect("completed");
            assert_eq!(
                (steps.b_saw_a, steps.c_saw_b),
                (seen, seen),
                "{checkpoints:?}, round {round}"
            );
            engine.shutdown(HANG).await.expect("shutdown");
        }
    }
}

static B_RUNS: AtomicUsize = AtomicUsize::new(0);
static HOLD_RUNS: AtomicUsize = AtomicUsize::new(0);
/// While set, `hold` does not return (the engine is stopped meanwhile).
static HOLDING: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(true);

process! {
    AFTER_MESSAGE: Steps {
        start s;
        catch go: message("go", key = |o| o.id.clone());
        task  b = |o| async move { B_RUNS.fetch_add(1, Ordering::SeqCst); o.b = true; Ok(()) };
        task  hold = |_o| async move {
            HOLD_RUNS.fetch_add(1, Ordering::SeqCst);
            while HOLDING.load(Ordering::SeqCst) {
                tokio::task::yield_now().await;
            }
            Ok(())
        };
        end   done;
        s -> go -> b -> hold -> done;
    }
}

/// A stop while `hold` works, after a message and `b`: by default only `hold` runs
/// again after the restart; checkpointing at wait states, the instance goes back to
/// its wait at `go` — the message (still stored: its consume goes with a checkpoint)
/// is delivered again, and `b` runs again too.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn what_a_restart_runs_again_at_each_setting() {
    for (checkpoints, b_runs) in [(Checkpoints::EveryTask, 1), (Checkpoints::WaitStates, 2)] {
        B_RUNS.store(0, Ordering::SeqCst);
        HOLD_RUNS.store(0, Ordering::SeqCst);
        HOLDING.store(true, Ordering::SeqCst);
        let store = test_store();
        let engine = store.engine().expect("open");
        engine.checkpoints(checkpoints);
        let data = Steps {
            id: "X".into(),
            ..Steps::default()
        };
        let handle = engine.start(&AFTER_MESSAGE, data).await.expect("stored");
        let id = handle.id();
        engine
            .publish_message("go", "X", 1_u32)
            .await
            .expect("stored");
        tokio::time::timeout(HANG, async {
            while HOLD_RUNS.load(Ordering::SeqCst) == 0 {
                tokio::task::yield_now().await;
            }
        })
        .await
        .expect("hold started");
        engine.shutdown(HANG).await.expect("shutdown");
        HOLDING.store(false, Ordering::SeqCst);

        let engine = store.engine().expect("reopen");
        engine.checkpoints(checkpoints);
        engine.register(&AFTER_MESSAGE).expect("register");
        engine.message_type::<u32>("go");
        engine.resume().await.expect("resume");
        let handle = engine.handle(&AFTER_MESSAGE, id).expect("resumed");
        let steps = tokio::time::timeout(HANG, handle.outcome())
            .await
            .expect("ended")
            .completed()
            .expect("completed");
        assert!(steps.b);
        assert_eq!(B_RUNS.load(Ordering::SeqCst), b_runs, "{checkpoints:?}");
        assert_eq!(HOLD_RUNS.load(Ordering::SeqCst), 2, "{checkpoints:?}");
        assert!(
            store.messages().expect("read").is_empty(),
            "{checkpoints:?}"
        );
        engine.shutdown(HANG).await.expect("shutdown");
    }
}
