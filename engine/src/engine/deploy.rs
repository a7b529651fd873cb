//! Deployments: a deployed process's start events (message, signal, timer, and the
//! arms of an instantiating gateway) start its instances.

use std::collections::HashMap;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex, Weak};

use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::{Engine, Inner};
use crate::data::ProcessData;
use crate::events::{Offer, StartTrigger, Starter, SubId, TimerSpec};
use crate::graph::{NodeIdx, NodeKind, Payload, Process, Trigger};
use crate::instance::{Entry, InstanceHandle};

impl Engine {
    /// Deploy `process`: from now on its start events start instances — a message
    /// start when its message is published (the message's key becomes the instance's
    /// correlation key: while an instance with that key runs, a further message with
    /// it is not a new instance but waits, buffered, for that instance's catch), a
    /// signal start on every broadcast, a timer start on its schedule. Each instance
    /// starts with a clone of `data` and comes out of the returned [`Deployment`].
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
    /// assert_eq!(engine.publish_message("order", "A-1", "A-1".to_string()), Published::Started);
    /// let order = orders.next().await.unwrap().outcome().await.completed().unwrap();
    /// assert_eq!(order.id, "A-1");
    /// # }
    /// ```
    pub fn deploy<D: ProcessData>(
        &self,
        process: &'static Process<D>,
        data: D,
    ) -> Result<Deployment<D>, DeployError> {
        self.deploy_with(
            process,
            data,
            #[cfg(feature = "durable")]
            None,
        )
        .map(|(deployment, _)| deployment)
    }

    /// Deploy `process`; with `durable`, the instances its start events start are
    /// durable ones.
    pub(super) fn deploy_with<D: ProcessData>(
        &self,
        process: &'static Process<D>,
        data: D,
        #[cfg(feature = "durable")] durable: Option<DurableStarts<D>>,
    ) -> Result<(Deployment<D>, Adopter<D>), DeployError> {
        let runtime = tokio::runtime::Handle::try_current().map_err(|_| DeployError::NoRuntime)?;
        let entries = entry_points(process);
        if entries.is_empty() {
            return Err(DeployError::NoEventStart {
                process: process.name,
            });
        }
        let (started_tx, started) = mpsc::unbounded_channel();
        let cancel = self.inner.stop.child_token();
        let target = Arc::new(DeployTarget {
            engine: Arc::downgrade(&self.inner),
            runtime,
            process,
            data,
            running: Mutex::new(HashMap::new()),
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
                Trigger::Timer(spec) => {
                    let (spec, cancel) = (spec(), cancel.clone());
                    let task = timer_starts(spec, starter, cancel);
                    self.inner.timer_starts.spawn_on(task, &target.runtime);
                }
                // `process!` allows only messages, signals and timers on starts.
                _ => {}
            }
        }
        let id = self.inner.next_deployment.fetch_add(1, Ordering::Relaxed);
        let registration = Registration { subs, cancel };
        self.inner
            .deployments
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(id, registration);
        Ok((
            Deployment {
                id: DeploymentId(id),
                started,
            },
            Adopter(Arc::downgrade(&target)),
        ))
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
pub struct Deployment<D> {
    id: DeploymentId,
    started: mpsc::UnboundedReceiver<InstanceHandle<D>>,
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
        self.started.recv().await
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
}

/// What the engine keeps of a deployment.
pub(super) struct Registration {
    subs: Vec<SubId>,
    /// Stops its timer starts.
    cancel: CancellationToken,
}

/// What a deployment's start events start instances of, and the instances running
/// under each correlation key. Engine state, shared by the hub's starters.
struct DeployTarget<D: ProcessData> {
    engine: Weak<Inner>,
    runtime: tokio::runtime::Handle,
    process: &'static Process<D>,
    data: D,
    running: Mutex<HashMap<String, InstanceHandle<D>>>,
    started: mpsc::UnboundedSender<InstanceHandle<D>>,
    /// Set by a durable engine: the instances started are stored.
    #[cfg(feature = "durable")]
    durable: Option<DurableStarts<D>>,
}

/// Tells a deployment of an instance it did not start itself but owns the
/// correlation key of (a resumed instance): a message with that key waits for it.
#[cfg_attr(not(feature = "durable"), allow(dead_code))]
/// Weak: holding it must not keep an undeployed deployment (and its `next()`) alive.
pub(crate) struct Adopter<D: ProcessData>(Weak<DeployTarget<D>>);

impl<D: ProcessData> Adopter<D> {
    #[cfg_attr(not(feature = "durable"), allow(dead_code))]
    pub fn adopt(&self, key: String, handle: InstanceHandle<D>) {
        let Some(target) = self.0.upgrade() else {
            return;
        };
        let mut running = target.running.lock().unwrap_or_else(|p| p.into_inner());
        running.retain(|_, h| !h.is_finished());
        running.insert(key, handle);
    }
}

/// How a durable engine's deployment stores the instances it starts.
#[cfg(feature = "durable")]
pub(crate) struct DurableStarts<D> {
    pub writer: crate::store::Writer,
    pub codec: crate::instance::snapshot::Codec<D>,
    pub keep_history: bool,
    /// Told of every instance started (a node of several watches its leases).
    pub started: Option<StartedHook<D>>,
}

/// Told of each instance a durable deployment starts.
#[cfg(feature = "durable")]
pub(crate) type StartedHook<D> = Arc<dyn Fn(&InstanceHandle<D>) + Send + Sync>;

impl<D: ProcessData> DeployTarget<D> {
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
    ) -> Option<InstanceHandle<D>> {
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
            if let Some(message) = stored {
                stored_as
                    .taken
                    .push(crate::store::Write::Consume { message });
            }
            let handle = engine.spawn_durable(
                admitted,
                &self.runtime,
                self.process,
                (data, entry),
                stored_as,
            );
            if let Some(started) = &durable.started {
                started(&handle);
            }
            let _ = self.started.send(handle.clone());
            return Some(handle);
        }
        let handle = engine.spawn(admitted, &self.runtime, self.process, data, entry);
        let _ = self.started.send(handle.clone());
        Some(handle)
    }
}

/// One start event of a deployment, as the hub's starter.
struct StartOn<D: ProcessData> {
    target: Arc<DeployTarget<D>>,
    start: NodeIdx,
    /// A parallel instantiating gate's other arms.
    also: Vec<NodeIdx>,
}

impl<D: ProcessData> Starter for StartOn<D> {
    fn runs(&self, key: &str) -> bool {
        let running = self
            .target
            .running
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        running.get(key).is_some_and(|h| !h.is_finished())
    }

    fn offer_message(&self, key: &str, payload: Payload, stored: Option<u64>) -> Offer {
        let mut running = self
            .target
            .running
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        if running.get(key).is_some_and(|h| !h.is_finished()) {
            return Offer::KeyRunning; // the running instance gets it, when it waits
        }
        match self
            .target
            .start(self.start, payload, self.also.clone(), (Some(key), stored))
        {
            Some(handle) => {
                running.retain(|_, h| !h.is_finished());
                running.insert(key.to_string(), handle);
                Offer::Started
            }
            None => Offer::Closed,
        }
    }

    fn offer_signal(&self, payload: Payload) -> Offer {
        match self
            .target
            .start(self.start, payload, self.also.clone(), (None, None))
        {
            Some(_) => Offer::Started,
            None => Offer::Closed,
        }
    }
}

/// Where a deployed process can start, with the trigger that starts it there and the
/// arms to wait on as well: its start events, and each arm of an instantiating
/// event-based gateway (with the other arms, when the gate is parallel).
fn entry_points<D>(
    process: &'static Process<D>,
) -> Vec<(NodeIdx, &'static Trigger<D>, Vec<NodeIdx>)> {
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
async fn timer_starts<D: ProcessData>(
    spec: TimerSpec,
    starter: Arc<StartOn<D>>,
    cancel: CancellationToken,
) {
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
            .start(starter.start, Arc::new(()), Vec::new(), (None, None))
            .is_none()
        {
            return;
        }
        next = spec.next(fired, at);
    }
}
