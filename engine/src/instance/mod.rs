//! A running process instance: its handle (public, here), its loop (`event_loop`:
//! the single writer of all instance state, and the routing of tokens), its joins
//! (`join`), its scopes (`scope`: sub-processes, event sub-processes, and how errors
//! travel outward), its waits for events (`waits`), its tracks (`track`) and its
//! history.

mod ending;
mod event_loop;
pub(crate) mod history;
mod intake;
mod join;
mod scope;
mod track;
mod waits;

use std::fmt;
use std::sync::Arc;

use tokio::sync::oneshot;

use ending::Ending;
pub(crate) use ending::Publisher;
pub(crate) use intake::{channel as intake_channel, Intake};

pub(crate) use event_loop::{spawn, Birth, Entry};
pub use history::{Happening, History, Step, TrackId};

/// Identifies an instance within its engine.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct InstanceId(pub u64);

impl fmt::Display for InstanceId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "i{}", self.0)
    }
}

/// How an instance ended.
#[derive(Clone, Debug, PartialEq)]
pub enum Outcome<D> {
    /// Every track reached an end event; the final process data.
    Completed(D),
    /// A terminate end event ended the instance; the data as committed then.
    Terminated(D),
    /// The instance was cancelled through its handle or by an engine shutdown; the
    /// data as committed then.
    Cancelled(D),
    /// The instance failed; the data as committed then is on [`InstanceHandle::data`].
    Failed(InstanceError),
}

impl<D> Outcome<D> {
    /// The final data of a completed instance.
    pub fn completed(self) -> Option<D> {
        match self {
            Outcome::Completed(d) => Some(d),
            _ => None,
        }
    }

    /// The error of a failed instance.
    pub fn error(&self) -> Option<&InstanceError> {
        match self {
            Outcome::Failed(e) => Some(e),
            _ => None,
        }
    }

    /// A one-word name of the outcome, for printing.
    pub fn kind(&self) -> &'static str {
        match self {
            Outcome::Completed(_) => "completed",
            Outcome::Terminated(_) => "terminated",
            Outcome::Cancelled(_) => "cancelled",
            Outcome::Failed(_) => "failed",
        }
    }
}

/// Why an instance failed. Each variant names the node at fault.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum InstanceError {
    /// A task's handler returned an error.
    #[error("task `{node}` failed: {message}")]
    TaskFailed {
        /// The task.
        node: &'static str,
        /// The handler's error, displayed.
        message: String,
    },
    /// A task's handler panicked.
    #[error("task `{node}` panicked: {message}")]
    TaskPanicked {
        /// The task.
        node: &'static str,
        /// The panic message.
        message: String,
    },
    /// A BPMN error that no boundary caught (ADR-006 §2.6).
    #[error("BPMN error `{code}` at `{node}` was not caught: {message}")]
    UncaughtError {
        /// Where it was thrown: an error end event, or the task whose handler
        /// returned it.
        node: &'static str,
        /// The error code.
        code: String,
        /// The handler's message (empty for an error end event).
        message: String,
    },
    /// A split found no true condition and had no default flow (ADR-005 §2.8, §2.9).
    #[error(
        "`{node}` has no outgoing flow to take: no condition is true and there is no default flow"
    )]
    NoFlowTaken {
        /// The gateway or activity.
        node: &'static str,
    },
    /// Every activation triple of a complex join became provably unsatisfiable: its
    /// count or a required flow can no longer be reached (ADR-005 §2.11).
    #[error("complex gateway `{node}` can never activate: every activation's count or required flow is out of reach")]
    ActivationUnsatisfiable {
        /// The complex gateway.
        node: &'static str,
    },
    /// No more tokens can reach a complex join and no activation's condition held.
    #[error("complex gateway `{node}`: arrivals exhausted, no activation matched")]
    ArrivalsExhausted {
        /// The complex gateway.
        node: &'static str,
    },
    /// A flow condition panicked while the loop evaluated it.
    #[error("the condition on the flow `{from}` -> `{to}` panicked: {message}")]
    ConditionPanicked {
        /// Source of the flow.
        from: &'static str,
        /// Target of the flow.
        to: &'static str,
        /// The panic message.
        message: String,
    },
    /// Every remaining token waits at a join that can no longer fire (for example a
    /// parallel join fed by an exclusive split), and no event can still change that:
    /// no token waits for one, and no message, signal or timer of an event
    /// sub-process or of a boundary on a sub-process is armed (its run might).
    #[error("deadlock: tokens wait at {joins:?} and no other token can reach them")]
    Deadlock {
        /// The joins where tokens wait.
        joins: Vec<&'static str>,
    },
    /// The condition of a complex gateway's activation panicked.
    #[error("an activation condition of complex gateway `{node}` panicked: {message}")]
    ActivationConditionPanicked {
        /// The complex gateway.
        node: &'static str,
        /// The panic message.
        message: String,
    },
    /// An invariant of the engine broke — a bug in thresh, never the process's fault.
    #[error("internal error: {what} (a bug in thresh — please report it)")]
    Internal {
        /// What broke.
        what: &'static str,
    },
    /// The instance's loop stopped without reporting an outcome (a bug in thresh).
    #[error("the instance's loop stopped without an outcome")]
    Lost,
    /// `Engine::start` was called for a process without a none start event (it only
    /// starts by its events: deploy it).
    #[error("the process has no none start event: it starts by its events — deploy it with Engine::deploy")]
    NoNoneStart,
    /// `Engine::start` was called outside a tokio runtime.
    #[error("no tokio runtime: start instances from within a tokio runtime")]
    NoRuntime,
}

/// What the loop publishes when the instance ends.
pub(crate) struct Finished<D> {
    pub outcome: Outcome<D>,
    pub history: History,
    pub data: D,
}

/// Everything the loop hears, on its one intake channel: reports from its tracks and
/// requests from handles.
///
/// Each variant is boxed, so an entry of the intake stays small.
pub(crate) enum Input<D> {
    Track(Box<track::Report<D>>),
    Handle(Box<Command<D>>),
    Event(Box<crate::events::Delivery>),
}

impl<D: crate::ProcessData> crate::events::Mailbox for Intake<Input<D>> {
    fn post(&self, delivery: crate::events::Delivery) -> bool {
        self.send(Input::Event(Box::new(delivery))).is_ok()
    }
}

/// How a user task's completion changes the data.
pub(crate) type WorkUpdate<D> = Box<dyn FnOnce(&mut D) + Send>;

/// Requests from a handle to its instance's loop.
pub(crate) enum Command<D> {
    Cancel,
    History(oneshot::Sender<History>),
    Data(oneshot::Sender<D>),
    OpenWork(oneshot::Sender<Vec<OpenWork>>),
    Complete {
        node: String,
        update: WorkUpdate<D>,
        reply: oneshot::Sender<Result<(), WorkError>>,
    },
    /// The user task `node` raises a BPMN error (`Some(message)`) or an escalation.
    RaiseFromWork {
        node: String,
        code: String,
        error: Option<String>,
        reply: oneshot::Sender<Result<(), WorkError>>,
    },
    FailWork {
        node: String,
        message: String,
        reply: oneshot::Sender<Result<(), WorkError>>,
    },
}

/// A user task waiting for completion from outside ([`InstanceHandle::complete`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OpenWork {
    /// The user task.
    pub node: &'static str,
    /// The track waiting there.
    pub track: TrackId,
}

/// Why a user task could not be completed or failed.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum WorkError {
    /// No token waits at a user task of that name.
    #[error("no open work at `{node}`: no token waits at a user task of that name")]
    NoOpenWork {
        /// The name asked for.
        node: String,
    },
    /// The instance has ended.
    #[error("the instance has ended")]
    InstanceEnded,
}

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
/// let handle = engine.start(&HELLO, Greeting::default());
/// let Outcome::Completed(data) = handle.outcome().await else { panic!() };
/// assert_eq!(data.text, "hello");
/// assert_eq!(handle.history().await.completed_tasks(), ["say"]);
/// # }
/// ```
pub struct InstanceHandle<D> {
    id: InstanceId,
    commands: Intake<Input<D>>,
    ending: Arc<Ending<D>>,
}

impl<D> Clone for InstanceHandle<D> {
    fn clone(&self) -> Self {
        Self {
            id: self.id,
            commands: self.commands.clone(),
            ending: Arc::clone(&self.ending),
        }
    }
}

impl<D: Clone> InstanceHandle<D> {
    /// A handle, and the publisher the instance's loop leaves its end with.
    pub(crate) fn new(id: InstanceId, commands: Intake<Input<D>>) -> (Self, Publisher<D>) {
        let (publisher, ending) = Ending::new();
        let handle = Self {
            id,
            commands,
            ending,
        };
        (handle, publisher)
    }

    /// A handle on an instance that ended before it began.
    pub(crate) fn ended_at_birth(
        id: InstanceId,
        commands: Intake<Input<D>>,
        finished: Finished<D>,
    ) -> Self {
        Self {
            id,
            commands,
            ending: Ending::ended(finished),
        }
    }

    /// The instance's id.
    pub fn id(&self) -> InstanceId {
        self.id
    }

    /// Wait for the instance to end and return how it ended. Can be awaited any
    /// number of times, from any number of clones of the outcome.
    pub async fn outcome(&self) -> Outcome<D> {
        match self.wait_finished().await {
            Some(f) => f.outcome.clone(),
            None => Outcome::Failed(InstanceError::Lost),
        }
    }

    /// Whether the instance has ended.
    pub fn is_finished(&self) -> bool {
        self.ending.get().is_some()
    }

    /// The history so far (the whole history once the instance has ended).
    pub async fn history(&self) -> History {
        if let Some(f) = self.ended() {
            return f.history.clone();
        }
        match self.ask(Command::History).await {
            Some(history) => history,
            // The loop ended between our look and our request.
            None => self
                .wait_finished()
                .await
                .map(|f| f.history.clone())
                .unwrap_or_default(),
        }
    }

    /// The process data as committed so far (the final data once ended, whatever the
    /// outcome). `None` only if the loop was lost.
    pub async fn data(&self) -> Option<D> {
        if let Some(f) = self.ended() {
            return Some(f.data.clone());
        }
        match self.ask(Command::Data).await {
            Some(data) => Some(data),
            None => self.wait_finished().await.map(|f| f.data.clone()),
        }
    }

    /// The user tasks waiting for completion, in the order they were reached.
    pub async fn open_work(&self) -> Vec<OpenWork> {
        self.ask(Command::OpenWork).await.unwrap_or_default()
    }

    /// Complete the user task `node` (the earliest token waiting there): `update` is
    /// applied to the task's copy of the data, which the loop commits, and the token
    /// goes on.
    ///
    /// ```
    /// # use thresh::{process, Engine, Outcome, ProcessData};
    /// # #[derive(Clone, Debug, Default, ProcessData)] pub struct Leave { pub approved: bool }
    /// process! {
    ///     pub LEAVE: Leave { start s; user approve; end e; s -> approve -> e; }
    /// }
    /// # #[tokio::main(flavor = "current_thread")] async fn main() {
    /// let handle = Engine::new().start(&LEAVE, Leave::default());
    /// while handle.open_work().await.is_empty() { tokio::task::yield_now().await; }
    /// handle.complete("approve", |l: &mut Leave| l.approved = true).await.unwrap();
    /// assert!(handle.outcome().await.completed().unwrap().approved);
    /// # }
    /// ```
    pub async fn complete(
        &self,
        node: &str,
        update: impl FnOnce(&mut D) + Send + 'static,
    ) -> Result<(), WorkError> {
        let (node, update) = (node.to_string(), Box::new(update));
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
    pub async fn fail_work(&self, node: &str, message: impl Into<String>) -> Result<(), WorkError> {
        let (node, message) = (node.to_string(), message.into());
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
    /// let handle = engine.start(&REVIEW, Doc::default());
    /// # while handle.open_work().await.is_empty() { tokio::task::yield_now().await; }
    /// handle.raise_error("review", "REJECTED", "missing a signature").await.unwrap();
    /// let Outcome::Completed(doc) = handle.outcome().await else { panic!() };
    /// assert_eq!(doc.note, "missing a signature");
    /// # }
    /// ```
    pub async fn raise_error(
        &self,
        node: &str,
        code: impl Into<String>,
        message: impl Into<String>,
    ) -> Result<(), WorkError> {
        self.raise(node, code.into(), Some(message.into())).await
    }

    /// The user task `node` raises an escalation, as a task's handler does with
    /// [`TaskError::escalate`](crate::TaskError::escalate): an escalation boundary on
    /// the user task, or further out, catches it — an interrupting one ends the user
    /// task, a non-interrupting one starts its path beside it and the user task stays
    /// open. Uncaught, it is no error and the user task stays open.
    pub async fn raise_escalation(
        &self,
        node: &str,
        code: impl Into<String>,
    ) -> Result<(), WorkError> {
        self.raise(node, code.into(), None).await
    }

    async fn raise(
        &self,
        node: &str,
        code: String,
        error: Option<String>,
    ) -> Result<(), WorkError> {
        let node = node.to_string();
        let reply = self
            .ask(|reply| Command::RaiseFromWork {
                node,
                code,
                error,
                reply,
            })
            .await;
        reply.unwrap_or(Err(WorkError::InstanceEnded))
    }

    /// Send the loop a request and await its reply; `None` when the loop is gone.
    async fn ask<T>(&self, request: impl FnOnce(oneshot::Sender<T>) -> Command<D>) -> Option<T> {
        let (reply, answer) = oneshot::channel();
        self.commands
            .send(Input::Handle(Box::new(request(reply))))
            .ok()?;
        answer.await.ok()
    }

    /// Ask the instance to stop. Running handlers are dropped at their next await;
    /// the outcome becomes [`Outcome::Cancelled`]. No effect on an ended instance.
    pub fn cancel(&self) {
        let _ = self.commands.send(Input::Handle(Box::new(Command::Cancel)));
    }

    fn ended(&self) -> Option<Arc<Finished<D>>> {
        self.ending.get().flatten()
    }

    async fn wait_finished(&self) -> Option<Arc<Finished<D>>> {
        self.ending.wait().await
    }
}
