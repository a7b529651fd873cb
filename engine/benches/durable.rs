//! The durable engine's throughput beside the in-memory engine's, in one run: the
//! parallel-10 shape (start -> AND split -> 10 no-op tasks -> AND join -> end) on 2
//! workers, in memory, on the reference store in memory, and on a SQLite file (WAL,
//! an fsync per group commit). Every durable start is stored before it is
//! acknowledged and every step is checkpointed. No harness; it prints figures.
//!
//! cargo bench -p thresh --features sqlite --bench durable
//! cargo bench -p thresh --features sqlite --bench durable -- migrate   (only the migration:
//! after a restart, then on a running engine holding the instances in memory, then evicted)
//!
//! `-- parallel` runs only the parallel-10 rounds, `-- park-resume` only the parked
//! instances' restart, `-- evict` only the eviction bench (`evicted()`:
//! `THRESH_BENCH_PARKED` instances, 1 000 000 by default; `THRESH_BENCH_EVICT=0`
//! keeps them in memory, as before eviction).

#[path = "support/mod.rs"]
#[allow(dead_code)] // this bench uses some of the shared helpers
mod support;

use std::sync::Arc;

use serde::{Deserialize, Serialize};
use support::{report_rate, timed, Run};
use thresh::store::MemoryStore;
use thresh::{migrate, process, DurableEngine, Engine, Migration, ProcessData, Query, TaskError};

const RUNS: usize = 5;
const INSTANCES: u64 = 5_000;

#[derive(Clone, Debug, Default, ProcessData, Serialize, Deserialize)]
pub struct Nothing {
    pub n: u64,
}

async fn noop(_: &mut Nothing) -> Result<(), TaskError> {
    Ok(())
}

process! {
    /// An instance that waits: what most stored instances do.
    pub PARKED: Nothing {
        start begin;
        user  approve;
        end   done;
        begin -> approve -> done;
    }
}

/// Which `PAID`'s handler ran at what time, told to the wake bench waiting for it
/// (a channel, so the bench does not spin on a core the engine needs).
static WOKEN: std::sync::Mutex<
    Option<tokio::sync::mpsc::UnboundedSender<(u64, std::time::Instant)>>,
> = std::sync::Mutex::new(None);

process! {
    /// Parked at a user task, or first at a payment keyed by its number: the wake
    /// bench's instance.
    pub PAID: Nothing {
        start begin;
        exclusive first;
        receive pay: message("bench-pay", key = |n| n.n.to_string());
        task  noted = |n| async move {
            let at = std::time::Instant::now();
            if let Some(woken) = WOKEN.lock().unwrap().as_ref() {
                let _ = woken.send((n.n, at));
            }
            Ok(())
        };
        user  approve;
        end   done;
        begin -> first;
        first -> approve else;
        first -> pay when |n| n.n % 1000 == 0;
        pay -> noted -> approve -> done;
    }
}

process! {
    pub PARALLEL10: Nothing {
        start begin;
        parallel fork;
        parallel join;
        end done;
        task p1 = noop; task p2 = noop; task p3 = noop; task p4 = noop; task p5 = noop;
        task p6 = noop; task p7 = noop; task p8 = noop; task p9 = noop; task p10 = noop;
        begin -> fork -> p1, p2, p3, p4, p5, p6, p7, p8, p9, p10 -> join -> done;
    }
}

process! {
    /// Two versions of a waiting process, and a plan between them.
    pub WAITING_V1: Nothing = "waiting" version 1 {
        start begin;
        user  approve;
        end   done;
        begin -> approve -> done;
    }
    pub WAITING_V2: Nothing = "waiting" version 2 {
        start begin;
        user  review;
        task  ship = noop;
        end   done;
        begin -> review -> ship -> done;
    }
}

static UPGRADE: Migration<Nothing, Nothing> =
    migrate!(WAITING_V1 => WAITING_V2 { approve => review });

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime")
}

/// Start `INSTANCES` at once (each start awaited by its own task, so the store's
/// writer can commit them in groups) and await every outcome.
async fn durable_round(engine: &DurableEngine) {
    let mut set = tokio::task::JoinSet::new();
    for _ in 0..INSTANCES {
        let engine = engine.clone();
        set.spawn(async move {
            let handle = engine
                .start(&PARALLEL10, Nothing::default())
                .await
                .expect("stored");
            let _ = handle.outcome().await;
        });
    }
    while set.join_next().await.is_some() {}
}

async fn memory_round(engine: &Engine) {
    let mut handles = Vec::new();
    for _ in 0..INSTANCES {
        handles.push(engine.start(&PARALLEL10, Nothing::default()).await.unwrap());
    }
    for handle in handles {
        let _ = handle.outcome().await;
    }
}

fn main() {
    if let Some(path) = std::env::var_os("THRESH_BENCH_RESTART") {
        restarted(std::path::Path::new(&path));
        return;
    }
    let only: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with('-'))
        .collect();
    let runs = |name: &str| only.is_empty() || only.iter().any(|o| name.contains(o.as_str()));
    if runs("parallel") {
        parallel();
    }
    if runs("park-resume") {
        parked_and_resumed();
    }
    if runs("migrate") {
        migrated();
    }
    if !only.is_empty() && runs("evict") {
        evicted();
    }
}

fn parallel() {
    println!("thresh durable benchmarks: median of {RUNS} runs after a warm-up [min .. max]");
    println!();
    println!("parallel10, {INSTANCES} instances started at once then all awaited, 2 workers");

    let runs: Vec<Run> = runtime().block_on(async {
        let engine = Engine::new();
        memory_round(&engine).await;
        let mut runs = Vec::new();
        for _ in 0..RUNS {
            runs.push(timed(INSTANCES, memory_round(&engine)).await);
        }
        runs
    });
    report_rate("in memory: instances/s", &runs, None);

    let runs: Vec<Run> = runtime().block_on(async {
        let engine = DurableEngine::with_store(Arc::new(MemoryStore::new())).expect("store");
        durable_round(&engine).await;
        let mut runs = Vec::new();
        for _ in 0..RUNS {
            runs.push(timed(INSTANCES, durable_round(&engine)).await);
        }
        runs
    });
    report_rate("durable, MemoryStore: instances/s", &runs, None);

    let path = std::env::temp_dir().join(format!("thresh-bench-{}.db", std::process::id()));
    let _ = std::fs::remove_file(&path);
    let runs: Vec<Run> = runtime().block_on(async {
        let engine = DurableEngine::open(&path).await.expect("store");
        durable_round(&engine).await;
        let mut runs = Vec::new();
        for _ in 0..RUNS {
            runs.push(timed(INSTANCES, durable_round(&engine)).await);
        }
        engine
            .shutdown(std::time::Duration::from_secs(30))
            .await
            .expect("shutdown");
        runs
    });
    report_rate(
        "durable, SQLite (WAL, fsync per batch): instances/s",
        &runs,
        Some(1e4),
    );
    let size = std::fs::metadata(&path).map(|m| m.len()).unwrap_or(0);
    println!(
        "  store file after {} instances: {} bytes",
        INSTANCES * (RUNS as u64 + 1),
        size
    );
    remove(&path);
}

fn remove(path: &std::path::Path) {
    let _ = std::fs::remove_file(path);
    let _ = std::fs::remove_file(path.with_extension("db-wal"));
    let _ = std::fs::remove_file(path.with_extension("db-shm"));
}

/// 100 000 instances parked at a user task on a SQLite file: bytes per instance on
/// disk, and the time a new engine takes to resume them all.
fn parked_and_resumed() {
    const PARKED_INSTANCES: u64 = 100_000;
    println!();
    println!("park-resume: {PARKED_INSTANCES} instances parked at a user task on a SQLite file, the engine restarted");
    let path = std::env::temp_dir().join(format!("thresh-bench-parked-{}.db", std::process::id()));
    remove(&path);
    runtime().block_on(async {
        let engine = DurableEngine::open(&path).await.expect("store");
        let mut set = tokio::task::JoinSet::new();
        for _ in 0..PARKED_INSTANCES {
            let engine = engine.clone();
            set.spawn(async move {
                engine
                    .start(&PARKED, Nothing::default())
                    .await
                    .expect("stored");
            });
        }
        while set.join_next().await.is_some() {}
        // Let the parked checkpoints reach the store before the restart.
        tokio::time::sleep(std::time::Duration::from_millis(500)).await;
        engine
            .shutdown(std::time::Duration::from_secs(60))
            .await
            .expect("shutdown");
    });
    let bytes = std::fs::metadata(&path).map(|m| m.len()).unwrap_or(0)
        + std::fs::metadata(path.with_extension("db-wal"))
            .map(|m| m.len())
            .unwrap_or(0);
    println!(
        "  on disk per parked instance            {} B",
        bytes / PARKED_INSTANCES
    );
    let resumed = runtime().block_on(async {
        let began = std::time::Instant::now();
        let engine = DurableEngine::open(&path).await.expect("store");
        engine.register(&PARKED).expect("register");
        let report = engine.resume().await.expect("resume");
        while (engine.running_instances() as u64) < PARKED_INSTANCES {
            tokio::task::yield_now().await;
        }
        let took = began.elapsed();
        engine
            .shutdown(std::time::Duration::from_secs(60))
            .await
            .expect("shutdown");
        (report.resumed.len(), took)
    });
    println!(
        "  resumed {} instances in {:.2} s (open, read, restore, re-arm; target < 5 s)",
        resumed.0,
        resumed.1.as_secs_f64()
    );
    remove(&path);
}

/// 100 000 instances parked at a user task on a SQLite file, migrated to a new
/// version after a restart: instances per second (read, moved, stored).
fn migrated() {
    const PARKED_INSTANCES: u64 = 100_000;
    println!();
    println!("migrate: {PARKED_INSTANCES} instances parked at a user task on a SQLite file, moved to version 2 after a restart");
    let path = std::env::temp_dir().join(format!("thresh-bench-migrate-{}.db", std::process::id()));
    remove(&path);
    runtime().block_on(async {
        let engine = DurableEngine::open(&path).await.expect("store");
        let mut set = tokio::task::JoinSet::new();
        for _ in 0..PARKED_INSTANCES {
            let engine = engine.clone();
            set.spawn(async move {
                engine
                    .start(&WAITING_V1, Nothing::default())
                    .await
                    .expect("stored");
            });
        }
        while set.join_next().await.is_some() {}
        // Let the parked checkpoints reach the store before the restart.
        tokio::time::sleep(std::time::Duration::from_millis(500)).await;
        engine
            .shutdown(std::time::Duration::from_secs(60))
            .await
            .expect("shutdown");
    });
    let (migrated, took) = runtime().block_on(async {
        let engine = DurableEngine::open(&path).await.expect("store");
        let began = std::time::Instant::now();
        let report = engine
            .migrate(&UPGRADE, &Query::of(&WAITING_V1))
            .await
            .expect("migrate");
        let took = began.elapsed();
        assert!(report.skipped.is_empty(), "{:?}", &report.skipped[..1]);
        engine
            .shutdown(std::time::Duration::from_secs(60))
            .await
            .expect("shutdown");
        (report.migrated.len(), took)
    });
    println!(
        "  migrated {migrated} instances in {:.2} s: {:.0} instances/s",
        took.as_secs_f64(),
        migrated as f64 / took.as_secs_f64()
    );
    remove(&path);
    for evicted in [false, true] {
        migrated_running(PARKED_INSTANCES, evicted);
    }
}

/// `count` instances parked at a user task on a running engine (in memory, or
/// evicted), migrated there: each taken out of the engine's hands, moved, stored
/// and loaded on version 2.
fn migrated_running(count: u64, evicted: bool) {
    let held = if evicted { "evicted" } else { "in memory" };
    println!("migrate: {count} instances parked at a user task on a running engine ({held}), moved to version 2");
    let path = std::env::temp_dir().join(format!(
        "thresh-bench-migrate-live-{}.db",
        std::process::id()
    ));
    remove(&path);
    let (migrated, took) = runtime().block_on(async {
        let engine = DurableEngine::open(&path).await.expect("store");
        if evicted {
            engine.evict_idle(Some(std::time::Duration::ZERO));
        }
        let mut set = tokio::task::JoinSet::new();
        for _ in 0..count {
            let engine = engine.clone();
            set.spawn(async move {
                engine
                    .start(&WAITING_V1, Nothing::default())
                    .await
                    .expect("stored");
            });
        }
        while set.join_next().await.is_some() {}
        // The starts' first checkpoints reach the store (the writer is behind by
        // seconds after 100 000 starts): a loop evicts once its last one is stored.
        tokio::time::sleep(std::time::Duration::from_secs(15)).await;
        let began = std::time::Instant::now();
        let report = engine
            .migrate(&UPGRADE, &Query::of(&WAITING_V1))
            .await
            .expect("migrate");
        let took = began.elapsed();
        assert!(report.skipped.is_empty(), "{:?}", &report.skipped[..1]);
        engine
            .shutdown(std::time::Duration::from_secs(60))
            .await
            .expect("shutdown");
        (report.migrated.len(), took)
    });
    println!(
        "  migrated {migrated} instances in {:.2} s: {:.0} instances/s",
        took.as_secs_f64(),
        migrated as f64 / took.as_secs_f64()
    );
    remove(&path);
}

/// Resident memory of this process, from /proc (0 where there is none).
fn resident_mb() -> f64 {
    status_mb("VmRSS:")
}

/// The most this process was resident since it began, or since `reset_peak`, in MB.
fn peak_mb() -> f64 {
    status_mb("VmHWM:")
}

/// Start `peak_mb` over from the resident size now (Linux's `clear_refs`; if it
/// cannot be written, the peak stays the whole run's).
fn reset_peak() {
    let _ = std::fs::write("/proc/self/clear_refs", "5");
}

fn status_mb(field: &str) -> f64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix(field))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<f64>().ok())
        .map_or(0.0, |kb| kb / 1024.0)
}

/// The restart of `evicted()`, in a process of its own (`THRESH_BENCH_RESTART` names
/// the file): the open, `resume`'s return, resident memory then and its peak.
fn restarted(path: &std::path::Path) {
    let quick_check = std::env::var("THRESH_BENCH_QUICK_CHECK").map_or(true, |v| v != "off");
    let evict = std::env::var("THRESH_BENCH_EVICT").map_or(true, |v| v != "0");
    runtime().block_on(async {
        let before = resident_mb();
        let began = std::time::Instant::now();
        let options = thresh::store::SqliteOptions { quick_check };
        let store = thresh::store::SqliteStore::open_with(path, &options).expect("store");
        let engine = DurableEngine::with_store(Arc::new(store)).expect("engine");
        if evict {
            engine.evict_idle(Some(std::time::Duration::ZERO));
        }
        engine.register(&PAID).expect("register");
        let opened = began.elapsed();
        reset_peak();
        let report = engine.resume().await.expect("resume");
        let took = began.elapsed() - opened;
        let (rss, peak) = (resident_mb(), peak_mb());
        println!(
            "  restarted (quick_check {}): open {:.2} s, then resume returned after {:.2} s with {} instances resumed, {} left asleep in the store (resident {:.0} MB before the open, {:.0} MB then, at most {:.0} MB during the resume)",
            if quick_check { "on" } else { "off" },
            opened.as_secs_f64(),
            took.as_secs_f64(),
            report.resumed.len(),
            report.asleep,
            before,
            rss,
            peak
        );
        drop(report);
        engine
            .shutdown(std::time::Duration::from_secs(120))
            .await
            .expect("shutdown");
    });
}

/// `THRESH_BENCH_PARKED` instances (1 000 000 by default) parked on a SQLite file,
/// one in 1 000 first at a keyed receive task, the rest at a user task: resident
/// memory once they all wait (evicted, or in memory with `THRESH_BENCH_EVICT=0`),
/// the time a message takes to load an evicted instance and run it to its next task
/// (p50/p99 over the keyed ones, published one at a time: the next once the last
/// woken is evicted again; the clock stops in the task's handler, which runs once
/// the checkpoint taking the message is stored), and a restart's resume, with the
/// store's `quick_check` at open and without.
fn evicted() {
    let parked: u64 = std::env::var("THRESH_BENCH_PARKED")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1_000_000);
    let evict = std::env::var("THRESH_BENCH_EVICT").map_or(true, |v| v != "0");
    println!();
    println!(
        "evict: {parked} instances parked on a SQLite file (one in 1 000 at a keyed receive task, the rest at a user task), {}",
        if evict { "evicted at once" } else { "kept in memory" }
    );
    let path = std::env::temp_dir().join(format!("thresh-bench-evict-{}.db", std::process::id()));
    remove(&path);
    println!(
        "  resident before the engine            {:.0} MB",
        resident_mb()
    );
    runtime().block_on(async {
        let engine = DurableEngine::open(&path).await.expect("store");
        if evict {
            engine.evict_idle(Some(std::time::Duration::ZERO));
        }
        engine.register(&PAID).expect("register");
        let began = std::time::Instant::now();
        let mut next = 0;
        while next < parked {
            // In batches: a task per start in flight, not a million at once.
            let mut set = tokio::task::JoinSet::new();
            for n in next..(next + 10_000).min(parked) {
                let engine = engine.clone();
                set.spawn(async move {
                    engine.start(&PAID, Nothing { n }).await.expect("stored");
                });
            }
            while set.join_next().await.is_some() {}
            next = (next + 10_000).min(parked);
        }
        let started = began.elapsed();
        if evict {
            while (engine.evicted_instances() as u64) < parked {
                tokio::time::sleep(std::time::Duration::from_millis(50)).await;
            }
        } else {
            tokio::time::sleep(std::time::Duration::from_secs(2)).await;
        }
        println!(
            "  started in {:.1} s; resident once all wait {:.0} MB ({} running, {} evicted)",
            started.as_secs_f64(),
            resident_mb(),
            engine.running_instances(),
            engine.evicted_instances()
        );
        // Wake by message, one at a time: publish (stored first), load, apply, run
        // `noted` — the clock stops in its handler.
        let keyed: Vec<u64> = (0..parked).filter(|n| n % 1000 == 0).collect();
        let (tell, mut woken) = tokio::sync::mpsc::unbounded_channel();
        *WOKEN.lock().unwrap() = Some(tell);
        let mut took = Vec::with_capacity(keyed.len());
        let mut after_store = Vec::with_capacity(keyed.len());
        for n in keyed {
            let sent = std::time::Instant::now();
            engine
                .publish_message("bench-pay", &n.to_string(), ())
                .await
                .expect("published");
            let stored = std::time::Instant::now();
            let woke = loop {
                match woken.recv().await.expect("woken") {
                    (m, at) if m == n => break at,
                    _ => {}
                }
            };
            took.push(woke.duration_since(sent).as_secs_f64() * 1e3);
            after_store.push(woke.saturating_duration_since(stored).as_secs_f64() * 1e3);
            if evict {
                // One wake at a time: the woken instance goes on to its user task
                // and is evicted again before the next message (its checkpoint's
                // commit not in the next wake's way).
                while (engine.evicted_instances() as u64) < parked {
                    tokio::time::sleep(std::time::Duration::from_millis(1)).await;
                }
            }
        }
        let count = after_store.len();
        let whole = support::quantiles(&took, [0.5, 0.99]);
        let loaded = support::quantiles(&after_store, [0.5, 0.99]);
        println!(
            "  wake by message to the next wait ({} messages one by one): p50 {:.2} ms, p99 {:.2} ms from the publish, its store write included; p50 {:.2} ms, p99 {:.2} ms from its return",
            count,
            whole[0],
            whole[1],
            loaded[0],
            loaded[1]
        );
        engine
            .shutdown(std::time::Duration::from_secs(120))
            .await
            .expect("shutdown");
    });
    // Each restart in a process of its own, as a real one is (this process's
    // allocator still holds what the starts used): with the store's `quick_check`
    // at open, which reads the whole file (its time is the disk's), then without.
    for quick_check in ["on", "off"] {
        let out = std::process::Command::new(std::env::current_exe().expect("the bench"))
            .env("THRESH_BENCH_RESTART", &path)
            .env("THRESH_BENCH_QUICK_CHECK", quick_check)
            .env("THRESH_BENCH_EVICT", if evict { "1" } else { "0" })
            .output()
            .expect("the restart's process");
        assert!(
            out.status.success(),
            "the restart failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        print!("{}", String::from_utf8_lossy(&out.stdout));
    }
    remove(&path);
}
