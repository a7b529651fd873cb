//! What the eviction idle time (`DurableEngine::evict_idle`) costs on work shaped
//! like a service's: each instance runs a task, waits for a reply message another
//! service sends `d` later, runs a task on it and ends, on a SQLite file (an fsync
//! per group commit). Every instance is started, its reply published after `d`
//! and its handle awaited from a task of its own, all at once. For each idle time
//! and reply delay it prints the CPU time per instance (the process's, from
//! `/proc/self/task/*/schedstat`), the loads of evicted instances per instance, and
//! the most instances in memory at once. No harness.
//!
//! ```text
//! cargo bench -p thresh --features sqlite --bench idle
//! THRESH_BENCH_INSTANCES=2000 cargo bench -p thresh --features sqlite --bench idle
//! ```

#[path = "support/mod.rs"]
#[allow(dead_code)] // this bench uses some of the shared helpers
mod support;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};
use support::cpu_time;
use thresh::{process, DurableEngine, ProcessData, TaskError};

/// An order waiting for a service's reply.
#[derive(Clone, Debug, Default, ProcessData, Serialize, Deserialize)]
pub struct Order {
    pub n: u64,
    pub customer: String,
    pub asked: u32,
    pub paid: u64,
}

async fn ask(order: &mut Order) -> Result<(), TaskError> {
    order.asked += 1;
    Ok(())
}

process! {
    /// Ask a service, wait for its reply, record it.
    pub REPLIED: Order {
        start begin;
        task  asked = ask;
        receive reply: message("idle-reply", key = |o| o.n.to_string(), apply = |o, paid: &u64| o.paid = *paid);
        task  recorded = ask;
        end   done;
        begin -> asked -> reply -> recorded -> done;
    }
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime")
}

/// One round: `count` instances, each replied to `delay` after its start, on an
/// engine evicting after `idle`. CPU seconds, loads, most instances in memory.
fn round(count: u64, idle: Option<Duration>, delay: Duration) -> (f64, u64, usize, f64) {
    let path = std::env::temp_dir().join(format!("thresh-bench-idle-{}.db", std::process::id()));
    for suffix in ["", "-wal", "-shm"] {
        let _ = std::fs::remove_file(format!("{}{suffix}", path.display()));
    }
    let figures = runtime().block_on(async {
        let engine = Arc::new(DurableEngine::open(&path).await.expect("store"));
        engine.evict_idle(idle);
        engine.register(&REPLIED).expect("register");
        let most = Arc::new(AtomicUsize::new(0));
        let watching = {
            let (engine, most) = (Arc::clone(&engine), Arc::clone(&most));
            tokio::spawn(async move {
                loop {
                    most.fetch_max(engine.running_instances(), Ordering::Relaxed);
                    tokio::time::sleep(Duration::from_millis(5)).await;
                }
            })
        };
        let began = Instant::now();
        let cpu = cpu_time();
        let mut set = tokio::task::JoinSet::new();
        for n in 0..count {
            let engine = Arc::clone(&engine);
            set.spawn(async move {
                let order = Order {
                    n,
                    customer: String::from("ACME Industrial Supplies"),
                    ..Order::default()
                };
                let handle = engine.start(&REPLIED, order).await.expect("stored");
                tokio::time::sleep(delay).await;
                engine
                    .publish_message("idle-reply", &n.to_string(), 100_u64)
                    .await
                    .expect("published");
                let done = handle.outcome().await.completed().expect("completed");
                assert_eq!((done.asked, done.paid), (2, 100));
            });
        }
        while set.join_next().await.is_some() {}
        let cpu = cpu.zip(cpu_time()).map_or(f64::NAN, |(a, b)| b - a);
        let wall = began.elapsed().as_secs_f64();
        watching.abort();
        let loads = engine.evicted_loads();
        engine
            .shutdown(Duration::from_secs(60))
            .await
            .expect("shutdown");
        (cpu, loads, most.load(Ordering::Relaxed), wall)
    });
    for suffix in ["", "-wal", "-shm"] {
        let _ = std::fs::remove_file(format!("{}{suffix}", path.display()));
    }
    figures
}

fn main() {
    let count: u64 = std::env::var("THRESH_BENCH_INSTANCES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(4_000);
    println!("idle: {count} instances at once on a SQLite file, each replied to a delay after its start; median of 3 rounds");
    println!(
        "  {:>10}  {:>8}  {:>16}  {:>15}  {:>18}  {:>7}",
        "idle", "reply", "CPU µs/instance", "loads/instance", "most in memory", "wall s"
    );
    let idles = [
        Some(Duration::ZERO),
        Some(Duration::from_secs(1)),
        Some(thresh::DEFAULT_EVICT_AFTER),
        None,
    ];
    for delay in [Duration::from_millis(20), Duration::from_secs(2)] {
        for idle in idles {
            let mut rounds: Vec<_> = (0..3).map(|_| round(count, idle, delay)).collect();
            rounds.sort_by(|a, b| a.0.total_cmp(&b.0));
            let (cpu, loads, most, wall) = rounds[1];
            println!(
                "  {:>10}  {:>8}  {:>16.0}  {:>15.2}  {:>18}  {:>7.2}",
                idle.map_or("never".to_string(), |i| format!("{i:?}")),
                format!("{delay:?}"),
                cpu / count as f64 * 1e6,
                loads as f64 / count as f64,
                most,
                wall
            );
        }
    }
}
