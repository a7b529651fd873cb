//! Instance queries from the store: the filter as SQL on the store's indexed
//! columns (`store/sql.rs`), each row's data read back from its checkpoint or
//! outcome as the query's type.

use std::collections::HashMap;

use serde::de::DeserializeOwned;
use serde::Deserialize;

use super::DurableEngine;
use crate::engine::EngineError;
use crate::instance::InstanceId;
use crate::query::{page_of, DueTimer, InstanceQuery, InstanceSummary, Page, Query, QueryError};
use crate::store::InstanceRecord;

impl DurableEngine {
    /// The stored instances `query` selects, one page, each with its data as `D`:
    /// a running instance's from its last checkpoint, an ended one's from its
    /// outcome. Runs as one SQL statement on the store's indexes (`SqliteStore`,
    /// `PostgresStore`; a `MemoryStore` reads every record). The same call as
    /// [`Engine::instances`](crate::Engine::instances).
    pub async fn instances<D>(&self, query: &Query<D>) -> Result<Page<D>, EngineError>
    where
        D: DeserializeOwned + 'static,
    {
        let filter = self.resolve(query)?;
        let store = self.inner.store.clone();
        let select = filter.clone();
        let records = tokio::task::spawn_blocking(move || store.query(&select))
            .await
            .map_err(|_| EngineError::NoRuntime)??;
        let versions = self.version_numbers();
        Ok(page_of(&filter, records, |r| summary(r, &versions))?)
    }

    /// How many stored instances `query` selects (its order and page ignored).
    pub async fn count<D: 'static>(&self, query: &Query<D>) -> Result<u64, EngineError> {
        let filter = self.resolve(query)?;
        let store = self.inner.store.clone();
        Ok(tokio::task::spawn_blocking(move || store.count(&filter))
            .await
            .map_err(|_| EngineError::NoRuntime)??)
    }

    /// The version number of each registered fingerprint.
    fn version_numbers(&self) -> HashMap<u64, u32> {
        self.engine
            .inner
            .versions()
            .all()
            .map(|v| (v.graph.fingerprint, v.graph.version))
            .collect()
    }

    /// The query's filter, its process and element checked (by name: against
    /// the elements of every registered version).
    pub(super) fn resolve<D: 'static>(
        &self,
        query: &Query<D>,
    ) -> Result<InstanceQuery, QueryError> {
        let ids: Vec<&str> = match query.process() {
            Some(process) => process.graph().nodes.iter().map(|n| n.id).collect(),
            None => {
                let versions = self.engine.inner.versions();
                let graphs = versions.of_name(query.process_name());
                if graphs.is_empty() {
                    let mut known: Vec<&str> = versions.names().collect();
                    known.sort_unstable();
                    return Err(QueryError::UnknownProcess {
                        name: query.process_name().to_string(),
                        known: known.join(", "),
                    });
                }
                let mut ids: Vec<&str> = graphs
                    .iter()
                    .flat_map(|v| v.graph.nodes.iter().map(|n| n.id))
                    .collect();
                ids.sort_unstable();
                ids.dedup();
                ids
            }
        };
        query.resolve(&ids)
    }

    /// The running instances' armed timers (timer catches, boundaries, event
    /// sub-process starts), earliest due first, at most `limit`, as each instance
    /// was last stored — also those of instances this engine does not run (another
    /// node's, evicted, or not resumed). From the store's due-time index: `limit`
    /// checkpoints read, however many instances are stored. The same call as
    /// [`Engine::timers_due`](crate::Engine::timers_due).
    pub async fn timers_due(&self, limit: usize) -> Result<Vec<DueTimer>, EngineError> {
        let store = self.inner.store.clone();
        // The `limit` instances due first hold the `limit` timers due first (each
        // instance's earliest is indexed): only their checkpoints are read.
        let records = tokio::task::spawn_blocking(move || {
            let due = store.due(i64::MAX, limit)?;
            due.into_iter()
                .filter_map(|(_, id)| store.instance(id).transpose())
                .collect::<Result<Vec<_>, _>>()
        })
        .await
        .map_err(|_| EngineError::NoRuntime)??;
        let mut timers: Vec<DueTimer> = records
            .iter()
            .flat_map(|r| {
                let version = self
                    .registered(&r.process, r.fingerprint)
                    .map(|g| g.graph.version);
                armed_timers(&r.state)
                    .into_iter()
                    .map(move |(element, due_ms)| DueTimer {
                        instance: InstanceId(r.id),
                        process: r.process.clone(),
                        version,
                        element,
                        due_ms,
                    })
            })
            .collect();
        timers.sort_unstable_by_key(|t| (t.due_ms, t.instance.0));
        timers.truncate(limit);
        Ok(timers)
    }
}

/// The parts of a stored document a query reads: the data.
#[derive(Deserialize)]
#[serde(rename_all = "snake_case")]
enum StoredData {
    Born { data: serde_json::Value },
    Running { data: serde_json::Value },
}

#[derive(Deserialize)]
struct OutcomeData {
    #[serde(default)]
    data: serde_json::Value,
}

fn summary<D: DeserializeOwned>(
    r: InstanceRecord,
    versions: &HashMap<u64, u32>,
) -> Result<InstanceSummary<D>, QueryError> {
    let id = InstanceId(r.id);
    let bad = |e: serde_json::Error| QueryError::Data {
        id,
        message: e.to_string(),
    };
    let ended = r
        .outcome
        .as_deref()
        .map(serde_json::from_str::<OutcomeData>);
    let data = match ended {
        Some(outcome) => outcome.map_err(bad)?.data,
        None => match serde_json::from_str::<StoredData>(&r.state).map_err(bad)? {
            StoredData::Born { data } | StoredData::Running { data } => data,
        },
    };
    Ok(InstanceSummary {
        id,
        ended_ms: r.ended_ms(),
        process: r.process,
        version: versions.get(&r.fingerprint).copied(),
        fingerprint: r.fingerprint,
        status: r.status,
        business_key: r.business_key,
        key: r.key,
        started_ms: r.started_ms,
        waiting_at: r.waits,
        incidents: r.incidents,
        data: serde_json::from_value(data).map_err(bad)?,
    })
}

/// Each armed timer of a stored checkpoint: its element and its due time in ms
/// since the epoch (a checkpoint that does not read has none).
fn armed_timers(state: &str) -> Vec<(String, i64)> {
    use crate::instance::durable::records::{Checkpoint, SourceRecord};
    let Ok(Checkpoint::Running(snapshot)) = serde_json::from_str(state) else {
        return Vec::new();
    };
    snapshot
        .armed
        .into_iter()
        .flat_map(|entry| entry.waits)
        .filter_map(|wait| match wait.source {
            SourceRecord::Timer {
                deadline_ms: Some(due),
            } => Some((wait.arm, due)),
            _ => None,
        })
        .collect()
}
