//! Call activities: a calling instance (the parent) runs another process as a child
//! instance in the same engine, and waits at the call activity until it ends.
//!
//! `process!` emits one starter per call activity ([`CallActivity`](crate::graph::CallActivity)):
//! a plain `fn` that maps the parent's data into the child's (the user's typed
//! `input`), starts the child through the [`Caller`] the parent's loop hands it, and
//! returns a [`ChildCall`]: the child's id, and the run that awaits the child's end
//! and maps its final data into the parent's copy (the typed `output`). The run is an
//! ordinary task run: the parent's loop hands it to the call's track and commits what
//! it returns as it commits a task's copy, so boundaries, scopes, merges and
//! multi-instance treat a call activity as any activity.
//!
//! How the child's end reaches the parent (README, "Call activities"):
//! completed or terminated → the output mapping, and the activity completes; an
//! uncaught BPMN error → the same error raised at the call activity; failed otherwise,
//! or cancelled from outside → the call activity fails as a task would. An escalation
//! the child does not catch is forwarded while the child runs (`ParentLink`) and
//! raised at the call activity. Dropping the run (the parent cancelled, an
//! interrupting boundary, the call's scope cancelled) cancels the child.

use std::future::Future;
use std::sync::Arc;

use tokio_util::sync::CancellationToken;

use crate::data::{Erased, ProcessData, TaskError};
use crate::graph::{Graph, Process, TaskRun};
use crate::instance::EngineRef;
use crate::instance::{ChildHandle, ChildNote, Notify, ParentLink};
use crate::instance::{InstanceError, InstanceHandle, InstanceId, Outcome};
use crate::loops::{Items, Output};

/// What a parent's loop gives a call activity's starter: where and as whose child
/// the called instance starts.
pub struct Caller {
    pub(crate) engine: EngineRef,
    pub(crate) link: ParentLink,
    /// The engine's stop: a child cancelled by a shutdown is not a failure of the
    /// call (the parent stops too).
    pub(crate) stop: CancellationToken,
    /// A durable parent resumed after a restart waits on the child its checkpoint
    /// recorded rather than starting another.
    #[cfg(feature = "durable")]
    pub(crate) resume: Option<InstanceId>,
}

/// A started call: the child's id (or why it could not start) and the run the
/// parent's track awaits.
pub struct ChildCall<D> {
    /// The child's id; `Ok(None)` when the engine is stopping (the run then waits
    /// for the stop); `Err` with why the child could not start.
    pub(crate) child: Result<Option<InstanceId>, String>,
    /// The child's handle (an `InstanceHandle<C>`, erased), for
    /// [`InstanceHandle::children_of`].
    pub(crate) handle: Option<ChildHandle>,
    pub(crate) run: TaskRun<D>,
}

/// Start `process` as a child of the caller with `input(parent)` as its data; the
/// run gives back the parent's copy with `output(copy, child's final data)` applied.
/// The bounds give the user's closures their parameter types.
pub fn call_child<D, C, I, O>(
    caller: Caller,
    process: &'static Process<C>,
    parent: &D,
    input: I,
    output: O,
) -> ChildCall<Erased>
where
    D: ProcessData,
    C: ProcessData,
    I: FnOnce(&D) -> C,
    O: FnOnce(&mut D, C) + Send + 'static,
{
    let copy = Erased::new(D::clone(parent));
    let data = Erased::new(input(parent));
    let output: MapOutput = Box::new(move |copy: &mut Erased, child: Erased| {
        output(copy.data_mut::<D>(), child.into_data::<C>())
    });
    start_call(caller, process.graph(), data, copy, output)
}

/// How a call's run maps the child's final data into the parent's copy, erased.
type MapOutput = Box<dyn FnOnce(&mut Erased, Erased) + Send>;

/// [`call_child`] past the typed edge: compiled once, for every data type.
fn start_call(
    caller: Caller,
    process: &'static Graph<Erased>,
    data: Erased,
    copy: Erased,
    output: MapOutput,
) -> ChildCall<Erased> {
    let Caller {
        engine,
        link,
        stop,
        #[cfg(feature = "durable")]
        resume,
    } = caller;
    #[cfg(feature = "durable")]
    if let Some(recorded) = resume {
        return resumed_call(engine, link, stop, process, recorded, data, copy, output);
    }
    let child = match engine.start_child(process, data, link) {
        Ok(Some(child)) => child,
        Ok(None) => {
            return ChildCall {
                child: Ok(None),
                handle: None,
                run: Box::pin(async move {
                    let _ = &copy;
                    match never().await {}
                }),
            }
        }
        Err(reason) => {
            return ChildCall {
                child: Err(reason),
                handle: None,
                run: Box::pin(async move { (copy, Ok(())) }),
            }
        }
    };
    let id = child.id();
    let handle: ChildHandle = Arc::new(child.clone());
    let run = awaited(child, id, process.name, stop, copy, output, None);
    ChildCall {
        child: Ok(Some(id)),
        handle: Some(handle),
        run: Box::pin(run),
    }
}

/// One instance of a multi-instance call activity: the child starts with
/// `input(parent, item, index)` (the item typed by the `each` expression, passed
/// again and never called), and its final data is also the instance's output, for
/// the activity's `output = |data, index, child| ...` merged in index order (`tx`,
/// when the marker has one) — after the call's own `output` mapping is applied.
#[allow(clippy::too_many_arguments)]
pub fn call_child_item<D, C, E, Coll, I, O>(
    caller: Caller,
    process: &'static Process<C>,
    parent: &D,
    _each: &E,
    (items, index): (&Items, usize),
    input: I,
    output: O,
    tx: Option<Output>,
) -> ChildCall<Erased>
where
    D: ProcessData,
    C: ProcessData,
    E: FnOnce(&D) -> Coll,
    Coll: IntoIterator,
    Coll::Item: 'static,
    I: FnOnce(&D, &Coll::Item, usize) -> C,
    O: FnOnce(&mut D, C) + Send + 'static,
{
    let Some(item) = items
        .typed::<Coll::Item>()
        .and_then(|items| items.get(index))
    else {
        return ChildCall {
            child: Err("internal: a multi-instance item was missing or of another type".into()),
            handle: None,
            run: Box::pin(std::future::ready((Erased::new(D::clone(parent)), Ok(())))),
        };
    };
    let data = input(parent, item, index);
    let output = move |copy: &mut D, child: C| {
        if let Some(tx) = tx {
            let _ = tx.send(Box::new(child.clone()));
        }
        output(copy, child);
    };
    call_child(caller, process, parent, move |_| data, output)
}

/// The output type of a multi-instance call activity's instances: the called
/// process's data (the process is passed to name it).
#[doc(hidden)]
pub fn child_output_type<C>(_process: &'static Process<C>) -> std::marker::PhantomData<fn() -> C> {
    std::marker::PhantomData
}

/// The run of a call: wait for the child's end and map it into the parent's copy.
/// `unadopted`: a resumed child's call, told the escalations the child raised if it
/// ended before it was adopted (before the end, so the call still works when they
/// reach the parent's loop).
fn awaited(
    child: InstanceHandle<Erased>,
    id: InstanceId,
    name: &'static str,
    stop: CancellationToken,
    copy: Erased,
    output: MapOutput,
    unadopted: Option<Notify>,
) -> impl Future<Output = (Erased, Result<(), TaskError>)> + Send + 'static {
    // Made before the run, so a run dropped before its first poll (its track
    // removed while the instruction was on its way) cancels the child too.
    let guard = CancelOnDrop(Some(child.clone()));
    async move {
        let outcome = match child.wait_finished().await {
            Ok(finished) => {
                if let Some(notify) = unadopted {
                    for code in finished.unsent {
                        notify(ChildNote::Escalated(code.clone()));
                    }
                }
                finished.outcome(|data| data.to_erased())
            }
            Err(error) => Outcome::Failed(error),
        };
        drop(guard.disarm());
        settle(outcome, id, name, &stop, copy, output).await
    }
}

/// How the child's end ends the call: the output mapped into the parent's copy, or
/// the error the call activity raises or fails with.
async fn settle(
    outcome: Outcome<Erased>,
    id: InstanceId,
    name: &'static str,
    stop: &CancellationToken,
    mut copy: Erased,
    output: MapOutput,
) -> (Erased, Result<(), TaskError>) {
    let result = match outcome {
        Outcome::Completed(data) | Outcome::Terminated(data) => {
            output(&mut copy, data);
            Ok(())
        }
        Outcome::Failed(InstanceError::UncaughtError { code, message, .. }) => {
            Err(TaskError::Bpmn { code, message })
        }
        Outcome::Failed(error) => Err(TaskError::new(format!(
            "the called instance {id} of `{name}` failed: {error}"
        ))),
        Outcome::Cancelled(_) if stop.is_cancelled() => {
            // The engine stops: the parent stops with it (a durable one stays
            // stored as running, waiting on its stored child).
            match never().await {}
        }
        Outcome::Cancelled(_) => Err(TaskError::new(format!(
            "the called instance {id} of `{name}` was cancelled"
        ))),
    };
    (copy, result)
}

/// A resumed parent's call: wait on the child its checkpoint recorded — resumed
/// beside it, or ended while the engine was down (its stored end is mapped), or
/// never stored (a crash between the parent's checkpoint and the child's first:
/// the call starts the child again, at least once).
#[cfg(feature = "durable")]
#[allow(clippy::too_many_arguments)]
fn resumed_call(
    engine: EngineRef,
    link: ParentLink,
    stop: CancellationToken,
    process: &'static Graph<Erased>,
    recorded: InstanceId,
    data: Erased,
    copy: Erased,
    output: MapOutput,
) -> ChildCall<Erased> {
    use crate::instance::Resumed;
    let name = process.name;
    let run = async move {
        match engine.resumed_child(process, recorded).await {
            Resumed::Running(child) => {
                // The child may end before its loop reads the adoption: then what
                // it raised meanwhile comes with its end, told here.
                let unadopted = Arc::clone(&link.notify);
                child.adopt(link);
                awaited(child, recorded, name, stop, copy, output, Some(unadopted)).await
            }
            Resumed::Ended(Ok(data)) => {
                settle(
                    Outcome::Completed(data),
                    recorded,
                    name,
                    &stop,
                    copy,
                    output,
                )
                .await
            }
            Resumed::Ended(Err(how)) => (
                copy,
                Err(TaskError::new(format!(
                    "the called instance {recorded} of `{name}` {how}"
                ))),
            ),
            Resumed::NotStored => match engine.start_child(process, data, link.clone()) {
                Ok(Some(child)) => {
                    let id = child.id();
                    (link.notify)(ChildNote::Restarted(id));
                    awaited(child, id, name, stop, copy, output, None).await
                }
                Ok(None) => match never().await {},
                Err(reason) => (
                    copy,
                    Err(TaskError::new(format!(
                        "could not start `{name}` again: {reason}"
                    ))),
                ),
            },
            Resumed::Skipped(reason) => (
                copy,
                Err(TaskError::new(format!(
                    "the called instance {recorded} of `{name}` was not resumed: {reason}"
                ))),
            ),
        }
    };
    ChildCall {
        child: Ok(Some(recorded)),
        handle: None,
        run: Box::pin(run),
    }
}

/// A future that never ends (its task is stopped with the instance).
fn never() -> impl Future<Output = std::convert::Infallible> {
    std::future::pending()
}

/// Cancels the child when the run awaiting it is dropped before it ended.
struct CancelOnDrop(Option<InstanceHandle<Erased>>);

impl CancelOnDrop {
    fn disarm(mut self) -> Option<InstanceHandle<Erased>> {
        self.0.take()
    }
}

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        if let Some(child) = self.0.take() {
            if !child.is_finished() {
                child.cancel();
            }
        }
    }
}
