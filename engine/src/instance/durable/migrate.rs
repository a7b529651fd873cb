//! A stored checkpoint moved from one version of its process to another by a
//! migration plan (README, "Migration plans"; ARCHITECTURE.md, "Migration
//! plans"): every element id it names is mapped — by the plan where a token rests,
//! else to the element of the same id (a boundary, an event-based gateway's arm) —,
//! a join's arrivals are carried by the flows' sources, the data and every
//! snapshot is converted, and the history is dropped (its steps are the old
//! version's). What it cannot carry is an error: the instance is left as it was.
//!
//! Timers keep their wall-clock deadlines; message subscriptions are not stored,
//! so the restore subscribes them again with the new version's keys.

use serde_json::Value;

use super::records::{Checkpoint, CompletionRecord, CurrentRecord};
use super::tasks::OpenTaskRecord;
use crate::data::Erased;
use crate::graph::Graph;
use crate::store::{InstanceRecord, TaskRecord};

/// How a checkpoint moves: the versions, the plan's mapping and the data's
/// conversion (JSON of the old data type to JSON of the new one).
pub(crate) struct Move<'a> {
    pub from: &'static Graph<Erased>,
    pub to: &'static Graph<Erased>,
    pub target: &'a dyn Fn(&str) -> Option<&'static str>,
    pub convert: &'a dyn Fn(Value) -> Result<Value, String>,
}

impl Move<'_> {
    /// The new version's id for `id` of the old one.
    fn id(&self, id: &str) -> Result<String, String> {
        if let Some(target) = (self.target)(id) {
            return Ok(target.to_string());
        }
        match self.to.node(id) {
            Some(node) => Ok(node.id.to_string()),
            None => Err(format!(
                "`{id}` of version {} has no place in version {}",
                self.from.version, self.to.version
            )),
        }
    }

    fn ids(&self, ids: &mut [String]) -> Result<(), String> {
        for id in ids {
            *id = self.id(id)?;
        }
        Ok(())
    }

    fn completions(&self, completions: &mut [CompletionRecord]) -> Result<(), String> {
        for completion in completions {
            completion.activity = self.id(&completion.activity)?;
            completion.data = (self.convert)(completion.data.take())?;
            self.completions(&mut completion.inner)?;
        }
        Ok(())
    }

    /// The join slot (incoming flow position) of the new version's join `to_join`
    /// that slot `slot` of the old version's `from_join` becomes: the flow from the
    /// same source, mapped.
    fn slot(&self, from_join: &str, to_join: &str, slot: usize) -> Result<usize, String> {
        let node = self
            .from
            .node(from_join)
            .ok_or_else(|| format!("no join `{from_join}`"))?;
        let flow = node
            .incoming
            .get(slot)
            .ok_or_else(|| format!("join `{from_join}` has no incoming flow {slot}"))?;
        let source = self.from.nodes[self.from.flows[*flow].source].id;
        let source = self.id(source)?;
        let join = self
            .to
            .node(to_join)
            .ok_or_else(|| format!("no join `{to_join}`"))?;
        join.incoming
            .iter()
            .position(|&f| self.to.nodes[self.to.flows[f].source].id == source)
            .ok_or_else(|| {
                format!(
                    "a token waits at join `{from_join}` on the flow from `{source}`, which join `{to_join}` of version {} has not",
                    self.to.version
                )
            })
    }

    /// `record`'s checkpoint and the elements its tokens wait at, moved; and the
    /// rows of its open user tasks as the new version names them (`None`: it has
    /// none to write).
    pub(crate) fn record(
        &self,
        record: &mut InstanceRecord,
    ) -> Result<Option<Vec<TaskRecord>>, String> {
        let checkpoint: Checkpoint =
            serde_json::from_str(&record.state).map_err(|e| e.to_string())?;
        let mut tasks = None;
        let checkpoint = match checkpoint {
            Checkpoint::Born { data, start } => {
                let start = match start {
                    // Born at a start event: of the same id.
                    Some(start) => Some(
                        self.to
                            .node(&start)
                            .map(|n| n.id.to_string())
                            .ok_or_else(|| {
                                format!(
                                    "it was born at `{start}`, which version {} has not",
                                    self.to.version
                                )
                            })?,
                    ),
                    None => None,
                };
                Checkpoint::Born {
                    data: (self.convert)(data)?,
                    start,
                }
            }
            Checkpoint::Running(mut s) => {
                s.data = (self.convert)(s.data.take())?;
                for track in &mut s.tracks {
                    track.at = self.id(&track.at)?;
                }
                for join in &mut s.joins {
                    let to = self.id(&join.node)?;
                    for (slot, _) in &mut join.waiting {
                        *slot = self.slot(&join.node, &to, *slot)?;
                    }
                    join.node = to;
                }
                for scope in &mut s.scopes.nested {
                    if let Some(node) = &scope.node {
                        scope.node = Some(self.id(node)?);
                    }
                }
                for armed in &mut s.armed {
                    armed.at = self.id(&armed.at)?;
                    for wait in &mut armed.waits {
                        wait.arm = self.id(&wait.arm)?;
                    }
                }
                for activation in &mut s.activations {
                    activation.node = self.id(&activation.node)?;
                    if let super::loops::ActivationStateRecord::Multi { source, .. } =
                        &mut activation.state
                    {
                        *source = (self.convert)(source.take())?;
                    }
                }
                for log in &mut s.compensation.logs {
                    self.completions(&mut log.completions)?;
                }
                for run in &mut s.compensation.runs {
                    self.completions(&mut run.queue)?;
                    if let CurrentRecord::Handler { data, .. } = &mut run.current {
                        *data = (self.convert)(data.take())?;
                    }
                }
                for held in &mut s.retries.held {
                    held.node = self.id(&held.node)?;
                }
                for task in &mut s.tasks.open {
                    task.at = self.id(&task.at)?;
                }
                if !s.tasks.open.is_empty() {
                    tasks = Some(self.task_rows(record, &s.tasks.open));
                }
                // Its steps are the old version's: the history begins anew.
                s.history = None;
                Checkpoint::Running(s)
            }
        };
        self.ids(&mut record.waits)?;
        record.waits.sort_unstable();
        record.state = serde_json::to_string(&checkpoint).map_err(|e| e.to_string())?;
        Ok(tasks)
    }

    /// The task-list rows of `open` (moved already), as the restore would make
    /// them: a claim is not carried (the row is written anew).
    fn task_rows(&self, record: &InstanceRecord, open: &[OpenTaskRecord]) -> Vec<TaskRecord> {
        open.iter()
            .map(|task| TaskRecord {
                instance: record.id,
                number: task.number,
                process: self.to.name.to_string(),
                element: task.at.clone(),
                name: self.to.node(&task.at).map_or("", |n| n.label).to_string(),
                iteration: task.iteration,
                assignee: task.assignee.clone(),
                groups: task.groups.clone(),
                due_ms: task.due_ms,
                priority: task.priority,
                claimed_by: None,
                created_ms: task.created_ms,
                key: record.key.clone(),
                business_key: record.business_key.clone(),
            })
            .collect()
    }
}
