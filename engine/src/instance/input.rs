//! What the loop hears on its one intake: reports from its tracks, requests from its
//! handles, and deliveries from the engine's hub.

use tokio::sync::oneshot;

use super::handle::{OpenWork, WorkError};
use super::history::History;
use super::intake::Intake;
use super::track::Report;

/// Everything the loop hears, on its one intake channel: reports from its tracks and
/// requests from handles.
///
/// Each variant is boxed, so an entry of the intake stays small.
pub(crate) enum Input<D> {
    Track(Box<Report<D>>),
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
    /// The user task `node` raises a BPMN error or an escalation.
    RaiseFromWork {
        node: String,
        raised: Raised,
        reply: oneshot::Sender<Result<(), WorkError>>,
    },
    FailWork {
        node: String,
        message: String,
        reply: oneshot::Sender<Result<(), WorkError>>,
    },
}

/// What a user task raises through its handle.
pub(crate) enum Raised {
    /// A BPMN error: it ends the user task, caught or not.
    Error { code: String, message: String },
    /// An escalation: caught beside it, or not at all, the user task stays open.
    Escalation { code: String },
}
