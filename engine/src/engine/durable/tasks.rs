//! A durable engine's task list: listed and claimed in the store (on a node of
//! several, every node's tasks), completed where the task's instance runs
//! (module [`tasklist`](crate::tasklist)).

use std::sync::Arc;

use super::DurableEngine;
use crate::engine::tasks::check_process;
use crate::instance::{Raised, TaskAct};
use crate::store::{Store, StoreError};
use crate::tasklist::{Task, TaskId, TaskListError, TaskQuery};
use crate::Process;

impl DurableEngine {
    /// The open user tasks `query` selects, in its order and page, from the store:
    /// on a node of several, every node's.
    pub async fn tasks(&self, query: &TaskQuery) -> Result<Vec<Task>, TaskListError> {
        let query = query.clone();
        let rows = self.blocking(move |store| store.tasks(&query)).await?;
        Ok(rows.into_iter().map(Task::from).collect())
    }

    /// The open task `id`, from the store.
    pub async fn task(&self, id: TaskId) -> Result<Task, TaskListError> {
        let query = TaskQuery::new().instance(id.instance);
        let rows = self.blocking(move |store| store.tasks(&query)).await?;
        rows.into_iter()
            .find(|t| t.number == id.number)
            .map(Task::from)
            .ok_or(TaskListError::NoTask(id))
    }

    /// `user` claims the open task `id` (a store write):
    /// [`TaskListError::ClaimedByOther`] while another user holds it; claiming it
    /// again is no error. The task as it is now.
    pub async fn claim(&self, id: TaskId, user: &str) -> Result<Task, TaskListError> {
        self.claim_as(id, Some(user.to_string())).await
    }

    /// Whoever holds the open task `id` lets it go (a store write).
    pub async fn unclaim(&self, id: TaskId) -> Result<Task, TaskListError> {
        self.claim_as(id, None).await
    }

    async fn claim_as(&self, id: TaskId, user: Option<String>) -> Result<Task, TaskListError> {
        let who = user.clone();
        let row = self
            .blocking(move |store| store.claim_task(id.instance.0, id.number, who.as_deref()))
            .await?
            .ok_or(TaskListError::NoTask(id))?;
        match (&row.claimed_by, &user) {
            (Some(by), Some(user)) if by != user => {
                Err(TaskListError::ClaimedByOther { id, by: by.clone() })
            }
            _ => Ok(Task::from(row)),
        }
    }

    /// Complete the open task `id`, a user task of `process`, as
    /// [`Engine::complete_task`](crate::Engine::complete_task) does; `Ok` once the
    /// checkpoint recording the completion is stored.
    pub async fn complete_task<D: 'static>(
        &self,
        process: &Process<D>,
        id: TaskId,
        update: impl FnOnce(&mut D) + Send + 'static,
    ) -> Result<(), TaskListError> {
        let task = self.task(id).await?;
        check_process(&task, process)?;
        let change = crate::retry::erase_change(update);
        self.act_on(id, TaskAct::Complete(change)).await
    }

    /// Fail the open task `id`: its instance fails (and is stored failed).
    pub async fn fail_task(
        &self,
        id: TaskId,
        message: impl Into<String>,
    ) -> Result<(), TaskListError> {
        self.act_on(id, TaskAct::Fail(message.into())).await
    }

    /// Raise the BPMN error `code` from the open task `id`, as
    /// [`Engine::raise_task_error`](crate::Engine::raise_task_error).
    pub async fn raise_task_error(
        &self,
        id: TaskId,
        code: impl Into<String>,
        message: impl Into<String>,
    ) -> Result<(), TaskListError> {
        let raised = Raised::Error {
            code: code.into(),
            message: message.into(),
        };
        self.act_on(id, TaskAct::Raise(raised)).await
    }

    /// Raise the escalation `code` from the open task `id`; the task stays open.
    pub async fn raise_task_escalation(
        &self,
        id: TaskId,
        code: impl Into<String>,
    ) -> Result<(), TaskListError> {
        let raised = Raised::Escalation { code: code.into() };
        self.act_on(id, TaskAct::Raise(raised)).await
    }

    /// Act on the open task `id` where its instance runs.
    async fn act_on(&self, id: TaskId, act: TaskAct) -> Result<(), TaskListError> {
        if self.engine.runs_task(id) {
            return self.engine.act_on_task(id, act).await;
        }
        // Open in the store, run by no loop here.
        self.task(id).await?;
        Err(TaskListError::NotRunning(id))
    }

    /// Run `read` on the store off the runtime's workers.
    async fn blocking<T: Send + 'static>(
        &self,
        read: impl FnOnce(&dyn Store) -> Result<T, StoreError> + Send + 'static,
    ) -> Result<T, TaskListError> {
        let store: Arc<dyn Store> = self.inner.store.clone();
        tokio::task::spawn_blocking(move || read(store.as_ref()))
            .await
            .map_err(|e| TaskListError::Store(e.to_string()))?
            .map_err(|e| TaskListError::Store(e.to_string()))
    }
}
