//! Instance queries over 1 000 000 stored instances (issue 33, item 3), on SQLite
//! and, with the `postgres` feature, on PostgreSQL (`THRESH_POSTGRES_URL`, default
//! the local `test` database, in a schema of its own dropped at the end). Not run
//! in CI; no harness: `main` prints figures, nothing is asserted.
//!
//! ```text
//! cargo bench -p thresh --features sqlite --bench queries
//! cargo bench -p thresh --features sqlite,postgres --bench queries
//! THRESH_BENCH_INSTANCES=100000 cargo bench ... --bench queries   # fewer rows
//! THRESH_BENCH_KEEP=1 cargo bench ... --bench queries  # keep the PostgreSQL schema
//! cargo bench -p thresh --features sqlite,console --bench queries  # and the console
//! ```
//!
//! With the `console` feature, the console's pages over the same SQLite store too:
//! each a GET over loopback to a router served on 127.0.0.1, timed from request to
//! the whole answer read (server time plus a loopback round trip).
//!
//! The rows are what the engine writes: a real durable engine (on a memory store)
//! runs one instance to its user task, one to its end and one to an incident; their
//! records are copied (new id, business key, start time) and stored in bulk
//! through the store's own `apply` (batches of 5 000 writes), 70% waiting at
//! `approve`, 0.1% at an incident at `pay`, the rest completed. Then each query
//! runs through `DurableEngine::instances`/`count` (the SQL, and the rows' data
//! read back as the process's type) 21 times: the median and the range, in ms.
//! On PostgreSQL the tables are vacuumed and analysed after the load, as
//! autovacuum would soon do.

use std::sync::Arc;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};
use thresh::store::{InstanceRecord, MemoryStore, Store, Write};
use thresh::{process, DurableEngine, ProcessData, Query, SortBy, Status, TaskError};

#[derive(Clone, Debug, Default, PartialEq, ProcessData, Serialize, Deserialize)]
pub struct Expense {
    pub id: u64,
    pub employee: String,
    pub amount: u32,
    pub approved: bool,
    pub card: String,
}

async fn charge(e: &mut Expense) -> Result<(), TaskError> {
    match e.card.is_empty() {
        true => Err(TaskError::new("no card")),
        false => Ok(()),
    }
}

process! {
    pub EXPENSE: Expense {
        start s;
        task  check = |e| async move { e.amount += 1; Ok(()) };
        user  approve;
        task  pay = charge: retry(1);
        end   done;
        s -> check -> approve -> pay -> done;
    }
}

const RUNS: usize = 21;
const BATCH: usize = 5_000;

/// The records the engine writes for a waiting, an ended and a stuck instance.
struct Templates {
    waiting: InstanceRecord,
    ended: (InstanceRecord, Write),
    stuck: InstanceRecord,
}

async fn templates() -> Templates {
    let store = Arc::new(MemoryStore::new());
    let engine = DurableEngine::with_store(store.clone()).expect("engine");
    let data = |card: &str| Expense {
        id: 7,
        employee: "Ada Lovelace".into(),
        amount: 1999,
        card: card.into(),
        ..Expense::default()
    };
    let waiting = engine
        .start_keyed(&EXPENSE, "w", data(""))
        .await
        .expect("start");
    let done = engine
        .start_keyed(&EXPENSE, "d", data("visa"))
        .await
        .expect("start");
    let stuck = engine
        .start_keyed(&EXPENSE, "s", data(""))
        .await
        .expect("start");
    let settle = || tokio::time::sleep(Duration::from_millis(200));
    settle().await;
    done.complete("approve", |e: &mut Expense| e.approved = true)
        .await
        .expect("complete");
    stuck
        .complete("approve", |e: &mut Expense| e.approved = true)
        .await
        .expect("complete");
    done.outcome().await;
    settle().await;
    let record = |id: thresh::InstanceId| store.instance(id.0).expect("read").expect("stored");
    let ended = record(done.id());
    let end = Write::End {
        id: 0,
        status: ended.status,
        outcome: ended.outcome.clone(),
        at_ms: 0,
    };
    let templates = Templates {
        waiting: record(waiting.id()),
        ended: (ended, end),
        stuck: record(stuck.id()),
    };
    assert_eq!(templates.waiting.waits, ["approve"]);
    assert_eq!(templates.stuck.incidents, 1, "{:?}", templates.stuck);
    engine
        .shutdown(Duration::from_secs(5))
        .await
        .expect("shutdown");
    templates
}

/// Store `n` instances in `store`, in batches through `apply`.
fn fill(store: &dyn Store, t: &Templates, n: u64) -> Duration {
    let began = Instant::now();
    let t0 = 1_700_000_000_000i64;
    let mut batch = Vec::with_capacity(BATCH + 1);
    for i in 1..=n {
        let (mut r, end) = match i % 1000 {
            0 => (t.stuck.clone(), None),
            k if k < 700 => (t.waiting.clone(), None),
            _ => (t.ended.0.clone(), Some(t.ended.1.clone())),
        };
        r.id = i;
        r.seq = 1;
        r.status = Status::Running;
        r.outcome = None;
        r.business_key = Some(format!("expense-{i}"));
        // About one start a second for twelve days.
        r.started_ms = t0 + i as i64 * 1_000;
        r.updated_ms = r.started_ms + 500;
        batch.push(Write::Put(r));
        if let Some(Write::End {
            status, outcome, ..
        }) = end
        {
            batch.push(Write::End {
                id: i,
                status,
                outcome,
                at_ms: t0 + i as i64 * 1_000 + 60_000,
            });
        }
        if batch.len() >= BATCH {
            store.apply(&batch).expect("bulk insert");
            batch.clear();
        }
    }
    store.apply(&batch).expect("bulk insert");
    began.elapsed()
}

async fn time<F, Fut>(name: &str, mut run: F)
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = usize>,
{
    let mut ms = Vec::with_capacity(RUNS);
    let mut rows = 0;
    for _ in 0..RUNS {
        let began = Instant::now();
        rows = run().await;
        ms.push(began.elapsed().as_secs_f64() * 1000.0);
    }
    ms.sort_by(f64::total_cmp);
    println!(
        "  {name:<46} {:>8.2} ms  [{:.2} .. {:.2}]  ({rows} rows)",
        ms[RUNS / 2],
        ms[0],
        ms[RUNS - 1]
    );
}

async fn queries(engine: &DurableEngine, n: u64) {
    let key = format!("expense-{}", n / 2 + 1);
    time("by business key", || async {
        let page = engine
            .instances(&Query::of(&EXPENSE).key(&key))
            .await
            .expect("query");
        page.items.len()
    })
    .await;
    let waiting = Query::of(&EXPENSE)
        .waiting_at("approve")
        .sort_by(SortBy::Started)
        .limit(50);
    time("waiting at approve, first 50 by start", || async {
        engine.instances(&waiting).await.expect("query").items.len()
    })
    .await;
    let newest = waiting.clone().descending();
    time("waiting at approve, newest 50", || async {
        engine.instances(&newest).await.expect("query").items.len()
    })
    .await;
    let first = engine.instances(&waiting).await.expect("query");
    let cursor = first.next.expect("a next page");
    let second = waiting.clone().after(&cursor);
    time("waiting at approve, next 50 (cursor)", || async {
        engine.instances(&second).await.expect("query").items.len()
    })
    .await;
    let stuck = Query::of(&EXPENSE)
        .incident(true)
        .sort_by(SortBy::Started)
        .limit(50);
    time("open incidents, first 50 by start", || async {
        engine.instances(&stuck).await.expect("query").items.len()
    })
    .await;
    let ended = Query::of(&EXPENSE)
        .sort_by(SortBy::Ended)
        .descending()
        .limit(50);
    time("last 50 ended", || async {
        engine.instances(&ended).await.expect("query").items.len()
    })
    .await;
    for status in [Status::Running, Status::Completed] {
        let q = Query::of(&EXPENSE).status(status);
        time(&format!("count {status}"), || async {
            engine.count(&q).await.expect("count") as usize
        })
        .await;
    }
    let incidents = Query::of(&EXPENSE).incident(true);
    time("count with an open incident", || async {
        engine.count(&incidents).await.expect("count") as usize
    })
    .await;
}

/// The console's pages and API over the stored instances.
#[cfg(feature = "console")]
async fn console(engine: &DurableEngine, n: u64) {
    use std::io::{Read, Write};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("a port");
    let addr = listener.local_addr().expect("an address");
    let router = thresh::console::router(engine.clone())
        .process(&EXPENSE)
        .into_router();
    let server = tokio::spawn(async move { thresh::console::axum::serve(listener, router).await });
    // The whole answer, over a connection of its own: its status and length.
    let get = |path: String| async move {
        tokio::task::spawn_blocking(move || {
            let mut stream = std::net::TcpStream::connect(addr).expect("connect");
            let request =
                format!("GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n");
            stream.write_all(request.as_bytes()).expect("send");
            let mut answer = Vec::new();
            stream.read_to_end(&mut answer).expect("read");
            let head = String::from_utf8_lossy(&answer[..answer.len().min(64)]).to_string();
            assert!(head.starts_with("HTTP/1.1 200"), "{path}: {head}");
            answer.len()
        })
        .await
        .expect("joined")
    };
    println!("console over {n} instances (answer bytes in place of rows):");
    let key = format!("expense-{}", n / 2 + 1);
    for (name, path) in [
        (
            "page: instances, newest 50 (the default)",
            "/instances?process=EXPENSE".to_string(),
        ),
        (
            "page: waiting at approve, newest 50 by start",
            "/instances?process=EXPENSE&waiting_at=approve&sort=started&desc=true".to_string(),
        ),
        (
            "page: open incidents, first 50 by start",
            "/instances?process=EXPENSE&incident=true&sort=started".to_string(),
        ),
        (
            "page: by business key",
            format!("/instances?process=EXPENSE&key={key}"),
        ),
        (
            "api: waiting at approve, first 50 by start",
            "/api/instances?process=EXPENSE&waiting_at=approve&sort=started".to_string(),
        ),
        ("page: processes (counts by status)", "/".to_string()),
    ] {
        time(name, || get(path.clone())).await;
    }
    server.abort();
}

fn instances() -> u64 {
    std::env::var("THRESH_BENCH_INSTANCES")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(1_000_000)
}

fn main() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    runtime.block_on(async {
        let t = templates().await;
        let n = instances();
        let dir = std::env::temp_dir().join(format!("thresh-bench-queries-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("dir");
        let path = dir.join("store.db");
        {
            let store = thresh::store::SqliteStore::open(&path).expect("open");
            let took = fill(&store, &t, n);
            println!(
                "sqlite: {n} instances stored in {:.1} s",
                took.as_secs_f64()
            );
        }
        let size = std::fs::metadata(&path).map(|m| m.len()).unwrap_or(0);
        println!("sqlite: file {:.0} MiB", size as f64 / (1 << 20) as f64);
        let store = thresh::store::SqliteStore::open_with(
            &path,
            &thresh::store::SqliteOptions { quick_check: false },
        )
        .expect("open");
        let engine = DurableEngine::with_store(Arc::new(store)).expect("engine");
        queries(&engine, n).await;
        #[cfg(feature = "console")]
        console(&engine, n).await;
        engine
            .shutdown(Duration::from_secs(5))
            .await
            .expect("shutdown");
        drop(engine);
        let _ = std::fs::remove_dir_all(&dir);
        #[cfg(feature = "postgres")]
        postgres(&t, n).await;
    });
}

#[cfg(feature = "postgres")]
async fn postgres(t: &Templates, n: u64) {
    let url = std::env::var("THRESH_POSTGRES_URL")
        .unwrap_or_else(|_| "postgres://root@127.0.0.1:5432/test".to_string());
    let schema = format!("thresh_bench_queries_{}", std::process::id());
    let drop_schema = || {
        let url = url.clone();
        let sql = format!("DROP SCHEMA IF EXISTS {schema} CASCADE");
        std::thread::spawn(move || {
            let mut c = postgres::Client::connect(&url, postgres::NoTls).expect("connect");
            c.batch_execute(&sql).expect("drop schema");
        })
        .join()
        .expect("dropped");
    };
    drop_schema();
    let store = {
        let (url, schema) = (url.clone(), schema.clone());
        tokio::task::spawn_blocking(move || {
            thresh::store::PostgresStore::connect_schema(&url, &schema).expect("connect")
        })
        .await
        .expect("connected")
    };
    let store = Arc::new(store);
    let filled = {
        let (store, t) = (
            store.clone(),
            Templates {
                waiting: t.waiting.clone(),
                ended: t.ended.clone(),
                stuck: t.stuck.clone(),
            },
        );
        tokio::task::spawn_blocking(move || {
            let took = fill(&*store, &t, n);
            let mut c = postgres::Client::connect(
                &std::env::var("THRESH_POSTGRES_URL")
                    .unwrap_or_else(|_| "postgres://root@127.0.0.1:5432/test".to_string()),
                postgres::NoTls,
            )
            .expect("connect");
            // What autovacuum does after a bulk load, at once: statistics, and the
            // visibility map that lets a count read the index alone. (VACUUM runs
            // outside a transaction: one statement a call.)
            let schema = format!("thresh_bench_queries_{}", std::process::id());
            for table in ["instances", "instance_waits"] {
                c.batch_execute(&format!("VACUUM ANALYZE {schema}.{table}"))
                    .expect("vacuum");
            }
            took
        })
        .await
        .expect("filled")
    };
    println!(
        "postgres: {n} instances stored in {:.1} s",
        filled.as_secs_f64()
    );
    let engine = DurableEngine::with_store(store).expect("engine");
    queries(&engine, n).await;
    engine
        .shutdown(Duration::from_secs(5))
        .await
        .expect("shutdown");
    drop(engine);
    if std::env::var_os("THRESH_BENCH_KEEP").is_some() {
        // To look at the plans: `EXPLAIN ANALYZE` in psql.
        println!("postgres: kept schema {schema}");
    } else {
        drop_schema();
    }
}
