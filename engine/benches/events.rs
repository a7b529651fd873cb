//! Event benchmarks (issue 4): memory per instance parked on a message catch, message
//! correlation, signal broadcast. No harness and no extra dependencies: `main` builds
//! a 2-worker tokio runtime, times the engine and prints figures.
//!
//! ```text
//! cargo bench -p thresh --bench events                   # every benchmark
//! cargo bench -p thresh --bench events -- park-memory    # only the benchmark of that name
//! cargo bench -p thresh --bench events -- broad          # those whose name contains it
//! ```
//!
//! Names: `park-memory`, `correlate`, `broadcast`, `broadcast-one`.
//!
//! Memory is measured with a counting `#[global_allocator]` (below): the live heap
//! bytes the program asked for, as a delta around the measured phase, with a census by
//! block size; and, for comparison, the resident set from `/proc/self/statm` (glibc's
//! free memory is handed back with `malloc_trim` before each baseline). The allocator
//! counts only while a memory benchmark asks it to, so the timed benchmarks pay one
//! relaxed load per allocation for it.
//!
//! `broadcast` also shows what a caught signal leaves behind: the heap still held once
//! every catcher completed, and the cost of a later broadcast of the same name.
//!
//! Every timed figure is the median of `RUNS` runs after one untimed warm-up run,
//! printed with the minimum and maximum of the runs; every run uses a fresh engine on
//! the same runtime. The benchmark driver is itself a task on one of the two workers.

mod support;
use support::{report_plain, report_rate, summarize, timed, Run};

use std::alloc::{GlobalAlloc, Layout, System};
use std::future::Future;
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, Ordering::Relaxed};
use std::time::{Duration, Instant};

use thresh::{process, Engine, Happening, History, InstanceHandle, Outcome, ProcessData, Step};

/// Timed runs per figure.
const RUNS: usize = 5;
/// Memory runs (each starts and parks `PARKED` instances).
const MEMORY_RUNS: usize = 3;
/// Instances parked at once in the memory, correlation and broadcast benchmarks.
const PARKED: u64 = 100_000;
/// The design's bound on the memory of one parked instance.
const TARGET_BYTES_PER_PARKED: f64 = 2048.0;

// ----- the counting allocator ---------------------------------------------------------

/// Forwards to the system allocator; while `COUNTING` is set it keeps the live heap
/// (bytes and blocks asked for) and a census of live blocks by size.
struct Counting;

#[global_allocator]
static ALLOCATOR: Counting = Counting;

static COUNTING: AtomicBool = AtomicBool::new(false);
static LIVE_BYTES: AtomicI64 = AtomicI64::new(0);
static LIVE_BLOCKS: AtomicI64 = AtomicI64::new(0);
/// Blocks up to this size are counted by exact size; larger ones by power of two.
const EXACT: usize = 4096;
static BY_SIZE: [AtomicI64; EXACT + 1] = [const { AtomicI64::new(0) }; EXACT + 1];
/// Of those, the blocks aligned to more than 16 bytes (tokio's task cells and channel
/// heads are cache-line aligned, to 128 bytes on x86_64).
static BY_SIZE_OVERALIGNED: [AtomicI64; EXACT + 1] = [const { AtomicI64::new(0) }; EXACT + 1];
static BIG_BLOCKS: [AtomicI64; 64] = [const { AtomicI64::new(0) }; 64];
static BIG_BYTES: [AtomicI64; 64] = [const { AtomicI64::new(0) }; 64];

fn census(layout: Layout, sign: i64) {
    let size = layout.size();
    LIVE_BYTES.fetch_add(sign * size as i64, Relaxed);
    LIVE_BLOCKS.fetch_add(sign, Relaxed);
    if size <= EXACT {
        BY_SIZE[size].fetch_add(sign, Relaxed);
        if layout.align() > 16 {
            BY_SIZE_OVERALIGNED[size].fetch_add(sign, Relaxed);
        }
    } else {
        let class = (usize::BITS - (size - 1).leading_zeros()) as usize;
        BIG_BLOCKS[class].fetch_add(sign, Relaxed);
        BIG_BYTES[class].fetch_add(sign * size as i64, Relaxed);
    }
}

// SAFETY: every call is forwarded unchanged to `System`; the census has no effect on
// the memory handed out.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: forwarded with the caller's guarantees.
        let p = unsafe { System.alloc(layout) };
        if !p.is_null() && COUNTING.load(Relaxed) {
            census(layout, 1);
        }
        p
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: forwarded with the caller's guarantees.
        let p = unsafe { System.alloc_zeroed(layout) };
        if !p.is_null() && COUNTING.load(Relaxed) {
            census(layout, 1);
        }
        p
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        if COUNTING.load(Relaxed) {
            census(layout, -1);
        }
        // SAFETY: forwarded with the caller's guarantees.
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: forwarded with the caller's guarantees.
        let p = unsafe { System.realloc(ptr, layout, new_size) };
        if !p.is_null() && COUNTING.load(Relaxed) {
            census(layout, -1);
            // SAFETY: `realloc`'s contract makes this a valid layout.
            census(
                unsafe { Layout::from_size_align_unchecked(new_size, layout.align()) },
                1,
            );
        }
        p
    }
}

/// The allocator's counters at one moment; subtracting two gives what happened
/// between them (a block freed in the window counts against the window, whenever it
/// was allocated, so a delta is exact while counting was on throughout).
#[derive(Clone)]
struct Heap {
    bytes: i64,
    blocks: i64,
    by_size: Vec<i64>,
    overaligned: Vec<i64>,
    big_blocks: Vec<i64>,
    big_bytes: Vec<i64>,
}

impl Heap {
    fn now() -> Self {
        let load = |a: &[AtomicI64]| a.iter().map(|c| c.load(Relaxed)).collect();
        Heap {
            bytes: LIVE_BYTES.load(Relaxed),
            blocks: LIVE_BLOCKS.load(Relaxed),
            by_size: load(&BY_SIZE),
            overaligned: load(&BY_SIZE_OVERALIGNED),
            big_blocks: load(&BIG_BLOCKS),
            big_bytes: load(&BIG_BYTES),
        }
    }

    fn since(&self, before: &Heap) -> Heap {
        let sub = |a: &[i64], b: &[i64]| a.iter().zip(b).map(|(a, b)| a - b).collect();
        Heap {
            bytes: self.bytes - before.bytes,
            blocks: self.blocks - before.blocks,
            by_size: sub(&self.by_size, &before.by_size),
            overaligned: sub(&self.overaligned, &before.overaligned),
            big_blocks: sub(&self.big_blocks, &before.big_blocks),
            big_bytes: sub(&self.big_bytes, &before.big_bytes),
        }
    }

    /// The bytes glibc's malloc spends on these blocks: a chunk is the request plus an
    /// 8-byte header, rounded up to 16, at least 32 bytes. Large blocks are counted as
    /// asked (they are mmapped or carved from the top, page-rounded).
    fn malloc_estimate(&self) -> i64 {
        let small: i64 = self
            .by_size
            .iter()
            .enumerate()
            .map(|(size, n)| n * chunk(size) as i64)
            .sum();
        small + self.big_bytes.iter().sum::<i64>()
    }
}

fn chunk(size: usize) -> usize {
    ((size + 8 + 15) & !15).max(32)
}

/// The resident set, in bytes (`/proc/self/statm`, 4 KiB pages).
fn rss() -> Option<i64> {
    let statm = std::fs::read_to_string("/proc/self/statm").ok()?;
    let pages: i64 = statm.split_whitespace().nth(1)?.parse().ok()?;
    Some(pages * 4096)
}

/// Hand glibc's free memory back to the system, so a resident-set delta shows the
/// memory a phase keeps rather than what an earlier phase left free.
fn trim() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        extern "C" {
            fn malloc_trim(pad: usize) -> i32;
        }
        // SAFETY: glibc's `malloc_trim` only releases free memory.
        unsafe {
            malloc_trim(0);
        }
    }
}

// ----- the processes ------------------------------------------------------------------

#[derive(Clone, Debug, Default, ProcessData)]
pub struct Order {
    pub id: u64,
    pub paid: u64,
}

#[derive(Clone, Debug, Default, ProcessData)]
pub struct Nothing {
    pub n: u64,
}

/// Correlation keys computed: once when a catch subscribes, once when its message
/// comes (the loop's fine correlation check). The benchmarks wait on it to know that
/// every instance has parked.
static KEYS_COMPUTED: AtomicU64 = AtomicU64::new(0);

fn order_key(order: &Order) -> u64 {
    KEYS_COMPUTED.fetch_add(1, Relaxed);
    order.id
}

process! {
    /// `AWAIT_PAYMENT`'s wait inside a sub-process, with a top-level event
    /// sub-process armed beside it.
    pub AWAIT_IN_SCOPE: Order {
        start placed;
        subprocess paying {
            start open;
            catch paid: message("payment", key = order_key, apply = |o, amount: &u64| o.paid = *amount);
            end settled;
            open -> paid -> settled;
        }
        end done;
        placed -> paying -> done;
        event_subprocess on_audit {
            start audit: non_interrupting signal("audit");
            end audited;
            audit -> audited;
        }
    }
}

process! {
    /// Waits for its payment, correlated by the order id.
    pub AWAIT_PAYMENT: Order {
        start placed;
        catch paid: message("payment", key = order_key, apply = |o, amount: &u64| o.paid = *amount);
        end done;
        placed -> paid -> done;
    }

    /// Waits for the `go` signal.
    pub AWAIT_GO: Nothing {
        start begin;
        catch go: signal("go");
        end done;
        begin -> go -> done;
    }

    /// Waits for the `other` signal, which never comes.
    pub AWAIT_OTHER: Nothing {
        start begin;
        catch other: signal("other");
        end done;
        begin -> other -> done;
    }
}

/// A benchmark: it runs its engines on the shared runtime and prints its figures.
type Bench = fn(&tokio::runtime::Runtime);

fn main() {
    // `cargo bench` passes `--bench`; every other argument is a name filter.
    let filters: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with('-'))
        .collect();
    let benches: [(&str, Bench); 5] = [
        ("park-memory", park_memory),
        ("park-memory-scoped", park_memory_scoped),
        ("correlate", correlate),
        ("broadcast", broadcast_all),
        ("broadcast-one", broadcast_one),
    ];
    // A filter that names a benchmark exactly selects only it; any other selects
    // every benchmark whose name contains it.
    let selected = |name: &str| {
        filters.is_empty()
            || filters.iter().any(|f| {
                name == f || (!benches.iter().any(|(n, _)| n == f) && name.contains(f.as_str()))
            })
    };
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_time()
        .build()
        .expect("a multi_thread runtime");
    println!(
        "thresh event benchmarks: multi_thread runtime, 2 workers (the driver is a task on one of them)"
    );
    println!("timed figures: median of {RUNS} runs after a warm-up [min .. max]");
    let began = Instant::now();
    let mut ran = 0;
    for (name, bench) in benches {
        if selected(name) {
            println!();
            bench(&rt);
            ran += 1;
        }
    }
    if ran == 0 {
        eprintln!("no benchmark matches {filters:?}");
        std::process::exit(2);
    }
    println!(
        "\n{ran} benchmark(s) in {:.1} s",
        began.elapsed().as_secs_f64()
    );
}

// ----- 1. memory per parked instance --------------------------------------------------

struct MemoryRun {
    /// Heap delta from before the first start to all instances parked.
    parked: Heap,
    /// Heap delta from before the first start to all instances completed and their
    /// handles dropped, the engine still alive.
    retained: Heap,
    /// Resident-set delta to all parked.
    rss: Option<i64>,
    /// Start to all parked, seconds (counting allocator on).
    park_secs: f64,
    /// Steps in one parked instance's history.
    history_steps: usize,
}

fn park_memory(rt: &tokio::runtime::Runtime) {
    park_memory_of(
        rt,
        "park-memory: start -> catch message(\"payment\", key = id) -> end",
        &AWAIT_PAYMENT,
        true,
    );
}

/// What a scope adds: the same wait inside a sub-process, with an event sub-process
/// armed at the top level.
fn park_memory_scoped(rt: &tokio::runtime::Runtime) {
    park_memory_of(
        rt,
        "park-memory-scoped: the same catch inside a sub-process, beside a top-level non-interrupting signal event sub-process",
        &AWAIT_IN_SCOPE,
        false,
    );
}

fn park_memory_of(
    rt: &tokio::runtime::Runtime,
    what: &str,
    process: &'static thresh::Process<Order>,
    target: bool,
) {
    println!(
        "{what}, {PARKED} instances started and parked; live heap delta (counting allocator) and RSS delta, median of {MEMORY_RUNS} runs"
    );
    let mut runs: Vec<MemoryRun> = Vec::with_capacity(MEMORY_RUNS);
    for _ in 0..MEMORY_RUNS {
        runs.push(on_workers(rt, move |engine| {
            park_memory_run(engine, PARKED, process)
        }));
    }
    let n = PARKED as f64;
    let per = |f: &dyn Fn(&MemoryRun) -> f64| -> Vec<f64> { runs.iter().map(f).collect() };
    let heap = per(&|r| r.parked.bytes as f64 / n);
    report_bytes("live heap per parked instance", &heap);
    report_plain(
        "  heap blocks per instance",
        &per(&|r| r.parked.blocks as f64 / n),
    );
    report_bytes(
        "  + malloc chunk overhead (est.)",
        &per(&|r| r.parked.malloc_estimate() as f64 / n),
    );
    if runs.iter().all(|r| r.rss.is_some()) {
        report_bytes(
            "RSS delta per parked instance",
            &per(&|r| r.rss.unwrap_or(0) as f64 / n),
        );
    }
    let median = summarize(&heap).median;
    if target {
        println!(
            "  target <= {TARGET_BYTES_PER_PARKED:.0} B per parked instance: {:.0}% of target, {}",
            100.0 * median / TARGET_BYTES_PER_PARKED,
            if median <= TARGET_BYTES_PER_PARKED {
                "met"
            } else {
                "NOT met"
            }
        );
    }
    report_bytes(
        "retained after all completed",
        &per(&|r| r.retained.bytes as f64 / n),
    );
    report_plain(
        "  start+park rate (k inst/s)",
        &per(&|r| n / r.park_secs / 1e3),
    );
    println!("  (the start+park rate is with the counting allocator on; not a throughput figure)");

    // The breakdown of the median run.
    let mut order: Vec<usize> = (0..runs.len()).collect();
    order.sort_by_key(|&i| runs[i].parked.bytes);
    let mid = &runs[order[order.len() / 2]];
    println!(
        "  breakdown of the median run, by block size (blocks per instance >= 0.05; one parked instance's history has {} steps):",
        mid.history_steps
    );
    print_census(&mid.parked, PARKED);
    println!("  type sizes (bytes):");
    println!(
        "    Step {} (history starts with room for 2 -> {} B), Happening {}, History {}, InstanceHandle<Order> {}, Outcome<Order> {}, Order {}",
        std::mem::size_of::<Step>(),
        2 * std::mem::size_of::<Step>(),
        std::mem::size_of::<Happening>(),
        std::mem::size_of::<History>(),
        std::mem::size_of::<InstanceHandle<Order>>(),
        std::mem::size_of::<Outcome<Order>>(),
        std::mem::size_of::<Order>(),
    );
    println!(
        "    (the handles' Vec was allocated before the baseline: {} B per instance, not counted)",
        std::mem::size_of::<InstanceHandle<Order>>()
    );
    println!("  retained after completion, by block size:");
    print_census(&mid.retained, PARKED);
}

async fn park_memory_run(
    engine: Engine,
    n: u64,
    process: &'static thresh::Process<Order>,
) -> MemoryRun {
    let mut handles: Vec<InstanceHandle<Order>> = Vec::with_capacity(n as usize);
    trim();
    let rss0 = rss();
    KEYS_COMPUTED.store(0, Relaxed);
    COUNTING.store(true, Relaxed);
    let before = Heap::now();
    let t = Instant::now();
    for id in 0..n {
        handles.push(engine.start(process, Order { id, paid: 0 }).await.unwrap());
    }
    wait_for_keys(n).await;
    settle().await;
    let park_secs = t.elapsed().as_secs_f64();
    let parked = Heap::now().since(&before);
    let rss1 = rss();
    let history_steps = handles[0].history().await.steps().len();
    let stats = engine.broker_stats();
    assert_eq!(
        (stats.delivered, stats.buffered),
        (0, 0),
        "nothing delivered yet"
    );

    // Release them all, then see what the engine keeps.
    for id in 0..n {
        engine
            .publish_message("payment", id.to_string(), id)
            .await
            .unwrap();
    }
    for (id, handle) in handles.drain(..).enumerate() {
        paid(handle, id as u64).await;
    }
    settle().await;
    let retained = Heap::now().since(&before);
    COUNTING.store(false, Relaxed);
    drop(handles); // its buffer predates the baseline
    MemoryRun {
        parked,
        retained,
        rss: rss0.zip(rss1).map(|(a, b)| b - a),
        park_secs,
        history_steps,
    }
}

/// Print the blocks of a heap delta by size, largest share first.
fn print_census(heap: &Heap, n: u64) {
    let n = n as f64;
    let mut rows: Vec<(usize, i64, i64)> = heap
        .by_size
        .iter()
        .enumerate()
        .filter(|(_, &count)| count != 0)
        .map(|(size, &count)| (size, count, heap.overaligned[size]))
        .collect();
    rows.sort_by_key(|&(size, count, _)| std::cmp::Reverse(size as i64 * count));
    println!(
        "    {:>10}  {:>10}  {:>11}  {:>15}",
        "block B", "per inst", "B per inst", "malloc B (est.)"
    );
    let (mut rest_bytes, mut rest_blocks) = (0i64, 0i64);
    for &(size, count, overaligned) in &rows {
        let per = count as f64 / n;
        if per.abs() >= 0.05 {
            let note = if overaligned != 0 {
                "  aligned > 16 (task cell or channel head)"
            } else {
                ""
            };
            println!(
                "    {size:>10}  {per:>10.2}  {:>11.1}  {:>15.1}{note}",
                size as f64 * per,
                chunk(size) as f64 * per
            );
        } else {
            rest_bytes += size as i64 * count;
            rest_blocks += count;
        }
    }
    println!(
        "    {:>10}  {:>10.2}  {:>11.1}                    (smaller shares)",
        "other",
        rest_blocks as f64 / n,
        rest_bytes as f64 / n
    );
    for class in 0..64 {
        let (blocks, bytes) = (heap.big_blocks[class], heap.big_bytes[class]);
        if blocks != 0 || bytes != 0 {
            println!(
                "    {:>10}  {:>10}  {:>11.1}                    ({blocks} block(s), {:.2} MiB in all: engine-wide tables)",
                format!("<= 2^{class}"),
                "-",
                bytes as f64 / n,
                bytes as f64 / (1024.0 * 1024.0)
            );
        }
    }
    println!(
        "    {:>10}  {:>10.2}  {:>11.1}  {:>15.1}",
        "total",
        heap.blocks as f64 / n,
        heap.bytes as f64 / n,
        heap.malloc_estimate() as f64 / n
    );
}

// ----- 2. message correlation ---------------------------------------------------------

fn correlate(rt: &tokio::runtime::Runtime) {
    println!(
        "correlate: {PARKED} instances parked on catch message(\"payment\", key = id); publish {PARKED} messages (one per key) then await every outcome"
    );
    let runs = sample(|| on_workers(rt, |engine| correlate_run(engine, PARKED)));
    let total: Vec<Run> = runs.iter().map(|r| r.0).collect();
    let publish: Vec<f64> = runs.iter().map(|r| r.1).collect();
    report_rate("messages/s, publish to outcome", &total, None);
    report_plain(
        "  wall ms, publish to outcome",
        &total.iter().map(|r| r.wall * 1e3).collect::<Vec<_>>(),
    );
    report_plain("  wall ms, the publish calls", &publish);
}

/// One run: the full publish-to-last-outcome time, and how long the publish calls took.
async fn correlate_run(engine: Engine, n: u64) -> (Run, f64) {
    KEYS_COMPUTED.store(0, Relaxed);
    let mut handles: Vec<InstanceHandle<Order>> = Vec::new();
    for id in 0..n {
        handles.push(
            engine
                .start(&AWAIT_PAYMENT, Order { id, paid: 0 })
                .await
                .unwrap(),
        );
    }
    wait_for_keys(n).await;
    settle().await;
    let mut publish_ms = 0.0;
    let run = timed(n, async {
        let t = Instant::now();
        for id in 0..n {
            engine
                .publish_message("payment", id.to_string(), id)
                .await
                .unwrap();
        }
        publish_ms = t.elapsed().as_secs_f64() * 1e3;
        for (id, handle) in handles.into_iter().enumerate() {
            paid(handle, id as u64).await;
        }
    })
    .await;
    let stats = engine.broker_stats();
    assert_eq!(
        (stats.delivered, stats.buffered),
        (n, 0),
        "every message delivered at once"
    );
    (run, publish_ms)
}

// ----- 3. one signal to many catchers ---------------------------------------------------

fn broadcast_all(rt: &tokio::runtime::Runtime) {
    println!(
        "broadcast: {PARKED} instances parked on catch signal(\"go\"); broadcast one `go` then await every outcome"
    );
    let runs = sample(|| on_workers(rt, |engine| broadcast_all_run(engine, PARKED)));
    let total: Vec<Run> = runs.iter().map(|r| r.run).collect();
    report_plain(
        "wall ms, broadcast to last outcome",
        &total.iter().map(|r| r.wall * 1e3).collect::<Vec<_>>(),
    );
    report_rate("  catchers completed/s", &total, None);
    report_plain(
        "  wall ms, the broadcast call",
        &runs.iter().map(|r| r.call_ms).collect::<Vec<_>>(),
    );
    // After every catcher completed, nobody waits for `go` any more: a broadcast
    // should reach nobody and cost a lookup.
    report_plain(
        "  µs, a 2nd `go` after all completed",
        &runs.iter().map(|r| r.again_us).collect::<Vec<_>>(),
    );
    let (retained, again_us) = on_workers(rt, |engine| broadcast_retained_run(engine, PARKED));
    println!(
        "  heap still held after all {PARKED} catchers completed (handles dropped, engine alive): {:.0} B per catcher; a 2nd `go` then took {again_us:.0} µs",
        retained as f64 / PARKED as f64
    );
    println!(
        "  (a caught signal's subscription leaves the index when the catch fires: what stays is the hub's tables' capacity)"
    );
}

/// One timed run of `broadcast`.
struct BroadcastRun {
    run: Run,
    /// The broadcast call itself, ms.
    call_ms: f64,
    /// A second broadcast of `go` once every catcher completed, µs.
    again_us: f64,
}

async fn broadcast_all_run(engine: Engine, n: u64) -> BroadcastRun {
    let mut handles: Vec<InstanceHandle<Nothing>> = Vec::new();
    for _ in 0..n {
        handles.push(engine.start(&AWAIT_GO, Nothing::default()).await.unwrap());
    }
    wait_parked(&handles).await;
    let mut call_ms = 0.0;
    let run = timed(n, async {
        let t = Instant::now();
        let reached = engine.broadcast_signal("go", ()).await.unwrap();
        call_ms = t.elapsed().as_secs_f64() * 1e3;
        assert_eq!(reached as u64, n, "the signal reaches every catcher");
        for handle in &handles {
            completed(handle).await;
        }
    })
    .await;
    let t = Instant::now();
    let reached = engine.broadcast_signal("go", ()).await.unwrap();
    let again_us = t.elapsed().as_secs_f64() * 1e6;
    assert_eq!(reached, 0, "every catcher has completed");
    BroadcastRun {
        run,
        call_ms,
        again_us,
    }
}

/// The `broadcast` run once more, untimed, with the counting allocator on: the heap
/// held after every catcher completed and its handle was dropped, and a second `go`
/// broadcast's time (µs).
async fn broadcast_retained_run(engine: Engine, n: u64) -> (i64, f64) {
    let mut handles: Vec<InstanceHandle<Nothing>> = Vec::with_capacity(n as usize);
    COUNTING.store(true, Relaxed);
    let before = Heap::now();
    for _ in 0..n {
        handles.push(engine.start(&AWAIT_GO, Nothing::default()).await.unwrap());
    }
    wait_parked(&handles).await;
    assert_eq!(engine.broadcast_signal("go", ()).await.unwrap() as u64, n);
    for handle in handles.drain(..) {
        completed(&handle).await;
    }
    settle().await;
    let retained = Heap::now().since(&before).bytes;
    COUNTING.store(false, Relaxed);
    drop(handles); // its buffer predates the baseline
    let t = Instant::now();
    assert_eq!(engine.broadcast_signal("go", ()).await.unwrap(), 0);
    (retained, t.elapsed().as_secs_f64() * 1e6)
}

// ----- 4. one signal to one catcher among many unrelated waiters -----------------------

/// Broadcasts timed per run of `broadcast-one`.
const ONE_REPS: usize = 100;

fn broadcast_one(rt: &tokio::runtime::Runtime) {
    println!(
        "broadcast-one: broadcast `go` to the one instance parked on catch signal(\"go\"), with N unrelated instances parked on catch signal(\"other\"); per run (a fresh engine each) the median of {ONE_REPS} broadcasts, each to a fresh catcher"
    );
    let mut medians = Vec::new();
    for unrelated in [1_000u64, PARKED] {
        let runs = sample(|| on_workers(rt, move |engine| broadcast_one_run(engine, unrelated)));
        let pick = |f: fn(&OneRun) -> f64| -> Vec<f64> { runs.iter().map(f).collect() };
        let (call, done, p99, nobody) = (
            pick(|r| r.call),
            pick(|r| r.done),
            pick(|r| r.p99),
            pick(|r| r.nobody),
        );
        println!("  with {unrelated} unrelated waiters:");
        report_plain("    µs, the broadcast call", &call);
        report_plain("    µs, broadcast to outcome", &done);
        report_plain("    µs, broadcast to outcome p99", &p99);
        report_plain("    ns, a broadcast nobody catches", &nobody);
        report_plain(
            "    µs, 1st (cold) broadcast: call",
            &pick(|r| r.first_call),
        );
        report_plain(
            "    µs, 1st (cold) bc.: to outcome",
            &pick(|r| r.first_done),
        );
        medians.push((
            summarize(&call).median,
            summarize(&done).median,
            summarize(&nobody).median,
        ));
    }
    let (small, large) = (medians[0], medians[1]);
    println!(
        "  {PARKED} vs 1000 unrelated: broadcast call x{:.2}, broadcast to outcome x{:.2}, broadcast nobody catches x{:.2} (1.00 = independent)",
        large.0 / small.0,
        large.1 / small.1,
        large.2 / small.2
    );
    let (send, reply) = on_workers(rt, |_| wake_baseline());
    println!("  baseline, no engine: an unbounded tokio channel's send to an idle task, which replies on a oneshot");
    report_plain("    µs, the send call", &send);
    report_plain("    µs, send to reply", &reply);
    println!(
        "  (the broadcast call includes posting to the catcher's intake, which wakes its loop and may wake the idle\n   worker; the k-th broadcast of a run also walks the k-1 stale subscriptions left by earlier catchers —\n   the 1st broadcast of each run has none, but it is a single sample taken cold, right after the setup)"
    );
}

/// Per run, the median time of a bare tokio send that wakes an idle task, and of the
/// round trip to its reply, in µs: what a one-catcher broadcast costs beyond the hub.
async fn wake_baseline() -> (Vec<f64>, Vec<f64>) {
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<tokio::sync::oneshot::Sender<()>>();
    let echo = tokio::spawn(async move {
        while let Some(reply) = rx.recv().await {
            let _ = reply.send(());
        }
    });
    let one_run = || async {
        let mut send = Vec::with_capacity(ONE_REPS);
        let mut reply = Vec::with_capacity(ONE_REPS);
        for _ in 0..ONE_REPS {
            // Let the echo task go idle first, as a parked catcher is.
            tokio::time::sleep(Duration::from_micros(50)).await;
            let (reply_tx, reply_rx) = tokio::sync::oneshot::channel();
            let t = Instant::now();
            tx.send(reply_tx).expect("echo task alive");
            send.push(t.elapsed().as_secs_f64() * 1e6);
            reply_rx.await.expect("echo replies");
            reply.push(t.elapsed().as_secs_f64() * 1e6);
        }
        send.sort_by(f64::total_cmp);
        reply.sort_by(f64::total_cmp);
        (send[ONE_REPS / 2], reply[ONE_REPS / 2])
    };
    one_run().await; // warm-up
    let mut runs = Vec::with_capacity(RUNS);
    for _ in 0..RUNS {
        runs.push(one_run().await);
    }
    drop(tx);
    echo.await.expect("echo task");
    (
        runs.iter().map(|r| r.0).collect(),
        runs.iter().map(|r| r.1).collect(),
    )
}

/// One run of `broadcast-one`: the median broadcast call, the median time to the
/// catcher's outcome and its 99th percentile (µs), and the mean time of a broadcast
/// of a signal nobody catches (ns: the hub's lookup alone).
struct OneRun {
    /// The run's first broadcast, µs: no stale subscription in the hub yet.
    first_call: f64,
    first_done: f64,
    call: f64,
    done: f64,
    p99: f64,
    nobody: f64,
}

/// Broadcasts of a signal nobody catches, timed together per run of `broadcast-one`.
const NOBODY_REPS: u32 = 10_000;

/// Park `unrelated` waiters, then broadcast `go` `ONE_REPS` times, each to a fresh
/// catcher. A fresh engine per run: each caught `go` leaves its subscription in the
/// hub (see `broadcast`), which later broadcasts walk.
async fn broadcast_one_run(engine: Engine, unrelated: u64) -> OneRun {
    let mut others: Vec<InstanceHandle<Nothing>> = Vec::new();
    for _ in 0..unrelated {
        others.push(
            engine
                .start(&AWAIT_OTHER, Nothing::default())
                .await
                .unwrap(),
        );
    }
    wait_parked(&others).await;
    let t = Instant::now();
    for _ in 0..NOBODY_REPS {
        assert_eq!(engine.broadcast_signal("nobody", ()).await.unwrap(), 0);
    }
    let nobody = t.elapsed().as_secs_f64() * 1e9 / f64::from(NOBODY_REPS);
    let mut call = Vec::with_capacity(ONE_REPS);
    let mut done = Vec::with_capacity(ONE_REPS);
    for _ in 0..ONE_REPS {
        let catcher = engine.start(&AWAIT_GO, Nothing::default()).await.unwrap();
        wait_parked(std::slice::from_ref(&catcher)).await;
        let t = Instant::now();
        let reached = engine.broadcast_signal("go", ()).await.unwrap();
        call.push(t.elapsed().as_secs_f64() * 1e6);
        completed(&catcher).await;
        done.push(t.elapsed().as_secs_f64() * 1e6);
        assert_eq!(reached, 1, "one catcher");
    }
    assert!(
        others.iter().all(|h| !h.is_finished()),
        "the unrelated waiters still wait"
    );
    let (first_call, first_done) = (call[0], done[0]);
    call.sort_by(f64::total_cmp);
    done.sort_by(f64::total_cmp);
    OneRun {
        first_call,
        first_done,
        call: call[ONE_REPS / 2],
        done: done[ONE_REPS / 2],
        p99: done[ONE_REPS * 99 / 100],
        nobody,
    }
}

// ----- helpers --------------------------------------------------------------------------

/// Wait until `n` correlation keys were computed: every instance has subscribed (the
/// subscription follows its key within the same loop step).
async fn wait_for_keys(n: u64) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while KEYS_COMPUTED.load(Relaxed) < n {
        assert!(Instant::now() < deadline, "instances did not park in time");
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
}

/// Wait until each instance's history ends in `Parked` (a signal catch runs no user
/// code when it subscribes, so there is nothing to count).
async fn wait_parked<D: Clone>(handles: &[InstanceHandle<D>]) {
    for handle in handles {
        loop {
            let history = handle.history().await;
            if history
                .steps()
                .last()
                .is_some_and(|s| s.what == Happening::Parked)
            {
                break;
            }
            tokio::task::yield_now().await;
        }
    }
}

/// Let the last subscriptions land and the heap come to rest: wait until the live heap
/// stays the same across a few short sleeps (at most a second).
async fn settle() {
    let deadline = Instant::now() + Duration::from_secs(1);
    let mut last = LIVE_BYTES.load(Relaxed);
    let mut steady = 0;
    while steady < 3 && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(5)).await;
        let now = LIVE_BYTES.load(Relaxed);
        steady = if now == last { steady + 1 } else { 0 };
        last = now;
    }
}

/// Await an order and insist that it completed, paid.
async fn paid(handle: InstanceHandle<Order>, id: u64) {
    match handle.outcome().await {
        Outcome::Completed(order) if order.paid == id => {}
        other => panic!("order {id} did not complete paid: {other:?}"),
    }
}

/// Await an instance and insist that it completed.
///
/// Borrowed, as a list of handles is awaited: moved into an async fn by value, a
/// handle is copied with the future the await makes of it (`core.rs`'s
/// `completed_ref` says why that is the bench's cost, not the engine's).
async fn completed(handle: &InstanceHandle<Nothing>) {
    match handle.outcome().await {
        Outcome::Completed(_) => {}
        other => panic!("benchmark instance did not complete: {other:?}"),
    }
}

/// One warm-up run, then `RUNS` runs.
fn sample<T>(mut run: impl FnMut() -> T) -> Vec<T> {
    run();
    (0..RUNS).map(|_| run()).collect()
}

/// Run `bench` with a fresh engine as a task on the 2-worker runtime, then shut the
/// engine down.
fn on_workers<T, F, Fut>(rt: &tokio::runtime::Runtime, bench: F) -> T
where
    F: FnOnce(Engine) -> Fut + Send + 'static,
    Fut: Future<Output = T> + Send + 'static,
    T: Send + 'static,
{
    rt.block_on(async {
        tokio::spawn(async {
            let engine = Engine::new();
            let out = bench(engine.clone()).await;
            engine
                .shutdown(Duration::from_secs(60))
                .await
                .expect("engine shuts down");
            out
        })
        .await
        .expect("benchmark task")
    })
}

// ----- printing -------------------------------------------------------------------------

fn report_bytes(label: &str, values: &[f64]) {
    let s = summarize(values);
    println!(
        "  {label:<34} {:>9.0} B  [{:.0} .. {:.0}]  ({:.2} KiB)",
        s.median,
        s.min,
        s.max,
        s.median / 1024.0
    );
}
