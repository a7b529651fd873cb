//! Call activities on a durable engine: a durable parent's child is durable too —
//! started through the registry (its process must be registered: its data type's
//! codec is there), stored by its first checkpoint, and after a restart found again
//! by the resumed parent's call (README, "Call activities").

use std::sync::atomic::Ordering;
use std::sync::Arc;

use super::Inner;
use crate::data::Erased;
use crate::graph::Graph;
use crate::instance::durable::records::Codec;
use crate::instance::durable::Durable;
use crate::instance::ParentLink;
use crate::instance::Resumed;
use crate::instance::{Entry, InstanceHandle, InstanceId};
use crate::store::Status;

impl Inner {
    /// Start `process` as a durable child: by its registration, which knows how to
    /// store its data. `Ok(None)` when the engine is stopping.
    pub(crate) fn start_child(
        &self,
        engine: &Arc<crate::engine::Inner>,
        process: &'static Graph<Erased>,
        data: Erased,
        link: ParentLink,
    ) -> Result<Option<InstanceHandle<Erased>>, String> {
        let codec = {
            let registry = self.registry.lock().unwrap_or_else(|p| p.into_inner());
            match registry.get(&process.fingerprint) {
                Some(r) if r.graph.name == process.name => r.codec,
                _ if registry.values().any(|r| r.graph.name == process.name) => {
                    return Err(format!(
                        "version {} of `{}` is not registered with this durable engine (another is): register the version the call activity names",
                        process.version, process.name
                    ))
                }
                _ => {
                    return Err(format!(
                        "`{}` is not registered with this durable engine — register it (DurableEngine::register) so its instances are stored and resumed",
                        process.name
                    ))
                }
            }
        };
        self.spawn_child(engine, process, data, link, codec)
    }

    /// Spawn a durable child of a registered process: stored by its first
    /// checkpoint, its parent and depth in every checkpoint.
    fn spawn_child(
        &self,
        engine: &Arc<crate::engine::Inner>,
        process: &'static Graph<Erased>,
        data: Erased,
        link: ParentLink,
        codec: Codec<Erased>,
    ) -> Result<Option<InstanceHandle<Erased>>, String> {
        let runtime =
            tokio::runtime::Handle::try_current().map_err(|_| "no tokio runtime".to_string())?;
        let Some(admitted) = engine.admit() else {
            return Ok(None);
        };
        let id = engine.next_id().0;
        let mut durable = Durable::new(self.writer.clone(), codec, id, 0, None);
        durable.keep_history = self.keep_history.load(Ordering::Relaxed);
        durable.every_task = !self.wait_states_only.load(Ordering::Relaxed);
        Ok(Some(engine.spawn_durable(
            admitted,
            &runtime,
            process,
            (data, Entry::NoneStart),
            durable,
            Some(link),
        )))
    }

    /// The child `id` a resumed parent's call recorded: once the resume under way
    /// (if any) has resumed every stored instance, its handle — or how it ended while
    /// the engine was down, or why it is not running.
    pub(crate) async fn resumed_child(
        self: Arc<Self>,
        process: &'static Graph<Erased>,
        id: InstanceId,
    ) -> Resumed<Erased> {
        let mut resuming = self.resuming.subscribe();
        let _ = resuming.wait_for(|on| !*on).await;
        {
            let resumed = self.resumed.lock().unwrap_or_else(|p| p.into_inner());
            if let Some(r) = resumed.get(&id.0) {
                return match r.process.name == process.name {
                    true => Resumed::Running(r.handle.clone()),
                    false => Resumed::Skipped(format!(
                        "it was resumed as an instance of `{}`",
                        r.process.name
                    )),
                };
            }
        }
        let store = self.store.clone();
        let record = match tokio::task::spawn_blocking(move || store.instance(id.0)).await {
            Ok(Ok(record)) => record,
            Ok(Err(error)) => return Resumed::Skipped(format!("the store failed: {error}")),
            Err(_) => return Resumed::Skipped("the store could not be read".to_string()),
        };
        let Some(record) = record else {
            return Resumed::NotStored;
        };
        let decode = {
            let registry = self.registry.lock().unwrap_or_else(|p| p.into_inner());
            registry
                .get(&record.fingerprint)
                .filter(|r| r.graph.name == process.name)
                .map(|r| r.codec.decode)
        };
        if record.status == Status::Running {
            return Resumed::Skipped(match decode {
                None => format!(
                    "`{}` is not registered with this engine under the model it was stored with",
                    record.process
                ),
                Some(_) => "its checkpoint could not be resumed".to_string(),
            });
        }
        let Some(decode) = decode else {
            return Resumed::Skipped(format!(
                "`{}` is not registered with this engine under the model it was stored with",
                record.process
            ));
        };
        let ended: serde_json::Value = record
            .outcome
            .as_deref()
            .and_then(|o| serde_json::from_str(o).ok())
            .unwrap_or(serde_json::Value::Null);
        let kind = ended["outcome"].as_str().unwrap_or("");
        match kind {
            "completed" | "terminated" => match decode(ended["data"].clone()) {
                Ok(data) => Resumed::Ended(Ok(data)),
                Err(error) => Resumed::Skipped(format!("its final data is unreadable: {error}")),
            },
            other => {
                let error = ended["error"].as_str().unwrap_or("");
                Resumed::Ended(Err(format!(
                    "ended {other} while the engine was down{}{error}",
                    if error.is_empty() { "" } else { ": " }
                )))
            }
        }
    }
}
