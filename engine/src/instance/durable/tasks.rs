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

#[derive(Debug, Serialize, Deserialize)]
pub(crate) struct OpenTaskRecord {
    pub track: u32,
    pub at: String,
    pub task: TaskRecord,
}

impl<D: ProcessData> Instance<D> {
    pub(crate) fn tasks_record(&self) -> TasksRecord {
        TasksRecord {
            last: self.user_tasks.last(),
            open: self
                .user_tasks
                .iter()
                .map(|open| OpenTaskRecord {
                    track: open.track.0,
                    at: self.process.nodes[open.at].id.to_string(),
                    task: TaskRecord::from(&open.task),
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
            .map(|open| TaskRecord::from(&open.task))
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
            let task = Task::from(open.task);
            // Listed again here; the store's rows are written again with the next
            // checkpoint (kept as they are, claims too, where they exist).
            self.list_task(&task);
            self.user_tasks.open(TrackId(open.track), at, task);
        }
        self.user_tasks.restore_last(record.last);
        Ok(())
    }
}
