//! What the engine tells the [`metrics`](https://docs.rs/metrics) facade (feature
//! `metrics`): the application installs a recorder (a Prometheus exporter, say), and
//! without one every call here is a no-op. Without the feature none of this is
//! compiled. Names and labels (README, "Metrics"):
//!
//! - `thresh_instances_started_total{process}` — started here (not resumed);
//!   `thresh_instances_resumed_total{process}` — resumed from a checkpoint;
//! - `thresh_instances_ended_total{process, outcome}` — `completed`, `terminated`,
//!   `cancelled`, `failed`;
//! - `thresh_instance_duration_seconds{process, outcome}` — from its start (or
//!   resume) in this process to its end;
//! - `thresh_instances_running{process}` — loops running now;
//!   `thresh_instances_parked{process}` — of those, the ones whose every token waits
//!   (for a message, a timer, a user, a retry, a child);
//! - `thresh_user_task_duration_seconds{process, task}` — a user task's time on the
//!   task list, from opening to closing (completed, failed or withdrawn);
//! - `thresh_attempts_failed_total{process, node}`, `thresh_incidents_opened_total{process}`,
//!   `thresh_incidents_resolved_total{process}` — retries and incidents;
//! - `thresh_messages_expired_total`, `thresh_messages_dropped_total`,
//!   `thresh_messages_unknown_total`, `thresh_messages_mistyped_total` — the
//!   broker's losses;
//! - `thresh_store_commit_seconds`, `thresh_store_batch_submissions`,
//!   `thresh_store_failed_batches_total` — the store writer's group commits.

use std::time::Instant;

use metrics::{counter, gauge, histogram};

pub(crate) fn instance_started(process: &'static str, resumed: bool) {
    match resumed {
        true => counter!("thresh_instances_resumed_total", "process" => process).increment(1),
        false => counter!("thresh_instances_started_total", "process" => process).increment(1),
    }
    gauge!("thresh_instances_running", "process" => process).increment(1.0);
}

/// An idle durable instance left memory (feature `durable`): no longer running here.
#[cfg(feature = "durable")]
pub(crate) fn instance_evicted(process: &'static str) {
    counter!("thresh_instances_evicted_total", "process" => process).increment(1);
    gauge!("thresh_instances_running", "process" => process).decrement(1.0);
}

/// An evicted instance was loaded again (feature `durable`).
#[cfg(feature = "durable")]
pub(crate) fn instance_loaded(process: &'static str) {
    counter!("thresh_instances_loaded_total", "process" => process).increment(1);
    gauge!("thresh_instances_running", "process" => process).increment(1.0);
}

pub(crate) fn instance_ended(process: &'static str, outcome: &'static str, born: Instant) {
    counter!("thresh_instances_ended_total", "process" => process, "outcome" => outcome)
        .increment(1);
    histogram!("thresh_instance_duration_seconds", "process" => process, "outcome" => outcome)
        .record(born.elapsed().as_secs_f64());
    gauge!("thresh_instances_running", "process" => process).decrement(1.0);
}

pub(crate) fn parked(process: &'static str, parked: bool) {
    let gauge = gauge!("thresh_instances_parked", "process" => process);
    match parked {
        true => gauge.increment(1.0),
        false => gauge.decrement(1.0),
    }
}

pub(crate) fn user_task_closed(process: &str, task: &str, opened: std::time::SystemTime) {
    let open = opened.elapsed().unwrap_or_default();
    histogram!("thresh_user_task_duration_seconds", "process" => process.to_string(), "task" => task.to_string())
        .record(open.as_secs_f64());
}

pub(crate) fn attempt_failed(process: &'static str, node: &'static str) {
    counter!("thresh_attempts_failed_total", "process" => process, "node" => node).increment(1);
}

pub(crate) fn incident_opened(process: &'static str) {
    counter!("thresh_incidents_opened_total", "process" => process).increment(1);
}

pub(crate) fn incident_resolved(process: &'static str) {
    counter!("thresh_incidents_resolved_total", "process" => process).increment(1);
}

pub(crate) fn messages_lost(why: &'static str, n: u64) {
    if n > 0 {
        let name = match why {
            "expired" => "thresh_messages_expired_total",
            "dropped" => "thresh_messages_dropped_total",
            "mistyped" => "thresh_messages_mistyped_total",
            _ => "thresh_messages_unknown_total",
        };
        counter!(name).increment(n);
    }
}

/// A group commit of the store writer (feature `durable`).
#[cfg(feature = "durable")]
pub(crate) fn store_batch(submissions: usize, took: std::time::Duration, ok: bool) {
    histogram!("thresh_store_commit_seconds").record(took.as_secs_f64());
    histogram!("thresh_store_batch_submissions").record(submissions as f64);
    if !ok {
        counter!("thresh_store_failed_batches_total").increment(1);
    }
}
