//! The engine as an instance holds it: what a call activity starts its child in.
//! The instance depends on the [`ChildEngine`] trait, which the engine implements,
//! not on the engine itself.

use std::sync::{Arc, Weak};

use tokio_util::sync::CancellationToken;

use super::call_link::ParentLink;
use super::handle::InstanceHandle;
#[cfg(feature = "durable")]
use super::outcome::InstanceId;
use crate::data::Erased;
use crate::graph::Graph;

/// The engine as a call activity needs it: implemented by the engine
/// (`engine::Inner`), held by its instances through [`EngineRef`] — so the instance
/// depends on this trait, not on the engine.
pub(crate) trait ChildEngine: Send + Sync {
    /// The engine's stop.
    fn stop(&self) -> CancellationToken;
    /// How deep call activities may nest.
    fn max_call_depth(&self) -> u32;
    /// The default retry policy, and what follows when attempts are spent.
    fn failures(&self) -> (crate::retry::RetryPolicy, crate::retry::OnFailure);
    /// The engine's open incidents.
    fn incidents(&self) -> &crate::retry::Board;
    /// The engine's open user tasks.
    fn tasks(&self) -> &crate::tasklist::TaskList;
    /// Start `process` with `data` as a child of `link.parent`. `Ok(None)` when the
    /// engine is stopping (no child: the parent stops too); `Err` why it cannot
    /// start.
    fn start_child(
        self: Arc<Self>,
        process: &'static Graph<Erased>,
        data: Erased,
        link: ParentLink,
    ) -> Result<Option<InstanceHandle<Erased>>, String>;
    /// A durable instance was evicted: keep it until something for it arrives.
    #[cfg(feature = "durable")]
    fn evicted(self: Arc<Self>, dormant: Box<super::durable::evict::Dormant>);
    /// A message a durable instance threw found no waiter: the asleep instances
    /// the store's wake index says wait for it are loaded, and take it from the
    /// buffer as they subscribe again.
    #[cfg(feature = "durable")]
    fn message_buffered(self: Arc<Self>, name: &str, key: &str);
    /// The child `id` of `process` a resumed parent's call recorded.
    #[cfg(feature = "durable")]
    fn resumed_child(
        &self,
        process: &'static Graph<Erased>,
        id: InstanceId,
    ) -> std::pin::Pin<Box<dyn std::future::Future<Output = Resumed<Erased>> + Send>>;
}

/// An engine as its instances hold it (weakly: instances do not keep their engine
/// alive): what a call activity starts its child in.
#[derive(Clone)]
pub(crate) struct EngineRef(Weak<dyn ChildEngine>);

impl EngineRef {
    pub(crate) fn new(engine: Weak<dyn ChildEngine>) -> Self {
        EngineRef(engine)
    }

    /// The engine's stop (a cancelled token once the engine is gone).
    pub(crate) fn stop(&self) -> CancellationToken {
        match self.0.upgrade() {
            Some(engine) => engine.stop(),
            None => {
                let stop = CancellationToken::new();
                stop.cancel();
                stop
            }
        }
    }

    /// How deep call activities may nest in this engine.
    pub(crate) fn max_call_depth(&self) -> u32 {
        self.0.upgrade().map_or(0, |engine| engine.max_call_depth())
    }

    /// The engine's default retry policy and what follows when attempts are spent
    /// (fail-fast once the engine is gone: nobody could retry an incident).
    pub(crate) fn failures(&self) -> (crate::retry::RetryPolicy, crate::retry::OnFailure) {
        self.0.upgrade().map_or(
            (
                crate::retry::RetryPolicy::none(),
                crate::retry::OnFailure::Fail,
            ),
            |engine| engine.failures(),
        )
    }

    /// Tell the engine's board about an incident (`Some`: opened, with the way to
    /// retry it; `None`: closed).
    pub(crate) fn incident(
        &self,
        id: crate::retry::IncidentId,
        opened: Option<(crate::retry::Incident, Arc<dyn crate::retry::RetryTarget>)>,
    ) {
        if let Some(engine) = self.0.upgrade() {
            match opened {
                Some((incident, target)) => engine.incidents().opened(incident, target),
                None => engine.incidents().closed(id),
            }
        }
    }

    /// Tell the engine's task list that a user task opened, with the way to its loop.
    pub(crate) fn task_opened(
        &self,
        task: Arc<crate::tasklist::Task>,
        target: Arc<dyn crate::tasklist::TaskTarget>,
    ) {
        if let Some(engine) = self.0.upgrade() {
            engine.tasks().opened(task, target);
        }
    }

    /// A message this durable instance threw was buffered (no waiter in memory).
    #[cfg(feature = "durable")]
    pub(crate) fn message_buffered(&self, name: &str, key: &str) {
        if let Some(engine) = self.0.upgrade() {
            engine.message_buffered(name, key);
        }
    }

    /// Take an evicted instance's open task off the engine's task list (it stays
    /// open: the store lists it).
    #[cfg(feature = "durable")]
    pub(crate) fn task_forgotten(&self, id: crate::tasklist::TaskId) {
        if let Some(engine) = self.0.upgrade() {
            engine.tasks().forget(id);
        }
    }

    /// Tell the engine's task list that a user task closed.
    pub(crate) fn task_closed(&self, id: crate::tasklist::TaskId) {
        if let Some(engine) = self.0.upgrade() {
            engine.tasks().closed(id);
        }
    }

    /// Start `process` with `data` as a child of `link.parent` ([`ChildEngine`]).
    pub(crate) fn start_child(
        &self,
        process: &'static Graph<Erased>,
        data: Erased,
        link: ParentLink,
    ) -> Result<Option<InstanceHandle<Erased>>, String> {
        let engine = self.0.upgrade().ok_or("the engine is gone")?;
        engine.start_child(process, data, link)
    }

    /// Hand an evicted instance to the engine ([`ChildEngine::evicted`]); dropped
    /// (its handles hear it was lost) if the engine is gone.
    #[cfg(feature = "durable")]
    pub(crate) fn evicted(&self, dormant: Box<super::durable::evict::Dormant>) {
        if let Some(engine) = self.0.upgrade() {
            engine.evicted(dormant);
        }
    }

    /// The child `id` of `process` a resumed parent's call recorded (see
    /// `DurableEngine`'s calls).
    #[cfg(feature = "durable")]
    pub(crate) fn resumed_child(
        &self,
        process: &'static Graph<Erased>,
        id: InstanceId,
    ) -> impl std::future::Future<Output = Resumed<Erased>> + Send + 'static {
        let engine = self.0.upgrade();
        async move {
            match engine {
                Some(engine) => engine.resumed_child(process, id).await,
                None => Resumed::Skipped("the engine is gone".to_string()),
            }
        }
    }
}

/// Where a resumed parent's recorded child is.
#[cfg(feature = "durable")]
pub(crate) enum Resumed<C: 'static> {
    /// Resumed beside it.
    Running(InstanceHandle<C>),
    /// Ended while the engine was down: its final data, or how it ended otherwise.
    Ended(Result<C, String>),
    /// Never stored (the parent's checkpoint came first): start it again.
    NotStored,
    /// Stored but not resumed (not registered, its model changed, unreadable).
    Skipped(String),
}
