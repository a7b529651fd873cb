//! User tasks worked from outside through the instance's handle or by task id (the
//! task list): listing open work, completing it, failing it, raising an error or
//! escalation from it; the task list's records as user tasks open and close.

use std::any::Any;
use std::sync::Arc;
use std::time::SystemTime;

use tracing::warn;

use super::core::Instance;
use super::history::Happening;
use super::input::{Command, Input};
use super::outcome::InstanceError;
use super::park::Apply;
use super::state::armed::{EventSource, Holder};
use super::state::ids::TrackId;
use super::work::TaskAct;
use super::work::{OpenWork, Raised, WorkAt, WorkError, WorkUpdate};
use crate::data::{Erased, ProcessData};
use crate::graph::NodeIdx;
use crate::mem::intake::Intake;
use crate::tasklist::{Assigned, Task, TaskId, TaskTarget, TaskWork};

impl<D: ProcessData> Instance<D> {
    pub(crate) fn open_work(&self) -> Vec<OpenWork> {
        self.armed
            .iter()
            .filter_map(|p| match p.holder {
                Holder::Track(track)
                    if p.waits.iter().any(|w| w.source == EventSource::UserTask) =>
                {
                    Some(OpenWork {
                        node: self.process.nodes[p.at].id,
                        track,
                        iteration: self.iteration_of(track),
                    })
                }
                _ => None,
            })
            .collect()
    }

    /// The earliest parked user task called `node`: its armed entry and track.
    pub(crate) fn find_work(&self, node: &str) -> Option<(usize, TrackId)> {
        let at = self.process.nodes.iter().position(|n| n.id == node)?;
        self.armed.find_work(at)
    }

    /// Why no work at `node` could be found: the process has no user task of that
    /// name (a misspelt string form: the known ones are listed), or none waits now.
    fn no_work(&self, node: &str) -> WorkError {
        let user = |n: &&crate::graph::Node<_>| matches!(n.kind, crate::graph::NodeKind::User);
        if self.process.nodes.iter().filter(user).any(|n| n.id == node) {
            return WorkError::NoOpenWork {
                node: node.to_string(),
            };
        }
        WorkError::NoSuchUserTask {
            node: node.to_string(),
            process: self.process.name,
            known: self
                .process
                .nodes
                .iter()
                .filter(user)
                .map(|n| n.id)
                .collect(),
        }
    }

    /// Why no work `work` names could be found.
    fn no_work_at(&self, work: WorkAt) -> WorkError {
        match work {
            WorkAt::Node(node) => self.no_work(node),
            WorkAt::Task(number) => WorkError::NoOpenWork {
                node: format!("task {number}"),
            },
        }
    }

    /// The open work `work` names: its armed entry and track.
    fn work_at(&self, work: WorkAt) -> Option<(usize, TrackId)> {
        match work {
            WorkAt::Node(node) => self.find_work(node),
            WorkAt::Task(number) => {
                let open = self.user_tasks.get(number)?;
                self.armed.find_work_of(open.at, open.track)
            }
        }
    }

    /// The open work `work` names that its caller may end now: not one whose
    /// interrupting boundary the hub has served a message or signal meanwhile —
    /// that delivery is on its way and interrupts the user task when it comes.
    fn open_at(&mut self, work: WorkAt) -> Result<(usize, TrackId), WorkError> {
        let (p, track) = self.work_at(work).ok_or_else(|| self.no_work_at(work))?;
        match self.completion_wins(track) {
            true => Ok((p, track)),
            false => Err(WorkError::Interrupted {
                node: self.process.nodes[self.armed.entry(p).at].id.to_string(),
            }),
        }
    }

    pub(crate) fn complete_work(
        &mut self,
        work: WorkAt,
        update: WorkUpdate<D>,
    ) -> Result<(), WorkError> {
        let (p, track) = self.open_at(work)?;
        let parked = self.armed.remove(p);
        self.close_task(track, parked.at);
        let apply: Apply<D> = Box::new(move |data: &mut D| {
            update(data);
            Ok(())
        });
        self.deliver(track, parked.at, parked.at, Some(apply));
        Ok(())
    }

    /// The user task `node` raises an error or an escalation: its
    /// own boundary catches it first, then the scopes around it.
    pub(crate) fn raise_from_work(
        &mut self,
        work: WorkAt,
        raised: Raised,
    ) -> Result<(), WorkError> {
        let (p, track) = match raised {
            // An escalation leaves the user task open: no race with its boundaries.
            Raised::Escalation { .. } => self.work_at(work).ok_or_else(|| self.no_work_at(work))?,
            Raised::Error { .. } => self.open_at(work)?,
        };
        let at = self.armed.entry(p).at;
        match raised {
            Raised::Error { code, message } => {
                self.record(track, at, Happening::ErrorThrown { code: code.clone() });
                // The user task's work ends with the error, caught or not.
                let wait = self.armed.remove(p);
                self.disarm(&wait);
                self.throw_error(track, at, code, message);
            }
            Raised::Escalation { code } => {
                // Caught beside it, or not at all, the user task stays open.
                self.record(track, at, Happening::Escalated { code: code.clone() });
                self.throw_escalation(track, at, code);
            }
        }
        Ok(())
    }

    pub(crate) fn fail_work(&mut self, work: WorkAt, message: String) -> Result<(), WorkError> {
        let (p, track) = self.open_at(work)?;
        let parked = self.armed.remove(p);
        self.close_task(track, parked.at);
        let id = self.process.nodes[parked.at].id;
        warn!(track = %track, node = id, %message, "user task failed");
        self.record(
            track,
            parked.at,
            Happening::Failed {
                message: message.clone(),
            },
        );
        self.fail(InstanceError::TaskFailed { node: id, message });
        Ok(())
    }

    /// The user task at `at` opens for the token on `track`: its assignment is
    /// evaluated on the data as it is, and its record joins the task list.
    pub(crate) fn open_task(&mut self, track: TrackId, at: NodeIdx) {
        let node = &self.process.nodes[at];
        let assigned = match node.assign {
            Some(assign) => match self.user_code(node.id, || assign(&self.data)) {
                Ok(assigned) => assigned,
                Err(error) => return self.fail(error),
            },
            None => Assigned::none(),
        };
        let created = SystemTime::now();
        let number = self.user_tasks.next_number();
        let task = Task {
            id: TaskId {
                instance: self.id,
                number,
            },
            process: self.process.name.to_string(),
            element: node.id.to_string(),
            name: node.label.to_string(),
            iteration: self.iteration_of(track),
            due: assigned.due_at(created),
            assignee: assigned.assignee,
            groups: assigned.groups,
            priority: assigned.priority,
            claimed_by: None,
            created,
            key: self.correlation_key(),
            business_key: self.business_key(),
        };
        let task = Arc::new(task);
        self.list_task(&task);
        self.user_tasks.open(track, at, task);
    }

    /// The instance's correlation key, if it has one.
    pub(crate) fn correlation_key(&self) -> Option<String> {
        #[cfg(feature = "durable")]
        if let Some(durable) = &self.durable {
            return durable.key.clone();
        }
        self.keys()?.correlation.map(String::from)
    }

    /// The instance's business key, if it has one.
    pub(crate) fn business_key(&self) -> Option<String> {
        #[cfg(feature = "durable")]
        if let Some(durable) = &self.durable {
            return durable.business_key.clone();
        }
        self.keys()?.business.map(String::from)
    }

    /// Tell the engine's task list about an open task (also a restore's).
    pub(crate) fn list_task(&mut self, task: &Arc<Task>) {
        let Some(engine) = &self.engine else {
            return;
        };
        let intake = &mut self.intake_tx;
        let target = self
            .user_tasks
            .target(|| Arc::new(intake.made().clone()) as Arc<dyn TaskTarget>);
        engine.task_opened(Arc::clone(task), target);
    }

    /// The user task the token on `track` waits at (`at`) leaves the task list:
    /// completed, failed, withdrawn.
    pub(crate) fn close_task(&mut self, track: TrackId, at: NodeIdx) {
        if let Some(open) = self.user_tasks.close(track, at) {
            if let Some(engine) = &self.engine {
                engine.task_closed(open.task.id);
            }
        }
    }

    /// A request by task id (the task list), answered — a durable instance's
    /// completion once its effect is stored, as `handle.complete`'s.
    pub(crate) fn task_command(&mut self, work: TaskWork) {
        let completes = matches!(work.what, TaskAct::Complete(_));
        let result = self.act_on_task(work.number, work.what);
        #[cfg(feature = "durable")]
        if let (true, Ok(()), Some(durable)) = (completes, &result, &mut self.durable) {
            durable.acks.push(work.reply.into());
            return;
        }
        let _ = completes;
        let _ = work.reply.send(result);
    }

    /// Act on the open task `number`, as its handle's `complete`, `fail_work` or
    /// `raise_*` would on its user task.
    pub(crate) fn act_on_task(&mut self, number: u32, act: TaskAct) -> Result<(), WorkError> {
        let at = WorkAt::Task(number);
        match act {
            TaskAct::Complete(change) => {
                let update: WorkUpdate<D> = Box::new(move |data: &mut D| {
                    // The loop's data is the erased data; the change checks its type.
                    if let Some(data) = (data as &mut dyn Any).downcast_mut::<Erased>() {
                        change(data);
                    }
                });
                self.complete_work(at, update)
            }
            TaskAct::Fail(message) => self.fail_work(at, message),
            TaskAct::Raise(raised) => {
                let mut result = Ok(());
                self.step(|this, _| result = this.raise_from_work(at, raised));
                result
            }
        }
    }
}

/// A task's request reaches its instance's loop through the loop's intake.
impl<D: ProcessData> TaskTarget for Intake<Input<D>> {
    fn post(&self, work: TaskWork) -> bool {
        self.send(Input::Handle(Box::new(Command::Task(work))))
            .is_ok()
    }

    fn gone(&self) -> bool {
        self.is_closed()
    }
}
