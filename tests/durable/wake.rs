//! A resume with eviction on (`DurableEngine::evict_idle`): only the stored
//! instances with work now are loaded; the others stay in the store as evicted —
//! their checkpoints not read — until a message, their timer or their task wakes
//! them (the store's wake index).

use super::*;

#[derive(Clone, Debug, Default, PartialEq, ProcessData, Serialize, Deserialize)]
pub struct Errand {
    pub id: String,
    pub paid: u64,
    pub signed: bool,
    pub late: bool,
}

process! {
    ERRAND_SIGNED: Errand {
        start s;
        user  sign;
        end   e;
        s -> sign -> e;
    }
}

process! {
    ERRAND_PAID: Errand {
        start s;
        receive pay: message("errand-paid", key = |e| e.id.clone(), apply = |e, amount: &u64| e.paid += *amount);
        end   e;
        s -> pay -> e;
    }
}

process! {
    ERRAND_LATE: Errand {
        start s;
        catch later: timer(Duration::from_secs(3600));
        task  go = |e| async move { e.late = true; Ok(()) };
        end   e;
        s -> later -> go -> e;
    }
}

process! {
    ERRAND_ALARMED: Errand {
        start s;
        catch alarm: signal("errand-alarm", apply = |e, level: &u32| e.paid += u64::from(*level));
        user  sign;
        end   e;
        s -> alarm -> sign -> e;
    }
}

fn register(engine: &DurableEngine) -> Result<(), thresh::EngineError> {
    engine.evict_idle(Some(Duration::ZERO));
    engine.register(&ERRAND_SIGNED)?;
    engine.register(&ERRAND_PAID)?;
    engine.register(&ERRAND_LATE)?;
    engine.register(&ERRAND_ALARMED)?;
    Ok(())
}

/// Instances at a user task and at a receive, evicted, then a restart: the resume
/// reads none of their checkpoints; a message to one loads it and is applied once,
/// a completion of the other's task loads it; each loads once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_resume_leaves_resting_instances_in_the_store_until_woken() {
    for _round in 0..3 {
        let store = test_store();
        let engine = store.engine().expect("open");
        register(&engine).expect("register");
        let signed = engine
            .start(&ERRAND_SIGNED, Errand::default())
            .await
            .expect("stored")
            .id();
        let errand = Errand {
            id: "E-1".into(),
            ..Errand::default()
        };
        let paid = engine
            .start(&ERRAND_PAID, errand)
            .await
            .expect("stored")
            .id();
        until("evicted", || engine.evicted_instances() == 2).await;
        let restarted = thresh::testing::restart(engine, &store, register)
            .await
            .expect("restarted");
        let (engine, report) = (restarted.engine, restarted.report);
        assert!(report.skipped.is_empty(), "{:?}", report.skipped);
        assert_eq!((report.asleep, report.resumed.len()), (2, 2));
        assert_eq!(engine.evicted_instances(), 2);
        assert_eq!(engine.running_instances(), 0, "none loaded");
        // A handle on one asleep at a user task: made without loading it.
        let signed_handle = engine
            .handle(&ERRAND_SIGNED, signed)
            .expect("a handle on an asleep instance");
        assert!(
            engine.handle(&ERRAND_PAID, signed).is_none(),
            "another process"
        );
        assert_eq!(engine.evicted_loads(), 0, "a handle loads nothing");

        engine
            .publish_message("errand-paid", "E-1", 5_u64)
            .await
            .expect("published");
        let (status, outcome) = tokio::time::timeout(HANG, ended(&engine, paid))
            .await
            .expect("paid, it ends");
        assert_eq!(status, Status::Completed);
        assert!(outcome.contains("\"paid\":5"), "{outcome}");
        assert_eq!(engine.evicted_loads(), 1, "the message loaded it once");
        // Consumed with the checkpoint that applied it.
        assert!(engine.buffered_messages(10).is_empty());

        let tasks = engine
            .tasks(&thresh::TaskQuery::new())
            .await
            .expect("listed");
        let [task] = &tasks[..] else {
            panic!("one open task: {tasks:?}");
        };
        assert_eq!(task.id.instance, signed);
        engine
            .complete_task(&ERRAND_SIGNED, task.id, |e| e.signed = true)
            .await
            .expect("completed");
        let (status, outcome) = tokio::time::timeout(HANG, ended(&engine, signed))
            .await
            .expect("signed, it ends");
        assert_eq!(status, Status::Completed);
        assert!(outcome.contains("\"signed\":true"), "{outcome}");
        let done = tokio::time::timeout(HANG, signed_handle.outcome())
            .await
            .expect("its handle hears the end");
        assert!(done.completed().expect("completed").signed);
        engine.shutdown(HANG).await.expect("shutdown");
    }
}

/// A burst of messages for one instance a resume left in the store: it loads once,
/// and the one message its receive takes is applied once (the others stay
/// buffered for a catch).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_burst_of_messages_to_a_resting_instance_loads_it_once() {
    let store = test_store();
    let engine = store.engine().expect("open");
    register(&engine).expect("register");
    let errand = Errand {
        id: "B-1".into(),
        ..Errand::default()
    };
    let id = engine
        .start(&ERRAND_PAID, errand)
        .await
        .expect("stored")
        .id();
    until("evicted", || engine.evicted_instances() == 1).await;
    let restarted = thresh::testing::restart(engine, &store, register)
        .await
        .expect("restarted");
    let engine = restarted.engine;
    assert_eq!(restarted.report.asleep, 1);
    let mut burst = tokio::task::JoinSet::new();
    for _ in 0..8 {
        let engine = engine.clone();
        burst.spawn(async move { engine.publish_message("errand-paid", "B-1", 1_u64).await });
    }
    while let Some(published) = burst.join_next().await {
        published.expect("joined").expect("published");
    }
    let (status, outcome) = tokio::time::timeout(HANG, ended(&engine, id))
        .await
        .unwrap_or_else(|_| {
            panic!(
                "paid, it ends: loads {}, evicted {}, running {}, buffered {:?}",
                engine.evicted_loads(),
                engine.evicted_instances(),
                engine.running_instances(),
                engine.buffered_messages(10)
            )
        });
    assert_eq!(status, Status::Completed);
    assert!(outcome.contains("\"paid\":1"), "{outcome}");
    assert_eq!(engine.evicted_loads(), 1, "loaded once");
    engine.shutdown(HANG).await.expect("shutdown");
}

/// 10 000 instances waiting at a timer, restarted: the resume loads none; the
/// timer falls due for all at once (paused clock) and loads each once.
#[tokio::test]
async fn a_timer_due_for_ten_thousand_resting_instances_after_a_resume() {
    const N: usize = 10_000;
    let store = test_store();
    let engine = store.engine().expect("open");
    register(&engine).expect("register");
    let mut ids = Vec::with_capacity(N);
    // Each timer is due an hour after its instance started (in real time, before
    // the clock is paused).
    let first = tokio::time::Instant::now();
    for _ in 0..N {
        let handle = engine
            .start(&ERRAND_LATE, Errand::default())
            .await
            .expect("stored");
        ids.push(handle.id());
    }
    until("all evicted", || engine.evicted_instances() == N).await;
    let restarted = thresh::testing::restart(engine, &store, register)
        .await
        .expect("restarted");
    let engine = restarted.engine;
    let last = tokio::time::Instant::now();
    assert_eq!(restarted.report.asleep, N);
    assert_eq!(engine.running_instances(), 0);
    tokio::time::pause();
    tokio::time::sleep_until(first + Duration::from_secs(59 * 60)).await;
    assert_eq!(engine.evicted_loads(), 0, "loaded before the timer was due");
    tokio::time::sleep_until(last + Duration::from_secs(61 * 60)).await;
    for id in ids {
        let (status, outcome) = ended(&engine, id).await;
        assert_eq!(status, Status::Completed);
        assert!(outcome.contains("\"late\":true"), "{outcome}");
    }
    assert_eq!(engine.evicted_loads(), N as u64, "each loaded once");
    engine.shutdown(HANG).await.expect("shutdown");
}

/// The child's part of the crash test: on the file, with eviction at once, start
/// instances waiting at a user task or for a payment, pay every other payment
/// once its instance is evicted, print what the store acknowledged, and run until
/// killed.
#[test]
#[ignore = "run by the wake crash test as its child process"]
fn wake_crash_child() {
    let Ok(path) = std::env::var("THRESH_WAKE_CRASH_STORE") else {
        return;
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    runtime.block_on(async {
        let engine = thresh::Engine::open(&path).await.expect("open");
        register(&engine).expect("register");
        // Evicted by the resume of an earlier round, or by eviction here.
        engine.resume().await.expect("resume");
        for i in 0.. {
            let key = format!("W-{}-{i}", std::process::id());
            let errand = Errand {
                id: key.clone(),
                ..Errand::default()
            };
            let evicted = engine.evicted_instances();
            if i % 2 == 0 {
                let id = engine
                    .start(&ERRAND_SIGNED, errand)
                    .await
                    .expect("stored")
                    .id();
                println!("acked {} signed {key}", id.0);
            } else {
                let id = engine
                    .start(&ERRAND_PAID, errand)
                    .await
                    .expect("stored")
                    .id();
                println!("acked {} paid {key}", id.0);
                if i % 4 == 1 {
                    until("evicted", || engine.evicted_instances() > evicted).await;
                    engine
                        .publish_message("errand-paid", &key, 1_u64)
                        .await
                        .expect("published");
                    println!("payment {key}");
                }
            }
        }
    });
}

/// SIGKILL the engine's process while instances are evicted, several times on one
/// file, each run resuming what the last left: after a last resume every
/// acknowledged instance is there, those with nothing to do are not loaded until
/// woken (a message, a task's completion), each payment is applied exactly once and
/// each instance ends once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_crash_while_evicted_then_a_resume_loads_only_what_is_woken() {
    use std::io::{BufRead, BufReader};
    let file = thresh::testing::TempFile::new("wake-crash", "db");
    let path = file.path().to_path_buf();
    let mut acked: Vec<(u64, String, String)> = Vec::new();
    let mut paid: Vec<String> = Vec::new();
    for round in 0..4u64 {
        let mut child = std::process::Command::new(std::env::current_exe().expect("exe"))
            .args([
                "--ignored",
                "--exact",
                "wake::wake_crash_child",
                "--nocapture",
                "--test-threads=1",
            ])
            .env("THRESH_WAKE_CRASH_STORE", &path)
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::null())
            .spawn()
            .expect("child");
        let stdout = child.stdout.take().expect("stdout");
        let want = 6 + (round * 5) % 9;
        let (a, p) = tokio::task::spawn_blocking(move || {
            let (mut acked, mut paid) = (Vec::new(), Vec::new());
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                // The harness prints its `test ... ` before the child's first line.
                let line = line.rsplit("... ").next().unwrap_or_default();
                if let Some(rest) = line.strip_prefix("acked ") {
                    let mut parts = rest.split_whitespace();
                    let id = parts.next().expect("id").parse::<u64>().expect("id");
                    let kind = parts.next().expect("kind").to_string();
                    let key = parts.next().expect("key").to_string();
                    acked.push((id, kind, key));
                    if acked.len() as u64 >= want {
                        break;
                    }
                } else if let Some(key) = line.strip_prefix("payment ") {
                    paid.push(key.trim().to_string());
                }
            }
            (acked, paid)
        })
        .await
        .expect("reader");
        child.kill().expect("SIGKILL");
        let _ = child.wait();
        acked.extend(a);
        paid.extend(p);
    }
    let engine = thresh::Engine::open(&path)
        .await
        .expect("reopen after the kills");
    register(&engine).expect("register");
    let report = engine.resume().await.expect("resume");
    assert!(report.skipped.is_empty(), "{:?}", report.skipped);
    let running = engine
        .list(None, Some(Status::Running))
        .await
        .expect("listed")
        .len();
    assert_eq!(report.resumed.len(), running, "loaded or asleep");
    assert!(report.asleep > 0, "instances at rest stay in the store");
    assert_eq!(engine.evicted_loads(), 0, "none loaded by the resume");
    // (A resumed one may be evicted again already.)
    assert!(engine.running_instances() <= report.resumed.len() - report.asleep);
    for (id, kind, key) in &acked {
        let id = InstanceId(*id);
        if kind == "paid" && !paid.contains(key) {
            engine
                .publish_message("errand-paid", key, 1_u64)
                .await
                .expect("published");
        }
        if kind == "signed" {
            let tasks = tokio::time::timeout(HANG, async {
                loop {
                    let tasks = engine
                        .tasks(&thresh::TaskQuery::new())
                        .await
                        .expect("listed");
                    let mine: Vec<_> = tasks.into_iter().filter(|t| t.id.instance == id).collect();
                    if !mine.is_empty() {
                        break mine;
                    }
                    tokio::task::yield_now().await;
                }
            })
            .await
            .expect("its task is open");
            engine
                .complete_task(&ERRAND_SIGNED, tasks[0].id, |e| e.signed = true)
                .await
                .expect("completed");
        }
        let (status, outcome) = tokio::time::timeout(HANG, ended(&engine, id))
            .await
            .expect("it ends");
        assert_eq!(status, Status::Completed, "instance {id:?}");
        let done = if kind == "paid" {
            "\"paid\":1"
        } else {
            "\"signed\":true"
        };
        assert!(outcome.contains(done), "instance {id:?}: {outcome}");
    }
    assert!(engine.evicted_loads() > 0, "the woken were loaded");
    // What is still running was started but not acknowledged before a kill.
    let left = engine
        .list(None, Some(Status::Running))
        .await
        .expect("listed");
    for (id, _, _) in &left {
        assert!(
            !acked.iter().any(|(a, _, _)| *a == id.0),
            "{id:?} left running"
        );
    }
    engine.shutdown(HANG).await.expect("shutdown");
}

/// `n` instances waiting for a signal, evicted, then a restart: the resume loads
/// none; a broadcast wakes them a page at a time (never all in memory at once,
/// each loaded once) and reaches each once; a second reaches none. With
/// `complete`, every one's task is completed and its data shows the signal
/// applied once.
async fn signal_to_resting_instances(n: usize, complete: bool) {
    let store = test_store();
    let engine = store.engine().expect("open");
    register(&engine).expect("register");
    let mut ids = Vec::with_capacity(n);
    for _ in 0..n {
        let handle = engine
            .start(&ERRAND_ALARMED, Errand::default())
            .await
            .expect("stored");
        ids.push(handle.id());
    }
    until("all evicted", || engine.evicted_instances() == n).await;
    let restarted = thresh::testing::restart(engine, &store, register)
        .await
        .expect("restarted");
    let engine = restarted.engine;
    assert_eq!(
        (restarted.report.asleep, restarted.report.resumed.len()),
        (n, n)
    );
    assert_eq!(engine.running_instances(), 0, "none loaded");

    let done = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let sampler = {
        let (engine, done) = (engine.clone(), done.clone());
        tokio::spawn(async move {
            let mut most = 0;
            while !done.load(std::sync::atomic::Ordering::Relaxed) {
                most = most.max(engine.running_instances());
                tokio::task::yield_now().await;
            }
            most
        })
    };
    let reached = tokio::time::timeout(HANG * 10, engine.broadcast_signal("errand-alarm", 9_u32))
        .await
        .expect("broadcast in time")
        .expect("stored");
    done.store(true, std::sync::atomic::Ordering::Relaxed);
    let most = sampler.await.expect("sampled");
    assert_eq!(reached, n, "each reached once");
    // One that rests (and is evicted) again between its load and the delivery
    // is loaded once more by the delivery.
    let loads = engine.evicted_loads();
    assert!(loads >= n as u64, "{loads} loads of {n}");
    assert!(most < n.min(10_000), "{most} of {n} in memory at once");
    until("evicted again", || engine.evicted_instances() == n).await;
    let again = engine
        .broadcast_signal("errand-alarm", 1_u32)
        .await
        .expect("nothing to store");
    assert_eq!(again, 0, "none waits for it any more");
    if complete {
        // Loaded by its task's completion, an instance is not evicted again (a
        // task action racing a re-eviction is refused as not running).
        engine.evict_idle(None);
        let tasks = engine
            .tasks(&thresh::TaskQuery::new())
            .await
            .expect("listed");
        assert_eq!(tasks.len(), n);
        for task in &tasks {
            engine
                .complete_task(&ERRAND_ALARMED, task.id, |e| e.signed = true)
                .await
                .expect("completed");
        }
        for id in ids {
            let (status, outcome) = tokio::time::timeout(HANG, ended(&engine, id))
                .await
                .expect("it ends");
            assert_eq!(status, Status::Completed);
            assert!(outcome.contains("\"paid\":9,"), "{outcome}");
        }
    }
    engine.shutdown(HANG).await.expect("shutdown");
}

/// A signal to 2 000 instances a resume left in the store (repeated).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_signal_to_two_thousand_resting_instances_after_a_resume() {
    for _round in 0..2 {
        signal_to_resting_instances(2_000, true).await;
    }
}

/// A signal to 100 000 instances a resume left in the store: ignored in the
/// README's command, run by `.ci/run` (`cargo test --test durable -- --ignored
/// a_hundred_thousand`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "long: 100 000 instances"]
async fn a_signal_to_a_hundred_thousand_resting_instances_after_a_resume() {
    signal_to_resting_instances(100_000, false).await;
}

/// The handles of resumed instances that ended are not kept for ever: 1 100
/// instances a resume left asleep, each taken by `handle` (which loads it),
/// completed and ended one after the other — the engine keeps fewer than a
/// hundred of their handles at the end, not 1 100 (each time the handles have
/// doubled, 1 024 at least, the ended ones go).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_handles_of_ended_resumed_instances_are_let_go() {
    const N: usize = 1_100;
    let store = test_store();
    let engine = store.engine().expect("open");
    register(&engine).expect("register");
    let mut ids = Vec::with_capacity(N);
    for n in 0..N {
        let errand = Errand {
            id: format!("H-{n}"),
            ..Errand::default()
        };
        ids.push(
            engine
                .start(&ERRAND_SIGNED, errand)
                .await
                .expect("stored")
                .id(),
        );
    }
    until("all evicted", || engine.evicted_instances() == N).await;
    let restarted = thresh::testing::restart(engine, &store, register)
        .await
        .expect("restarted");
    let engine = restarted.engine;
    assert_eq!(restarted.report.asleep, N);
    assert_eq!(engine.resumed_handles(), 0, "none loaded by the resume");
    for &id in &ids {
        let handle = engine.handle(&ERRAND_SIGNED, id).expect("a handle");
        handle
            .complete("sign", |e: &mut Errand| e.signed = true)
            .await
            .expect("completed");
        let outcome = tokio::time::timeout(HANG, handle.outcome())
            .await
            .expect("it ends");
        assert!(
            matches!(outcome, thresh::Outcome::Completed(_)),
            "{outcome:?}"
        );
    }
    let kept = engine.resumed_handles();
    assert!(kept < 100, "{kept} handles of ended instances kept");
    // The store still has each: a pruned handle is not a lost instance.
    assert_eq!(ended(&engine, ids[0]).await.0, Status::Completed);
    assert!(engine.handle(&ERRAND_SIGNED, ids[0]).is_none());
    engine.shutdown(HANG).await.expect("shutdown");
}

/// A store that holds a resume at its first page of resting instances until the
/// test lets it go: what is published meanwhile reaches the engine while the
/// resume is putting instances to sleep.
struct HeldAtRest {
    inner: thresh::store::MemoryStore,
    /// Told when the resume reads its first page; the resume then waits for `go`.
    reading: std::sync::Mutex<Option<std::sync::mpsc::Sender<()>>>,
    go: std::sync::Mutex<Option<std::sync::mpsc::Receiver<()>>>,
}

impl thresh::store::Store for HeldAtRest {
    fn apply(&self, batch: &[thresh::store::Write]) -> Result<(), thresh::store::StoreError> {
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
    fn tasks(
        &self,
        query: &thresh::TaskQuery,
    ) -> Result<Vec<thresh::store::TaskRecord>, thresh::store::StoreError> {
        self.inner.tasks(query)
    }
    fn claim_task(
        &self,
        instance: u64,
        number: u32,
        user: Option<&str>,
    ) -> Result<Option<thresh::store::TaskRecord>, thresh::store::StoreError> {
        self.inner.claim_task(instance, number, user)
    }
    fn resting(
        &self,
        after: Option<u64>,
        limit: usize,
    ) -> Result<Vec<thresh::store::Resting>, thresh::store::StoreError> {
        let reading = self.reading.lock().unwrap().take();
        if let Some(reading) = reading {
            let _ = reading.send(());
            let go = self.go.lock().unwrap().take().expect("held once");
            let _ = go.recv_timeout(Duration::from_secs(60));
        }
        self.inner.resting(after, limit)
    }
}

/// A message published while a resume is putting the resting instances to sleep
/// (after it read which instances have a stored message, before their waiter is
/// asleep): the resume, done, loads the waiter, which takes the message once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_message_published_while_a_resume_puts_instances_to_sleep_wakes_its_waiter() {
    let (reading, read) = std::sync::mpsc::channel();
    let (go, held) = std::sync::mpsc::channel();
    let store = Arc::new(HeldAtRest {
        inner: thresh::store::MemoryStore::new(),
        reading: std::sync::Mutex::new(None),
        go: std::sync::Mutex::new(Some(held)),
    });
    let engine = DurableEngine::with_store(store.clone()).expect("engine");
    register(&engine).expect("register");
    let errand = Errand {
        id: "R-1".into(),
        ..Errand::default()
    };
    let id = engine
        .start(&ERRAND_PAID, errand)
        .await
        .expect("stored")
        .id();
    until("evicted", || engine.evicted_instances() == 1).await;
    engine.shutdown(HANG).await.expect("shutdown");
    let engine = DurableEngine::with_store(store.clone()).expect("engine");
    register(&engine).expect("register");
    *store.reading.lock().unwrap() = Some(reading);
    let resuming = tokio::spawn({
        let engine = engine.clone();
        async move { engine.resume().await }
    });
    // The resume has read what to load (nothing: no message yet) and waits at
    // its first page of resting instances.
    tokio::task::spawn_blocking(move || read.recv_timeout(Duration::from_secs(60)))
        .await
        .expect("joined")
        .expect("the resume reads its first page");
    engine
        .publish_message("errand-paid", "R-1", 5_u64)
        .await
        .expect("published");
    go.send(()).expect("let go");
    let report = tokio::time::timeout(HANG, resuming)
        .await
        .expect("resumed in time")
        .expect("joined")
        .expect("resumed");
    assert_eq!(report.asleep, 1);
    let (status, outcome) = tokio::time::timeout(HANG, ended(&engine, id))
        .await
        .expect("the waiter takes the message and ends");
    assert_eq!(status, Status::Completed);
    assert!(outcome.contains("\"paid\":5"), "taken once: {outcome}");
    assert_eq!(engine.evicted_loads(), 1);
    engine.shutdown(HANG).await.expect("shutdown");
}
