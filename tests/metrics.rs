//! The engine's metrics (feature `metrics`), read back from a recorder that keeps
//! them: instances started, ended by outcome, running and parked; user tasks' time
//! on the task list; failed attempts and
//! incidents opened and resolved; the broker's expired messages; the store writer's
//! commits. `cargo test --features metrics --test metrics`.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use metrics_util::debugging::{DebugValue, DebuggingRecorder};
use metrics_util::CompositeKey;
use thresh::{process, BrokerConfig, DurableEngine, Engine, EngineConfig, ProcessData, TaskError};

#[derive(Clone, Debug, Default, PartialEq, ProcessData, serde::Serialize, serde::Deserialize)]
pub struct Job {
    pub id: String,
    pub done: u32,
}

static SERVICE_UP: AtomicBool = AtomicBool::new(false);

async fn work(job: &mut Job) -> Result<(), TaskError> {
    match SERVICE_UP.load(Ordering::SeqCst) {
        true => {
            job.done += 1;
            Ok(())
        }
        false => Err(TaskError::permanent("service down")),
    }
}

process! {
    WORK: Job {
        start s;
        task  work = work;
        end   e;
        s -> work -> e;
    }
    WAIT: Job {
        start s;
        user  approve;
        end   e;
        s -> approve -> e;
    }
    PAY: Job {
        start s;
        receive pay: message("pay", key = |j| j.id.clone());
        end   e;
        s -> pay -> e;
    }
    SIGN: Job {
        start s;
        user  sign;
        end   e;
        s -> sign -> e;
    }
}

/// What the recorder was told, read once at the end (a snapshot drains what it
/// reads): each metric's key and value.
type Seen = Vec<(CompositeKey, DebugValue)>;

fn matches(key: &CompositeKey, name: &str, labels: &[(&str, &str)]) -> bool {
    let key = key.key();
    key.name() == name
        && labels
            .iter()
            .all(|(k, v)| key.labels().any(|l| l.key() == *k && l.value() == *v))
}

/// The metric `name` with `labels` (among others) over every snapshot: each
/// drains what it reads, so a counter's or a gauge's changes add up across them.
fn values<'s>(
    seen: &'s Seen,
    name: &'s str,
    labels: &'s [(&str, &str)],
) -> impl Iterator<Item = &'s DebugValue> {
    seen.iter()
        .filter(move |(key, _)| matches(key, name, labels))
        .map(|(_, value)| value)
}

fn counter(seen: &Seen, name: &str, labels: &[(&str, &str)]) -> u64 {
    values(seen, name, labels)
        .map(|value| match value {
            DebugValue::Counter(n) => *n,
            other => panic!("{name} is no counter: {other:?}"),
        })
        .sum()
}

fn gauge(seen: &Seen, name: &str, labels: &[(&str, &str)]) -> f64 {
    values(seen, name, labels)
        .map(|value| match value {
            DebugValue::Gauge(g) => g.into_inner(),
            other => panic!("{name} is no gauge: {other:?}"),
        })
        .sum()
}

/// How many values the histogram `name` with `labels` was given, over every
/// snapshot (each drains what it reads).
fn histogram_len(seen: &Seen, name: &str, labels: &[(&str, &str)]) -> usize {
    values(seen, name, labels)
        .map(|value| match value {
            DebugValue::Histogram(values) => values.len(),
            other => panic!("{name} is no histogram: {other:?}"),
        })
        .sum()
}

#[test]
fn the_engine_reports_instances_incidents_messages_and_commits() {
    let recorder = DebuggingRecorder::new();
    let snapshotter = recorder.snapshotter();
    recorder
        .install()
        .expect("the only recorder of this test binary");
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    let read = || -> Seen {
        snapshotter
            .snapshot()
            .into_vec()
            .into_iter()
            .map(|(key, _, _, value)| (key, value))
            .collect()
    };
    let mut seen: Seen = Vec::new();
    runtime.block_on(async {
        let engine = Engine::with_config(EngineConfig {
            broker: BrokerConfig {
                ttl: Duration::from_millis(1),
                ..BrokerConfig::default()
            },
            ..EngineConfig::default()
        });
        // An incident, retried once the service is back: completed.
        let job = engine.start(&WORK, Job::default()).await.unwrap();
        let incident = loop {
            if let Some(incident) = engine.incidents().await.unwrap().pop() {
                break incident;
            }
            tokio::time::sleep(Duration::from_millis(1)).await;
        };
        SERVICE_UP.store(true, Ordering::SeqCst);
        engine.retry(incident.id).await.expect("retried");
        assert!(job.outcome().await.completed().is_some());
        // A cancelled one.
        let waiting = engine.start(&WAIT, Job::default()).await.unwrap();
        waiting.cancel();
        let _ = waiting.outcome().await;
        // Two waiting at a user task: parked while they wait; one completed, one
        // cancelled, each task's time on the list is recorded as it closes.
        let a = engine.start(&WAIT, Job::default()).await.unwrap();
        let b = engine.start(&WAIT, Job::default()).await.unwrap();
        let wait = [("process", "WAIT")];
        tokio::time::timeout(Duration::from_secs(10), async {
            loop {
                seen.extend(read());
                if gauge(&seen, "thresh_instances_parked", &wait) == 2.0 {
                    break;
                }
                tokio::time::sleep(Duration::from_millis(1)).await;
            }
        })
        .await
        .expect("both parked");
        let tasks = engine.tasks(&thresh::TaskQuery::new()).await.unwrap();
        let task = tasks.iter().find(|t| t.id.instance == a.id()).unwrap().id;
        engine.complete_task(&WAIT, task, |_| {}).await.unwrap();
        assert!(a.outcome().await.completed().is_some());
        // Cancelled by id, as a console does: the same end, counted the same.
        engine
            .cancel_instance(&WAIT, b.id())
            .await
            .expect("cancelled by id");
        let _ = b.outcome().await;
        // A message that expires before its catch waits.
        engine.publish_message("pay", "late", ()).await.unwrap();
        tokio::time::sleep(Duration::from_millis(20)).await;
        let late = engine
            .start(
                &PAY,
                Job {
                    id: "late".into(),
                    done: 0,
                },
            )
            .await
            .unwrap();
        tokio::time::sleep(Duration::from_millis(20)).await;
        late.cancel();
        let _ = late.outcome().await;
        // A durable one: the store writer commits.
        let durable =
            DurableEngine::with_store(Arc::new(thresh::store::MemoryStore::new())).expect("open");
        durable.register(&WORK).expect("register");
        let stored = durable.start(&WORK, Job::default()).await.expect("stored");
        assert!(stored.outcome().await.completed().is_some());
        durable
            .shutdown(Duration::from_secs(5))
            .await
            .expect("shutdown");
        // An evicted one: evicted once it waits, loaded by its completion.
        let evicting =
            DurableEngine::with_store(Arc::new(thresh::store::MemoryStore::new())).expect("open");
        evicting.evict_idle(Some(Duration::ZERO));
        let signed = evicting.start(&SIGN, Job::default()).await.expect("stored");
        while evicting.evicted_instances() == 0 {
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
        signed.complete("sign", |_| {}).await.expect("completed");
        assert!(signed.outcome().await.completed().is_some());
        evicting
            .shutdown(Duration::from_secs(5))
            .await
            .expect("shutdown");
    });
    seen.extend(read());
    let wait = [("process", "WAIT")];
    assert_eq!(gauge(&seen, "thresh_instances_parked", &wait), 0.0);
    assert_eq!(
        gauge(&seen, "thresh_instances_parked", &[("process", "PAY")]),
        0.0
    );
    // Each WAIT opened its task in its first step, run within `start`: the three
    // tasks closed (one completed, two withdrawn by a cancel).
    assert_eq!(
        histogram_len(
            &seen,
            "thresh_user_task_duration_seconds",
            &[("process", "WAIT"), ("task", "approve")]
        ),
        3
    );
    let work = [("process", "WORK")];
    assert_eq!(counter(&seen, "thresh_instances_started_total", &work), 2);
    assert_eq!(
        counter(
            &seen,
            "thresh_instances_ended_total",
            &[("process", "WORK"), ("outcome", "completed")]
        ),
        2
    );
    assert_eq!(
        counter(
            &seen,
            "thresh_instances_ended_total",
            &[("process", "WAIT"), ("outcome", "cancelled")]
        ),
        2
    );
    assert_eq!(
        counter(
            &seen,
            "thresh_instances_ended_total",
            &[("process", "WAIT"), ("outcome", "completed")]
        ),
        1
    );
    assert_eq!(gauge(&seen, "thresh_instances_running", &work), 0.0);
    // Evicted and loaded once; its task closed once (the eviction only took it off
    // the engine's list); not running.
    let sign = [("process", "SIGN")];
    assert_eq!(counter(&seen, "thresh_instances_evicted_total", &sign), 1);
    assert_eq!(counter(&seen, "thresh_instances_loaded_total", &sign), 1);
    assert_eq!(gauge(&seen, "thresh_instances_running", &sign), 0.0);
    assert_eq!(
        histogram_len(
            &seen,
            "thresh_user_task_duration_seconds",
            &[("process", "SIGN"), ("task", "sign")]
        ),
        1
    );
    assert_eq!(
        histogram_len(
            &seen,
            "thresh_instance_duration_seconds",
            &[("process", "WORK"), ("outcome", "completed")]
        ),
        2
    );
    assert_eq!(
        counter(
            &seen,
            "thresh_attempts_failed_total",
            &[("process", "WORK"), ("node", "work")]
        ),
        1
    );
    assert_eq!(counter(&seen, "thresh_incidents_opened_total", &work), 1);
    assert_eq!(counter(&seen, "thresh_incidents_resolved_total", &work), 1);
    assert_eq!(counter(&seen, "thresh_messages_expired_total", &[]), 1);
    assert!(histogram_len(&seen, "thresh_store_commit_seconds", &[]) >= 2);
    assert!(histogram_len(&seen, "thresh_store_batch_submissions", &[]) >= 2);
}
