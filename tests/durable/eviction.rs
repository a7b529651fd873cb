//! Eviction (`DurableEngine::evict_idle`): an instance whose every token waits
//! leaves memory once its checkpoint is stored, and whatever is for it — a message,
//! a signal, a timer, a completion, a cancel, a handle's request — loads it from
//! its checkpoint and is delivered once.

use super::*;

#[derive(Clone, Debug, Default, PartialEq, ProcessData, Serialize, Deserialize)]
pub struct Parcel {
    pub id: String,
    pub paid: u64,
    pub alarm: u32,
    pub left: bool,
    pub approved: bool,
}

/// Payments `PAYMENT`'s catch applied in this test binary, by parcel id.
static APPLIED: std::sync::Mutex<Vec<String>> = std::sync::Mutex::new(Vec::new());

process! {
    PAYMENT: Parcel {
        start s;
        receive pay: message("parcel-paid", key = |p| p.id.clone(), apply = |p, amount: &u64| {
            p.paid += *amount;
            APPLIED.lock().unwrap().push(p.id.clone());
        });
        end   e;
        s -> pay -> e;
    }
}

process! {
    ALARMED: Parcel {
        start s;
        catch raised: signal("parcel-alarm", apply = |p, level: &u32| p.alarm = *level);
        end   e;
        s -> raised -> e;
    }
}

process! {
    DELAYED: Parcel {
        start s;
        catch later: timer(Duration::from_secs(3600));
        task  go = |p| async move { p.left = true; Ok(()) };
        end   e;
        s -> later -> go -> e;
    }
}

process! {
    SIGNED: Parcel {
        start s;
        user  sign;
        end   e;
        s -> sign -> e;
    }
}

async fn engine(store: &TestStore) -> DurableEngine {
    let engine = store.engine().expect("open");
    engine.evict_idle(Some(Duration::ZERO));
    engine
}

/// A user task: evicted once it waits; its handle's completion loads it and it
/// ends; a burst of reads loaded it once before. (One thread: the burst is sent
/// whole before the loaded loop can run and rest again.)
#[tokio::test(flavor = "current_thread")]
async fn a_user_task_is_evicted_and_its_completion_loads_it() {
    let store = test_store();
    let engine = engine(&store).await;
    let handle = engine
        .start(&SIGNED, Parcel::default())
        .await
        .expect("stored");
    until("evicted", || engine.evicted_instances() == 1).await;
    assert_eq!(engine.running_instances(), 0, "its loop left memory");
    // A burst of requests loads it once.
    let reads = all_at_once((0..10).map(|_| {
        let handle = handle.clone();
        Box::pin(async move { handle.open_work().await.len() })
    }))
    .await;
    assert!(
        reads.iter().all(|&n| n == 1),
        "each read saw the open task: {reads:?}"
    );
    assert_eq!(engine.evicted_loads(), 1);
    until("evicted again", || engine.evicted_instances() == 1).await;
    handle
        .complete(SIGNED::user.sign, |p| p.approved = true)
        .await
        .expect("completed");
    let outcome = tokio::time::timeout(HANG, handle.outcome())
        .await
        .expect("ended");
    assert_eq!(outcome.completed().map(|p| p.approved), Some(true));
    assert_eq!(engine.evicted_loads(), 2);
    assert_eq!(engine.evicted_instances(), 0);
    engine.shutdown(HANG).await.expect("shutdown");
}

/// The task list of evicted instances: listed from the store, claimed there, and
/// completed by id — which loads the instance, which ends.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_evicted_instances_task_is_completed_from_the_task_list() {
    let store = test_store();
    let engine = engine(&store).await;
    let handle = engine
        .start(&SIGNED, Parcel::default())
        .await
        .expect("stored");
    until("evicted", || engine.evicted_instances() == 1).await;
    let tasks = engine
        .tasks(&thresh::TaskQuery::new())
        .await
        .expect("listed");
    let [task] = &tasks[..] else {
        panic!("one open task: {tasks:?}");
    };
    assert_eq!(task.id.instance, handle.id());
    engine.claim(task.id, "ann").await.expect("claimed");
    assert_eq!(
        engine.evicted_loads(),
        0,
        "listing and claiming read the store"
    );
    engine
        .complete_task(&SIGNED, task.id, |p| p.approved = true)
        .await
        .expect("completed");
    let outcome = tokio::time::timeout(HANG, handle.outcome())
        .await
        .expect("ended");
    assert_eq!(outcome.completed().map(|p| p.approved), Some(true));
    // Loaded to answer whether the task is there, then given the completion: with
    // no idle time it may be evicted again between the two, and loaded again.
    let loads = engine.evicted_loads();
    assert!((1..=2).contains(&loads), "loaded {loads} times");
    engine.shutdown(HANG).await.expect("shutdown");
}

/// An evicted instance no handle holds and no subscription reaches (a user task)
/// is kept without its intake; its task, completed by id, loads it on a new one.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_evicted_instance_nothing_reaches_is_loaded_by_its_task() {
    let store = test_store();
    let engine = engine(&store).await;
    let id = engine
        .start(&SIGNED, Parcel::default())
        .await
        .expect("stored")
        .id();
    until("evicted", || engine.evicted_instances() == 1).await;
    let tasks = engine
        .tasks(&thresh::TaskQuery::new())
        .await
        .expect("listed");
    let [task] = &tasks[..] else {
        panic!("one open task: {tasks:?}");
    };
    engine
        .complete_task(&SIGNED, task.id, |p| p.approved = true)
        .await
        .expect("completed");
    let ended = loop {
        match engine.instance(id).await.expect("read") {
            Some((Status::Running, _)) => tokio::task::yield_now().await,
            other => break other,
        }
    };
    let (status, outcome) = ended.expect("stored");
    assert_eq!(status, Status::Completed);
    assert!(outcome.expect("an outcome").contains("\"approved\":true"));
    // Loaded to answer whether the task is there, then given the completion: with
    // no idle time it may be evicted again between the two, and loaded again.
    let loads = engine.evicted_loads();
    assert!((1..=2).contains(&loads), "loaded {loads} times");
    engine.shutdown(HANG).await.expect("shutdown");
}

/// A cancel through the handle of an evicted instance loads it and cancels it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_evicted_instance_is_cancelled_through_its_handle() {
    let store = test_store();
    let engine = engine(&store).await;
    let handle = engine
        .start(&SIGNED, Parcel::default())
        .await
        .expect("stored");
    until("evicted", || engine.evicted_instances() == 1).await;
    handle.cancel();
    let outcome = tokio::time::timeout(HANG, handle.outcome())
        .await
        .expect("ended");
    assert!(matches!(outcome, Outcome::Cancelled(_)), "{outcome:?}");
    let (status, _) = engine.instance(handle.id()).await.unwrap().unwrap();
    assert_eq!(status, Status::Cancelled);
    engine.shutdown(HANG).await.expect("shutdown");
}

/// A message for an evicted instance's receive task loads it; the payment is
/// applied once and the stored message consumed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_message_loads_an_evicted_instance_and_is_applied_once() {
    let store = test_store();
    let engine = engine(&store).await;
    engine.register(&PAYMENT).expect("register");
    let parcel = Parcel {
        id: "evicted-message".into(),
        ..Parcel::default()
    };
    let handle = engine.start(&PAYMENT, parcel).await.expect("stored");
    until("evicted", || engine.evicted_instances() == 1).await;
    engine
        .publish_message("parcel-paid", "evicted-message", 5_u64)
        .await
        .expect("published");
    let outcome = tokio::time::timeout(HANG, handle.outcome())
        .await
        .expect("ended");
    assert_eq!(outcome.completed().map(|p| p.paid), Some(5));
    let applied = APPLIED
        .lock()
        .unwrap()
        .iter()
        .filter(|id| *id == "evicted-message")
        .count();
    assert_eq!(applied, 1);
    engine.shutdown(HANG).await.expect("shutdown");
}

/// A signal for an evicted instance's catch loads it; the broadcast is acknowledged
/// once its effect is stored.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_signal_loads_an_evicted_instance() {
    let store = test_store();
    let engine = engine(&store).await;
    engine.register(&ALARMED).expect("register");
    let handle = engine
        .start(&ALARMED, Parcel::default())
        .await
        .expect("stored");
    until("evicted", || engine.evicted_instances() == 1).await;
    let reached = engine
        .broadcast_signal("parcel-alarm", 7_u32)
        .await
        .expect("stored");
    assert_eq!(reached, 1);
    let outcome = tokio::time::timeout(HANG, handle.outcome())
        .await
        .expect("ended");
    assert_eq!(outcome.completed().map(|p| p.alarm), Some(7));
    engine.shutdown(HANG).await.expect("shutdown");
}

/// A timer due for 10 000 evicted instances at once: one timer of the engine wakes
/// them; each loads and ends once. The clock is paused once they are evicted (a
/// paused clock would jump to the first timer while a start waits for the store's
/// writer thread).
#[tokio::test]
async fn a_timer_due_for_ten_thousand_evicted_instances_loads_each_once() {
    const N: usize = 10_000;
    let store = test_store();
    let engine = engine(&store).await;
    let mut handles = Vec::with_capacity(N);
    // Each timer is due an hour after its instance started (in real time, before
    // the clock is paused).
    let mut ids = Vec::with_capacity(N);
    let first = tokio::time::Instant::now();
    for i in 0..N {
        let handle = engine
            .start(&DELAYED, Parcel::default())
            .await
            .expect("stored");
        ids.push(handle.id());
        // Half are held by nothing once evicted: kept without their intake.
        if i % 2 == 0 {
            handles.push(handle);
        }
    }
    let last = tokio::time::Instant::now();
    until("all evicted", || engine.evicted_instances() == N).await;
    assert_eq!(engine.running_instances(), 0);
    tokio::time::pause();
    tokio::time::sleep_until(first + Duration::from_secs(59 * 60)).await;
    assert_eq!(engine.evicted_loads(), 0, "loaded before the timer was due");
    tokio::time::sleep_until(last + Duration::from_secs(61 * 60)).await;
    for handle in &handles {
        // No timeout on the paused clock: the ends are stored by the writer thread.
        let outcome = handle.outcome().await;
        assert_eq!(outcome.completed().map(|p| p.left), Some(true));
    }
    for id in ids {
        let ended = loop {
            match engine.instance(id).await.expect("read") {
                Some((Status::Running, _)) => tokio::task::yield_now().await,
                other => break other,
            }
        };
        assert_eq!(ended.map(|(status, _)| status), Some(Status::Completed));
    }
    assert_eq!(engine.evicted_loads(), N as u64, "each loaded once");
    engine.shutdown(HANG).await.expect("shutdown");
}

/// A message published as its instance is being evicted: delivered exactly once,
/// whichever comes first, over many rounds on a multi-thread runtime.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_message_racing_eviction_is_applied_exactly_once() {
    let store = test_store();
    let engine = engine(&store).await;
    engine.register(&PAYMENT).expect("register");
    for round in 0..200 {
        let id = format!("race-{round}");
        let parcel = Parcel {
            id: id.clone(),
            ..Parcel::default()
        };
        let handle = engine.start(&PAYMENT, parcel).await.expect("stored");
        // Let some rounds get further towards their eviction than others, and one
        // in four get there.
        if round % 4 == 0 {
            until("evicted", || engine.evicted_instances() == 1).await;
        }
        for _ in 0..(round % 7) {
            tokio::task::yield_now().await;
        }
        engine
            .publish_message("parcel-paid", &id, 1_u64)
            .await
            .expect("published");
        let outcome = tokio::time::timeout(HANG, handle.outcome())
            .await
            .expect("ended");
        assert_eq!(
            outcome.completed().map(|p| p.paid),
            Some(1),
            "round {round}"
        );
        let applied = APPLIED.lock().unwrap().iter().filter(|a| **a == id).count();
        assert_eq!(applied, 1, "round {round}");
    }
    assert!(
        engine.evicted_loads() > 0,
        "some messages came after the eviction"
    );
    engine.shutdown(HANG).await.expect("shutdown");
}

/// Await every future of `futures`, each polled first in one poll (so each sends
/// its request before any is answered); their outputs in order.
async fn all_at_once<F: std::future::Future + Unpin>(
    futures: impl Iterator<Item = F>,
) -> Vec<F::Output> {
    let mut pending: Vec<(F, Option<F::Output>)> = futures.map(|f| (f, None)).collect();
    std::future::poll_fn(|cx| {
        let mut done = true;
        for (future, out) in pending.iter_mut() {
            if out.is_none() {
                match std::pin::Pin::new(future).poll(cx) {
                    std::task::Poll::Ready(value) => *out = Some(value),
                    std::task::Poll::Pending => done = false,
                }
            }
        }
        match done {
            true => std::task::Poll::Ready(()),
            false => std::task::Poll::Pending,
        }
    })
    .await;
    pending.into_iter().filter_map(|(_, out)| out).collect()
}

process! {
    PAID_THEN_SIGNED: Parcel {
        start s;
        receive pay: message("parcel-settled", key = |p| p.id.clone(), apply = |p, amount: &u64| p.paid += *amount);
        user  sign;
        end   e;
        s -> pay -> sign -> e;
    }
}

/// The child's part of the crash test: start instances on the file with eviction
/// at once, pay each once it is evicted, print what the store acknowledged, and
/// run until killed.
#[test]
#[ignore = "run by the eviction crash test as its child process"]
fn eviction_crash_child() {
    let Ok(path) = std::env::var("THRESH_EVICTION_CRASH_STORE") else {
        return;
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    runtime.block_on(async {
        let engine = thresh::Engine::open(&path).await.expect("open");
        engine.evict_idle(Some(Duration::ZERO));
        engine.register(&PAID_THEN_SIGNED).expect("register");
        for i in 0.. {
            let id = format!("C-{}-{i}", std::process::id());
            let parcel = Parcel {
                id: id.clone(),
                ..Parcel::default()
            };
            let handle = engine
                .start(&PAID_THEN_SIGNED, parcel)
                .await
                .expect("stored");
            println!("acked {} {id}", handle.id().0);
            if i % 2 == 0 {
                // Paid once evicted: the payment loads it.
                until("evicted", || engine.evicted_instances() >= 1).await;
                engine
                    .publish_message("parcel-settled", &id, 1_u64)
                    .await
                    .expect("published");
                println!("paid {id}");
            }
        }
    });
}

/// SIGKILL the engine's process while instances are evicted (some paid and loaded,
/// some paid and not yet loaded, some waiting), several times on one file: after a
/// resume every acknowledged instance is there, each payment is applied exactly
/// once, and each ends once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_crash_while_instances_are_evicted_loses_and_doubles_nothing() {
    use std::io::{BufRead, BufReader};
    let file = thresh::testing::TempFile::new("eviction-crash", "db");
    let path = file.path().to_path_buf();
    let mut acked: Vec<(u64, String)> = Vec::new();
    let mut paid: Vec<String> = Vec::new();
    for round in 0..4u64 {
        let mut child = std::process::Command::new(std::env::current_exe().expect("exe"))
            .args([
                "--ignored",
                "--exact",
                "eviction::eviction_crash_child",
                "--nocapture",
                "--test-threads=1",
            ])
            .env("THRESH_EVICTION_CRASH_STORE", &path)
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::null())
            .spawn()
            .expect("child");
        let stdout = child.stdout.take().expect("stdout");
        let want = 4 + (round * 5) % 9;
        let (a, p) = tokio::task::spawn_blocking(move || {
            let (mut acked, mut paid) = (Vec::new(), Vec::new());
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                // The harness prints its `test ... ` before the child's first line.
                let line = line.rsplit("... ").next().unwrap_or_default();
                if let Some(rest) = line.strip_prefix("acked ") {
                    let (id, key) = rest.trim().split_once(' ').expect("id and key");
                    acked.push((id.parse::<u64>().expect("id"), key.to_string()));
                    if acked.len() as u64 >= want {
                        break;
                    }
                } else if let Some(key) = line.strip_prefix("paid ") {
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
    assert!(
        !paid.is_empty(),
        "some evicted instances were paid before a kill"
    );
    let engine = thresh::Engine::open(&path)
        .await
        .expect("reopen after the kills");
    engine.register(&PAID_THEN_SIGNED).expect("register");
    let report = engine.resume().await.expect("resume");
    assert!(report.skipped.is_empty(), "{:?}", report.skipped);
    for (id, key) in &acked {
        let handle = engine
            .handle(&PAID_THEN_SIGNED, InstanceId(*id))
            .unwrap_or_else(|| panic!("acknowledged instance {id} resumed"));
        if !paid.contains(key) {
            engine
                .publish_message("parcel-settled", key, 1_u64)
                .await
                .expect("published");
        }
        tokio::time::timeout(HANG, async {
            while handle.open_work().await.is_empty() {
                tokio::task::yield_now().await;
            }
        })
        .await
        .expect("paid, it waits to be signed");
        handle
            .complete(PAID_THEN_SIGNED::user.sign, |p| p.approved = true)
            .await
            .expect("signed");
        let outcome = tokio::time::timeout(HANG, handle.outcome())
            .await
            .expect("ended");
        assert_eq!(
            outcome.completed().map(|p| p.paid),
            Some(1),
            "instance {id}"
        );
    }
    engine.shutdown(HANG).await.expect("shutdown");
}

/// A signal to 100 000 evicted instances: the broadcast reaches each kept
/// subscription, loads each once (at most 64 from the store at once) and returns
/// once every effect is stored. Slow in a debug build (minutes), so ignored in
/// the README's command; `.ci/run` runs it (`cargo test --test durable --
/// --ignored a_hundred_thousand`, with the one in `wake.rs`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "slow: 100 000 durable instances"]
async fn a_signal_to_a_hundred_thousand_evicted_instances_loads_each_once() {
    const N: usize = 100_000;
    let store = test_store();
    let engine = engine(&store).await;
    engine.register(&ALARMED).expect("register");
    let mut handles = Vec::with_capacity(N);
    for chunk in 0..N / 1000 {
        let mut set = tokio::task::JoinSet::new();
        for _ in 0..1000 {
            let engine = engine.clone();
            set.spawn(async move { engine.start(&ALARMED, Parcel::default()).await });
        }
        while let Some(started) = set.join_next().await {
            handles.push(started.expect("joined").expect("stored"));
        }
        let _ = chunk;
    }
    until("all evicted", || engine.evicted_instances() == N).await;
    let reached = engine
        .broadcast_signal("parcel-alarm", 9_u32)
        .await
        .expect("stored");
    assert_eq!(reached, N);
    for handle in &handles {
        let outcome = tokio::time::timeout(HANG, handle.outcome())
            .await
            .expect("ended");
        assert_eq!(outcome.completed().map(|p| p.alarm), Some(9));
    }
    assert_eq!(engine.evicted_loads(), N as u64, "each loaded once");
    engine.shutdown(HANG).await.expect("shutdown");
}
