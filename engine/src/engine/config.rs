//! How an [`Engine`](crate::Engine) is set up: [`EngineConfig`].

use crate::events::BrokerConfig;
use crate::retry::{OnFailure, RetryPolicy};

/// How an [`Engine`](crate::Engine) is set up.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct EngineConfig {
    /// The message buffer's bound and time-to-live.
    pub broker: BrokerConfig,
    /// Whether instances record their history (on by default). Off,
    /// [`InstanceHandle::history`](crate::InstanceHandle::history) is empty — long-running instances that loop do not
    /// grow it, and every step is a little cheaper — while outcomes and data are the
    /// same.
    pub history: bool,
    /// How deep call activities may nest (64 by default): an instance started by
    /// [`Engine::start`](crate::Engine::start) runs at depth 0, a call activity's child one deeper than its
    /// parent. A call that would pass the limit — a process calling itself, directly
    /// or through others, without end — fails its parent with
    /// [`InstanceError::CallDepthExceeded`](crate::InstanceError::CallDepthExceeded).
    pub max_call_depth: u32,
    /// How a failing task is tried again, unless its own `retry(..)` in `process!`
    /// says otherwise ([`RetryPolicy::default`]: three attempts, 1 s and 2 s apart).
    pub retry: RetryPolicy,
    /// What happens when a task's attempts are spent, its error is permanent or a
    /// gateway has no flow to take: an incident (the default) or the instance fails.
    pub on_failure: OnFailure,
    /// How many ended instances' summaries the engine keeps for
    /// [`Engine::instances`](crate::Engine::instances) (0 by default: an in-memory
    /// engine forgets an instance when it ends, and a query lists only running
    /// ones). The last `keep_ended` to end are kept, oldest dropped first; with it
    /// set, every ending instance pays a clone of its data. A durable engine's
    /// queries read its store, which keeps ended instances until purged.
    pub keep_ended: usize,
}

impl Default for EngineConfig {
    fn default() -> Self {
        Self {
            broker: BrokerConfig::default(),
            history: true,
            max_call_depth: 64,
            retry: RetryPolicy::default(),
            on_failure: OnFailure::Incident,
            keep_ended: 0,
        }
    }
}

impl EngineConfig {
    /// Fail-fast: a failing task is not retried, and its failure (or a gateway with
    /// no flow to take) fails its instance — no incident opens.
    ///
    /// ```
    /// # use thresh::{Engine, EngineConfig};
    /// let engine = Engine::with_config(EngineConfig::fail_fast());
    /// ```
    pub fn fail_fast() -> Self {
        Self {
            retry: RetryPolicy::none(),
            on_failure: OnFailure::Fail,
            ..Self::default()
        }
    }
}
