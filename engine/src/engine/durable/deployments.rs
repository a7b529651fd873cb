//! A durable engine's deployments: each stored as a record (its data, its timer
//! schedules) that a deploy after a restart takes up again; on a node of several,
//! one record shared by the nodes that deploy the process.

use crate::data::Storable;
use std::sync::atomic::Ordering;
use std::sync::Arc;

use super::{schedule, Adopt, DurableEngine, EngineError};
use crate::data::{Erased, ProcessData};
use crate::graph::Trigger;
use crate::graph::{Graph, Process};
use crate::instance::durable::records::Codec;
use crate::store::{parse_anchors, DeploymentRecord, Write};

impl DurableEngine {
    /// Deploy `process` (registering it): its start events start durable instances —
    /// each stored by its first checkpoint, which also consumes the durably published
    /// message that started it. Deploy again after a restart (deployments are code):
    /// its timer starts go on with their stored schedules — a cycle's next tick due a
    /// period after the last one (ticks missed meanwhile fire at once, each once, in
    /// order), a date that fired does not fire again, a finite cycle keeps its count.
    /// A deploy takes the oldest stored deployment of its process; one stored under
    /// another fingerprint begins its schedules anew — unless it is of an older
    /// registered version of the process (README, "Versions"): then the timer starts
    /// of the same id go on with its schedules. A deploy of a newer version than
    /// one deployed here replaces that deployment and goes on with its schedules.
    pub fn deploy<D>(
        &self,
        process: &'static Process<D>,
        data: D,
    ) -> Result<crate::engine::Deployment<D>, EngineError>
    where
        D: ProcessData + Storable,
    {
        self.register(process)?;
        let deployment =
            self.deploy_graph(process.graph(), Codec::json_of::<D>(), Erased::new(data))?;
        Ok(deployment.typed())
    }

    /// [`DurableEngine::deploy`] past the typed edge.
    fn deploy_graph(
        &self,
        process: &'static Graph<Erased>,
        codec: Codec<Erased>,
        data: Erased,
    ) -> Result<crate::engine::Deployment<Erased>, EngineError> {
        // The newest version's start events start instances: this deployment
        // replaces those of older versions here, and goes on with their schedules.
        for older in self.engine.older_deployments(process)? {
            self.engine.undeploy(older);
            let taken = self
                .inner
                .deployed
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .remove(&older);
            if let Some((_, schedules)) = taken {
                self.inner
                    .stored_deployments
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .entry(process.name().to_string())
                    .or_default()
                    .push_front(schedules.record_now());
            }
        }
        let (record, shared) = self.deployment_record(process, (codec.encode)(&data).ok());
        let record_id = record.id;
        let schedules = Arc::new(schedule::Schedules::new(
            self.inner.writer.clone(),
            record,
            shared,
        ));
        let durable = crate::engine::DurableStarts {
            writer: self.inner.writer.clone(),
            codec,
            keep_history: self.inner.keep_history.load(Ordering::Relaxed),
            #[cfg(feature = "postgres")]
            started: self.started_hook(),
            #[cfg(not(feature = "postgres"))]
            started: None,
            every_task: self.every_task(),
            schedules: schedules.clone(),
        };
        let (deployment, adopter) = self.engine.deploy_with(process, data, Some(durable))?;
        let adopt: Arc<Adopt> = Arc::new(move |key, handle| {
            adopter.adopt(key.to_string(), handle.clone());
        });
        // Instances resumed before this deployment keep their keys in it.
        {
            let resumed = self.inner.resumed.lock().unwrap_or_else(|p| p.into_inner());
            for r in resumed
                .values()
                .filter(|r| r.process.name == process.name())
            {
                if let Some(key) = &r.key {
                    adopt(key, &r.handle);
                }
            }
        }
        self.inner
            .adopters
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(process.name(), adopt);
        self.inner
            .deployed
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(deployment.id(), (record_id, schedules));
        Ok(deployment)
    }

    /// Undeploy: stop the deployment's start events (the running instances go on)
    /// and remove its stored timer schedules — unlike a shutdown, which keeps them
    /// for the next deploy. `false` if it was not deployed.
    pub async fn undeploy(
        &self,
        deployment: crate::engine::DeploymentId,
    ) -> Result<bool, EngineError> {
        if !self.engine.undeploy(deployment) {
            return Ok(false);
        }
        let record = self
            .inner
            .deployed
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(&deployment);
        #[cfg(feature = "postgres")]
        if self.inner.node.get().is_some() {
            // The other nodes share its schedule and go on with it.
            return Ok(true);
        }
        if let Some((id, _)) = record {
            self.inner
                .writer
                .submit(vec![Write::RemoveDeployment { id }])
                .await?;
        }
        Ok(true)
    }

    /// The stored deployment a deploy of `process` goes on with, or a new one, and
    /// whether its schedules are shared with other engine nodes. A node's
    /// deployment is the one every node deploying the same model shares: its id is
    /// derived from the process, its fingerprint and how many deployments of it this
    /// node has (the n-th of each node share one), and its schedules are read from
    /// the store when they tick.
    fn deployment_record(
        &self,
        process: &'static Graph<Erased>,
        data: Option<serde_json::Value>,
    ) -> (DeploymentRecord, bool) {
        let data = data.map_or_else(|| "null".to_string(), |d| d.to_string());
        #[cfg(feature = "postgres")]
        if self.inner.node.get().is_some() {
            let deployed = self
                .inner
                .deployed
                .lock()
                .unwrap_or_else(|p| p.into_inner());
            let id = (0..)
                .map(|nth| shared_deployment_id(process.name(), process.fingerprint(), nth))
                .find(|id| !deployed.values().any(|(d, _)| d == id))
                .unwrap_or_default();
            let record = DeploymentRecord {
                id,
                process: process.name().to_string(),
                fingerprint: process.fingerprint(),
                data,
                timer_anchors: "{}".to_string(),
            };
            return (record, true);
        }
        let stored = self
            .inner
            .stored_deployments
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get_mut(process.name())
            .and_then(std::collections::VecDeque::pop_front);
        let record = match stored {
            Some(record) if record.fingerprint == process.fingerprint() => record,
            // The model changed: its schedules begin anew, in the same record —
            // but from an older version, the timer starts it kept go on.
            Some(record) => {
                let record = DeploymentRecord {
                    id: record.id,
                    process: process.name().to_string(),
                    fingerprint: process.fingerprint(),
                    data,
                    timer_anchors: self.carried_anchors(process, &record),
                };
                self.inner
                    .writer
                    .send(vec![Write::PutDeployment(record.clone())]);
                record
            }
            None => DeploymentRecord {
                id: self.inner.next_deployment.fetch_add(1, Ordering::Relaxed),
                process: process.name().to_string(),
                fingerprint: process.fingerprint(),
                data,
                timer_anchors: "{}".to_string(),
            },
        };
        (record, false)
    }
}

impl DurableEngine {
    /// The schedules of `stored` (a deployment of `process`'s name under another
    /// fingerprint) that a deploy of `process` goes on with: if `stored` is of an
    /// older registered version, those of its timer starts that `process` has too
    /// (by id); else none.
    fn carried_anchors(
        &self,
        process: &'static Graph<Erased>,
        stored: &DeploymentRecord,
    ) -> String {
        let older = self
            .engine
            .inner
            .versions()
            .of_name(process.name())
            .iter()
            .any(|v| {
                v.graph.fingerprint == stored.fingerprint && v.graph.version < process.version()
            });
        let Some(mut anchors) = older
            .then(|| parse_anchors(&stored.timer_anchors))
            .flatten()
        else {
            return "{}".to_string();
        };
        anchors.retain(|start, _| {
            process.starts.iter().any(|&s| {
                let node = &process.nodes[s];
                node.id == start && matches!(node.kind.trigger(), Some(Trigger::Timer(_)))
            })
        });
        serde_json::to_string(&anchors).unwrap_or_else(|_| "{}".to_string())
    }
}

/// The id of the `nth` deployment of a process (by name and fingerprint) that the
/// engine nodes on one store share: FNV-1a of the three, in the upper half of the
/// id space below `i64::MAX` (a single engine's ids count up from 0).
#[cfg(feature = "postgres")]
fn shared_deployment_id(process: &str, fingerprint: u64, nth: u32) -> u64 {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    let bytes = process
        .bytes()
        .chain(fingerprint.to_le_bytes())
        .chain(nth.to_le_bytes());
    for byte in bytes {
        hash ^= u64::from(byte);
        hash = hash.wrapping_mul(0x0100_0000_01b3);
    }
    (1 << 62) | (hash >> 2)
}
