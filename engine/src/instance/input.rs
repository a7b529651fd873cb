//! What the loop hears on its one intake: reports from its tracks, requests from its
//! handles, and deliveries from the engine's hub.

use tokio::sync::oneshot;

use super::history::History;
use super::work::{OpenWork, Raised, WorkError, WorkUpdate};
use crate::mem::intake::Intake;

use crate::data::TaskError;
use crate::graph::NodeIdx;

use super::state::ids::TrackId;
use crate::mem::cell::Base;

/// Everything the loop hears, on its one intake channel: reports from its tracks and
/// requests from handles.
///
/// Each variant is boxed, so an entry of the intake stays small.
pub(crate) enum Input<D> {
    Track(Box<Report<D>>),
    Handle(Box<Command<D>>),
    Event(Box<crate::events::Delivery>),
    /// A checkpoint of this instance could not be written.
    #[cfg(feature = "durable")]
    CheckpointFailed(Box<crate::store::StoreError>),
    /// The checkpoint recording the completions before these task starts is stored:
    /// their handlers may run now.
    #[cfg(feature = "durable")]
    Checkpointed(Vec<(TrackId, NodeIdx)>),
    /// Checkpoint number `n` of this instance is stored (sent only when the engine
    /// evicts idle instances: an instance is evicted only once its state is stored).
    #[cfg(feature = "durable")]
    Stored(u64),
    /// Nothing to do: posted to an evicted instance's intake to load it (one of its
    /// timers fell due), so its restored timers fire.
    #[cfg(feature = "durable")]
    Wake,
}

impl<D: crate::ProcessData> crate::events::Mailbox for Intake<Input<D>> {
    fn post(&self, delivery: crate::events::Delivery) -> bool {
        self.send(Input::Event(Box::new(delivery))).is_ok()
    }

    #[cfg(feature = "durable")]
    fn queue_id(&self) -> usize {
        Intake::queue_id(self)
    }
}

/// Requests from a handle to its instance's loop.
pub(crate) enum Command<D> {
    /// Stop the instance: it ends cancelled. `reply`, if any, hears `Ok` once it is
    /// (a durable one's end stored), `InstanceEnded` if it had ended already
    /// (`Engine::cancel_instance`; a handle's cancel asks for no answer).
    Cancel(Option<oneshot::Sender<Result<(), WorkError>>>),
    /// The ids of the children of working call activities.
    Children(oneshot::Sender<Vec<super::call_link::ChildEntry>>),
    /// A resumed parent's call waits on this (resumed) instance again: its link to
    /// the parent's call activity.
    #[cfg(feature = "durable")]
    Adopt(super::call_link::ParentLink),
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
    /// Act on the open task `TaskWork::number` (the task list).
    Task(crate::tasklist::TaskWork),
    /// The instance's open incidents.
    Incidents(oneshot::Sender<Vec<crate::retry::Incident>>),
    /// Retry incident `number`, changing the data first if `change` says.
    Retry {
        number: u32,
        change: Option<crate::retry::RetryChange>,
        reply: oneshot::Sender<Result<(), crate::retry::RetryError>>,
    },
    /// Leave memory as soon as the instance rests (a migration takes it:
    /// `engine/durable/migrate.rs`), whatever the engine's idle time.
    #[cfg(feature = "durable")]
    Evict,
    /// The earliest deadline of the instance's armed timers (feature `testing`:
    /// read-only, for advancing a paused clock to it).
    #[cfg(feature = "testing")]
    NextTimer(oneshot::Sender<Option<tokio::time::Instant>>),
}

/// What a track tells the loop.
pub(crate) enum Report<D> {
    /// The handler of the task at `node` returned; `edited` is the task's copy of the
    /// data, taken from `base`.
    TaskDone {
        track: TrackId,
        node: NodeIdx,
        base: Base<D>,
        edited: D,
        result: Result<(), TaskError>,
    },
    /// The handler of the task at `node` panicked.
    TaskPanicked {
        track: TrackId,
        node: NodeIdx,
        message: String,
    },
    /// The attempt of the task at `node` ran past its timeout and was dropped.
    TimedOut { track: TrackId, node: NodeIdx },
    /// The data type's own code (`Clone`, diff, merge) panicked on the track
    /// working at `node` (`InstanceError::DataPanicked`).
    DataPanicked {
        track: TrackId,
        node: NodeIdx,
        error: super::outcome::InstanceError,
    },
    /// The child of the call activity at `node` told it something: an escalation it
    /// did not catch (raised at the call activity; the child goes on), or after a
    /// restart the id of a child started again.
    Child {
        track: TrackId,
        node: NodeIdx,
        note: super::call_link::ChildNote,
    },
}
