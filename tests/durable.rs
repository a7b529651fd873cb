//! Durable instances: stored at start, checkpointed after every step, resumed after a
//! restart from their last checkpoint — on the reference store in memory, on a SQLite
//! file, and after a real SIGKILL of the process that ran them.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use thresh::store::{MemoryStore, Status, Store};
use thresh::{process, DurableEngine, InstanceHandle, Outcome, ProcessData, SkipReason};

const HANG: Duration = Duration::from_secs(20);

#[derive(Clone, Debug, Default, PartialEq, ProcessData, Serialize, Deserialize)]
pub struct Order {
    pub id: String,
    pub checked: u32,
    pub approved: bool,
    pub shipped: u32,
}

/// Runs of `check`'s handler in this test binary (each test uses its own process
/// where it counts runs).
static CHECKS: AtomicUsize = AtomicUsize::new(0);

process! {
    APPROVAL: Order {
        start received;
        task  check = |o| async move {
            CHECKS.fetch_add(1, Ordering::SeqCst);
            o.checked += 1;
            Ok(())
        };
        user  approve;
        task  ship = |o| async move { o.shipped += 1; Ok(()) };
        end   done;
        received -> check -> approve -> ship -> done;
    }
}

/// Wait until a user task called `node` is open on `handle`.
async fn until_open<D: Clone>(handle: &InstanceHandle<D>, node: &str) {
    tokio::time::timeout(HANG, async {
        while !handle.open_work().await.iter().any(|w| w.node == node) {
            tokio::task::yield_now().await;
        }
    })
    .await
    .expect("the user task opened");
}

async fn outcome(handle: &InstanceHandle<Order>) -> Outcome<Order> {
    tokio::time::timeout(HANG, handle.outcome())
        .await
        .expect("the instance ended")
}

/// A restart: the first engine shuts down (its instances stay stored as running), a
/// new one on the same store registers the process and resumes.
async fn restart(
    store: &Arc<MemoryStore>,
    old: DurableEngine,
) -> (DurableEngine, thresh::ResumeReport) {
    old.shutdown(HANG).await.expect("shutdown");
    let engine = DurableEngine::with_store(store.clone()).expect("reopen");
    engine.register(&APPROVAL).expect("register");
    let report = engine.resume().await.expect("resume");
    (engine, report)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_user_task_waits_across_a_restart_and_committed_tasks_do_not_run_again() {
    let store = Arc::new(MemoryStore::new());
    let engine = DurableEngine::with_store(store.clone()).expect("open");
    let order = Order {
        id: "A-1".into(),
        ..Order::default()
    };
    let handle = engine.start(&APPROVAL, order).await.expect("stored");
    let id = handle.id();
    until_open(&handle, "approve").await;
    let before = CHECKS.load(Ordering::SeqCst);

    let (engine, report) = restart(&store, engine).await;
    assert_eq!(report.resumed, [(id, "APPROVAL")]);
    assert!(report.skipped.is_empty());
    let handle = engine.handle(&APPROVAL, id).expect("resumed handle");
    until_open(&handle, "approve").await;
    handle
        .complete("approve", |o: &mut Order| o.approved = true)
        .await
        .expect("completed");
    // Acknowledged means stored: the completion ran the instance to its end, and the
    // end is in the store before `complete` returned.
    let stored = store.instance(id.0).expect("read").expect("kept");
    assert_eq!(stored.status, Status::Completed);
    let Outcome::Completed(order) = outcome(&handle).await else {
        panic!("not completed")
    };
    assert_eq!((order.checked, order.approved, order.shipped), (1, true, 1));
    // `check` completed before the restart: it did not run again.
    assert_eq!(CHECKS.load(Ordering::SeqCst), before);
    engine.shutdown(HANG).await.expect("shutdown");
    let record = store.instance(id.0).expect("read").expect("kept");
    assert_eq!(record.status, Status::Completed);
    let outcome: serde_json::Value =
        serde_json::from_str(record.outcome.as_deref().expect("outcome")).expect("json");
    assert_eq!(outcome["outcome"], "completed");
    assert_eq!(outcome["data"]["shipped"], 1);
}

/// A stored instance whose process changed, or is not registered, is reported and
/// left stored as running.
#[tokio::test]
async fn a_changed_or_unregistered_process_is_reported_not_resumed() {
    mod changed {
        use super::*;
        process! {
            pub APPROVAL: Order {
                start received;
                user  approve;
                end   done;
                received -> approve -> done;
            }
        }
    }
    let store = Arc::new(MemoryStore::new());
    let engine = DurableEngine::with_store(store.clone()).expect("open");
    let handle = engine
        .start(&APPROVAL, Order::default())
        .await
        .expect("stored");
    until_open(&handle, "approve").await;
    engine.shutdown(HANG).await.expect("shutdown");

    let engine = DurableEngine::with_store(store.clone()).expect("reopen");
    let report = engine.resume().await.expect("resume");
    assert_eq!(report.skipped.len(), 1);
    assert_eq!(report.skipped[0].reason, SkipReason::NotRegistered);

    engine.register(&changed::APPROVAL).expect("register");
    let report = engine.resume().await.expect("resume");
    assert!(report.resumed.is_empty());
    assert_eq!(
        report.skipped[0].reason,
        SkipReason::ModelChanged {
            stored: APPROVAL.fingerprint(),
            registered: changed::APPROVAL.fingerprint(),
        }
    );
    engine.shutdown(HANG).await.expect("shutdown");
    assert_eq!(store.running().expect("read").len(), 1, "left stored");
}

/// The order's data after a change of shape: `total` is new and required.
#[derive(Clone, Debug, Default, PartialEq, ProcessData, Serialize, Deserialize)]
pub struct Renamed {
    pub total: Vec<u8>,
}

/// Data that no longer deserialises into the registered type is reported as
/// unreadable, not resumed and not dropped.
#[tokio::test]
async fn data_of_another_shape_is_reported_unreadable() {
    mod other {
        use super::*;
        process! {
            pub APPROVAL: Renamed {
                start received;
                task  check = |_o| async move { Ok(()) };
                user  approve;
                task  ship = |_o| async move { Ok(()) };
                end   done;
                received -> check -> approve -> ship -> done;
            }
        }
    }
    let store = Arc::new(MemoryStore::new());
    let engine = DurableEngine::with_store(store.clone()).expect("open");
    let handle = engine
        .start(&APPROVAL, Order::default())
        .await
        .expect("stored");
    until_open(&handle, "approve").await;
    engine.shutdown(HANG).await.expect("shutdown");
    let engine = DurableEngine::with_store(store.clone()).expect("reopen");
    engine.register(&other::APPROVAL).expect("register");
    let report = engine.resume().await.expect("resume");
    assert!(report.resumed.is_empty());
    assert!(
        matches!(&report.skipped[0].reason, SkipReason::Unreadable(why) if why.contains("total")),
        "{:?}",
        report.skipped
    );
    engine.shutdown(HANG).await.expect("shutdown");
    assert_eq!(store.running().expect("read").len(), 1);
}

#[derive(Clone, Debug, Default, PartialEq, ProcessData, Serialize, Deserialize)]
pub struct Wait {
    pub left: bool,
    pub a: u32,
    pub b: bool,
}

process! {
    REMINDER: Wait {
        start s;
        catch hour: timer(Duration::from_secs(3600));
        task  go = |w| async move { w.left = true; Ok(()) };
        end   e;
        s -> hour -> go -> e;
    }
}

/// A timer keeps its deadline across a restart: 40 minutes waited before it, 20
/// after.
#[tokio::test(start_paused = true)]
async fn a_timer_fires_at_its_recorded_deadline_after_a_restart() {
    let store = Arc::new(MemoryStore::new());
    let engine = DurableEngine::with_store(store.clone()).expect("open");
    let handle = engine
        .start(&REMINDER, Wait::default())
        .await
        .expect("stored");
    let id = handle.id();
    tokio::time::sleep(Duration::from_secs(40 * 60)).await;
    engine.shutdown(HANG).await.expect("shutdown");

    let engine = DurableEngine::with_store(store.clone()).expect("reopen");
    engine.register(&REMINDER).expect("register");
    engine.resume().await.expect("resume");
    let handle = engine.handle(&REMINDER, id).expect("resumed");
    tokio::time::sleep(Duration::from_secs(19 * 60)).await;
    assert!(!handle.is_finished(), "fired before its deadline");
    tokio::time::sleep(Duration::from_secs(2 * 60)).await;
    // No timeout on the paused clock here: the end is stored by the store's writer
    // thread, which the paused clock does not wait for (it would jump to a timeout).
    let outcome = handle.outcome().await;
    assert_eq!(outcome.completed().map(|w| w.left), Some(true));
    engine.shutdown(HANG).await.expect("shutdown");
}

static SLOW_RUNS: AtomicUsize = AtomicUsize::new(0);
/// The attempts `slow`'s handler saw, in order.
static SLOW_ATTEMPTS: std::sync::Mutex<Vec<u32>> = std::sync::Mutex::new(Vec::new());

process! {
    JOINED: Wait {
        start s;
        parallel fork;
        task  a = |w| async move { w.a += 1; Ok(()) };
        user  b;
        parallel join;
        task  slow = |_w| async move {
            // The first run waits for ever (its engine stops under it); later runs
            // finish at once: a task running at a restart runs again.
            let attempt = thresh::task::current().expect("in a handler").attempt;
            SLOW_ATTEMPTS.lock().unwrap().push(attempt);
            if SLOW_RUNS.fetch_add(1, Ordering::SeqCst) == 0 {
                std::future::pending::<()>().await;
            }
            Ok(())
        };
        user  last;
        end   e;
        s -> fork -> a, b;
        a, b -> join -> slow -> last -> e;
    }
}

/// A parallel join keeps its arrival across a restart, and a task that was running
/// when the engine stopped runs again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_join_keeps_its_arrivals_and_a_running_task_runs_again() {
    let store = Arc::new(MemoryStore::new());
    let reopen = |store: &Arc<MemoryStore>| {
        let engine = DurableEngine::with_store(store.clone()).expect("reopen");
        engine.register(&JOINED).expect("register");
        engine
    };
    let engine = DurableEngine::with_store(store.clone()).expect("open");
    let handle = engine
        .start(&JOINED, Wait::default())
        .await
        .expect("stored");
    let id = handle.id();
    until_open(&handle, "b").await;
    // `a` arrived at the join; `b` waits.
    engine.shutdown(HANG).await.expect("shutdown");

    let engine = reopen(&store);
    engine.resume().await.expect("resume");
    let handle = engine.handle(&JOINED, id).expect("resumed");
    until_open(&handle, "b").await;
    handle
        .complete("b", |w: &mut Wait| w.b = true)
        .await
        .expect("b");
    // The join fires; `slow` starts and hangs.
    tokio::time::timeout(HANG, async {
        while SLOW_RUNS.load(Ordering::SeqCst) == 0 {
            tokio::task::yield_now().await;
        }
    })
    .await
    .expect("slow started");
    // Its start is checkpointed (the join fired, `slow` works) before the restart.
    tokio::time::sleep(Duration::from_millis(50)).await;
    engine.shutdown(HANG).await.expect("shutdown");

    let engine = reopen(&store);
    engine.resume().await.expect("resume");
    let handle = engine.handle(&JOINED, id).expect("resumed again");
    until_open(&handle, "last").await;
    assert_eq!(SLOW_RUNS.load(Ordering::SeqCst), 2, "slow ran again, once");
    // The handler can tell: its second run is its second attempt.
    assert_eq!(*SLOW_ATTEMPTS.lock().unwrap(), [1, 2]);
    handle
        .complete("last", |_: &mut Wait| {})
        .await
        .expect("last");
    let Outcome::Completed(w) = tokio::time::timeout(HANG, handle.outcome())
        .await
        .expect("ended")
    else {
        panic!("not completed")
    };
    assert_eq!((w.a, w.b), (1, true), "`a` ran once, `b` committed once");
    engine.shutdown(HANG).await.expect("shutdown");
}

#[derive(Clone, Debug, Default, PartialEq, ProcessData, Serialize, Deserialize)]
pub struct Bill {
    pub id: String,
    pub paid: u64,
}

process! {
    BILLING: Bill {
        start s;
        receive pay: message("payment", key = |b| b.id.clone(), apply = |b, amount: &u64| b.paid += *amount);
        end   e;
        s -> pay -> e;
    }
}

async fn paid(handle: &InstanceHandle<Bill>) -> u64 {
    tokio::time::timeout(HANG, handle.outcome())
        .await
        .expect("ended")
        .completed()
        .expect("completed")
        .paid
}

/// A message published durably is stored before it is acknowledged, survives
/// restarts while no catch waits for it, and is applied exactly once: consumed in the
/// checkpoint that records its effect.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stored_message_survives_restarts_and_is_applied_once() {
    let store = Arc::new(MemoryStore::new());
    let open = |store: &Arc<MemoryStore>| {
        let engine = DurableEngine::with_store(store.clone()).expect("open");
        engine.register(&BILLING).expect("register");
        engine.message_type::<u64>("payment");
        engine
    };
    // First life: A waits for its payment; B's payment comes before B exists.
    let engine = open(&store);
    let a = engine
        .start(
            &BILLING,
            Bill {
                id: "A".into(),
                paid: 0,
            },
        )
        .await
        .expect("stored");
    let a_id = a.id();
    tokio::time::timeout(HANG, async {
        while a
            .history()
            .await
            .count("pay", |w| *w == thresh::Happening::Parked)
            == 0
        {
            tokio::task::yield_now().await;
        }
    })
    .await
    .expect("A waits");
    let published = engine
        .publish_message("payment", "B", 70_u64)
        .await
        .expect("stored");
    assert_eq!(published, thresh::Published::Buffered);
    assert_eq!(
        store.messages().expect("read").len(),
        1,
        "stored before the ack"
    );
    engine.shutdown(HANG).await.expect("shutdown");

    // Second life: nothing new; the message stays stored across it.
    let engine = open(&store);
    let report = engine.resume().await.expect("resume");
    assert_eq!((report.resumed.len(), report.messages), (1, 1));
    engine.shutdown(HANG).await.expect("shutdown");
    assert_eq!(store.messages().expect("read").len(), 1);

    // Third life: B starts and takes its stored payment; A gets its own.
    let engine = open(&store);
    let report = engine.resume().await.expect("resume");
    assert_eq!(report.resumed, [(a_id, "BILLING")]);
    let b = engine
        .start(
            &BILLING,
            Bill {
                id: "B".into(),
                paid: 0,
            },
        )
        .await
        .expect("stored");
    assert_eq!(paid(&b).await, 70);
    // A resumed instance's history starts empty; whether its catch is armed yet or
    // not, the payment reaches it (delivered, or buffered until it subscribes).
    let a = engine.handle(&BILLING, a_id).expect("A resumed");
    engine
        .publish_message("payment", "A", 30_u64)
        .await
        .expect("stored");
    assert_eq!(paid(&a).await, 30);
    engine.shutdown(HANG).await.expect("shutdown");
    assert!(
        store.messages().expect("read").is_empty(),
        "each consumed once"
    );
    assert!(store.running().expect("read").is_empty());
}

/// A store that refuses every write once `full` is set (a full disk).
struct FullAfter {
    inner: MemoryStore,
    full: std::sync::atomic::AtomicBool,
}

impl Store for FullAfter {
    fn apply(&self, batch: &[thresh::store::Write]) -> Result<(), thresh::store::StoreError> {
        if self.full.load(Ordering::SeqCst) {
            return Err(thresh::store::StoreError::DiskFull {
                path: "test".into(),
            });
        }
        self.inner.apply(batch)
    }
    fn instance(
        &self,
        id: u64,
    ) -> Result<Option<thresh::store::InstanceRecord>, thresh::store::StoreError> {
        self.inner.instance(id)
    }
    fn list(
        &self,
        process: Option<&str>,
        status: Option<Status>,
    ) -> Result<Vec<thresh::store::InstanceRecord>, thresh::store::StoreError> {
        self.inner.list(process, status)
    }
    fn messages(&self) -> Result<Vec<thresh::store::MessageRecord>, thresh::store::StoreError> {
        self.inner.messages()
    }
    fn deployments(
        &self,
    ) -> Result<Vec<thresh::store::DeploymentRecord>, thresh::store::StoreError> {
        self.inner.deployments()
    }
    fn next_ids(&self) -> Result<thresh::store::Ids, thresh::store::StoreError> {
        self.inner.next_ids()
    }
}

/// A full disk: the start that cannot be stored is refused with the cause; an
/// instance whose checkpoint cannot be stored fails naming it; a completion that
/// cannot be stored is not acknowledged. Nothing panics.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_write_fails_the_instance_and_names_the_cause() {
    let store = Arc::new(FullAfter {
        inner: MemoryStore::new(),
        full: std::sync::atomic::AtomicBool::new(false),
    });
    let engine = DurableEngine::with_store(store.clone()).expect("open");
    let handle = engine
        .start(&APPROVAL, Order::default())
        .await
        .expect("stored");
    until_open(&handle, "approve").await;
    // Its checkpoint at the user task is stored (past its birth record); then the
    // disk fills.
    tokio::time::timeout(HANG, async {
        while store
            .inner
            .instance(handle.id().0)
            .expect("read")
            .is_none_or(|r| r.seq < 2)
        {
            tokio::task::yield_now().await;
        }
    })
    .await
    .expect("checkpointed");
    store.full.store(true, Ordering::SeqCst);
    let refused = engine.start(&APPROVAL, Order::default()).await;
    assert!(
        matches!(&refused, Err(thresh::DurableError::Store(e)) if e.to_string().contains("full")),
        "{:?}",
        refused.map(|h| h.id())
    );
    let completed = handle
        .complete("approve", |o: &mut Order| o.approved = true)
        .await;
    assert!(
        matches!(&completed, Err(thresh::WorkError::NotStored { message }) if message.contains("full")),
        "{completed:?}"
    );
    let outcome = outcome(&handle).await;
    assert!(
        matches!(outcome.error(), Some(thresh::InstanceError::Checkpoint { message }) if message.contains("full")),
        "{outcome:?}"
    );
    engine.shutdown(HANG).await.expect("shutdown");
}

/// Outcomes stay queryable; a listing by process and status; a purge removes ended
/// instances past their retention.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ended_instances_are_listed_and_purged() {
    let store = Arc::new(MemoryStore::new());
    let engine = DurableEngine::with_store(store.clone()).expect("open");
    let done = engine
        .start(&APPROVAL, Order::default())
        .await
        .expect("stored");
    until_open(&done, "approve").await;
    done.complete("approve", |_: &mut Order| {})
        .await
        .expect("completed");
    let waiting = engine
        .start(&APPROVAL, Order::default())
        .await
        .expect("stored");
    until_open(&waiting, "approve").await;
    let ended = engine
        .list(Some("APPROVAL"), Some(Status::Completed))
        .await
        .expect("list");
    assert_eq!(ended.len(), 1);
    assert_eq!(ended[0].0, done.id());
    assert!(ended[0]
        .2
        .as_deref()
        .is_some_and(|o| o.contains("completed")));
    assert_eq!(engine.list(None, None).await.expect("list").len(), 2);
    // Ended a few milliseconds ago: past a zero retention.
    tokio::time::sleep(Duration::from_millis(5)).await;
    engine.purge(Duration::ZERO).await.expect("purge");
    let left = engine.list(None, None).await.expect("list");
    assert_eq!(left.len(), 1, "the running one stays");
    assert_eq!(left[0].1, Status::Running);
    engine.shutdown(HANG).await.expect("shutdown");
}

#[derive(Clone, Debug, Default, PartialEq, ProcessData, Serialize, Deserialize)]
pub struct Claim {
    pub id: String,
    pub a: bool,
    pub b: bool,
    pub assessed: u32,
    pub paid: u64,
    pub nudges: u32,
}

process! {
    SCOPED: Claim {
        start     s;
        inclusive split;
        task      quick = |c| async move { c.assessed += 1; Ok(()) };
        subprocess review {
            start       inner;
            event_based gate;
            catch       paid: message("paid", key = |c| c.id.clone(), apply = |c, amount: &u64| c.paid = *amount);
            catch       late: timer(Duration::from_secs(3600));
            end         settled;
            end         expired;
            inner -> gate -> paid, late;
            paid -> settled;
            late -> expired;
        }
        inclusive join;
        end       done;
        event_subprocess nudging {
            start nudge: non_interrupting message("nudge", key = |c| c.id.clone(), apply = |c, _n: &u32| c.nudges += 1);
            end   nudged;
            nudge -> nudged;
        }
        s -> split;
        split -> quick when |c| c.a;
        split -> review when |c| c.b;
        quick, review -> join -> done;
    }
}

/// Restored inside a sub-process: an event-based gateway waits there again (its
/// message arm wins after the restart, its timer arm is disarmed), the inclusive join
/// keeps the arrival from the other branch, and the process's non-interrupting
/// message event sub-process is armed again (it runs after the restart, and the
/// instance still completes).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn scopes_event_gates_or_joins_and_event_sub_processes_survive_a_restart() {
    let store = Arc::new(MemoryStore::new());
    let open = |store: &Arc<MemoryStore>| {
        let engine = DurableEngine::with_store(store.clone()).expect("open");
        engine.register(&SCOPED).expect("register");
        engine.message_type::<u64>("paid");
        engine.message_type::<u32>("nudge");
        engine
    };
    let engine = open(&store);
    let claim = Claim {
        id: "C-1".into(),
        a: true,
        b: true,
        ..Claim::default()
    };
    let handle = engine.start(&SCOPED, claim).await.expect("stored");
    let id = handle.id();
    // `quick` reached the join; the sub-process's gate waits.
    tokio::time::timeout(HANG, async {
        while handle
            .history()
            .await
            .count("gate", |w| *w == thresh::Happening::Parked)
            == 0
        {
            tokio::task::yield_now().await;
        }
    })
    .await
    .expect("the gate waits");
    engine.shutdown(HANG).await.expect("shutdown");

    let engine = open(&store);
    let report = engine.resume().await.expect("resume");
    assert_eq!(report.resumed, [(id, "SCOPED")]);
    let handle = engine.handle(&SCOPED, id).expect("resumed");
    // The event sub-process is armed again: a nudge runs it beside.
    engine
        .publish_message("nudge", "C-1", 1_u32)
        .await
        .expect("stored");
    tokio::time::timeout(HANG, async {
        while handle.data().await.is_some_and(|c| c.nudges == 0) {
            tokio::task::yield_now().await;
        }
    })
    .await
    .expect("nudged");
    // The gate's message arm wins; the join fires on the restored arrival.
    engine
        .publish_message("paid", "C-1", 120_u64)
        .await
        .expect("stored");
    let claim = tokio::time::timeout(HANG, handle.outcome())
        .await
        .expect("ended")
        .completed()
        .expect("completed");
    assert_eq!(
        (claim.assessed, claim.paid, claim.nudges),
        (1, 120, 1),
        "quick once, the payment once, the nudge once"
    );
    engine.shutdown(HANG).await.expect("shutdown");
    assert!(store.messages().expect("read").is_empty());
}

/// A stored instance can be drawn from the store alone — what an operator looks at
/// when an order is stuck — also by an engine that does not run it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stored_instance_is_drawn_where_its_token_waits() {
    let store = Arc::new(MemoryStore::new());
    let engine = DurableEngine::with_store(store.clone()).expect("open");
    let handle = engine
        .start(&APPROVAL, Order::default())
        .await
        .expect("stored");
    let id = handle.id();
    until_open(&handle, "approve").await;
    engine.shutdown(HANG).await.expect("shutdown");

    let engine = DurableEngine::with_store(store.clone()).expect("reopen");
    let svg = engine
        .picture(&APPROVAL, id)
        .await
        .expect("read")
        .expect("stored");
    assert!(svg.starts_with("<svg"), "{svg}");
    assert_eq!(
        svg.matches("class=\"waiting\"").count(),
        1,
        "one waiting token: {svg}"
    );
    assert!(engine
        .picture(&APPROVAL, thresh::InstanceId(999))
        .await
        .expect("read")
        .is_none());
    engine.shutdown(HANG).await.expect("shutdown");
}

/// With `keep_history`, a resumed instance's history goes on from before the restart.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_kept_history_goes_on_after_a_restart() {
    let store = Arc::new(MemoryStore::new());
    let engine = DurableEngine::with_store(store.clone()).expect("open");
    engine.keep_history(true);
    let handle = engine
        .start(&APPROVAL, Order::default())
        .await
        .expect("stored");
    let id = handle.id();
    until_open(&handle, "approve").await;
    engine.shutdown(HANG).await.expect("shutdown");

    let engine = DurableEngine::with_store(store.clone()).expect("reopen");
    engine.keep_history(true);
    engine.register(&APPROVAL).expect("register");
    engine.resume().await.expect("resume");
    let handle = engine.handle(&APPROVAL, id).expect("resumed");
    until_open(&handle, "approve").await;
    handle
        .complete("approve", |o: &mut Order| o.approved = true)
        .await
        .expect("completed");
    outcome(&handle).await;
    let history = handle.history().await;
    assert_eq!(history.completed_tasks(), ["check", "approve", "ship"]);
    assert_eq!(history.steps()[0].what, thresh::Happening::Started);
    engine.shutdown(HANG).await.expect("shutdown");
}

#[derive(Clone, Debug, Default, PartialEq, ProcessData, Serialize, Deserialize)]
pub struct Ticket {
    pub id: String,
    pub seats: u32,
    pub confirmed: bool,
}

process! {
    BOOKING: Ticket {
        start booked: message("booking", apply = |t, seats: &u32| t.seats = *seats);
        user  confirm;
        end   done;
        booked -> confirm -> done;
    }
}

process! {
    QUICK_BOOKING: Ticket {
        start booked: message("quick", apply = |t, seats: &u32| t.seats = *seats);
        end   done;
        booked -> done;
    }
}

/// A durable engine's deployment starts durable instances: a durably published start
/// message is consumed by the started instance's first checkpoint, so after a restart
/// the instance is there and the message is not (no second instance); one that ends
/// in its first step is stored with its end.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_deployed_message_start_starts_a_durable_instance_once() {
    let store = Arc::new(MemoryStore::new());
    let engine = DurableEngine::with_store(store.clone()).expect("open");
    let mut bookings = engine
        .deploy(&BOOKING, Ticket::default())
        .expect("deployed");
    let mut quick = engine
        .deploy(&QUICK_BOOKING, Ticket::default())
        .expect("deployed");
    assert_eq!(
        engine
            .publish_message("booking", "B-1", 3_u32)
            .await
            .expect("stored"),
        thresh::Published::Started
    );
    let handle = tokio::time::timeout(HANG, bookings.next())
        .await
        .expect("started")
        .expect("a handle");
    let id = handle.id();
    until_open(&handle, "confirm").await;
    engine
        .publish_message("quick", "Q-1", 1_u32)
        .await
        .expect("stored");
    let fast = quick.next().await.expect("a handle");
    let ended = tokio::time::timeout(HANG, fast.outcome())
        .await
        .expect("ended");
    assert_eq!(ended.completed().map(|t| t.seats), Some(1));
    let stored = store.instance(fast.id().0).expect("read").expect("stored");
    assert_eq!(stored.status, Status::Completed);
    assert!(
        store.messages().expect("read").is_empty(),
        "both start messages consumed"
    );
    engine.shutdown(HANG).await.expect("shutdown");

    let engine = DurableEngine::with_store(store.clone()).expect("reopen");
    engine.register(&BOOKING).expect("register");
    engine.message_type::<u32>("booking");
    let mut bookings = engine
        .deploy(&BOOKING, Ticket::default())
        .expect("deployed again");
    let report = engine.resume().await.expect("resume");
    assert_eq!(report.resumed, [(id, "BOOKING")]);
    assert_eq!(report.messages, 0, "the start message was consumed");
    // The resumed instance owns its key again: another booking for B-1 waits for it
    // (buffered) instead of starting a second instance.
    assert_eq!(
        engine
            .publish_message("booking", "B-1", 9_u32)
            .await
            .expect("stored"),
        thresh::Published::Buffered
    );
    let handle = engine.handle(&BOOKING, id).expect("resumed");
    until_open(&handle, "confirm").await;
    handle
        .complete("confirm", |t: &mut Ticket| t.confirmed = true)
        .await
        .expect("confirmed");
    let ticket = tokio::time::timeout(HANG, handle.outcome())
        .await
        .expect("ended")
        .completed()
        .expect("completed");
    assert_eq!((ticket.seats, ticket.confirmed), (3, true));
    engine.shutdown(HANG).await.expect("shutdown");
    assert!(bookings.next().await.is_none(), "no second instance");
}

// ----- a SQLite file, and a real SIGKILL --------------------------------------------

fn temp_store(name: &str) -> std::path::PathBuf {
    let path = std::env::temp_dir().join(format!("thresh-{name}-{}.db", std::process::id()));
    let _ = std::fs::remove_file(&path);
    path
}

/// An instance started on a SQLite file resumes from it in a new engine.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn instances_resume_from_a_sqlite_file() {
    let path = temp_store("file");
    let engine = DurableEngine::open(&path).await.expect("open");
    let mut ids = Vec::new();
    for i in 0..20 {
        let order = Order {
            id: format!("F-{i}"),
            ..Order::default()
        };
        let handle = engine.start(&APPROVAL, order).await.expect("stored");
        until_open(&handle, "approve").await;
        ids.push(handle.id());
    }
    engine.shutdown(HANG).await.expect("shutdown");
    drop(engine);

    let engine = DurableEngine::open(&path).await.expect("reopen");
    engine.register(&APPROVAL).expect("register");
    let report = engine.resume().await.expect("resume");
    assert_eq!(report.resumed.len(), 20);
    for id in &ids {
        let handle = engine.handle(&APPROVAL, *id).expect("resumed");
        until_open(&handle, "approve").await;
        handle
            .complete("approve", |o: &mut Order| o.approved = true)
            .await
            .expect("completed");
        let order = outcome(&handle).await.completed().expect("completed");
        assert_eq!((order.checked, order.shipped), (1, 1));
        assert_eq!(
            order.id,
            format!("F-{}", ids.iter().position(|i| i == id).unwrap())
        );
    }
    engine.shutdown(HANG).await.expect("shutdown");
    drop(engine);
    let _ = std::fs::remove_file(&path);
}

/// The child's part of the crash test: start instances on the file, print each one
/// the store acknowledged, and run until killed.
#[test]
#[ignore = "run by the crash test as its child process"]
fn crash_child() {
    let Ok(path) = std::env::var("THRESH_CRASH_STORE") else {
        return;
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    runtime.block_on(async {
        let engine = DurableEngine::open(&path).await.expect("open");
        for i in 0.. {
            let order = Order {
                id: format!("K-{i}"),
                ..Order::default()
            };
            let handle = engine.start(&APPROVAL, order).await.expect("stored");
            println!("acked {}", handle.id().0);
        }
    });
}

/// Kill the engine's process with SIGKILL at random moments, many times, on one file:
/// every start it acknowledged is resumed and finishes exactly once; `check` ran once
/// for each of them (its commit either made the checkpoint or the task runs again).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn acknowledged_starts_survive_sigkill() {
    use std::io::{BufRead, BufReader};
    let path = temp_store("crash");
    let mut acked: Vec<u64> = Vec::new();
    for round in 0..8u64 {
        let mut child = std::process::Command::new(std::env::current_exe().expect("exe"))
            .args([
                "--ignored",
                "--exact",
                "crash_child",
                "--nocapture",
                "--test-threads=1",
            ])
            .env("THRESH_CRASH_STORE", &path)
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::null())
            .spawn()
            .expect("child");
        let stdout = child.stdout.take().expect("stdout");
        let want = 3 + (round * 7) % 11;
        let lines = tokio::task::spawn_blocking(move || {
            let mut got = Vec::new();
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if let Some(id) = line.strip_prefix("acked ") {
                    got.push(id.trim().parse::<u64>().expect("id"));
                    if got.len() as u64 >= want {
                        break;
                    }
                }
            }
            got
        })
        .await
        .expect("reader");
        child.kill().expect("SIGKILL");
        let _ = child.wait();
        acked.extend(lines);
    }
    let engine = DurableEngine::open(&path)
        .await
        .expect("reopen after the kills");
    engine.register(&APPROVAL).expect("register");
    let report = engine.resume().await.expect("resume");
    assert!(report.skipped.is_empty(), "{:?}", report.skipped);
    let resumed: Vec<u64> = report.resumed.iter().map(|(id, _)| id.0).collect();
    assert!(
        acked.len() >= 8 * 3,
        "every round acknowledged starts: {acked:?}"
    );
    for id in &acked {
        assert!(resumed.contains(id), "acknowledged start {id} was lost");
    }
    for (id, _) in &report.resumed {
        let handle = engine.handle(&APPROVAL, *id).expect("handle");
        until_open(&handle, "approve").await;
        handle
            .complete("approve", |o: &mut Order| o.approved = true)
            .await
            .expect("completed");
        let order = outcome(&handle).await.completed().expect("completed");
        assert_eq!((order.checked, order.shipped), (1, 1), "instance {id}");
    }
    engine.shutdown(HANG).await.expect("shutdown");
    drop(engine);
    assert!(engine_store_running_is_empty(&path).await);
    let _ = std::fs::remove_file(&path);
}

async fn engine_store_running_is_empty(path: &std::path::Path) -> bool {
    let path = path.to_path_buf();
    tokio::task::spawn_blocking(move || {
        let store = thresh::store::SqliteStore::open(&path).expect("open");
        store.running().expect("read").is_empty()
    })
    .await
    .expect("read")
}

// ----- a mixed workload killed at dozens of points ------------------------------------

#[derive(Clone, Debug, Default, PartialEq, ProcessData, Serialize, Deserialize)]
pub struct Deal {
    pub id: String,
    pub checked: u32,
    pub paid: u64,
    pub approved: bool,
    pub shipped: u32,
}

process! {
    MIXED: Deal {
        start    s;
        task     check = |d| async move { d.checked += 1; Ok(()) };
        parallel fork;
        receive  pay: message("pay", key = |d| d.id.clone(), apply = |d, amount: &u64| d.paid += *amount);
        user     approve;
        catch    cool: timer(Duration::from_millis(30));
        parallel join;
        task     ship = |d| async move { d.shipped += 1; Ok(()) };
        end      e;
        s -> check -> fork -> pay, approve, cool;
        pay, approve, cool -> join -> ship -> e;
    }
}

/// The amount deal `key` (`M-<n>`) is paid: n + 1.
fn amount(key: &str) -> u64 {
    key.trim_start_matches("M-")
        .parse::<u64>()
        .expect("a deal key")
        + 1
}

/// The child's part of the mixed crash test: for deal after deal, start it, publish
/// its payment and approve it, printing each acknowledgment; run until killed.
#[test]
#[ignore = "run by the mixed crash test as its child process"]
fn mixed_crash_child() {
    let (Ok(path), Ok(first)) = (
        std::env::var("THRESH_CRASH_STORE"),
        std::env::var("THRESH_CRASH_FIRST"),
    ) else {
        return;
    };
    let first: u64 = first.parse().expect("a number");
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    runtime.block_on(async {
        let engine = DurableEngine::open(&path).await.expect("open");
        for n in first.. {
            let key = format!("M-{n}");
            let deal = Deal {
                id: key.clone(),
                ..Deal::default()
            };
            let handle = engine.start(&MIXED, deal).await.expect("stored");
            println!("started {key}");
            engine
                .publish_message("pay", &key, amount(&key))
                .await
                .expect("stored");
            println!("paid {key}");
            while !handle.open_work().await.iter().any(|w| w.node == "approve") {
                tokio::task::yield_now().await;
            }
            handle
                .complete("approve", |d: &mut Deal| d.approved = true)
                .await
                .expect("stored");
            println!("approved {key}");
        }
    });
}

/// A mixed workload — starts, durable messages, user tasks, a timer, a parallel join —
/// killed with SIGKILL at 24 points on one file, then resumed: every acknowledged
/// start finishes exactly once, every payment is applied exactly once, no committed
/// task runs again, and nothing is left running.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_mixed_workload_survives_sigkill_at_many_points() {
    use std::collections::BTreeSet;
    use std::io::{BufRead, BufReader};
    let path = temp_store("mixed");
    let mut started = BTreeSet::new();
    let mut paid = BTreeSet::new();
    let mut next = 0u64;
    for round in 0..24u64 {
        let mut child = std::process::Command::new(std::env::current_exe().expect("exe"))
            .args([
                "--ignored",
                "--exact",
                "mixed_crash_child",
                "--nocapture",
                "--test-threads=1",
            ])
            .env("THRESH_CRASH_STORE", &path)
            .env("THRESH_CRASH_FIRST", next.to_string())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::null())
            .spawn()
            .expect("child");
        let stdout = child.stdout.take().expect("stdout");
        // Kill after a varying number of acknowledgments: between steps of a deal.
        let want = 2 + (round * 5) % 9;
        let lines = tokio::task::spawn_blocking(move || {
            let mut got = Vec::new();
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                // The test harness's own lines are no acknowledgments.
                if ["started ", "paid ", "approved "]
                    .iter()
                    .any(|p| line.starts_with(p))
                {
                    got.push(line);
                    if got.len() as u64 >= want {
                        break;
                    }
                }
            }
            got
        })
        .await
        .expect("reader");
        child.kill().expect("SIGKILL");
        let _ = child.wait();
        for line in lines {
            if let Some(key) = line.strip_prefix("started ") {
                started.insert(key.to_string());
            } else if let Some(key) = line.strip_prefix("paid ") {
                paid.insert(key.to_string());
            }
        }
        // The next child starts after every deal a child may have started.
        next += 20;
    }
    assert!(started.len() >= 24, "{started:?}");

    let engine = DurableEngine::open(&path)
        .await
        .expect("reopen after the kills");
    engine.register(&MIXED).expect("register");
    engine.message_type::<u64>("pay");
    let report = engine.resume().await.expect("resume");
    assert!(report.skipped.is_empty(), "{:?}", report.skipped);
    assert_eq!(report.messages_unread, 0);
    let mut finished = BTreeSet::new();
    for (id, _) in &report.resumed {
        let handle = engine.handle(&MIXED, *id).expect("handle");
        let key = handle.data().await.expect("data").id;
        if !paid.contains(&key) {
            // Its payment was never acknowledged: the publisher sends it (again).
            engine
                .publish_message("pay", &key, amount(&key))
                .await
                .expect("stored");
        }
        tokio::time::timeout(HANG, async {
            while !handle.is_finished() {
                if handle.open_work().await.iter().any(|w| w.node == "approve") {
                    let _ = handle
                        .complete("approve", |d: &mut Deal| d.approved = true)
                        .await;
                }
                tokio::time::sleep(Duration::from_millis(2)).await;
            }
        })
        .await
        .expect("the deal finished");
        let deal = outcome_deal(&handle).await;
        assert_eq!(deal.id, key);
        assert_eq!(
            (deal.checked, deal.paid, deal.approved, deal.shipped),
            (1, amount(&key), true, 1),
            "deal {key}: each task once, its payment applied once"
        );
        finished.insert(key);
    }
    engine.shutdown(HANG).await.expect("shutdown");
    drop(engine);
    // Every acknowledged start either finished now or had finished before a kill,
    // with the same exactly-once result in its stored outcome.
    let path2 = path.clone();
    let ended = tokio::task::spawn_blocking(move || {
        let store = thresh::store::SqliteStore::open(&path2).expect("open");
        assert!(
            store.running().expect("read").is_empty(),
            "nothing left running"
        );
        store.list(None, Some(Status::Completed)).expect("read")
    })
    .await
    .expect("read");
    for key in &started {
        let record = ended.iter().find_map(|r| {
            let outcome: serde_json::Value = serde_json::from_str(r.outcome.as_deref()?).ok()?;
            (outcome["data"]["id"] == key.as_str()).then_some(outcome)
        });
        let outcome = record.unwrap_or_else(|| panic!("acknowledged deal {key} did not finish"));
        assert_eq!(outcome["data"]["paid"], amount(key), "deal {key}");
        assert_eq!(outcome["data"]["checked"], 1, "deal {key}");
        assert_eq!(outcome["data"]["shipped"], 1, "deal {key}");
    }
    let _ = std::fs::remove_file(&path);
}

async fn outcome_deal(handle: &InstanceHandle<Deal>) -> Deal {
    match tokio::time::timeout(HANG, handle.outcome())
        .await
        .expect("ended")
    {
        Outcome::Completed(deal) => deal,
        other => panic!("not completed: {other:?}"),
    }
}
