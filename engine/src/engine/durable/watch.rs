//! [`Watched`]: an instance seen through the store, whichever engine (node) runs it.

use crate::data::Storable;
use std::time::Duration;

use serde::de::DeserializeOwned;
use serde::Serialize;

use super::{DurableEngine, EngineError};
use crate::data::ProcessData;
use crate::graph::Process;
use crate::instance::durable::records::{Checkpoint, Codec};
use crate::instance::InstanceId;
use crate::store::{InstanceRecord, Status, StoreError};

/// A stored instance read from the store: its status, its last stored data, and
/// its outcome once it ended — also of an instance another node runs (or none yet:
/// one waiting for a node to take it over). From [`DurableEngine::watch`].
///
/// Needs the `durable` feature.
#[cfg_attr(docsrs, doc(cfg(feature = "durable")))]
pub struct Watched<D: 'static> {
    engine: DurableEngine,
    process: &'static Process<D>,
    id: InstanceId,
    poll: Duration,
}

/// How a watched instance ended.
///
/// Needs the `durable` feature.
#[derive(Clone, Debug, PartialEq)]
#[cfg_attr(docsrs, doc(cfg(feature = "durable")))]
pub struct WatchedOutcome<D> {
    /// How it ended (never `Running`).
    pub status: Status,
    /// For a failed instance: the error, as its owner displayed it.
    pub error: Option<String>,
    /// Its data at the end.
    pub data: D,
}

impl DurableEngine {
    /// The instance `id` of `process` as the store holds it, whichever node runs it:
    /// await its outcome, read its data. Reads poll the store (every
    /// [`NodeConfig::poll`](super::NodeConfig) on a node of several, else every 50 ms).
    pub fn watch<D>(&self, process: &'static Process<D>, id: InstanceId) -> Watched<D>
    where
        D: ProcessData + Storable,
    {
        #[cfg(feature = "postgres")]
        let poll = self
            .inner
            .node
            .get()
            .map_or(Duration::from_millis(50), |n| n.poll());
        #[cfg(not(feature = "postgres"))]
        let poll = Duration::from_millis(50);
        Watched {
            engine: self.clone(),
            process,
            id,
            poll,
        }
    }
}

impl<D> Watched<D>
where
    D: ProcessData + Serialize + DeserializeOwned,
{
    /// The instance's id.
    pub fn id(&self) -> InstanceId {
        self.id
    }

    /// Its stored record: unknown if not stored, or stored for another process.
    async fn record(&self) -> Result<InstanceRecord, EngineError> {
        let store = self.engine.inner.store.clone();
        let id = self.id.0;
        let record = tokio::task::spawn_blocking(move || store.instance(id))
            .await
            .map_err(|_| EngineError::NoRuntime)??;
        record
            .filter(|r| r.process == self.process.name())
            .ok_or(EngineError::Store(StoreError::UnknownInstance { id }))
    }

    fn decode(&self, value: serde_json::Value) -> Result<D, EngineError> {
        (Codec::<D>::json().decode)(value).map_err(|message| EngineError::Data {
            process: self.process.name(),
            message,
        })
    }

    fn data_of(&self, record: &InstanceRecord) -> Result<D, EngineError> {
        let unreadable = |e: serde_json::Error| EngineError::Data {
            process: self.process.name(),
            message: e.to_string(),
        };
        if let Some(outcome) = &record.outcome {
            let mut outcome: serde_json::Value =
                serde_json::from_str(outcome).map_err(unreadable)?;
            return self.decode(outcome["data"].take());
        }
        match serde_json::from_str(&record.state).map_err(unreadable)? {
            Checkpoint::Born { data, .. } => self.decode(data),
            Checkpoint::Running(snapshot) => self.decode(snapshot.data),
        }
    }

    /// Its status now.
    pub async fn status(&self) -> Result<Status, EngineError> {
        Ok(self.record().await?.status)
    }

    /// Its open incidents as last stored (none once it ended): a running instance
    /// with one waits there for a retry.
    pub async fn incidents(&self) -> Result<Vec<crate::retry::Incident>, EngineError> {
        let record = self.record().await?;
        super::incidents::incidents_of(&record, self.process.name(), self.process.graph())
    }

    /// Its data as last stored (its last checkpoint, or its end).
    pub async fn data(&self) -> Result<D, EngineError> {
        let record = self.record().await?;
        self.data_of(&record)
    }

    /// Wait until it ended, and say how.
    pub async fn outcome(&self) -> Result<WatchedOutcome<D>, EngineError> {
        loop {
            let record = self.record().await?;
            if record.status.is_ended() {
                let error = record
                    .outcome
                    .as_deref()
                    .and_then(|o| serde_json::from_str::<serde_json::Value>(o).ok())
                    .and_then(|o| o["error"].as_str().map(str::to_string));
                return Ok(WatchedOutcome {
                    status: record.status,
                    error,
                    data: self.data_of(&record)?,
                });
            }
            tokio::time::sleep(self.poll).await;
        }
    }
}
