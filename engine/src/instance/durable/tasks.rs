//! The open user tasks in a checkpoint (`Snapshot::tasks`): each task's record and
//! where its token waits, and the last number given — so a restored instance keeps
//! its task ids and numbers new ones after them. The store's `user_tasks` rows are
//! written beside the checkpoint that opens or closes a task (`Write::Tasks`).

use serde::{Deserialize, Serialize};

use super::super::core::Instance;
use super::super::state::ids::TrackId;
use super::RestoreError;
use crate::data::ProcessData;
use crate::graph::NodeIdx;
use crate::store::{TaskRecord, Write};
use crate::tasklist::Task;

#[derive(Debug, Default, Serialize, Deserialize)]
pub(crate) struct TasksRecord {
    pub last: u32,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub open: Vec<OpenTaskRecord>,
}

impl TasksRecord {
    pub(crate) fn is_empty(&self) -> bool {
        self.last == 0 && self.open.is_empty()
    }
}

/// An open task: where it waits, and what was evaluated when it opened (the rest —
/// process, element, name, key — is the instance's and the node's).
#[derive(Debug, Serialize, Deserialize)]
pub(crate) struct OpenTaskRecord {
    pub track: u32,
    pub at: String,
    pub number: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub iteration: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub assignee: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub groups: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub due_ms: Option<i64>,
    pub priority: i32,
    pub created_ms: i64,
}

impl<D: ProcessData> Instance<D> {
    pub(crate) fn tasks_record(&self) -> TasksRecord {
        TasksRecord {
            last: self.user_tasks.last(),
            open: self
                .user_tasks
                .iter()
                .map(|open| {
                    let task = TaskRecord::from(&*open.task);
                    OpenTaskRecord {
                        track: open.track.0,
                        at: self.process.nodes[open.at].id.to_string(),
                        number: task.number,
                        iteration: task.iteration,
                        assignee: task.assignee,
                        groups: task.groups,
                        due_ms: task.due_ms,
                        priority: task.priority,
                        created_ms: task.created_ms,
                    }
                })
                .collect(),
        }
    }

    /// The write of the instance's open tasks, when one opened or closed since the
    /// last checkpoint (it goes in the checkpoint's transaction).
    pub(crate) fn tasks_write(&mut self, instance: u64) -> Option<Write> {
        if !self.user_tasks.take_changed() {
            return None;
        }
        let open = self
            .user_tasks
            .iter()
            .map(|open| TaskRecord::from(&*open.task))
            .collect();
        Some(Write::Tasks { instance, open })
    }

    pub(crate) fn restore_tasks(
        &mut self,
        record: TasksRecord,
        node: &impl Fn(&str) -> Result<NodeIdx, RestoreError>,
    ) -> Result<(), RestoreError> {
        if record.is_empty() {
            return Ok(());
        }
        for open in record.open {
            let at = node(&open.at)?;
            let task = std::sync::Arc::new(Task::from(TaskRecord {
                instance: self.id.0,
                number: open.number,
                process: self.process.name.to_string(),
                element: self.process.nodes[at].id.to_string(),
                name: self.process.nodes[at].label.to_string(),
                iteration: open.iteration,
                assignee: open.assignee,
                groups: open.groups,
                due_ms: open.due_ms,
                priority: open.priority,
                claimed_by: None,
                created_ms: open.created_ms,
                key: self.correlation_key(),
                business_key: self.business_key(),
            }));
            // Listed again here; the store's rows are written again with the next
            // checkpoint (kept as they are, claims too, where they exist).
            self.list_task(&task);
            self.user_tasks.open(TrackId(open.track), at, task);
        }
        self.user_tasks.restore_last(record.last);
        Ok(())
    }
}
