//! The durable engine's typed forms, as the in-memory engine's (`engine/typed.rs`).

use crate::data::Storable;
use std::any::Any;

use super::{DurableEngine, EngineError};
use crate::events::Published;
use crate::refs::{MessageRef, SignalRef};

impl DurableEngine {
    /// Publish `message` durably ([`publish_message`](Self::publish_message)) by its
    /// typed reference (`ORDER::message.receipt`): a payload of another type than
    /// the catch's `apply` takes is a compile error.
    ///
    /// Needs the `durable` feature.
    pub async fn publish<P>(
        &self,
        message: impl MessageRef<P>,
        key: impl AsRef<str>,
        payload: P,
    ) -> Result<Published, EngineError>
    where
        P: Storable + Any + Send + Sync,
    {
        self.publish_message(message.message(), key, payload).await
    }

    /// Broadcast `signal` ([`broadcast_signal`](Self::broadcast_signal)) by its
    /// typed reference (`ORDER::signal.recall`), with the payload type its catches
    /// take.
    ///
    /// Needs the `durable` feature.
    pub async fn broadcast<P: Any + Send + Sync>(
        &self,
        signal: impl SignalRef<P>,
        payload: P,
    ) -> Result<usize, EngineError> {
        self.broadcast_signal(signal.signal(), payload).await
    }
}
