//! Flow coverage across a test run: which elements and flows of each process the
//! instances took.

use std::collections::BTreeMap;
use std::fmt::Write;
use std::sync::Mutex;

use crate::{History, InstanceHandle, Process};

/// What the instances of one process took, summed over every history fed in.
#[derive(Clone, Debug)]
struct Taken {
    /// Node ids, like the process's nodes.
    nodes: Vec<&'static str>,
    /// `(source id, target id)`, like the process's flows.
    flows: Vec<(&'static str, &'static str)>,
    node_counts: Vec<usize>,
    flow_counts: Vec<usize>,
    instances: usize,
}

/// A flow-coverage collector for a test run. Feed it each instance's history (or
/// handle) with its process; it reports, per process, which **elements** (every
/// node of [`Process::nodes`], boundary events, event sub-processes and their
/// starts included) and which **flows** (every flow of [`Process::flows`]) were
/// taken, and fails a test below a threshold.
///
/// - An element is taken when a step of a history names it. An event sub-process
///   or a sub-process, whose own node records no step when only its inside runs,
///   counts as taken when an element inside it is.
/// - A flow `s -> t` is taken when, on one track of a history, a step at `s` is
///   followed by the next step at another node, `t` (a track forked at `s` — its
///   first step is `Spawned` there — begins at `s`). This is the reading
///   [`Process::to_svg_with`] draws: a gateway's `Routed { to }` shows as the
///   arrival of a track at each target. Steps at the same node (`TaskStarted`,
///   `Completed`) do not move a track.
///
/// The percentage is (elements taken + flows taken) / (elements + flows).
///
/// `Coverage::new` is `const`, so one collector can be a `static` that many tests
/// feed (tests run on several threads: it locks). The test harness has no "after
/// every test" hook, so check the threshold in a test that runs the scenarios it
/// counts (or after them in one test).
///
/// ```
/// # use thresh::{process, Engine, ProcessData};
/// # #[derive(Clone, Debug, Default, ProcessData)] pub struct Job { pub big: bool }
/// use thresh::testing::{expect_ended, Coverage};
/// process! {
///     pub JOB: Job {
///         start s; exclusive size; end small; end large;
///         s -> size; size -> large when |j| j.big; size -> small else;
///     }
/// }
/// static COVERAGE: Coverage = Coverage::new();
/// # #[tokio::main(flavor = "current_thread")] async fn main() {
/// let engine = Engine::new();
/// let handle = engine.start(&JOB, Job { big: false }).await.unwrap();
/// expect_ended(&handle).await;
/// COVERAGE.add(&JOB, &handle).await;
/// assert_eq!(COVERAGE.percent(&JOB), Some(100.0 * 5.0 / 7.0));
/// assert!(COVERAGE.report().contains("not taken: large; size -> large"));
/// # }
/// ```
#[derive(Debug, Default)]
pub struct Coverage {
    processes: Mutex<BTreeMap<&'static str, Taken>>,
}

impl Coverage {
    /// An empty collector.
    pub const fn new() -> Coverage {
        Coverage {
            processes: Mutex::new(BTreeMap::new()),
        }
    }

    fn with<T>(&self, f: impl FnOnce(&mut BTreeMap<&'static str, Taken>) -> T) -> T {
        // A test that panicked while holding the lock left the counts whole.
        let mut guard = self
            .processes
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        f(&mut guard)
    }

    /// Count one instance of `process` by its history.
    pub fn add_history<D>(&self, process: &Process<D>, history: &History) {
        let (node_counts, flow_counts) = crate::diagram::taken(process.graph(), history);
        self.with(|all| {
            let taken = all.entry(process.name()).or_insert_with(|| Taken {
                nodes: process.nodes().iter().map(|n| n.id()).collect(),
                flows: process
                    .flows()
                    .iter()
                    .map(|f| {
                        (
                            process.nodes()[f.source()].id(),
                            process.nodes()[f.target()].id(),
                        )
                    })
                    .collect(),
                node_counts: vec![0; process.nodes().len()],
                flow_counts: vec![0; process.flows().len()],
                instances: 0,
            });
            for (sum, n) in taken.node_counts.iter_mut().zip(node_counts) {
                *sum += n;
            }
            for (sum, n) in taken.flow_counts.iter_mut().zip(flow_counts) {
                *sum += n;
            }
            // Containers are taken when something inside them is.
            for (i, node) in process.nodes().iter().enumerate() {
                let mut scope = node.scope;
                while let Some(s) = scope {
                    if taken.node_counts[i] > 0 && taken.node_counts[s] == 0 {
                        taken.node_counts[s] = 1;
                    }
                    scope = process.nodes()[s].scope;
                }
            }
            taken.instances += 1;
        });
    }

    /// Count one instance of `process` by its handle (its history so far).
    pub async fn add<D: Clone>(&self, process: &Process<D>, handle: &InstanceHandle<D>) {
        let history = handle.history().await;
        self.add_history(process, &history);
    }

    /// The percentage of `process`'s elements and flows taken; `None` when no
    /// instance of it was counted.
    pub fn percent<D>(&self, process: &Process<D>) -> Option<f64> {
        self.with(|all| all.get(process.name()).map(percent))
    }

    /// The report, per process: instances counted, elements and flows taken, the
    /// percentage, and what was not taken.
    ///
    /// ```text
    /// ORDER: 3 instances, elements 12/12, flows 12/12, 100.0%
    /// JOB: 1 instance, elements 3/4, flows 2/3, 71.4%
    ///   not taken: large; size -> large
    /// ```
    pub fn report(&self) -> String {
        self.with(|all| {
            let mut s = String::new();
            for (name, taken) in all.iter() {
                line(&mut s, name, taken);
            }
            s
        })
    }

    /// The report of every element and flow of `process` with how often it was
    /// taken (`-` for never).
    pub fn detail<D>(&self, process: &Process<D>) -> String {
        self.with(|all| {
            let mut s = String::new();
            let Some(taken) = all.get(process.name()) else {
                let _ = writeln!(s, "{}: no instance counted", process.name());
                return s;
            };
            line(&mut s, process.name(), taken);
            for (node, &n) in taken.nodes.iter().zip(&taken.node_counts) {
                let _ = writeln!(s, "  {:>5}  {node}", count(n));
            }
            for ((from, to), &n) in taken.flows.iter().zip(&taken.flow_counts) {
                let _ = writeln!(s, "  {:>5}  {from} -> {to}", count(n));
            }
            s
        })
    }

    /// Fail the test when `process` was taken to less than `percent` %, listing what
    /// was not taken (and when no instance of it was counted at all).
    #[track_caller]
    pub fn assert_at_least<D>(&self, process: &Process<D>, percent: f64) {
        let verdict = self.with(|all| match all.get(process.name()) {
            None => Some(format!(
                "coverage of {}: no instance was counted",
                process.name()
            )),
            Some(taken) if self::percent(taken) + 1e-9 < percent => {
                let mut s = format!("coverage of {} is under {percent}%:\n", process.name());
                line(&mut s, process.name(), taken);
                Some(s)
            }
            Some(_) => None,
        });
        if let Some(message) = verdict {
            panic!("{message}");
        }
    }

    /// Fail the test when any process counted was taken to less than `percent` %.
    #[track_caller]
    pub fn assert_all_at_least(&self, percent: f64) {
        let under = self.with(|all| {
            let mut s = String::new();
            for (name, taken) in all.iter() {
                if self::percent(taken) + 1e-9 < percent {
                    line(&mut s, name, taken);
                }
            }
            s
        });
        if !under.is_empty() {
            panic!("coverage under {percent}%:\n{under}");
        }
    }

    /// `process` as an SVG ([`Process::to_svg_with`]'s drawing) with the elements
    /// and flows taken by the counted instances highlighted, each with how often;
    /// `None` when no instance of it was counted.
    pub fn to_svg<D>(&self, process: &Process<D>) -> Option<String> {
        let counts = self.with(|all| {
            all.get(process.name())
                .map(|t| (t.node_counts.clone(), t.flow_counts.clone()))
        })?;
        Some(crate::diagram::svg_with_counts(
            process.graph(),
            &counts.0,
            &counts.1,
        ))
    }
}

fn count(n: usize) -> String {
    if n == 0 {
        "-".into()
    } else {
        n.to_string()
    }
}

fn percent(taken: &Taken) -> f64 {
    let total = taken.nodes.len() + taken.flows.len();
    if total == 0 {
        return 100.0;
    }
    let hit = taken.node_counts.iter().filter(|&&n| n > 0).count()
        + taken.flow_counts.iter().filter(|&&n| n > 0).count();
    100.0 * hit as f64 / total as f64
}

fn line(s: &mut String, name: &str, taken: &Taken) {
    let nodes = taken.node_counts.iter().filter(|&&n| n > 0).count();
    let flows = taken.flow_counts.iter().filter(|&&n| n > 0).count();
    let _ = writeln!(
        s,
        "{name}: {} instance{}, elements {nodes}/{}, flows {flows}/{}, {:.1}%",
        taken.instances,
        if taken.instances == 1 { "" } else { "s" },
        taken.nodes.len(),
        taken.flows.len(),
        percent(taken)
    );
    let nodes: Vec<&str> = taken
        .nodes
        .iter()
        .zip(&taken.node_counts)
        .filter(|(_, &n)| n == 0)
        .map(|(id, _)| *id)
        .collect();
    let flows: Vec<String> = taken
        .flows
        .iter()
        .zip(&taken.flow_counts)
        .filter(|(_, &n)| n == 0)
        .map(|((from, to), _)| format!("{from} -> {to}"))
        .collect();
    let parts: Vec<String> = [nodes.join(", "), flows.join(", ")]
        .into_iter()
        .filter(|part| !part.is_empty())
        .collect();
    if !parts.is_empty() {
        let _ = writeln!(s, "  not taken: {}", parts.join("; "));
    }
}
