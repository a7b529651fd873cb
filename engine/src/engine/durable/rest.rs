//! `resume` with eviction on (`DurableEngine::evict_idle`): only the stored
//! running instances with work now are loaded — a task under way, a timer due, a
//! stored message for one of their subscriptions, a birth record, a call's parent
//! or child (the store's wake index, `store::ToResume`). Each of the others is
//! registered as evicted and asleep without reading its checkpoint: its id,
//! process and due time, as eviction keeps one (`evict.rs`). Those with a message
//! subscription are found by a durable publish in the store's index
//! ([`DurableEngine::wake_for_message`]), those with a signal subscription by a
//! durable broadcast (`signals.rs`); those with a key a deployment of their process
//! takes back are loaded still (the deployment must hold their handle) and evicted
//! again once they rest.

use super::{DurableEngine, EngineError, ResumeReport, SkipReason, Skipped};
use crate::instance::durable::now_ms;
use crate::instance::durable::records::from_wall;
use crate::instance::InstanceId;

/// How many records of the instances loaded although at rest are read at once.
const READ_AT_ONCE: usize = 256;

impl DurableEngine {
    /// `resume` of an engine alone on its store that evicts: what rests stays in
    /// the store.
    pub(super) async fn resume_resting(&self) -> Result<ResumeReport, EngineError> {
        let store = self.inner.store.clone();
        let now = now_ms();
        let split = tokio::task::spawn_blocking(move || store.to_resume(now))
            .await
            .map_err(|_| EngineError::NoRuntime)??;
        let mut report = ResumeReport::default();
        self.inner.resuming.send_replace(true);
        let _resumed = super::resume::ResumingDone(&self.inner.resuming);
        let mut load_too = Vec::new();
        let mut asleep = Vec::with_capacity(split.resting.len());
        {
            let adopters = self
                .inner
                .adopters
                .lock()
                .unwrap_or_else(|p| p.into_inner());
            // Most are of a few processes: the last one's registration is looked up once.
            let mut last: Option<(String, u64, Option<super::Registered>)> = None;
            for resting in split.resting {
                let id = InstanceId(resting.id);
                let same = last
                    .as_ref()
                    .is_some_and(|(p, f, _)| *f == resting.fingerprint && *p == resting.process);
                if !same {
                    let registered = self.registered(&resting.process, resting.fingerprint);
                    last = Some((resting.process.clone(), resting.fingerprint, registered));
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
                    resting.due_ms.map(from_wall),
                    resting.messages,
                    resting.signals,
                ));
            }
        }
        report.asleep = asleep.len();
        self.inner.sleep(&self.engine.inner, asleep);
        for record in split.load {
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
