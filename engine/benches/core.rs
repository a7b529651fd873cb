//! Core throughput and latency benchmarks (ARCHITECTURE.md, "Performance"). No harness:
//! `main` builds tokio runtimes, times the engine and prints figures — and, side by side,
//! the same shapes on snurr (a synchronous BPMN interpreter, `core/snurr.rs`), with the
//! ratios at the end.
//!
//! ```text
//! cargo bench -p thresh --bench core                  # every benchmark
//! cargo bench -p thresh --bench core -- parallel10    # only the benchmark of that name
//! cargo bench -p thresh --bench core -- latency       # those whose name contains it
//! engine/benches/support/per_instance.sh core single 20000   # callgrind Ir and CPU per instance
//! ```
//!
//! `THRESH_BENCH_INSTANCES=n` makes `single`, `chain-2workers` and `parallel10` one
//! untimed run of `n` instances, to count (`support::counted_instances`). The
//! user-shaped counterpart of these shapes is `--bench service`.
//!
//! Every figure is the median of `RUNS` timed runs, after one untimed warm-up run,
//! printed with the minimum and maximum of the runs. Names: `chain`, `chain-retry` (the chain, a retry policy on every task), `chain-concurrent`,
//! `chain-2workers`, `single`, `single-latency`, `parallel10`, `parallel10-latency`, and
//! `snurr-chain`, `snurr-single`, `snurr-parallel10`, `multi-1k`, `multi-10k` (items per second of one
//! parallel multi-instance activity: equal figures mean linear), `multi-user-1k`,
//! `multi-user-10k`, `multi-receive-1k`, `multi-receive-10k`, `multi-timed-user-1k`,
//! `multi-timed-user-10k` (each user task with its own timer boundary) (completions or deliveries per
//! second to one of that many parked instances of a user or receive task: `core/waits.rs`),
//! `multi-call-1k`, `multi-call-10k` (children per second of a parallel multi-instance call). When both sides of a shape ran, the
//! last lines compare them: thresh on 2 workers, its instances started and awaited by
//! one client task per worker, each on a worker of its own (as a service's requests
//! arrive on every worker),
//! against snurr on one thread (the goal is a ratio >= 1), and per CPU-second.
//!
//! What is counted: a *node step* is one task run by the engine (the loop hands the
//! token to a track, the handler runs, the loop commits and routes on); the start,
//! end and gateways the token crosses on the way are not counted. An *instance* is
//! counted when its outcome (`Completed`, checked) has been observed by the caller.
//!
//! Throughput lines also give the rate per CPU-second and the cores kept busy, from
//! the process's CPU time (Linux: `/proc/self/task/*/schedstat`). On a shared machine
//! the wall-clock rate drops when other processes take the cores; the rate per
//! CPU-second shows the engine's own cost.

mod support;
use support::{
    counted_instances, one_worker_each, report_plain, report_rate, si, summarize, timed, Run,
};

#[path = "core/snurr.rs"]
mod snurr;

#[path = "core/waits.rs"]
mod waits;

use std::sync::Mutex;

use std::future::Future;
use std::time::{Duration, Instant};

use thresh::{process, Engine, InstanceHandle, Outcome, Process, ProcessData, TaskError};

/// Timed runs per figure.
const RUNS: usize = 7;

/// The workers of the multi-thread runtime, and the client tasks that start the
/// instances of a throughput figure set against snurr (one per worker).
const WORKERS: u64 = 2;

#[derive(Clone, Debug, Default, ProcessData)]
pub struct Nothing {
    pub n: u64,
}

async fn noop(_: &mut Nothing) -> Result<(), TaskError> {
    Ok(())
}

process! {
    /// start -> t1 -> ... -> t100 -> end: 100 node steps per instance.
    pub CHAIN: Nothing {
        start begin;
        end done;
        task t1 = noop; task t2 = noop; task t3 = noop; task t4 = noop; task t5 = noop;
        task t6 = noop; task t7 = noop; task t8 = noop; task t9 = noop; task t10 = noop;
        task t11 = noop; task t12 = noop; task t13 = noop; task t14 = noop; task t15 = noop;
        task t16 = noop; task t17 = noop; task t18 = noop; task t19 = noop; task t20 = noop;
        task t21 = noop; task t22 = noop; task t23 = noop; task t24 = noop; task t25 = noop;
        task t26 = noop; task t27 = noop; task t28 = noop; task t29 = noop; task t30 = noop;
        task t31 = noop; task t32 = noop; task t33 = noop; task t34 = noop; task t35 = noop;
        task t36 = noop; task t37 = noop; task t38 = noop; task t39 = noop; task t40 = noop;
        task t41 = noop; task t42 = noop; task t43 = noop; task t44 = noop; task t45 = noop;
        task t46 = noop; task t47 = noop; task t48 = noop; task t49 = noop; task t50 = noop;
        task t51 = noop; task t52 = noop; task t53 = noop; task t54 = noop; task t55 = noop;
        task t56 = noop; task t57 = noop; task t58 = noop; task t59 = noop; task t60 = noop;
        task t61 = noop; task t62 = noop; task t63 = noop; task t64 = noop; task t65 = noop;
        task t66 = noop; task t67 = noop; task t68 = noop; task t69 = noop; task t70 = noop;
        task t71 = noop; task t72 = noop; task t73 = noop; task t74 = noop; task t75 = noop;
        task t76 = noop; task t77 = noop; task t78 = noop; task t79 = noop; task t80 = noop;
        task t81 = noop; task t82 = noop; task t83 = noop; task t84 = noop; task t85 = noop;
        task t86 = noop; task t87 = noop; task t88 = noop; task t89 = noop; task t90 = noop;
        task t91 = noop; task t92 = noop; task t93 = noop; task t94 = noop; task t95 = noop;
        task t96 = noop; task t97 = noop; task t98 = noop; task t99 = noop; task t100 = noop;
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
    pub CHAIN_RETRY: Nothing {
        start begin;
        end done;
        task t1 = noop: retry(3, backoff = 1s) | timeout(30s); task t2 = noop: retry(3, backoff = 1s) | timeout(30s); task t3 = noop: retry(3, backoff = 1s) | timeout(30s); task t4 = noop: retry(3, backoff = 1s) | timeout(30s); task t5 = noop: retry(3, backoff = 1s) | timeout(30s);
        task t6 = noop: retry(3, backoff = 1s) | timeout(30s); task t7 = noop: retry(3, backoff = 1s) | timeout(30s); task t8 = noop: retry(3, backoff = 1s) | timeout(30s); task t9 = noop: retry(3, backoff = 1s) | timeout(30s); task t10 = noop: retry(3, backoff = 1s) | timeout(30s);
        task t11 = noop: retry(3, backoff = 1s) | timeout(30s); task t12 = noop: retry(3, backoff = 1s) | timeout(30s); task t13 = noop: retry(3, backoff = 1s) | timeout(30s); task t14 = noop: retry(3, backoff = 1s) | timeout(30s); task t15 = noop: retry(3, backoff = 1s) | timeout(30s);
        task t16 = noop: retry(3, backoff = 1s) | timeout(30s); task t17 = noop: retry(3, backoff = 1s) | timeout(30s); task t18 = noop: retry(3, backoff = 1s) | timeout(30s); task t19 = noop: retry(3, backoff = 1s) | timeout(30s); task t20 = noop: retry(3, backoff = 1s) | timeout(30s);
        task t21 = noop: retry(3, backoff = 1s) | timeout(30s); task t22 = noop: retry(3, backoff = 1s) | timeout(30s); task t23 = noop: retry(3, backoff = 1s) | timeout(30s); task t24 = noop: retry(3, backoff = 1s) | timeout(30s); task t25 = noop: retry(3, backoff = 1s) | timeout(30s);
        task t26 = noop: retry(3, backoff = 1s) | timeout(30s); task t27 = noop: retry(3, backoff = 1s) | timeout(30s); task t28 = noop: retry(3, backoff = 1s) | timeout(30s); task t29 = noop: retry(3, backoff = 1s) | timeout(30s); task t30 = noop: retry(3, backoff = 1s) | timeout(30s);
        task t31 = noop: retry(3, backoff = 1s) | timeout(30s); task t32 = noop: retry(3, backoff = 1s) | timeout(30s); task t33 = noop: retry(3, backoff = 1s) | timeout(30s); task t34 = noop: retry(3, backoff = 1s) | timeout(30s); task t35 = noop: retry(3, backoff = 1s) | timeout(30s);
        task t36 = noop: retry(3, backoff = 1s) | timeout(30s); task t37 = noop: retry(3, backoff = 1s) | timeout(30s); task t38 = noop: retry(3, backoff = 1s) | timeout(30s); task t39 = noop: retry(3, backoff = 1s) | timeout(30s); task t40 = noop: retry(3, backoff = 1s) | timeout(30s);
        task t41 = noop: retry(3, backoff = 1s) | timeout(30s); task t42 = noop: retry(3, backoff = 1s) | timeout(30s); task t43 = noop: retry(3, backoff = 1s) | timeout(30s); task t44 = noop: retry(3, backoff = 1s) | timeout(30s); task t45 = noop: retry(3, backoff = 1s) | timeout(30s);
        task t46 = noop: retry(3, backoff = 1s) | timeout(30s); task t47 = noop: retry(3, backoff = 1s) | timeout(30s); task t48 = noop: retry(3, backoff = 1s) | timeout(30s); task t49 = noop: retry(3, backoff = 1s) | timeout(30s); task t50 = noop: retry(3, backoff = 1s) | timeout(30s);
        task t51 = noop: retry(3, backoff = 1s) | timeout(30s); task t52 = noop: retry(3, backoff = 1s) | timeout(30s); task t53 = noop: retry(3, backoff = 1s) | timeout(30s); task t54 = noop: retry(3, backoff = 1s) | timeout(30s); task t55 = noop: retry(3, backoff = 1s) | timeout(30s);
        task t56 = noop: retry(3, backoff = 1s) | timeout(30s); task t57 = noop: retry(3, backoff = 1s) | timeout(30s); task t58 = noop: retry(3, backoff = 1s) | timeout(30s); task t59 = noop: retry(3, backoff = 1s) | timeout(30s); task t60 = noop: retry(3, backoff = 1s) | timeout(30s);
        task t61 = noop: retry(3, backoff = 1s) | timeout(30s); task t62 = noop: retry(3, backoff = 1s) | timeout(30s); task t63 = noop: retry(3, backoff = 1s) | timeout(30s); task t64 = noop: retry(3, backoff = 1s) | timeout(30s); task t65 = noop: retry(3, backoff = 1s) | timeout(30s);
        task t66 = noop: retry(3, backoff = 1s) | timeout(30s); task t67 = noop: retry(3, backoff = 1s) | timeout(30s); task t68 = noop: retry(3, backoff = 1s) | timeout(30s); task t69 = noop: retry(3, backoff = 1s) | timeout(30s); task t70 = noop: retry(3, backoff = 1s) | timeout(30s);
        task t71 = noop: retry(3, backoff = 1s) | timeout(30s); task t72 = noop: retry(3, backoff = 1s) | timeout(30s); task t73 = noop: retry(3, backoff = 1s) | timeout(30s); task t74 = noop: retry(3, backoff = 1s) | timeout(30s); task t75 = noop: retry(3, backoff = 1s) | timeout(30s);
        task t76 = noop: retry(3, backoff = 1s) | timeout(30s); task t77 = noop: retry(3, backoff = 1s) | timeout(30s); task t78 = noop: retry(3, backoff = 1s) | timeout(30s); task t79 = noop: retry(3, backoff = 1s) | timeout(30s); task t80 = noop: retry(3, backoff = 1s) | timeout(30s);
        task t81 = noop: retry(3, backoff = 1s) | timeout(30s); task t82 = noop: retry(3, backoff = 1s) | timeout(30s); task t83 = noop: retry(3, backoff = 1s) | timeout(30s); task t84 = noop: retry(3, backoff = 1s) | timeout(30s); task t85 = noop: retry(3, backoff = 1s) | timeout(30s);
        task t86 = noop: retry(3, backoff = 1s) | timeout(30s); task t87 = noop: retry(3, backoff = 1s) | timeout(30s); task t88 = noop: retry(3, backoff = 1s) | timeout(30s); task t89 = noop: retry(3, backoff = 1s) | timeout(30s); task t90 = noop: retry(3, backoff = 1s) | timeout(30s);
        task t91 = noop: retry(3, backoff = 1s) | timeout(30s); task t92 = noop: retry(3, backoff = 1s) | timeout(30s); task t93 = noop: retry(3, backoff = 1s) | timeout(30s); task t94 = noop: retry(3, backoff = 1s) | timeout(30s); task t95 = noop: retry(3, backoff = 1s) | timeout(30s);
        task t96 = noop: retry(3, backoff = 1s) | timeout(30s); task t97 = noop: retry(3, backoff = 1s) | timeout(30s); task t98 = noop: retry(3, backoff = 1s) | timeout(30s); task t99 = noop: retry(3, backoff = 1s) | timeout(30s); task t100 = noop: retry(3, backoff = 1s) | timeout(30s);
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
    /// The chain's 100 tasks in ten sub-processes of ten, one after another: what
    /// entering and leaving a scope costs, next to the flat chain.
    pub NESTED: Nothing {
        start begin;
        end done;
        subprocess sub1 {
            start s1;
            end e1;
            task n1_1 = noop; task n1_2 = noop; task n1_3 = noop; task n1_4 = noop; task n1_5 = noop; task n1_6 = noop; task n1_7 = noop; task n1_8 = noop; task n1_9 = noop; task n1_10 = noop;
            s1 -> n1_1 -> n1_2 -> n1_3 -> n1_4 -> n1_5 -> n1_6 -> n1_7 -> n1_8 -> n1_9 -> n1_10 -> e1;
        }
        subprocess sub2 {
            start s2;
            end e2;
            task n2_1 = noop; task n2_2 = noop; task n2_3 = noop; task n2_4 = noop; task n2_5 = noop; task n2_6 = noop; task n2_7 = noop; task n2_8 = noop; task n2_9 = noop; task n2_10 = noop;
            s2 -> n2_1 -> n2_2 -> n2_3 -> n2_4 -> n2_5 -> n2_6 -> n2_7 -> n2_8 -> n2_9 -> n2_10 -> e2;
        }
        subprocess sub3 {
            start s3;
            end e3;
            task n3_1 = noop; task n3_2 = noop; task n3_3 = noop; task n3_4 = noop; task n3_5 = noop; task n3_6 = noop; task n3_7 = noop; task n3_8 = noop; task n3_9 = noop; task n3_10 = noop;
            s3 -> n3_1 -> n3_2 -> n3_3 -> n3_4 -> n3_5 -> n3_6 -> n3_7 -> n3_8 -> n3_9 -> n3_10 -> e3;
        }
        subprocess sub4 {
            start s4;
            end e4;
            task n4_1 = noop; task n4_2 = noop; task n4_3 = noop; task n4_4 = noop; task n4_5 = noop; task n4_6 = noop; task n4_7 = noop; task n4_8 = noop; task n4_9 = noop; task n4_10 = noop;
            s4 -> n4_1 -> n4_2 -> n4_3 -> n4_4 -> n4_5 -> n4_6 -> n4_7 -> n4_8 -> n4_9 -> n4_10 -> e4;
        }
        subprocess sub5 {
            start s5;
            end e5;
            task n5_1 = noop; task n5_2 = noop; task n5_3 = noop; task n5_4 = noop; task n5_5 = noop; task n5_6 = noop; task n5_7 = noop; task n5_8 = noop; task n5_9 = noop; task n5_10 = noop;
            s5 -> n5_1 -> n5_2 -> n5_3 -> n5_4 -> n5_5 -> n5_6 -> n5_7 -> n5_8 -> n5_9 -> n5_10 -> e5;
        }
        subprocess sub6 {
            start s6;
            end e6;
            task n6_1 = noop; task n6_2 = noop; task n6_3 = noop; task n6_4 = noop; task n6_5 = noop; task n6_6 = noop; task n6_7 = noop; task n6_8 = noop; task n6_9 = noop; task n6_10 = noop;
            s6 -> n6_1 -> n6_2 -> n6_3 -> n6_4 -> n6_5 -> n6_6 -> n6_7 -> n6_8 -> n6_9 -> n6_10 -> e6;
        }
        subprocess sub7 {
            start s7;
            end e7;
            task n7_1 = noop; task n7_2 = noop; task n7_3 = noop; task n7_4 = noop; task n7_5 = noop; task n7_6 = noop; task n7_7 = noop; task n7_8 = noop; task n7_9 = noop; task n7_10 = noop;
            s7 -> n7_1 -> n7_2 -> n7_3 -> n7_4 -> n7_5 -> n7_6 -> n7_7 -> n7_8 -> n7_9 -> n7_10 -> e7;
        }
        subprocess sub8 {
            start s8;
            end e8;
            task n8_1 = noop; task n8_2 = noop; task n8_3 = noop; task n8_4 = noop; task n8_5 = noop; task n8_6 = noop; task n8_7 = noop; task n8_8 = noop; task n8_9 = noop; task n8_10 = noop;
            s8 -> n8_1 -> n8_2 -> n8_3 -> n8_4 -> n8_5 -> n8_6 -> n8_7 -> n8_8 -> n8_9 -> n8_10 -> e8;
        }
        subprocess sub9 {
            start s9;
            end e9;
            task n9_1 = noop; task n9_2 = noop; task n9_3 = noop; task n9_4 = noop; task n9_5 = noop; task n9_6 = noop; task n9_7 = noop; task n9_8 = noop; task n9_9 = noop; task n9_10 = noop;
            s9 -> n9_1 -> n9_2 -> n9_3 -> n9_4 -> n9_5 -> n9_6 -> n9_7 -> n9_8 -> n9_9 -> n9_10 -> e9;
        }
        subprocess sub10 {
            start s10;
            end e10;
            task n10_1 = noop; task n10_2 = noop; task n10_3 = noop; task n10_4 = noop; task n10_5 = noop; task n10_6 = noop; task n10_7 = noop; task n10_8 = noop; task n10_9 = noop; task n10_10 = noop;
            s10 -> n10_1 -> n10_2 -> n10_3 -> n10_4 -> n10_5 -> n10_6 -> n10_7 -> n10_8 -> n10_9 -> n10_10 -> e10;
        }
        begin -> sub1 -> sub2 -> sub3 -> sub4 -> sub5 -> sub6 -> sub7 -> sub8 -> sub9 -> sub10 -> done;
    }
}

process! {
    /// start -> task -> end.
    pub SINGLE: Nothing {
        start begin;
        task work = noop;
        end done;
        begin -> work -> done;
    }
}

process! {
    /// start -> AND split -> 10 tasks -> AND join -> end.
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

fn main() {
    keep_freed_memory();
    // `cargo bench` passes `--bench`; every other argument is a name filter.
    let filters: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with('-'))
        .collect();
    let benches: [(&str, fn()); 22] = [
        ("chain", chain_sequential),
        ("chain-retry", chain_retry),
        ("chain-nested", chain_nested),
        ("chain-concurrent", chain_concurrent),
        ("chain-2workers", chain_two_workers),
        ("single", single_throughput),
        ("single-latency", single_latency),
        ("parallel10", parallel10_throughput),
        ("parallel10-latency", parallel10_latency),
        ("snurr-chain", snurr_chain),
        ("snurr-single", snurr_single),
        ("snurr-parallel10", snurr_parallel10),
        ("multi-1k", multi_1k),
        ("multi-10k", multi_10k),
        ("multi-user-1k", waits::user_1k),
        ("multi-user-10k", waits::user_10k),
        ("multi-timed-user-1k", waits::timed_1k),
        ("multi-timed-user-10k", waits::timed_10k),
        ("multi-receive-1k", waits::receive_1k),
        ("multi-receive-10k", waits::receive_10k),
        ("multi-call-1k", waits::call_1k),
        ("multi-call-10k", waits::call_10k),
    ];
    // A filter that names a benchmark exactly selects only it; any other selects
    // every benchmark whose name contains it.
    let selected = |name: &str| {
        filters.is_empty()
            || filters.iter().any(|f| {
                name == f || (!benches.iter().any(|(n, _)| n == f) && name.contains(f.as_str()))
            })
    };
    println!("thresh core benchmarks: median of {RUNS} runs after a warm-up [min .. max]");
    println!("(a node step = one task run; start, end and gateways are not counted)");
    let began = Instant::now();
    let mut ran = 0;
    for (name, bench) in benches {
        if selected(name) {
            println!();
            bench();
            ran += 1;
        }
    }
    if ran == 0 {
        eprintln!("no benchmark matches {filters:?}");
        std::process::exit(2);
    }
    compare_with_snurr();
    println!(
        "\n{ran} benchmark(s) in {:.1} s",
        began.elapsed().as_secs_f64()
    );
}

// ----- the benchmarks -------------------------------------------------------------

/// Every instance's handler works on its own copy of the data, as any task does:
/// the items sit behind an `Arc` and the outputs are folded into a sum, so a copy
/// costs the same at 1k and 10k items and the figure is the engine's own scaling.
#[derive(Clone, Debug, Default, ProcessData)]
pub struct Batch {
    pub items: std::sync::Arc<Vec<u32>>,
    pub sum: u64,
    pub merged: u32,
}

/// One instance's work: waits once (so every instance is a track whose completion
/// comes back to the loop as its own input), returns its item doubled.
async fn double(_: &mut Batch, item: &u32, _index: usize) -> Result<u32, TaskError> {
    tokio::task::yield_now().await;
    Ok(item * 2)
}

process! {
    /// start -> a parallel multi-instance task over `items` -> end.
    pub MULTI: Batch {
        start begin;
        #[multi_instance(each = |b| b.items.to_vec(), output = |b, _i, v| { b.sum += u64::from(v); b.merged += 1; })]
        task each = double;
        end done;
        begin -> each -> done;
    }
}

/// (m) One parallel multi-instance activity of `items` instances: items per second.
/// Run at 1k and 10k: a linear engine gives the same rate at both.
fn multi(items: u32) {
    const RUNS_ITEMS: u64 = 100_000;
    let instances = (RUNS_ITEMS / u64::from(items)).max(1);
    println!(
        "multi-{}k: a parallel multi-instance task of {items} items (each awaits once), {instances} instance(s) one at a time, multi_thread runtime, 2 workers",
        items / 1000
    );
    let runs = on_two_workers(move |engine| async move {
        sample(|| {
            let engine = engine.clone();
            timed(instances * u64::from(items), async move {
                for _ in 0..instances {
                    let batch = Batch {
                        items: std::sync::Arc::new((0..items).collect()),
                        ..Batch::default()
                    };
                    let h = engine.start(&MULTI, batch).await.unwrap();
                    match h.outcome().await {
                        Outcome::Completed(b) => assert_eq!(b.merged, items),
                        other => panic!("not completed: {other:?}"),
                    }
                }
            })
        })
        .await
    });
    report_rate("items/s", &runs, None);
}

fn multi_1k() {
    multi(1_000);
}

fn multi_10k() {
    multi(10_000);
}

/// (a) The chain, one instance at a time, on one thread.
fn chain_sequential() {
    const INSTANCES: u64 = 1_000;
    println!(
        "chain: start -> 100 no-op tasks -> end, one instance at a time, current_thread runtime"
    );
    let runs = on_current_thread(|engine| async move {
        sample(|| {
            timed(INSTANCES * CHAIN_LEN, async {
                for _ in 0..INSTANCES {
                    completed(engine.start(&CHAIN, Nothing::default()).await.unwrap()).await;
                }
            })
        })
        .await
    });
    report_rate("node steps/s (1 core)", &runs, Some(1.5e6));
    report_per_step(&runs);
}

/// (a) with a retry policy and a timeout on every task, none failing: what a
/// policy costs a task that succeeds.
fn chain_retry() {
    const INSTANCES: u64 = 1_000;
    println!("chain-retry: the chain, each task `retry(3, backoff = 1s) | timeout(30s)`, one instance at a time, current_thread runtime");
    let runs = on_current_thread(|engine| async move {
        sample(|| {
            timed(INSTANCES * CHAIN_LEN, async {
                for _ in 0..INSTANCES {
                    completed(
                        engine
                            .start(&CHAIN_RETRY, Nothing::default())
                            .await
                            .unwrap(),
                    )
                    .await;
                }
            })
        })
        .await
    });
    report_rate("node steps/s (1 core)", &runs, Some(1.5e6));
    report_per_step(&runs);
}

/// (a'') The chain in ten sub-processes, one instance at a time, on one thread:
/// compare with (a) for the cost of a scope.
fn chain_nested() {
    const INSTANCES: u64 = 1_000;
    println!(
        "chain-nested: start -> 10 sub-processes of 10 no-op tasks each -> end, one instance at a time, current_thread runtime"
    );
    let runs = on_current_thread(|engine| async move {
        sample(|| {
            timed(INSTANCES * CHAIN_LEN, async {
                for _ in 0..INSTANCES {
                    completed(engine.start(&NESTED, Nothing::default()).await.unwrap()).await;
                }
            })
        })
        .await
    });
    report_rate("node steps/s (1 core)", &runs, None);
    report_per_step(&runs);
}

/// (a') The chain, many instances at once, on one thread.
fn chain_concurrent() {
    const INSTANCES: u64 = 1_000;
    println!(
        "chain-concurrent: the chain, {INSTANCES} instances started then all awaited, current_thread runtime"
    );
    let runs = on_current_thread(|engine| async move {
        sample(|| {
            timed(
                INSTANCES * CHAIN_LEN,
                start_and_await(&engine, &CHAIN, INSTANCES),
            )
        })
        .await
    });
    report_rate("node steps/s (1 core)", &runs, Some(1.5e6));
    report_per_step(&runs);
}

/// (a3) The chain, many instances at once, two workers with a client task each: the
/// figure set against snurr's one thread.
fn chain_two_workers() {
    let instances = counted_instances().unwrap_or(2_000);
    println!(
        "chain-2workers: the chain, {instances} instances started then all awaited by {WORKERS} client tasks, multi_thread runtime, {WORKERS} workers"
    );
    let runs = on_two_workers(move |engine| async move {
        sample(|| {
            timed(
                instances * CHAIN_LEN,
                start_and_await_from(WORKERS, &engine, &CHAIN, instances),
            )
        })
        .await
    });
    note_shared_clients();
    report_rate("node steps/s (2 workers)", &runs, None);
    record(Side::Thresh, "chain-100", "node steps/s", &runs);
}

/// (b) start -> task -> end, many instances at once, two workers with a client task
/// each.
fn single_throughput() {
    let instances = counted_instances().unwrap_or(100_000);
    println!(
        "single: start -> task -> end, {instances} instances started then all awaited by {WORKERS} client tasks, multi_thread runtime, {WORKERS} workers"
    );
    let runs = on_two_workers(move |engine| async move {
        sample(|| {
            timed(
                instances,
                start_and_await_from(WORKERS, &engine, &SINGLE, instances),
            )
        })
        .await
    });
    note_shared_clients();
    report_rate("instances/s (2 workers)", &runs, None);
    record(Side::Thresh, "single", "instances/s", &runs);
}

/// (b') start -> task -> end, one at a time: start-to-outcome latency.
fn single_latency() {
    const INSTANCES: usize = 10_000;
    println!(
        "single-latency: start -> task -> end, {INSTANCES} instances one at a time, multi_thread runtime, 2 workers"
    );
    latency(&SINGLE, INSTANCES);
}

/// (c) The parallel-10 shape, many instances at once, two workers with a client task
/// each.
fn parallel10_throughput() {
    let instances = counted_instances().unwrap_or(20_000);
    println!(
        "parallel10: start -> AND split -> 10 no-op tasks -> AND join -> end, {instances} instances started then all awaited by {WORKERS} client tasks, multi_thread runtime, {WORKERS} workers"
    );
    let runs = on_two_workers(move |engine| async move {
        sample(|| {
            timed(
                instances,
                start_and_await_from(WORKERS, &engine, &PARALLEL10, instances),
            )
        })
        .await
    });
    note_shared_clients();
    report_rate("instances/s (2 workers)", &runs, Some(1e5));
    record(Side::Thresh, "parallel-10", "instances/s", &runs);
    let steps: Vec<Run> = runs
        .iter()
        .map(|r| Run {
            units: r.units * 10.0,
            ..*r
        })
        .collect();
    report_rate("node steps/s (2 workers)", &steps, None);
}

/// (c') The parallel-10 shape, one at a time.
fn parallel10_latency() {
    const INSTANCES: usize = 2_000;
    println!(
        "parallel10-latency: the parallel-10 shape, {INSTANCES} instances one at a time, multi_thread runtime, 2 workers"
    );
    latency(&PARALLEL10, INSTANCES);
}

/// (s1) The chain on snurr, one instance after another on one thread.
fn snurr_chain() {
    const INSTANCES: u64 = 20_000;
    println!("snurr-chain: start -> 100 no-op tasks -> end on snurr, one thread");
    let process = snurr::chain("chain100", CHAIN_LEN as usize).build();
    let runs = sample_sync(|| snurr::run(&process, CHAIN_LEN, INSTANCES, INSTANCES * CHAIN_LEN));
    report_rate("node steps/s (1 thread)", &runs, None);
    record(Side::Snurr, "chain-100", "node steps/s", &runs);
}

/// (s2) start -> task -> end on snurr.
fn snurr_single() {
    const INSTANCES: u64 = 1_000_000;
    println!("snurr-single: start -> task -> end on snurr, one thread");
    let process = snurr::chain("single", 1).build();
    let runs = sample_sync(|| snurr::run(&process, 1, INSTANCES, INSTANCES));
    report_rate("instances/s (1 thread)", &runs, None);
    record(Side::Snurr, "single", "instances/s", &runs);
}

/// (s3) The parallel-10 shape on snurr (its default build runs the branches in turn).
fn snurr_parallel10() {
    const INSTANCES: u64 = 200_000;
    println!("snurr-parallel10: start -> AND split -> 10 no-op tasks -> AND join -> end on snurr, one thread");
    let process = snurr::parallel("parallel10", 10).build();
    let runs = sample_sync(|| snurr::run(&process, 10, INSTANCES, INSTANCES));
    report_rate("instances/s (1 thread)", &runs, None);
    record(Side::Snurr, "parallel-10", "instances/s", &runs);
}

// ----- thresh beside snurr --------------------------------------------------------

#[derive(Clone, Copy, PartialEq)]
enum Side {
    Thresh,
    Snurr,
}

/// A figure with a counterpart on the other side: (side, shape, unit, median rate
/// against the wall clock, median rate per CPU-second).
type Figure = (Side, &'static str, &'static str, f64, Option<f64>);

static FIGURES: Mutex<Vec<Figure>> = Mutex::new(Vec::new());

fn record(side: Side, shape: &'static str, unit: &'static str, runs: &[Run]) {
    let wall: Vec<f64> = runs.iter().map(|r| r.units / r.wall).collect();
    let cpu: Option<Vec<f64>> = runs.iter().map(|r| r.cpu.map(|c| r.units / c)).collect();
    let figure = (
        side,
        shape,
        unit,
        summarize(&wall).median,
        cpu.map(|c| summarize(&c).median),
    );
    FIGURES.lock().expect("figures").push(figure);
}

/// For each shape measured on both sides: thresh (2 workers) / snurr (1 thread),
/// against the wall clock and per CPU-second.
fn compare_with_snurr() {
    let figures = FIGURES.lock().expect("figures");
    let find = |side: Side, shape: &str| figures.iter().find(|f| f.0 == side && f.1 == shape);
    let mut header = false;
    for shape in ["single", "chain-100", "parallel-10"] {
        let (Some(t), Some(n)) = (find(Side::Thresh, shape), find(Side::Snurr, shape)) else {
            continue;
        };
        if !header {
            println!("\nthresh (2 workers) beside snurr (1 thread), medians; ratio = thresh / snurr (goal >= 1.00 against the wall clock)");
            header = true;
        }
        let per_cpu = match (t.4, n.4) {
            (Some(a), Some(b)) => format!("; per CPU-second {} vs {} = {:.2}", si(a), si(b), a / b),
            _ => String::new(),
        };
        println!(
            "  {shape:<12} {}: {} vs {} = {:.2}{per_cpu}",
            t.2,
            si(t.3),
            si(n.3),
            t.3 / n.3
        );
    }
}

// ----- helpers --------------------------------------------------------------------

/// Keep glibc from handing freed heap back to the kernel between samples. A sample
/// starts up to 100 000 instances and then drops them all: with the default trim
/// threshold the arena shrinks at each drop and every page is faulted in again at the
/// next sample (measured: 104 000 minor faults and 0.3 s of system time in
/// `--bench single`, a third of its run), so the figure was the kernel's, not the
/// engines'. Both engines run under it. A service with that burst pattern can do the
/// same (`GLIBC_TUNABLES=glibc.malloc.trim_threshold=...`) or use another allocator.
/// The same for the bench's own list of handles (40 bytes an instance, two megabytes
/// a client in `single`): past glibc's mmap threshold it was mapped afresh at every
/// sample and its pages faulted in (a thousand minor faults a `--bench single` run,
/// `perf stat -e minor-faults`), so it comes from the heap too.
fn keep_freed_memory() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        extern "C" {
            fn mallopt(param: std::ffi::c_int, value: std::ffi::c_int) -> std::ffi::c_int;
        }
        /// glibc's `M_TRIM_THRESHOLD` (malloc.h).
        const M_TRIM_THRESHOLD: std::ffi::c_int = -1;
        // SAFETY: `mallopt` is glibc's, called before any other thread exists, with a
        // documented parameter and a value in its range; it only sets a tunable.
        let set = unsafe { mallopt(M_TRIM_THRESHOLD, std::ffi::c_int::MAX) };
        if set != 1 {
            eprintln!("note: mallopt(M_TRIM_THRESHOLD) refused; figures include heap trimming");
        }
        /// glibc's `M_MMAP_THRESHOLD` (malloc.h); 32 MiB is its most.
        const M_MMAP_THRESHOLD: std::ffi::c_int = -3;
        // SAFETY: as above.
        let set = unsafe { mallopt(M_MMAP_THRESHOLD, 32 << 20) };
        if set != 1 {
            eprintln!(
                "note: mallopt(M_MMAP_THRESHOLD) refused; figures include mapping large blocks"
            );
        }
    }
}

/// One warm-up run, then `RUNS` timed runs, of synchronous work.
fn sample_sync(mut run: impl FnMut() -> Run) -> Vec<Run> {
    run();
    (0..RUNS).map(|_| run()).collect()
}

/// Start-to-outcome latency of `instances` instances run one after another; per run
/// the median and the 99th percentile.
fn latency(process: &'static Process<Nothing>, instances: usize) {
    let runs = on_two_workers(move |engine| async move {
        sample(|| async {
            let mut lat = Vec::with_capacity(instances);
            for _ in 0..instances {
                let t = Instant::now();
                completed(engine.start(process, Nothing::default()).await.unwrap()).await;
                lat.push(t.elapsed());
            }
            lat.sort_unstable();
            (lat[lat.len() / 2], lat[lat.len() * 99 / 100])
        })
        .await
    });
    let micros = |d: Duration| d.as_secs_f64() * 1e6;
    let medians: Vec<f64> = runs.iter().map(|r| micros(r.0)).collect();
    let p99s: Vec<f64> = runs.iter().map(|r| micros(r.1)).collect();
    report_plain("latency median (µs)", &medians);
    report_plain("latency p99 (µs)", &p99s);
}

/// One warm-up run, then `RUNS` timed runs; a counted run (`THRESH_BENCH_INSTANCES`)
/// is one run, not timed.
async fn sample<T, F, Fut>(mut run: F) -> Vec<T>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = T>,
{
    if counted_instances().is_some() {
        return vec![run().await];
    }
    run().await;
    let mut out = Vec::with_capacity(RUNS);
    for _ in 0..RUNS {
        out.push(run().await);
    }
    out
}

/// Start `n` instances of `process`, then await every outcome.
async fn start_and_await(engine: &Engine, process: &'static Process<Nothing>, n: u64) {
    let mut handles: Vec<_> = Vec::new();
    for _ in 0..n {
        handles.push(engine.start(process, Nothing::default()).await.unwrap());
    }
    for handle in handles {
        completed_ref(&handle).await;
    }
}

/// [`start_and_await`] from `clients` tasks at once, `n` instances in all: the load
/// of a service whose requests arrive on every worker. `Engine::start` runs an
/// instance's first step on its caller, so instances whose work is ready run on the
/// worker of the task that started them: from one task, one worker does all the work
/// however many the runtime has (the figure halves on two). So each client takes a
/// worker of its own before it starts (`support::one_worker_each`): spawned from the
/// driver's task, both had started on its worker and stayed there ("cores busy 1.00").
async fn start_and_await_from(
    clients: u64,
    engine: &Engine,
    process: &'static Process<Nothing>,
    n: u64,
) {
    let tasks: Vec<_> = (0..clients)
        .map(|c| {
            let engine = engine.clone();
            let share = n / clients + u64::from(c < n % clients);
            async move { start_and_await(&engine, process, share).await }
        })
        .collect();
    if !one_worker_each(tasks).await {
        CLIENTS_SHARED.store(true, std::sync::atomic::Ordering::Relaxed);
    }
}

/// Set when, in some run, the client tasks did not each get a worker of their own.
static CLIENTS_SHARED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Say so if, in some run of the last benchmark, the clients shared a worker.
fn note_shared_clients() {
    if CLIENTS_SHARED.swap(false, std::sync::atomic::Ordering::Relaxed) {
        println!("  (in some runs the client tasks shared a worker)");
    }
}

/// Await an instance and insist that it completed.
async fn completed(handle: InstanceHandle<Nothing>) {
    completed_ref(&handle).await
}

/// [`completed`], the handle borrowed: how this bench awaits its list of handles.
/// Moved into an async fn by value, a handle is copied with the future the await
/// makes of it, and the copy reads back, in wide loads, what was just written in
/// narrow ones — a store-forwarding stall per instance that is the harness's, not
/// the engine's. A user's plain `for handle in handles` loop is `--bench service`'s.
async fn completed_ref(handle: &InstanceHandle<Nothing>) {
    match handle.outcome().await {
        Outcome::Completed(_) => {}
        other => panic!("benchmark instance did not complete: {other:?}"),
    }
}

/// Run `bench` with a fresh engine on a current_thread runtime.
fn on_current_thread<T, F, Fut>(bench: F) -> T
where
    F: FnOnce(Engine) -> Fut,
    Fut: Future<Output = T>,
{
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .expect("a current_thread runtime");
    rt.block_on(async {
        let engine = Engine::new();
        let out = bench(engine.clone()).await;
        engine
            .shutdown(Duration::from_secs(10))
            .await
            .expect("engine shuts down");
        out
    })
}

/// Run `bench` with a fresh engine as a task on a 2-worker multi_thread runtime (the
/// driver runs on a worker too, so the benchmark uses two threads in all).
fn on_two_workers<T, F, Fut>(bench: F) -> T
where
    F: FnOnce(Engine) -> Fut + Send + 'static,
    Fut: Future<Output = T> + Send + 'static,
    T: Send + 'static,
{
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(WORKERS as usize)
        .enable_time()
        .build()
        .expect("a multi_thread runtime");
    rt.block_on(async {
        tokio::spawn(async {
            let engine = Engine::new();
            let out = bench(engine.clone()).await;
            engine
                .shutdown(Duration::from_secs(10))
                .await
                .expect("engine shuts down");
            out
        })
        .await
        .expect("benchmark task")
    })
}

// ----- printing -------------------------------------------------------------------

/// The wall time per node step implied by step rates.
fn report_per_step(runs: &[Run]) {
    let ns: Vec<f64> = runs.iter().map(|r| 1e9 * r.wall / r.units).collect();
    report_plain("ns per node step", &ns);
}
