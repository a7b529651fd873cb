//! Compensation of repeated activities across restarts: the completions of a
//! standard loop's runs and of a multi-instance activity's instances are stored one
//! by one, each with its snapshot and iteration, and after a restart each is still
//! undone once, latest first, from its own snapshot. On the memory and SQLite stores
//! (and PostgreSQL with `--features postgres`).
//!
//! - a looped user task: a restart in the middle of the loop (one run logged in the
//!   running activation) and one after it, before the throw;
//! - a parallel multi-instance task: a restart while the first compensation handler
//!   runs: it runs again from its snapshot, then the two queued instances;
//! - a sequential multi-instance sub-process with a compensation event sub-process: a
//!   restart before the throw and one while the event sub-process waits for a user
//!   task; each instance's event sub-process undoes only that instance's inner task;
//! - a checkpoint of the older engine (one completion for a whole loop, its runs
//!   inside): restored, each run is undone on its own.

use std::sync::Mutex;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use thresh::testing::{restart, Restarted, TestStore};
use thresh::{process, DurableEngine, InstanceHandle, Outcome, ProcessData};

const HANG: Duration = Duration::from_secs(20);

#[derive(Clone, Debug, Default, PartialEq, ProcessData, Serialize, Deserialize)]
pub struct Reps {
    pub run: u64,
    pub items: Vec<u32>,
    pub laps: u32,
    /// The item of the last instance to commit.
    pub last: u32,
}

/// What each compensating task saw, in the order they ran: (run, who, the value it
/// read from its data, its iteration).
static SEEN: Mutex<Vec<Seen>> = Mutex::new(Vec::new());

/// (run, who, the value it read, its iteration).
type Seen = (u64, &'static str, u32, Option<u32>);

fn saw(run: u64, who: &'static str, value: u32) {
    let iteration = thresh::task::current().and_then(|c| c.iteration);
    SEEN.lock().unwrap().push((run, who, value, iteration));
}

fn seen(run: u64, who: &str) -> Vec<(u32, Option<u32>)> {
    SEEN.lock()
        .unwrap()
        .iter()
        .filter(|(r, w, ..)| *r == run && *w == who)
        .map(|&(_, _, v, i)| (v, i))
        .collect()
}

fn attempt() -> u32 {
    thresh::task::current().map_or(0, |c| c.attempt)
}

process! {
    /// Three runs of `lap`, each completed by a person; `confirm`, then the throw.
    LOOP_SIGN: Reps {
        start     begin;
        #[standard_loop(while = |_t, runs| runs < 3)]
        user      lap;
        boundary  undo_lap on lap: compensation -> unlap;
        task      unlap = |t| async move { saw(t.run, "unlap", t.laps); Ok(()) }: compensation;
        user      confirm;
        throw     undo: compensation;
        end       done;
        begin -> lap -> confirm -> undo -> done;
    }
}

process! {
    /// Instances complete in item order (each sleeps its item's milliseconds); the
    /// first handler (the last instance to complete) hangs on its first attempt.
    PACKS: Reps {
        start     begin;
        #[multi_instance(each = |t| t.items.clone())]
        task      pack = |t, item: &u32, _i| {
            let item = *item;
            async move {
                tokio::time::sleep(Duration::from_millis(u64::from(item))).await;
                t.last = item;
                Ok(())
            }
        };
        boundary  undo_pack on pack: compensation -> unpack;
        task      unpack = |t| async move {
            if t.last == 300 && attempt() == 1 {
                std::future::pending::<()>().await;
            }
            saw(t.run, "unpack", t.last);
            Ok(())
        }: compensation;
        throw     undo: compensation(pack);
        end       done;
        begin -> pack -> undo -> done;
    }
}

process! {
    /// Each instance books its item; each instance's compensation event
    /// sub-process asks a person, then undoes that instance's `book`.
    TRIPS: Reps {
        start     begin;
        #[multi_instance(sequential, each = |t| t.items.clone())]
        subprocess trip {
            start     ts;
            #[item]
            task      book = |t, item: &u32, _i| {
                let item = *item;
                async move { t.last = item; Ok(()) }
            };
            boundary  undo_book on book: compensation -> unbook;
            task      unbook = |t| async move { saw(t.run, "unbook", t.last); Ok(()) }: compensation;
            end       te;
            ts -> book -> te;
            event_subprocess undo_trip {
                start     us: compensation;
                user      tell;
                throw     inner: compensation;
                end       ue;
                us -> tell -> inner -> ue;
            }
        }
        user      confirm;
        throw     undo: compensation(trip);
        end       done;
        begin -> trip -> confirm -> undo -> done;
    }
}

fn register(engine: &DurableEngine) -> Result<(), thresh::EngineError> {
    engine.register(&LOOP_SIGN)?;
    engine.register(&PACKS)?;
    engine.register(&TRIPS)
}

async fn reopen(engine: DurableEngine, store: &TestStore) -> DurableEngine {
    let Restarted { engine, report, .. } = restart(engine, store, register).await.expect("restart");
    assert_eq!(report.resumed.len(), 1, "{report:?}");
    engine
}

/// The open work at `node`, once there is some: each item's iteration.
async fn open_at(handle: &InstanceHandle<Reps>, node: &str) -> Vec<Option<u32>> {
    tokio::time::timeout(HANG, async {
        loop {
            let open: Vec<Option<u32>> = handle
                .open_work()
                .await
                .iter()
                .filter(|w| w.node == node)
                .map(|w| w.iteration)
                .collect();
            if !open.is_empty() {
                return open;
            }
            tokio::task::yield_now().await;
        }
    })
    .await
    .unwrap_or_else(|_| panic!("{node} never opened"))
}

/// Wait until the instance's stored checkpoint contains every one of `texts`.
async fn until_stored(store: &TestStore, id: u64, texts: &[&str]) {
    tokio::time::timeout(HANG, async {
        loop {
            let stored = store.instance(id).expect("store").map(|r| r.state);
            if stored.is_some_and(|s| texts.iter().all(|t| s.contains(t))) {
                return;
            }
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
    })
    .await
    .unwrap_or_else(|_| panic!("the checkpoint never had {texts:?}"));
}

async fn completed(handle: &InstanceHandle<Reps>) -> Reps {
    match tokio::time::timeout(HANG, handle.outcome())
        .await
        .expect("ended")
    {
        Outcome::Completed(reps) => reps,
        other => panic!("not completed: {other:?}\n{}", handle.history().await),
    }
}

fn start(run: u64, items: &[u32]) -> Reps {
    Reps {
        run,
        items: items.to_vec(),
        ..Reps::default()
    }
}

async fn loop_runs(store: TestStore, run: u64) {
    let engine = store.engine().expect("open");
    register(&engine).expect("register");
    let handle = engine
        .start(&LOOP_SIGN, start(run, &[]))
        .await
        .expect("stored");
    let id = handle.id();
    assert_eq!(open_at(&handle, "lap").await, [Some(0)]);
    handle
        .complete("lap", |t| t.laps += 1)
        .await
        .expect("lap 1");
    // The second run waits: the first run's completion is logged in the running
    // activation.
    assert_eq!(open_at(&handle, "lap").await, [Some(1)]);

    let mut engine = reopen(engine, &store).await;
    let mut handle = engine.handle(&LOOP_SIGN, id).expect("resumed");
    for (lap, iteration) in [(2, 1), (3, 2)] {
        assert_eq!(open_at(&handle, "lap").await, [Some(iteration)]);
        handle
            .complete("lap", |t| t.laps += 1)
            .await
            .unwrap_or_else(|e| panic!("lap {lap}: {e}"));
    }
    open_at(&handle, "confirm").await;
    for _ in 0..2 {
        engine = reopen(engine, &store).await;
        handle = engine.handle(&LOOP_SIGN, id).expect("resumed");
        open_at(&handle, "confirm").await;
    }
    // Changed after the runs: the handlers still read their runs' data.
    handle
        .complete("confirm", |t| t.laps = 99)
        .await
        .expect("confirm");
    let done = completed(&handle).await;
    assert_eq!(done.laps, 99);
    assert_eq!(
        seen(run, "unlap"),
        [(3, Some(2)), (2, Some(1)), (1, Some(0))],
        "{}",
        handle.history().await
    );
    engine.shutdown(HANG).await.expect("shutdown");
}

async fn parallel_instances(store: TestStore, run: u64) {
    let engine = store.engine().expect("open");
    register(&engine).expect("register");
    // Completed 0 (index 1), 150 (index 2), 300 (index 0).
    let handle = engine
        .start(&PACKS, start(run, &[300, 0, 150]))
        .await
        .expect("stored");
    let id = handle.id();
    // The first handler (index 0's) hangs, the other two completions queued.
    until_stored(&store, id.0, &["\"compensating\"", "\"handler\""]).await;

    let engine = reopen(engine, &store).await;
    let handle = engine.handle(&PACKS, id).expect("resumed");
    completed(&handle).await;
    assert_eq!(
        seen(run, "unpack"),
        [(300, Some(0)), (150, Some(2)), (0, Some(1))],
        "{}",
        handle.history().await
    );
    assert_eq!(
        handle.history().await.completed_tasks(),
        ["unpack", "unpack", "unpack"]
    );
    engine.shutdown(HANG).await.expect("shutdown");
}

async fn sub_process_instances(store: TestStore, run: u64) {
    let engine = store.engine().expect("open");
    register(&engine).expect("register");
    let handle = engine
        .start(&TRIPS, start(run, &[10, 20, 30]))
        .await
        .expect("stored");
    let id = handle.id();
    open_at(&handle, "confirm").await;

    let engine = reopen(engine, &store).await;
    let handle = engine.handle(&TRIPS, id).expect("resumed");
    open_at(&handle, "confirm").await;
    handle.complete("confirm", |_| {}).await.expect("confirm");
    // The last instance's event sub-process asks first.
    assert_eq!(open_at(&handle, "tell").await, [Some(2)]);
    let engine = reopen(engine, &store).await;
    let handle = engine.handle(&TRIPS, id).expect("resumed");
    for iteration in [2, 1, 0] {
        assert_eq!(open_at(&handle, "tell").await, [Some(iteration)]);
        handle.complete("tell", |_| {}).await.expect("tell");
        // Its inner throw undoes its own `book` before the next one asks.
        tokio::time::timeout(HANG, async {
            while seen(run, "unbook").len() < 3 - iteration as usize {
                tokio::time::sleep(Duration::from_millis(1)).await;
            }
        })
        .await
        .expect("unbook ran");
    }
    completed(&handle).await;
    assert_eq!(
        seen(run, "unbook"),
        [(30, Some(2)), (20, Some(1)), (10, Some(0))],
        "{}",
        handle.history().await
    );
    engine.shutdown(HANG).await.expect("shutdown");
}

/// A checkpoint stored before runs were logged one by one holds one completion of
/// the whole loop, its runs as its inner log, and no iterations: after a restart
/// each run is still undone on its own, from its snapshot.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_older_checkpoints_whole_loop_completion_is_undone_run_by_run() {
    let store = TestStore::memory();
    let run = 31;
    let engine = store.engine().expect("open");
    register(&engine).expect("register");
    let handle = engine
        .start(&LOOP_SIGN, start(run, &[]))
        .await
        .expect("stored");
    let id = handle.id();
    for laps in 1..=3 {
        open_at(&handle, "lap").await;
        handle
            .complete("lap", |t| t.laps += 1)
            .await
            .unwrap_or_else(|e| panic!("lap {laps}: {e}"));
    }
    open_at(&handle, "confirm").await;
    engine.shutdown(HANG).await.expect("shutdown");

    // Rewrite the stored log as the older engine wrote it.
    let mut record = store.instance(id.0).expect("store").expect("stored");
    let mut state: serde_json::Value = serde_json::from_str(&record.state).expect("JSON");
    let logs = state["running"]["compensation"]["logs"]
        .as_array_mut()
        .expect("a compensation log");
    assert_eq!(logs.len(), 1, "{logs:?}");
    let mut runs = logs[0]["completions"]
        .as_array()
        .expect("completions")
        .clone();
    assert_eq!(runs.len(), 3, "one completion per run: {runs:?}");
    for r in &mut runs {
        r.as_object_mut().expect("a completion").remove("iteration");
    }
    let data = runs[2]["data"].clone();
    logs[0]["completions"] =
        serde_json::json!([{ "activity": "lap", "data": data, "inner": runs }]);
    record.state = state.to_string();
    record.seq += 1;
    store
        .apply(&[thresh::store::Write::Put(record)])
        .expect("put");

    let engine = store.engine().expect("reopen");
    register(&engine).expect("register");
    let report = engine.resume().await.expect("resume");
    assert_eq!(report.resumed.len(), 1, "{report:?}");
    let handle = engine.handle(&LOOP_SIGN, id).expect("resumed");
    open_at(&handle, "confirm").await;
    handle.complete("confirm", |_| {}).await.expect("confirm");
    completed(&handle).await;
    assert_eq!(seen(run, "unlap"), [(3, None), (2, None), (1, None)]);
    engine.shutdown(HANG).await.expect("shutdown");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn loop_runs_are_undone_each_from_its_snapshot_after_restarts_memory() {
    loop_runs(TestStore::memory(), 1).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn loop_runs_are_undone_each_from_its_snapshot_after_restarts_sqlite() {
    loop_runs(TestStore::sqlite("comp-loop").expect("sqlite"), 2).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn parallel_instances_are_undone_after_a_restart_mid_compensation_memory() {
    parallel_instances(TestStore::memory(), 11).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn parallel_instances_are_undone_after_a_restart_mid_compensation_sqlite() {
    parallel_instances(TestStore::sqlite("comp-packs").expect("sqlite"), 12).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sub_process_instances_run_their_event_sub_process_after_restarts_memory() {
    sub_process_instances(TestStore::memory(), 21).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sub_process_instances_run_their_event_sub_process_after_restarts_sqlite() {
    sub_process_instances(TestStore::sqlite("comp-trips").expect("sqlite"), 22).await;
}

#[cfg(feature = "postgres")]
mod postgres {
    use super::*;

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn loop_runs() {
        super::loop_runs(TestStore::postgres("comp_loop").expect("postgres"), 3).await;
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn parallel_instances() {
        super::parallel_instances(TestStore::postgres("comp_packs").expect("postgres"), 13).await;
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn sub_process_instances() {
        super::sub_process_instances(TestStore::postgres("comp_trips").expect("postgres"), 23)
            .await;
    }
}
