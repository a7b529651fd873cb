//! What a task's handler can learn about the run it is part of: the instance, the
//! task's node, and the attempt — to make a side effect idempotent.
//!
//! A durable engine runs a task at least once: a task whose handler was running when
//! the engine stopped runs again after the restart, with `attempt` one higher. Key
//! what the handler does outside (a payment, an e-mail) by the instance and node, and
//! look at the attempt to know whether an earlier run may have done it already.
//!
//! ```
//! # use thresh::{process, Engine, ProcessData, TaskError};
//! # #[derive(Clone, Debug, Default, ProcessData)] pub struct Order { pub charged_by: String }
//! async fn charge(order: &mut Order) -> Result<(), TaskError> {
//!     let run = thresh::task::current().expect("called from a task's handler");
//!     // e.g. an idempotency key for the payment provider:
//!     order.charged_by = format!("{}/{}#{}", run.instance, run.node, run.attempt);
//!     Ok(())
//! }
//! process! { pub PAY: Order { start s; task charge = charge; end e; s -> charge -> e; } }
//! # #[tokio::main(flavor = "current_thread")] async fn main() {
//! let order = Engine::new().start(&PAY, Order::default()).await.unwrap().outcome().await.completed().unwrap();
//! assert_eq!(order.charged_by, "i0/charge#1");
//! # }
//! ```

use std::cell::Cell;
use std::future::Future;

use crate::data::TaskError;
use crate::instance::InstanceId;

tokio::task_local! {
    /// For the part of a handler that runs on its track's task (across awaits).
    static CURRENT: TaskContext;
}

thread_local! {
    /// For a handler's first poll, on the loop's thread: the context `within` sets
    /// while it polls (`None` outside), so the common case (a handler that finishes
    /// without waiting) costs no task-local scope.
    static INLINE: Cell<Option<TaskContext>> = const { Cell::new(None) };
}

/// The task a handler runs for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TaskContext {
    /// The instance.
    pub instance: InstanceId,
    /// The task's node id.
    pub node: &'static str,
    /// 1 for the first run of this activity; one more for each run again after a
    /// restart (a durable engine resumes a task that was running).
    pub attempt: u32,
    /// For an instance of a multi-instance activity, its index (from 0); for a
    /// run of a standard loop, the runs before it (from 0); for a task inside a
    /// multi-instance or looped sub-process, the sub-process instance's; for a
    /// compensation handler undoing a run or an instance (or a task of the
    /// compensation event sub-process undoing one), that run's or instance's. `None`
    /// for a task that runs once.
    pub iteration: Option<u32>,
}

/// The shape of a task's handler, `handler` called on `data`: an
/// `async fn(&mut D) -> Result<(), TaskError>`, or a closure `|d| async move { ..;
/// Ok(()) }`, whose future is `Send`. `process!` calls every task's handler through
/// this function, so a handler of another shape is reported against these bounds,
/// at the handler (the bounds give a closure its parameter's type and its `Ok(())`
/// its error type).
pub fn handler<'a, D, F, Fut>(
    handler: F,
    data: &'a mut D,
) -> impl Future<Output = Result<(), TaskError>> + Send + 'a
where
    F: FnOnce(&'a mut D) -> Fut,
    Fut: Future<Output = Result<(), TaskError>> + Send + 'a,
{
    handler(data)
}

/// The task being run, when called from within a task's handler (`None` elsewhere).
pub fn current() -> Option<TaskContext> {
    // The inline context first: a handler that starts an instance whose first
    // step runs on its caller sees that step's task there, not its own.
    INLINE
        .with(Cell::get)
        .or_else(|| CURRENT.try_with(|run| *run).ok())
}

/// Run `f` as part of `run` (the handler's first poll, on the loop), catching a
/// panic: one frame per inline poll, and the context is put back however `f` ends.
#[inline(always)]
pub(crate) fn within<R>(run: &TaskContext, f: impl FnOnce() -> R) -> std::thread::Result<R> {
    let previous = INLINE.with(|cell| cell.replace(Some(*run)));
    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(f));
    INLINE.with(|cell| cell.set(previous));
    result
}

/// `future` as part of `run` (the rest of a handler, on its track).
pub(crate) fn scoped<F: Future>(run: TaskContext, future: F) -> impl Future<Output = F::Output> {
    CURRENT.scope(run, future)
}
