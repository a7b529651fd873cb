//! The public entry point: an [`Engine`] starts instances and shuts them all down.

mod cancel;
mod config;
mod deploy;
#[cfg(feature = "durable")]
pub(crate) mod durable;
mod error;
mod events;
pub(crate) mod feature_off;
mod ids;
mod incidents;
mod queries;
mod tasks;

mod stop;
mod typed;
pub(crate) mod versions;

pub use cancel::CancelError;
#[cfg(feature = "durable")]
pub(crate) use cancel::{cancel_through, check_process as check_instance_process};
pub use config::EngineConfig;

#[cfg(feature = "testing")]
use std::any::Any;
use std::collections::HashMap;
use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use tokio_util::task::TaskTracker;

#[cfg(feature = "durable")]
pub(crate) use deploy::DurableStarts;
use deploy::Registration;
pub use deploy::{DeployError, Deployment, DeploymentId};
pub use error::EngineError;
pub(crate) use stop::{Admission, OwnLine, Stop};

use crate::data::{Erased, ProcessData};
use crate::events::{BrokerConfig, Hub};
use crate::graph::{Graph, Process};
#[cfg(feature = "durable")]
use crate::instance::Resumed;
use crate::instance::{self, Birth, Entry, InstanceHandle, InstanceId};
use crate::instance::{ChildEngine, EngineRef, ParentLink};
use crate::retry::{Board, OnFailure, RetryPolicy};

/// Runs process instances on tokio. Cheap to clone; clones share the instances.
///
/// ```
/// # use thresh::{process, Engine, ProcessData};
/// # #[derive(Clone, Debug, Default, ProcessData)] pub struct Nothing { pub n: u8 }
/// # process! { pub NOOP: Nothing { start s; end e; s -> e; } }
/// # #[tokio::main(flavor = "current_thread")] async fn main() {
/// let engine = Engine::new();
/// let handle = engine.start(&NOOP, Nothing::default()).await.unwrap();
/// assert_eq!(handle.outcome().await.kind(), "completed");
/// engine.shutdown(std::time::Duration::from_secs(1)).await.unwrap();
/// # }
/// ```
#[derive(Clone)]
pub struct Engine {
    inner: Arc<Inner>,
}

pub(crate) struct Inner {
    /// Instance ids (`ids.rs`: by blocks per thread, or the store's one by one).
    pub(crate) instance_ids: ids::InstanceIds,
    next_deployment: AtomicU64,
    /// Deployed processes: their start events' registrations, to undeploy them.
    deployments: Mutex<HashMap<u64, Registration>>,
    /// The registered versions of each process (`versions.rs`).
    versions: Mutex<versions::Versions>,
    /// Signals and messages between instances and the outside world.
    hub: Arc<Hub>,
    /// Begun by `shutdown`; every instance loop watches its token (a clone, not a
    /// child: no node per instance). It counts the instances being admitted (between
    /// the stop check and their loop's spawn), so `shutdown` can wait for them to be
    /// refused or in `loops`.
    stop: Stop,
    /// Every instance loop, so `shutdown` can wait for them.
    loops: TaskTracker,
    /// Deployments' timer starts (apart from `loops`, which counts instances).
    timer_starts: TaskTracker,
    /// Whether instances record their history.
    history: bool,
    /// How deep call activities may nest.
    max_call_depth: u32,
    /// Retries and what follows when they are spent (a lock read only on a failure,
    /// so a durable engine can set it after it is made).
    failures: Mutex<(RetryPolicy, OnFailure)>,
    /// The open incidents of every instance.
    incidents: Board,
    /// The open user tasks of every instance.
    tasks: crate::tasklist::TaskList,
    /// The durable engine on top of this one, if any: call activities' children
    /// then start durably.
    #[cfg(feature = "durable")]
    durable: std::sync::OnceLock<Weak<durable::Inner>>,
    /// Task handlers replaced by a test (feature `testing`), per process (keyed by
    /// the address of its static): each a `testing::HandlerTable<D>`, erased.
    #[cfg(feature = "testing")]
    overrides: Mutex<HashMap<usize, Arc<dyn Any + Send + Sync>>>,
}

/// `Engine::shutdown` ran out of time.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("shutdown deadline passed with {still_running} instance loop(s) still running")]
pub struct ShutdownError {
    /// Instance loops that had not stopped at the deadline.
    pub still_running: usize,
}

impl Default for Engine {
    fn default() -> Self {
        Self::with_broker(BrokerConfig::default())
    }
}

impl Engine {
    /// A new engine with no instances.
    pub fn new() -> Self {
        Self::default()
    }

    /// A new engine whose message buffer (for messages published before their catch
    /// is waiting) has the given bound and time-to-live.
    pub fn with_broker(broker: BrokerConfig) -> Self {
        Self::with_config(EngineConfig {
            broker,
            ..EngineConfig::default()
        })
    }

    /// A new engine set up by `config`.
    ///
    /// ```
    /// # use thresh::{Engine, EngineConfig};
    /// // Long-running instances that loop for ever need no step-by-step history.
    /// let engine = Engine::with_config(EngineConfig { history: false, ..EngineConfig::default() });
    /// ```
    pub fn with_config(config: EngineConfig) -> Self {
        let EngineConfig {
            broker: config,
            history,
            max_call_depth,
            retry,
            on_failure,
            keep_ended,
        } = config;
        let hub = Hub::new(config);
        hub.listing.set_keep_ended(keep_ended);
        Self {
            inner: Arc::new(Inner {
                instance_ids: ids::InstanceIds::new(),
                next_deployment: AtomicU64::new(0),
                deployments: Mutex::new(HashMap::new()),
                versions: Mutex::default(),
                hub: Arc::new(hub),
                stop: Stop::new(),
                loops: TaskTracker::new(),
                timer_starts: TaskTracker::new(),
                history,
                max_call_depth,
                failures: Mutex::new((retry, on_failure)),
                incidents: Board::default(),
                tasks: Default::default(),
                #[cfg(feature = "durable")]
                durable: std::sync::OnceLock::new(),
                #[cfg(feature = "testing")]
                overrides: Mutex::new(HashMap::new()),
            }),
        }
    }

    /// Start an instance of `process` with `data` on the current tokio runtime.
    ///
    /// The instance's first step — from its start event until it first has to wait —
    /// runs here, before the handle is returned: an instance whose handlers are all
    /// ready has ended when `start` returns, with no task spawned for it; one that
    /// waits continues on its own loop task (README, "Where handlers run").
    ///
    /// The same call as [`DurableEngine::start`](crate::DurableEngine::start), so code
    /// moves between the engines unchanged. Outside a tokio runtime it fails with
    /// [`EngineError::NoRuntime`], once [`shutdown`](Self::shutdown) began with
    /// [`EngineError::ShuttingDown`].
    pub async fn start<D: ProcessData>(
        &self,
        process: &'static Process<D>,
        data: D,
    ) -> Result<InstanceHandle<D>, EngineError> {
        self.start_graph(process.graph(), Erased::new(data))
            .map(InstanceHandle::typed)
    }

    /// [`Engine::start`] past the typed edge: compiled once, for every data type.
    fn start_graph(
        &self,
        graph: &'static Graph<Erased>,
        data: Erased,
    ) -> Result<InstanceHandle<Erased>, EngineError> {
        self.start_by(data, |inner, admitted, runtime, data| {
            inner.spawn(
                admitted,
                runtime,
                graph,
                data,
                Entry::NoneStart,
                Default::default(),
            )
        })
    }

    /// Start an instance with `data`, spawned by `spawn` once admitted on the current
    /// runtime.
    fn start_by(
        &self,
        data: Erased,
        spawn: impl FnOnce(
            &Arc<Inner>,
            Admission<'_>,
            Option<&tokio::runtime::Handle>,
            Erased,
        ) -> InstanceHandle<Erased>,
    ) -> Result<InstanceHandle<Erased>, EngineError> {
        // Called from a task, the runtime is the current one, named by `None`:
        // `Handle::try_current` clones the runtime's handle, a count that every
        // worker starting instances would share.
        let runtime = match tokio::task::try_id() {
            Some(_) => None,
            None => {
                Some(tokio::runtime::Handle::try_current().map_err(|_| EngineError::NoRuntime)?)
            }
        };
        let admitted = self.inner.admit().ok_or(EngineError::ShuttingDown)?;
        Ok(spawn(&self.inner, admitted, runtime.as_ref(), data))
    }

    /// Undeploy every deployment, cancel every instance (their outcome becomes
    /// [`Outcome::Cancelled`](crate::Outcome::Cancelled)) and wait, at most `deadline`, for every instance loop
    /// and track to stop.
    ///
    /// Once this is called, nothing new runs: an instance started after it ends
    /// [`Outcome::Cancelled`](crate::Outcome::Cancelled) without running a step, and an instance that a publish
    /// or broadcast already under way starts from a deployed start event is either
    /// refused (the publisher gets [`Published::ShutDown`](crate::Published::ShutDown)) or cancelled before its
    /// first step — and waited for. When it returns `Ok`, no instance runs and no
    /// handler of this engine runs any more. (A message published afterwards is
    /// buffered as usual; no instance is left to take it.)
    pub async fn shutdown(&self, deadline: Duration) -> Result<(), ShutdownError> {
        // Deployed start events go first, so nothing starts while instances stop.
        let deployed: Vec<u64> = self
            .inner
            .deployments
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .keys()
            .copied()
            .collect();
        for id in deployed {
            self.undeploy(DeploymentId(id));
        }
        self.inner.stop.begin();
        self.inner.loops.close();
        self.inner.timer_starts.close();
        let stopped = async {
            self.inner.timer_starts.wait().await;
            // Once no admission is under way, every instance admitted before the stop
            // is in `loops`; every later one is refused.
            self.inner.stop.admissions_done().await;
            self.inner.loops.wait().await;
        };
        match tokio::time::timeout(deadline, stopped).await {
            Ok(()) => Ok(()),
            Err(_) => Err(ShutdownError {
                still_running: self.inner.loops.len(),
            }),
        }
    }

    /// How many instance loops are running.
    pub fn running_instances(&self) -> usize {
        self.inner.loops.len()
    }
}

#[cfg(feature = "testing")]
impl Engine {
    /// Replace `process`'s task handlers for the instances this engine starts from
    /// now on (`testing::Overrides::install`); an empty table removes them.
    pub(crate) fn set_overrides<D: ProcessData>(
        &self,
        process: &'static Process<D>,
        table: crate::testing::HandlerTable<Erased>,
    ) {
        let key = std::ptr::from_ref(process.graph()) as usize;
        let mut all = self
            .inner
            .overrides
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        if table.is_empty() {
            all.remove(&key);
        } else {
            all.insert(key, Arc::new(table));
        }
    }

    /// Start one instance of `process` whose tasks in `table` run their replacements
    /// (`testing::Overrides::start`), over those installed on this engine for the
    /// process; other instances are not affected.
    pub(crate) fn start_overridden<D: ProcessData>(
        &self,
        process: &'static Process<D>,
        data: D,
        table: crate::testing::HandlerTable<Erased>,
    ) -> Result<InstanceHandle<D>, EngineError> {
        let process = process.graph();
        let installed = self.inner.overrides_of(process).and_then(|table| {
            table
                .downcast::<crate::testing::HandlerTable<Erased>>()
                .ok()
        });
        let table = match installed {
            Some(installed) => installed.under(table),
            None => table,
        };
        let table: Arc<dyn Any + Send + Sync> = Arc::new(table);
        let data = Erased::new(data);
        self.start_by(data, move |inner, admitted, runtime, data| {
            let id = inner.next_id();
            let mut birth = inner.birth(runtime, process, None);
            birth.overrides = Some(table);
            birth.inline_first_step = true;
            let handle = instance::spawn(
                birth,
                process,
                id,
                data,
                Entry::NoneStart,
                #[cfg(feature = "durable")]
                None,
            );
            // Held until the loop is tracked, as `Inner::spawn` does.
            drop(admitted);
            handle
        })
        .map(InstanceHandle::typed)
    }
}

impl Inner {
    /// The registered versions (a short lock: registrations, starts by name, and
    /// durable lookups by fingerprint).
    pub(crate) fn versions(&self) -> std::sync::MutexGuard<'_, versions::Versions> {
        self.versions.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The replaced task handlers of `process` on this engine, if any.
    #[cfg(feature = "testing")]
    fn overrides_of(&self, process: &'static Graph<Erased>) -> Option<Arc<dyn Any + Send + Sync>> {
        let key = std::ptr::from_ref(process) as usize;
        let all = self.overrides.lock().unwrap_or_else(|p| p.into_inner());
        all.get(&key).cloned()
    }

    fn next_id(&self) -> InstanceId {
        InstanceId(self.instance_ids.next())
    }

    /// Admit a new instance, or refuse it (`None`) once shutdown has begun. The
    /// admission is held until the instance has ended or its loop is in `loops`:
    /// shutdown's wait cannot end between the check and the spawn, so an instance
    /// admitted just before the stop is waited for (and, seeing the stop at birth,
    /// ends cancelled before its first step).
    fn admit(&self) -> Option<Admission<'_>> {
        self.stop.admit()
    }

    /// Start an instance on `runtime` (`None`: the current one).
    fn spawn(
        self: &Arc<Self>,
        _admitted: Admission<'_>,
        runtime: Option<&tokio::runtime::Handle>,
        process: &'static Graph<Erased>,
        data: Erased,
        entry: Entry,
        keys: crate::query::memory::Keys,
    ) -> InstanceHandle<Erased> {
        let id = self.next_id();
        let mut birth = self.birth(runtime, process, None);
        birth.keys = keys;
        // `Engine::start`: no handle exists before it returns, so its first step
        // can run here (see `Birth::inline_first_step`).
        birth.inline_first_step = matches!(entry, Entry::NoneStart);
        instance::spawn(
            birth,
            process,
            id,
            data,
            entry,
            #[cfg(feature = "durable")]
            None,
        )
    }

    /// Start a durable instance, stored as `id`, on `runtime`.
    #[cfg(feature = "durable")]
    fn spawn_durable(
        self: &Arc<Self>,
        _admitted: Admission<'_>,
        runtime: &tokio::runtime::Handle,
        process: &'static Graph<Erased>,
        (data, entry): (Erased, Entry),
        durable: crate::instance::durable::Durable<Erased>,
        parent: Option<ParentLink>,
    ) -> InstanceHandle<Erased> {
        let id = InstanceId(durable.id);
        let birth = self.birth(Some(runtime), process, parent);
        let handle = instance::spawn(birth, process, id, data, entry, Some(Box::new(durable)));
        // Known by id to the durable engine, which a migration asks.
        if let Some(durable) = self.durable.get().and_then(Weak::upgrade) {
            durable.loop_began(id.0, handle.commands().clone());
        }
        handle
    }

    /// Where an instance started on `runtime` (`None`: the current one) lives.
    fn birth<'a>(
        self: &'a Arc<Self>,
        runtime: Option<&'a tokio::runtime::Handle>,
        #[cfg_attr(not(feature = "testing"), allow(unused_variables))] process: &'static Graph<
            Erased,
        >,
        parent: Option<ParentLink>,
    ) -> Birth<'a> {
        Birth {
            engine: EngineRef::new(Arc::downgrade(self) as Weak<dyn ChildEngine>),
            parent,
            runtime,
            tracker: &self.loops,
            hub: Arc::clone(&self.hub),
            stop: &self.stop,
            history: self.history,
            inline_first_step: false,
            keys: Default::default(),
            #[cfg(feature = "testing")]
            overrides: self.overrides_of(process),
        }
    }
}

/// What a call activity starts its child in (`instance::EngineRef`, which holds the
/// engine weakly: instances do not keep their engine alive).
impl ChildEngine for Inner {
    fn stop(&self) -> tokio_util::sync::CancellationToken {
        self.stop.token().clone()
    }

    fn max_call_depth(&self) -> u32 {
        self.max_call_depth
    }

    fn failures(&self) -> (RetryPolicy, OnFailure) {
        *self.failures.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn incidents(&self) -> &Board {
        &self.incidents
    }

    fn tasks(&self) -> &crate::tasklist::TaskList {
        &self.tasks
    }

    fn start_child(
        self: Arc<Self>,
        process: &'static Graph<Erased>,
        data: Erased,
        link: ParentLink,
    ) -> Result<Option<InstanceHandle<Erased>>, String> {
        let runtime =
            tokio::runtime::Handle::try_current().map_err(|_| "no tokio runtime".to_string())?;
        #[cfg(feature = "durable")]
        if let Some(durable) = self.durable.get().and_then(Weak::upgrade) {
            return durable.start_child(&self, process, data, link);
        }
        // Held until the child's loop is in `loops` (as for `Engine::start`).
        let Some(_admitted) = self.admit() else {
            return Ok(None);
        };
        let id = self.next_id();
        Ok(Some(instance::spawn(
            self.birth(Some(&runtime), process, Some(link)),
            process,
            id,
            data,
            Entry::NoneStart,
            #[cfg(feature = "durable")]
            None,
        )))
    }

    #[cfg(feature = "durable")]
    fn evicted(self: Arc<Self>, dormant: Box<crate::instance::durable::evict::Dormant>) {
        if let Some(durable) = self.durable.get().and_then(Weak::upgrade) {
            durable.evicted(&self, dormant);
        }
    }

    #[cfg(feature = "durable")]
    fn message_buffered(self: Arc<Self>, name: &str, key: &str) {
        let Some(durable) = self.durable.get().and_then(Weak::upgrade) else {
            return;
        };
        if !durable.asleep_for_messages() {
            return;
        }
        let (name, key) = (name.to_string(), key.to_string());
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            runtime.spawn(async move { durable.wake_for_message(&self, &name, &key).await });
        }
    }

    #[cfg(feature = "durable")]
    fn resumed_child(
        &self,
        process: &'static Graph<Erased>,
        id: InstanceId,
    ) -> std::pin::Pin<Box<dyn std::future::Future<Output = Resumed<Erased>> + Send>> {
        let durable = self.durable.get().and_then(Weak::upgrade);
        Box::pin(async move {
            match durable {
                Some(durable) => durable.resumed_child(process, id).await,
                None => Resumed::Skipped("the engine is not durable".to_string()),
            }
        })
    }
}
