//! The public entry point: an [`Engine`] starts instances and shuts them all down.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use std::any::Any;

use crate::data::ProcessData;
use crate::events::{BrokerConfig, BrokerStats, Hub, Published};
use crate::graph::Process;
use crate::instance::{self, Finished, Input, InstanceError, InstanceHandle, InstanceId, Outcome};

/// Runs process instances on tokio. Cheap to clone; clones share the instances.
///
/// ```
/// # use thresh::{process, Engine, ProcessData};
/// # #[derive(Clone, Debug, Default, ProcessData)] pub struct Nothing { pub n: u8 }
/// # process! { pub NOOP: Nothing { start s; end e; s -> e; } }
/// # #[tokio::main(flavor = "current_thread")] async fn main() {
/// let engine = Engine::new();
/// let handle = engine.start(&NOOP, Nothing::default());
/// assert_eq!(handle.outcome().await.kind(), "completed");
/// engine.shutdown(std::time::Duration::from_secs(1)).await.unwrap();
/// # }
/// ```
#[derive(Clone)]
pub struct Engine {
    inner: Arc<Inner>,
}

struct Inner {
    next_instance: AtomicU64,
    /// Signals and messages between instances and the outside world.
    hub: Arc<Hub>,
    /// Cancelled by `shutdown`; every instance loop watches a child of it.
    stop: CancellationToken,
    /// Every instance loop, so `shutdown` can wait for them.
    loops: TaskTracker,
}

/// `Engine::shutdown` ran out of time.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("shutdown deadline passed with {still_running} instance loop(s) still running")]
pub struct ShutdownError {
    /// Instance loops that had not stopped at the deadline.
    pub still_running: usize,
}

impl Default for Engine {
    fn default() -> Self {
        Self::with_broker(BrokerConfig::default())
    }
}

impl Engine {
    /// A new engine with no instances.
    pub fn new() -> Self {
        Self::default()
    }

    /// A new engine whose message buffer (for messages published before their catch
    /// is waiting) has the given bound and time-to-live.
    pub fn with_broker(config: BrokerConfig) -> Self {
        Self {
            inner: Arc::new(Inner {
                next_instance: AtomicU64::new(0),
                hub: Arc::new(Hub::new(config)),
                stop: CancellationToken::new(),
                loops: TaskTracker::new(),
            }),
        }
    }

    /// Publish a message: it goes to the one instance waiting for `name` whose
    /// correlation key is `key`; with none waiting it is buffered (bounded, with a
    /// time-to-live) and delivered when a catch subscribes. The `payload` reaches the
    /// catch's `apply` mapping, which names its type.
    ///
    /// ```
    /// # use thresh::{Engine, Published};
    /// # #[tokio::main(flavor = "current_thread")] async fn main() {
    /// let engine = Engine::new();
    /// assert_eq!(engine.publish_message("payment", "order-7", 250_u64), Published::Buffered);
    /// assert_eq!(engine.broker_stats().buffered, 1);
    /// # }
    /// ```
    pub fn publish_message<P: Any + Send + Sync>(
        &self,
        name: &str,
        key: impl AsRef<str>,
        payload: P,
    ) -> Published {
        self.inner
            .hub
            .publish(name, key.as_ref(), Arc::new(payload))
    }

    /// Broadcast a signal to every waiting catcher, in every instance; returns how
    /// many it reached. With no catcher it does nothing.
    pub fn broadcast_signal<P: Any + Send + Sync>(&self, name: &str, payload: P) -> usize {
        self.inner.hub.broadcast(name, Arc::new(payload))
    }

    /// The message broker's counters: delivered, buffered, dropped, expired.
    pub fn broker_stats(&self) -> BrokerStats {
        self.inner.hub.stats()
    }

    /// Start an instance of `process` with `data` on the current tokio runtime.
    ///
    /// Called outside a runtime, it returns a handle whose outcome is
    /// [`InstanceError::NoRuntime`] rather than panicking.
    pub fn start<D: ProcessData>(
        &self,
        process: &'static Process<D>,
        data: D,
    ) -> InstanceHandle<D> {
        let id = InstanceId(self.inner.next_instance.fetch_add(1, Ordering::Relaxed));
        match tokio::runtime::Handle::try_current() {
            Ok(runtime) => instance::spawn(
                &runtime,
                &self.inner.loops,
                self.inner.hub.clone(),
                process,
                id,
                data,
                self.inner.stop.child_token(),
            ),
            Err(_) => failed_at_birth(id, data, InstanceError::NoRuntime),
        }
    }

    /// Cancel every instance (their outcome becomes [`Outcome::Cancelled`]) and wait,
    /// at most `deadline`, for every instance loop and track to stop. Instances started
    /// after this call are cancelled at once.
    pub async fn shutdown(&self, deadline: Duration) -> Result<(), ShutdownError> {
        self.inner.stop.cancel();
        self.inner.loops.close();
        match tokio::time::timeout(deadline, self.inner.loops.wait()).await {
            Ok(()) => Ok(()),
            Err(_) => Err(ShutdownError {
                still_running: self.inner.loops.len(),
            }),
        }
    }

    /// How many instance loops are running.
    pub fn running_instances(&self) -> usize {
        self.inner.loops.len()
    }
}

/// A handle on an instance that could not start.
fn failed_at_birth<D: ProcessData>(
    id: InstanceId,
    data: D,
    error: InstanceError,
) -> InstanceHandle<D> {
    let (commands, _) = tokio::sync::mpsc::unbounded_channel::<Input<D>>();
    let finished = Finished {
        outcome: Outcome::Failed(error),
        history: Default::default(),
        data,
    };
    let (_, finished_rx) = tokio::sync::watch::channel(Some(Arc::new(finished)));
    InstanceHandle::new(id, commands, finished_rx)
}
