//! Held tokens are durable: a backoff in progress and an open incident are in the
//! checkpoint. The engine's process is killed with SIGKILL while one of each waits,
//! then a new engine resumes from the SQLite file: the backoff's attempt runs once,
//! not before its recorded time; the incident is listed again and a retry after a
//! data fix completes the instance. Each attempt appends a line to a side file, so
//! the runs of every process are counted.

use std::io::{BufRead, BufReader, Write};

use super::*;

/// Appends `attempt wall_ms` to the file `THRESH_ATTEMPTS` names.
fn log_attempt(attempt: u32) {
    let Ok(path) = std::env::var("THRESH_ATTEMPTS") else {
        return;
    };
    let ms = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis();
    let mut file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .unwrap();
    writeln!(file, "{attempt} {ms}").unwrap();
}

async fn durable_flaky(order: &mut Order) -> Result<(), TaskError> {
    let attempt = attempt();
    log_attempt(attempt);
    order.charged = attempt;
    match (attempt == 1, order.card.is_empty()) {
        (true, _) => Err(TaskError::new("network blip")),
        (false, false) => Ok(()),
        (false, true) => Err(TaskError::permanent("no card")),
    }
}

process! {
    pub DURABLE_PAY: Order {
        start s;
        task charge = durable_flaky: retry(2, backoff = 3s);
        end e;
        s -> charge -> e;
    }
}

/// The child's part: start one instance, wait until the store holds it held (for a
/// backoff or at an incident, as `THRESH_HOLD` says), print its id, wait to be killed.
#[test]
#[ignore = "run by the SIGKILL tests as their child process"]
fn held_child() {
    let (Ok(path), Ok(hold)) = (
        std::env::var("THRESH_RETRY_STORE"),
        std::env::var("THRESH_HOLD"),
    ) else {
        return;
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        // The engine's own store, read here too.
        let store = std::sync::Arc::new(thresh::store::SqliteStore::open(&path).unwrap());
        let engine = thresh::DurableEngine::with_store(store.clone()).expect("open");
        engine.register(&DURABLE_PAY).unwrap();
        // "incident": no card, so the second attempt fails for good.
        let card = if hold == "backoff" { "4242" } else { "" };
        let order = Order {
            card: card.into(),
            ..Order::default()
        };
        let handle = engine.start(&DURABLE_PAY, order).await.expect("stored");
        let id = handle.id().0;
        loop {
            let state = thresh::store::Store::instance(&*store, id)
                .unwrap()
                .map(|r| r.state)
                .unwrap_or_default();
            if state.contains(&format!("\"{hold}\"")) {
                break;
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        println!("held {id}");
        std::future::pending::<()>().await;
    });
}

/// Run `held_child` until it reports its instance held, then SIGKILL it.
async fn kill_while_held(store: &std::path::Path, attempts: &std::path::Path, hold: &str) -> u64 {
    let mut child = std::process::Command::new(std::env::current_exe().unwrap())
        .args([
            "--ignored",
            "--exact",
            "durable::held_child",
            "--nocapture",
            "--test-threads=1",
        ])
        .env("THRESH_RETRY_STORE", store)
        .env("THRESH_ATTEMPTS", attempts)
        .env("THRESH_HOLD", hold)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let id = tokio::task::spawn_blocking(move || {
        for line in BufReader::new(stdout).lines() {
            let line = line.expect("the child prints");
            if let Some(id) = line.rsplit("... ").next().unwrap().strip_prefix("held ") {
                return id.trim().parse::<u64>().unwrap();
            }
        }
        panic!("the child ended without holding its instance");
    })
    .await
    .unwrap();
    child.kill().expect("SIGKILL");
    let _ = child.wait();
    id
}

/// The attempt log's path is this process's environment: one SIGKILL test at a time.
static ONE_AT_A_TIME: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

fn attempts_logged(path: &std::path::Path) -> Vec<(u32, i64)> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .map(|l| {
            let (a, ms) = l.split_once(' ').unwrap();
            (a.parse().unwrap(), ms.parse().unwrap())
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_backoff_survives_sigkill_and_its_attempt_runs_once_at_its_time() {
    let _serial = ONE_AT_A_TIME.lock().await;
    let store = thresh::testing::TempFile::new("retry-backoff", "db");
    let attempts = thresh::testing::TempFile::new("retry-backoff", "log");
    let id = kill_while_held(store.path(), attempts.path(), "backoff").await;
    let stored = thresh::store::SqliteStore::open(store.path()).unwrap();
    let state = thresh::store::Store::instance(&stored, id)
        .unwrap()
        .unwrap()
        .state;
    drop(stored);
    let due_ms: i64 = state
        .split("\"due_ms\":")
        .nth(1)
        .and_then(|rest| rest.split(|c: char| !c.is_ascii_digit()).next())
        .and_then(|n| n.parse().ok())
        .expect("the checkpoint records the next attempt's due time");
    let engine = thresh::DurableEngine::open(store.path()).await.unwrap();
    engine.register(&DURABLE_PAY).unwrap();
    std::env::set_var("THRESH_ATTEMPTS", attempts.path());
    let report = engine.resume().await.unwrap();
    assert_eq!(report.resumed.len(), 1, "{report:?}");
    let handle = engine.handle(&DURABLE_PAY, thresh::InstanceId(id)).unwrap();
    let order = handle
        .outcome()
        .await
        .completed()
        .expect("the retry completes");
    assert_eq!(order.charged, 2);
    let logged = attempts_logged(attempts.path());
    assert_eq!(
        logged.iter().map(|(a, _)| *a).collect::<Vec<_>>(),
        [1, 2],
        "one retry"
    );
    assert!(logged[1].1 >= due_ms, "not before its recorded time");
    engine.shutdown(Duration::from_secs(5)).await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_open_incident_survives_sigkill_and_is_retried_after_resume() {
    let _serial = ONE_AT_A_TIME.lock().await;
    let store = thresh::testing::TempFile::new("retry-incident", "db");
    let attempts = thresh::testing::TempFile::new("retry-incident", "log");
    let id = kill_while_held(store.path(), attempts.path(), "incident").await;
    let engine = thresh::DurableEngine::open(store.path()).await.unwrap();
    engine.register(&DURABLE_PAY).unwrap();
    // Listed from the store before any instance is resumed.
    let stored = engine.incidents().await.unwrap();
    assert_eq!(stored.len(), 1, "{stored:?}");
    assert_eq!(
        (
            stored[0].id.instance.0,
            stored[0].node,
            stored[0].attempts,
            stored[0].error.as_str()
        ),
        (id, "charge", 2, "no card")
    );
    std::env::set_var("THRESH_ATTEMPTS", attempts.path());
    engine.resume().await.unwrap();
    // The resumed loop puts its incident back on the board as it restores: its
    // handle's answer comes from the loop, once restored.
    let handle = engine.handle(&DURABLE_PAY, thresh::InstanceId(id)).unwrap();
    let incident = &handle.incidents().await[0];
    assert_eq!(engine.incidents().await.unwrap().len(), 1);
    assert_eq!(
        (
            incident.id.instance.0,
            incident.node,
            incident.attempts,
            incident.error.as_str()
        ),
        (id, "charge", 2, "no card")
    );
    assert_eq!(
        attempts_logged(attempts.path()).len(),
        2,
        "no attempt ran on resume"
    );
    assert_eq!(incident.id, stored[0].id);
    engine
        .retry_with(incident.id, |o: &mut Order| o.card = "4242".into())
        .await
        .unwrap();
    let order = handle
        .outcome()
        .await
        .completed()
        .expect("completes after the fix");
    assert_eq!(order.charged, 3);
    assert_eq!(attempts_logged(attempts.path()).len(), 3);
    assert_eq!(
        engine.incidents().await.unwrap(),
        Vec::new(),
        "resolved in the store"
    );
    engine.shutdown(Duration::from_secs(5)).await.unwrap();
}

/// A stored instance's picture tells a token waiting for its next attempt from one
/// at an open incident: only the incident is painted as one, with its error.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stored_picture_tells_a_backoff_from_an_incident() {
    let _serial = ONE_AT_A_TIME.lock().await;
    let store = std::sync::Arc::new(thresh::store::MemoryStore::new());
    let engine = thresh::DurableEngine::with_store(store.clone()).unwrap();
    engine.register(&DURABLE_PAY).unwrap();
    let handle = engine.start(&DURABLE_PAY, Order::default()).await.unwrap();
    let id = handle.id();
    let stored_state = |store: &thresh::store::MemoryStore| {
        use thresh::store::Store;
        store
            .instance(id.0)
            .unwrap()
            .map(|r| r.state)
            .unwrap_or_default()
    };
    // The first attempt failed: the token waits 3 s for the second.
    tokio::time::timeout(Duration::from_secs(20), async {
        while !stored_state(&store).contains("\"backoff\"") {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    })
    .await
    .expect("a backoff stored");
    let picture = engine.picture(&DURABLE_PAY, id).await.unwrap().unwrap();
    assert!(!picture.contains("class=\"incident\""), "{picture}");
    // The second finds no card: an incident, painted with its error.
    tokio::time::timeout(Duration::from_secs(20), async {
        while engine.incidents().await.unwrap().is_empty() {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    })
    .await
    .expect("an incident stored");
    let picture = engine.picture(&DURABLE_PAY, id).await.unwrap().unwrap();
    assert!(picture.contains("class=\"incident\""), "{picture}");
    assert!(picture.contains("no card"), "{picture}");
    engine.shutdown(Duration::from_secs(5)).await.unwrap();
}
