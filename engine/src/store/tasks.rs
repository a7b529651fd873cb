//! Open user tasks as a store keeps them (`user_tasks`): one row per task, written
//! by [`Write::Tasks`](super::Write::Tasks) in the transaction of the checkpoint that
//! opens or closes them, claimed by a write of its own
//! ([`Store::claim_task`](super::Store::claim_task)), gone with the instance's end.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};

use crate::tasklist::{Task, TaskId, TaskQuery};
use crate::InstanceId;

/// One open user task's row.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TaskRecord {
    /// The instance id.
    pub instance: u64,
    /// The task's number in its instance.
    pub number: u32,
    /// The process's name.
    pub process: String,
    /// The user task's element id.
    pub element: String,
    /// The user task's name (empty: none).
    #[serde(default)]
    pub name: String,
    /// Which instance of a multi-instance or looped user task it is.
    #[serde(default)]
    pub iteration: Option<u32>,
    /// Who works it.
    #[serde(default)]
    pub assignee: Option<String>,
    /// The groups whose members may claim it.
    #[serde(default)]
    pub groups: Vec<String>,
    /// When it is due, in milliseconds since the Unix epoch.
    #[serde(default)]
    pub due_ms: Option<i64>,
    /// Its priority, higher first.
    pub priority: i32,
    /// Who claimed it (a claim is its own write: a checkpoint keeps it).
    #[serde(default)]
    pub claimed_by: Option<String>,
    /// When it opened, in milliseconds since the Unix epoch.
    pub created_ms: i64,
    /// The instance's correlation key.
    #[serde(default)]
    pub key: Option<String>,
    /// The instance's business key.
    #[serde(default)]
    pub business_key: Option<String>,
}

fn ms(time: SystemTime) -> i64 {
    time.duration_since(UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}

fn time(ms: i64) -> SystemTime {
    UNIX_EPOCH + Duration::from_millis(u64::try_from(ms).unwrap_or(0))
}

impl From<&Task> for TaskRecord {
    fn from(task: &Task) -> Self {
        TaskRecord {
            instance: task.id.instance.0,
            number: task.id.number,
            process: task.process.clone(),
            element: task.element.clone(),
            name: task.name.clone(),
            iteration: task.iteration,
            assignee: task.assignee.clone(),
            groups: task.groups.clone(),
            due_ms: task.due.map(ms),
            priority: task.priority,
            claimed_by: task.claimed_by.clone(),
            created_ms: ms(task.created),
            key: task.key.clone(),
            business_key: task.business_key.clone(),
        }
    }
}

impl From<TaskRecord> for Task {
    fn from(r: TaskRecord) -> Self {
        Task {
            id: TaskId {
                instance: InstanceId(r.instance),
                number: r.number,
            },
            process: r.process,
            element: r.element,
            name: r.name,
            iteration: r.iteration,
            assignee: r.assignee,
            groups: r.groups,
            due: r.due_ms.map(time),
            priority: r.priority,
            claimed_by: r.claimed_by,
            created: time(r.created_ms),
            key: r.key,
            business_key: r.business_key,
        }
    }
}

/// A query's due bound in milliseconds, as the stores compare it.
#[cfg(any(feature = "sqlite", feature = "postgres"))]
pub(crate) fn due_before_ms(query: &TaskQuery) -> Option<i64> {
    query.due_before.map(ms)
}

/// The rows `query` selects of `rows`, in its order and page: the memory store's
/// listing, and the reference the SQL listings agree with.
pub(crate) fn select<'a>(
    rows: impl Iterator<Item = &'a TaskRecord>,
    query: &TaskQuery,
) -> Vec<TaskRecord> {
    let tasks: Vec<Task> = rows.cloned().map(Task::from).collect();
    query
        .select(tasks.iter())
        .iter()
        .map(TaskRecord::from)
        .collect()
}
