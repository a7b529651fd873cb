//! The user-shaped bench: the core bench's shapes as a service runs them. Default
//! allocator and glibc settings (no `mallopt`), history on (the engine's default),
//! process data of a few fields (a `String` and some integers) whose handlers change
//! one field, and handles awaited by value in a plain `for` loop, the outcome's data
//! read. No harness: `main` builds a tokio runtime, times the engine and prints figures.
//!
//! ```text
//! cargo bench -p thresh --bench service                 # every shape
//! cargo bench -p thresh --bench service -- chain-100    # only that shape
//! THRESH_BENCH_INSTANCES=2000 target/release/deps/service-* --bench single   # one counted run
//! engine/benches/support/per_instance.sh service single 20000   # callgrind Ir and CPU per instance
//! ```
//!
//! Shapes: `single` (start -> task -> end), `chain-100` (start -> 100 tasks -> end),
//! `chain-100-retry` (the chain, a retry policy and timeout on every task, none
//! failing), `fail-once` (a task that fails once and is retried after 1 ms),
//! `parallel-10` (start -> AND split -> 10 tasks -> AND join -> end). Each figure is
//! the median of `RUNS` timed runs after one untimed warm-up run, printed with the
//! minimum and maximum of the runs. A run starts its instances from `CLIENTS` client
//! tasks on a multi_thread runtime of as many workers, each client on a worker of its
//! own (`support::one_worker_each`), and each client then awaits its handles one by
//! one. The headline is the rate per CPU-second (the process's CPU time, from
//! `/proc/self/task/*/schedstat`): on a shared machine the wall-clock rate is the
//! machine's, the rate per CPU-second the engine's. The wall-clock rate and the cores
//! kept busy follow.

mod support;
use support::{counted_instances, one_worker_each, report_per_cpu, timed, Run};

use std::time::{Duration, Instant};

use thresh::{process, Engine, Outcome, Process, ProcessData, TaskError};

/// Timed runs per figure.
const RUNS: usize = 7;

/// Client tasks, and the workers of the runtime (one each).
const CLIENTS: usize = 2;

/// An order, as a service's process data: a string and some numbers.
#[derive(Clone, Debug, Default, ProcessData)]
pub struct Order {
    pub id: u64,
    pub customer: String,
    pub amount: u64,
    pub lines: u32,
}

/// The order a request brings: its customer's name is the request's (a heap string).
fn order(id: u64) -> Order {
    Order {
        id,
        customer: String::from("ACME Industrial Supplies"),
        amount: 0,
        lines: 3,
    }
}

/// Every task's handler: changes one field of the data.
async fn bump(order: &mut Order) -> Result<(), TaskError> {
    order.amount += 1;
    Ok(())
}

/// Fails its first attempt, then bumps: a network blip, healed by a retry.
async fn blip_once(order: &mut Order) -> Result<(), TaskError> {
    match thresh::task::current().map_or(1, |run| run.attempt) {
        1 => Err(TaskError::new("blip")),
        _ => bump(order).await,
    }
}

process! {
    /// start -> a task that fails once and is retried after 1 ms -> end.
    pub FAIL_ONCE: Order {
        start begin;
        task work = blip_once: retry(2, backoff = 1ms);
        end done;
        begin -> work -> done;
    }
}

process! {
    /// start -> task -> end.
    pub SINGLE: Order {
        start begin;
        task work = bump;
        end done;
        begin -> work -> done;
    }
}

process! {
    /// start -> t1 -> ... -> t100 -> end: 100 node steps per instance.
    pub CHAIN: Order {
        start begin;
        end done;
        task t1 = bump; task t2 = bump; task t3 = bump; task t4 = bump; task t5 = bump;
        task t6 = bump; task t7 = bump; task t8 = bump; task t9 = bump; task t10 = bump;
        task t11 = bump; task t12 = bump; task t13 = bump; task t14 = bump; task t15 = bump;
        task t16 = bump; task t17 = bump; task t18 = bump; task t19 = bump; task t20 = bump;
        task t21 = bump; task t22 = bump; task t23 = bump; task t24 = bump; task t25 = bump;
        task t26 = bump; task t27 = bump; task t28 = bump; task t29 = bump; task t30 = bump;
        task t31 = bump; task t32 = bump; task t33 = bump; task t34 = bump; task t35 = bump;
        task t36 = bump; task t37 = bump; task t38 = bump; task t39 = bump; task t40 = bump;
        task t41 = bump; task t42 = bump; task t43 = bump; task t44 = bump; task t45 = bump;
        task t46 = bump; task t47 = bump; task t48 = bump; task t49 = bump; task t50 = bump;
        task t51 = bump; task t52 = bump; task t53 = bump; task t54 = bump; task t55 = bump;
        task t56 = bump; task t57 = bump; task t58 = bump; task t59 = bump; task t60 = bump;
        task t61 = bump; task t62 = bump; task t63 = bump; task t64 = bump; task t65 = bump;
        task t66 = bump; task t67 = bump; task t68 = bump; task t69 = bump; task t70 = bump;
        task t71 = bump; task t72 = bump; task t73 = bump; task t74 = bump; task t75 = bump;
        task t76 = bump; task t77 = bump; task t78 = bump; task t79 = bump; task t80 = bump;
        task t81 = bump; task t82 = bump; task t83 = bump; task t84 = bump; task t85 = bump;
        task t86 = bump; task t87 = bump; task t88 = bump; task t89 = bump; task t90 = bump;
        task t91 = bump; task t92 = bump; task t93 = bump; task t94 = bump; task t95 = bump;
        task t96 = bump; task t97 = bump; task t98 = bump; task t99 = bump; task t100 = bump;
        begin -> t1 -> t2 -> t3 -> t4 -> t5 -> t6 -> t7 -> t8 -> t9 -> t10 -> t11 -> t12 ->
            t13 -> t14 -> t15 -> t16 -> t17 -> t18 -> t19 -> t20 -> t21 -> t22 -> t23 -> t24 ->
            t25 -> t26 -> t27 -> t28 -> t29 -> t30 -> t31 -> t32 -> t33 -> t34 -> t35 -> t36 ->
            t37 -> t38 -> t39 -> t40 -> t41 -> t42 -> t43 -> t44 -> t45 -> t46 -> t47 -> t48 ->
            t49 -> t50 -> t51 -> t52 -> t53 -> t54 -> t55 -> t56 -> t57 -> t58 -> t59 -> t60 ->
            t61 -> t62 -> t63 -> t64 -> t65 -> t66 -> t67 -> t68 -> t69 -> t70 -> t71 -> t72 ->
            t73 -> t74 -> t75 -> t76 -> t77 -> t78 -> t79 -> t80 -> t81 -> t82 -> t83 -> t84 ->
            t85 -> t86 -> t87 -> t88 -> t89 -> t90 -> t91 -> t92 -> t93 -> t94 -> t95 -> t96 ->
            t97 -> t98 -> t99 -> t100 -> done;
    }
}

process! {
    /// `CHAIN` with a retry policy and a timeout on every task (none ever fails).
    pub CHAIN_RETRY: Order {
        start begin;
        end done;
        task t1 = bump: retry(3, backoff = 1s) | timeout(30s); task t2 = bump: retry(3, backoff = 1s) | timeout(30s); task t3 = bump: retry(3, backoff = 1s) | timeout(30s); task t4 = bump: retry(3, backoff = 1s) | timeout(30s); task t5 = bump: retry(3, backoff = 1s) | timeout(30s);
        task t6 = bump: retry(3, backoff = 1s) | timeout(30s); task t7 = bump: retry(3, backoff = 1s) | timeout(30s); task t8 = bump: retry(3, backoff = 1s) | timeout(30s); task t9 = bump: retry(3, backoff = 1s) | timeout(30s); task t10 = bump: retry(3, backoff = 1s) | timeout(30s);
        task t11 = bump: retry(3, backoff = 1s) | timeout(30s); task t12 = bump: retry(3, backoff = 1s) | timeout(30s); task t13 = bump: retry(3, backoff = 1s) | timeout(30s); task t14 = bump: retry(3, backoff = 1s) | timeout(30s); task t15 = bump: retry(3, backoff = 1s) | timeout(30s);
        task t16 = bump: retry(3, backoff = 1s) | timeout(30s); task t17 = bump: retry(3, backoff = 1s) | timeout(30s); task t18 = bump: retry(3, backoff = 1s) | timeout(30s); task t19 = bump: retry(3, backoff = 1s) | timeout(30s); task t20 = bump: retry(3, backoff = 1s) | timeout(30s);
        task t21 = bump: retry(3, backoff = 1s) | timeout(30s); task t22 = bump: retry(3, backoff = 1s) | timeout(30s); task t23 = bump: retry(3, backoff = 1s) | timeout(30s); task t24 = bump: retry(3, backoff = 1s) | timeout(30s); task t25 = bump: retry(3, backoff = 1s) | timeout(30s);
        task t26 = bump: retry(3, backoff = 1s) | timeout(30s); task t27 = bump: retry(3, backoff = 1s) | timeout(30s); task t28 = bump: retry(3, backoff = 1s) | timeout(30s); task t29 = bump: retry(3, backoff = 1s) | timeout(30s); task t30 = bump: retry(3, backoff = 1s) | timeout(30s);
        task t31 = bump: retry(3, backoff = 1s) | timeout(30s); task t32 = bump: retry(3, backoff = 1s) | timeout(30s); task t33 = bump: retry(3, backoff = 1s) | timeout(30s); task t34 = bump: retry(3, backoff = 1s) | timeout(30s); task t35 = bump: retry(3, backoff = 1s) | timeout(30s);
        task t36 = bump: retry(3, backoff = 1s) | timeout(30s); task t37 = bump: retry(3, backoff = 1s) | timeout(30s); task t38 = bump: retry(3, backoff = 1s) | timeout(30s); task t39 = bump: retry(3, backoff = 1s) | timeout(30s); task t40 = bump: retry(3, backoff = 1s) | timeout(30s);
        task t41 = bump: retry(3, backoff = 1s) | timeout(30s); task t42 = bump: retry(3, backoff = 1s) | timeout(30s); task t43 = bump: retry(3, backoff = 1s) | timeout(30s); task t44 = bump: retry(3, backoff = 1s) | timeout(30s); task t45 = bump: retry(3, backoff = 1s) | timeout(30s);
        task t46 = bump: retry(3, backoff = 1s) | timeout(30s); task t47 = bump: retry(3, backoff = 1s) | timeout(30s); task t48 = bump: retry(3, backoff = 1s) | timeout(30s); task t49 = bump: retry(3, backoff = 1s) | timeout(30s); task t50 = bump: retry(3, backoff = 1s) | timeout(30s);
        task t51 = bump: retry(3, backoff = 1s) | timeout(30s); task t52 = bump: retry(3, backoff = 1s) | timeout(30s); task t53 = bump: retry(3, backoff = 1s) | timeout(30s); task t54 = bump: retry(3, backoff = 1s) | timeout(30s); task t55 = bump: retry(3, backoff = 1s) | timeout(30s);
        task t56 = bump: retry(3, backoff = 1s) | timeout(30s); task t57 = bump: retry(3, backoff = 1s) | timeout(30s); task t58 = bump: retry(3, backoff = 1s) | timeout(30s); task t59 = bump: retry(3, backoff = 1s) | timeout(30s); task t60 = bump: retry(3, backoff = 1s) | timeout(30s);
        task t61 = bump: retry(3, backoff = 1s) | timeout(30s); task t62 = bump: retry(3, backoff = 1s) | timeout(30s); task t63 = bump: retry(3, backoff = 1s) | timeout(30s); task t64 = bump: retry(3, backoff = 1s) | timeout(30s); task t65 = bump: retry(3, backoff = 1s) | timeout(30s);
        task t66 = bump: retry(3, backoff = 1s) | timeout(30s); task t67 = bump: retry(3, backoff = 1s) | timeout(30s); task t68 = bump: retry(3, backoff = 1s) | timeout(30s); task t69 = bump: retry(3, backoff = 1s) | timeout(30s); task t70 = bump: retry(3, backoff = 1s) | timeout(30s);
        task t71 = bump: retry(3, backoff = 1s) | timeout(30s); task t72 = bump: retry(3, backoff = 1s) | timeout(30s); task t73 = bump: retry(3, backoff = 1s) | timeout(30s); task t74 = bump: retry(3, backoff = 1s) | timeout(30s); task t75 = bump: retry(3, backoff = 1s) | timeout(30s);
        task t76 = bump: retry(3, backoff = 1s) | timeout(30s); task t77 = bump: retry(3, backoff = 1s) | timeout(30s); task t78 = bump: retry(3, backoff = 1s) | timeout(30s); task t79 = bump: retry(3, backoff = 1s) | timeout(30s); task t80 = bump: retry(3, backoff = 1s) | timeout(30s);
        task t81 = bump: retry(3, backoff = 1s) | timeout(30s); task t82 = bump: retry(3, backoff = 1s) | timeout(30s); task t83 = bump: retry(3, backoff = 1s) | timeout(30s); task t84 = bump: retry(3, backoff = 1s) | timeout(30s); task t85 = bump: retry(3, backoff = 1s) | timeout(30s);
        task t86 = bump: retry(3, backoff = 1s) | timeout(30s); task t87 = bump: retry(3, backoff = 1s) | timeout(30s); task t88 = bump: retry(3, backoff = 1s) | timeout(30s); task t89 = bump: retry(3, backoff = 1s) | timeout(30s); task t90 = bump: retry(3, backoff = 1s) | timeout(30s);
        task t91 = bump: retry(3, backoff = 1s) | timeout(30s); task t92 = bump: retry(3, backoff = 1s) | timeout(30s); task t93 = bump: retry(3, backoff = 1s) | timeout(30s); task t94 = bump: retry(3, backoff = 1s) | timeout(30s); task t95 = bump: retry(3, backoff = 1s) | timeout(30s);
        task t96 = bump: retry(3, backoff = 1s) | timeout(30s); task t97 = bump: retry(3, backoff = 1s) | timeout(30s); task t98 = bump: retry(3, backoff = 1s) | timeout(30s); task t99 = bump: retry(3, backoff = 1s) | timeout(30s); task t100 = bump: retry(3, backoff = 1s) | timeout(30s);
        begin -> t1 -> t2 -> t3 -> t4 -> t5 -> t6 -> t7 -> t8 -> t9 -> t10 -> t11 -> t12 ->
            t13 -> t14 -> t15 -> t16 -> t17 -> t18 -> t19 -> t20 -> t21 -> t22 -> t23 -> t24 ->
            t25 -> t26 -> t27 -> t28 -> t29 -> t30 -> t31 -> t32 -> t33 -> t34 -> t35 -> t36 ->
            t37 -> t38 -> t39 -> t40 -> t41 -> t42 -> t43 -> t44 -> t45 -> t46 -> t47 -> t48 ->
            t49 -> t50 -> t51 -> t52 -> t53 -> t54 -> t55 -> t56 -> t57 -> t58 -> t59 -> t60 ->
            t61 -> t62 -> t63 -> t64 -> t65 -> t66 -> t67 -> t68 -> t69 -> t70 -> t71 -> t72 ->
            t73 -> t74 -> t75 -> t76 -> t77 -> t78 -> t79 -> t80 -> t81 -> t82 -> t83 -> t84 ->
            t85 -> t86 -> t87 -> t88 -> t89 -> t90 -> t91 -> t92 -> t93 -> t94 -> t95 -> t96 ->
            t97 -> t98 -> t99 -> t100 -> done;
    }
}

/// Tasks per instance of `CHAIN`.
const CHAIN_LEN: u64 = 100;

process! {
    /// start -> AND split -> 10 tasks -> AND join -> end.
    pub PARALLEL10: Order {
        start begin;
        parallel fork;
        parallel join;
        end done;
        task p1 = bump; task p2 = bump; task p3 = bump; task p4 = bump; task p5 = bump;
        task p6 = bump; task p7 = bump; task p8 = bump; task p9 = bump; task p10 = bump;
        begin -> fork -> p1, p2, p3, p4, p5, p6, p7, p8, p9, p10 -> join -> done;
    }
}

/// A shape: its name, process, instances per run, node steps per instance, and what
/// the completed data must say.
struct Shape {
    name: &'static str,
    process: &'static Process<Order>,
    instances: u64,
    steps: u64,
    check: fn(&Order) -> bool,
}

const SHAPES: [Shape; 5] = [
    Shape {
        name: "single",
        process: &SINGLE,
        instances: 100_000,
        steps: 1,
        check: |o| o.amount == 1,
    },
    Shape {
        name: "chain-100",
        process: &CHAIN,
        instances: 2_000,
        steps: CHAIN_LEN,
        check: |o| o.amount == CHAIN_LEN,
    },
    Shape {
        name: "chain-100-retry",
        process: &CHAIN_RETRY,
        instances: 2_000,
        steps: CHAIN_LEN,
        check: |o| o.amount == CHAIN_LEN,
    },
    Shape {
        name: "fail-once",
        process: &FAIL_ONCE,
        instances: 10_000,
        steps: 1,
        check: |o| o.amount == 1,
    },
    Shape {
        name: "parallel-10",
        process: &PARALLEL10,
        instances: 20_000,
        steps: 10,
        // Ten copies of the same base, each changing `amount`: the later commit wins.
        check: |o| o.amount >= 1,
    },
];

fn main() {
    // `cargo bench` passes `--bench`; every other argument is a name filter.
    let filters: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with('-'))
        .collect();
    let selected = |name: &str| {
        filters.is_empty()
            || filters.iter().any(|f| {
                name == f || (!SHAPES.iter().any(|s| s.name == f) && name.contains(f.as_str()))
            })
    };
    let shapes: Vec<&Shape> = SHAPES.iter().filter(|s| selected(s.name)).collect();
    if shapes.is_empty() {
        eprintln!("no shape matches {filters:?}");
        std::process::exit(2);
    }
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(CLIENTS)
        .enable_time()
        .build()
        .expect("a multi_thread runtime");
    if let Some(n) = counted_instances() {
        for shape in shapes {
            rt.block_on(async {
                tokio::spawn(async move {
                    let engine = Engine::new();
                    let spread = run(&engine, shape, n).await;
                    engine
                        .shutdown(Duration::from_secs(10))
                        .await
                        .expect("shutdown");
                    println!(
                        "{}: {n} instances, clients on distinct workers: {spread}",
                        shape.name
                    );
                })
                .await
                .expect("the counted run")
            });
        }
        return;
    }
    println!("thresh service benchmarks: data that handlers change, history on, default allocator settings");
    println!("{CLIENTS} client tasks, one a worker, on a multi_thread runtime of {CLIENTS} workers; median of {RUNS} runs after a warm-up [min .. max]");
    let began = Instant::now();
    for shape in shapes {
        println!(
            "\n{}: {} instances started then awaited in a for loop, {} node step(s) each",
            shape.name, shape.instances, shape.steps
        );
        let runs: Vec<(Run, bool)> = rt.block_on(async {
            tokio::spawn(async move {
                let engine = Engine::new();
                let mut runs = Vec::with_capacity(RUNS);
                for i in 0..=RUNS {
                    let mut spread = true;
                    let figure = timed(shape.instances, async {
                        spread = run(&engine, shape, shape.instances).await;
                    })
                    .await;
                    if i > 0 {
                        runs.push((figure, spread));
                    }
                }
                engine
                    .shutdown(Duration::from_secs(10))
                    .await
                    .expect("shutdown");
                runs
            })
            .await
            .expect("the benchmark task")
        });
        if runs.iter().any(|(_, spread)| !spread) {
            println!("  (in some runs the clients shared a worker)");
        }
        let runs: Vec<Run> = runs.into_iter().map(|(r, _)| r).collect();
        report_per_cpu("instances/s", &runs);
        if shape.steps > 1 {
            let steps: Vec<Run> = runs
                .iter()
                .map(|r| Run {
                    units: r.units * shape.steps as f64,
                    ..*r
                })
                .collect();
            report_per_cpu("node steps/s", &steps);
        }
    }
    println!("\nin {:.1} s", began.elapsed().as_secs_f64());
}

/// Start `n` instances of `shape` from `CLIENTS` client tasks, each on a worker of its
/// own, and await them; returns whether the clients were on distinct workers.
async fn run(engine: &Engine, shape: &'static Shape, n: u64) -> bool {
    let clients = (0..CLIENTS as u64)
        .map(|c| {
            let engine = engine.clone();
            let share = n / CLIENTS as u64 + u64::from(c < n % CLIENTS as u64);
            client(engine, shape, c * n, share)
        })
        .collect();
    one_worker_each(clients).await
}

/// One client: starts `n` instances, keeping their handles, then awaits each in turn
/// and reads its data, as a service answers its requests.
async fn client(engine: Engine, shape: &'static Shape, first_id: u64, n: u64) {
    let mut handles = Vec::with_capacity(n as usize);
    for id in first_id..first_id + n {
        handles.push(engine.start(shape.process, order(id)).await.unwrap());
    }
    for handle in handles {
        match handle.outcome().await {
            Outcome::Completed(order) => {
                assert!((shape.check)(&order), "{}: {order:?}", shape.name)
            }
            other => panic!("{}: an instance did not complete: {other:?}", shape.name),
        }
    }
}
