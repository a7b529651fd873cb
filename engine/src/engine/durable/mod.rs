//! A durable engine (feature `durable`; a SQLite file with feature `sqlite`): its
//! instances are stored when they start and checkpointed after every step, so they
//! survive a crash, a deploy or a restart, and [`DurableEngine::resume`] goes on with
//! them.

use crate::data::Storable;
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

mod asleep;
mod calls;
mod cancel;
#[cfg(feature = "postgres")]
mod claims;
#[cfg(feature = "postgres")]
mod cluster;
mod deployments;
mod due;
mod evict;
mod held;
mod incidents;
mod messages;
mod migrate;
#[cfg(feature = "postgres")]
mod node_config;
#[cfg(feature = "postgres")]
mod node_evict;
mod queries;
mod report;
mod rest;
mod resume;
pub(super) mod schedule;
mod signals;
mod stored;
mod tasks;
mod typed;
mod watch;

#[cfg(feature = "postgres")]
pub use node_config::NodeConfig;
pub use watch::{Watched, WatchedOutcome};

pub use evict::DEFAULT_EVICT_AFTER;
pub use migrate::{MigrationReport, MIGRATION_REST};
pub use report::{ResumeReport, SkipReason, Skipped};

use super::{Engine, EngineError, ShutdownError};
use crate::data::{Erased, ProcessData};

use crate::graph::{Graph, Payload, Process};
use crate::instance::durable::records::{Checkpoint, Codec};
use crate::instance::durable::{now_ms, Durable};
use crate::instance::{Entry, InstanceHandle, InstanceId};
use crate::store::{DeploymentRecord, InstanceRecord, Status, Store, StoreError, Write, Writer};

/// When a durable instance is checkpointed ([`DurableEngine::checkpoints`]).
///
/// Needs the `durable` feature.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[cfg_attr(docsrs, doc(cfg(feature = "durable")))]
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
///
/// Needs the `durable` feature.
#[derive(Clone)]
#[cfg_attr(docsrs, doc(cfg(feature = "durable")))]
pub struct DurableEngine {
    engine: Engine,
    inner: Arc<Inner>,
}

pub(crate) struct Inner {
    store: Arc<dyn Store>,
    writer: Writer,
    /// Registered processes by fingerprint: each version of a name has its own
    /// (the names and version numbers are the in-memory engine's `Versions`).
    registry: Mutex<HashMap<u64, Registered>>,
    /// Handles of resumed instances, by id (each an `InstanceHandle<D>`), with their
    /// process and correlation key. Those of ended instances go each time the map
    /// has doubled since (`Inner::keep_resumed`): a node that resumes many keeps
    /// about twice as many as still run, not one per instance it ever resumed.
    resumed: Mutex<HashMap<u64, Resumed>>,
    /// How many handles `resumed` kept after its last pruning.
    resumed_pruned_at: std::sync::atomic::AtomicUsize,
    /// Each durably deployed process's deployment, told of resumed instances with a
    /// correlation key.
    adopters: Mutex<HashMap<&'static str, Arc<Adopt>>>,
    /// How a stored message's payload is read back, by message name.
    payloads: Mutex<HashMap<String, PayloadDecoder>>,
    /// The names in `payloads` whose decoder reads any payload as `()` (learnt from
    /// a catch without `apply`): a typed one found later replaces it.
    payloads_ignored: Mutex<std::collections::HashSet<String>>,
    /// Per message name, the payload type the registered processes' catches take
    /// (the first typed catch's): a publish of another type is refused.
    payload_types: Mutex<HashMap<String, crate::graph::PayloadType>>,
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
    /// The stored deployment record of each deployment of this engine, and its
    /// schedules (a deploy of a newer version goes on with them).
    deployed: Mutex<HashMap<super::DeploymentId, (u64, Arc<schedule::Schedules>)>>,
    /// Evicted instances ([`DurableEngine::evict_idle`]).
    dormancy: evict::Dormancy,
    /// Every loop that runs here, and the instances a migration waits to take.
    held: held::Held,
}

/// A resumed instance's handle.
struct Resumed {
    /// The version it runs on.
    process: &'static Graph<Erased>,
    key: Option<String>,
    handle: InstanceHandle<Erased>,
}

/// Gives a deployment a resumed instance (its key, its handle).
type Adopt = dyn Fn(&str, &InstanceHandle<Erased>) + Send + Sync;

/// Reads a stored message's JSON payload back into the type it was published with.
pub(super) type PayloadDecoder = fn(serde_json::Value) -> Result<Payload, String>;

/// A registered version of a process: its graph, and how its data is stored (made where its
/// type is known, at `register`) — all that resuming its instances, starting its
/// durable children and reading a child's stored end need.
#[derive(Clone, Copy)]
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
    /// # async fn run() -> Result<(), thresh::EngineError> {
    /// let engine = thresh::Engine::open("orders.db").await?;
    /// let report = engine.resume().await?;
    /// # let _ = report; Ok(()) }
    /// ```
    ///
    /// Needs the `sqlite` feature.
    #[cfg_attr(docsrs, doc(cfg(feature = "sqlite")))]
    pub async fn open(path: impl AsRef<std::path::Path>) -> Result<DurableEngine, EngineError> {
        DurableEngine::open(path).await
    }
}

impl DurableEngine {
    /// A durable engine on the SQLite file at `path`, created if missing.
    ///
    /// Needs the `sqlite` feature.
    #[cfg(feature = "sqlite")]
    #[cfg_attr(docsrs, doc(cfg(feature = "sqlite")))]
    pub async fn open(path: impl AsRef<std::path::Path>) -> Result<Self, EngineError> {
        let path = path.as_ref().to_path_buf();
        let store = tokio::task::spawn_blocking(move || crate::store::SqliteStore::open(path))
            .await
            .map_err(|_| EngineError::NoRuntime)??;
        Self::with_store(Arc::new(store))
    }

    /// A durable engine on the PostgreSQL database at `url` (schema
    /// [`DEFAULT_SCHEMA`](crate::store::DEFAULT_SCHEMA)), as one node of any number
    /// of engines sharing it: see [`NodeConfig`] and the README, "Several nodes on
    /// PostgreSQL".
    ///
    /// Needs the `postgres` feature.
    #[cfg(feature = "postgres")]
    #[cfg_attr(docsrs, doc(cfg(feature = "postgres")))]
    pub async fn connect(url: &str) -> Result<Self, EngineError> {
        Self::connect_with(url, NodeConfig::default()).await
    }

    /// A durable engine on the SQLite file at `path`, created if missing, set up by
    /// `config`: the broker's bound and the time-to-live of published messages
    /// (waiting in the store for their catch), history, call depth.
    ///
    /// Needs the `sqlite` feature.
    #[cfg(feature = "sqlite")]
    #[cfg_attr(docsrs, doc(cfg(feature = "sqlite")))]
    pub async fn open_with(
        path: impl AsRef<std::path::Path>,
        config: crate::EngineConfig,
    ) -> Result<Self, EngineError> {
        let path = path.as_ref().to_path_buf();
        let store = tokio::task::spawn_blocking(move || crate::store::SqliteStore::open(path))
            .await
            .map_err(|_| EngineError::NoRuntime)??;
        Self::with_store_config(Arc::new(store), config)
    }

    /// A durable engine on `store`.
    pub fn with_store(store: Arc<dyn Store>) -> Result<Self, EngineError> {
        Self::with_store_config(store, crate::EngineConfig::default())
    }

    /// A durable engine on `store`, set up by `config`: the broker's bound and the
    /// time-to-live of published messages (how long one waits in the store for its
    /// catch; default 60 s), history, call depth.
    pub fn with_store_config(
        store: Arc<dyn Store>,
        config: crate::EngineConfig,
    ) -> Result<Self, EngineError> {
        let writer = Writer::spawn(store.clone())?;
        let engine = Engine::with_config(config);
        // Ids continue after every id the store has seen.
        let next = store.next_ids()?;
        engine.inner.instance_ids.continue_from(next.instance);
        let message_ttl = config.broker.ttl;
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
            resumed_pruned_at: std::sync::atomic::AtomicUsize::new(0),
            adopters: Mutex::new(HashMap::new()),
            payloads: Mutex::new(HashMap::new()),
            payloads_ignored: Mutex::new(std::collections::HashSet::new()),
            payload_types: Mutex::new(HashMap::new()),
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
            dormancy: evict::Dormancy::default(),
            held: held::Held::default(),
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

    /// Register `process`: this engine may resume its stored instances, and reads
    /// back the stored payloads of the messages its catches and message starts take
    /// (by the type each `apply` takes, when it is `Deserialize`; a catch without
    /// `apply` takes any payload) — [`message_type`](Self::message_type) is needed
    /// only for other types, and on a node that publishes a message none of its
    /// processes catches.
    ///
    /// Each version of a process is registered on its own (README, "Versions"):
    /// register every version that has stored instances, and each resumes on its
    /// own; another model claiming a registered version's number is
    /// [`EngineError::VersionTaken`].
    pub fn register<D>(&self, process: &'static Process<D>) -> Result<(), EngineError>
    where
        D: ProcessData + Storable,
    {
        // Its version first: a model claiming a registered version's number is
        // refused before anything of it is learnt.
        self.engine.register(process)?;
        self.learn_payload_types(process)?;
        self.inner
            .registry
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .entry(process.fingerprint())
            .or_insert(Registered {
                graph: process.graph(),
                codec: Codec::json_of::<D>(),
            });
        Ok(())
    }

    /// The registered version of `name` stored instances of `fingerprint` run on.
    fn registered(&self, name: &str, fingerprint: u64) -> Option<Registered> {
        self.inner
            .registry
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(&fingerprint)
            .filter(|r| r.graph.name == name)
            .copied()
    }

    /// Every registered version of `name`, newest first.
    #[cfg(feature = "postgres")]
    fn versions_of(&self, name: &str) -> Vec<Registered> {
        let registry = self.inner.registry.lock();
        let registry = registry.unwrap_or_else(|p| p.into_inner());
        let mut versions: Vec<Registered> = registry
            .values()
            .filter(|r| r.graph.name == name)
            .copied()
            .collect();
        versions.sort_by_key(|r| std::cmp::Reverse(r.graph.version));
        versions
    }

    /// The newest registered version of `name`.
    fn newest(&self, name: &str) -> Option<Registered> {
        let fingerprint = self
            .engine
            .inner
            .versions()
            .of_name(name)
            .last()?
            .graph
            .fingerprint;
        self.registered(name, fingerprint)
    }

    /// Start an instance of the newest registered version of the process `name`
    /// (it is stored before this returns), as [`Engine::start_newest`] does in
    /// memory.
    pub async fn start_newest<D>(
        &self,
        name: &str,
        data: D,
    ) -> Result<InstanceHandle<D>, EngineError>
    where
        D: ProcessData + Storable,
    {
        let graph = self.engine.inner.versions().pick::<D>(name, None)?;
        self.start_registered(graph, data).await
    }

    /// Start an instance of version `version` of the process `name` (registered),
    /// as [`Engine::start_version`] does in memory.
    pub async fn start_version<D>(
        &self,
        name: &str,
        version: u32,
        data: D,
    ) -> Result<InstanceHandle<D>, EngineError>
    where
        D: ProcessData + Storable,
    {
        let graph = self
            .engine
            .inner
            .versions()
            .pick::<D>(name, Some(version))?;
        self.start_registered(graph, data).await
    }

    /// Start the registered `graph`, whose data is a `D` (`Versions::pick` said so).
    async fn start_registered<D>(
        &self,
        graph: &'static Graph<Erased>,
        data: D,
    ) -> Result<InstanceHandle<D>, EngineError>
    where
        D: ProcessData + Storable,
    {
        let handle = self
            .start_graph(graph, Codec::json_of::<D>(), Erased::new(data), None)
            .await?;
        Ok(handle.typed())
    }

    /// Start an instance of `process` with `data` (registering the process); it is
    /// stored before this returns.
    pub async fn start<D>(
        &self,
        process: &'static Process<D>,
        data: D,
    ) -> Result<InstanceHandle<D>, EngineError>
    where
        D: ProcessData + Storable,
    {
        self.start_as(process, data, None).await
    }

    /// [`DurableEngine::start`] with a business key: the caller's name for the
    /// instance (an order number), stored in its own indexed column and found again
    /// with [`Query::key`](crate::Query::key). Not unique: several instances of a
    /// process may share one (as in Camunda); a query by key lists them all. An
    /// empty key, or one holding a NUL, is [`EngineError::BadBusinessKey`].
    pub async fn start_keyed<D>(
        &self,
        process: &'static Process<D>,
        business_key: impl Into<String>,
        data: D,
    ) -> Result<InstanceHandle<D>, EngineError>
    where
        D: ProcessData + Storable,
    {
        let business_key = crate::query::check_business_key(business_key.into())
            .map_err(|reason| EngineError::BadBusinessKey { reason })?;
        self.start_as(process, data, Some(business_key)).await
    }

    /// `start` and `start_keyed`: register, then start past the typed edge.
    async fn start_as<D>(
        &self,
        process: &'static Process<D>,
        data: D,
        business_key: Option<String>,
    ) -> Result<InstanceHandle<D>, EngineError>
    where
        D: ProcessData + Storable,
    {
        self.register(process)?;
        let codec = Codec::json_of::<D>();
        let handle = self
            .start_graph(process.graph(), codec, Erased::new(data), business_key)
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
        business_key: Option<String>,
    ) -> Result<InstanceHandle<Erased>, EngineError> {
        let runtime = tokio::runtime::Handle::try_current().map_err(|_| EngineError::NoRuntime)?;
        let encoded = (codec.encode)(&data).map_err(|message| EngineError::Data {
            process: process.name(),
            message,
        })?;
        let state = serde_json::to_string(&Checkpoint::Born {
            data: encoded,
            start: None,
        })
        .map_err(|e| EngineError::Data {
            process: process.name(),
            message: e.to_string(),
        })?;
        let id = self.engine.inner.next_id().0;
        let started_ms = now_ms();
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
            business_key: business_key.clone(),
            started_ms,
            waits: Vec::new(),
            incidents: 0,
            wake: Default::default(),
        };
        match self.inner.writer.submit(vec![Write::Put(record)]).await {
            Ok(()) => {}
            Err(error @ StoreError::CommitUnknown { .. }) => {
                return Err(EngineError::StartUnknown {
                    process: process.name(),
                    id: InstanceId(id),
                    reason: error.to_string(),
                })
            }
            Err(error) => return Err(error.into()),
        }
        let admitted = self.engine.inner.admit().ok_or(EngineError::ShuttingDown)?;
        let mut durable = Durable::new(self.inner.writer.clone(), codec, id, 1, None);
        durable.business_key = business_key;
        durable.started_ms = started_ms;
        let born = (data, Entry::NoneStart);
        Ok(self.spawn_stored(admitted, &runtime, process, born, durable, None))
    }

    /// Spawn a stored instance's loop under this engine's checkpoint settings (and,
    /// on a node of several, watch its lease): a start's and a resume's last step.
    fn spawn_stored(
        &self,
        admitted: crate::engine::Admission<'_>,
        runtime: &tokio::runtime::Handle,
        process: &'static Graph<Erased>,
        born: (Erased, Entry),
        mut durable: Durable<Erased>,
        parent: Option<crate::instance::ParentLink>,
    ) -> InstanceHandle<Erased> {
        durable.keep_history = self.inner.keep_history.load(Ordering::Relaxed);
        durable.every_task = self.every_task();
        durable.evict_after = self.inner.dormancy.after();
        let handle = self
            .engine
            .inner
            .spawn_durable(admitted, runtime, process, born, durable, parent);
        #[cfg(feature = "postgres")]
        self.runs_here(&handle);
        handle
    }

    /// How many instance loops run on this engine (resumed ones included).
    pub fn running_instances(&self) -> usize {
        self.engine.running_instances()
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
}
