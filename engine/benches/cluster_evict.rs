//! Evicted instances on PostgreSQL nodes: the time a message takes to wake one and
//! run it to its next wait, as the `durable` bench's `-- evict` measures it on
//! SQLite. `THRESH_BENCH_PARKED` instances (10 000 by default), each at a receive
//! keyed by its number, are started on node `owner` and evicted at once (dormant:
//! their hub subscriptions kept); messages are published one by one on the owner
//! and on another node (`NOTIFY`, then the owner's claim). Then the owner stops, a
//! survivor takes them over kept asleep (not loaded), and messages are published
//! on the survivor and on the other node (the claimer asks the store's wake index).
//! The nodes' lease is `THRESH_BENCH_LEASE_MS` (2 000 by default: the takeover
//! waits for it to run out; each node renews all its leases every third of it).
//! The database is `THRESH_POSTGRES_URL` (default the local `test` database), in a
//! schema of its own per run, dropped at the end. No harness; it prints figures.
//!
//! cargo bench -p thresh --features "sqlite postgres" --bench cluster_evict

#[path = "support/mod.rs"]
#[allow(dead_code)] // this bench uses some of the shared helpers
mod support;

use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};
use thresh::{process, DurableEngine, NodeConfig, ProcessData};

/// Messages per measured path, published one by one.
const WAKES: u64 = 200;

#[derive(Clone, Debug, Default, ProcessData, Serialize, Deserialize)]
pub struct Nothing {
    pub n: u64,
}

/// When each instance's `noted` ran, by its number: the clock stops there.
static WOKEN: std::sync::Mutex<Vec<(u64, Instant)>> = std::sync::Mutex::new(Vec::new());

process! {
    /// At a payment keyed by its number, then a user task.
    pub PAID: Nothing {
        start begin;
        receive pay: message("bench-pay", key = |n| n.n.to_string());
        task  noted = |n| async move {
            WOKEN.lock().unwrap().push((n.n, Instant::now()));
            Ok(())
        };
        user  approve;
        end   done;
        begin -> pay -> noted -> approve -> done;
    }
}

fn url() -> String {
    std::env::var("THRESH_POSTGRES_URL")
        .unwrap_or_else(|_| "postgres://root@127.0.0.1:5432/test".into())
}

fn drop_schema(schema: &str) {
    let sql = format!("DROP SCHEMA IF EXISTS {schema} CASCADE");
    let mut client = postgres::Client::connect(&url(), postgres::NoTls).expect("connect");
    client.batch_execute(&sql).expect("drop schema");
}

async fn node(schema: &str, name: &str, evict: bool) -> DurableEngine {
    let config = NodeConfig {
        schema: schema.to_string(),
        node_id: Some(name.to_string()),
        lease: lease(),
        ..NodeConfig::default()
    };
    let engine = DurableEngine::connect_with(&url(), config)
        .await
        .expect("connect");
    // The other node registers nothing: it takes nothing over, and publishes.
    if evict {
        engine.evict_idle(Some(Duration::ZERO));
        engine.register(&PAID).expect("register");
    }
    engine
}

fn lease() -> Duration {
    let ms = std::env::var("THRESH_BENCH_LEASE_MS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(2_000);
    Duration::from_millis(ms)
}

async fn until_evicted(engine: &DurableEngine, count: usize) -> Duration {
    let began = Instant::now();
    while engine.evicted_instances() < count {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    began.elapsed()
}

/// Publish on `on` the payments of instances `numbers`, one by one; print the
/// p50/p99 from the publish's call to the instance's next step.
async fn wakes(label: &str, on: &DurableEngine, numbers: std::ops::Range<u64>) {
    let (mut took, mut calls) = (Vec::new(), Vec::new());
    for n in numbers {
        let sent = Instant::now();
        on.publish_message("bench-pay", n.to_string(), ())
            .await
            .expect("published");
        calls.push(sent.elapsed().as_secs_f64() * 1e3);
        let woke = loop {
            let found = WOKEN
                .lock()
                .unwrap()
                .iter()
                .find(|(m, _)| *m == n)
                .map(|(_, at)| *at);
            if let Some(at) = found {
                break at;
            }
            tokio::time::sleep(Duration::from_micros(100)).await;
        };
        took.push(woke.duration_since(sent).as_secs_f64() * 1e3);
    }
    let [p50, p99, max] = support::quantiles(&took, [0.5, 0.99, 1.0]);
    let [call50, call99] = support::quantiles(&calls, [0.5, 0.99]);
    println!(
        "  {label:<52} p50 {p50:.2} ms, p99 {p99:.2} ms, max {max:.2} ms (the publish call: p50 {call50:.2} ms, p99 {call99:.2} ms)"
    );
}

fn main() {
    let parked: u64 = std::env::var("THRESH_BENCH_PARKED")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(10_000);
    let schema = format!("thresh_bench_evict_{}", std::process::id());
    drop_schema(&schema);
    println!(
        "evicted instances on PostgreSQL nodes: {parked} at a keyed receive, evicted at once; \
         wake by message to the next wait ({WAKES} messages one by one per line)"
    );
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    runtime.block_on(async {
        let owner = node(&schema, "owner", true).await;
        let other = node(&schema, "other", false).await;
        let began = Instant::now();
        let mut next = 0;
        while next < parked {
            let mut set = tokio::task::JoinSet::new();
            for n in next..(next + 2_000).min(parked) {
                let owner = owner.clone();
                set.spawn(async move {
                    owner.start(&PAID, Nothing { n }).await.expect("stored");
                });
            }
            while set.join_next().await.is_some() {}
            next = (next + 2_000).min(parked);
        }
        let evicted = until_evicted(&owner, parked as usize).await;
        println!(
            "  started in {:.1} s, all evicted {:.1} s later",
            began.elapsed().as_secs_f64() - evicted.as_secs_f64(),
            evicted.as_secs_f64()
        );
        wakes("dormant, published on its owner", &owner, 0..WAKES).await;
        wakes(
            "dormant, published on another node (NOTIFY, claim)",
            &other,
            WAKES..2 * WAKES,
        )
        .await;
        // The owner stops: its instances' leases run out, a survivor takes them.
        owner
            .shutdown(Duration::from_secs(60))
            .await
            .expect("shutdown");
        drop(owner);
        let survivor = node(&schema, "survivor", true).await;
        let took = until_evicted(&survivor, parked as usize).await;
        println!(
            "  taken over kept asleep: {} instances, {} loaded, {:.1} s from the survivor's start (a lease of {:.1} s to run out first)",
            survivor.evicted_instances(),
            survivor.evicted_loads(),
            took.as_secs_f64(),
            lease().as_secs_f64()
        );
        wakes(
            "asleep after a takeover, published on its owner",
            &survivor,
            2 * WAKES..3 * WAKES,
        )
        .await;
        wakes(
            "asleep after a takeover, published on another node",
            &other,
            3 * WAKES..4 * WAKES,
        )
        .await;
        for engine in [survivor, other] {
            engine
                .shutdown(Duration::from_secs(60))
                .await
                .expect("shutdown");
        }
    });
    drop_schema(&schema);
}
