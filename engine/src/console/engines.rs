//! What the console asks of an engine: [`ConsoleEngine`], the calls `Engine` and
//! `DurableEngine` both answer with the same shapes (they share no trait of their
//! own), so one router serves either.

use std::future::Future;

use crate::data::{ProcessData, Storable};
use crate::engine::{CancelError, EngineError};
use crate::instance::InstanceId;
use crate::query::{DueTimer, Page, Query};
use crate::retry::{Incident, IncidentId, RetryError};
use crate::tasklist::{Task, TaskId, TaskListError, TaskQuery};
use crate::{BrokerStats, BufferedMessage, DurableEngine, Engine, Process};

/// The data of a process the console shows and changes: process data that reads
/// and writes as JSON. Feature `console`.
pub trait ConsoleData: ProcessData + Storable {}

impl<D: ProcessData + Storable> ConsoleData for D {}

/// An engine the console serves: [`Engine`] (in memory) or [`DurableEngine`] (its
/// store; on PostgreSQL every node's instances). Each call is the engine's own
/// call of that name, so nothing the console does bypasses the engine's rules.
/// Feature `console`.
pub trait ConsoleEngine: Clone + Send + Sync + 'static {
    /// `"in-memory"` or `"durable"`, for the pages.
    fn kind(&self) -> &'static str;
    /// One page of the instances `query` selects.
    fn instances<D: ConsoleData>(
        &self,
        query: &Query<D>,
    ) -> impl Future<Output = Result<Page<D>, EngineError>> + Send;
    /// How many instances `query` selects.
    fn count<D: ConsoleData>(
        &self,
        query: &Query<D>,
    ) -> impl Future<Output = Result<u64, EngineError>> + Send;
    /// The instance drawn on its process (SVG), if it is known.
    fn picture<D: ConsoleData>(
        &self,
        process: &'static Process<D>,
        id: InstanceId,
    ) -> impl Future<Output = Result<Option<String>, EngineError>> + Send;
    /// Start an instance, with a business key if one is given.
    fn start<D: ConsoleData>(
        &self,
        process: &'static Process<D>,
        key: Option<String>,
        data: D,
    ) -> impl Future<Output = Result<InstanceId, EngineError>> + Send;
    /// The open tasks `query` selects.
    fn tasks(
        &self,
        query: &TaskQuery,
    ) -> impl Future<Output = Result<Vec<Task>, TaskListError>> + Send;
    /// The open task `id`.
    fn task(&self, id: TaskId) -> impl Future<Output = Result<Task, TaskListError>> + Send;
    /// `user` claims task `id`.
    fn claim(
        &self,
        id: TaskId,
        user: &str,
    ) -> impl Future<Output = Result<Task, TaskListError>> + Send;
    /// Whoever holds task `id` lets it go.
    fn unclaim(&self, id: TaskId) -> impl Future<Output = Result<Task, TaskListError>> + Send;
    /// Complete task `id` of `process` with `update`.
    fn complete_task<D: ConsoleData>(
        &self,
        process: &'static Process<D>,
        id: TaskId,
        update: impl FnOnce(&mut D) + Send + 'static,
    ) -> impl Future<Output = Result<(), TaskListError>> + Send;
    /// Fail task `id` (its instance fails).
    fn fail_task(
        &self,
        id: TaskId,
        message: String,
    ) -> impl Future<Output = Result<(), TaskListError>> + Send;
    /// Every open incident (on a durable engine: read from every running instance's
    /// checkpoint — the console asks one instance's instead, `incidents_of`).
    fn incidents(&self) -> impl Future<Output = Result<Vec<Incident>, EngineError>> + Send;
    /// The open incidents of instance `id` of `process`.
    fn incidents_of<D: ConsoleData>(
        &self,
        process: &'static Process<D>,
        id: InstanceId,
    ) -> impl Future<Output = Result<Vec<Incident>, EngineError>> + Send;
    /// Retry incident `id` as the data is.
    fn retry(&self, id: IncidentId) -> impl Future<Output = Result<(), RetryError>> + Send;
    /// Retry incident `id` with `data` in place of the instance's.
    fn retry_with_data<D: ConsoleData>(
        &self,
        id: IncidentId,
        data: D,
    ) -> impl Future<Output = Result<(), RetryError>> + Send;
    /// The history of instance `id` of `process`, where the engine keeps one to
    /// read by id: a durable engine's store, when it keeps histories
    /// (`DurableEngine::keep_history`). The in-memory engine has none by id (an
    /// instance's handle holds its history).
    fn history<D: ConsoleData>(
        &self,
        process: &'static Process<D>,
        id: InstanceId,
    ) -> impl Future<Output = Result<Option<crate::History>, EngineError>> + Send {
        let _ = (process, id);
        async { Ok(None) }
    }
    /// Cancel the running instance `id` of `process`, as its handle's cancel does.
    fn cancel_instance<D: ConsoleData>(
        &self,
        process: &'static Process<D>,
        id: InstanceId,
    ) -> impl Future<Output = Result<(), CancelError>> + Send;
    /// The message buffer's figures.
    fn broker_stats(&self) -> BrokerStats;
    /// The messages in the buffer, oldest first, at most `limit`.
    fn buffered_messages(&self, limit: usize) -> Vec<BufferedMessage>;
    /// The running instances' armed timers, earliest due first, at most `limit`.
    fn timers_due(
        &self,
        limit: usize,
    ) -> impl Future<Output = Result<Vec<DueTimer>, EngineError>> + Send;
}

macro_rules! console_engine {
    ($engine:ty, $kind:literal $(, $more:item)*) => {
        impl ConsoleEngine for $engine {
            $($more)*
            fn kind(&self) -> &'static str {
                $kind
            }
            fn instances<D: ConsoleData>(
                &self,
                query: &Query<D>,
            ) -> impl Future<Output = Result<Page<D>, EngineError>> + Send {
                <$engine>::instances(self, query)
            }
            fn count<D: ConsoleData>(
                &self,
                query: &Query<D>,
            ) -> impl Future<Output = Result<u64, EngineError>> + Send {
                <$engine>::count(self, query)
            }
            fn picture<D: ConsoleData>(
                &self,
                process: &'static Process<D>,
                id: InstanceId,
            ) -> impl Future<Output = Result<Option<String>, EngineError>> + Send {
                <$engine>::picture(self, process, id)
            }
            async fn start<D: ConsoleData>(
                &self,
                process: &'static Process<D>,
                key: Option<String>,
                data: D,
            ) -> Result<InstanceId, EngineError> {
                let handle = match key {
                    Some(key) => <$engine>::start_keyed(self, process, key, data).await?,
                    None => <$engine>::start(self, process, data).await?,
                };
                Ok(handle.id())
            }
            fn tasks(
                &self,
                query: &TaskQuery,
            ) -> impl Future<Output = Result<Vec<Task>, TaskListError>> + Send {
                <$engine>::tasks(self, query)
            }
            fn task(&self, id: TaskId) -> impl Future<Output = Result<Task, TaskListError>> + Send {
                <$engine>::task(self, id)
            }
            fn claim(
                &self,
                id: TaskId,
                user: &str,
            ) -> impl Future<Output = Result<Task, TaskListError>> + Send {
                <$engine>::claim(self, id, user)
            }
            fn unclaim(
                &self,
                id: TaskId,
            ) -> impl Future<Output = Result<Task, TaskListError>> + Send {
                <$engine>::unclaim(self, id)
            }
            fn complete_task<D: ConsoleData>(
                &self,
                process: &'static Process<D>,
                id: TaskId,
                update: impl FnOnce(&mut D) + Send + 'static,
            ) -> impl Future<Output = Result<(), TaskListError>> + Send {
                <$engine>::complete_task(self, process, id, update)
            }
            fn fail_task(
                &self,
                id: TaskId,
                message: String,
            ) -> impl Future<Output = Result<(), TaskListError>> + Send {
                <$engine>::fail_task(self, id, message)
            }
            fn incidents(&self) -> impl Future<Output = Result<Vec<Incident>, EngineError>> + Send {
                <$engine>::incidents(self)
            }
            fn incidents_of<D: ConsoleData>(
                &self,
                process: &'static Process<D>,
                id: InstanceId,
            ) -> impl Future<Output = Result<Vec<Incident>, EngineError>> + Send {
                <$engine>::incidents_of(self, process, id)
            }
            fn retry(&self, id: IncidentId) -> impl Future<Output = Result<(), RetryError>> + Send {
                <$engine>::retry(self, id)
            }
            fn retry_with_data<D: ConsoleData>(
                &self,
                id: IncidentId,
                data: D,
            ) -> impl Future<Output = Result<(), RetryError>> + Send {
                <$engine>::retry_with_data(self, id, data)
            }
            fn cancel_instance<D: ConsoleData>(
                &self,
                process: &'static Process<D>,
                id: InstanceId,
            ) -> impl Future<Output = Result<(), CancelError>> + Send {
                <$engine>::cancel_instance(self, process, id)
            }
            fn broker_stats(&self) -> BrokerStats {
                <$engine>::broker_stats(self)
            }
            fn buffered_messages(&self, limit: usize) -> Vec<BufferedMessage> {
                <$engine>::buffered_messages(self, limit)
            }
            fn timers_due(
                &self,
                limit: usize,
            ) -> impl Future<Output = Result<Vec<DueTimer>, EngineError>> + Send {
                <$engine>::timers_due(self, limit)
            }
        }
    };
}

console_engine!(Engine, "in-memory");
console_engine!(
    DurableEngine,
    "durable",
    fn history<D: ConsoleData>(
        &self,
        process: &'static Process<D>,
        id: InstanceId,
    ) -> impl Future<Output = Result<Option<crate::History>, EngineError>> + Send {
        DurableEngine::history(self, process, id)
    }
);
