//! What the store holds of instances, read by a durable engine: one instance's
//! status and outcome, a listing of ended ones and their purge, and a stored
//! instance's picture and history — also of an instance no engine runs now.

use std::time::Duration;

use super::*;

impl DurableEngine {
    /// What the store holds of an instance: its status and, once it ended, its
    /// outcome as JSON (`{"outcome": "completed", "error": null, "data": {...}}`).
    pub async fn instance(
        &self,
        id: InstanceId,
    ) -> Result<Option<(Status, Option<String>)>, EngineError> {
        let store = self.inner.store.clone();
        let record = tokio::task::spawn_blocking(move || store.instance(id.0))
            .await
            .map_err(|_| EngineError::NoRuntime)??;
        Ok(record.map(|r| (r.status, r.outcome)))
    }

    /// The stored instances of `process` (any if `None`) with `status` (any if
    /// `None`): id, status and, for ended ones, the outcome JSON.
    pub async fn list(
        &self,
        process: Option<&str>,
        status: Option<Status>,
    ) -> Result<Vec<(InstanceId, Status, Option<String>)>, EngineError> {
        let store = self.inner.store.clone();
        let process = process.map(str::to_string);
        let records = tokio::task::spawn_blocking(move || store.list(process.as_deref(), status))
            .await
            .map_err(|_| EngineError::NoRuntime)??;
        Ok(records
            .into_iter()
            .map(|r| (InstanceId(r.id), r.status, r.outcome))
            .collect())
    }

    /// Remove ended instances that ended more than `retention` ago (running ones are
    /// never purged; ids are never reused).
    pub async fn purge(&self, retention: Duration) -> Result<(), EngineError> {
        let before = now_ms() - retention.as_millis() as i64;
        self.inner
            .writer
            .submit(vec![Write::Purge {
                ended_before_ms: before,
            }])
            .await?;
        Ok(())
    }

    /// The stored record of instance `id` of `process` and the graph of the version
    /// it was stored under; `None` if there is none, or its model is not registered.
    async fn stored_of<D>(
        &self,
        process: &'static Process<D>,
        id: InstanceId,
    ) -> Result<Option<(&'static Graph<Erased>, InstanceRecord)>, EngineError> {
        let store = self.inner.store.clone();
        let record = tokio::task::spawn_blocking(move || store.instance(id.0))
            .await
            .map_err(|_| EngineError::NoRuntime)??;
        let Some(record) = record else {
            return Ok(None);
        };
        let graph = match record.fingerprint == process.fingerprint() {
            true if record.process == process.name() => process.graph(),
            _ => match self.registered(&record.process, record.fingerprint) {
                Some(r) if r.graph.name == process.name() => r.graph,
                _ => return Ok(None),
            },
        };
        Ok(Some((graph, record)))
    }

    /// A stored instance of `process` drawn on its process (SVG), from what the
    /// store holds — also of an instance no engine runs now: the flows it took and
    /// the nodes it passed (when the engine keeps histories,
    /// [`keep_history`](Self::keep_history)) and where its tokens are (waiting for
    /// an event, at a join, in a task or sub-process, at an incident). An instance
    /// of another registered version of the process is drawn on that version (its
    /// title names it). `None` if no such instance is stored, or it was stored
    /// under a model not registered here.
    pub async fn picture<D: ProcessData>(
        &self,
        process: &'static Process<D>,
        id: InstanceId,
    ) -> Result<Option<String>, EngineError> {
        let Some((graph, record)) = self.stored_of(process, id).await? else {
            return Ok(None);
        };
        let mut history = crate::instance::History::default();
        if let Ok(Checkpoint::Running(mut snapshot)) = serde_json::from_str(&record.state) {
            // What it did, up to where each token is now; without a kept history,
            // where each token is now.
            if let Some(kept) = snapshot.history(graph, D::FIELDS) {
                history = kept;
            } else if record.status == Status::Running {
                for track in &snapshot.tracks {
                    let Some(node) = graph.node(&track.at) else {
                        continue;
                    };
                    history.push(
                        crate::instance::TrackId(track.id),
                        node.id,
                        snapshot.happening_of(track),
                    );
                }
            }
        }
        Ok(Some(crate::diagram::svg_with(graph, &history)))
    }

    /// The history of a stored instance of `process` as its last checkpoint keeps
    /// it: `None` if the engine keeps none ([`keep_history`](Self::keep_history) is
    /// off when it is written), or no such instance is stored under a registered
    /// model. The history an instance's handle gives, read from the store — also of
    /// an instance no engine runs now.
    pub async fn history<D: ProcessData>(
        &self,
        process: &'static Process<D>,
        id: InstanceId,
    ) -> Result<Option<crate::History>, EngineError> {
        let Some((graph, record)) = self.stored_of(process, id).await? else {
            return Ok(None);
        };
        match serde_json::from_str(&record.state) {
            Ok(Checkpoint::Running(mut snapshot)) => Ok(snapshot.history(graph, D::FIELDS)),
            _ => Ok(None),
        }
    }
}
