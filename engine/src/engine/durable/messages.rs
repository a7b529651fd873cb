//! Durable messages: stored before they are acknowledged, consumed with the
//! checkpoint of the instance that applies them, published again on resume.

use crate::data::Storable;
use std::any::Any;
use std::sync::atomic::Ordering;
use std::sync::Arc;

use serde::de::DeserializeOwned;

use super::{DurableEngine, EngineError, PayloadDecoder, ResumeReport};
use crate::events::Published;
use crate::graph::{Payload, Process, Trigger};
use crate::instance::durable::now_ms;
use crate::store::{MessageRecord, StoreError, Write};

impl DurableEngine {
    /// Publish a message durably: it is stored before this returns (`Published` says
    /// what became of it then), and applied exactly once — the receiving durable
    /// instance removes it from the store in the same transaction as the checkpoint
    /// that records its effect; until then a restart delivers it again. It waits in
    /// the store for its catch as long as the broker's time-to-live.
    pub async fn publish_message<P>(
        &self,
        name: &str,
        key: impl AsRef<str>,
        payload: P,
    ) -> Result<Published, EngineError>
    where
        P: Storable + Any + Send + Sync,
    {
        self.publish_message_ttl(name, key, payload, self.inner.message_ttl)
            .await
    }

    /// [`publish_message`](Self::publish_message), but the message waits in the
    /// store for its catch `ttl` at most, rather than the broker's time-to-live
    /// (`EngineConfig::broker`, given where the engine is made: [`Self::open_with`],
    /// [`Self::with_store_config`], `NodeConfig::engine`). A message whose time runs
    /// out untaken leaves the store, logged at warn with its name and key.
    pub async fn publish_message_ttl<P>(
        &self,
        name: &str,
        key: impl AsRef<str>,
        payload: P,
        ttl: std::time::Duration,
    ) -> Result<Published, EngineError>
    where
        P: Storable + Any + Send + Sync,
    {
        self.payload_fits::<P>(name)?;
        self.message_type::<P>(name);
        let json = serde_json::to_string(&payload).map_err(|e| EngineError::Data {
            process: "",
            message: e.to_string(),
        })?;
        let id = self.inner.next_message.fetch_add(1, Ordering::Relaxed);
        let key = key.as_ref();
        let record = MessageRecord {
            id,
            name: name.to_string(),
            key: key.to_string(),
            payload: json,
            expires_ms: now_ms().saturating_add(i64::try_from(ttl.as_millis()).unwrap_or(i64::MAX)),
        };
        #[cfg(feature = "postgres")]
        if let Some(node) = self.inner.node.get() {
            return self.publish_on_node(node, record, Arc::new(payload)).await;
        }
        let receipt = self.inner.writer.submit(vec![Write::Buffer(record)]);
        receipt.await.map_err(|e| unknown_publish(e, name, key))?;
        self.wake_for_message(name, key).await;
        let published =
            self.engine
                .inner
                .hub
                .publish_for(name, key, Arc::new(payload), Some(id), ttl);
        if matches!(published, Published::Dropped | Published::ShutDown) {
            // No instance will take it: it leaves the store. (One it started is
            // consumed by that instance's first checkpoint.)
            self.inner.writer.send(vec![Write::DropMessage { id }]);
        }
        Ok(published)
    }

    /// Whether a `P` is what the registered catches of `name` take (any type, for a
    /// name none of them types).
    fn payload_fits<P: Any>(&self, name: &str) -> Result<(), EngineError> {
        let types = self.inner.payload_types.lock();
        let types = types.unwrap_or_else(|p| p.into_inner());
        match types.get(name) {
            Some(expected) if expected.id != std::any::TypeId::of::<P>() => {
                Err(EngineError::WrongPayload {
                    message: name.to_string(),
                    expected: expected.name,
                    given: std::any::type_name::<P>(),
                })
            }
            _ => Ok(()),
        }
    }

    /// The messages waiting in this engine's buffer for a catch, oldest first, at
    /// most `limit`, as [`Engine::buffered_messages`](crate::Engine::buffered_messages)
    /// (stored ones are buffered again on resume; on a node of several, this
    /// node's).
    pub fn buffered_messages(&self, limit: usize) -> Vec<crate::events::BufferedMessage> {
        self.engine.buffered_messages(limit)
    }

    /// What the broker did with the messages published here so far (delivered,
    /// buffered, dropped, expired, published under an unknown name), as
    /// [`Engine::broker_stats`](crate::Engine::broker_stats).
    pub fn broker_stats(&self) -> crate::BrokerStats {
        self.engine.broker_stats()
    }

    /// Say that messages called `name` carry a `P`, so stored ones can be read back
    /// after a restart, or claimed from another node (`publish_message` says so
    /// itself, and [`register`](Self::register) for the types its process's catches
    /// take when they are `Deserialize`): needed for any other type. It overrides
    /// what `register` learnt.
    pub fn message_type<P>(&self, name: &str)
    where
        P: DeserializeOwned + Any + Send + Sync,
    {
        let decode: PayloadDecoder = |v| {
            serde_json::from_value::<P>(v)
                .map(|p| Arc::new(p) as Payload)
                .map_err(|e| e.to_string())
        };
        let mut payloads = self
            .inner
            .payloads
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        payloads.insert(name.to_string(), decode);
        self.inner
            .payloads_ignored
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(name);
    }

    /// Learn how to read back the payloads of the messages `process`'s catches and
    /// message starts take, from the macro's graph: the type each `apply` takes, if
    /// it is `Deserialize` (first found wins; `message_type` overrides), else — a
    /// catch without `apply` — any payload, as `()`, unless a typed one is known.
    ///
    /// A catch whose `apply` takes a type that is not `Deserialize`, for a name no
    /// decoder is known for, is [`EngineError::PayloadNotStorable`]: its stored
    /// messages could never be read back.
    pub(super) fn learn_payload_types<D>(
        &self,
        process: &'static Process<D>,
    ) -> Result<(), EngineError> {
        let mut payloads = self
            .inner
            .payloads
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        let mut ignored = self
            .inner
            .payloads_ignored
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        let catches = process
            .nodes()
            .iter()
            .filter_map(|node| match node.kind.trigger() {
                Some(Trigger::Message {
                    name,
                    apply,
                    decode,
                    payload_type,
                    ..
                }) => {
                    if let Some(payload_type) = payload_type() {
                        let types = self.inner.payload_types.lock();
                        let mut types = types.unwrap_or_else(|p| p.into_inner());
                        types.entry(name.to_string()).or_insert(payload_type);
                    }
                    Some((*name, apply.is_some(), decode(), node.id))
                }
                _ => None,
            });
        let catches: Vec<_> = catches.collect();
        if let Some((name, _, _, node)) = catches.iter().find(|(name, typed, decode, _)| {
            *typed && decode.is_none() && !payloads.contains_key(*name)
        }) {
            return Err(EngineError::PayloadNotStorable {
                process: process.name(),
                node,
                message: name,
            });
        }
        let catches: Vec<_> = catches
            .into_iter()
            .map(|(name, typed, decode, _)| (name, typed, decode))
            .collect();
        self.engine
            .inner
            .hub
            .know(catches.iter().map(|(name, ..)| *name));
        for (name, typed, decode) in catches {
            let Some(decode) = decode else {
                continue;
            };
            let known = payloads.contains_key(name);
            if typed && (!known || ignored.remove(name)) {
                payloads.insert(name.to_string(), decode);
            } else if !typed && !known {
                payloads.insert(name.to_string(), decode);
                ignored.insert(name.to_string());
            }
        }
        Ok(())
    }

    /// Publish the stored messages again (after the instances resumed, so their
    /// catches are armed; an asleep instance waiting for one loaded first):
    /// expired ones leave the store.
    pub(super) async fn redeliver(&self, report: &mut ResumeReport) -> Result<(), EngineError> {
        let store = self.inner.store.clone();
        let messages = tokio::task::spawn_blocking(move || store.messages())
            .await
            .map_err(|_| EngineError::NoRuntime)??;
        let now = now_ms();
        self.inner.writer.send(vec![Write::Expire { now_ms: now }]);
        for message in messages.into_iter().filter(|m| m.expires_ms > now) {
            let decode = self
                .inner
                .payloads
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .get(&message.name)
                .copied();
            let payload = decode.and_then(|decode| {
                serde_json::from_str(&message.payload)
                    .ok()
                    .and_then(|v| decode(v).ok())
            });
            let Some(payload) = payload else {
                report.messages_unread += 1;
                continue;
            };
            report.messages += 1;
            // One published while the resume was putting instances to sleep found
            // its waiter not asleep yet (and the store's `to_load` was read
            // before it): loaded now, its catch takes it below. Nothing is read
            // while no instance sleeps waiting for a message.
            self.wake_for_message(&message.name, &message.key).await;
            // What is left of its time-to-live.
            let ttl = std::time::Duration::from_millis((message.expires_ms - now) as u64);
            self.engine.inner.hub.publish_for(
                &message.name,
                &message.key,
                payload,
                Some(message.id),
                ttl,
            );
        }
        Ok(())
    }
}

/// A publish whose store error is [`StoreError::CommitUnknown`] says so, with the
/// message's name and key; any other error is the store's.
pub(super) fn unknown_publish(error: StoreError, name: &str, key: &str) -> EngineError {
    match error {
        StoreError::CommitUnknown { .. } => EngineError::PublishUnknown {
            name: name.to_string(),
            key: key.to_string(),
            reason: error.to_string(),
        },
        error => error.into(),
    }
}
