//! The task list as the in-memory engine shows it: the open user tasks of its
//! instances, claimed and completed by id (module [`tasklist`](crate::tasklist)).

use super::Engine;
use crate::instance::TaskAct;
use crate::instance::WorkError;
use crate::tasklist::{Task, TaskId, TaskListError, TaskQuery, TaskWork};
use crate::Process;

impl Engine {
    /// The open user tasks `query` selects, in its order and page.
    ///
    /// ```
    /// # use thresh::{process, Engine, ProcessData, TaskQuery};
    /// # #[derive(Clone, Debug, Default, ProcessData)] pub struct Expense { pub amount: u32, pub approved: bool }
    /// process! {
    ///     pub EXPENSE: Expense {
    ///         start s;
    ///         user approve: groups("finance") | due(2d) | priority(|e| if e.amount > 1000 { 80 } else { 50 });
    ///         end e;
    ///         s -> approve -> e;
    ///     }
    /// }
    /// # #[tokio::main(flavor = "current_thread")] async fn main() {
    /// let engine = Engine::new();
    /// let handle = engine.start(&EXPENSE, Expense { amount: 2000, ..Default::default() }).await.unwrap();
    /// let tasks = engine.tasks(&TaskQuery::new().candidate_groups(["finance"])).await.unwrap();
    /// assert_eq!((tasks[0].element.as_str(), tasks[0].priority), ("approve", 80));
    /// engine.claim(tasks[0].id, "ann").await.unwrap();
    /// engine.complete_task(&EXPENSE, tasks[0].id, |e| e.approved = true).await.unwrap();
    /// assert!(handle.outcome().await.completed().unwrap().approved);
    /// # }
    /// ```
    pub async fn tasks(&self, query: &TaskQuery) -> Result<Vec<Task>, TaskListError> {
        Ok(self.inner.tasks.list(query))
    }

    /// The open task `id`.
    pub async fn task(&self, id: TaskId) -> Result<Task, TaskListError> {
        self.inner
            .tasks
            .get(id)
            .map(|(task, _)| task)
            .ok_or(TaskListError::NoTask(id))
    }

    /// `user` claims the open task `id`: [`TaskListError::ClaimedByOther`] while another
    /// user holds it; claiming it again is no error. The task as it is now.
    pub async fn claim(&self, id: TaskId, user: &str) -> Result<Task, TaskListError> {
        self.inner.tasks.claim(id, Some(user))
    }

    /// Whoever holds the open task `id` lets it go.
    pub async fn unclaim(&self, id: TaskId) -> Result<Task, TaskListError> {
        self.inner.tasks.claim(id, None)
    }

    /// Complete the open task `id`, a user task of `process`: `update` changes the
    /// data as [`InstanceHandle::complete`](crate::InstanceHandle::complete)'s does,
    /// and the token goes on.
    pub async fn complete_task<D: 'static>(
        &self,
        process: &Process<D>,
        id: TaskId,
        update: impl FnOnce(&mut D) + Send + 'static,
    ) -> Result<(), TaskListError> {
        let task = self.task(id).await?;
        check_process(&task, process)?;
        let change = crate::retry::erase_change(update);
        self.act_on_task(id, TaskAct::Complete(change)).await
    }

    /// Fail the open task `id`: its instance fails with
    /// [`InstanceError::TaskFailed`](crate::InstanceError::TaskFailed) naming it.
    pub async fn fail_task(
        &self,
        id: TaskId,
        message: impl Into<String>,
    ) -> Result<(), TaskListError> {
        self.act_on_task(id, TaskAct::Fail(message.into())).await
    }

    /// Raise the BPMN error `code` from the open task `id`, as
    /// [`InstanceHandle::raise_error`](crate::InstanceHandle::raise_error) does: the
    /// task ends, its error boundary (or a scope around it) catches the error.
    pub async fn raise_task_error(
        &self,
        id: TaskId,
        code: impl Into<String>,
        message: impl Into<String>,
    ) -> Result<(), TaskListError> {
        let raised = crate::instance::Raised::Error {
            code: code.into(),
            message: message.into(),
        };
        self.act_on_task(id, TaskAct::Raise(raised)).await
    }

    /// Raise the escalation `code` from the open task `id`; the task stays open.
    pub async fn raise_task_escalation(
        &self,
        id: TaskId,
        code: impl Into<String>,
    ) -> Result<(), TaskListError> {
        let raised = crate::instance::Raised::Escalation { code: code.into() };
        self.act_on_task(id, TaskAct::Raise(raised)).await
    }

    /// Where to post an action on the open task `id`, if one of this engine's
    /// loops holds it.
    #[cfg(feature = "durable")]
    pub(crate) fn task_target(
        &self,
        id: TaskId,
    ) -> Option<std::sync::Arc<dyn crate::tasklist::TaskTarget>> {
        self.inner.tasks.get(id).map(|(_, target)| target)
    }

    /// Whether the open task `id` is one of this engine's instances'.
    #[cfg(feature = "durable")]
    pub(crate) fn runs_task(&self, id: TaskId) -> bool {
        self.inner.tasks.get(id).is_some()
    }

    /// The process of the open task `id`, if it is one of this engine's.
    #[cfg(feature = "postgres")]
    pub(crate) fn task_process(&self, id: TaskId) -> Option<String> {
        self.inner.tasks.get(id).map(|(task, _)| task.process)
    }

    /// Whether any task is open here.
    #[cfg(feature = "postgres")]
    pub(crate) fn has_tasks(&self) -> bool {
        !self.inner.tasks.is_empty()
    }

    /// Post `what` to the loop of the open task `id` and wait for its answer.
    pub(crate) async fn act_on_task(&self, id: TaskId, what: TaskAct) -> Result<(), TaskListError> {
        let (_, target) = self.inner.tasks.get(id).ok_or(TaskListError::NoTask(id))?;
        Self::post_task(target.as_ref(), id, what).await
    }

    /// Post `what` for task `id` to `target`, its instance's loop (or the intake an
    /// evicted one is loaded by), and wait for its answer.
    pub(crate) async fn post_task(
        target: &dyn crate::tasklist::TaskTarget,
        id: TaskId,
        what: TaskAct,
    ) -> Result<(), TaskListError> {
        let (reply, answer) = tokio::sync::oneshot::channel();
        let work = TaskWork {
            number: id.number,
            what,
            reply,
        };
        if !target.post(work) {
            return Err(TaskListError::NoTask(id));
        }
        match answer.await {
            Ok(Ok(())) => Ok(()),
            Ok(Err(WorkError::NoOpenWork { .. })) | Ok(Err(WorkError::InstanceEnded)) | Err(_) => {
                Err(TaskListError::NoTask(id))
            }
            Ok(Err(error)) => Err(TaskListError::Work(id, error)),
        }
    }
}

/// A typed completion is for its task's process.
pub(crate) fn check_process<D>(task: &Task, process: &Process<D>) -> Result<(), TaskListError> {
    match task.process == process.name() {
        true => Ok(()),
        false => Err(TaskListError::OtherProcess {
            id: task.id,
            task: task.process.clone(),
            given: process.name(),
        }),
    }
}
