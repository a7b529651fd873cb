//! Applying a migration plan to stored instances (README, "Migration plans"): each
//! selected running instance of the old version no loop runs here gets its
//! checkpoint moved to the new version (`instance/durable/migrate.rs`) and is
//! stored under the new version's fingerprint in one write — wholly old or wholly
//! new, never half. A `resume` then runs it on the new version.

use super::{DurableEngine, EngineError};
use crate::data::{ProcessData, Storable};
use crate::instance::durable::migrate::Move;
use crate::instance::durable::now_ms;
use crate::instance::InstanceId;
use crate::migration::Migration;
use crate::query::Query;
use crate::store::{InstanceRecord, Status, StoreError, TaskRecord, Write};

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
    /// Migrate instances no loop runs: on an engine that runs none yet — after a
    /// restart, before `resume` (an engine that runs instances skips every one,
    /// "migrate before resume"); then `resume` runs them on the new version,
    /// subscribing their message waits with its keys. An instance another writer
    /// stored anew meanwhile is skipped as it is. On a node of several every
    /// instance is skipped (not supported yet).
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
        // A loop here may checkpoint an instance at any time: none may run (nor be
        // evicted: a load would restore the old version's waits over a moved
        // checkpoint).
        let busy = self.engine.running_instances() > 0 || self.evicted_instances() > 0;
        let mut batch = Vec::new();
        for record in records {
            let id = InstanceId(record.id);
            let moved = match busy {
                true => Err("this engine runs instances: migrate before resume".to_string()),
                false => self.moved(&moving, record),
            };
            match moved {
                Ok(record) => batch.push(record),
                Err(reason) => report.skipped.push((id, reason)),
            }
            if batch.len() == BATCH {
                self.store_moved(std::mem::take(&mut batch), &mut report)
                    .await?;
            }
        }
        self.store_moved(batch, &mut report).await?;
        Ok(report)
    }

    /// Store `batch` in one transaction; if another writer stored one of them
    /// anew meanwhile, each on its own (that one is skipped, as it is stored).
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
            Err(StoreError::StaleCheckpoint { .. }) => {}
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
                Err(error) => return Err(error.into()),
            }
        }
        Ok(())
    }

    /// `record` moved, with its open tasks' rows, or why not.
    fn moved(&self, moving: &Move<'_>, mut record: InstanceRecord) -> Result<Moved, String> {
        #[cfg(feature = "postgres")]
        if self.inner.node.get().is_some() {
            return Err("on a node of several, migration is not supported yet".to_string());
        }
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
