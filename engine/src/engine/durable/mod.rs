//! A durable engine (feature `durable`; a SQLite file with feature `sqlite`): its
//! instances are stored when they start and checkpointed after every step, so they
//! survive a crash, a deploy or a restart, and [`DurableEngine::resume`] goes on with
//! them.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde::de::DeserializeOwned;
use serde::Serialize;

mod calls;
#[cfg(feature = "postgres")]
mod claims;
#[cfg(feature = "postgres")]
mod cluster;
mod messages;
mod report;
pub(super) mod schedule;
mod signals;
mod watch;

#[cfg(feature = "postgres")]
pub use cluster::NodeConfig;
pub use watch::{Watched, WatchedOutcome};

pub use report::{DurableError, ResumeReport, SkipReason, Skipped};

use super::{Engine, ShutdownError};
use crate::data::{Erased, ProcessData};

use crate::graph::{Graph, Payload, Process};
use crate::instance::durable::{now_ms, Durable};
use crate::instance::snapshot::{Checkpoint, Codec};
use crate::instance::{Entry, InstanceHandle, InstanceId};
use crate::store::{DeploymentRecord, InstanceRecord, Status, Store, Write, Writer};

/// When a durable instance is checkpointed ([`DurableEngine::checkpoints`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Checkpoints {
    /// After every step that changed the instance, and a task after a task starts
    /// only once the checkpoint recording its predecessor's completion is stored:
    /// after a crash, only the tasks that were running run again.
    #[default]
    EveryTask,
    /// Only when no task works (every token waits: at a catch, a user or receive
    /// task, a timer, a join), when an acknowledgment waits for it (a user task's
    /// completion, a durable broadcast), and at the end. Fewer writes for instances
    /// that run many tasks between waits, and tasks start without waiting for the
    /// disk; after a crash, every task since the instance's last checkpoint — its
    /// last wait state — runs again, and a message it took since is delivered again
    /// (still applied once: its consume goes with a checkpoint).
    WaitStates,
}

/// An engine whose instances survive a restart.
///
/// Every instance is stored before [`start`](Self::start) returns (a crash after that
/// cannot lose it) and checkpointed after every step that changed it, in group
/// commits across instances. After a restart, [`register`](Self::register) the
/// processes and [`resume`](Self::resume): every stored running instance goes on from
/// its last checkpoint — committed task completions are kept, waits are armed again
/// (timers at their recorded deadlines), and a task that was running runs again (at
/// least once: make its side effects idempotent).
///
/// ```
/// # use thresh::{process, DurableEngine, ProcessData, store::MemoryStore};
/// # #[derive(Clone, Debug, Default, PartialEq, ProcessData, serde::Serialize, serde::Deserialize)]
/// # pub struct Leave { pub approved: bool }
/// process! { pub LEAVE: Leave { start s; user approve; end e; s -> approve -> e; } }
/// # #[tokio::main(flavor = "current_thread")] async fn main() {
/// let store = std::sync::Arc::new(MemoryStore::new());
/// let engine = DurableEngine::with_store(store.clone()).unwrap();
/// let handle = engine.start(&LEAVE, Leave::default()).await.unwrap();
/// # while handle.open_work().await.is_empty() { tokio::task::yield_now().await; }
/// engine.shutdown(std::time::Duration::from_secs(1)).await.unwrap();
///
/// // Later, in a new process, on the same store:
/// let engine = DurableEngine::with_store(store).unwrap();
/// engine.register(&LEAVE).unwrap();
/// let report = engine.resume().await.unwrap();
/// let handle = engine.handle(&LEAVE, report.resumed[0].0).unwrap();
/// # while handle.open_work().await.is_empty() { tokio::task::yield_now().await; }
/// handle.complete("approve", |l: &mut Leave| l.approved = true).await.unwrap();
/// assert!(handle.outcome().await.completed().unwrap().approved);
/// # }
/// ```
#[derive(Clone)]
pub struct DurableEngine {
    engine: Engine,
    inner: Arc<Inner>,
}

pub(crate) struct Inner {
    store: Arc<dyn Store>,
    writer: Writer,
    /// Registered processes by name.
    registry: Mutex<HashMap<&'static str, Registered>>,
    /// Handles of resumed instances, by id (each an `InstanceHandle<D>`), with their
    /// process and correlation key.
    resumed: Mutex<HashMap<u64, Resumed>>,
    /// Each durably deployed process's deployment, told of resumed instances with a
    /// correlation key.
    adopters: Mutex<HashMap<&'static str, Arc<Adopt>>>,
    /// How a stored message's payload is read back, by message name.
    payloads: Mutex<HashMap<String, PayloadDecoder>>,
    /// The names in `payloads` whose decoder reads any payload as `()` (learnt from
    /// a catch without `apply`): a typed one found later replaces it.
    payloads_ignored: Mutex<std::collections::HashSet<String>>,
    next_message: AtomicU64,
    /// How long a published message waits in the store for its catch.
    message_ttl: Duration,
    /// Whether checkpoints carry the instances' histories.
    keep_history: std::sync::atomic::AtomicBool,
    /// On while `resume` resumes the stored instances: a resumed parent's call
    /// looks for its child once it is off.
    resuming: tokio::sync::watch::Sender<bool>,
    /// Set for a node of several engines on PostgreSQL ([`DurableEngine::connect`]).
    #[cfg(feature = "postgres")]
    node: std::sync::OnceLock<Arc<cluster::Node>>,
    /// Whether instances checkpoint only at wait states ([`Checkpoints::WaitStates`]).
    wait_states_only: std::sync::atomic::AtomicBool,
    /// Stored deployments not deployed again yet, by process name, oldest first: a
    /// deploy of the process takes the first and goes on with its timer schedules.
    stored_deployments: Mutex<HashMap<String, std::collections::VecDeque<DeploymentRecord>>>,
    next_deployment: AtomicU64,
    /// The stored deployment record of each deployment of this engine.
    deployed: Mutex<HashMap<super::DeploymentId, u64>>,
}

/// A resumed instance's handle.
struct Resumed {
    process: &'static str,
    key: Option<String>,
    handle: InstanceHandle<Erased>,
}

/// Gives a deployment a resumed instance (its key, its handle).
type Adopt = dyn Fn(&str, &InstanceHandle<Erased>) + Send + Sync;

/// Reads a stored message's JSON payload back into the type it was published with.
pub(super) type PayloadDecoder = fn(serde_json::Value) -> Result<Payload, String>;

/// A registered process: its graph, and how its data is stored (made where its
/// type is known, at `register`) — all that resuming its instances, starting its
/// durable children and reading a child's stored end need.
struct Registered {
    graph: &'static Graph<Erased>,
    codec: Codec<Erased>,
}

#[cfg(feature = "sqlite")]
impl Engine {
    /// A durable engine on the SQLite file at `path` (created if missing): the
    /// [`DurableEngine`] — instances stored when they start, checkpointed as they
    /// go, resumed after a restart. The same as [`DurableEngine::open`].
    ///
    /// ```no_run
    /// # async fn run() -> Result<(), thresh::DurableError> {
    /// let engine = thresh::Engine::open("orders.db").await?;
    /// let report = engine.resume().await?;
    /// # let _ = report; Ok(()) }
    /// ```
    pub async fn open(path: impl AsRef<std::path::Path>) -> Result<DurableEngine, DurableError> {
        DurableEngine::open(path).await
    }
}

impl DurableEngine {
    /// A durable engine on the SQLite file at `path`, created if missing.
    #[cfg(feature = "sqlite")]
    pub async fn open(path: impl AsRef<std::path::Path>) -> Result<Self, DurableError> {
        let path = path.as_ref().to_path_buf();
        let store = tokio::task::spawn_blocking(move || crate::store::SqliteStore::open(path))
            .await
            .map_err(|_| DurableError::NoRuntime)??;
        Self::with_store(Arc::new(store))
    }

    /// A durable engine on the PostgreSQL database at `url` (schema
    /// [`DEFAULT_SCHEMA`](crate::store::DEFAULT_SCHEMA)), as one node of any number
    /// of engines sharing it: see [`NodeConfig`] and the README, "Several nodes on
    /// PostgreSQL".
    #[cfg(feature = "postgres")]
    pub async fn connect(url: &str) -> Result<Self, DurableError> {
        Self::connect_with(url, NodeConfig::default()).await
    }

    /// A durable engine on `store`.
    pub fn with_store(store: Arc<dyn Store>) -> Result<Self, DurableError> {
        let writer = Writer::spawn(store.clone())?;
        let engine = Engine::new();
        // Ids continue after every id the store has seen.
        let next = store.next_ids()?;
        engine
            .inner
            .next_instance
            .store(next.instance, Ordering::Relaxed);
        let message_ttl = crate::events::BrokerConfig::default().ttl;
        let mut stored_deployments: HashMap<String, std::collections::VecDeque<_>> = HashMap::new();
        for record in store.deployments()? {
            stored_deployments
                .entry(record.process.clone())
                .or_default()
                .push_back(record);
        }
        let inner = Arc::new(Inner {
            store,
            writer,
            registry: Mutex::new(HashMap::new()),
            resumed: Mutex::new(HashMap::new()),
            adopters: Mutex::new(HashMap::new()),
            payloads: Mutex::new(HashMap::new()),
            payloads_ignored: Mutex::new(std::collections::HashSet::new()),
            next_message: AtomicU64::new(next.message),
            message_ttl,
            keep_history: std::sync::atomic::AtomicBool::new(false),
            resuming: tokio::sync::watch::channel(false).0,
            #[cfg(feature = "postgres")]
            node: std::sync::OnceLock::new(),
            wait_states_only: std::sync::atomic::AtomicBool::new(false),
            stored_deployments: Mutex::new(stored_deployments),
            next_deployment: AtomicU64::new(next.deployment),
            deployed: Mutex::new(HashMap::new()),
        });
        // The engine's instances start their call activities' children durably.
        let _ = engine.inner.durable.set(Arc::downgrade(&inner));
        Ok(Self { engine, inner })
    }

    /// Store each instance's history with its checkpoints (off by default), so a
    /// resumed instance's history goes on from where it was instead of starting
    /// empty. What it costs: every checkpoint then writes the whole history so far —
    /// the store grows with the steps an instance has taken, and an instance that
    /// loops for ever should not keep it.
    pub fn keep_history(&self, keep: bool) {
        self.inner.keep_history.store(keep, Ordering::Relaxed);
    }

    /// When instances started or resumed from now on are checkpointed (default
    /// [`Checkpoints::EveryTask`]).
    pub fn checkpoints(&self, checkpoints: Checkpoints) {
        let wait_states = checkpoints == Checkpoints::WaitStates;
        self.inner
            .wait_states_only
            .store(wait_states, Ordering::Relaxed);
    }

    fn every_task(&self) -> bool {
        !self.inner.wait_states_only.load(Ordering::Relaxed)
    }

    /// The engine underneath: publish messages, broadcast signals, count instances.
    /// Instances it starts itself are not stored.
    pub fn engine(&self) -> &Engine {
        &self.engine
    }

    /// Register `process`: this engine may resume its stored instances, and reads
    /// back the stored payloads of the messages its catches and message starts take
    /// (by the type each `apply` takes, when it is `Deserialize`; a catch without
    /// `apply` takes any payload) — [`message_type`](Self::message_type) is needed
    /// only for other types, and on a node that publishes a message none of its
    /// processes catches.
    pub fn register<D>(&self, process: &'static Process<D>) -> Result<(), DurableError>
    where
        D: ProcessData + Serialize + DeserializeOwned,
    {
        self.learn_payload_types(process);
        let mut registry = self
            .inner
            .registry
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        if let Some(known) = registry.get(process.name()) {
            return match known.graph.fingerprint == process.fingerprint() {
                true => Ok(()),
                false => Err(DurableError::NameTaken {
                    process: process.name(),
                    registered: known.graph.fingerprint,
                    given: process.fingerprint(),
                }),
            };
        }
        registry.insert(
            process.name(),
            Registered {
                graph: process.graph(),
                codec: Codec::json_of::<D>(),
            },
        );
        Ok(())
    }

    /// Start an instance of `process` with `data` (registering the process); it is
    /// stored before this returns.
    pub async fn start<D>(
        &self,
        process: &'static Process<D>,
        data: D,
    ) -> Result<InstanceHandle<D>, DurableError>
    where
        D: ProcessData + Serialize + DeserializeOwned,
    {
        self.register(process)?;
        let handle = self
            .start_graph(process.graph(), Codec::json_of::<D>(), Erased::new(data))
            .await?;
        Ok(handle.typed())
    }

    /// [`DurableEngine::start`] past the typed edge: compiled once, for every data
    /// type.
    async fn start_graph(
        &self,
        process: &'static Graph<Erased>,
        codec: Codec<Erased>,
        data: Erased,
    ) -> Result<InstanceHandle<Erased>, DurableError> {
        let runtime = tokio::runtime::Handle::try_current().map_err(|_| DurableError::NoRuntime)?;
        let encoded = (codec.encode)(&data).map_err(|message| DurableError::Data {
            process: process.name(),
            message,
        })?;
        let state = serde_json::to_string(&Checkpoint::Born {
            data: encoded,
            start: None,
        })
        .map_err(|e| DurableError::Data {
            process: process.name(),
            message: e.to_string(),
        })?;
        let id = self.engine.inner.next_id().0;
        let record = InstanceRecord {
            id,
            process: process.name().to_string(),
            fingerprint: process.fingerprint(),
            status: Status::Running,
            key: None,
            seq: 1,
            state,
            outcome: None,
            updated_ms: now_ms(),
        };
        self.inner.writer.submit(vec![Write::Put(record)]).await?;
        let admitted = self
            .engine
            .inner
            .admit()
            .ok_or(DurableError::ShuttingDown)?;
        let mut durable = Durable::new(self.inner.writer.clone(), codec, id, 1, None);
        durable.keep_history = self.inner.keep_history.load(Ordering::Relaxed);
        durable.every_task = self.every_task();
        let handle = self.engine.inner.spawn_durable(
            admitted,
            &runtime,
            process,
            (data, Entry::NoneStart),
            durable,
            None,
        );
        #[cfg(feature = "postgres")]
        self.runs_here(&handle);
        Ok(handle)
    }

    /// Deploy `process` (registering it): its start events start durable instances —
    /// each stored by its first checkpoint, which also consumes the durably published
    /// message that started it. Deploy again after a restart (deployments are code):
    /// its timer starts go on with their stored schedules — a cycle's next tick due a
    /// period after the last one (ticks missed meanwhile fire at once, each once, in
    /// order), a date that fired does not fire again, a finite cycle keeps its count.
    /// A deploy takes the oldest stored deployment of its process; one stored under
    /// another fingerprint begins its schedules anew.
    pub fn deploy<D>(
        &self,
        process: &'static Process<D>,
        data: D,
    ) -> Result<super::Deployment<D>, DurableError>
    where
        D: ProcessData + Serialize + DeserializeOwned,
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
    ) -> Result<super::Deployment<Erased>, DurableError> {
        let (record, shared) = self.deployment_record(process, (codec.encode)(&data).ok());
        let record_id = record.id;
        let durable = super::DurableStarts {
            writer: self.inner.writer.clone(),
            codec,
            keep_history: self.inner.keep_history.load(Ordering::Relaxed),
            #[cfg(feature = "postgres")]
            started: self.started_hook(),
            #[cfg(not(feature = "postgres"))]
            started: None,
            every_task: self.every_task(),
            schedules: Arc::new(schedule::Schedules::new(
                self.inner.writer.clone(),
                record,
                shared,
            )),
        };
        let (deployment, adopter) = self
            .engine
            .deploy_with(process, data, Some(durable))
            .map_err(|e| match e {
                super::DeployError::NoRuntime => DurableError::NoRuntime,
                other => DurableError::Deploy(other),
            })?;
        let adopt: Arc<Adopt> = Arc::new(move |key, handle| {
            adopter.adopt(key.to_string(), handle.clone());
        });
        // Instances resumed before this deployment keep their keys in it.
        {
            let resumed = self.inner.resumed.lock().unwrap_or_else(|p| p.into_inner());
            for r in resumed.values().filter(|r| r.process == process.name()) {
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
            .insert(deployment.id(), record_id);
        Ok(deployment)
    }

    /// Undeploy: stop the deployment's start events (the running instances go on)
    /// and remove its stored timer schedules — unlike a shutdown, which keeps them
    /// for the next deploy. `false` if it was not deployed.
    pub async fn undeploy(&self, deployment: super::DeploymentId) -> Result<bool, DurableError> {
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
        if let Some(id) = record {
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
                .find(|id| !deployed.values().any(|d| d == id))
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
            // The model changed: its schedules begin anew, in the same record.
            Some(record) => {
                let record = DeploymentRecord {
                    id: record.id,
                    process: process.name().to_string(),
                    fingerprint: process.fingerprint(),
                    data,
                    timer_anchors: "{}".to_string(),
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

    /// Resume every stored running instance of a registered process. (A node of
    /// several, [`DurableEngine::connect`]: every such instance no live node owns —
    /// the others are theirs.)
    pub async fn resume(&self) -> Result<ResumeReport, DurableError> {
        #[cfg(feature = "postgres")]
        if let Some(node) = self.inner.node.get() {
            return node.clone().take_over_all(self).await;
        }
        let store = self.inner.store.clone();
        let running = tokio::task::spawn_blocking(move || store.running())
            .await
            .map_err(|_| DurableError::NoRuntime)??;
        let mut report = ResumeReport::default();
        // Resumed parents' calls look for their children once every one is resumed.
        self.inner.resuming.send_replace(true);
        let _resumed = ResumingDone(&self.inner.resuming);
        for record in running {
            self.resume_record(record, &mut report);
        }
        self.redeliver(&mut report).await?;
        Ok(report)
    }

    /// Resume one stored running instance, if its process is registered under its
    /// fingerprint; say what became of it in `report`.
    fn resume_record(&self, record: InstanceRecord, report: &mut ResumeReport) {
        {
            let id = InstanceId(record.id);
            let registered = {
                let registry = self
                    .inner
                    .registry
                    .lock()
                    .unwrap_or_else(|p| p.into_inner());
                registry
                    .get(record.process.as_str())
                    .map(|r| (r.graph, r.codec))
            };
            let skip = |reason| Skipped {
                id,
                process: record.process.clone(),
                reason,
            };
            let Some((graph, codec)) = registered else {
                report.skipped.push(skip(SkipReason::NotRegistered));
                return;
            };
            if graph.fingerprint != record.fingerprint {
                report.skipped.push(skip(SkipReason::ModelChanged {
                    stored: record.fingerprint,
                    registered: graph.fingerprint,
                }));
                return;
            }
            let process = record.process.clone();
            let key = record.key.clone();
            match self.resume_one(graph, codec, record) {
                Ok(handle) => {
                    let name = self.process_name(&process);
                    // A deployment of its process owns its key again.
                    let adopt = self
                        .inner
                        .adopters
                        .lock()
                        .unwrap_or_else(|p| p.into_inner())
                        .get(name)
                        .cloned();
                    if let (Some(adopt), Some(key)) = (adopt, &key) {
                        adopt(key, &handle);
                    }
                    self.inner
                        .resumed
                        .lock()
                        .unwrap_or_else(|p| p.into_inner())
                        .insert(
                            id.0,
                            Resumed {
                                process: name,
                                key,
                                handle,
                            },
                        );
                    report.resumed.push((id, name));
                }
                Err(reason) => report.skipped.push(Skipped {
                    id,
                    process,
                    reason,
                }),
            }
        }
    }

    /// The handle of a resumed instance of `process`.
    pub fn handle<D: 'static>(
        &self,
        process: &'static Process<D>,
        id: InstanceId,
    ) -> Option<InstanceHandle<D>> {
        let resumed = self.inner.resumed.lock().unwrap_or_else(|p| p.into_inner());
        let resumed = resumed.get(&id.0)?;
        // Of its process, whose registration fixes the data type (one per name).
        (resumed.process == process.name()).then(|| resumed.handle.clone().typed())
    }

    /// What the store holds of an instance: its status and, once it ended, its
    /// outcome as JSON (`{"outcome": "completed", "error": null, "data": {...}}`).
    pub async fn instance(
        &self,
        id: InstanceId,
    ) -> Result<Option<(Status, Option<String>)>, DurableError> {
        let store = self.inner.store.clone();
        let record = tokio::task::spawn_blocking(move || store.instance(id.0))
            .await
            .map_err(|_| DurableError::NoRuntime)??;
        Ok(record.map(|r| (r.status, r.outcome)))
    }

    /// The stored instances of `process` (any if `None`) with `status` (any if
    /// `None`): id, status and, for ended ones, the outcome JSON.
    pub async fn list(
        &self,
        process: Option<&str>,
        status: Option<Status>,
    ) -> Result<Vec<(InstanceId, Status, Option<String>)>, DurableError> {
        let store = self.inner.store.clone();
        let process = process.map(str::to_string);
        let records = tokio::task::spawn_blocking(move || store.list(process.as_deref(), status))
            .await
            .map_err(|_| DurableError::NoRuntime)??;
        Ok(records
            .into_iter()
            .map(|r| (InstanceId(r.id), r.status, r.outcome))
            .collect())
    }

    /// Remove ended instances that ended more than `retention` ago (running ones are
    /// never purged; ids are never reused).
    pub async fn purge(&self, retention: Duration) -> Result<(), DurableError> {
        let before = now_ms() - retention.as_millis() as i64;
        self.inner
            .writer
            .submit(vec![Write::Purge {
                ended_before_ms: before,
            }])
            .await?;
        Ok(())
    }

    /// A stored instance of `process` drawn on its process (SVG), from what the
    /// store holds — also of an instance no engine runs now: where its tokens are
    /// (waiting for an event, at a join, in a task or sub-process). `None` if no such
    /// instance is stored, or it was stored under another model. A resumed
    /// instance's passed nodes are not counted (its history is not stored).
    pub async fn picture<D>(
        &self,
        process: &'static Process<D>,
        id: InstanceId,
    ) -> Result<Option<String>, DurableError> {
        let store = self.inner.store.clone();
        let record = tokio::task::spawn_blocking(move || store.instance(id.0))
            .await
            .map_err(|_| DurableError::NoRuntime)??;
        let Some(record) = record else {
            return Ok(None);
        };
        if record.process != process.name() || record.fingerprint != process.fingerprint() {
            return Ok(None);
        }
        let mut history = crate::instance::History::default();
        if let Ok(Checkpoint::Running(snapshot)) = serde_json::from_str(&record.state) {
            if record.status == Status::Running {
                for track in &snapshot.tracks {
                    let Some(node) = process.node(&track.at) else {
                        continue;
                    };
                    history.push(
                        crate::instance::TrackId(track.id),
                        node.id,
                        track.state.happening(),
                    );
                }
            }
        }
        Ok(Some(process.to_svg_with(&history)))
    }

    /// Stop every instance — durable ones stay stored as running, to resume at the
    /// next start — and write what is queued. At most `deadline` for the instances.
    pub async fn shutdown(&self, deadline: Duration) -> Result<(), ShutdownError> {
        #[cfg(feature = "postgres")]
        if let Some(node) = self.inner.node.get() {
            node.stop();
        }
        let stopped = self.engine.shutdown(deadline).await;
        let writer = self.inner.writer.clone();
        let _ = tokio::task::spawn_blocking(move || writer.shutdown()).await;
        stopped
    }

    fn process_name(&self, name: &str) -> &'static str {
        let registry = self
            .inner
            .registry
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        registry.get_key_value(name).map_or("", |(k, _)| *k)
    }

    fn resume_one(
        &self,
        process: &'static Graph<Erased>,
        codec: Codec<Erased>,
        record: InstanceRecord,
    ) -> Result<InstanceHandle<Erased>, SkipReason> {
        let runtime = tokio::runtime::Handle::try_current()
            .map_err(|_| SkipReason::Unreadable("no tokio runtime".to_string()))?;
        let checkpoint: Checkpoint = serde_json::from_str(&record.state)
            .map_err(|e| SkipReason::Unreadable(e.to_string()))?;
        let mut parent = None;
        let (data, entry) = match checkpoint {
            Checkpoint::Born { data, start } => {
                let data = (codec.decode)(data).map_err(SkipReason::Unreadable)?;
                let entry = match start {
                    None => Entry::NoneStart,
                    // Stored at a tick or a signal: it starts there again (what the
                    // trigger brought is not stored; a timer or signal start applies
                    // nothing of it).
                    Some(id) => Entry::Event {
                        start: process.nodes().iter().position(|n| n.id == id).ok_or_else(
                            || SkipReason::Unreadable(format!("no start event `{id}`")),
                        )?,
                        payload: Some(Arc::new(())),
                        also: Vec::new(),
                    },
                };
                (data, entry)
            }
            Checkpoint::Running(snapshot) => {
                let data = (codec.decode)(snapshot.data.clone()).map_err(SkipReason::Unreadable)?;
                // A call activity's child: its parent's resumed call adopts it again.
                parent = snapshot.parent.map(|p| crate::call::ParentLink {
                    parent: InstanceId(p.id),
                    depth: p.depth,
                    notify: Arc::new(|_| {}),
                    unsent: Some(Vec::new()),
                });
                (data, Entry::Resume(Box::new(snapshot)))
            }
        };
        let admitted = self
            .engine
            .inner
            .admit()
            .ok_or_else(|| SkipReason::Unreadable("the engine is shutting down".to_string()))?;
        let mut durable = Durable::new(
            self.inner.writer.clone(),
            codec,
            record.id,
            record.seq,
            record.key,
        );
        durable.keep_history = self.inner.keep_history.load(Ordering::Relaxed);
        durable.every_task = self.every_task();
        let handle = self.engine.inner.spawn_durable(
            admitted,
            &runtime,
            process,
            (data, entry),
            durable,
            parent,
        );
        #[cfg(feature = "postgres")]
        self.runs_here(&handle);
        Ok(handle)
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

/// Turns the resume flag off when `resume` is done (also on an early return).
struct ResumingDone<'a>(&'a tokio::sync::watch::Sender<bool>);

impl Drop for ResumingDone<'_> {
    fn drop(&mut self) {
        self.0.send_replace(false);
    }
}
