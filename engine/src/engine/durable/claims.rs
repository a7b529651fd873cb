//! A node's messages (feature `postgres`): publishing (stored, claimed here when a
//! catch or a start event here takes it) and the claimer, which takes from the
//! store what this node's catches and message starts take (`store/postgres/messages.rs`
//! for the SQL).
//!
//! The claimer runs when woken — by `NOTIFY` (a message stored or released for any
//! node, an instance with a correlation key ended), by the hub (a catch began to
//! wait, a message start was deployed) — and every `poll`, the safety net for a
//! notification lost while the listening connection was down. Its poll costs what
//! is stored unclaimed for the names waited for here, not the number of waits.

use std::collections::HashSet;
use std::sync::atomic::Ordering;
use std::sync::Arc;

use tokio::sync::mpsc;
use tracing::{debug, warn};

use super::cluster::{blocking, signal_key, Node, SignalNote};
use super::{DurableEngine, EngineError};
use crate::events::{Published, Wanted};
use crate::graph::Payload;
use crate::instance::durable::now_ms;
use crate::store::{Candidate, MessageRecord, Write};

impl DurableEngine {
    /// A node publishes a message: stored (claimed by this node if a catch or start
    /// event here takes it), then delivered here, or left for the node that takes it.
    pub(super) async fn publish_on_node(
        &self,
        node: &Arc<Node>,
        record: MessageRecord,
        payload: Payload,
    ) -> Result<Published, EngineError> {
        let hub = self.engine.inner.hub.clone();
        // An instance this node holds asleep waiting for it is loaded first, so its
        // catch takes it here (nothing is read while none sleeps for a message).
        self.wake_for_message(&record.name, &record.key).await;
        // A catch here takes it; else a start event here may, by the key rule (decided
        // by the store, across nodes).
        let waiter = hub.waits(&record.name, &record.key);
        let starts = match waiter {
            true => Vec::new(),
            false => start_rule(&hub.starts(), &record.name),
        };
        let store = node.store.clone();
        let stored = record.clone();
        let claimed = blocking(move || store.store_message(&stored, waiter, &starts))
            .await
            .map_err(|e| match e {
                EngineError::Store(e) => {
                    super::messages::unknown_publish(e, &record.name, &record.key)
                }
                e => e,
            })?;
        debug!(message = record.id, name = %record.name, key = %record.key, waiter, claimed, "message stored");
        if claimed {
            let offered = (record.id, !waiter);
            if let Some(published) = hub.offer_stored(&record.name, &record.key, payload, offered) {
                return Ok(published);
            }
            debug!(
                message = record.id,
                "a published message's catch went away: released"
            );
            // The catch went away meanwhile: any node may take it now. It is stored
            // (acknowledged): a release that fails leaves the claim to expire.
            let store = node.store.clone();
            if let Err(error) = blocking(move || store.release_message(record.id)).await {
                warn!(%error, message = record.id, "a published message's claim was not released; it expires");
            }
        }
        Ok(Published::Buffered)
    }

    /// A node: claim now what its catches and message start events take from the
    /// store, as its poll does, without waiting for the poll or a notification.
    /// Returns how many messages it claimed and handed over (0 if this engine is not
    /// a node of several).
    ///
    /// Needs the `postgres` feature.
    #[cfg_attr(docsrs, doc(cfg(feature = "postgres")))]
    pub async fn claim_now(&self) -> Result<usize, EngineError> {
        let Some(node) = self.inner.node.get() else {
            return Ok(0);
        };
        node.claim(self, now_ms(), &mut HashSet::new()).await
    }
}

/// The name of a stored request that the node running an instance retry one of
/// its incidents (`DurableEngine::retry` on another node); its key is
/// [`retry_key`]. Reserved: a process's message names are never this.
pub(super) const RETRY_REQUEST: &str = "\u{1}retry";

/// A retry request's key: the incident's instance and number.
pub(super) fn retry_key(id: crate::retry::IncidentId) -> String {
    format!("{}:{}", id.instance.0, id.number)
}

impl DurableEngine {
    /// The data change a retry request carries: none for `null`, else the JSON of
    /// the instance's data, read as the data of the version the instance runs when
    /// the change applies (the request names only the process).
    fn retry_data(
        &self,
        id: crate::retry::IncidentId,
        json: &str,
    ) -> Result<Option<crate::retry::RetryChange>, String> {
        let value: serde_json::Value = serde_json::from_str(json).map_err(|e| e.to_string())?;
        if value.is_null() {
            return Ok(None);
        }
        let process = self
            .engine
            .incidents_now()
            .into_iter()
            .find(|i| i.id == id)
            .map(|i| i.process)
            // Evicted here: its process is kept (its incident opens as it loads).
            .or_else(|| self.inner.evicted_process(id.instance.0))
            .ok_or("the incident is not open here")?;
        let codecs: Vec<_> = self
            .versions_of(process)
            .into_iter()
            .map(|r| r.codec)
            .collect();
        if codecs.is_empty() {
            return Err("its process is not registered here".to_string());
        }
        Ok(Some(Box::new(move |now: &mut crate::data::Erased| {
            // The version whose data type the instance has (versions are few).
            for codec in codecs {
                if let Ok(data) = (codec.decode)(value.clone()) {
                    if data.type_name() == now.type_name() {
                        *now = data;
                        return true;
                    }
                }
            }
            false
        })))
    }
}

/// The incident a retry request's key names.
fn retry_of(key: &str) -> Option<crate::retry::IncidentId> {
    let (instance, number) = key.split_once(':')?;
    Some(crate::retry::IncidentId {
        instance: crate::instance::InstanceId(instance.parse().ok()?),
        number: number.parse().ok()?,
    })
}

/// The key rule of a start message `name`, from the message starts `starts` (name,
/// process) deployed here: the message starts of the processes that start on `name`
/// (their instances, and their start messages, hold the key).
fn start_rule(starts: &[(String, &'static str)], name: &str) -> Vec<(String, &'static str)> {
    let processes: HashSet<&str> = starts
        .iter()
        .filter(|(n, _)| n == name)
        .map(|(_, p)| *p)
        .collect();
    starts
        .iter()
        .filter(|(_, p)| processes.contains(p))
        .cloned()
        .collect()
}

impl Node {
    /// Claim the stored messages this node's catches and message starts take, and
    /// deliver them; pass signals from other nodes on.
    pub(super) async fn claim_loop(
        self: Arc<Self>,
        engine: DurableEngine,
        mut signals: mpsc::UnboundedReceiver<String>,
    ) {
        let mut last_expiry = 0;
        // Message names waited for here with no payload type known (warned once).
        let mut unknown = HashSet::new();
        loop {
            tokio::select! {
                _ = self.stop.cancelled() => return,
                _ = self.wake.notified() => {}
                Some(signal) = signals.recv() => self.signal(&engine, &signal),
                // The poll, the safety net for a lost notification: the asleep's
                // index too.
                _ = tokio::time::sleep(self.config.poll) => {
                    self.stored_for_asleep.store(true, Ordering::Relaxed);
                }
            }
            while let Ok(signal) = signals.try_recv() {
                self.signal(&engine, &signal);
            }
            let now = now_ms();
            if now - last_expiry >= 1_000 {
                // Expired messages leave the store (any node may do it).
                last_expiry = now;
                engine
                    .inner
                    .writer
                    .send(vec![Write::Expire { now_ms: now }]);
            }
            if let Err(e) = self.claim(&engine, now, &mut unknown).await {
                warn!(node = %self.id, error = %e, "claiming messages failed");
            }
        }
    }

    /// One claim poll: page through the unclaimed messages of the names this node's
    /// catches wait for and of its message starts, claim those it takes — a catch's
    /// by its key, looked up in the hub; a start's if the key rule lets it start now —
    /// and deliver them.
    async fn claim(
        &self,
        engine: &DurableEngine,
        now: i64,
        unknown: &mut HashSet<String>,
    ) -> Result<usize, EngineError> {
        const PAGE: usize = 500;
        let hub = engine.engine.inner.hub.clone();
        // Instances held asleep here for a stored message are loaded first: their
        // catches then wait in the hub, and take it below.
        if engine.inner.asleep_for_messages()
            && self.stored_for_asleep.swap(false, Ordering::Relaxed)
        {
            if let Err(e) = self.wake_asleep(engine, now).await {
                // Asked again at the next round.
                self.stored_for_asleep.store(true, Ordering::Relaxed);
                return Err(e);
            }
        }
        // Only messages this node can read: another node may know their type.
        let mut wanted = engine.readable(hub.wanted(), unknown);
        // Retry requests from other nodes, for incidents open here (an evicted
        // instance's included: loaded to retry).
        let evicted = engine.evicted_instances() > 0;
        if engine.engine.has_incidents() || evicted {
            wanted.waits.push(RETRY_REQUEST.to_string());
        }
        // And requests for the open tasks here (`tasks.rs`).
        if engine.engine.has_tasks() || evicted {
            wanted.waits.push(super::tasks::TASK_REQUEST.to_string());
        }
        // And cancel requests, for the instances that run here (`cancel.rs`).
        if engine.engine.running_instances() > 0 || evicted {
            wanted.waits.push(super::cancel::CANCEL_REQUEST.to_string());
        }
        if wanted.waits.is_empty() && wanted.starts.is_empty() {
            return Ok(0);
        }
        let wanted = Arc::new(wanted);
        let (mut after, mut taken) = (0, 0);
        loop {
            let (store, w) = (self.store.clone(), wanted.clone());
            let candidates =
                blocking(move || store.claim_candidates(&w.waits, &w.starts, now, after, PAGE))
                    .await?;
            let full = candidates.len() >= PAGE;
            after = candidates.last().map_or(after, |c| c.seq);
            let (requests, candidates): (Vec<Candidate>, Vec<Candidate>) = candidates
                .into_iter()
                .partition(|c| c.name == RETRY_REQUEST);
            taken += self.retry_requested(engine, requests, now).await?;
            let (requests, candidates): (Vec<Candidate>, Vec<Candidate>) = candidates
                .into_iter()
                .partition(|c| c.name == super::tasks::TASK_REQUEST);
            taken += self.task_requested(engine, requests, now).await?;
            let (requests, candidates): (Vec<Candidate>, Vec<Candidate>) = candidates
                .into_iter()
                .partition(|c| c.name == super::cancel::CANCEL_REQUEST);
            taken += self.cancel_requested(engine, requests, now).await?;
            let (waited, starts): (Vec<Candidate>, Vec<Candidate>) = candidates
                .into_iter()
                .partition(|c| hub.waits(&c.name, &c.key));
            let store = self.store.clone();
            let ids: Vec<u64> = waited.iter().map(|c| c.id).collect();
            let mut claimed: Vec<(MessageRecord, bool)> = match ids.is_empty() {
                true => Vec::new(),
                false => blocking(move || store.claim_waited(&ids, now)).await?,
            }
            .into_iter()
            .map(|m| (m, false))
            .collect();
            for start in starts.into_iter().filter(|c| c.startable) {
                let rule = start_rule(&wanted.starts, &start.name);
                let store = self.store.clone();
                let message =
                    blocking(move || store.claim_start(start.id, &start.key, &rule, now)).await?;
                claimed.extend(message.map(|m| (m, true)));
            }
            taken += self.deliver(engine, claimed).await;
            if !full {
                return Ok(taken);
            }
        }
    }

    /// Load the instances this node holds asleep (after a resume or a takeover) for
    /// which the store holds an unclaimed message their wake index waits for —
    /// published on another node, or before the takeover — and wait until they have
    /// restored, their catches subscribed again.
    async fn wake_asleep(&self, engine: &DurableEngine, now: i64) -> Result<(), EngineError> {
        let store = self.store.clone();
        let ids = blocking(move || store.owned_waiting(now)).await?;
        let inner = &engine.inner;
        let loads = ids
            .into_iter()
            .filter(|&id| inner.asleep_or_loading(id))
            .map(|id| inner.load_evicted(&engine.engine.inner, id));
        let loaded = futures_util::future::join_all(loads).await;
        debug!(node = %self.id, loaded = loaded.iter().flatten().count(), "asleep instances woken for stored messages");
        Ok(())
    }

    /// Claim the stored requests among `requests` whose key `runs_here` says this
    /// node holds (an incident, a task): each is removed once answered
    /// ([`answered`]), and one that does not read here stays for the lease of its
    /// claim, then any node may take it.
    async fn claim_requests(
        &self,
        requests: Vec<Candidate>,
        now: i64,
        runs_here: impl Fn(&str) -> bool,
    ) -> Result<Vec<MessageRecord>, EngineError> {
        let ids: Vec<u64> = requests
            .iter()
            .filter(|c| runs_here(&c.key))
            .map(|c| c.id)
            .collect();
        if ids.is_empty() {
            return Ok(Vec::new());
        }
        let store = self.store.clone();
        blocking(move || store.claim_waited(&ids, now)).await
    }

    /// Claim the retry requests for incidents open here, retry them, and remove
    /// each request once its retry was answered (a request for an incident already
    /// resolved goes too). Returns how many it claimed.
    async fn retry_requested(
        &self,
        engine: &DurableEngine,
        requests: Vec<Candidate>,
        now: i64,
    ) -> Result<usize, EngineError> {
        let runs_here = |key: &str| retry_of(key).is_some_and(|id| engine.runs_incident(id));
        let claimed = self.claim_requests(requests, now, runs_here).await?;
        let count = claimed.len();
        for request in claimed {
            let Some(id) = retry_of(&request.key) else {
                continue;
            };
            let change = match engine.retry_data(id, &request.payload) {
                Ok(change) => change,
                Err(error) => {
                    warn!(incident = %id, %error, "a retry request's data does not read");
                    continue;
                }
            };
            let engine = engine.clone();
            tokio::spawn(async move {
                // Evicted here: loaded first (`retry_here`).
                match engine.retry_here(id, change).await {
                    Ok(()) => debug!(incident = %id, "retried at another node's request"),
                    Err(error) => {
                        debug!(incident = %id, %error, "a retry requested by another node")
                    }
                }
                answered(&engine, request.id);
            });
        }
        Ok(count)
    }

    /// Claim the requests for tasks open here (`tasks.rs`), act on them, and remove
    /// each once answered. Returns how many it claimed.
    async fn task_requested(
        &self,
        engine: &DurableEngine,
        requests: Vec<Candidate>,
        now: i64,
    ) -> Result<usize, EngineError> {
        let runs_here = |key: &str| {
            super::tasks::task_of(key).is_some_and(|id| {
                engine.engine.runs_task(id) || engine.inner.is_evicted(id.instance.0)
            })
        };
        let claimed = self.claim_requests(requests, now, runs_here).await?;
        let count = claimed.len();
        for request in claimed {
            let (id, act) = match engine.task_request(&request.key, &request.payload) {
                Ok(read) => read,
                Err(error) => {
                    warn!(key = %request.key, %error, "a task request does not read");
                    continue;
                }
            };
            let engine = engine.clone();
            tokio::spawn(async move {
                // Evicted here: loaded first (`act_here`).
                match engine.act_here(id, act).await {
                    Ok(Ok(())) => debug!(task = %id, "acted on at another node's request"),
                    Ok(Err(error)) => {
                        warn!(task = %id, %error, "a task request of another node failed")
                    }
                    // Ended or moved since it was claimed.
                    Err(_) => warn!(task = %id, "a task request of another node: not here"),
                }
                answered(&engine, request.id);
            });
        }
        Ok(count)
    }

    /// Claim the cancel requests for instances that run here, cancel them, and
    /// remove each once answered (a request for an instance that ended meanwhile
    /// goes too). Returns how many it claimed.
    async fn cancel_requested(
        &self,
        engine: &DurableEngine,
        requests: Vec<Candidate>,
        now: i64,
    ) -> Result<usize, EngineError> {
        let instance = |key: &str| key.parse::<u64>().ok();
        let runs_here = |key: &str| instance(key).is_some_and(|id| engine.runs_instance(id));
        let claimed = self.claim_requests(requests, now, runs_here).await?;
        let count = claimed.len();
        for request in claimed {
            let Some(id) = instance(&request.key).map(crate::InstanceId) else {
                continue;
            };
            let engine = engine.clone();
            tokio::spawn(async move {
                let cancelled = match engine.loop_of(id).await {
                    Some(intake) => crate::engine::cancel_through(&intake, id).await,
                    None => Err(crate::CancelError::NotRunning(id)),
                };
                match cancelled {
                    Ok(()) => debug!(instance = %id, "cancelled at another node's request"),
                    Err(error) => {
                        debug!(instance = %id, %error, "a cancel requested by another node")
                    }
                }
                answered(&engine, request.id);
            });
        }
        Ok(count)
    }

    /// Hand claimed messages to this node's catches and (those claimed to start
    /// one) start events; release the ones none takes (any node may claim them
    /// again). Returns how many were taken.
    async fn deliver(&self, engine: &DurableEngine, claimed: Vec<(MessageRecord, bool)>) -> usize {
        let count = claimed.len();
        let hub = &engine.engine.inner.hub;
        let mut released = HashSet::new();
        for (message, start) in claimed {
            let taken = match engine.decode_payload(&message.name, &message.payload) {
                Some(payload) => hub
                    .offer_stored(&message.name, &message.key, payload, (message.id, start))
                    .is_some(),
                None => {
                    warn!(message = message.id, name = %message.name, "a stored message of unknown type: call message_type first");
                    false
                }
            };
            debug!(message = message.id, key = %message.key, start, taken, "claimed message offered");
            if !taken {
                released.insert(message.id);
            }
        }
        let taken = count - released.len();
        for id in released {
            let store = self.store.clone();
            if let Err(e) = blocking(move || store.release_message(id)).await {
                warn!(node = %self.id, error = %e, "releasing a message failed");
            }
        }
        taken
    }

    /// A signal from another node: broadcast here.
    fn signal(&self, engine: &DurableEngine, text: &str) {
        let Ok(note) = serde_json::from_str::<SignalNote>(text) else {
            warn!(node = %self.id, "an unreadable signal notification");
            return;
        };
        if note.from == self.id {
            return;
        }
        let payload = engine.decode_payload_value(&signal_key(&note.name), note.payload);
        match payload {
            // Instances held asleep for it are loaded first (`signals.rs`): off the
            // claimer's task, which must not wait for their restores.
            Some(payload) if engine.inner.asleep_for_signals() => {
                let (engine, name) = (engine.clone(), note.name);
                tokio::spawn(async move {
                    if let Err(error) = engine.broadcast_here(&name, payload).await {
                        warn!(signal = %name, %error, "a signal from another node");
                    }
                });
            }
            Some(payload) => {
                engine.engine.inner.hub.broadcast(&note.name, payload);
            }
            None => {
                warn!(signal = %note.name, "a signal of unknown type from another node: call signal_type first")
            }
        }
    }
}

impl DurableEngine {
    /// What the hub wants, but the message names whose payload type is not known
    /// here; warn once per name of a catch that waits for one.
    fn readable(&self, wanted: Wanted, unknown: &mut HashSet<String>) -> Wanted {
        let payloads = self
            .inner
            .payloads
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        let mut known = |name: &String| {
            let known = payloads.contains_key(name);
            if !known && unknown.insert(name.clone()) {
                warn!(
                    message = %name,
                    "a catch or start event here waits for a message whose payload type \
                     this node does not know: call message_type for it, or it is never \
                     taken from the store here"
                );
            }
            known
        };
        Wanted {
            waits: wanted.waits.into_iter().filter(|n| known(n)).collect(),
            starts: wanted
                .starts
                .into_iter()
                .filter(|(n, _)| known(n))
                .collect(),
        }
    }

    /// A stored payload read back with the type registered for `name`.
    pub(super) fn decode_payload(&self, name: &str, json: &str) -> Option<Payload> {
        let value = serde_json::from_str(json).ok()?;
        self.decode_payload_value(name, value)
    }

    fn decode_payload_value(&self, name: &str, value: serde_json::Value) -> Option<Payload> {
        let decode = self
            .inner
            .payloads
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(name)
            .copied()?;
        decode(value).ok()
    }
}

/// A stored request (a retry's, a task's) was answered: it leaves the store.
fn answered(engine: &DurableEngine, request: u64) {
    engine
        .inner
        .writer
        .send(vec![Write::DropMessage { id: request }]);
}
