//! Durable timer-start schedules: a durable deployment's timer starts keep their
//! schedule in the store (`DeploymentRecord::timer_anchors`), so a redeploy after a
//! restart goes on with it instead of beginning anew.
//!
//! Per timer start the store holds how often it fired and when its next tick is due
//! (wall-clock milliseconds). A tick writes its instance (as born at that start
//! event) and the schedule advanced past it in ONE transaction, and only then runs
//! the instance: a crash loses no tick (the schedule still says it is due, so it
//! fires at the redeploy) and doubles none (its instance and the advance are stored
//! together). Ticks missed while no engine ran fire at the redeploy by the engine's
//! catch-up rule: each once, in order, due a period after the one before.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use serde::{Deserialize, Serialize};
use tokio_util::sync::CancellationToken;
use tracing::warn;

use super::super::deploy::{DeployTarget, StartOn};
use crate::data::ProcessData;
use crate::events::TimerSpec;
use crate::instance::durable::{now_ms, Durable};
use crate::instance::snapshot::{from_wall, to_wall, Checkpoint};
use crate::instance::Entry;
use crate::store::{DeploymentRecord, InstanceRecord, Receipt, Status, Write, Writer};

/// One timer start's schedule as stored.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Tick {
    /// How many times it fired (each firing's instance is stored).
    pub fired: u32,
    /// When the next firing is due, in wall-clock milliseconds; `None` once the
    /// schedule has run out (a date that fired, a finite cycle that fired its count).
    pub due_ms: Option<i64>,
}

/// A durable deployment's timer-start schedules, by start event id, and the record
/// they are stored in.
pub(crate) struct Schedules {
    writer: Writer,
    state: Mutex<Stored>,
}

struct Stored {
    record: DeploymentRecord,
    ticks: BTreeMap<String, Tick>,
}

impl Schedules {
    /// The schedules of a deployment stored as `record` (its anchors as stored; a
    /// record whose anchors do not parse begins anew, with a warning).
    pub fn new(writer: Writer, record: DeploymentRecord) -> Self {
        let ticks = match serde_json::from_str(&record.timer_anchors) {
            Ok(ticks) => ticks,
            Err(error) => {
                warn!(%error, process = %record.process, "stored timer-start schedule unreadable: it begins anew");
                BTreeMap::new()
            }
        };
        Self {
            writer,
            state: Mutex::new(Stored { record, ticks }),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Stored> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The schedule of the timer start `node`: as stored, or — never stored — first
    /// due by `spec` from now, and stored so.
    fn tick_of(&self, node: &str, spec: &TimerSpec) -> Tick {
        let mut stored = self.lock();
        if let Some(tick) = stored.ticks.get(node) {
            return *tick;
        }
        let tick = Tick {
            fired: 0,
            due_ms: spec.first(tokio::time::Instant::now()).map(to_wall),
        };
        stored.ticks.insert(node.to_string(), tick);
        let write = stored.write();
        self.writer.send(vec![write]);
        tick
    }

    /// Queue `instance` with the schedule of `node` advanced to `tick`, as one
    /// transaction. The lock is held while queueing, so the writes of the record
    /// reach the writer in the order of their states.
    fn record_tick(&self, node: &str, tick: Tick, instance: Write) -> Receipt {
        let mut stored = self.lock();
        stored.ticks.insert(node.to_string(), tick);
        let write = stored.write();
        self.writer.submit(vec![instance, write])
    }
}

impl Stored {
    fn write(&mut self) -> Write {
        self.record.timer_anchors =
            serde_json::to_string(&self.ticks).unwrap_or_else(|_| "{}".to_string());
        Write::PutDeployment(self.record.clone())
    }
}

/// A durable timer start: an instance at every tick of its stored schedule, until
/// undeployed, the engine stops, or a tick cannot be stored (then the schedule stops
/// here, logged; the store still has the tick due, so a redeploy fires it).
pub(in crate::engine) async fn timer_starts<D: ProcessData>(
    spec: TimerSpec,
    starter: Arc<StartOn<D>>,
    cancel: CancellationToken,
    schedules: Arc<Schedules>,
) {
    let target = &starter.target;
    let node = target.process.nodes[starter.start].id;
    let mut tick = schedules.tick_of(node, &spec);
    while let Some(due_ms) = tick.due_ms {
        tokio::select! {
            _ = cancel.cancelled() => return,
            _ = tokio::time::sleep_until(from_wall(due_ms)) => {}
        }
        let fired = tick.fired.saturating_add(1);
        let next = Tick {
            fired,
            due_ms: spec
                .period_after(fired)
                .map(|p| due_ms.saturating_add(p.as_millis() as i64)),
        };
        if start_tick(target, starter.start, &schedules, node, next)
            .await
            .is_none()
        {
            return;
        }
        tick = next;
    }
}

/// Store a tick's instance with the schedule advanced to `tick`, then run it.
/// `None`: the engine is gone or stopping, or the store refused the tick.
async fn start_tick<D: ProcessData>(
    target: &DeployTarget<D>,
    start: crate::graph::NodeIdx,
    schedules: &Schedules,
    node: &'static str,
    tick: Tick,
) -> Option<()> {
    let durable = target.durable.as_ref()?;
    let id = {
        let engine = target.engine.upgrade()?;
        if engine.stop.is_cancelled() {
            return None;
        }
        engine.next_id().0
    };
    let data = target.data.clone();
    let born = (durable.codec.encode)(&data).and_then(|data| {
        serde_json::to_string(&Checkpoint::Born {
            data,
            start: Some(node.to_string()),
        })
        .map_err(|e| e.to_string())
    });
    let state = match born {
        Ok(state) => state,
        Err(error) => {
            warn!(%error, process = target.process.name, "timer start: data not storable; the schedule stops");
            return None;
        }
    };
    let instance = Write::Put(InstanceRecord {
        id,
        process: target.process.name.to_string(),
        fingerprint: target.process.fingerprint,
        status: Status::Running,
        key: None,
        seq: 1,
        state,
        outcome: None,
        updated_ms: now_ms(),
    });
    if let Err(error) = schedules.record_tick(node, tick, instance).await {
        warn!(%error, process = target.process.name, "timer start: tick not stored; the schedule stops (a redeploy fires it)");
        return None;
    }
    // Stored: from here a restart resumes it, so a stop now leaves it for then.
    let engine = target.engine.upgrade()?;
    let admitted = engine.admit()?;
    let mut stored_as = Durable::new(durable.writer.clone(), durable.codec, id, 1, None);
    stored_as.keep_history = durable.keep_history;
    stored_as.every_task = durable.every_task;
    let entry = Entry::Event {
        start,
        payload: Some(Arc::new(())),
        also: Vec::new(),
    };
    let handle = engine.spawn_durable(
        admitted,
        &target.runtime,
        target.process,
        (data, entry),
        stored_as,
    );
    let _ = target.started.send(handle);
    Some(())
}
