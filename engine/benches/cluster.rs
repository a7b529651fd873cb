//! Engine nodes on PostgreSQL beside SQLite, in one run: the durable parallel-10
//! shape (start -> AND split -> 10 no-op tasks -> AND join -> end) on a SQLite file,
//! on PostgreSQL with one node and with three nodes (three engines in this process,
//! each with its own connections, starts spread round-robin); then the time two
//! survivors take to take over and resume 10 000 instances of a stopped node; then
//! one claim poll of a node whose 10 000 instances wait for messages while a few
//! messages for other keys are stored (the poll as it is, and the statement the poll
//! sent before it read only the names: every waited (name, key)); then message
//! starts published round-robin on three nodes that all deploy the process. The
//! database is `THRESH_POSTGRES_URL` (default the local `test` database), in a
//! schema of its own per run, dropped at the end. No harness; it prints figures.
//!
//! cargo bench -p thresh --features "sqlite postgres" --bench cluster [-- PART ...]

#[path = "support/mod.rs"]
#[allow(dead_code)] // this bench uses some of the shared helpers
mod support;

use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};
use support::{report_rate, timed, Run};
use thresh::{process, DurableEngine, NodeConfig, ProcessData, TaskError};

const RUNS: usize = 5;
const INSTANCES: u64 = 5_000;
const TAKEOVER: u64 = 10_000;
const WAITING: u64 = 10_000;

#[derive(Clone, Debug, Default, ProcessData, Serialize, Deserialize)]
pub struct Nothing {
    pub n: u64,
}

async fn noop(_: &mut Nothing) -> Result<(), TaskError> {
    Ok(())
}

process! {
    pub PARKED: Nothing {
        start begin;
        user  approve;
        end   done;
        begin -> approve -> done;
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

#[derive(Clone, Debug, Default, ProcessData, Serialize, Deserialize)]
pub struct Keyed {
    pub key: String,
}

process! {
    pub BOOKED: Keyed {
        start booked: message("booked", apply = |k, key: &String| k.key = key.clone());
        end   done;
        booked -> done;
    }
}

process! {
    pub WAITS: Keyed {
        start   begin;
        receive pay: message("pay", key = |k| k.key.clone());
        end     done;
        begin -> pay -> done;
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

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime")
}

/// Start `INSTANCES` at once, spread round-robin over `nodes`, each start awaited
/// by its own task; await every outcome.
async fn round(nodes: &[DurableEngine]) {
    let mut set = tokio::task::JoinSet::new();
    for n in 0..INSTANCES {
        let engine = nodes[n as usize % nodes.len()].clone();
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

async fn measured(nodes: &[DurableEngine]) -> Vec<Run> {
    round(nodes).await;
    let mut runs = Vec::new();
    for _ in 0..RUNS {
        runs.push(timed(INSTANCES, round(nodes)).await);
    }
    runs
}

fn node_config(schema: &str, node: &str, lease: Duration) -> NodeConfig {
    NodeConfig {
        schema: schema.to_string(),
        node_id: Some(node.to_string()),
        lease,
        ..NodeConfig::default()
    }
}

fn main() {
    // `-- NAME ...` runs only the parts named: parallel10, takeover, claim-poll,
    // message-starts.
    let filters: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with('-'))
        .collect();
    let runs = |part: &str| filters.is_empty() || filters.iter().any(|f| f == part);
    println!("thresh cluster benchmarks: median of {RUNS} runs after a warm-up [min .. max]");
    if runs("parallel10") {
        parallel10();
    }
    if runs("takeover") {
        takeover();
    }
    if runs("claim-poll") {
        claim_poll();
    }
    if runs("message-starts") {
        message_starts();
    }
}

/// The parallel-10 shape on SQLite, and on PostgreSQL with one and three nodes.
fn parallel10() {
    println!();
    println!("parallel10, {INSTANCES} instances started at once then all awaited, 2 workers");
    let path = std::env::temp_dir().join(format!("thresh-bench-cluster-{}.db", std::process::id()));
    let _ = std::fs::remove_file(&path);
    let runs = runtime().block_on(async {
        let engine = DurableEngine::open(&path).await.expect("store");
        let runs = measured(std::slice::from_ref(&engine)).await;
        engine
            .shutdown(Duration::from_secs(30))
            .await
            .expect("shutdown");
        runs
    });
    report_rate("durable, SQLite: instances/s", &runs, None);
    for suffix in ["", "-wal", "-shm"] {
        let _ = std::fs::remove_file(format!("{}{suffix}", path.display()));
    }

    for nodes in [1usize, 3] {
        let schema = format!("thresh_bench_{}_{nodes}", std::process::id());
        drop_schema(&schema);
        let runs = runtime().block_on(async {
            let mut engines = Vec::new();
            for n in 0..nodes {
                let config = node_config(&schema, &format!("bench-{n}"), Duration::from_secs(10));
                engines.push(
                    DurableEngine::connect_with(&url(), config)
                        .await
                        .expect("connect"),
                );
            }
            let runs = measured(&engines).await;
            for engine in engines {
                engine
                    .shutdown(Duration::from_secs(30))
                    .await
                    .expect("shutdown");
            }
            runs
        });
        report_rate(
            &format!("durable, PostgreSQL, {nodes} node(s): inst/s"),
            &runs,
            None,
        );
        drop_schema(&schema);
    }
}

/// A node parks `TAKEOVER` instances at a user task and stops without a word (its
/// leases stay, unrenewed); two survivors take them over once the leases expire.
fn takeover() {
    let lease = Duration::from_secs(2);
    println!();
    println!(
        "takeover: {TAKEOVER} instances parked at a user task on a node that stops; two survivors, lease {} ms",
        lease.as_millis()
    );
    let schema = format!("thresh_bench_{}_takeover", std::process::id());
    drop_schema(&schema);
    runtime().block_on(async {
        let dead = DurableEngine::connect_with(&url(), node_config(&schema, "dead", lease))
            .await
            .expect("connect");
        let mut set = tokio::task::JoinSet::new();
        for _ in 0..TAKEOVER {
            let engine = dead.clone();
            set.spawn(async move {
                engine.start(&PARKED, Nothing::default()).await.expect("stored");
            });
        }
        while set.join_next().await.is_some() {}
        // Let the parked checkpoints reach the store before the node stops.
        tokio::time::sleep(Duration::from_millis(500)).await;
        let survivors = [
            DurableEngine::connect_with(&url(), node_config(&schema, "s1", lease))
                .await
                .expect("connect"),
            DurableEngine::connect_with(&url(), node_config(&schema, "s2", lease))
                .await
                .expect("connect"),
        ];
        for s in &survivors {
            s.register(&PARKED).expect("register");
        }
        dead.shutdown(Duration::from_secs(60)).await.expect("shutdown");
        let stopped = Instant::now();
        let running = || {
            survivors
                .iter()
                .map(|s| s.running_instances() as u64)
                .collect::<Vec<_>>()
        };
        let mut first = None;
        while running().iter().sum::<u64>() < TAKEOVER {
            if first.is_none() && running().iter().sum::<u64>() > 0 {
                first = Some(stopped.elapsed());
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        let all = stopped.elapsed();
        let first = first.unwrap_or(all);
        println!(
            "  first taken after {:.2} s (the lease expiring), all {TAKEOVER} resumed after {:.2} s: {:.2} s of takeover, split {:?}",
            first.as_secs_f64(),
            all.as_secs_f64(),
            (all - first).as_secs_f64(),
            running()
        );
        for s in survivors {
            s.shutdown(Duration::from_secs(60)).await.expect("shutdown");
        }
    });
    drop_schema(&schema);
}

/// One claim poll of a node whose `WAITING` instances each wait for a message with a
/// key of their own, while five messages for keys nobody waits for are stored: the
/// poll as it is (`DurableEngine::claim_now`: the unclaimed messages of the names
/// waited for, matched by key in the hub), and — on the same store — the statement
/// the poll sent before (every waited (name, key) pair, matched in the database).
fn claim_poll() {
    const POLLS: usize = 21;
    println!();
    println!("claim poll: {WAITING} instances waiting for a message each, 5 messages stored for other keys; median of {POLLS}");
    let schema = format!("thresh_bench_{}_claims", std::process::id());
    drop_schema(&schema);
    runtime().block_on(async {
        let hour = Duration::from_secs(3600);
        let config = |node| NodeConfig {
            poll: hour,
            ..node_config(&schema, node, Duration::from_secs(10))
        };
        let waiting = DurableEngine::connect_with(&url(), config("waiting"))
            .await
            .expect("connect");
        let publisher = DurableEngine::connect_with(&url(), config("publisher"))
            .await
            .expect("connect");
        waiting.message_type::<u64>("pay");
        let mut set = tokio::task::JoinSet::new();
        for n in 0..WAITING {
            let engine = waiting.clone();
            set.spawn(async move {
                let key = format!("w-{n}");
                engine.start(&WAITS, Keyed { key }).await.expect("stored");
            });
        }
        while set.join_next().await.is_some() {}
        for n in 0..5 {
            publisher
                .publish_message("pay", format!("elsewhere-{n}"), n as u64)
                .await
                .expect("stored");
        }
        // The waits armed and the wake-ups they caused handled.
        tokio::time::sleep(Duration::from_secs(2)).await;
        let mut now = Vec::new();
        for _ in 0..POLLS {
            let started = Instant::now();
            let taken = waiting.claim_now().await.expect("poll");
            now.push(started.elapsed());
            assert_eq!(taken, 0, "nobody here waits for those keys");
        }
        let keys: Vec<String> = (0..WAITING).map(|n| format!("w-{n}")).collect();
        let schema = schema.clone();
        let before = tokio::task::spawn_blocking(move || {
            let mut client = postgres::Client::connect(&url(), postgres::NoTls).expect("connect");
            client
                .batch_execute(&format!("SET search_path TO {schema}"))
                .expect("schema");
            let names: Vec<&str> = Vec::new();
            let wait_names: Vec<&str> = keys.iter().map(|_| "pay").collect();
            let statement = client
                .prepare(
                    "UPDATE messages SET claimed_by = $1,
                                         claim_until = now() + $2 * interval '1 millisecond'
                     WHERE id IN (
                       SELECT id FROM messages
                       WHERE (claim_until IS NULL OR claim_until < now()) AND expires_ms > $3
                         AND (name = ANY($4::text[])
                              OR (name, key) IN (SELECT * FROM unnest($5::text[], $6::text[])))
                       ORDER BY id LIMIT $7 FOR UPDATE SKIP LOCKED)
                     RETURNING id, name, key, payload::text, expires_ms",
                )
                .expect("prepare");
            let mut times = Vec::new();
            for _ in 0..POLLS {
                let now_ms = std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .expect("clock")
                    .as_millis() as i64;
                let started = Instant::now();
                let rows = client
                    .query(
                        &statement,
                        &[
                            &"waiting",
                            &10_000.0_f64,
                            &now_ms,
                            &names,
                            &wait_names,
                            &keys,
                            &500_i64,
                        ],
                    )
                    .expect("claim");
                times.push(started.elapsed());
                assert!(rows.is_empty());
            }
            times
        })
        .await
        .expect("thread");
        let median = |mut v: Vec<Duration>| {
            v.sort_unstable();
            v[v.len() / 2]
        };
        println!(
            "  the poll now: {:.2} ms; the statement it sent before: {:.2} ms",
            median(now).as_secs_f64() * 1e3,
            median(before).as_secs_f64() * 1e3
        );
        for engine in [waiting, publisher] {
            engine
                .shutdown(Duration::from_secs(60))
                .await
                .expect("shutdown");
        }
    });
    drop_schema(&schema);
}

/// `STARTS` messages, each with a key of its own, published at once round-robin on
/// three nodes that all deploy a message start for them (each publish's start is
/// decided by the store: the key rule), every instance awaited.
fn message_starts() {
    const STARTS: u64 = 2_000;
    println!();
    println!("message starts: {STARTS} publishes at once, round-robin on 3 nodes deploying the start, each instance awaited");
    let schema = format!("thresh_bench_{}_starts", std::process::id());
    drop_schema(&schema);
    let runs = runtime().block_on(async {
        let mut nodes = Vec::new();
        let mut started = tokio::task::JoinSet::new();
        for n in 0..3 {
            let config = node_config(&schema, &format!("starts-{n}"), Duration::from_secs(10));
            let node = DurableEngine::connect_with(&url(), config)
                .await
                .expect("connect");
            let mut deployment = node.deploy(&BOOKED, Keyed::default()).expect("deploy");
            started.spawn(async move {
                let mut ended = 0_u64;
                while let Some(handle) = deployment.next().await {
                    let _ = handle.outcome().await;
                    ended += 1;
                }
                ended
            });
            nodes.push(node);
        }
        let mut runs = Vec::new();
        for round in 0..=RUNS {
            let round_started = Instant::now();
            let mut set = tokio::task::JoinSet::new();
            for n in 0..STARTS {
                let node = nodes[n as usize % nodes.len()].clone();
                set.spawn(async move {
                    let key = format!("{round}-{n}");
                    node.publish_message("booked", &key, key.clone())
                        .await
                        .expect("stored");
                });
            }
            while set.join_next().await.is_some() {}
            // Every instance ended: none left running in the store's view.
            while nodes.iter().map(|n| n.running_instances()).sum::<usize>() > 0 {
                tokio::time::sleep(Duration::from_millis(2)).await;
            }
            if round > 0 {
                runs.push(STARTS as f64 / round_started.elapsed().as_secs_f64());
            }
        }
        for node in nodes {
            node.shutdown(Duration::from_secs(60))
                .await
                .expect("shutdown");
        }
        let mut ended = 0;
        while let Some(n) = started.join_next().await {
            ended += n.expect("deployment");
        }
        assert_eq!(
            ended,
            STARTS * (RUNS as u64 + 1),
            "one instance per message"
        );
        runs
    });
    let mut sorted = runs.clone();
    sorted.sort_by(f64::total_cmp);
    println!(
        "  starts/s: {:.1} k  [{:.1} k .. {:.1} k]",
        sorted[sorted.len() / 2] / 1e3,
        sorted[0] / 1e3,
        sorted[sorted.len() - 1] / 1e3
    );
    drop_schema(&schema);
}
