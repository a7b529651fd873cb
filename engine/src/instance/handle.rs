//! The public handle on an instance: await its outcome, read its history and data,
//! work its user tasks, cancel it. Every request is a message to the instance's loop.

use std::marker::PhantomData;

use tokio::sync::oneshot;

use super::ending::{EndRef, FinishedRef, Publisher};
use super::history::History;
use super::input::{Command, Input};
use super::outcome::{Finished, InstanceError, InstanceId, Outcome};
use super::work::{OpenWork, Raised, WorkError};
use crate::data::Erased;
use crate::mem::intake::Intake;
use crate::refs::{CodeRef, ForError, ForEscalation, UserTaskRef};

/// A handle on a started instance: await its outcome, read its history and data,
/// cancel it. Clones observe the same instance; dropping them does not stop it.
///
/// ```
/// use thresh::{process, Engine, Outcome, ProcessData, TaskError};
///
/// #[derive(Clone, Debug, Default, ProcessData)]
/// pub struct Greeting { pub text: String }
///
/// async fn greet(g: &mut Greeting) -> Result<(), TaskError> {
///     g.text = "hello".into();
///     Ok(())
/// }
///
/// process! {
///     pub HELLO: Greeting {
///         start begin;
///         task  say = greet;
///         end   done;
///         begin -> say -> done;
///     }
/// }
///
/// # #[tokio::main(flavor = "current_thread")] async fn main() {
/// let engine = Engine::new();
/// let handle = engine.start(&HELLO, Greeting::default()).await.unwrap();
/// let Outcome::Completed(data) = handle.outcome().await else { panic!() };
/// assert_eq!(data.text, "hello");
/// assert_eq!(handle.history().await.completed_tasks(), ["say"]);
/// # }
/// ```
///
/// The loop holds the data erased; the handle is typed, converting at the edge: an
/// `InstanceHandle<Erased>` is the engine's own view of the same instance.
///
pub struct InstanceHandle<D: 'static> {
    id: InstanceId,
    /// The calling instance, for a call activity's child.
    parent: Option<InstanceId>,
    commands: Intake<Input<Erased>>,
    /// The end the loop leaves (or left).
    ending: EndRef,
    data: PhantomData<fn() -> D>,
}

impl<D> Clone for InstanceHandle<D> {
    fn clone(&self) -> Self {
        Self {
            id: self.id,
            parent: self.parent,
            commands: self.commands.clone(),
            ending: self.ending.clone(),
            data: PhantomData,
        }
    }
}

/// The instance's id and parent, and whether it ended — what a log line or an
/// `unwrap` message needs.
impl<D> std::fmt::Debug for InstanceHandle<D> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("InstanceHandle")
            .field("id", &self.id)
            .field("parent", &self.parent)
            .field("finished", &self.ending.get().is_some())
            .finish()
    }
}

impl InstanceHandle<Erased> {
    /// The loop's intake, as this handle sends to it.
    #[cfg(feature = "durable")]
    pub(crate) fn commands(&self) -> &Intake<Input<Erased>> {
        &self.commands
    }

    /// A handle, and the publisher the instance's loop leaves its end with.
    pub(crate) fn new(
        id: InstanceId,
        commands: Intake<Input<Erased>>,
        parent: Option<InstanceId>,
    ) -> (Self, Publisher) {
        let (publisher, ending) = EndRef::pending();
        let handle = Self {
            id,
            parent,
            commands,
            ending,
            data: PhantomData,
        };
        (handle, publisher)
    }

    /// A handle on an instance whose first step, run by its starter, panicked
    /// outside any handler (`End::Broken`).
    pub(crate) fn broken_at_birth(id: InstanceId, error: InstanceError) -> Self {
        Self {
            id,
            parent: None,
            commands: Intake::none(),
            ending: EndRef::broken(error),
            data: PhantomData,
        }
    }

    /// A handle on an instance that ended in a first step run by its starter, before
    /// its handle was made: no publisher, no waiter to wake. Kept whole in one
    /// block when `packed` (`EndRef::packed`).
    pub(crate) fn ended_early(
        id: InstanceId,
        commands: Intake<Input<Erased>>,
        parent: Option<InstanceId>,
        finished: Finished<Erased>,
        packed: bool,
    ) -> Self {
        Self {
            id,
            parent,
            commands,
            ending: match packed {
                true => EndRef::packed(finished),
                false => EndRef::ended(finished),
            },
            data: PhantomData,
        }
    }

    /// The same handle, typed: the caller knows the instance's data is a `D`.
    pub(crate) fn typed<D>(self) -> InstanceHandle<D> {
        InstanceHandle {
            id: self.id,
            parent: self.parent,
            commands: self.commands,
            ending: self.ending,
            data: PhantomData,
        }
    }
}

impl<D: Clone> InstanceHandle<D> {
    /// The instance's id.
    pub fn id(&self) -> InstanceId {
        self.id
    }

    /// The instance whose call activity started this one; `None` for an instance
    /// started otherwise.
    pub fn parent(&self) -> Option<InstanceId> {
        self.parent
    }

    /// The instances this one's call activities are running now (their ids, in the
    /// order the calls started); empty once it ended. A call that ended is no longer
    /// listed — its child's id stays in the history ([`Happening::Called`](crate::Happening::Called)).
    pub async fn children(&self) -> Vec<InstanceId> {
        if self.is_finished() {
            return Vec::new();
        }
        let children = self.ask(Command::Children).await.unwrap_or_default();
        children.into_iter().map(|(id, _, _)| id).collect()
    }

    /// Handles on the children of `process` this instance's call activities are
    /// running now, in the order the calls started: read a child's history, data
    /// or open work, complete its user tasks, cancel it.
    pub async fn children_of<C: 'static>(
        &self,
        process: &'static crate::graph::Process<C>,
    ) -> Vec<InstanceHandle<C>> {
        let name = process.name();
        if self.is_finished() {
            return Vec::new();
        }
        let children = self.ask(Command::Children).await.unwrap_or_default();
        children
            .into_iter()
            .filter(|(_, callee, _)| *callee == name)
            .filter_map(|(_, _, handle)| handle?.downcast_ref::<InstanceHandle<Erased>>().cloned())
            .map(InstanceHandle::typed)
            .collect()
    }

    /// Wait for the instance to end and return how it ended. Can be awaited any
    /// number of times, from any number of clones of the outcome.
    pub async fn outcome(&self) -> Outcome<D> {
        match self.wait_finished().await {
            Ok(f) => f.outcome(|data| data.clone_data()),
            Err(error) => Outcome::Failed(error),
        }
    }

    /// Whether the instance has ended.
    pub fn is_finished(&self) -> bool {
        self.ending.get().is_some()
    }

    /// The history so far (the whole history once the instance has ended).
    pub async fn history(&self) -> History {
        if let Some(f) = self.ended() {
            return f.history();
        }
        match self.ask(Command::History).await {
            Some(history) => history,
            // The loop ended between our look and our request.
            None => self
                .wait_finished()
                .await
                .map(|f| f.history())
                .unwrap_or_default(),
        }
    }

    /// The process data as committed so far (the final data once ended, whatever the
    /// outcome). `None` only if the loop was lost.
    pub async fn data(&self) -> Option<D> {
        if let Some(f) = self.ended() {
            return Some(f.data.clone_data());
        }
        match self.ask(Command::Data).await {
            Some(data) => Some(data.into_data()),
            None => self.wait_finished().await.ok().map(|f| f.data.clone_data()),
        }
    }

    /// The user tasks waiting for completion, in the order they were reached.
    pub async fn open_work(&self) -> Vec<OpenWork> {
        self.ask(Command::OpenWork).await.unwrap_or_default()
    }

    /// The instance's open incidents (module [`retry`](crate::retry)): tokens held
    /// where a task's attempts were spent, or a gateway had no flow to take. Empty
    /// once it ended.
    pub async fn incidents(&self) -> Vec<crate::retry::Incident> {
        self.ask(Command::Incidents).await.unwrap_or_default()
    }

    /// Retry this instance's incident `id` as the data is
    /// ([`Engine::retry`](crate::Engine::retry)).
    pub async fn retry(
        &self,
        id: crate::retry::IncidentId,
    ) -> Result<(), crate::retry::RetryError> {
        self.retry_by(id, None).await
    }

    /// Change the data, then retry this instance's incident `id`
    /// ([`Engine::retry_with`](crate::Engine::retry_with)).
    pub async fn retry_with(
        &self,
        id: crate::retry::IncidentId,
        change: impl FnOnce(&mut D) + Send + 'static,
    ) -> Result<(), crate::retry::RetryError>
    where
        D: 'static,
    {
        self.retry_by(id, Some(crate::retry::erase_change(change)))
            .await
    }

    async fn retry_by(
        &self,
        id: crate::retry::IncidentId,
        change: Option<crate::retry::RetryChange>,
    ) -> Result<(), crate::retry::RetryError> {
        if id.instance != self.id {
            return Err(crate::retry::RetryError::NoIncident(id));
        }
        let number = id.number;
        self.ask(|reply| Command::Retry {
            number,
            change,
            reply,
        })
        .await
        .unwrap_or(Err(crate::retry::RetryError::NoIncident(id)))
    }

    /// Complete the user task `node` (the earliest token waiting there): `update` is
    /// applied to the task's copy of the data, which the loop commits, and the token
    /// goes on. `node` is the process's typed reference (`LEAVE::user.approve`,
    /// module [`refs`](crate::refs)) or the user task's name as a string; a name the
    /// process has no user task of is [`WorkError::NoSuchUserTask`], listing those it
    /// has.
    ///
    /// ```
    /// # use thresh::{process, Engine, Outcome, ProcessData};
    /// # #[derive(Clone, Debug, Default, ProcessData)] pub struct Leave { pub approved: bool }
    /// process! {
    ///     pub LEAVE: Leave { start s; user approve; end e; s -> approve -> e; }
    /// }
    /// # #[tokio::main(flavor = "current_thread")] async fn main() {
    /// let handle = Engine::new().start(&LEAVE, Leave::default()).await.unwrap();
    /// while handle.open_work().await.is_empty() { tokio::task::yield_now().await; }
    /// handle.complete(LEAVE::user.approve, |l| l.approved = true).await.unwrap();
    /// assert!(handle.outcome().await.completed().unwrap().approved);
    /// # }
    /// ```
    pub async fn complete(
        &self,
        node: impl UserTaskRef<D>,
        update: impl FnOnce(&mut D) + Send + 'static,
    ) -> Result<(), WorkError> {
        let node = node.user_task().to_string();
        let update = Box::new(move |data: &mut Erased| update(data.data_mut::<D>()));
        let reply = self
            .ask(|reply| Command::Complete {
                node,
                update,
                reply,
            })
            .await;
        reply.unwrap_or(Err(WorkError::InstanceEnded))
    }

    /// Fail the user task `node`: the instance fails with
    /// [`InstanceError::TaskFailed`] naming it.
    pub async fn fail_work(
        &self,
        node: impl UserTaskRef<D>,
        message: impl Into<String>,
    ) -> Result<(), WorkError> {
        let (node, message) = (node.user_task().to_string(), message.into());
        let reply = self
            .ask(|reply| Command::FailWork {
                node,
                message,
                reply,
            })
            .await;
        reply.unwrap_or(Err(WorkError::InstanceEnded))
    }

    /// The user task `node` ends with a BPMN error, as a task's handler does with
    /// [`TaskError::bpmn`](crate::TaskError::bpmn): an error boundary on the user task
    /// catches it, else it travels outward scope by scope (an error event
    /// sub-process, a boundary on an enclosing sub-process); uncaught, the instance
    /// fails with [`InstanceError::UncaughtError`].
    ///
    /// ```
    /// # use thresh::{process, Engine, Outcome, ProcessData};
    /// # #[derive(Clone, Debug, Default, ProcessData)] struct Doc { note: String }
    /// process! {
    ///     REVIEW: Doc {
    ///         start begin;
    ///         user review;
    ///         boundary rejected on review: error("REJECTED", apply = |d, e: &thresh::events::BpmnError| d.note = e.message.clone());
    ///         end approved;
    ///         end returned;
    ///         begin -> review -> approved;
    ///         rejected -> returned;
    ///     }
    /// }
    /// # #[tokio::main(flavor = "current_thread")] async fn main() {
    /// let engine = Engine::new();
    /// let handle = engine.start(&REVIEW, Doc::default()).await.unwrap();
    /// # while handle.open_work().await.is_empty() { tokio::task::yield_now().await; }
    /// handle.raise_error(REVIEW::user.review, REVIEW::error.REJECTED, "missing a signature").await.unwrap();
    /// let Outcome::Completed(doc) = handle.outcome().await else { panic!() };
    /// assert_eq!(doc.note, "missing a signature");
    /// # }
    /// ```
    pub async fn raise_error(
        &self,
        node: impl UserTaskRef<D>,
        code: impl CodeRef<D, ForError>,
        message: impl Into<String>,
    ) -> Result<(), WorkError> {
        let raised = Raised::Error {
            code: code.code(),
            message: message.into(),
        };
        self.raise(node.user_task(), raised).await
    }

    /// The user task `node` raises an escalation, as a task's handler does with
    /// [`TaskError::escalate`](crate::TaskError::escalate): an escalation boundary on
    /// the user task, or further out, catches it — an interrupting one ends the user
    /// task, a non-interrupting one starts its path beside it and the user task stays
    /// open. Uncaught, it is no error and the user task stays open.
    pub async fn raise_escalation(
        &self,
        node: impl UserTaskRef<D>,
        code: impl CodeRef<D, ForEscalation>,
    ) -> Result<(), WorkError> {
        let raised = Raised::Escalation { code: code.code() };
        self.raise(node.user_task(), raised).await
    }

    async fn raise(&self, node: &str, raised: Raised) -> Result<(), WorkError> {
        let node = node.to_string();
        let reply = self
            .ask(|reply| Command::RaiseFromWork {
                node,
                raised,
                reply,
            })
            .await;
        reply.unwrap_or(Err(WorkError::InstanceEnded))
    }

    /// The earliest deadline among the instance's armed timers (timer catches,
    /// timer boundaries, timer event sub-process starts); `None` when none is armed
    /// or the instance has ended. Read-only: used by
    /// [`testing::advance_to_next_timer`](crate::testing::advance_to_next_timer).
    #[cfg(feature = "testing")]
    pub async fn next_timer(&self) -> Option<tokio::time::Instant> {
        self.ask(Command::NextTimer).await.flatten()
    }

    /// Send the loop a request and await its reply; `None` when the loop is gone.
    async fn ask<T>(
        &self,
        request: impl FnOnce(oneshot::Sender<T>) -> Command<Erased>,
    ) -> Option<T> {
        let (reply, answer) = oneshot::channel();
        if !self.send(request(reply)) {
            return None;
        }
        answer.await.ok()
    }

    /// Send the loop a command: whether a loop took it.
    fn send(&self, command: Command<Erased>) -> bool {
        self.commands.send(Input::Handle(Box::new(command))).is_ok()
    }

    /// Link this (resumed) child to its resumed parent's call activity again.
    #[cfg(feature = "durable")]
    pub(crate) fn adopt(&self, link: super::call_link::ParentLink) {
        let _ = self.send(Command::Adopt(link));
    }

    /// Ask the instance to stop. Running handlers are dropped at their next await;
    /// the outcome becomes [`Outcome::Cancelled`]. No effect on an ended instance.
    pub fn cancel(&self) {
        let _ = self.send(Command::Cancel(None));
    }

    fn ended(&self) -> Option<FinishedRef<'_>> {
        self.ending.finished()
    }

    /// The instance's end, once it ended; why it left none otherwise.
    pub(crate) async fn wait_finished(&self) -> Result<FinishedRef<'_>, InstanceError> {
        self.ending.wait_finished().await
    }
}
