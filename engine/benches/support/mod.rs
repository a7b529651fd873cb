//! Timing and printing shared by the benches (`mod support;` in each).

use std::future::Future;
use std::time::Instant;

/// One timed run: `units` of work in `wall` seconds, using `cpu` CPU-seconds.
#[derive(Clone, Copy)]
pub struct Run {
    pub units: f64,
    pub wall: f64,
    pub cpu: Option<f64>,
}

/// Time `work`, which does `units` of work.
pub async fn timed(units: u64, work: impl Future<Output = ()>) -> Run {
    let cpu0 = cpu_time();
    let t = Instant::now();
    work.await;
    let wall = t.elapsed().as_secs_f64();
    let cpu = cpu0.zip(cpu_time()).map(|(a, b)| b - a);
    Run {
        units: units as f64,
        wall,
        cpu,
    }
}

/// CPU seconds used so far by the live threads of this process, if the OS tells.
pub fn cpu_time() -> Option<f64> {
    let mut ns = 0u64;
    for task in std::fs::read_dir("/proc/self/task").ok()? {
        let stat = std::fs::read_to_string(task.ok()?.path().join("schedstat")).ok()?;
        ns += stat.split_whitespace().next()?.parse::<u64>().ok()?;
    }
    Some(ns as f64 / 1e9)
}

pub struct Summary {
    pub median: f64,
    pub min: f64,
    pub max: f64,
}

pub fn summarize(values: &[f64]) -> Summary {
    let mut v = values.to_vec();
    v.sort_by(f64::total_cmp);
    Summary {
        median: v[v.len() / 2],
        min: v[0],
        max: v[v.len() - 1],
    }
}

/// The quantiles `qs` (each in 0..=1, by rank) of `values`.
#[allow(dead_code)]
pub fn quantiles<const N: usize>(values: &[f64], qs: [f64; N]) -> [f64; N] {
    let mut v = values.to_vec();
    v.sort_by(f64::total_cmp);
    qs.map(|q| v[((v.len() as f64 * q) as usize).min(v.len() - 1)])
}

/// A rate against the wall clock, with the design's target when there is one; then
/// the rate per CPU-second and the cores kept busy.
#[allow(dead_code)]
pub fn report_rate(label: &str, runs: &[Run], target: Option<f64>) {
    let rates: Vec<f64> = runs.iter().map(|r| r.units / r.wall).collect();
    let s = summarize(&rates);
    let verdict = match target {
        Some(t) => format!(
            "   target >= {} ({:.0}% of target, {})",
            si(t),
            100.0 * s.median / t,
            if s.median >= t { "met" } else { "NOT met" }
        ),
        None => String::new(),
    };
    println!(
        "  {label:<34} {:>9}  [{} .. {}]{verdict}",
        si(s.median),
        si(s.min),
        si(s.max)
    );
    let cpu: Option<Vec<(f64, f64)>> = runs
        .iter()
        .map(|r| r.cpu.map(|c| (r.units / c, c / r.wall)))
        .collect();
    if let Some(cpu) = cpu {
        let per_cpu: Vec<f64> = cpu.iter().map(|c| c.0).collect();
        let busy: Vec<f64> = cpu.iter().map(|c| c.1).collect();
        let (p, b) = (summarize(&per_cpu), summarize(&busy));
        println!(
            "  {:<34} {:>9}  [{} .. {}]   cores busy {:.2} [{:.2} .. {:.2}]",
            "  per CPU-second",
            si(p.median),
            si(p.min),
            si(p.max),
            b.median,
            b.min,
            b.max
        );
    }
}

#[allow(dead_code)]
pub fn report_plain(label: &str, values: &[f64]) {
    let s = summarize(values);
    println!(
        "  {label:<34} {:>9.1}  [{:.1} .. {:.1}]",
        s.median, s.min, s.max
    );
}

/// 1234567.0 -> "1.23 M".
pub fn si(v: f64) -> String {
    if v >= 1e6 {
        format!("{:.2} M", v / 1e6)
    } else if v >= 1e3 {
        format!("{:.1} k", v / 1e3)
    } else {
        format!("{v:.1}")
    }
}

/// Run `clients` on the current multi_thread runtime, each on a worker of its own when
/// its work begins; wait for all. Each client is a task that first takes a seat: it
/// writes its thread's id, and yields until every client's seat holds a different
/// thread (a yielded task goes back to its worker's queue and wakes an idle worker,
/// which steals it); every few tries it also sleeps its thread a moment, so that
/// where threads take turns (valgrind runs one at a time) the idle worker gets one.
/// Spawned from one task, the clients would otherwise start on that task's worker
/// and could stay there: both ran on one worker ("cores busy 1.00"). Returns whether
/// they met on distinct workers (false when the runtime has fewer workers than
/// clients: after `PATIENCE` they go on anyway).
#[allow(dead_code)]
pub async fn one_worker_each<Fut>(clients: Vec<Fut>) -> bool
where
    Fut: Future<Output = ()> + Send + 'static,
{
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::{Arc, Mutex};
    use std::thread::ThreadId;
    /// How long a client waits for a worker of its own.
    const PATIENCE: std::time::Duration = std::time::Duration::from_secs(2);
    /// Tries between two sleeps of a waiting client's thread.
    const TRIES_A_SLEEP: u32 = 8;
    let seats: Arc<Vec<Mutex<Option<ThreadId>>>> =
        Arc::new(clients.iter().map(|_| Mutex::new(None)).collect());
    let spread = Arc::new(AtomicBool::new(true));
    let tasks: Vec<_> = clients
        .into_iter()
        .enumerate()
        .map(|(i, body)| {
            let (seats, spread) = (seats.clone(), spread.clone());
            tokio::spawn(async move {
                let (mut tries, began) = (0, std::time::Instant::now());
                loop {
                    let me = std::thread::current().id();
                    *seats[i].lock().expect("a seat") = Some(me);
                    let taken: Vec<Option<ThreadId>> =
                        seats.iter().map(|s| *s.lock().expect("a seat")).collect();
                    let distinct = taken
                        .iter()
                        .enumerate()
                        .all(|(j, a)| a.is_some() && taken[..j].iter().all(|b| b != a));
                    if distinct {
                        break;
                    }
                    tries += 1;
                    if tries % TRIES_A_SLEEP == 0 {
                        if began.elapsed() > PATIENCE {
                            spread.store(false, Ordering::Relaxed);
                            break;
                        }
                        std::thread::sleep(std::time::Duration::from_micros(50));
                    }
                    tokio::task::yield_now().await;
                }
                body.await;
            })
        })
        .collect();
    for task in tasks {
        task.await.expect("a client task");
    }
    spread.load(Ordering::Relaxed)
}

/// `THRESH_BENCH_INSTANCES=n`: run each selected shape once, `n` instances, with no
/// warm-up and no figures — for counting its instructions
/// (`valgrind --tool=callgrind`) or its CPU time (`perf stat`) per instance, by the
/// difference of two counts (`benches/support/per_instance.sh`).
#[allow(dead_code)]
pub fn counted_instances() -> Option<u64> {
    let n = std::env::var("THRESH_BENCH_INSTANCES").ok()?;
    Some(
        n.parse()
            .expect("THRESH_BENCH_INSTANCES is a count of instances"),
    )
}

/// A rate per CPU-second as the headline (the engine's own cost, whatever else the
/// machine runs), then the rate against the wall clock and the cores kept busy.
#[allow(dead_code)]
pub fn report_per_cpu(label: &str, runs: &[Run]) {
    let cpu: Option<Vec<f64>> = runs.iter().map(|r| r.cpu.map(|c| r.units / c)).collect();
    match cpu {
        Some(per_cpu) => {
            let p = summarize(&per_cpu);
            println!(
                "  {label:<34} {:>9}  [{} .. {}]  per CPU-second",
                si(p.median),
                si(p.min),
                si(p.max)
            );
        }
        None => println!("  {label:<34} (no CPU time on this OS)"),
    }
    let wall: Vec<f64> = runs.iter().map(|r| r.units / r.wall).collect();
    let w = summarize(&wall);
    let busy: Option<Vec<f64>> = runs.iter().map(|r| r.cpu.map(|c| c / r.wall)).collect();
    let busy = busy.map_or(String::new(), |b| {
        let b = summarize(&b);
        format!(
            "   cores busy {:.2} [{:.2} .. {:.2}]",
            b.median, b.min, b.max
        )
    });
    println!(
        "  {:<34} {:>9}  [{} .. {}]{busy}",
        "  against the wall clock",
        si(w.median),
        si(w.min),
        si(w.max)
    );
}
