//! A track's task: where a token's work goes when it has to wait, and where a token
//! waiting for an event parks.
//!
//! The loop decides where a token goes and starts the work at an activity itself: a
//! handler runs on the loop until it first has to wait (no hop, no spawn for work
//! that is ready). Work that waits is handed to the track's own tokio task, spawned
//! the first time the track needs one. The task parks on its single-slot channel
//! ([`ParkSender`](super::park::ParkSender)), of which the loop is the only sender and the only closer: an
//! instruction wakes it, a closed channel ends it. A token waiting for an event (a catch, a
//! receive or user task, an event-based gateway) parks the same way: producers never
//! reach the track; the loop flips it out of its parked set and sends it the event.
//! It never reads instance state and reports back only by sending on the loop's intake.

use std::any::Any;
use std::future::Future;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::pin::Pin;
use std::task::{Context, Poll};

use crate::data::DataPanic;
use crate::data::{ProcessData, TaskError};
use crate::graph::{NodeIdx, TaskRun};
use crate::instance::input::{Input, Report};
use crate::instance::outcome::panic_message;
use crate::instance::park::{Instruction, Parcel, ParkReceiver};
use crate::instance::state::ids::TrackId;
use crate::instance::InstanceError;
use crate::mem::cell::Base;
use crate::mem::intake::Intake;

/// The body of a track's task.
pub(crate) async fn run<D: ProcessData>(
    track: TrackId,
    mut inbox: ParkReceiver<D>,
    intake: Intake<Input<D>>,
) {
    loop {
        // The instruction lives only in this block: what the task's state holds
        // across a handler's awaits is the node, the snapshot and the run, nothing
        // more (this future is part of every parked token's memory).
        let (node, base, run, deadline) = {
            let Ok(Parcel { instruction, next }) = (&mut inbox).await else {
                return; // the loop closed the channel
            };
            inbox = next;
            match instruction {
                Instruction::Finish {
                    node,
                    base,
                    run,
                    deadline,
                } => (node, base, run, deadline),
                Instruction::Deliver { node, base, apply } => {
                    // The copy too: the data type's `Clone` may panic.
                    let outcome = catch_unwind(AssertUnwindSafe(|| {
                        let mut edited = D::clone(&base);
                        let result = apply.map_or(Ok(()), |apply| apply(&mut edited));
                        (edited, result)
                    }));
                    if !report(&intake, track, node, base, outcome) {
                        return;
                    }
                    continue;
                }
            }
        };
        let outcome = match deadline {
            None => CatchUnwind(run).await,
            // Boxed: a parked token's future holds only a pointer for it.
            Some(deadline) => {
                match Box::pin(tokio::time::timeout_at(deadline, CatchUnwind(run))).await {
                    Ok(outcome) => outcome,
                    Err(_) => {
                        // The run is dropped: the attempt is cancelled at its await.
                        let timed_out = Report::TimedOut { track, node };
                        if intake.send(Input::Track(Box::new(timed_out))).is_err() {
                            return;
                        }
                        continue;
                    }
                }
            }
        };
        if !report(&intake, track, node, base, outcome) {
            return; // the instance ended while we worked
        }
    }
}

/// Tell the loop how the work at `node` went; `false` if the instance has ended.
fn report<D>(
    intake: &Intake<Input<D>>,
    track: TrackId,
    node: NodeIdx,
    base: Base<D>,
    outcome: Result<RunOutput<D>, Box<dyn Any + Send>>,
) -> bool {
    let report = match outcome {
        Ok((edited, result)) => Report::TaskDone {
            track,
            node,
            base,
            edited,
            result,
        },
        // The data type's own code (its `Clone`, diff or merge) fails the
        // instance naming it, not the task.
        Err(panic) if panic.is::<DataPanic>() => Report::DataPanicked {
            track,
            node,
            error: InstanceError::of_loop_panic(panic),
        },
        Err(panic) => Report::TaskPanicked {
            track,
            node,
            message: panic_message(panic),
        },
    };
    intake.send(Input::Track(Box::new(report))).is_ok()
}

/// What a task's run gives back: the task's copy and the handler's result.
pub(crate) type RunOutput<D> = (D, Result<(), TaskError>);

/// What a run's first poll gave: the task's copy alone when the handler returned
/// `Ok` (the common case), with the error when it failed.
///
/// Kept apart from `RunOutput` so the loop reads back only what the handler wrote:
/// a ready `Ok` is the copy and a tag in the poll's result, and moving the whole
/// `(D, Result<(), TaskError>)` loaded 16-byte pieces over the tag's 8-byte store
/// — a store-forwarding stall on every task run.
pub(crate) enum FirstPoll<D> {
    /// The run has to wait (or it panicked: `task::within` says which).
    Pending,
    /// Ready, `Ok`: the task's copy.
    Ok(D),
    /// Ready, with the handler's error.
    Failed(D, TaskError),
}

impl<D> FirstPoll<D> {
    /// The output as the general path takes it: `None` while the run waits.
    pub fn into_output(self) -> Option<RunOutput<D>> {
        match self {
            FirstPoll::Pending => None,
            FirstPoll::Ok(edited) => Some((edited, Ok(()))),
            FirstPoll::Failed(edited, error) => Some((edited, Err(error))),
        }
    }
}

/// Poll a task's run once, on the caller's task (inside `task::within`, which
/// catches a panic): what it gave goes to `output`. When it has to wait, it
/// continues on a track, whose first poll registers the track's own waker, so the
/// no-op waker here loses no wake-up.
#[inline(always)]
pub(crate) fn poll_once<D>(run: &mut TaskRun<D>, output: &mut FirstPoll<D>) {
    let mut cx = Context::from_waker(std::task::Waker::noop());
    let polled = match run.as_mut().poll(&mut cx) {
        Poll::Ready((edited, Ok(()))) => FirstPoll::Ok(edited),
        Poll::Ready((edited, Err(error))) => FirstPoll::Failed(edited, error),
        Poll::Pending => return,
    };
    // The slot is the caller's fresh `Pending`: there is nothing in it to drop (an
    // assignment would call the output's drop glue on every step).
    std::mem::forget(std::mem::replace(output, polled));
}

/// A future that turns a panic while polling the inner one into an error, so a
/// panicking handler fails its task (naming it) instead of killing the track, and
/// a loop that panicked leaves an end that says so.
pub(super) struct CatchUnwind<F>(pub F);

impl<F: Future + Unpin> Future for CatchUnwind<F> {
    type Output = Result<F::Output, Box<dyn Any + Send>>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        match catch_unwind(AssertUnwindSafe(|| Pin::new(&mut self.0).poll(cx))) {
            Ok(Poll::Pending) => Poll::Pending,
            Ok(Poll::Ready(output)) => Poll::Ready(Ok(output)),
            Err(panic) => Poll::Ready(Err(panic)),
        }
    }
}
