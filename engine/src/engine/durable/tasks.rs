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
        let loaded = self.restored(id).await;
        #[cfg(feature = "postgres")]
        if loaded.is_none() && self.inner.node.get().is_some() && !self.engine.runs_task(id) {
            let request = self.remote_completion(process, id, update).await?;
            return self.hand_over(id, request).await;
        }
        let change = TaskAct::Complete(crate::retry::erase_change(update));
        match loaded {
            Some(loaded) => crate::Engine::post_task(&loaded, id, change).await,
            None => self.act_on(id, change).await,
        }
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

    /// Act on the open task `id` where its instance runs: here, or on a node of
    /// several, the node that runs it (a stored request, [`Request`]).
    async fn act_on(&self, id: TaskId, act: TaskAct) -> Result<(), TaskListError> {
        #[cfg_attr(not(feature = "postgres"), allow(unused_variables))]
        let act = match self.act_here(id, act).await {
            Ok(done) => return done,
            Err(act) => act,
        };
        // Open in the store, run by no loop here.
        self.task(id).await?;
        #[cfg(feature = "postgres")]
        if self.inner.node.get().is_some() {
            let request = match act {
                TaskAct::Fail(message) => Request::Fail { message },
                TaskAct::Raise(Raised::Error { code, message }) => Request::Error { code, message },
                TaskAct::Raise(Raised::Escalation { code }) => Request::Escalation { code },
                // Its instance left this node between `complete_task`'s look and
                // the act (taken over, ended): the caller may try again, and the
                // completion is then handed over as data.
                TaskAct::Complete(_) => return Err(TaskListError::NotRunning(id)),
            };
            return self.hand_over(id, request).await;
        }
        Err(TaskListError::NotRunning(id))
    }

    /// Act on the open task `id` if its instance runs here (an evicted one loaded
    /// first): the answer, or `act` back if it does not (a node's claimer acts on
    /// another node's request through this too).
    pub(super) async fn act_here(
        &self,
        id: TaskId,
        act: TaskAct,
    ) -> Result<Result<(), TaskListError>, TaskAct> {
        // A loop evicted between a look and the post is looked for again.
        for _ in 0..3 {
            if let Some(loaded) = self.restored(id).await {
                // Through the intake it was loaded by: evicted again before the
                // act comes (it may rest at once), it is loaded again by the act.
                return Ok(crate::Engine::post_task(&loaded, id, act).await);
            }
            // Its loop's intake, held while posting: evicted meanwhile, the
            // instance keeps that intake and the post loads it.
            if let Some(target) = self.engine.task_target(id) {
                return Ok(crate::Engine::post_task(target.as_ref(), id, act).await);
            }
            if !self.inner.is_evicted(id.instance.0) {
                break;
            }
        }
        Err(act)
    }

    /// Wait, if task `id`'s instance was resumed here and its loop does not list the
    /// task yet, for that loop to have restored: it puts its open tasks back on the
    /// list as it restores, and answers a handle's question only after.
    /// Returns a sender on its intake if it was evicted here and is loaded now.
    async fn restored(
        &self,
        id: TaskId,
    ) -> Option<crate::mem::intake::Intake<crate::instance::Input<crate::data::Erased>>> {
        if self.engine.runs_task(id) {
            return None;
        }
        // Evicted here: loaded, it lists its tasks again as it restores.
        let loaded = self
            .inner
            .load_evicted(&self.engine.inner, id.instance.0)
            .await;
        if loaded.is_some() {
            return loaded;
        }
        let handle = {
            let resumed = self.inner.resumed.lock().unwrap_or_else(|p| p.into_inner());
            resumed.get(&id.instance.0).map(|r| r.handle.clone())
        };
        if let Some(handle) = handle {
            let _ = handle.open_work().await;
        }
        None
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

/// What a node asks of a task another node's instance holds: stored as a message
/// of the reserved name [`TASK_REQUEST`] keyed by the task, claimed by the node that
/// runs the instance (`claims.rs`, as a retry request), the way an incident's retry
/// is handed over.
#[cfg(feature = "postgres")]
#[derive(serde::Serialize, serde::Deserialize)]
#[serde(tag = "act", rename_all = "lowercase")]
pub(super) enum Request {
    /// Complete it: the update ran on the instance's stored data (`base`) and gave
    /// `edited`; the owner merges what it changed into the data as it is now.
    Complete {
        base: serde_json::Value,
        edited: serde_json::Value,
        /// The fingerprint of the version whose data `base` and `edited` are (the
        /// instance's when the request was made); absent in a request of before:
        /// the newest version's.
        #[serde(default)]
        fingerprint: Option<u64>,
    },
    Fail {
        message: String,
    },
    Error {
        code: String,
        message: String,
    },
    Escalation {
        code: String,
    },
}

/// The reserved message name of a task request. A process's message names are
/// never this.
#[cfg(feature = "postgres")]
pub(super) const TASK_REQUEST: &str = "\u{1}task";

/// How long a task request waits to be claimed (its instance may be between
/// owners for a lease).
#[cfg(feature = "postgres")]
const TASK_REQUEST_TTL: std::time::Duration = std::time::Duration::from_secs(24 * 3600);

#[cfg(feature = "postgres")]
impl DurableEngine {
    /// A completion for another node: `update` run on the instance's stored data.
    async fn remote_completion<D: 'static>(
        &self,
        process: &Process<D>,
        id: TaskId,
        update: impl FnOnce(&mut D) + Send + 'static,
    ) -> Result<Request, TaskListError> {
        let record = self
            .blocking(move |store| store.instance(id.instance.0))
            .await?
            .ok_or(TaskListError::NoTask(id))?;
        // The data of the version the instance runs, not the newest's.
        let codec = self.codec_of(process.name(), Some(record.fingerprint), id)?;
        let unreadable = |e: String| TaskListError::Elsewhere(id, e);
        let base =
            match serde_json::from_str(&record.state).map_err(|e| unreadable(e.to_string()))? {
                crate::instance::durable::records::Checkpoint::Born { data, .. } => data,
                crate::instance::durable::records::Checkpoint::Running(snapshot) => snapshot.data,
            };
        let mut edited = (codec.decode)(base.clone()).map_err(unreadable)?;
        let data = edited
            .get_mut::<D>()
            .ok_or_else(|| TaskListError::OtherProcess {
                id,
                task: record.process.clone(),
                given: process.name(),
            })?;
        update(data);
        let edited = (codec.encode)(&edited).map_err(unreadable)?;
        Ok(Request::Complete {
            base,
            edited,
            fingerprint: Some(record.fingerprint),
        })
    }

    /// The codec of version `fingerprint` of the registered process `name` (its
    /// newest version's for `None`: a request of before requests named it).
    fn codec_of(
        &self,
        name: &str,
        fingerprint: Option<u64>,
        id: TaskId,
    ) -> Result<crate::instance::durable::records::Codec<crate::data::Erased>, TaskListError> {
        let registered = match fingerprint {
            Some(fingerprint) => self.registered(name, fingerprint),
            None => self.newest(name),
        };
        registered.map(|r| r.codec).ok_or_else(|| {
            TaskListError::Elsewhere(
                id,
                format!("its process `{name}` (that version) is not registered here"),
            )
        })
    }

    /// Store `request` for the node that runs task `id`'s instance; `Ok` once
    /// stored (that node acts on it when it next claims, or the node that takes the
    /// instance over does).
    async fn hand_over(&self, id: TaskId, request: Request) -> Result<(), TaskListError> {
        let payload = serde_json::to_string(&request)
            .map_err(|e| TaskListError::Elsewhere(id, e.to_string()))?;
        let Some(node) = self.inner.node.get() else {
            return Err(TaskListError::NotRunning(id));
        };
        let record = crate::store::MessageRecord {
            id: self
                .inner
                .next_message
                .fetch_add(1, std::sync::atomic::Ordering::Relaxed),
            name: TASK_REQUEST.to_string(),
            key: task_key(id),
            payload,
            expires_ms: crate::instance::durable::now_ms() + TASK_REQUEST_TTL.as_millis() as i64,
        };
        let store = node.store.clone();
        tokio::task::spawn_blocking(move || store.store_message(&record, false, &[]))
            .await
            .map_err(|e| TaskListError::Elsewhere(id, e.to_string()))?
            .map_err(|e| TaskListError::Elsewhere(id, e.to_string()))?;
        Ok(())
    }

    /// A claimed task request read back: the task and what to do, or why not.
    pub(super) fn task_request(
        &self,
        key: &str,
        payload: &str,
    ) -> Result<(TaskId, TaskAct), String> {
        let id = task_of(key).ok_or("a task request's key names no task")?;
        let request: Request = serde_json::from_str(payload).map_err(|e| e.to_string())?;
        let act = match request {
            Request::Complete {
                base,
                edited,
                fingerprint,
            } => {
                let process = self
                    .engine
                    .task_process(id)
                    // Evicted here: its process is kept (its task lists as it loads).
                    .or_else(|| {
                        let process = self.inner.evicted_process(id.instance.0);
                        process.map(str::to_string)
                    })
                    .ok_or("the task is not open here")?;
                let codec = self
                    .codec_of(&process, fingerprint, id)
                    .map_err(|e| e.to_string())?;
                let base = (codec.decode)(base)?;
                let edited = (codec.decode)(edited)?;
                let merge: crate::retry::RetryChange = Box::new(move |now| {
                    // Migrated meanwhile to a version of another data type: refused.
                    if now.type_name() != base.type_name() {
                        return false;
                    }
                    crate::ProcessData::merge(now, &base, edited);
                    true
                });
                TaskAct::Complete(merge)
            }
            Request::Fail { message } => TaskAct::Fail(message),
            Request::Error { code, message } => TaskAct::Raise(Raised::Error { code, message }),
            Request::Escalation { code } => TaskAct::Raise(Raised::Escalation { code }),
        };
        Ok((id, act))
    }
}

/// A task request's key: the task's instance and number.
#[cfg(feature = "postgres")]
fn task_key(id: TaskId) -> String {
    format!("{}:{}", id.instance.0, id.number)
}

/// The task a task request's key names.
#[cfg(feature = "postgres")]
pub(super) fn task_of(key: &str) -> Option<TaskId> {
    let (instance, number) = key.split_once(':')?;
    Some(TaskId {
        instance: crate::InstanceId(instance.parse().ok()?),
        number: number.parse().ok()?,
    })
}
