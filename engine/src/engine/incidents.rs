//! Incidents as the engine shows them: every open one, and retrying one from
//! outside its instance (ARCHITECTURE.md, "Retries and incidents").

use super::{Engine, EngineError};
use crate::retry::{
    erase_change, Incident, IncidentId, OnFailure, RetryChange, RetryError, RetryPolicy,
};

impl Engine {
    /// Every open incident of this engine's instances, in instance order: tokens
    /// held where a task's attempts were spent, an error was permanent or a gateway
    /// had no flow to take (module [`retry`](crate::retry)).
    ///
    /// The same call as [`DurableEngine::incidents`](crate::DurableEngine::incidents);
    /// in memory it does not fail.
    pub async fn incidents(&self) -> Result<Vec<Incident>, EngineError> {
        Ok(self.incidents_now())
    }

    /// The open incidents of instance `id` of `process` (none if it has none, is
    /// not of `process` or is not known): one instance's, without listing every
    /// instance's. The same call as
    /// [`DurableEngine::incidents_of`](crate::DurableEngine::incidents_of).
    pub async fn incidents_of<D>(
        &self,
        process: &'static crate::Process<D>,
        id: crate::InstanceId,
    ) -> Result<Vec<Incident>, EngineError> {
        let mut incidents = self.incidents_now();
        incidents.retain(|i| i.id.instance == id && i.process == process.name());
        Ok(incidents)
    }

    /// [`incidents`](Self::incidents), for the engine's own synchronous callers.
    pub(crate) fn incidents_now(&self) -> Vec<Incident> {
        self.inner.incidents.list()
    }

    /// Retry the incident `id` as the data is: a task runs its handler once more
    /// (failing again, the incident opens again), a gateway chooses its flow again.
    pub async fn retry(&self, id: IncidentId) -> Result<(), RetryError> {
        self.retry_by(id, None).await
    }

    /// Change the instance's data (a `D`, its process's data type), then retry the
    /// incident `id` as [`Engine::retry`] does. The change is committed as a task's
    /// would be, in the instance's history as `Retried`.
    ///
    /// ```
    /// # use thresh::{process, Engine, ProcessData, TaskError};
    /// # #[derive(Clone, Debug, Default, ProcessData)] pub struct Order { pub card: String }
    /// async fn charge(order: &mut Order) -> Result<(), TaskError> {
    ///     match order.card.as_str() {
    ///         "" => Err(TaskError::permanent("no card")),
    ///         _ => Ok(()),
    ///     }
    /// }
    /// process! { pub PAY: Order { start s; task charge = charge; end e; s -> charge -> e; } }
    /// # #[tokio::main(flavor = "current_thread")] async fn main() {
    /// let engine = Engine::new();
    /// let handle = engine.start(&PAY, Order::default()).await.unwrap();
    /// let incident = engine.incidents().await.unwrap()[0].clone();
    /// assert_eq!((incident.node, incident.error.as_str()), ("charge", "no card"));
    /// engine.retry_with(incident.id, |o: &mut Order| o.card = "4242".into()).await.unwrap();
    /// assert_eq!(handle.outcome().await.completed().unwrap().card, "4242");
    /// # }
    /// ```
    pub async fn retry_with<D: 'static>(
        &self,
        id: IncidentId,
        change: impl FnOnce(&mut D) + Send + 'static,
    ) -> Result<(), RetryError> {
        self.retry_by(id, Some(erase_change(change))).await
    }

    /// Put `data` in place of the instance's data, then retry the incident `id`, as
    /// [`Engine::retry_with`] does: the same call as
    /// [`DurableEngine::retry_with_data`](crate::DurableEngine::retry_with_data), for
    /// an operator who fixed the data elsewhere.
    pub async fn retry_with_data<D: Send + 'static>(
        &self,
        id: IncidentId,
        data: D,
    ) -> Result<(), RetryError> {
        self.retry_with(id, move |d: &mut D| *d = data).await
    }

    pub(crate) async fn retry_by(
        &self,
        id: IncidentId,
        change: Option<RetryChange>,
    ) -> Result<(), RetryError> {
        let target = self
            .inner
            .incidents
            .target(id)
            .ok_or(RetryError::NoIncident(id))?;
        Self::post_retry(target.as_ref(), id, change).await
    }

    /// Ask `target`, incident `id`'s loop (or the intake an evicted instance is
    /// loaded by), to retry it, and wait for its answer.
    pub(crate) async fn post_retry(
        target: &dyn crate::retry::RetryTarget,
        id: IncidentId,
        change: Option<RetryChange>,
    ) -> Result<(), RetryError> {
        let (reply, answer) = tokio::sync::oneshot::channel();
        if !target.retry(id.number, change, reply) {
            return Err(RetryError::NoIncident(id));
        }
        answer.await.unwrap_or(Err(RetryError::NoIncident(id)))
    }

    /// Whether incident `id` is open in one of this engine's instances.
    #[cfg(feature = "postgres")]
    pub(crate) fn runs_incident(&self, id: IncidentId) -> bool {
        self.inner.incidents.target(id).is_some()
    }

    /// Whether any incident is open here.
    #[cfg(feature = "postgres")]
    pub(crate) fn has_incidents(&self) -> bool {
        !self.inner.incidents.is_empty()
    }

    /// Set the default retry policy and what follows when attempts are spent, for
    /// failures from now on (a durable engine made with `with_store_config` or
    /// `open_with` takes them from its `EngineConfig`).
    pub fn set_failures(&self, retry: RetryPolicy, on_failure: OnFailure) {
        *self
            .inner
            .failures
            .lock()
            .unwrap_or_else(|p| p.into_inner()) = (retry, on_failure);
    }
}
