//! `resume` with eviction on (`DurableEngine::evict_idle`): only the stored
//! running instances with work now are loaded — a task under way, a timer due, a
//! stored message for one of their subscriptions, a birth record, a call's parent
//! or child (the store's wake index, `Store::to_load`). Each of the others is
//! registered as evicted and asleep without reading its checkpoint: its id,
//! process and what can wake it (`Store::resting`, read a page at a time and kept
//! a page at a time, so what the resume holds of them at once is one page). Their
//! due times stay in the store: the evicted instances' one timer reads them from
//! its due-time index (`due.rs`). Those with a message subscription are found by
//! a durable publish in the store's index ([`DurableEngine::wake_for_message`]),
//! those with a signal subscription by a durable broadcast (`signals.rs`); those
//! with a key a deployment of their process takes back are loaded still (the
//! deployment must hold their handle) and evicted again once they rest.

use std::collections::HashSet;

use super::asleep::Sleeper;
use super::{DurableEngine, EngineError, ResumeReport, SkipReason, Skipped};
use crate::instance::durable::now_ms;
use crate::instance::InstanceId;
use crate::store::Resting;

/// How many records of the instances loaded although at rest are read at once.
const READ_AT_ONCE: usize = 256;

/// How many instances at rest a resume reads at once (and keeps asleep in one
/// batch): what it holds of them at a time.
const RESTING_AT_ONCE: usize = 4096;

impl DurableEngine {
    /// `resume` of an engine alone on its store that evicts: what rests stays in
    /// the store.
    pub(super) async fn resume_resting(&self) -> Result<ResumeReport, EngineError> {
        let store = self.inner.store.clone();
        let now = now_ms();
        // The ids stored before the resume began bound the pages: one started
        // meanwhile is this engine's already.
        let (load, upto) = tokio::task::spawn_blocking(move || {
            Ok::<_, crate::store::StoreError>((store.to_load(now)?, store.next_ids()?.instance))
        })
        .await
        .map_err(|_| EngineError::NoRuntime)??;
        let mut report = ResumeReport::default();
        self.inner.resuming.send_replace(true);
        let _resumed = super::resume::ResumingDone(&self.inner.resuming);
        let loaded: HashSet<u64> = load.iter().map(|r| r.id).collect();
        let mut load_too = Vec::new();
        // Most are of a few processes: the last one's registration is looked up once.
        let mut last: Option<(String, u64, Option<super::Registered>)> = None;
        let mut after = None;
        loop {
            let store = self.inner.store.clone();
            let page = tokio::task::spawn_blocking(move || store.resting(after, RESTING_AT_ONCE))
                .await
                .map_err(|_| EngineError::NoRuntime)??;
            let full = page.len() == RESTING_AT_ONCE;
            after = page.last().map(|r| r.id);
            let page: Vec<_> = page
                .into_iter()
                .filter(|r| r.id < upto && !loaded.contains(&r.id))
                .collect();
            let asleep = self.sleepers(page, &mut last, &mut load_too, &mut report);
            report.asleep += asleep.len();
            self.inner.sleep(&self.engine.inner, &asleep);
            if !full || after.is_none_or(|a| a >= upto) {
                break;
            }
        }
        for record in load {
            self.resume_record(record, &mut report);
        }
        for ids in load_too.chunks(READ_AT_ONCE) {
            let (store, ids) = (self.inner.store.clone(), ids.to_vec());
            let records = tokio::task::spawn_blocking(move || {
                ids.into_iter()
                    .filter_map(|id| store.instance(id).transpose())
                    .collect::<Result<Vec<_>, _>>()
            })
            .await
            .map_err(|_| EngineError::NoRuntime)??;
            for record in records {
                self.resume_record(record, &mut report);
            }
        }
        self.redeliver(&mut report).await?;
        Ok(report)
    }

    /// Resume the records a node took over (`cluster.rs`): with eviction on, those
    /// at rest with no timer due are kept asleep as a resume keeps them
    /// (`sleepers`), their lease taken but no loop made; the others are loaded.
    /// Returns how many were kept asleep: a stored message for one of them is
    /// found by the node's claimer (`claims.rs`), which loads it.
    #[cfg(feature = "postgres")]
    pub(super) fn resume_taken(
        &self,
        records: Vec<crate::store::InstanceRecord>,
        report: &mut ResumeReport,
    ) -> usize {
        if self.inner.dormancy.after().is_none() {
            for record in records {
                self.resume_record(record, report);
            }
            return 0;
        }
        let now = now_ms();
        let mut resting = Vec::new();
        let mut kept = std::collections::HashMap::new();
        for record in records {
            let wake = &record.wake;
            if !wake.at_rest || wake.due_ms.is_some_and(|at| at <= now) {
                self.resume_record(record, report);
                continue;
            }
            resting.push(Resting {
                id: record.id,
                process: record.process.clone(),
                fingerprint: record.fingerprint,
                key: record.key.clone(),
                due_ms: wake.due_ms,
                messages: !wake.messages.is_empty(),
                signals: !wake.signals.is_empty(),
            });
            kept.insert(record.id, record);
        }
        let (mut last, mut load_too) = (None, Vec::new());
        let asleep = self.sleepers(resting, &mut last, &mut load_too, report);
        report.asleep += asleep.len();
        self.inner.sleep(&self.engine.inner, &asleep);
        for id in load_too {
            if let Some(record) = kept.remove(&id) {
                self.resume_record(record, report);
            }
        }
        asleep.len()
    }

    /// A page of resting instances as the engine keeps them asleep; those of a
    /// process not registered are skipped, those a deployment takes back by key
    /// are to load (`load_too`).
    fn sleepers(
        &self,
        page: Vec<Resting>,
        last: &mut Option<(String, u64, Option<super::Registered>)>,
        load_too: &mut Vec<u64>,
        report: &mut ResumeReport,
    ) -> Vec<Sleeper> {
        let adopters = self
            .inner
            .adopters
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        let mut asleep = Vec::with_capacity(page.len());
        for resting in page {
            let id = InstanceId(resting.id);
            let same = last
                .as_ref()
                .is_some_and(|(p, f, _)| *f == resting.fingerprint && *p == resting.process);
            if !same {
                let registered = self.registered(&resting.process, resting.fingerprint);
                *last = Some((resting.process.clone(), resting.fingerprint, registered));
            }
            let Some(registered) = last.as_ref().and_then(|(_, _, r)| *r) else {
                let reason = match self.newest(&resting.process) {
                    Some(newest) => SkipReason::ModelChanged {
                        stored: resting.fingerprint,
                        registered: newest.graph.fingerprint,
                    },
                    None => SkipReason::NotRegistered,
                };
                report.skipped.push(Skipped {
                    id,
                    process: resting.process,
                    reason,
                });
                continue;
            };
            let adopted = resting.key.is_some() && adopters.contains_key(registered.graph.name);
            if adopted {
                load_too.push(resting.id);
                continue;
            }
            report.resumed.push((id, registered.graph.name));
            asleep.push((
                resting.id,
                registered.graph,
                resting.due_ms,
                resting.messages,
                resting.signals,
            ));
        }
        asleep
    }

    /// Before a durable publish of (`name`, `key`) reaches the hub: load the asleep
    /// instances the store's wake index says wait for it (`Inner::wake_for_message`).
    pub(super) async fn wake_for_message(&self, name: &str, key: &str) {
        self.inner
            .wake_for_message(&self.engine.inner, name, key)
            .await;
    }
}

impl super::Inner {
    /// Load the asleep instances the store's wake index says wait for the message
    /// (`name`, `key`), and wait until they have restored (subscribed again), so the
    /// hub hands it to one of them — published from outside (before it reaches the
    /// hub) or thrown by an instance (buffered: taken from the buffer as they
    /// subscribe). A burst for one instance loads it once (`load_evicted`). Nothing
    /// is read while no instance sleeps waiting for a message.
    pub(crate) async fn wake_for_message(
        self: &std::sync::Arc<Self>,
        engine: &std::sync::Arc<crate::engine::Inner>,
        name: &str,
        key: &str,
    ) {
        if !self.asleep_for_messages() {
            return;
        }
        let (store, n, k) = (self.store.clone(), name.to_string(), key.to_string());
        let waiting = tokio::task::spawn_blocking(move || store.waiting_for_message(&n, &k)).await;
        let ids = match waiting {
            Ok(Ok(ids)) => ids,
            Ok(Err(error)) => {
                tracing::warn!(message = name, key, %error, "the store's wake index could not be read: evicted instances waiting for the message are not woken");
                return;
            }
            Err(_) => return,
        };
        for id in ids {
            if self.asleep_or_loading(id) {
                self.load_evicted(engine, id).await;
            }
        }
    }
}
