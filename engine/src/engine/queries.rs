//! The in-memory engine's instance queries (from its listing, `query/memory.rs`)
//! and its keyed start.

use super::{Engine, EngineError};
use crate::data::{Erased, ProcessData};
use crate::instance::{Entry, InstanceHandle, InstanceId};
use crate::query::memory::{Keys, View};
use crate::query::{page_of, DueTimer, InstanceSummary, Page, Query, QueryError};

impl Engine {
    /// [`Engine::start`] with a business key: the caller's name for the instance
    /// (an order number), found again with [`Query::key`]. Not unique: several
    /// instances of a process may share one (as in Camunda); a query by key lists
    /// them all. An empty key, or one holding a NUL, is
    /// [`EngineError::BadBusinessKey`]. The same call as
    /// [`DurableEngine::start_keyed`](crate::DurableEngine::start_keyed).
    pub async fn start_keyed<D: ProcessData>(
        &self,
        process: &'static crate::Process<D>,
        business_key: impl Into<String>,
        data: D,
    ) -> Result<InstanceHandle<D>, EngineError> {
        let key = crate::query::check_business_key(business_key.into())
            .map_err(|reason| EngineError::BadBusinessKey { reason })?;
        let graph = process.graph();
        let keys = Keys {
            business: Some(key.into_boxed_str()),
            correlation: None,
        };
        self.start_by(Erased::new(data), |inner, admitted, runtime, data| {
            inner.spawn(admitted, runtime, graph, data, Entry::NoneStart, keys)
        })
        .map(InstanceHandle::typed)
    }

    /// The instances `query` selects, one page, each with its data as `D` as the
    /// instance last rested (every token waiting) or ended. From memory: the
    /// running instances that have rested at least once (one that ends in its
    /// first step is never listed) and the last
    /// [`EngineConfig::keep_ended`](crate::EngineConfig::keep_ended) ended ones. A
    /// query by name ([`Query::named`]) is [`QueryError::Untyped`] here. The same
    /// call as `DurableEngine::instances`.
    pub async fn instances<D: Clone + 'static>(
        &self,
        query: &Query<D>,
    ) -> Result<Page<D>, EngineError> {
        let filter = resolve(query)?;
        let rows = self.inner.hub.listing.select(&filter, summary::<D>);
        Ok(page_of(&filter, rows, Ok)?)
    }

    /// How many instances `query` selects (its order and page ignored).
    pub async fn count<D: 'static>(&self, query: &Query<D>) -> Result<u64, EngineError> {
        Ok(self.inner.hub.listing.count(&resolve(query)?))
    }

    /// The running instances' armed timers (timer catches, boundaries, event
    /// sub-process starts), earliest due first, at most `limit`, as each instance
    /// last rested. The same call as `DurableEngine::timers_due`, which reads the
    /// store (here nothing fails).
    pub async fn timers_due(&self, limit: usize) -> Result<Vec<DueTimer>, EngineError> {
        let timers = self
            .inner
            .hub
            .listing
            .timers(limit)
            .into_iter()
            .map(|(id, graph, node, due_ms)| DueTimer {
                instance: InstanceId(id),
                process: graph.name.to_string(),
                version: Some(graph.version),
                element: graph.nodes[node].id.to_string(),
                due_ms,
            })
            .collect();
        Ok(timers)
    }

    /// A listed instance of `process` drawn on its process (SVG): a token at each
    /// element it waits at as it last rested, an incident where one is open. `None`
    /// if this engine lists no such instance (see [`Engine::instances`]). The same
    /// call as [`DurableEngine::picture`](crate::DurableEngine::picture), which
    /// reads the store.
    pub async fn picture<D: 'static>(
        &self,
        process: &'static crate::Process<D>,
        id: InstanceId,
    ) -> Result<Option<String>, EngineError> {
        let filter = resolve(&Query::of(process).id(id))?;
        let graph = process.graph();
        let waits: Option<Vec<&'static str>> = self
            .inner
            .hub
            .listing
            .select(&filter, |v| {
                v.waits.iter().map(|&n| graph.nodes[n].id).collect()
            })
            .pop();
        let Some(waits) = waits else {
            return Ok(None);
        };
        let incidents: Vec<_> = self
            .incidents_now()
            .into_iter()
            .filter(|i| i.id.instance == id)
            .collect();
        let mut history = crate::instance::History::default();
        for (track, node) in waits.into_iter().enumerate() {
            let what = match incidents.iter().find(|i| i.node == node) {
                Some(i) => crate::instance::Happening::Incident {
                    error: i.error.clone(),
                    attempts: i.attempts,
                },
                None => crate::instance::Happening::Waiting,
            };
            history.push(crate::instance::TrackId(track as u32), node, what);
        }
        Ok(Some(process.to_svg_with(&history)))
    }
}

fn resolve<D: 'static>(query: &Query<D>) -> Result<crate::query::InstanceQuery, QueryError> {
    let process = query.process().ok_or(QueryError::Untyped)?;
    let ids: Vec<&str> = process.graph().nodes.iter().map(|n| n.id).collect();
    query.resolve(&ids)
}

fn summary<D: Clone + 'static>(v: View<'_>) -> InstanceSummary<D> {
    let data = v
        .data
        .get::<D>()
        .cloned()
        .expect("a listed instance's data is its process's type");
    InstanceSummary {
        id: InstanceId(v.id),
        process: v.graph.name.to_string(),
        fingerprint: v.graph.fingerprint,
        version: Some(v.graph.version),
        status: v.status,
        business_key: v.business_key.map(str::to_string),
        key: v.key.map(str::to_string),
        started_ms: v.started_ms,
        ended_ms: v.ended_ms,
        waiting_at: v
            .waits
            .iter()
            .map(|&n| v.graph.nodes[n].id.to_string())
            .collect(),
        incidents: v.incidents,
        data,
    }
}
