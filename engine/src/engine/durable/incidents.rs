//! A durable engine's incidents: listed from the store (every stored running
//! instance's checkpoint records its open incidents), retried where the instance
//! runs (ARCHITECTURE.md, "Retries and incidents").

use std::time::{Duration, UNIX_EPOCH};

use super::{DurableEngine, EngineError};
use crate::instance::durable::stored_incidents;
use crate::instance::InstanceId;
use crate::retry::{Incident, IncidentId, RetryError};

impl DurableEngine {
    /// Every open incident the store holds, in instance order: read from the stored
    /// checkpoints of running instances of registered processes — on a node of
    /// several, those every node runs; and instances not resumed yet. (An incident
    /// opened since an instance's last checkpoint is in the next one: an instance
    /// checkpoints when it opens one.)
    pub async fn incidents(&self) -> Result<Vec<Incident>, EngineError> {
        let store = self.inner.store.clone();
        let running = tokio::task::spawn_blocking(move || store.running())
            .await
            .map_err(|_| EngineError::NoRuntime)??;
        let registry = self
            .inner
            .registry
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        let mut incidents = Vec::new();
        for record in running {
            let Some(registered) = registry
                .get(&record.fingerprint)
                .filter(|r| r.graph.name == record.process)
            else {
                continue;
            };
            incidents.extend(incidents_of(
                &record,
                registered.graph.name,
                registered.graph,
            )?);
        }
        incidents.sort_by_key(|i| (i.id.instance, i.id.number));
        Ok(incidents)
    }

    /// The open incidents of instance `id` of `process`, from its stored checkpoint
    /// (none if it has none, is not of `process` or is not stored): one record
    /// read, where [`incidents`](Self::incidents) reads every running one. The same
    /// call as [`Engine::incidents_of`](crate::Engine::incidents_of).
    pub async fn incidents_of<D>(
        &self,
        process: &'static crate::Process<D>,
        id: InstanceId,
    ) -> Result<Vec<Incident>, EngineError> {
        let store = self.inner.store.clone();
        let record = tokio::task::spawn_blocking(move || store.instance(id.0))
            .await
            .map_err(|_| EngineError::NoRuntime)??;
        match record {
            Some(record) if record.process == process.name() => {
                incidents_of(&record, process.name(), process.graph())
            }
            _ => Ok(Vec::new()),
        }
    }

    /// Retry the incident `id`, as [`Engine::retry`](crate::Engine::retry): the
    /// task's handler runs once more (or the gateway chooses again), and what follows
    /// is checkpointed as any step. On a node of several, an incident of an instance
    /// another node runs is handed to that node through the store (`Ok` once the
    /// request is stored: the owner retries it when it next claims, or the node that
    /// takes the instance over does); `NoIncident` if the store holds no such open
    /// incident.
    pub async fn retry(&self, id: IncidentId) -> Result<(), RetryError> {
        #[cfg(feature = "postgres")]
        if let Some(node) = self.inner.node.get() {
            if !self.runs_incident(id) {
                return self.retry_elsewhere(node, id).await;
            }
        }
        self.retry_here(id, None).await
    }

    /// Change the instance's data (a `D`), then retry the incident `id`, as
    /// [`Engine::retry_with`](crate::Engine::retry_with): the change is committed —
    /// and stored — as a task's would be. The instance must run here: on a node of
    /// several, another node's is [`RetryError::Elsewhere`].
    pub async fn retry_with<D: 'static>(
        &self,
        id: IncidentId,
        change: impl FnOnce(&mut D) + Send + 'static,
    ) -> Result<(), RetryError> {
        #[cfg(feature = "postgres")]
        if self.inner.node.get().is_some() && !self.runs_incident(id) {
            return match self.stored_incident(id).await? {
                true => Err(RetryError::Elsewhere(id)),
                false => Err(RetryError::NoIncident(id)),
            };
        }
        let change = crate::retry::erase_change(change);
        self.retry_here(id, Some(change)).await
    }

    /// Put `data` in place of the instance's data, then retry the incident `id` — from
    /// any node: on a node of several, an incident of an instance another node runs
    /// is handed to that node with the data (as JSON, read back with its process's
    /// registration), like [`retry`](Self::retry). The change is committed as a
    /// task's would be. For an operator who fixed the data elsewhere (a console, a
    /// script), where a closure cannot go.
    pub async fn retry_with_data<D>(&self, id: IncidentId, data: D) -> Result<(), RetryError>
    where
        D: serde::Serialize + Send + 'static,
    {
        #[cfg(feature = "postgres")]
        if let Some(node) = self.inner.node.get() {
            if !self.runs_incident(id) {
                let json = serde_json::to_string(&data)
                    .map_err(|e| RetryError::Store(id, e.to_string()))?;
                return self.request_retry(node, id, json).await;
            }
        }
        let change = crate::retry::erase_change(move |d: &mut D| *d = data);
        self.retry_here(id, Some(change)).await
    }

    /// Retry incident `id` of an instance of this engine: through its loop, or an
    /// evicted one's loaded first (an incident of an instance a resume left asleep
    /// is on no board until it loads).
    pub(super) async fn retry_here(
        &self,
        id: IncidentId,
        change: Option<crate::retry::RetryChange>,
    ) -> Result<(), RetryError> {
        // A loop evicted between a look and the post is looked for again.
        for _ in 0..3 {
            // Its loop's intake, held while posting: evicted meanwhile, the instance
            // keeps that intake and the post loads it.
            if let Some(target) = self.engine.inner.incidents.target(id) {
                return crate::Engine::post_retry(target.as_ref(), id, change).await;
            }
            let loaded = self
                .inner
                .load_evicted(&self.engine.inner, id.instance.0)
                .await;
            if let Some(loaded) = loaded {
                return crate::Engine::post_retry(&loaded, id, change).await;
            }
            if !self.inner.is_evicted(id.instance.0) {
                break;
            }
        }
        Err(RetryError::NoIncident(id))
    }

    /// Whether incident `id`'s instance is here: its loop lists it, or it is
    /// evicted here.
    #[cfg(feature = "postgres")]
    pub(super) fn runs_incident(&self, id: IncidentId) -> bool {
        self.engine.runs_incident(id) || self.inner.is_evicted(id.instance.0)
    }

    /// Whether the store holds incident `id` open.
    #[cfg(feature = "postgres")]
    async fn stored_incident(&self, id: IncidentId) -> Result<bool, RetryError> {
        let store = self.inner.store.clone();
        let record = tokio::task::spawn_blocking(move || store.instance(id.instance.0))
            .await
            .map_err(|e| RetryError::Store(id, e.to_string()))?
            .map_err(|e| RetryError::Store(id, e.to_string()))?;
        let Some(record) = record.filter(|r| r.status == crate::store::Status::Running) else {
            return Ok(false);
        };
        let open =
            stored_incidents(&record.state).map_err(|e| RetryError::Store(id, e.to_string()))?;
        Ok(open.iter().any(|i| i.number == id.number))
    }

    /// Hand the retry of incident `id` to the node that runs its instance: a stored
    /// request (a message of a reserved name, keyed by the incident) that node
    /// claims — or the one that takes the instance over.
    #[cfg(feature = "postgres")]
    async fn retry_elsewhere(
        &self,
        node: &std::sync::Arc<super::cluster::Node>,
        id: IncidentId,
    ) -> Result<(), RetryError> {
        self.request_retry(node, id, "null".to_string()).await
    }

    /// Store the request to retry incident `id` (with the data to put first, as
    /// JSON, unless `null`) for the node that runs its instance.
    #[cfg(feature = "postgres")]
    async fn request_retry(
        &self,
        node: &std::sync::Arc<super::cluster::Node>,
        id: IncidentId,
        data: String,
    ) -> Result<(), RetryError> {
        if !self.stored_incident(id).await? {
            return Err(RetryError::NoIncident(id));
        }
        let record = crate::store::MessageRecord {
            id: self
                .inner
                .next_message
                .fetch_add(1, std::sync::atomic::Ordering::Relaxed),
            name: super::claims::RETRY_REQUEST.to_string(),
            key: super::claims::retry_key(id),
            payload: data,
            expires_ms: crate::instance::durable::now_ms() + RETRY_REQUEST_TTL.as_millis() as i64,
        };
        let store = node.store.clone();
        tokio::task::spawn_blocking(move || store.store_message(&record, false, &[]))
            .await
            .map_err(|e| RetryError::Store(id, e.to_string()))?
            .map_err(|e| RetryError::Store(id, e.to_string()))?;
        Ok(())
    }
}

/// How long a retry request handed to another node waits to be claimed (its
/// instance may be between owners for a lease).
#[cfg(feature = "postgres")]
const RETRY_REQUEST_TTL: Duration = Duration::from_secs(24 * 3600);

/// The open incidents the stored `record` of an instance of `process` (its graph
/// `graph`) holds, by number.
pub(super) fn incidents_of<D>(
    record: &crate::store::InstanceRecord,
    process: &'static str,
    graph: &'static crate::graph::Graph<D>,
) -> Result<Vec<Incident>, EngineError> {
    if record.status != crate::store::Status::Running {
        return Ok(Vec::new());
    }
    let stored = stored_incidents(&record.state).map_err(|e| EngineError::Data {
        process,
        message: format!("instance {}'s checkpoint: {e}", record.id),
    })?;
    let mut incidents: Vec<Incident> = stored
        .into_iter()
        .filter_map(|incident| {
            let node = graph.nodes().iter().find(|n| n.id == incident.node)?;
            Some(Incident {
                id: IncidentId {
                    instance: InstanceId(record.id),
                    number: incident.number,
                },
                process,
                node: node.id,
                error: incident.error,
                attempts: incident.attempts,
                opened: UNIX_EPOCH + Duration::from_millis(incident.opened_ms),
            })
        })
        .collect();
    incidents.sort_by_key(|i| i.id.number);
    Ok(incidents)
}
