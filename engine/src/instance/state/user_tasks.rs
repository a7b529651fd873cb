//! The instance's open user tasks as task-list records (`tasklist::Task`): numbered
//! from 1 in the instance and never renumbered, found by number (a completion by task
//! id) and by place (the track waiting at the node: a wait withdrawn). Made on the
//! first user task: an instance without one carries a pointer.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use super::ids::TrackId;
use crate::graph::NodeIdx;
use crate::tasklist::{Task, TaskTarget};

/// An open user task: where its token waits, and its record.
pub(crate) struct OpenTask {
    pub track: TrackId,
    pub at: NodeIdx,
    /// Shared with the engine's task list: one record, not a copy per task.
    pub task: Arc<Task>,
}

#[derive(Default)]
pub(crate) struct UserTasks(Option<Box<Open>>);

#[derive(Default)]
struct Open {
    /// The last number given (numbers are never reused in an instance).
    last: u32,
    by_number: BTreeMap<u32, OpenTask>,
    by_place: HashMap<(TrackId, NodeIdx), u32>,
    /// Whether a task opened or closed since [`UserTasks::take_changed`] last asked
    /// (a durable instance's checkpoint then writes the instance's open tasks).
    #[cfg_attr(not(feature = "durable"), allow(dead_code))]
    changed: bool,
    /// The way to the loop the engine's task list keeps with each task, made once.
    target: Option<Arc<dyn TaskTarget>>,
}

impl Drop for UserTasks {
    #[inline]
    fn drop(&mut self) {
        super::drop_if_made(&mut self.0);
    }
}

impl UserTasks {
    fn made(&mut self) -> &mut Open {
        self.0.get_or_insert_with(Box::default)
    }

    /// The next task's number.
    pub fn next_number(&mut self) -> u32 {
        let open = self.made();
        open.last += 1;
        open.last
    }

    #[cfg(feature = "durable")]
    /// The last number given (for a checkpoint).
    pub fn last(&self) -> u32 {
        self.0.as_ref().map_or(0, |o| o.last)
    }

    /// Record `task` (numbered by [`next_number`](Self::next_number), or restored)
    /// as open at `track` waiting at `at`.
    pub fn open(&mut self, track: TrackId, at: NodeIdx, task: Arc<Task>) {
        let open = self.made();
        let number = task.id.number;
        open.last = open.last.max(number);
        open.by_place.insert((track, at), number);
        open.by_number.insert(number, OpenTask { track, at, task });
        open.changed = true;
    }

    /// The task of the token on `track` waiting at `at` leaves: its record.
    pub fn close(&mut self, track: TrackId, at: NodeIdx) -> Option<OpenTask> {
        let open = self.0.as_mut()?;
        let number = open.by_place.remove(&(track, at))?;
        open.changed = true;
        open.by_number.remove(&number)
    }

    /// The way to the loop the engine's task list keeps (made by `make` once).
    pub fn target(&mut self, make: impl FnOnce() -> Arc<dyn TaskTarget>) -> Arc<dyn TaskTarget> {
        Arc::clone(self.made().target.get_or_insert_with(make))
    }

    /// The open task numbered `number`.
    pub fn get(&self, number: u32) -> Option<&OpenTask> {
        self.0.as_ref()?.by_number.get(&number)
    }

    #[cfg(feature = "durable")]
    /// The open tasks, by number.
    pub fn iter(&self) -> impl Iterator<Item = &OpenTask> {
        self.0.iter().flat_map(|o| o.by_number.values())
    }

    #[cfg(feature = "durable")]
    /// Whether a task opened or closed since the last ask.
    pub fn take_changed(&mut self) -> bool {
        self.0
            .as_mut()
            .is_some_and(|o| std::mem::take(&mut o.changed))
    }

    #[cfg(feature = "durable")]
    /// A restored instance's last number (its open tasks are restored with their
    /// waits, and marked changed: the next checkpoint writes their rows again).
    pub fn restore_last(&mut self, last: u32) {
        if last > 0 {
            let open = self.made();
            open.last = open.last.max(last);
        }
    }
}
