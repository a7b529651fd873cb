//! Deployments: a deployed process's start events (message, signal, timer, and the
//! arms of an instantiating gateway) start its instances.

use std::collections::HashMap;
use std::marker::PhantomData;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex, Weak};

use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::{Engine, EngineError, Inner};
use crate::data::{Erased, ProcessData};
use crate::events::{Offer, StartTrigger, Starter, SubId, TimerSpec};
use crate::graph::{Graph, NodeIdx, NodeKind, Payload, Process, Trigger};
use crate::instance::{Entry, InstanceHandle};

impl Engine {
    /// Deploy `process`: from now on its start events start instances — a message
    /// start when its message is published (the message's key becomes the instance's
    /// correlation key: while an instance with that key runs, a further message with
    /// it is not a new instance but waits, buffered, for that instance's catch), a
    /// signal start on every broadcast, a timer start on its schedule. Each instance
    /// starts with a clone of `data` and comes out of the returned [`Deployment`].
    ///
    /// The process is registered as a version of its name ([`Engine::register`]),
    /// and the start events of the newest version start instances: a deploy of a
    /// version undeploys this engine's deployments of older ones (their
    /// [`Deployment::next`] ends), and one older than a deployed version is
    /// [`DeployError::NewerDeployed`].
    ///
    /// ```
    /// # use thresh::{process, Engine, ProcessData, Published};
    /// # #[derive(Clone, Debug, Default, ProcessData)] pub struct Order { pub id: String }
    /// process! {
    ///     pub ORDERS: Order {
    ///         start received: message("order", apply = |o, id: &String| o.id = id.clone());
    ///         end   done;
    ///         received -> done;
    ///     }
    /// }
    /// # #[tokio::main(flavor = "current_thread")] async fn main() {
    /// let engine = Engine::new();
    /// let mut orders = engine.deploy(&ORDERS, Order::default()).unwrap();
    /// let published = engine.publish_message("order", "A-1", "A-1".to_string()).await;
    /// assert_eq!(published.unwrap(), Published::Started);
    /// let order = orders.next().await.unwrap().outcome().await.completed().unwrap();
    /// assert_eq!(order.id, "A-1");
    /// # }
    /// ```
    pub fn deploy<D: ProcessData>(
        &self,
        process: &'static Process<D>,
        data: D,
    ) -> Result<Deployment<D>, EngineError> {
        self.register(process)?;
        self.deploy_with(
            process.graph(),
            Erased::new(data),
            #[cfg(feature = "durable")]
            None,
        )
        .map(|(deployment, _)| deployment.typed())
        .map_err(EngineError::from)
    }

    /// Deploy `process`; with `durable`, the instances its start events start are
    /// durable ones.
    pub(super) fn deploy_with(
        &self,
        process: &'static Graph<Erased>,
        data: Erased,
        #[cfg(feature = "durable")] durable: Option<DurableStarts>,
    ) -> Result<(Deployment<Erased>, Adopter), DeployError> {
        let runtime = tokio::runtime::Handle::try_current().map_err(|_| DeployError::NoRuntime)?;
        let entries = entry_points(process);
        if entries.is_empty() {
            return Err(DeployError::NoEventStart {
                process: process.name,
            });
        }
        // The newest version's start events start its instances: this one
        // replaces the deployments of older versions.
        for older in self.older_deployments(process)? {
            self.undeploy(older);
        }
        let (started_tx, started) = mpsc::unbounded_channel();
        let cancel = self.inner.stop.token().child_token();
        let (mut next_starts, mut stale_arms) = (Vec::new(), Vec::new());
        for (_, trigger, also) in &entries {
            if let Trigger::Message { name, .. } = trigger {
                let names = match also.is_empty() {
                    true => &mut next_starts,
                    false => &mut stale_arms,
                };
                names.push(Arc::<str>::from(*name));
            }
        }
        let target = Arc::new(DeployTarget {
            engine: Arc::downgrade(&self.inner),
            runtime,
            process,
            data,
            running: Mutex::new(HashMap::new()),
            next_starts,
            stale_arms,
            started: started_tx,
            #[cfg(feature = "durable")]
            durable,
        });
        let mut subs = Vec::new();
        for (start, trigger, also) in entries {
            let starter = Arc::new(StartOn {
                target: target.clone(),
                start,
                also,
            });
            match trigger {
                Trigger::Message { name, .. } => subs.push(self.inner.hub.add_starter(
                    StartTrigger::Message,
                    name,
                    starter,
                )),
                Trigger::Signal { name, .. } => subs.push(self.inner.hub.add_starter(
                    StartTrigger::Signal,
                    name,
                    starter,
                )),
                Trigger::Timer(timer) => {
                    // A start event has no data to read a timer off: the macro refuses
                    // `timer(|d| ..)` there.
                    let Some(spec) = timer.fixed() else { continue };
                    let cancel = cancel.clone();
                    #[cfg(feature = "durable")]
                    if let Some(schedules) = target.durable.as_ref().map(|d| d.schedules.clone()) {
                        // Kept in the store: it goes on across restarts.
                        let task = super::durable::schedule::timer_starts(
                            spec, starter, cancel, schedules,
                        );
                        self.inner.timer_starts.spawn_on(task, &target.runtime);
                        continue;
                    }
                    let task = timer_starts(spec, starter, cancel);
                    self.inner.timer_starts.spawn_on(task, &target.runtime);
                }
                // `process!` allows only messages, signals and timers on starts.
                _ => {}
            }
        }
        let id = self.inner.next_deployment.fetch_add(1, Ordering::Relaxed);
        let registration = Registration {
            process,
            subs,
            cancel,
        };
        self.inner
            .deployments
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(id, registration);
        Ok((
            Deployment {
                id: DeploymentId(id),
                started,
                data: PhantomData,
            },
            Adopter(Arc::downgrade(&target)),
        ))
    }

    /// The deployments of older versions of `process` on this engine, which a
    /// deploy of it replaces; [`DeployError::NewerDeployed`] if a newer version is
    /// deployed.
    pub(super) fn older_deployments(
        &self,
        process: &'static Graph<Erased>,
    ) -> Result<Vec<DeploymentId>, DeployError> {
        let deployments = self
            .inner
            .deployments
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        let mut older = Vec::new();
        for (&id, registration) in deployments.iter() {
            let deployed = registration.process;
            if deployed.name != process.name {
                continue;
            }
            if deployed.version > process.version {
                return Err(DeployError::NewerDeployed {
                    process: process.name,
                    deployed: deployed.version,
                    given: process.version,
                });
            }
            if deployed.version < process.version {
                older.push(DeploymentId(id));
            }
        }
        Ok(older)
    }

    /// Stop a deployment's start events: no further instance starts from them (the
    /// running ones go on). `false` if it was not deployed.
    pub fn undeploy(&self, deployment: DeploymentId) -> bool {
        let registration = self
            .inner
            .deployments
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(&deployment.0);
        let Some(registration) = registration else {
            return false;
        };
        for sub in registration.subs {
            self.inner.hub.unsubscribe(sub);
        }
        registration.cancel.cancel();
        true
    }
}

/// Identifies a deployment, for [`Engine::undeploy`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct DeploymentId(pub(super) u64);

/// A deployed process: the instances its start events start come out of it.
pub struct Deployment<D: 'static> {
    id: DeploymentId,
    started: mpsc::UnboundedReceiver<InstanceHandle<Erased>>,
    data: PhantomData<fn() -> D>,
}

impl Deployment<Erased> {
    /// The same deployment, typed: its instances' data is a `D`.
    pub(super) fn typed<D>(self) -> Deployment<D> {
        Deployment {
            id: self.id,
            started: self.started,
            data: PhantomData,
        }
    }
}

impl<D> Deployment<D> {
    /// The deployment's id.
    pub fn id(&self) -> DeploymentId {
        self.id
    }

    /// The next instance a start event started; `None` once no start event can start
    /// another — the deployment was undeployed, the engine shut down, or (timer
    /// starts only) the schedule has run out — and every started one was taken.
    pub async fn next(&mut self) -> Option<InstanceHandle<D>> {
        self.started.recv().await.map(InstanceHandle::typed)
    }
}

/// Why a process could not be deployed.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum DeployError {
    /// The process has no message, signal or timer start event to start it.
    #[error("process `{process}` has no message, signal or timer start event; start it with Engine::start")]
    NoEventStart {
        /// The process.
        process: &'static str,
    },
    /// `Engine::deploy` was called outside a tokio runtime.
    #[error("no tokio runtime: deploy from within a tokio runtime")]
    NoRuntime,
    /// A newer version of the process is deployed on this engine: its start
    /// events start the newest version (README, "Versions").
    #[error("version {deployed} of `{process}` is deployed, newer than version {given}: deployed start events start the newest version (undeploy it first to go back)")]
    NewerDeployed {
        /// The process's name.
        process: &'static str,
        /// The version deployed.
        deployed: u32,
        /// The version given.
        given: u32,
    },
}

/// What the engine keeps of a deployment.
pub(super) struct Registration {
    /// The version it starts.
    process: &'static Graph<Erased>,
    subs: Vec<SubId>,
    /// Stops its timer starts.
    cancel: CancellationToken,
}

/// What a deployment's start events start instances of, and the instances running
/// under each correlation key. Engine state, shared by the hub's starters.
pub(super) struct DeployTarget {
    pub(super) engine: Weak<Inner>,
    pub(super) runtime: tokio::runtime::Handle,
    pub(super) process: &'static Graph<Erased>,
    pub(super) data: Erased,
    running: Mutex<HashMap<String, InstanceHandle<Erased>>>,
    /// The names of its message starts that start the next instance of a key whose
    /// instance ended: plain message starts and an exclusive instantiating gate's
    /// arms.
    next_starts: Vec<Arc<str>>,
    /// The names of a parallel instantiating gate's arms: their repeats buffered
    /// while the instance of a key ran are stale once it ended.
    stale_arms: Vec<Arc<str>>,
    pub(super) started: mpsc::UnboundedSender<InstanceHandle<Erased>>,
    /// Set by a durable engine: the instances started are stored.
    #[cfg(feature = "durable")]
    pub(super) durable: Option<DurableStarts>,
}

/// Tells a deployment of an instance it did not start itself but owns the
/// correlation key of (a resumed instance): a message with that key waits for it.
#[cfg_attr(not(feature = "durable"), allow(dead_code))]
/// Weak: holding it must not keep an undeployed deployment (and its `next()`) alive.
pub(crate) struct Adopter(Weak<DeployTarget>);

impl Adopter {
    #[cfg_attr(not(feature = "durable"), allow(dead_code))]
    pub fn adopt(&self, key: String, handle: InstanceHandle<Erased>) {
        let Some(target) = self.0.upgrade() else {
            return;
        };
        let mut running = target.running.lock().unwrap_or_else(|p| p.into_inner());
        running.insert(key.clone(), handle.clone());
        drop(running);
        target.watch(key, handle);
    }
}

/// How a durable engine's deployment stores the instances it starts.
#[cfg(feature = "durable")]
pub(crate) struct DurableStarts {
    pub writer: crate::store::Writer,
    pub codec: crate::instance::durable::records::Codec<Erased>,
    pub keep_history: bool,
    /// Told of every instance started (a node of several watches its leases).
    pub started: Option<StartedHook>,
    pub every_task: bool,
    /// The deployment's timer-start schedules as stored.
    pub schedules: Arc<super::durable::schedule::Schedules>,
}

/// Told of each instance a durable deployment starts.
#[cfg(feature = "durable")]
pub(crate) type StartedHook = Arc<dyn Fn(&InstanceHandle<Erased>) + Send + Sync>;

impl DeployTarget {
    /// When the instance owning `key` ends, the key's next start message (buffered
    /// meanwhile) starts the next instance: Zeebe's rule.
    fn watch(self: &Arc<Self>, key: String, handle: InstanceHandle<Erased>) {
        // Weak: an undeployed deployment starts nothing more.
        let target = Arc::downgrade(self);
        self.runtime.spawn(async move {
            let _ = handle.wait_finished().await;
            if let Some(target) = target.upgrade() {
                target.key_ended(&key, handle.id());
            }
        });
    }

    /// The instance `ended` owning `key` ended: a parallel gate's stale arm repeats
    /// for the key are dropped, and the oldest buffered start message for the key is
    /// published again — it starts the next instance (or feeds a catch that waits for
    /// it meanwhile). Nothing during a shutdown: the messages stay (a durable engine's
    /// in its store, for the restart).
    fn key_ended(&self, key: &str, ended: crate::instance::InstanceId) {
        let Some(engine) = self.engine.upgrade() else {
            return;
        };
        if engine.stop.is_stopping() {
            return;
        }
        {
            let mut running = self.running.lock().unwrap_or_else(|p| p.into_inner());
            match running.get(key) {
                Some(h) if h.id() == ended => {
                    running.remove(key);
                }
                // Another instance owns the key now.
                Some(_) => return,
                None => {}
            }
        }
        let stale = engine.hub.drop_stale(&self.stale_arms, key);
        #[cfg(feature = "durable")]
        if let Some(durable) = &self.durable {
            if !stale.is_empty() {
                let drops = stale
                    .into_iter()
                    .map(|id| crate::store::Write::DropMessage { id });
                durable.writer.send(drops.collect());
            }
        }
        #[cfg(not(feature = "durable"))]
        let _ = stale;
        if let Some((name, payload, stored)) = engine.hub.take_oldest(&self.next_starts, key) {
            engine.hub.publish_stored(&name, key, payload, stored);
        }
    }

    /// Start an instance at `start`; `None` if the engine is gone or shutting down.
    fn start(
        &self,
        start: NodeIdx,
        payload: Payload,
        also: Vec<NodeIdx>,
        #[cfg_attr(not(feature = "durable"), allow(unused_variables))] (key, stored): (
            Option<&str>,
            Option<u64>,
        ),
        ack: Option<crate::events::SignalAck>,
    ) -> Option<InstanceHandle<Erased>> {
        let engine = self.engine.upgrade()?;
        // Admitted before the data is cloned: a shutdown that begins meanwhile waits
        // for this instance rather than returning before it exists.
        let admitted = engine.admit()?;
        let entry = Entry::Event {
            start,
            payload: Some(payload),
            also,
        };
        let data = self.data.clone();
        #[cfg(feature = "durable")]
        if let Some(durable) = &self.durable {
            // Stored by its first checkpoint, which also consumes the message that
            // started it: a restart either finds the instance or the message, never
            // both.
            let id = engine.next_id().0;
            let mut stored_as = crate::instance::durable::Durable::new(
                durable.writer.clone(),
                durable.codec,
                id,
                0,
                key.map(str::to_string),
            );
            stored_as.keep_history = durable.keep_history;
            stored_as.every_task = durable.every_task;
            if let Some(message) = stored {
                stored_as
                    .taken
                    .push(crate::store::Write::Consume { message });
            }
            // A durable broadcast hears back once the instance is stored.
            stored_as.acks.extend(ack.map(Into::into));
            let handle = engine.spawn_durable(
                admitted,
                &self.runtime,
                self.process,
                (data, entry),
                stored_as,
                None,
            );
            if let Some(started) = &durable.started {
                started(&handle);
            }
            let _ = self.started.send(handle.clone());
            return Some(handle);
        }
        // A keyed message start's key is the instance's correlation key.
        let keys = crate::query::memory::Keys {
            business: None,
            correlation: key.map(Box::from),
        };
        let handle = engine.spawn(
            admitted,
            Some(&self.runtime),
            self.process,
            data,
            entry,
            keys,
        );
        let _ = self.started.send(handle.clone());
        if let Some(ack) = ack {
            let _ = ack.send(Ok(())); // nothing to store
        }
        Some(handle)
    }
}

/// One start event of a deployment, as the hub's starter.
pub(super) struct StartOn {
    pub(super) target: Arc<DeployTarget>,
    pub(super) start: NodeIdx,
    /// A parallel instantiating gate's other arms.
    also: Vec<NodeIdx>,
}

impl Starter for StartOn {
    fn process(&self) -> &'static str {
        self.target.process.name
    }

    fn runs(&self, key: &str) -> bool {
        let running = self
            .target
            .running
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        // Until its end is handled (`key_ended`): a message meanwhile is buffered
        // behind the older ones, which go first.
        running.contains_key(key)
    }

    fn offer_message(&self, key: &str, payload: Payload, stored: Option<u64>) -> Offer {
        let mut running = self
            .target
            .running
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        if running.contains_key(key) {
            return Offer::KeyRunning; // the running instance gets it, when it waits
        }
        match self.target.start(
            self.start,
            payload,
            self.also.clone(),
            (Some(key), stored),
            None,
        ) {
            Some(handle) => {
                running.insert(key.to_string(), handle.clone());
                drop(running);
                self.target.watch(key.to_string(), handle);
                Offer::Started
            }
            None => Offer::Closed,
        }
    }

    fn offer_signal(&self, payload: Payload, ack: Option<crate::events::SignalAck>) -> Offer {
        match self
            .target
            .start(self.start, payload, self.also.clone(), (None, None), ack)
        {
            Some(_) => Offer::Started,
            None => Offer::Closed,
        }
    }
}

/// Where a deployed process can start, with the trigger that starts it there and the
/// arms to wait on as well: its start events, and each arm of an instantiating
/// event-based gateway (with the other arms, when the gate is parallel).
fn entry_points(
    process: &'static Graph<Erased>,
) -> Vec<(NodeIdx, &'static Trigger<Erased>, Vec<NodeIdx>)> {
    let mut entries = Vec::new();
    for &s in process.starts {
        match &process.nodes[s].kind {
            NodeKind::StartEvent(trigger) => entries.push((s, trigger, Vec::new())),
            NodeKind::InstantiatingGate { parallel } => {
                let arms: Vec<NodeIdx> = process.nodes[s]
                    .outgoing
                    .iter()
                    .map(|&f| process.flows[f].target)
                    .collect();
                for &arm in &arms {
                    if let NodeKind::Catch(trigger) | NodeKind::Receive(trigger) =
                        &process.nodes[arm].kind
                    {
                        let also = if *parallel {
                            arms.iter().copied().filter(|&a| a != arm).collect()
                        } else {
                            Vec::new()
                        };
                        entries.push((arm, trigger, also));
                    }
                }
            }
            _ => {}
        }
    }
    entries
}

/// A timer start: an instance at every occurrence, until undeployed.
async fn timer_starts(spec: TimerSpec, starter: Arc<StartOn>, cancel: CancellationToken) {
    let mut next = spec.first(tokio::time::Instant::now());
    let mut fired = 0;
    while let Some(at) = next {
        tokio::select! {
            _ = cancel.cancelled() => return,
            _ = tokio::time::sleep_until(at) => {}
        }
        fired += 1;
        if starter
            .target
            .start(starter.start, Arc::new(()), Vec::new(), (None, None), None)
            .is_none()
        {
            return;
        }
        next = spec.next(fired, at);
    }
}
