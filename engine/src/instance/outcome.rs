//! How an instance ends: its outcome, and why it failed (its id is `state::ids`').

use std::any::Any;

use super::history::History;

pub use super::state::ids::InstanceId;

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
    /// The instance failed; the data as committed then is on [`InstanceHandle::data`](crate::InstanceHandle::data).
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

/// How an instance ended: the outcome's kind, and a failure's error. The outcome
/// itself, with its copy of the data, is built when it is read
/// (`FinishedRef::outcome`): the data in it is the data at the end, since no commit
/// comes after it (every track is gone by then). So an instance's end costs no box
/// and no copy of the data, and the field costs a parked instance 16 bytes.
#[derive(Debug)]
pub(crate) enum Ended {
    Completed,
    Terminated,
    Cancelled,
    Failed(Box<InstanceError>),
}

impl Ended {
    /// A failure.
    pub fn failed(error: InstanceError) -> Self {
        Ended::Failed(Box::new(error))
    }

    /// The outcome, with `data` the data at the end.
    pub fn outcome<D>(&self, data: impl FnOnce() -> D) -> Outcome<D> {
        match self {
            Ended::Completed => Outcome::Completed(data()),
            Ended::Terminated => Outcome::Terminated(data()),
            Ended::Cancelled => Outcome::Cancelled(data()),
            Ended::Failed(error) => Outcome::Failed((**error).clone()),
        }
    }

    /// The outcome's kind, as [`Outcome::kind`] names it.
    pub fn kind(&self) -> &'static str {
        match self {
            Ended::Completed => "completed",
            Ended::Terminated => "terminated",
            Ended::Cancelled => "cancelled",
            Ended::Failed(_) => "failed",
        }
    }
}

/// Why an instance failed. Each variant names the node at fault.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
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
    /// A BPMN error that no boundary caught (ARCHITECTURE.md, "Events").
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
    /// A split found no true condition and had no default flow (ARCHITECTURE.md, "Joins").
    #[error(
        "`{node}` has no outgoing flow to take: no condition is true and there is no default flow"
    )]
    NoFlowTaken {
        /// The gateway or activity.
        node: &'static str,
    },
    /// Every activation triple of a complex join became provably unsatisfiable: its
    /// count or a required flow can no longer be reached (ARCHITECTURE.md, "Joins").
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
    #[error("internal error at `{node}`: {what} (a bug in thresh — please report it)")]
    Internal {
        /// The node the loop was handling.
        node: &'static str,
        /// What broke.
        what: &'static str,
    },
    /// A durable instance's state could not be stored (its data did not serialise,
    /// or the store refused the write — a full disk, an I/O error): it stops rather
    /// than run on with what a restart could not restore.
    #[error("the instance's checkpoint could not be stored: {message}")]
    Checkpoint {
        /// What went wrong.
        message: String,
    },
    /// The instance's loop stopped without reporting an outcome (a bug in thresh).
    #[error("the instance's loop stopped without an outcome")]
    Lost,
    /// The process data type's own code panicked while the engine ran it outside
    /// any handler — its `Clone` (a task's copy, a snapshot), its `PartialEq` or
    /// its merge (a commit): the instance stopped there, its data and history gone.
    #[error("the process data's {call} of `{data_type}` panicked: {message}")]
    DataPanicked {
        /// What the engine called: `Clone`, `diff` (its `PartialEq`) or `merge`.
        call: &'static str,
        /// The data type.
        data_type: &'static str,
        /// The panic message.
        message: String,
    },
    /// The instance's loop panicked outside any user code: a bug in thresh.
    #[error("the instance's loop panicked (a bug in thresh — please report it): {message}")]
    LoopPanicked {
        /// The panic message.
        message: String,
    },
    /// `Engine::start` was called for a process without a none start event (it only
    /// starts by its events: deploy it).
    #[error("the process has no none start event: it starts by its events — deploy it with Engine::deploy")]
    NoNoneStart,
    /// `Engine::start` was called outside a tokio runtime.
    #[error("no tokio runtime: start instances from within a tokio runtime")]
    NoRuntime,
    /// A call activity would run its child deeper than the engine's
    /// [`max_call_depth`](crate::EngineConfig::max_call_depth) (a process calling
    /// itself, directly or through others, without end).
    #[error("call activity `{node}` would start `{callee}` {depth} calls deep; the engine allows at most {limit} (EngineConfig::max_call_depth)")]
    CallDepthExceeded {
        /// The call activity.
        node: &'static str,
        /// The process it calls.
        callee: &'static str,
        /// How deep the child would run.
        depth: u32,
        /// The engine's limit.
        limit: u32,
    },
    /// A call activity could not start its child (the engine is gone, or a durable
    /// engine has not registered the called process).
    #[error("call activity `{node}` could not start `{callee}`: {reason}")]
    CallNotStarted {
        /// The call activity.
        node: &'static str,
        /// The process it calls.
        callee: &'static str,
        /// Why.
        reason: String,
    },
    /// A durable instance moved to another engine node (this node's lease on it
    /// expired and another node took it over): this node stopped running it, the
    /// store still holds it as running and the new owner goes on with it. Await its
    /// outcome from the store (`DurableEngine::watch`).
    #[error("the instance moved to another node ({message}): this node stopped running it")]
    Moved {
        /// The store's refusal, naming the new owner.
        message: String,
    },
    /// A durable instance was migrated to another version of its process whose data
    /// is of another type (`DurableEngine::migrate`, feature `durable`): it goes on
    /// there, and a handle typed with the old version's data can no longer read it.
    /// Read it through a query of the new version (`Query::of`).
    #[error("the instance was migrated to version {version} of its process, whose data is of another type")]
    Migrated {
        /// The version it runs on now.
        version: u32,
    },
    /// A durable instance lost its store's connection while committing a checkpoint
    /// or its end, and could not learn whether it was stored (the server did not
    /// answer again in time): this engine stopped running it without writing more.
    /// The store holds it as running, at that checkpoint or the one before (or as
    /// ended, if the end was stored): a resume — a restart, or on a node of several a
    /// takeover once this node stops — goes on from there. Read it back by its id.
    #[error("whether the instance's checkpoint was stored is unknown ({message}): this engine stopped running it; a resume goes on from what the store holds")]
    Unknown {
        /// What the store said.
        message: String,
    },
}

/// What the loop publishes when the instance ends.
pub(crate) struct Finished<D> {
    /// How it ended: with `data`, its outcome (`FinishedRef::outcome`).
    pub ended: Ended,
    pub history: History,
    /// The data at the end.
    pub data: D,
    /// A resumed child that ended before its parent's resumed call adopted it: the
    /// escalations it raised meanwhile, for the call to raise now (`None` otherwise;
    /// boxed, as the end is kept inline in every instance's `Ending`).
    // One pointer where a `Vec` is three: every instance's `Ending` holds a `Finished`.
    #[allow(clippy::box_collection)]
    pub unsent: Option<Box<Vec<String>>>,
}

/// The message of a panic payload (a handler's, a condition's, a key's): what an
/// error naming the node says.
pub(crate) fn panic_message(panic: Box<dyn Any + Send>) -> String {
    match panic.downcast::<String>() {
        Ok(s) => *s,
        Err(panic) => match panic.downcast::<&'static str>() {
            Ok(s) => (*s).to_string(),
            Err(_) => "a non-string panic payload".to_string(),
        },
    }
}

impl InstanceError {
    /// Why a loop that panicked outside any handler stopped: the data type's call
    /// that panicked (`data::DataPanic`), or a bug in thresh.
    pub(crate) fn of_loop_panic(panic: Box<dyn Any + Send>) -> Self {
        match panic.downcast::<crate::data::DataPanic>() {
            Ok(data) => InstanceError::DataPanicked {
                call: data.call,
                data_type: data.data_type,
                message: data.message,
            },
            Err(panic) => InstanceError::LoopPanicked {
                message: panic_message(panic),
            },
        }
    }
}
