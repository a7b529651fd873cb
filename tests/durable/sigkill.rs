//! A SQLite file, and real SIGKILLs of the process that ran the engine.

use super::*;
use thresh::Engine;

// ----- a SQLite file, and a real SIGKILL --------------------------------------------

/// A SQLite file for a test that reopens it by path (its children, a new engine),
/// removed with its WAL files when the test ends.
fn temp_store(name: &str) -> thresh::testing::TempFile {
    thresh::testing::TempFile::new(name, "db")
}

/// An instance started on a SQLite file resumes from it in a new engine.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn instances_resume_from_a_sqlite_file() {
    let file = temp_store("file");
    let path = file.path().to_path_buf();
    let engine = Engine::open(&path).await.expect("open");
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

    let engine = Engine::open(&path).await.expect("reopen");
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
        let engine = Engine::open(&path).await.expect("open");
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
    let file = temp_store("crash");
    let path = file.path().to_path_buf();
    let mut acked: Vec<u64> = Vec::new();
    for round in 0..8u64 {
        let mut child = std::process::Command::new(std::env::current_exe().expect("exe"))
            .args([
                "--ignored",
                "--exact",
                "sigkill::crash_child",
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
                // The harness prints its `test ... ` before the child's first line.
                let line = line.rsplit("... ").next().unwrap_or_default();
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
    let engine = Engine::open(&path).await.expect("reopen after the kills");
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

#[derive(Clone, Debug, Default, PartialEq, ProcessData, Serialize, Deserialize)]
pub struct Desk {
    pub id: String,
    pub amount: u64,
    pub cooled: u32,
    pub done: u32,
}

/// What a `desk` message brings.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct DeskMsg {
    pub id: String,
    pub n: u64,
}

process! {
    /// Deployed: a `desk` message starts it (a second one with its key waits for it
    /// to end, then starts the next); a timer, then a task.
    DESK: Desk {
        start asked: message("desk", apply = |d, m: &DeskMsg| {
            d.id = m.id.clone();
            d.amount = m.n;
        });
        catch cool: timer(Duration::from_millis(15));
        task  book = |d| async move { d.done += 1; Ok(()) };
        end   e;
        asked -> cool -> book -> e;
    }
}

process! {
    /// Deployed: a tick every 40 ms, each instance a task, a timer, a task.
    TICKER: Desk {
        start tick: timer(every = Duration::from_millis(40));
        task  count = |d| async move { d.done += 1; Ok(()) };
        catch cool: timer(Duration::from_millis(15));
        task  mark = |d| async move { d.cooled += 1; Ok(()) };
        end   e;
        tick -> count -> cool -> mark -> e;
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
        let engine = Engine::open(&path).await.expect("open");
        // Deployed again in every life: the timer start goes on with its schedule.
        let _desk = engine.deploy(&DESK, Desk::default()).expect("deployed");
        let _ticks = engine.deploy(&TICKER, Desk::default()).expect("deployed");
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
            // A desk message, twice for every third key (the second waits for the
            // first instance of its key to end).
            let desk = format!("D-{n}");
            for _ in 0..1 + usize::from(n % 3 == 0) {
                println!("publishing {desk}");
                let message = DeskMsg {
                    id: desk.clone(),
                    n,
                };
                engine
                    .publish_message("desk", &desk, message)
                    .await
                    .expect("stored");
                println!("desk {desk}");
            }
        }
    });
}

/// A mixed workload — starts, durable messages, user tasks, timers, a parallel join,
/// a deployed message start (keys that come twice) and a deployed timer start —
/// killed with SIGKILL at 24 points on one file, then resumed: every acknowledged
/// start finishes exactly once, every payment is applied exactly once, no committed
/// task runs again, every timer fired once, every acknowledged desk message started
/// one instance (an unacknowledged one at most one), the timer start's store holds
/// exactly one instance per recorded tick, and nothing is left running.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_mixed_workload_survives_sigkill_at_many_points() {
    use std::collections::BTreeSet;
    use std::io::{BufRead, BufReader};
    let file = temp_store("mixed");
    let path = file.path().to_path_buf();
    let mut started = BTreeSet::new();
    let mut paid = BTreeSet::new();
    // Desk messages per key: publishes begun, and acknowledged.
    let mut desk_tried: std::collections::BTreeMap<String, u32> = Default::default();
    let mut desk_acked: std::collections::BTreeMap<String, u32> = Default::default();
    let mut next = 0u64;
    for round in 0..24u64 {
        let mut child = std::process::Command::new(std::env::current_exe().expect("exe"))
            .args([
                "--ignored",
                "--exact",
                "sigkill::mixed_crash_child",
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
        let want = 2 + (round * 7) % 19;
        // Kill after `want` acknowledgments, then read what the child wrote before it
        // died: everything it did is known (a publish begun, acknowledged or not).
        let lines = tokio::task::spawn_blocking(move || {
            let mut got = Vec::new();
            let mut killed = false;
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                // The harness prints its `test ... ` before the child's first line.
                let line = line.rsplit("... ").next().unwrap_or_default().to_string();
                // The test harness's own lines are no acknowledgments.
                if ["started ", "paid ", "approved ", "publishing ", "desk "]
                    .iter()
                    .any(|p| line.starts_with(p))
                {
                    got.push(line);
                    if !killed && got.len() as u64 >= want {
                        child.kill().expect("SIGKILL");
                        killed = true;
                    }
                }
            }
            if !killed {
                child.kill().expect("SIGKILL");
            }
            let _ = child.wait();
            got
        })
        .await
        .expect("reader");
        for line in lines {
            if let Some(key) = line.strip_prefix("started ") {
                started.insert(key.to_string());
            } else if let Some(key) = line.strip_prefix("paid ") {
                paid.insert(key.to_string());
            } else if let Some(key) = line.strip_prefix("publishing ") {
                *desk_tried.entry(key.to_string()).or_default() += 1;
            } else if let Some(key) = line.strip_prefix("desk ") {
                *desk_acked.entry(key.to_string()).or_default() += 1;
            }
        }
        // The next child starts after every deal a child may have started.
        next += 20;
    }
    assert!(started.len() >= 24, "{started:?}");

    assert!(!desk_acked.is_empty(), "{desk_tried:?}");

    let engine = Engine::open(&path).await.expect("reopen after the kills");
    engine.register(&MIXED).expect("register");
    engine.register(&TICKER).expect("register");
    engine.message_type::<u64>("pay");
    engine.message_type::<DeskMsg>("desk");
    // The desk is deployed (its stored start messages start instances); the timer
    // start is not: its schedule stays as the last life left it.
    let _desk = engine.deploy(&DESK, Desk::default()).expect("deployed");
    let report = engine.resume().await.expect("resume");
    assert!(report.skipped.is_empty(), "{:?}", report.skipped);
    assert_eq!(report.messages_unread, 0);
    let mut finished = BTreeSet::new();
    for (id, process) in &report.resumed {
        if *process != "MIXED" {
            continue;
        }
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
    // Desk and ticker instances end by themselves (timers, tasks); desk messages
    // buffered for a running key start theirs as those end.
    tokio::time::timeout(HANG, async {
        while !engine
            .list(None, Some(Status::Running))
            .await
            .expect("list")
            .is_empty()
        {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    })
    .await
    .expect("nothing stuck");
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
        let deployments = store.deployments().expect("read");
        (
            store.list(None, Some(Status::Completed)).expect("read"),
            deployments,
        )
    })
    .await
    .expect("read");
    let (ended, deployments) = ended;
    let data_of = |process: &str| -> Vec<serde_json::Value> {
        ended
            .iter()
            .filter(|r| r.process == process)
            .map(|r| {
                let outcome: serde_json::Value =
                    serde_json::from_str(r.outcome.as_deref().expect("outcome")).expect("json");
                outcome["data"].clone()
            })
            .collect()
    };
    // The timer start: one stored instance per recorded tick, each run through once.
    let ticker = deployments
        .iter()
        .find(|d| d.process == "TICKER")
        .expect("the timer start's schedule is stored");
    let anchors: serde_json::Value = serde_json::from_str(&ticker.timer_anchors).expect("json");
    let fired = anchors["tick"]["fired"].as_u64().expect("a count");
    let ticks = data_of("TICKER");
    assert!(fired > 0, "{anchors}");
    assert_eq!(
        ticks.len() as u64,
        fired,
        "one instance per tick: {anchors}"
    );
    for tick in &ticks {
        assert_eq!(
            (&tick["done"], &tick["cooled"]),
            (&1.into(), &1.into()),
            "{tick}"
        );
    }
    // The desk: an instance per acknowledged message, at most one per unacknowledged.
    let desks = data_of("DESK");
    for (key, tried) in &desk_tried {
        let of_key: Vec<_> = desks.iter().filter(|d| d["id"] == key.as_str()).collect();
        let acked = desk_acked.get(key).copied().unwrap_or(0) as usize;
        assert!(
            acked <= of_key.len() && of_key.len() <= *tried as usize,
            "desk {key}: {acked} acknowledged, {tried} tried, {} instances",
            of_key.len()
        );
        for desk in of_key {
            assert_eq!(
                (&desk["done"], &desk["cooled"]),
                (&1.into(), &0.into()),
                "{desk}"
            );
        }
    }
    assert_eq!(
        desks.len(),
        desks
            .iter()
            .filter(|d| desk_tried.contains_key(d["id"].as_str().unwrap_or("")))
            .count(),
        "no desk instance of an unknown key"
    );
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
