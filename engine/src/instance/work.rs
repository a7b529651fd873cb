//! User tasks as the handle sees them: open work, what completing or raising from it
//! does, and why it can fail.

use super::state::ids::TrackId;

/// A user task waiting for completion from outside ([`InstanceHandle::complete`](crate::InstanceHandle::complete)).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OpenWork {
    /// The user task.
    pub node: &'static str,
    /// The track waiting there.
    pub track: TrackId,
    /// Which instance of its activity this work item is: for a multi-instance user
    /// task, the instance's index (from 0, the item's position in the collection);
    /// for a looped one, the runs before it; for a user task inside a multi-instance
    /// or looped sub-process, the sub-process instance's; in a compensation event
    /// sub-process undoing a run or an instance, that one's. `None` for a user task
    /// that runs once. The same as a task's [`TaskContext::iteration`](crate::task::TaskContext::iteration).
    pub iteration: Option<u32>,
}

/// Why a user task could not be completed or failed.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum WorkError {
    /// The process has a user task of that name, but no token waits there now.
    #[error("no open work at `{node}`: no token waits at that user task now")]
    NoOpenWork {
        /// The name asked for.
        node: String,
    },
    /// The process has no user task of that name (a string form misspelt, or the
    /// name of another kind of element): `known` lists the ones it has. The typed
    /// form (`ORDER::user.approve`, emitted by `process!`) cannot be misspelt.
    #[error("the process `{process}` has no user task `{node}` (its user tasks: {})", known_list(.known))]
    NoSuchUserTask {
        /// The name asked for.
        node: String,
        /// The instance's process.
        process: &'static str,
        /// The process's user tasks, in declaration order.
        known: Vec<&'static str>,
    },
    /// An interrupting boundary event of the user task (a message or a signal)
    /// came first: the user task is being interrupted, and this did not take effect.
    #[error("the user task `{node}` was interrupted by a boundary event first: this did not take effect")]
    Interrupted {
        /// The user task.
        node: String,
    },
    /// The instance has ended.
    #[error("the instance has ended")]
    InstanceEnded,
    /// A durable instance could not store the completion's effect: the instance
    /// fails, and the completion did not take effect.
    #[error("the completion could not be stored: {message}")]
    NotStored {
        /// What the store said.
        message: String,
    },
    /// A durable instance lost its store's connection while committing the
    /// completion's checkpoint and could not learn whether it was stored: this engine
    /// stopped running the instance, which stays stored as running — with the
    /// completion or without it (then the user task is open again) — until a resume
    /// runs it. Read the instance back before completing it again.
    #[error("whether the completion was stored is unknown: {message}")]
    Unknown {
        /// What the store said.
        message: String,
    },
}

/// What is asked of an open task by its id ([`crate::tasklist`]).
pub(crate) enum TaskAct {
    /// Complete it, changing the data first (a typed change, erased: `false` if
    /// the data is of another type).
    Complete(crate::retry::RetryChange),
    /// Fail it: the instance fails.
    Fail(String),
    /// Raise a BPMN error or an escalation from it.
    Raise(Raised),
}

/// Which open work a request names.
#[derive(Clone, Copy)]
pub(crate) enum WorkAt<'a> {
    /// The earliest token waiting at the user task of that name.
    Node(&'a str),
    /// The open task of that number (`TaskId::number`).
    Task(u32),
}

/// How a user task's completion changes the data.
pub(crate) type WorkUpdate<D> = Box<dyn FnOnce(&mut D) + Send>;

/// What a user task raises through its handle.
pub(crate) enum Raised {
    /// A BPMN error: it ends the user task, caught or not.
    Error { code: String, message: String },
    /// An escalation: caught beside it, or not at all, the user task stays open.
    Escalation { code: String },
}

/// `a, b, c`, or `none` for an empty list.
fn known_list(known: &[&str]) -> String {
    match known.is_empty() {
        true => "none".to_string(),
        false => known.join(", "),
    }
}
