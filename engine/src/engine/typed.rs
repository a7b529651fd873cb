//! The engine's typed forms: publishing a message and broadcasting a signal by the
//! references `process!` emits (module [`refs`](crate::refs)), whose payload type the
//! compiler checks against the catch's `apply`.

use std::any::Any;

use super::{Engine, EngineError};
use crate::events::Published;
use crate::refs::{MessageRef, SignalRef};

impl Engine {
    /// Publish `message` ([`publish_message`](Self::publish_message)) by its typed
    /// reference: `ORDER::message.receipt` is a `Message<Receipt>` when the catch's
    /// `apply` takes a `Receipt`, so any other payload type is a compile error.
    ///
    /// ```
    /// # use thresh::{process, Engine, ProcessData, Published};
    /// # #[derive(Clone, Debug, Default, ProcessData)] pub struct Order { pub id: String, pub paid: u64 }
    /// pub struct Receipt { pub amount: u64 }
    /// process! {
    ///     pub ORDER: Order {
    ///         start s;
    ///         catch paid: message("receipt", key = |o| o.id.clone(), apply = |o, r: &Receipt| o.paid = r.amount);
    ///         end e;
    ///         s -> paid -> e;
    ///     }
    /// }
    /// # #[tokio::main(flavor = "current_thread")] async fn main() {
    /// let engine = Engine::new();
    /// let handle = engine.start(&ORDER, Order { id: "o-1".into(), ..Order::default() }).await.unwrap();
    /// engine.publish(ORDER::message.receipt, "o-1", Receipt { amount: 250 }).await.unwrap();
    /// assert_eq!(handle.outcome().await.completed().unwrap().paid, 250);
    /// # }
    /// ```
    pub async fn publish<P: Any + Send + Sync>(
        &self,
        message: impl MessageRef<P>,
        key: impl AsRef<str>,
        payload: P,
    ) -> Result<Published, EngineError> {
        self.publish_message(message.message(), key, payload).await
    }

    /// Broadcast `signal` ([`broadcast_signal`](Self::broadcast_signal)) by its typed
    /// reference (`ORDER::signal.recall`), with the payload type its catches take.
    pub async fn broadcast<P: Any + Send + Sync>(
        &self,
        signal: impl SignalRef<P>,
        payload: P,
    ) -> Result<usize, EngineError> {
        self.broadcast_signal(signal.signal(), payload).await
    }
}
