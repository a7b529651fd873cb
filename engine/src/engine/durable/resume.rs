//! Resuming a durable engine's stored instances after a restart: each running
//! record of a registered process (under its fingerprint) gets a new loop from its
//! checkpoint, its call children adopted again and its correlation key given back
//! to its deployment (README, "Durable instances").

use std::sync::Arc;

use super::{DurableEngine, EngineError, ResumeReport, Resumed, SkipReason, Skipped};
use crate::data::Erased;
use crate::graph::{Graph, Process};
use crate::instance::durable::records::{Checkpoint, Codec};
use crate::instance::durable::Durable;
use crate::instance::{Entry, InstanceHandle, InstanceId};
use crate::store::InstanceRecord;

impl DurableEngine {
    /// Resume every stored running instance of a registered process. (A node of
    /// several, [`DurableEngine::connect`]: every such instance no live node owns —
    /// the others are theirs.)
    pub async fn resume(&self) -> Result<ResumeReport, EngineError> {
        #[cfg(feature = "postgres")]
        let report = match self.inner.node.get() {
            Some(node) => node.clone().take_over_all(self).await?,
            None => self.resume_here().await?,
        };
        #[cfg(not(feature = "postgres"))]
        let report = self.resume_here().await?;
        warn_unregistered(&report);
        Ok(report)
    }

    /// `resume` of an engine alone on its store.
    async fn resume_here(&self) -> Result<ResumeReport, EngineError> {
        if self.inner.dormancy.after().is_some() {
            return self.resume_resting().await;
        }
        let store = self.inner.store.clone();
        let running = tokio::task::spawn_blocking(move || store.running())
            .await
            .map_err(|_| EngineError::NoRuntime)??;
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
    pub(super) fn resume_record(&self, record: InstanceRecord, report: &mut ResumeReport) {
        {
            let id = InstanceId(record.id);
            let skip = |reason| Skipped {
                id,
                process: record.process.clone(),
                reason,
            };
            // On the version it was stored with, whichever is the newest.
            let Some(registered) = self.registered(&record.process, record.fingerprint) else {
                let reason = match self.newest(&record.process) {
                    Some(newest) => SkipReason::ModelChanged {
                        stored: record.fingerprint,
                        registered: newest.graph.fingerprint,
                    },
                    None => SkipReason::NotRegistered,
                };
                report.skipped.push(skip(reason));
                return;
            };
            let (graph, codec) = (registered.graph, registered.codec);
            let process = record.process.clone();
            let key = record.key.clone();
            match self.resume_one(graph, codec, record) {
                Ok(handle) => {
                    let name = graph.name;
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
                    let resumed = Resumed {
                        process: graph,
                        key,
                        handle,
                    };
                    self.inner.keep_resumed(id.0, resumed, true);
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

    /// How many handles of resumed instances this engine keeps for
    /// [`handle`](Self::handle): those of ended instances go as the number grows.
    /// For tests.
    #[doc(hidden)]
    pub fn resumed_handles(&self) -> usize {
        self.inner.resumed_handles()
    }

    /// The handle of a resumed instance of `process` — also of one the resume
    /// left asleep in the store (eviction on, [`evict_idle`](Self::evict_idle)):
    /// the handle is made without loading it, and its first request (or anything
    /// else for it) loads it. One that has ended may no longer be found here (the
    /// engine lets the handles of ended instances go as it keeps more): the store
    /// still has it, [`instance`](Self::instance) reads it.
    pub fn handle<D: 'static>(
        &self,
        process: &'static Process<D>,
        id: InstanceId,
    ) -> Option<InstanceHandle<D>> {
        let of = |graph: &Graph<Erased>| {
            // Of that version of its process, whose registration fixes the data type.
            graph.name == process.name() && graph.fingerprint == process.fingerprint()
        };
        let resumed = || {
            let resumed = self.inner.resumed.lock().unwrap_or_else(|p| p.into_inner());
            let resumed = resumed.get(&id.0)?;
            of(resumed.process).then(|| resumed.handle.clone().typed())
        };
        // Looked for among the resumed, the asleep, then the resumed again: an
        // asleep one loading meanwhile joins the resumed before it leaves the
        // asleep.
        resumed()
            .or_else(|| {
                let handle = self.inner.asleep_handle(&self.engine.inner, id, &of)?;
                Some(handle.typed())
            })
            .or_else(resumed)
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
                parent = snapshot.parent.map(|p| crate::instance::ParentLink {
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
        let durable = self.inner.stored_durable(codec, record);
        Ok(self.spawn_stored(admitted, &runtime, process, (data, entry), durable, parent))
    }
}

/// Turns the resume flag off when `resume` is done (also on an early return).
pub(super) struct ResumingDone<'a>(pub(super) &'a tokio::sync::watch::Sender<bool>);

impl Drop for ResumingDone<'_> {
    fn drop(&mut self) {
        self.0.send_replace(false);
    }
}

/// Stored running instances of processes not registered: `resume` came before
/// `register`, or a process is missing. Said at warn, by process, with counts.
fn warn_unregistered(report: &ResumeReport) {
    let mut missing: std::collections::BTreeMap<&str, usize> = Default::default();
    for skipped in &report.skipped {
        if skipped.reason == SkipReason::NotRegistered {
            *missing.entry(skipped.process.as_str()).or_default() += 1;
        }
    }
    if !missing.is_empty() {
        let processes: Vec<String> = missing
            .iter()
            .map(|(process, n)| format!("{process} ({n})"))
            .collect();
        tracing::warn!(
            processes = %processes.join(", "),
            "resume found stored running instances of processes not registered here: \
             register them before resume (they stay stored, untouched)"
        );
    }
}

impl super::Inner {
    /// How a stored instance goes on being stored: its id, checkpoint number and
    /// keys from its record (a resume, or an evicted instance's load).
    pub(super) fn stored_durable(
        &self,
        codec: Codec<Erased>,
        record: InstanceRecord,
    ) -> Durable<Erased> {
        let mut durable = Durable::new(
            self.writer.clone(),
            codec,
            record.id,
            record.seq,
            record.key,
        );
        durable.business_key = record.business_key;
        // A record of before the store kept start times has none: its last write's.
        durable.started_ms = match record.started_ms {
            0 => record.updated_ms,
            started => started,
        };
        durable
    }
}

impl super::Inner {
    /// Instance `handle.id()` of `process`, asleep since a resume, is loaded:
    /// its handle is kept as a resumed instance's (unless one was asked for
    /// already).
    pub(super) fn resumed_handle(
        &self,
        process: &'static Graph<Erased>,
        handle: InstanceHandle<Erased>,
    ) {
        let id = handle.id().0;
        let resumed = Resumed {
            process,
            key: None,
            handle,
        };
        self.keep_resumed(id, resumed, false);
    }

    /// Keep the handle of resumed instance `id` (`replace`: over one kept already).
    /// Each time the map has doubled since its last pruning (1 024 at least), the
    /// handles of ended instances go: `handle` no longer finds those (the store
    /// has them: `DurableEngine::instance`), and a parent's call looks a child up
    /// in the store once its handle is gone.
    pub(super) fn keep_resumed(&self, id: u64, handle: Resumed, replace: bool) {
        use std::sync::atomic::Ordering;
        let mut resumed = self.resumed.lock().unwrap_or_else(|p| p.into_inner());
        match replace {
            true => {
                resumed.insert(id, handle);
            }
            false => {
                resumed.entry(id).or_insert(handle);
            }
        }
        let pruned_at = self.resumed_pruned_at.load(Ordering::Relaxed);
        if resumed.len() >= (2 * pruned_at).max(1024) {
            resumed.retain(|_, r| !r.handle.is_finished());
            self.resumed_pruned_at
                .store(resumed.len(), Ordering::Relaxed);
        }
    }

    /// How many handles of resumed instances this engine keeps (tests).
    pub(crate) fn resumed_handles(&self) -> usize {
        self.resumed.lock().unwrap_or_else(|p| p.into_inner()).len()
    }
}
