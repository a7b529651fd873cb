//! Store benchmarks (issue 11): checkpoints per second through the writer into a
//! SQLite file (WAL, synchronous=FULL: one fsync per batch), and bytes on disk per
//! running instance. No harness: `main` prints figures; nothing is asserted.
//!
//! ```text
//! cargo bench -p thresh --features sqlite --bench store               # everything
//! cargo bench -p thresh --features sqlite --bench store -- footprint  # names containing it
//! ```
//!
//! Names: `single` (one submitter waiting for each receipt: one instance per batch, a
//! commit per checkpoint), `group-4-waiting` (4 submitters each waiting for its
//! receipt), `group-4-window` (4 submitters, 64 receipts in flight each: group commit
//! under load), `footprint` (100k running instances with a ~200-byte state: bytes per
//! instance, then the time to open the file and read them all back, as recovery does).
//! Rates are medians of 5 runs, with [min .. max]. The files live in cargo's target
//! tmp dir, on whatever disk that is: fsync cost is the disk's.

use std::collections::VecDeque;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use thresh::store::{InstanceRecord, SqliteStore, Status, Store, Write, Writer};

const RUNS: usize = 5;

fn state(n: u64) -> String {
    // About 200 bytes of JSON, like a small order's data plus a track or two.
    let s = format!(
        r#"{{"data":{{"order":{n},"customer":"c-{n:08}","amount":1999,"currency":"EUR","paid":false}},"tracks":[{{"id":1,"node":7,"state":"parked","wait":{{"message":"payment","key":"o-{n:08}"}}}}],"seq":{n}}}"#
    );
    format!(
        r#"{{"s":{s},"pad":"{}"}}"#,
        "x".repeat(200usize.saturating_sub(s.len() + 15))
    )
}

fn record(id: u64, seq: u64) -> InstanceRecord {
    InstanceRecord {
        id,
        process: "order".into(),
        fingerprint: 0x5eed_f00d_dead_beef,
        status: Status::Running,
        key: Some(format!("o-{id:08}")),
        seq,
        state: state(id),
        outcome: None,
        updated_ms: 1_700_000_000_000,
        business_key: None,
        started_ms: 1_700_000_000_000,
        waits: Vec::new(),
        incidents: 0,
        wake: Default::default(),
    }
}

fn fresh(dir: &Path, name: &str) -> PathBuf {
    let path = dir.join(name);
    for suffix in ["", "-wal", "-shm", "-journal"] {
        let _ = std::fs::remove_file(format!("{}{suffix}", path.display()));
    }
    path
}

fn median(mut v: Vec<f64>) -> (f64, f64, f64) {
    v.sort_by(f64::total_cmp);
    (v[v.len() / 2], v[0], v[v.len() - 1])
}

fn report(label: &str, rates: Vec<f64>, extra: &str) {
    let (med, min, max) = median(rates);
    println!("  {label:<26} {med:>10.0} checkpoints/s  [{min:.0} .. {max:.0}]{extra}");
}

/// `submitters` tasks, each checkpointing its own `instances` round robin, `per`
/// checkpoints each, with at most `window` receipts in flight per submitter.
async fn run(
    path: &Path,
    submitters: u64,
    instances: u64,
    per: u64,
    window: usize,
) -> (f64, thresh::store::WriterStats) {
    let store = Arc::new(SqliteStore::open(path).expect("open the store"));
    let writer = Writer::spawn(store).expect("start the writer");
    let t = Instant::now();
    let mut tasks = Vec::new();
    for k in 0..submitters {
        let writer = writer.clone();
        tasks.push(tokio::spawn(async move {
            let mut in_flight = VecDeque::new();
            for n in 0..per {
                let id = k * instances + n % instances;
                let seq = n / instances;
                in_flight.push_back(writer.submit(vec![Write::Put(record(id, seq))]));
                if in_flight.len() >= window {
                    in_flight
                        .pop_front()
                        .expect("a receipt")
                        .await
                        .expect("stored");
                }
            }
            for r in in_flight {
                r.await.expect("stored");
            }
        }));
    }
    for task in tasks {
        task.await.expect("a submitter");
    }
    let rate = (submitters * per) as f64 / t.elapsed().as_secs_f64();
    let stats = writer.stats();
    tokio::task::spawn_blocking(move || writer.shutdown())
        .await
        .expect("join")
        .expect("shut down");
    (rate, stats)
}

async fn throughput(
    dir: &Path,
    name: &str,
    submitters: u64,
    instances: u64,
    per: u64,
    window: usize,
) {
    let mut rates = Vec::new();
    let mut last = None;
    for i in 0..=RUNS {
        let path = fresh(dir, &format!("{name}.db"));
        let (rate, stats) = run(&path, submitters, instances, per, window).await;
        if i > 0 {
            // The first run warms up (and is not counted).
            rates.push(rate);
            last = Some(stats);
        }
    }
    let stats = last.expect("runs");
    let extra = format!(
        "   {} batches, {:.1} writes/batch, largest {}, {} coalesced",
        stats.batches,
        stats.writes as f64 / stats.batches as f64,
        stats.largest_batch,
        stats.coalesced
    );
    report(name, rates, &extra);
}

async fn footprint(dir: &Path) {
    const N: u64 = 100_000;
    let path = fresh(dir, "footprint.db");
    {
        let store = Arc::new(SqliteStore::open(&path).expect("open"));
        let writer = Writer::spawn(store).expect("writer");
        let t = Instant::now();
        let mut receipts = Vec::new();
        for chunk in 0..N / 1_000 {
            let batch = (chunk * 1_000..(chunk + 1) * 1_000)
                .map(|id| Write::Put(record(id, 0)))
                .collect();
            receipts.push(writer.submit(batch));
        }
        for r in receipts {
            r.await.expect("stored");
        }
        let took = t.elapsed().as_secs_f64();
        let stats = writer.stats();
        tokio::task::spawn_blocking(move || writer.shutdown())
            .await
            .expect("join")
            .expect("shut down");
        println!(
            "  footprint: wrote {N} instances in {took:.2} s ({:.0}/s, {} batches); state {} bytes",
            N as f64 / took,
            stats.batches,
            state(0).len()
        );
    }
    // Dropping the store checkpointed the WAL into the file and removed the WAL.
    let bytes = std::fs::metadata(&path).expect("size").len();
    println!(
        "  footprint: {bytes} bytes on disk for {N} running instances = {:.0} bytes/instance",
        bytes as f64 / N as f64
    );
    let mut opens = Vec::new();
    let mut reads = Vec::new();
    let mut opens_unchecked = Vec::new();
    for _ in 0..RUNS {
        let t = Instant::now();
        let store = SqliteStore::open(&path).expect("open");
        opens.push(t.elapsed().as_secs_f64());
        let t = Instant::now();
        let running = store.running().expect("read");
        reads.push(t.elapsed().as_secs_f64());
        assert_eq!(running.len() as u64, N);
        drop(store);
        let t = Instant::now();
        let options = thresh::store::SqliteOptions { quick_check: false };
        drop(SqliteStore::open_with(&path, &options).expect("open"));
        opens_unchecked.push(t.elapsed().as_secs_f64());
    }
    let ms = |v: Vec<f64>| {
        let (m, lo, hi) = median(v);
        format!("{:.0} ms [{:.0} .. {:.0}]", m * 1e3, lo * 1e3, hi * 1e3)
    };
    println!(
        "  footprint: open with quick_check {}, without {}; running() of {N}: {}",
        ms(opens),
        ms(opens_unchecked),
        ms(reads)
    );
}

fn main() {
    let filter: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with('-'))
        .collect();
    let wanted = |name: &str| filter.is_empty() || filter.iter().any(|f| name.contains(f.as_str()));
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("store-bench");
    std::fs::create_dir_all(&dir).expect("bench dir");
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    println!(
        "store benchmarks (SqliteStore, WAL, synchronous=FULL) in {}",
        dir.display()
    );
    rt.block_on(async {
        if wanted("single") {
            throughput(&dir, "single", 1, 1_000, 400, 1).await;
        }
        if wanted("group-4-waiting") {
            throughput(&dir, "group-4-waiting", 4, 1_000, 400, 1).await;
        }
        if wanted("group-4-window") {
            throughput(&dir, "group-4-window", 4, 1_000, 25_000, 64).await;
        }
        if wanted("footprint") {
            footprint(&dir).await;
        }
    });
}
