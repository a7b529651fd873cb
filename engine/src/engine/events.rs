//! What the in-memory engine's users say to its event hub: messages published
//! (buffered until a catch takes them), signals broadcast, and the broker's buffer
//! and counters read.

use std::any::Any;
use std::sync::Arc;

use super::{Engine, EngineError};
use crate::events::{BrokerStats, Published};

impl Engine {
    /// Publish a message: it goes to the one instance waiting for `name` whose
    /// correlation key is `key`; with none waiting it is buffered (bounded, with a
    /// time-to-live) and delivered when a catch subscribes. The `payload` reaches the
    /// catch's `apply` mapping, which names its type.
    ///
    /// ```
    /// # use thresh::{Engine, Published};
    /// # #[tokio::main(flavor = "current_thread")] async fn main() {
    /// let engine = Engine::new();
    /// let published = engine.publish_message("payment", "order-7", 250_u64).await;
    /// assert_eq!(published.unwrap(), Published::Buffered);
    /// assert_eq!(engine.broker_stats().buffered, 1);
    /// # }
    /// ```
    ///
    /// A `payload` of another type than the catches of `name` map is refused
    /// ([`EngineError::WrongPayload`]), once a catch of that name has waited here
    /// (a durable engine knows them from `register`); the typed form,
    /// [`publish`](Self::publish), makes it a compile error. The same call as
    /// [`DurableEngine::publish_message`](crate::DurableEngine::publish_message).
    pub async fn publish_message<P: Any + Send + Sync>(
        &self,
        name: &str,
        key: impl AsRef<str>,
        payload: P,
    ) -> Result<Published, EngineError> {
        let payload = self.fitting::<P>(name, Arc::new(payload))?;
        Ok(self.inner.hub.publish(name, key.as_ref(), payload))
    }

    /// `payload`, if it is of the type the catches of `name` take: a catch's
    /// `apply` names its payload type, and a catch that waited on the name here
    /// taught it to the broker. Before any did, any type is taken (and a buffered
    /// message of another type is dropped when such a catch comes:
    /// [`BrokerStats::mistyped`]).
    fn fitting<P: Any + Send + Sync>(
        &self,
        name: &str,
        payload: crate::graph::Payload,
    ) -> Result<crate::graph::Payload, EngineError> {
        match self.inner.hub.payload_fits(name, &payload) {
            Ok(()) => Ok(payload),
            Err(expected) => Err(EngineError::WrongPayload {
                message: name.to_string(),
                expected: expected.name,
                given: std::any::type_name::<P>(),
            }),
        }
    }

    /// [`publish_message`](Self::publish_message), but a message no catch takes at
    /// once waits in the buffer `ttl` at most, rather than the broker's
    /// time-to-live ([`BrokerConfig::ttl`](crate::BrokerConfig::ttl)).
    ///
    /// ```
    /// # use std::time::Duration;
    /// # use thresh::{Engine, Published};
    /// # #[tokio::main(flavor = "current_thread")] async fn main() {
    /// let engine = Engine::new();
    /// let ttl = Duration::from_secs(24 * 3600);
    /// let published = engine.publish_message_ttl("receipt", "expense-7", (), ttl).await;
    /// assert_eq!(published.unwrap(), Published::Buffered);
    /// # }
    /// ```
    pub async fn publish_message_ttl<P: Any + Send + Sync>(
        &self,
        name: &str,
        key: impl AsRef<str>,
        payload: P,
        ttl: std::time::Duration,
    ) -> Result<Published, EngineError> {
        let payload = self.fitting::<P>(name, Arc::new(payload))?;
        Ok(self
            .inner
            .hub
            .publish_for(name, key.as_ref(), payload, None, ttl))
    }

    /// Broadcast a signal to every waiting catcher, in every instance; returns how
    /// many it reached. With no catcher it does nothing. The same call as
    /// [`DurableEngine::broadcast_signal`](crate::DurableEngine::broadcast_signal);
    /// in memory it does not fail.
    pub async fn broadcast_signal<P: Any + Send + Sync>(
        &self,
        name: &str,
        payload: P,
    ) -> Result<usize, EngineError> {
        Ok(self.inner.hub.broadcast(name, Arc::new(payload)))
    }

    /// The messages waiting in the buffer for a catch (published before one
    /// waited), oldest first, at most `limit`, with how long each is kept still.
    /// The same call as
    /// [`DurableEngine::buffered_messages`](crate::DurableEngine::buffered_messages).
    pub fn buffered_messages(&self, limit: usize) -> Vec<crate::events::BufferedMessage> {
        self.inner.hub.buffered_messages(limit)
    }

    /// The message broker's counters: delivered, buffered, dropped, expired.
    pub fn broker_stats(&self) -> BrokerStats {
        self.inner.hub.stats()
    }
}
