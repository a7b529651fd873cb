//! A track: the tokio task that carries one token through the activities it reaches.
//!
//! The loop decides where a token goes; a track does the work at an activity. It
//! parks on its own single-slot channel, of which the loop is the only sender and
//! the only closer: an instruction wakes it, a closed channel ends it. It never
//! reads instance state and reports back only by sending on the loop's intake.

use std::sync::Arc;

use tokio::sync::mpsc;

use crate::data::{ProcessData, TaskError};
use crate::graph::{NodeIdx, TaskHandler};
use crate::instance::history::TrackId;

/// Capacity of a track's inbox. A track has at most one instruction outstanding —
/// the loop sends the next only after the track reported on the last — so one slot
/// is enough and the loop's `try_send` never finds it full.
pub(crate) const PARK_SLOT: usize = 1;

/// What the loop tells a parked track to do.
pub(crate) enum Instruction<D> {
    /// Run the task at `node` on a copy of `base`.
    Run {
        node: NodeIdx,
        handler: TaskHandler<D>,
        base: Arc<D>,
    },
}

/// What a track tells the loop.
pub(crate) enum Report<D> {
    /// The handler of the task at `node` returned; `edited` is the track's copy of the
    /// data, started from `base`.
    TaskDone {
        track: TrackId,
        node: NodeIdx,
        base: Arc<D>,
        edited: D,
        result: Result<(), TaskError>,
    },
}

/// The body of a track's task. A panic in a handler unwinds out of here; the loop
/// sees it through its `JoinSet` and fails the instance naming the task.
pub(crate) async fn run<D: ProcessData>(
    track: TrackId,
    mut inbox: mpsc::Receiver<Instruction<D>>,
    intake: mpsc::UnboundedSender<Report<D>>,
) {
    while let Some(instruction) = inbox.recv().await {
        match instruction {
            Instruction::Run {
                node,
                handler,
                base,
            } => {
                let mut edited = D::clone(&base);
                let result = handler(&mut edited).await;
                let report = Report::TaskDone {
                    track,
                    node,
                    base,
                    edited,
                    result,
                };
                if intake.send(report).is_err() {
                    // The loop is gone: the instance ended while we worked.
                    return;
                }
            }
        }
    }
}
