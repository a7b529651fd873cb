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

/// A rate against the wall clock, with the design's target when there is one; then
/// the rate per CPU-second and the cores kept busy.
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
