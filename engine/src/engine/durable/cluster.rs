//! A durable engine as one **node** of several sharing one PostgreSQL store
//! (feature `postgres`; the store's side is `store/postgres/cluster.rs`).
//!
//! - **Ownership.** The node that starts an instance owns it; every instance a node
//!   owns is held by a lease the node renews every `lease / 3` in one statement. A
//!   node's checkpoints and ends are fenced: a node whose lease was taken gets
//!   `StoreError::Fenced` at its next write, stops the instance without ending it
//!   (`InstanceError::Moved` on its handle) and the new owner goes on.
//! - **Takeover.** Every `lease / 3` a node also takes expired leases of processes it
//!   has registered (batches of `takeover_batch`, `SKIP LOCKED`: survivors split a
//!   dead node's instances among them by how fast each takes batches) and resumes
//!   them by the recovery rules: tasks that were running run again, waits are armed
//!   again, timers at their recorded deadlines. With eviction on, those at rest with
//!   nothing due are kept asleep, not loaded (`rest.rs`, `node_evict.rs`).
//! - **Messages.** `publish_message` stores the message first (acknowledged = stored).
//!   If a catch or a message start of this node takes it, it is stored claimed by this
//!   node and delivered here; otherwise it is stored unclaimed and the other nodes are
//!   woken by `NOTIFY`. Each node claims the stored messages its own waiting catches
//!   and message starts take (`claims.rs`), when woken by `NOTIFY`, when one of its
//!   catches starts waiting or a message start is deployed, and every `poll` as the
//!   safety net (a notification is lost while a listening connection is down). A
//!   claim expires with the node; the receiving instance consumes the message in its
//!   checkpoint's transaction, so it is applied exactly once. TTL as on one node.
//! - **Start events** fire once cluster-wide: a timer start's schedule is shared
//!   through the store (`schedule.rs`), and a start message waits while an instance
//!   of its process with its key runs on any node (the store decides, `claims.rs`).
//! - **Signals** go to every node by `NOTIFY` (a signal is not stored: a node not
//!   listening at that moment misses it, as a catch not armed then would).

use std::any::Any;
use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use serde::de::DeserializeOwned;
use serde::Serialize;
use tokio::sync::{mpsc, Notify};
use tokio_util::sync::CancellationToken;
use tracing::{debug, info, warn};

use super::{DurableEngine, EngineError, ResumeReport, SkipReason, Skipped};
use crate::data::Erased;
use crate::engine::Engine;
use crate::instance::{InstanceHandle, InstanceId};
use crate::store::{PostgresStore, StoreError};

use super::node_config::{fresh_node_id, NodeConfig};

/// A node's own side: its connection for leases, claims and messages, and its
/// background work.
pub(crate) struct Node {
    pub(super) id: String,
    pub(super) config: NodeConfig,
    /// The node's own connection (the writer has the other one).
    pub(super) store: Arc<PostgresStore>,
    /// The end of the id blocks in use (instances, messages).
    blocks: std::sync::Mutex<(u64, u64)>,
    /// Wakes the message claimer.
    pub(super) wake: Arc<Notify>,
    /// A message may be stored for an instance held asleep here (another node
    /// published one, a takeover kept instances asleep, the listener reconnected):
    /// the claimer's next round asks the store's wake index (`owned_waiting`).
    /// Not set by a catch beginning to wait here, which wakes the claimer too —
    /// the index's read would then run for every load, ahead of a publish on the
    /// node's connection.
    pub(super) stored_for_asleep: Arc<AtomicBool>,
    pub(super) stop: CancellationToken,
    listening: Arc<AtomicBool>,
    /// The instances this node runs, to stop one whose lease it lost.
    live: std::sync::Mutex<HashMap<u64, Live>>,
    /// Renewals begun (an instance registered after renewal `n` began is not
    /// judged by it).
    renewals: AtomicU64,
    /// How signal payloads go to the other nodes, by signal name.
    encoders: std::sync::Mutex<HashMap<String, SignalEncoder>>,
    /// The engine's durable side, whose asleep instances a renewal looks over.
    pub(super) durable: std::sync::OnceLock<std::sync::Weak<super::Inner>>,
}

/// An instance this node runs.
struct Live {
    /// `Node::renewals` when it was registered.
    since: u64,
    /// Asked to stop already (its lease was lost).
    stopping: bool,
    run: Box<dyn Running>,
}

/// A running instance's handle, type-erased.
trait Running: Send + Sync {
    fn finished(&self) -> bool;
    fn stop(&self);
}

impl<D: Clone + Send + Sync + 'static> Running for InstanceHandle<D> {
    fn finished(&self) -> bool {
        self.is_finished()
    }

    fn stop(&self) {
        // Its end is refused by the fence: the loop stops without ending it in the
        // store, and its handle says it moved.
        self.cancel();
    }
}

/// Encodes a signal's payload (as `Any`) to JSON, for the other nodes.
type SignalEncoder = fn(&(dyn Any + Send + Sync)) -> Option<serde_json::Value>;

/// A signal between nodes, as the `NOTIFY` payload.
#[derive(Serialize, serde::Deserialize)]
pub(super) struct SignalNote {
    /// The sending node (which broadcast it locally itself).
    pub(super) from: String,
    pub(super) name: String,
    pub(super) payload: serde_json::Value,
}

impl Engine {
    /// A durable engine on the PostgreSQL database at `url`: the same as
    /// [`DurableEngine::connect`].
    ///
    /// Needs the `postgres` feature.
    #[cfg_attr(docsrs, doc(cfg(feature = "postgres")))]
    pub async fn connect(url: &str) -> Result<DurableEngine, EngineError> {
        DurableEngine::connect(url).await
    }
}

pub(super) async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> Result<T, StoreError> + Send + 'static,
) -> Result<T, EngineError> {
    Ok(tokio::task::spawn_blocking(f)
        .await
        .map_err(|_| EngineError::NoRuntime)??)
}

impl DurableEngine {
    /// A durable engine on the PostgreSQL database at `url` as one node of several,
    /// configured by `config`. Call within a tokio runtime; register the processes
    /// and [`resume`](Self::resume) as on one node: the node then also takes over,
    /// in the background, the instances of registered processes whose owner died.
    /// [`shutdown`](Self::shutdown) stops that background work (a thread renewing
    /// the leases, one listening for notifications, two tasks); an engine dropped
    /// without it keeps renewing its leases until the process ends.
    ///
    /// Needs the `postgres` feature.
    #[cfg_attr(docsrs, doc(cfg(feature = "postgres")))]
    pub async fn connect_with(url: &str, config: NodeConfig) -> Result<Self, EngineError> {
        let id = config.node_id.clone().unwrap_or_else(fresh_node_id);
        let (url, schema, node_id, lease, block) = (
            url.to_string(),
            config.schema.clone(),
            id.clone(),
            config.lease,
            config.id_block,
        );
        let (store, own, renewals, ids) = blocking(move || {
            let store = PostgresStore::connect_node(&url, &schema, &node_id, lease)?;
            let own = store.connect_again()?;
            let renewals = store.connect_again()?;
            let ids = own.reserve_ids(block)?;
            Ok((store, own, renewals, ids))
        })
        .await?;
        let engine = Self::with_store_config(Arc::new(store), config.engine)?;
        engine.engine.inner.instance_ids.continue_from(ids.0);
        engine.inner.next_message.store(ids.1, Ordering::Relaxed);
        let node = Arc::new(Node {
            id: id.clone(),
            blocks: std::sync::Mutex::new((ids.0 + block, ids.1 + block)),
            config,
            store: Arc::new(own),
            wake: Arc::new(Notify::new()),
            stored_for_asleep: Arc::new(AtomicBool::new(true)),
            stop: CancellationToken::new(),
            listening: Arc::new(AtomicBool::new(true)),
            live: std::sync::Mutex::new(HashMap::new()),
            renewals: AtomicU64::new(0),
            encoders: std::sync::Mutex::new(HashMap::new()),
            durable: std::sync::OnceLock::new(),
        });
        let _ = node.durable.set(Arc::downgrade(&engine.inner));
        engine.engine.inner.hub.on_wait(node.wake.clone());
        let _ = engine.inner.node.set(node.clone());
        node.spawn(&engine, renewals);
        info!(node = %id, "engine node connected");
        Ok(engine)
    }

    /// For a deployment's starts: each instance it starts runs here (a node).
    pub(super) fn started_hook(&self) -> Option<crate::engine::deploy::StartedHook> {
        let node = self.inner.node.get()?.clone();
        Some(Arc::new(move |handle: &InstanceHandle<Erased>| {
            node.runs(handle)
        }))
    }

    /// A node runs this instance (started or resumed here): watched by the renewals.
    pub(super) fn runs_here<D: Clone + Send + Sync + 'static>(&self, handle: &InstanceHandle<D>) {
        if let Some(node) = self.inner.node.get() {
            node.runs(handle);
        }
    }

    /// This engine's node id, if it is a node of several ([`DurableEngine::connect`]).
    ///
    /// Needs the `postgres` feature.
    #[cfg_attr(docsrs, doc(cfg(feature = "postgres")))]
    pub fn node_id(&self) -> Option<&str> {
        self.inner.node.get().map(|n| n.id.as_str())
    }

    /// Say that signals called `name` carry a `P`: a node sends them to the other
    /// nodes as JSON and reads theirs back. Call it on every node that broadcasts or
    /// catches `name`.
    ///
    /// Needs the `postgres` feature.
    #[cfg_attr(docsrs, doc(cfg(feature = "postgres")))]
    pub fn signal_type<P>(&self, name: &str)
    where
        P: Serialize + DeserializeOwned + Any + Send + Sync,
    {
        self.message_type::<P>(&signal_key(name));
        if let Some(node) = self.inner.node.get() {
            let encode: SignalEncoder =
                |payload| serde_json::to_value(payload.downcast_ref::<P>()?).ok();
            let mut encoders = node.encoders.lock().unwrap_or_else(|p| p.into_inner());
            encoders.insert(name.to_string(), encode);
        }
    }

    /// A node: send the signal `name` to the other nodes (its payload encoded as
    /// [`signal_type`](Self::signal_type) said; without it, it reaches this node only,
    /// with a warning). Not a node: nothing to do.
    pub(super) async fn signal_other_nodes(
        &self,
        name: &str,
        payload: &(dyn Any + Send + Sync),
    ) -> Result<(), EngineError> {
        let Some(node) = self.inner.node.get() else {
            return Ok(());
        };
        let encode = {
            let encoders = node.encoders.lock().unwrap_or_else(|p| p.into_inner());
            encoders.get(name).copied()
        };
        let Some(payload) = encode.and_then(|encode| encode(payload)) else {
            warn!(signal = %name, "no signal_type for this signal's payload: it reaches this node only");
            return Ok(());
        };
        let note = SignalNote {
            from: node.id.clone(),
            name: name.to_string(),
            payload,
        };
        let text = serde_json::to_string(&note).map_err(|e| EngineError::Data {
            process: "",
            message: e.to_string(),
        })?;
        let store = node.store.clone();
        blocking(move || store.notify_signal(&text)).await?;
        Ok(())
    }
}

impl DurableEngine {
    /// The registered processes: name and fingerprint of every version.
    fn registered_versions(&self) -> Vec<(String, u64)> {
        let registry = self
            .inner
            .registry
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        registry
            .values()
            .map(|r| (r.graph.name.to_string(), r.graph.fingerprint))
            .collect()
    }
}

/// Where a signal's payload decoder is kept (beside the messages').
pub(super) fn signal_key(name: &str) -> String {
    format!("\u{1}signal:{name}")
}

impl Node {
    /// This node runs `handle`'s instance: its renewals watch its lease.
    fn runs<D: Clone + Send + Sync + 'static>(&self, handle: &InstanceHandle<D>) {
        let since = self.renewals.load(Ordering::SeqCst);
        let mut live = self.live.lock().unwrap_or_else(|p| p.into_inner());
        live.insert(
            handle.id().0,
            Live {
                since,
                stopping: false,
                run: Box::new(handle.clone()),
            },
        );
    }

    /// How often a node polls the store.
    pub(crate) fn poll(&self) -> Duration {
        self.config.poll
    }

    /// Stop the background work (at shutdown).
    pub(crate) fn stop(&self) {
        self.stop.cancel();
        self.listening.store(false, Ordering::Relaxed);
    }

    fn spawn(self: &Arc<Self>, engine: &DurableEngine, renewals: PostgresStore) {
        let (signals_tx, signals_rx) = mpsc::unbounded_channel();
        self.spawn_listener(signals_tx);
        self.spawn_renewer(renewals);
        let node = self.clone();
        let takeovers = engine.clone();
        tokio::spawn(async move { node.takeover_loop(takeovers).await });
        let node = self.clone();
        let claims = engine.clone();
        tokio::spawn(async move { node.claim_loop(claims, signals_rx).await });
    }

    /// A thread of its own LISTENs (the blocking client's wait): it wakes the claimer
    /// and hands signals over.
    fn spawn_listener(&self, signals: mpsc::UnboundedSender<String>) {
        let mut listener = self.store.listen();
        let wake = self.wake.clone();
        let stored_for_asleep = self.stored_for_asleep.clone();
        let listening = self.listening.clone();
        let poll = self.config.poll;
        let spawned = std::thread::Builder::new()
            .name("thresh-listen".into())
            .spawn(move || {
                while listening.load(Ordering::Relaxed) {
                    match listener.wait(poll) {
                        Ok(heard) => {
                            if heard.messages || heard.reconnected {
                                stored_for_asleep.store(true, Ordering::Relaxed);
                                wake.notify_one();
                            }
                            for signal in heard.signals {
                                let _ = signals.send(signal);
                            }
                        }
                        Err(e) => {
                            debug!(error = %e, "listening for notifications failed; retrying");
                            std::thread::sleep(poll);
                        }
                    }
                }
            });
        if let Err(e) = spawned {
            warn!(error = %e, "could not start the listening thread: messages from other nodes come by the poll only");
        }
    }

    /// Renew this node's leases every `lease / 3`, on a thread and a connection of
    /// their own: neither busy async workers, nor a long takeover, nor the claims
    /// delay a renewal (a late one would lose the leases of a live node).
    fn spawn_renewer(self: &Arc<Self>, store: PostgresStore) {
        let node = self.clone();
        let tick = (self.config.lease / 3).max(Duration::from_millis(1));
        let spawned = std::thread::Builder::new()
            .name("thresh-leases".into())
            .spawn(move || {
                let mut next = std::time::Instant::now() + tick;
                while !node.stop.is_cancelled() {
                    let now = std::time::Instant::now();
                    if now < next {
                        std::thread::sleep((next - now).min(Duration::from_millis(50)));
                        continue;
                    }
                    next = now + tick;
                    let renewal = node.renewals.fetch_add(1, Ordering::SeqCst) + 1;
                    match store.renew() {
                        Ok(kept) => {
                            debug!(node = %node.id, leases = kept.len(), "leases renewed");
                            node.sweep(&store, renewal, &kept);
                        }
                        Err(e) => warn!(node = %node.id, error = %e, "renewing leases failed"),
                    }
                }
            });
        if let Err(e) = spawned {
            warn!(error = %e, "could not start the lease thread: this node's leases expire");
        }
    }

    /// Take over expired leases every `lease / 3`.
    async fn takeover_loop(self: Arc<Self>, engine: DurableEngine) {
        let tick = (self.config.lease / 3).max(Duration::from_millis(1));
        loop {
            tokio::select! {
                _ = self.stop.cancelled() => return,
                _ = tokio::time::sleep(tick) => {}
            }
            match self.take_over(&engine, &self.stopping()).await {
                Ok(report)
                    if !report.resumed.is_empty()
                        || !report.skipped.is_empty()
                        || report.asleep > 0 =>
                {
                    info!(
                        node = %self.id,
                        resumed = report.resumed.len(),
                        asleep = report.asleep,
                        skipped = report.skipped.len(),
                        "took over instances"
                    )
                }
                Ok(_) => {}
                Err(e) => warn!(node = %self.id, error = %e, "taking over instances failed"),
            }
            if let Err(e) = self.refill_ids(&engine).await {
                warn!(node = %self.id, error = %e, "reserving ids failed");
            }
        }
    }

    /// After renewal number `renewal`, which kept `kept`: forget the instances that
    /// ended here, and stop those this node no longer owns (another node took them:
    /// their next write would be refused anyway); until their loops stopped they are
    /// not taken back (`stopping`).
    fn sweep(&self, store: &PostgresStore, renewal: u64, kept: &[u64]) {
        let kept: HashSet<u64> = kept.iter().copied().collect();
        self.sweep_asleep(store, &kept);
        let candidates: Vec<u64> = {
            let mut live = self.live.lock().unwrap_or_else(|p| p.into_inner());
            live.retain(|_, entry| !entry.run.finished());
            live.iter()
                .filter(|(id, e)| e.since < renewal && !e.stopping && !kept.contains(id))
                .map(|(id, _)| *id)
                .collect()
        };
        if candidates.is_empty() {
            return;
        }
        // Not renewed: ended meanwhile, not stored yet (a deployment's instance
        // before its first checkpoint), or moved. Only the moved ones stop.
        let moved = match store.moved(&candidates) {
            Ok(moved) => moved,
            Err(e) => {
                warn!(node = %self.id, error = %e, "checking for lost leases failed");
                return;
            }
        };
        let mut live = self.live.lock().unwrap_or_else(|p| p.into_inner());
        for id in moved {
            if let Some(entry) = live.get_mut(&id) {
                warn!(node = %self.id, instance = id, "lost the lease of an instance: stopping it here");
                entry.stopping = true;
                entry.run.stop();
            }
        }
    }

    /// The lost instances whose loops have not stopped yet.
    fn stopping(&self) -> Vec<u64> {
        let live = self.live.lock().unwrap_or_else(|p| p.into_inner());
        live.iter()
            .filter(|(_, e)| e.stopping && !e.run.finished())
            .map(|(id, _)| *id)
            .collect()
    }

    /// Take over, batch by batch, every expired instance of a registered process
    /// (but those in `not`), and resume them.
    async fn take_over(
        &self,
        engine: &DurableEngine,
        not: &[u64],
    ) -> Result<ResumeReport, EngineError> {
        let processes = engine.registered_versions();
        let mut report = ResumeReport::default();
        if processes.is_empty() {
            return Ok(report);
        }
        let processes = Arc::new(processes);
        let not = Arc::new(not.to_vec());
        loop {
            if self.stop.is_cancelled() {
                return Ok(report);
            }
            let store = self.store.clone();
            let batch = self.config.takeover_batch;
            let (wanted, not) = (processes.clone(), not.clone());
            let taken = blocking(move || store.take_over(&wanted, &not, batch)).await?;
            let full = taken.len() >= batch;
            let mut records = Vec::with_capacity(taken.len());
            for t in taken {
                debug!(
                    node = %self.id,
                    instance = t.record.id,
                    fence = t.fence,
                    from = t.from.as_deref().unwrap_or("none"),
                    "took over an instance"
                );
                records.push(t.record);
            }
            // With eviction on, what rests is kept asleep, not loaded; the claimer
            // looks for stored messages for it at once.
            if engine.resume_taken(records, &mut report) > 0 {
                self.stored_for_asleep.store(true, Ordering::Relaxed);
                self.wake.notify_one();
            }
            if !full {
                return Ok(report);
            }
            // Let the other survivors take their batches too.
            tokio::task::yield_now().await;
        }
    }

    /// `resume` on a node: take over what no live node owns, then look for messages.
    pub(crate) async fn take_over_all(
        self: Arc<Self>,
        engine: &DurableEngine,
    ) -> Result<ResumeReport, EngineError> {
        let mut report = self.take_over(engine, &self.stopping()).await?;
        self.stored_for_asleep.store(true, Ordering::Relaxed);
        self.wake.notify_one();
        let processes = engine.registered_versions();
        let names: Vec<String> = processes.iter().map(|(n, _)| n.clone()).collect();
        let store = self.store.clone();
        let (leased, unregistered) = blocking(move || {
            let names: Vec<&str> = names.iter().map(String::as_str).collect();
            Ok((
                store.leased_elsewhere(&processes)?,
                store.running_elsewhere(&names)?,
            ))
        })
        .await?;
        for lease in &leased {
            info!(
                node = %self.id,
                holder = %lease.node,
                instances = lease.instances,
                free_in_ms = lease
                    .free_at
                    .duration_since(std::time::SystemTime::now())
                    .map_or(0, |d| d.as_millis() as u64),
                "instances held by another node's leases: taken over here once they run out, unless that node renews them"
            );
        }
        report.leased = leased;
        report
            .skipped
            .extend(unregistered.into_iter().map(|(id, process)| Skipped {
                id: InstanceId(id),
                process,
                reason: SkipReason::NotRegistered,
            }));
        Ok(report)
    }

    /// Reserve new id blocks once half of the current ones is used.
    async fn refill_ids(&self, engine: &DurableEngine) -> Result<(), EngineError> {
        let block = self.config.id_block;
        let (instance_end, message_end) = *self.blocks.lock().unwrap_or_else(|p| p.into_inner());
        let instance = engine.engine.inner.instance_ids.peek();
        let message = engine.inner.next_message.load(Ordering::Relaxed);
        let low = |next: u64, end: u64| end.saturating_sub(next) < block / 2;
        if !low(instance, instance_end) && !low(message, message_end) {
            return Ok(());
        }
        let store = self.store.clone();
        let (i, m) = blocking(move || store.reserve_ids(block)).await?;
        // Ids handed out meanwhile are below the old block's end: still unique.
        if low(instance, instance_end) {
            engine.engine.inner.instance_ids.continue_from(i);
        }
        if low(message, message_end) {
            engine.inner.next_message.store(m, Ordering::Relaxed);
        }
        let mut blocks = self.blocks.lock().unwrap_or_else(|p| p.into_inner());
        *blocks = (
            if low(instance, instance_end) {
                i + block
            } else {
                instance_end
            },
            if low(message, message_end) {
                m + block
            } else {
                message_end
            },
        );
        Ok(())
    }
}
