//! The engine's metrics (feature `metrics`), read back from a recorder that keeps
//! them: instances started, ended by outcome and running; failed attempts and
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
}

/// What the recorder was told, read once at the end (a snapshot drains what it
/// reads): each metric's key and value.
type Seen = Vec<(CompositeKey, DebugValue)>;

/// The value of the metric `name` with `labels` (among others).
fn value<'s>(seen: &'s Seen, name: &str, labels: &[(&str, &str)]) -> Option<&'s DebugValue> {
    seen.iter()
        .find(|(key, _)| {
            let key = key.key();
            key.name() == name
                && labels
                    .iter()
                    .all(|(k, v)| key.labels().any(|l| l.key() == *k && l.value() == *v))
        })
        .map(|(_, value)| value)
}

fn counter(seen: &Seen, name: &str, labels: &[(&str, &str)]) -> u64 {
    match value(seen, name, labels) {
        Some(DebugValue::Counter(n)) => *n,
        None => 0,
        other => panic!("{name} is no counter: {other:?}"),
    }
}

fn gauge(seen: &Seen, name: &str, labels: &[(&str, &str)]) -> f64 {
    match value(seen, name, labels) {
        Some(DebugValue::Gauge(g)) => g.into_inner(),
        None => 0.0,
        other => panic!("{name} is no gauge: {other:?}"),
    }
}

fn histogram_len(seen: &Seen, name: &str, labels: &[(&str, &str)]) -> usize {
    match value(seen, name, labels) {
        Some(DebugValue::Histogram(values)) => values.len(),
        None => 0,
        other => panic!("{name} is no histogram: {other:?}"),
    }
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
    });
    let seen: Seen = snapshotter
        .snapshot()
        .into_vec()
        .into_iter()
        .map(|(key, _, _, value)| (key, value))
        .collect();
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
        1
    );
    assert_eq!(gauge(&seen, "thresh_instances_running", &work), 0.0);
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
