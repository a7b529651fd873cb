//! A track's park channel: how the loop hands a track its next instruction, and the
//! instructions themselves.
//!
//! The loop is the only sender on a track's channel and its only closer: an
//! instruction wakes the parked track, a closed channel (its sender dropped with the
//! track's slot) ends it. ARCHITECTURE.md, "The instance loop".

use tokio::sync::oneshot;

use crate::data::TaskError;
use crate::graph::{NodeIdx, TaskRun};
use crate::mem::cell::Base;

/// A track's park channel, the loop's end: a single slot (a oneshot channel). Each
/// instruction travels with the receiving end of the next slot, so the track always
/// waits on exactly one one-slot channel — a track has at most one instruction
/// outstanding — and nothing sits idle in a multi-slot buffer (a parked instance's
/// memory is mostly what its waiting token holds). Dropping it closes the channel:
/// the parked track wakes and ends.
pub(crate) struct ParkSender<D>(oneshot::Sender<Parcel<D>>);

/// One instruction, and the slot the next will come in.
pub(crate) struct Parcel<D> {
    pub instruction: Instruction<D>,
    pub next: oneshot::Receiver<Parcel<D>>,
}

/// The track's end of its park channel.
pub(crate) type ParkReceiver<D> = oneshot::Receiver<Parcel<D>>;

impl<D> ParkSender<D> {
    /// A new park channel: the loop's end and the track's.
    pub fn new() -> (Self, ParkReceiver<D>) {
        let (tx, rx) = oneshot::channel();
        (ParkSender(tx), rx)
    }

    /// Send the track its next instruction; `false` if the track is gone.
    pub fn send(&mut self, instruction: Instruction<D>) -> bool {
        let (tx, next) = oneshot::channel();
        let slot = std::mem::replace(&mut self.0, tx);
        slot.send(Parcel { instruction, next }).is_ok()
    }
}

/// What the loop tells a parked track to do.
pub(crate) enum Instruction<D> {
    /// Finish a task's run, which the loop started and which had to wait; `base` is
    /// the snapshot the task's copy was taken from.
    Finish {
        node: NodeIdx,
        base: Base<D>,
        run: TaskRun<D>,
        /// When the attempt times out (the task's `timeout(..)`): the run is dropped
        /// and the track reports `TimedOut`.
        deadline: Option<tokio::time::Instant>,
    },
    /// The event the track was parked for came (the loop flipped it): apply what it
    /// brings (a payload, a user task's update) to a copy of `base`, for `node`.
    Deliver {
        node: NodeIdx,
        base: Base<D>,
        apply: Option<Apply<D>>,
    },
}

/// What a delivery does to the data.
pub(crate) type Apply<D> = Box<dyn FnOnce(&mut D) -> Result<(), TaskError> + Send>;
