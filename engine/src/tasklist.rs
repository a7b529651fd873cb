//! The task list: every open user task of an engine's instances, as a record a
//! service lists, claims and completes by id (README, "Task list"; ARCHITECTURE.md,
//! "The task list"). No cargo feature: the in-memory engine keeps the list in
//! memory ([`Engine::tasks`](crate::Engine::tasks)), a durable one in its store.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::{Arc, Mutex};
use std::time::SystemTime;

use crate::instance::{InstanceId, WorkError};

mod query;

pub use query::{TaskOrder, TaskQuery};

/// Names an open user task: its instance, and its number there (from 1, never
/// reused in the instance, kept across restarts of a durable one).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct TaskId {
    /// The instance whose token waits at the user task.
    pub instance: InstanceId,
    /// The task's number in its instance.
    pub number: u32,
}

impl fmt::Display for TaskId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}-task{}", self.instance, self.number)
    }
}

/// An open user task, as the task list shows it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Task {
    /// The task.
    pub id: TaskId,
    /// The process's name.
    pub process: String,
    /// The user task's element id (`user approve;` → `"approve"`).
    pub element: String,
    /// Its name (`user approve: "Approve the expense";`); empty when it has none.
    pub name: String,
    /// Which instance of a multi-instance or looped user task it is
    /// ([`OpenWork::iteration`](crate::OpenWork::iteration)).
    pub iteration: Option<u32>,
    /// Who works it (`assignee(..)`), as evaluated when it opened.
    pub assignee: Option<String>,
    /// The groups whose members may claim it (`groups(..)`).
    pub groups: Vec<String>,
    /// When it is due (`due(..)`: that long after it opened, or the data's date).
    pub due: Option<SystemTime>,
    /// Its priority (`priority(..)`), higher first; [`Task::DEFAULT_PRIORITY`]
    /// when the model gives none.
    pub priority: i32,
    /// The user who claimed it ([`Engine::claim`](crate::Engine::claim)).
    pub claimed_by: Option<String>,
    /// When it opened.
    pub created: SystemTime,
    /// Its instance's business key (`start_keyed`), if it has one.
    pub business_key: Option<String>,
    /// Its instance's correlation key (set by a keyed message start), if it has one.
    pub key: Option<String>,
}

impl Task {
    /// The priority of a user task whose model gives none.
    pub const DEFAULT_PRIORITY: i32 = 50;
}

/// Why a task could not be claimed, completed, failed or raised from.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum TaskListError {
    /// No open task has that id: it was completed or withdrawn (its instance
    /// ended or was cancelled, a boundary event interrupted it), or never opened.
    #[error("no open task {0}: it was completed or withdrawn (its instance ended, or a boundary event interrupted it), or never opened")]
    NoTask(TaskId),
    /// Another user holds the task: unclaim it first, or leave it to them.
    #[error("task {id} is claimed by `{by}`: it can be claimed again only once they unclaim it")]
    ClaimedByOther {
        /// The task.
        id: TaskId,
        /// Who holds it.
        by: String,
    },
    /// The completion's process is not the task's: a typed change of another
    /// process's data.
    #[error(
        "task {id} is of process `{task}`, not of `{given}` whose data the completion changes"
    )]
    OtherProcess {
        /// The task.
        id: TaskId,
        /// The task's process.
        task: String,
        /// The process the completion was written for.
        given: &'static str,
    },
    /// The instance could not take the completion (a boundary event came first,
    /// it ended, its store failed).
    #[error("task {0}: {1}")]
    Work(TaskId, WorkError),
    /// The task is open in the store, but its instance runs on no loop of this
    /// engine (not resumed: its process is not registered, or `resume` has not run).
    #[error("task {0} is open in the store, but its instance does not run here: register its process and resume")]
    NotRunning(TaskId),
    /// The store could not be read or written.
    #[error("the task list's store failed: {0}")]
    Store(String),
    /// A node of several: the task's instance runs on another node, and the
    /// request handed to it there could not be made or was not answered.
    #[error("task {0} is of an instance another node runs, which did not take the request: {1}")]
    Elsewhere(TaskId, String),
}

/// Who a user task's `assignee(..)` names: a `String` or `&str` (a user), or an
/// `Option` of one (`None`: nobody yet).
#[diagnostic::on_unimplemented(
    message = "an assignee is a user's name — a `String`, a `&str` or an `Option` of one — not `{Self}`",
    label = "this gives a `{Self}`",
    note = "convert it in the closure, e.g. `assignee(|e| e.manager.to_string())`"
)]
pub trait IntoAssignee {
    /// The user, if any.
    fn into_assignee(self) -> Option<String>;
}

impl IntoAssignee for String {
    fn into_assignee(self) -> Option<String> {
        Some(self)
    }
}

impl IntoAssignee for &str {
    fn into_assignee(self) -> Option<String> {
        Some(self.to_string())
    }
}

impl IntoAssignee for &String {
    fn into_assignee(self) -> Option<String> {
        Some(self.clone())
    }
}

impl<T: IntoAssignee> IntoAssignee for Option<T> {
    fn into_assignee(self) -> Option<String> {
        self.and_then(IntoAssignee::into_assignee)
    }
}

/// A user task's assignment as its model's fn gives it (`Node::assign`), when the
/// task opens.
#[doc(hidden)]
pub struct Assigned {
    pub assignee: Option<String>,
    pub groups: Vec<String>,
    pub due: Option<crate::TimerSpec>,
    pub priority: i32,
}

impl Assigned {
    /// A user task with no assignment in its model.
    pub(crate) fn none() -> Self {
        Assigned {
            assignee: None,
            groups: Vec::new(),
            due: None,
            priority: Task::DEFAULT_PRIORITY,
        }
    }

    /// When a task opened at `now` is due.
    pub(crate) fn due_at(&self, now: SystemTime) -> Option<SystemTime> {
        match self.due? {
            crate::TimerSpec::After(after) => now.checked_add(after),
            crate::TimerSpec::At(at) => Some(at),
            crate::TimerSpec::Every { every, .. } => now.checked_add(every),
        }
    }
}

/// What reaches an open task's instance loop: its intake.
pub(crate) trait TaskTarget: Send + Sync {
    /// Post `command` (built for this loop's data type) to the loop; `false` if the
    /// loop is gone.
    fn post(&self, work: TaskWork) -> bool;

    /// Whether the loop is gone (an instance that ended without closing its tasks:
    /// a panic in the loop); its tasks are dropped.
    fn gone(&self) -> bool;
}

/// What is asked of an open task's loop.
pub(crate) struct TaskWork {
    pub number: u32,
    pub what: crate::instance::TaskAct,
    pub reply: tokio::sync::oneshot::Sender<Result<(), WorkError>>,
}

/// The engine's open tasks, each with the way to its loop: written by the loops as
/// user tasks open and close (user tasks open rarely: a short lock, never held while
/// posting to a loop), and by claims.
#[derive(Default)]
pub(crate) struct TaskList {
    open: Mutex<Open>,
}

/// Each task shares its record with its loop (`Arc`); a claim copies it on write.
type Open = BTreeMap<TaskId, (Arc<Task>, Arc<dyn TaskTarget>)>;

impl TaskList {
    fn open(&self) -> std::sync::MutexGuard<'_, Open> {
        self.open.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub(crate) fn opened(&self, task: Arc<Task>, target: Arc<dyn TaskTarget>) {
        self.open().insert(task.id, (task, target));
    }

    pub(crate) fn closed(&self, id: TaskId) {
        let closed = self.open().remove(&id);
        #[cfg(feature = "metrics")]
        if let Some((task, _)) = &closed {
            crate::metrics::user_task_closed(&task.process, &task.element, task.created);
        }
        // The records drop outside the lock.
        drop(closed);
    }

    /// Take task `id` off the list without closing it: its instance was evicted
    /// (feature `durable`; the store lists it, and it is listed again when its
    /// instance is loaded).
    #[cfg(feature = "durable")]
    pub(crate) fn forget(&self, id: TaskId) {
        let forgotten = self.open().remove(&id);
        // The records drop outside the lock.
        drop(forgotten);
    }

    /// Whether no task is open.
    #[cfg(feature = "postgres")]
    pub(crate) fn is_empty(&self) -> bool {
        self.open().is_empty()
    }

    /// The open tasks `query` selects, in its order and page.
    pub(crate) fn list(&self, query: &TaskQuery) -> Vec<Task> {
        let mut open = self.open();
        open.retain(|_, (_, target)| !target.gone());
        query.select(open.values().map(|(t, _)| &**t))
    }

    /// The open task `id`.
    pub(crate) fn get(&self, id: TaskId) -> Option<(Task, Arc<dyn TaskTarget>)> {
        let mut open = self.open();
        if open.get(&id).is_some_and(|(_, t)| t.gone()) {
            open.remove(&id);
        }
        open.get(&id)
            .map(|(task, t)| (Task::clone(task), Arc::clone(t)))
    }

    /// `user` claims task `id` (`None`: unclaims it); the task as it is now.
    pub(crate) fn claim(&self, id: TaskId, user: Option<&str>) -> Result<Task, TaskListError> {
        let mut open = self.open();
        let (task, _) = open.get_mut(&id).ok_or(TaskListError::NoTask(id))?;
        claim_rule(task, user)?;
        let task = Arc::make_mut(task);
        task.claimed_by = user.map(str::to_string);
        Ok(task.clone())
    }
}

/// Whether `user` may claim `task` (`None`: unclaim, always allowed): not while
/// another user holds it. One rule for the memory and the stores.
pub(crate) fn claim_rule(task: &Task, user: Option<&str>) -> Result<(), TaskListError> {
    match (&task.claimed_by, user) {
        (Some(by), Some(user)) if by != user => Err(TaskListError::ClaimedByOther {
            id: task.id,
            by: by.clone(),
        }),
        _ => Ok(()),
    }
}
