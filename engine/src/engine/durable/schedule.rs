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
//!
//! The advance is a compare-and-set ([`Write::Tick`]: from the schedule the tick was
//! computed from): several engine nodes deploying one process share its stored
//! schedule, every node's timer wakes at each tick, and exactly one node's tick is
//! stored — that node starts the instance, the others read the advanced schedule and
//! wait for the next. A node that dies leaves the schedule to the others.

use std::sync::{Arc, Mutex};

use tokio_util::sync::CancellationToken;
use tracing::{debug, warn};

use super::super::deploy::{DeployTarget, StartOn};
use crate::events::TimerSpec;
use crate::instance::durable::records::{from_wall, to_wall, Checkpoint};
use crate::instance::durable::{now_ms, Durable};
use crate::instance::Entry;
use crate::store::{
    parse_anchors, stored_tick, DeploymentRecord, InstanceRecord, Status, StoreError, TimerAnchors,
    TimerTick, Write, Writer,
};

/// A durable deployment's timer-start schedules, by start event id, and the record
/// they are stored in.
pub(crate) struct Schedules {
    writer: Writer,
    /// Shared with the other engine nodes on the store (a node of several): every
    /// engine deploying the process ticks the one stored schedule, so it is read from
    /// the store, and each tick is a compare-and-set applied at once — the node whose
    /// tick is stored starts the instance, the others read the advanced schedule.
    /// Not shared: this engine alone writes it, so the schedule in memory is the
    /// stored one and ticks go through the writer.
    shared: bool,
    state: Mutex<Stored>,
}

struct Stored {
    record: DeploymentRecord,
    ticks: TimerAnchors,
}

/// What became of a tick.
enum Ticked {
    /// Stored, and its instance runs.
    Started,
    /// Another node stored this tick first: read the schedule again.
    Taken,
    /// The engine is gone or stopping, or the store refused the tick.
    Stopped,
}

impl Schedules {
    /// The schedules of a deployment stored as `record` (its anchors as stored; a
    /// record whose anchors do not parse begins anew, with a warning); `shared` on a
    /// node of several.
    pub fn new(writer: Writer, record: DeploymentRecord, shared: bool) -> Self {
        let ticks = parse_anchors(&record.timer_anchors).unwrap_or_else(|| {
            warn!(process = %record.process, "stored timer-start schedule unreadable: it begins anew");
            TimerAnchors::new()
        });
        Self {
            writer,
            shared,
            state: Mutex::new(Stored { record, ticks }),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Stored> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The record with the schedules as they are now (what a deploy of a newer
    /// version goes on with).
    pub fn record_now(&self) -> DeploymentRecord {
        let stored = self.lock();
        DeploymentRecord {
            timer_anchors: serde_json::to_string(&stored.ticks)
                .unwrap_or_else(|_| "{}".to_string()),
            ..stored.record.clone()
        }
    }

    /// The schedule of the timer start `node`: as stored, or — never stored — first
    /// due by `spec` from now, and stored so. `None`: the store could not be read or
    /// written (logged).
    async fn tick_of(&self, node: &str, spec: &TimerSpec) -> Option<TimerTick> {
        loop {
            let stored = match self.shared {
                true => self.read(node).await?,
                false => self.lock().ticks.get(node).copied(),
            };
            if let Some(tick) = stored {
                return Some(tick);
            }
            let first = TimerTick {
                fired: 0,
                due_ms: spec.first(tokio::time::Instant::now()).map(to_wall),
            };
            if !self.shared {
                // Queued, not awaited: the writer keeps the order of the record's
                // writes, and nothing else writes it.
                let write = self.lock().advance(node, None, first);
                self.writer.send(vec![write]);
                return Some(first);
            }
            let write = self.lock().advance(node, None, first);
            match self.store_shared(write, None).await {
                Ok(()) => return Some(first),
                // Another node began it first: go on with its schedule.
                Err(StoreError::TickTaken { .. }) => continue,
                Err(error) => {
                    warn!(%error, start = node, "timer start: schedule not stored; it stops (a redeploy begins it)");
                    return None;
                }
            }
        }
    }

    /// The stored schedule of `node`, read from the store.
    async fn read(&self, node: &str) -> Option<Option<TimerTick>> {
        let (store, id) = (self.writer.store().clone(), self.lock().record.id);
        let read = tokio::task::spawn_blocking(move || store.deployments()).await;
        match read {
            Ok(Ok(records)) => Some(stored_tick(&records, id, node)),
            Ok(Err(error)) => {
                warn!(%error, start = node, "timer start: schedule not readable; it stops (a redeploy goes on with it)");
                None
            }
            Err(_) => None,
        }
    }

    /// Store `instance` with the schedule of `node` advanced from `from` to `to`, as
    /// one transaction: through the writer (queued in the order of the record's
    /// states: the lock is held while queueing), or, shared, at once as a
    /// compare-and-set (the tick first, so a lost one fails before the instance).
    async fn record_tick(
        &self,
        node: &str,
        from: TimerTick,
        to: TimerTick,
        instance: Write,
    ) -> Result<(), StoreError> {
        if self.shared {
            let tick = self.lock().advance(node, Some(from), to);
            return self.store_shared(tick, Some(instance)).await;
        }
        let receipt = {
            let mut stored = self.lock();
            let tick = stored.advance(node, Some(from), to);
            self.writer.submit(vec![tick, instance])
        };
        receipt.await
    }

    /// Apply a shared schedule's tick (and its instance) on the store now.
    async fn store_shared(&self, tick: Write, instance: Option<Write>) -> Result<(), StoreError> {
        let store = self.writer.store().clone();
        let batch: Vec<Write> = std::iter::once(tick).chain(instance).collect();
        tokio::task::spawn_blocking(move || store.apply(&batch))
            .await
            .map_err(|_| StoreError::WriterStopped)?
    }
}

impl Stored {
    /// The write that moves the schedule of `start` from `from` to `to` (and the
    /// schedule in memory with it).
    fn advance(&mut self, start: &str, from: Option<TimerTick>, to: TimerTick) -> Write {
        self.ticks.insert(start.to_string(), to);
        Write::Tick {
            deployment: self.record.clone(),
            start: start.to_string(),
            from,
            to,
        }
    }
}

/// A durable timer start: an instance at every tick of its stored schedule, until
/// undeployed, the engine stops, or a tick cannot be stored (then the schedule stops
/// here, logged; the store still has the tick due, so a redeploy fires it). On a node
/// of several, every node deploying the process runs this on the one stored
/// schedule, and each tick starts one instance, on the node whose tick was stored.
pub(in crate::engine) async fn timer_starts(
    spec: TimerSpec,
    starter: Arc<StartOn>,
    cancel: CancellationToken,
    schedules: Arc<Schedules>,
) {
    let target = &starter.target;
    let node = target.process.nodes[starter.start].id;
    let Some(mut tick) = schedules.tick_of(node, &spec).await else {
        return;
    };
    while let Some(due_ms) = tick.due_ms {
        tokio::select! {
            _ = cancel.cancelled() => return,
            _ = tokio::time::sleep_until(from_wall(due_ms)) => {}
        }
        let fired = tick.fired.saturating_add(1);
        let next = TimerTick {
            fired,
            due_ms: spec
                .period_after(fired)
                .map(|p| due_ms.saturating_add(p.as_millis() as i64)),
        };
        let ticked = start_tick(target, starter.start, &schedules, node, (tick, next)).await;
        match ticked.unwrap_or(Ticked::Stopped) {
            Ticked::Started => tick = next,
            Ticked::Taken => {
                debug!(
                    start = node,
                    fired, "timer start: another node fired this tick"
                );
                let Some(stored) = schedules.tick_of(node, &spec).await else {
                    return;
                };
                tick = stored;
            }
            Ticked::Stopped => return,
        }
    }
}

/// Store a tick's instance with the schedule advanced `(from, to)`, then run it.
/// `None`: the engine is gone or stopping, or the store refused the tick.
async fn start_tick(
    target: &DeployTarget,
    start: crate::graph::NodeIdx,
    schedules: &Schedules,
    node: &'static str,
    (from, to): (TimerTick, TimerTick),
) -> Option<Ticked> {
    let durable = target.durable.as_ref()?;
    let id = {
        let engine = target.engine.upgrade()?;
        if engine.stop.is_stopping() {
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
        business_key: None,
        started_ms: now_ms(),
        waits: Vec::new(),
        incidents: 0,
        wake: Default::default(),
    });
    match schedules.record_tick(node, from, to, instance).await {
        Ok(()) => {}
        Err(StoreError::TickTaken { .. }) => return Some(Ticked::Taken),
        Err(error @ StoreError::CommitUnknown { .. }) => {
            // Not fired again here: if it was stored, its instance is stored too
            // (one transaction) and a resume runs it.
            warn!(%error, process = target.process.name, "timer start: whether the tick was stored is unknown; the schedule stops (a redeploy goes on from the stored schedule)");
            return None;
        }
        Err(error) => {
            warn!(%error, process = target.process.name, "timer start: tick not stored; the schedule stops (a redeploy fires it)");
            return None;
        }
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
        None,
    );
    if let Some(started) = &durable.started {
        started(&handle);
    }
    let _ = target.started.send(handle);
    Some(Ticked::Started)
}
