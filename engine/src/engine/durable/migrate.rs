//! Applying a migration plan to stored instances (README, "Migration plans"): each
//! selected running instance of the old version gets its checkpoint moved to the
//! new version (`instance/durable/migrate.rs`) and is stored under the new
//! version's fingerprint in one write — wholly old or wholly new, never half. What
//! this engine holds (a live loop, an evicted instance) is taken out of its hands
//! first (`held.rs`) and loaded on the new version after; what the store alone
//! holds runs on the new version at the next `resume`.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use super::held::Found;
use super::{DurableEngine, EngineError};
use crate::data::Erased;
use crate::data::{ProcessData, Storable};
use crate::events::{Delivery, Hub};
use crate::instance::durable::evict::Dormant;
use crate::instance::durable::migrate::Move;
use crate::instance::durable::now_ms;
use crate::instance::InstanceId;
use crate::instance::{Input, InstanceError};
use crate::mem::intake::{Intake, IntakeReceiver};
use crate::migration::Migration;
use crate::query::Query;
use crate::store::{InstanceRecord, Status, StoreError, TaskRecord, Write};

/// How long [`DurableEngine::migrate`] waits for the instances this engine runs to
/// rest (a batch of them together; the time begins again whenever one comes to
/// rest) before it skips those still busy.
///
/// Needs the `durable` feature.
pub const MIGRATION_REST: Duration = Duration::from_secs(5);

/// How often a migration waiting for a loop to rest looks whether it ended.
const ENDED_LOOK: Duration = Duration::from_millis(20);

/// The instances a migration took out of the engine's hands, by id.
type Taken = HashMap<u64, Box<Dormant>>;

/// The fingerprint a taken instance's record must still have to be moved: the
/// one its `Dormant` runs.
fn moving_from(taken: &Taken, record: &InstanceRecord) -> u64 {
    taken.get(&record.id).map_or(0, |d| d.process.fingerprint)
}

/// A migrated instance whose data type changed: its handles (typed with the old
/// data) hear that it was migrated, and it goes on from a new intake — what was
/// queued on the old one is dropped, but for messages, given back to the hub.
fn cut_off(dormant: &mut Dormant, hub: &Hub, version: u32) {
    let fresh = IntakeReceiver::of(&mut Intake::none());
    let mut old = std::mem::replace(&mut dormant.intake, fresh);
    old.close();
    while let Some(input) = old.try_recv() {
        if let Input::Event(delivery) = input {
            if let Delivery::Message {
                name,
                key,
                payload,
                stored,
                ..
            } = *delivery
            {
                hub.give_back(&name, &key, payload, stored);
            }
        }
    }
    if let Some(publisher) = dormant.publisher.take() {
        publisher.publish_broken(InstanceError::Migrated { version });
    }
}

/// How many instances one store transaction moves (each is whole in it either way).
const BATCH: usize = 512;

/// What [`DurableEngine::migrate`] did.
///
/// Needs the `durable` feature.
#[derive(Debug, Default)]
#[cfg_attr(docsrs, doc(cfg(feature = "durable")))]
pub struct MigrationReport {
    /// Moved to the new version: a `resume` runs them on it.
    pub migrated: Vec<InstanceId>,
    /// Selected but left as they were, and why.
    pub skipped: Vec<(InstanceId, String)>,
}

impl DurableEngine {
    /// Move the stored running instances of `plan`'s old version that `query`
    /// selects (its status, order and page are ignored: every running one it
    /// selects) to the new version, as the plan maps them (README, "Migration
    /// plans"). Each is stored anew in one write — its tokens where the plan puts
    /// them, its join arrivals on the new joins' flows from the same sources, its
    /// timers with their deadlines, its data (and every snapshot of it) converted
    /// — or skipped with the reason, untouched. Registers both versions.
    ///
    /// Instances this engine runs are migrated too: each leaves memory as soon as
    /// it rests (as an evicted one does, whatever [`evict_idle`](Self::evict_idle)
    /// says), is moved, and is loaded at once on the new version — its message
    /// waits subscribed with the new version's keys. What is sent to it meanwhile
    /// waits on its intake. They are taken 512 at a time; one that does not rest
    /// while none of its batch came to rest for [`MIGRATION_REST`] (a task still
    /// running; a call activity's parent or child, never evicted) is skipped with
    /// the reason, and one that ends meanwhile. Its handles keep working when
    /// both versions have one data type; when the plan converts the data, the old
    /// handles end with [`InstanceError::Migrated`](crate::InstanceError::Migrated)
    /// (read it through a query of the new version). An instance another writer
    /// stored anew meanwhile is skipped as it is. Instances the store alone holds
    /// (not resumed yet) are moved there; do not `resume` while migrating. On a
    /// node of several (feature `postgres`) the owner of each instance migrates
    /// it: this node moves those it runs (its writes are fenced, so a checkpoint
    /// of another owner is never overwritten), and skips each another node owns.
    pub async fn migrate<D1, D2>(
        &self,
        plan: &'static Migration<D1, D2>,
        query: &Query<D1>,
    ) -> Result<MigrationReport, EngineError>
    where
        D1: ProcessData + Storable,
        D2: ProcessData + Storable,
    {
        let (from, to) = (plan.from(), plan.to());
        self.register(from)?;
        self.register(to)?;
        let mut filter = self.resolve(query)?;
        filter.process = Some(from.name().to_string());
        filter.fingerprint = Some(from.fingerprint());
        filter.statuses = vec![Status::Running];
        filter.after = None;
        filter.offset = 0;
        filter.limit = None;
        let store = self.inner.store.clone();
        let records = tokio::task::spawn_blocking(move || store.query(&filter))
            .await
            .map_err(|_| EngineError::NoRuntime)??;
        let target = |id: &str| plan.target(id);
        let convert = |data: serde_json::Value| {
            let old: D1 = serde_json::from_value(data).map_err(|e| e.to_string())?;
            serde_json::to_value(plan.convert(old)).map_err(|e| e.to_string())
        };
        let moving = Move {
            from: from.graph(),
            to: to.graph(),
            target: &target,
            convert: &convert,
        };
        let mut report = MigrationReport::default();
        let same_type = std::any::TypeId::of::<D1>() == std::any::TypeId::of::<D2>();
        let mut records = records.into_iter().peekable();
        while records.peek().is_some() {
            let chunk: Vec<InstanceRecord> = records.by_ref().take(BATCH).collect();
            // What this engine holds is taken out of its hands first: no loop of
            // its own may checkpoint, nor a load restore, the old version over a
            // moved one. A batch at a time: none is out of service for long.
            let (taken, chunk) = self.take_held(chunk, &mut report).await?;
            let mut batch = Vec::new();
            for record in chunk {
                let id = InstanceId(record.id);
                match self.moved(&moving, record) {
                    Ok(record) => batch.push(record),
                    Err(reason) => report.skipped.push((id, reason)),
                }
            }
            let before = report.migrated.len();
            let stored = self.store_moved(batch, &mut report).await;
            let migrated = &report.migrated[before..];
            self.give_back(taken, migrated, Some(to.graph()), same_type);
            stored?;
        }
        Ok(report)
    }

    /// Take every instance of `records` this engine holds (evicted, or run by a
    /// loop that leaves memory once it rests, waited for until none came to rest
    /// for [`MIGRATION_REST`]): those taken, and the records to move — the taken
    /// ones' read again (their loops stored more since) and those no loop here
    /// runs.
    async fn take_held(
        &self,
        records: Vec<InstanceRecord>,
        report: &mut MigrationReport,
    ) -> Result<(Taken, Vec<InstanceRecord>), EngineError> {
        let mut taken = Taken::new();
        let mut asked = Vec::new();
        let mut stored_only = Vec::new();
        for record in records {
            match self.inner.find(record.id) {
                Found::Taken(dormant) => {
                    taken.insert(record.id, dormant);
                }
                Found::Asked(receiver, intake) => asked.push((record.id, receiver, intake)),
                Found::Nowhere => stored_only.push(record),
            }
        }
        let mut until = tokio::time::Instant::now() + MIGRATION_REST;
        for (id, mut receiver, intake) in asked {
            let dormant = loop {
                // Looked at now and then: a loop may end rather than rest.
                let slice = (tokio::time::Instant::now() + ENDED_LOOK).min(until);
                match tokio::time::timeout_at(slice, &mut receiver).await {
                    Ok(Ok(dormant)) => break Ok(dormant),
                    // The engine is going away: its claim went with it.
                    Ok(Err(_)) => break Err("the engine shut down"),
                    Err(_) if intake.is_closed() || slice >= until => {
                        break match self.inner.unclaim(id, receiver) {
                            Some(dormant) => Ok(dormant),
                            None if intake.is_closed() => Err("it ended meanwhile"),
                            None => Err("it did not come to rest in time (a task running, its last checkpoint \
                                 not stored yet, \
                                 or a call activity's parent or child): left as it is"),
                        };
                    }
                    Err(_) => {}
                }
            };
            match dormant {
                Ok(dormant) => {
                    // Instances come to rest: the others get the time again.
                    until = tokio::time::Instant::now() + MIGRATION_REST;
                    taken.insert(id, dormant);
                }
                Err(why) => report.skipped.push((InstanceId(id), why.to_string())),
            }
        }
        let ids: Vec<u64> = taken.keys().copied().collect();
        let store = self.inner.store.clone();
        let fresh = tokio::task::spawn_blocking(move || {
            ids.into_iter()
                .map(|id| store.instance(id))
                .collect::<Result<Vec<_>, StoreError>>()
        })
        .await
        .map_err(|_| EngineError::NoRuntime)?;
        let fresh = match fresh {
            Ok(fresh) => fresh,
            Err(error) => {
                // Nothing moved yet: each goes back as it was.
                self.give_back(taken, &[], None, true);
                return Err(error.into());
            }
        };
        let mut records = stored_only;
        for record in fresh.into_iter().flatten() {
            match (
                record.status,
                record.fingerprint == moving_from(&taken, &record),
            ) {
                (Status::Running, true) => records.push(record),
                _ => report.skipped.push((
                    InstanceId(record.id),
                    "it ended or was moved meanwhile: left as it is".to_string(),
                )),
            }
        }
        Ok((taken, records))
    }

    /// Hand each taken instance back to the dormancy — one that was migrated as
    /// the new version's (`to`): its old hub subscriptions and choices given
    /// back, if the data type changed its old handles told so and a new intake,
    /// and loaded at once. One not migrated stays evicted as it was.
    fn give_back(
        &self,
        taken: Taken,
        migrated: &[InstanceId],
        to: Option<&'static crate::graph::Graph<Erased>>,
        same_type: bool,
    ) {
        let migrated: std::collections::HashSet<u64> = migrated.iter().map(|id| id.0).collect();
        let hub = &self.engine.inner.hub;
        let codec = to.and_then(|to| {
            let registry = self.inner.registry.lock();
            let registry = registry.unwrap_or_else(|p| p.into_inner());
            registry.get(&to.fingerprint).map(|r| r.codec)
        });
        for (id, mut dormant) in taken {
            if let (true, Some(to), Some(codec)) = (migrated.contains(&id), to, codec) {
                dormant.process = to;
                dormant.codec = codec;
                if let Some(kept) = dormant.kept.take() {
                    kept.release(hub);
                }
                if !same_type {
                    cut_off(&mut dormant, hub, to.version);
                }
                // Loaded at once, as a resume would: its waits armed anew with the
                // new version's keys, its incidents and tasks listed again.
                dormant.fresh = true;
                let _ = dormant.intake.sender().send(Input::Wake);
            }
            Arc::clone(&self.inner).evicted(&self.engine.inner, dormant);
        }
    }

    /// Store `batch` in one transaction; if another writer stored one of them
    /// anew meanwhile, or its end, each on its own (that one is skipped, as it is
    /// stored).
    async fn store_moved(
        &self,
        batch: Vec<Moved>,
        report: &mut MigrationReport,
    ) -> Result<(), EngineError> {
        if batch.is_empty() {
            return Ok(());
        }
        let ids: Vec<InstanceId> = batch.iter().map(|(r, _)| InstanceId(r.id)).collect();
        let all = batch.iter().cloned().flat_map(writes).collect();
        match self.inner.writer.submit(all).await {
            Ok(()) => {
                report.migrated.extend(ids);
                return Ok(());
            }
            Err(
                StoreError::StaleCheckpoint { .. }
                | StoreError::InstanceEnded { .. }
                | StoreError::Fenced { .. },
            ) => {}
            Err(error) => return Err(error.into()),
        }
        for moved in batch {
            let id = InstanceId(moved.0.id);
            match self.inner.writer.submit(writes(moved)).await {
                Ok(()) => report.migrated.push(id),
                Err(StoreError::StaleCheckpoint { .. }) => report.skipped.push((
                    id,
                    "it was stored anew meanwhile: left as it is".to_string(),
                )),
                Err(StoreError::InstanceEnded { .. }) => {
                    report.skipped.push((id, "it ended meanwhile".to_string()))
                }
                // On a node of several: the owner migrates it.
                Err(StoreError::Fenced { .. }) => report
                    .skipped
                    .push((id, "another node owns it: migrate it there".to_string())),
                Err(error) => return Err(error.into()),
            }
        }
        Ok(())
    }

    /// `record` moved, with its open tasks' rows, or why not.
    fn moved(&self, moving: &Move<'_>, mut record: InstanceRecord) -> Result<Moved, String> {
        let tasks = moving.record(&mut record)?;
        record.fingerprint = moving.to.fingerprint;
        record.seq += 1;
        record.updated_ms = now_ms();
        Ok((record, tasks))
    }
}

/// A moved record and its open tasks' rows (`None`: none to write).
type Moved = (InstanceRecord, Option<Vec<TaskRecord>>);

/// The writes that store a moved instance: its record, and its task-list rows
/// anew (the old ones deleted first: a kept row would keep its old element).
fn writes((record, tasks): Moved) -> Vec<Write> {
    let instance = record.id;
    let mut writes = vec![Write::Put(record)];
    if let Some(open) = tasks {
        writes.push(Write::Tasks {
            instance,
            open: Vec::new(),
        });
        writes.push(Write::Tasks { instance, open });
    }
    writes
}
