//! Task handlers replaced for one engine or one instance, by element id: a mock, a
//! failure, a BPMN error or escalation, or the process's own handler held until the
//! test releases it.

use std::collections::HashMap;
use std::future::Future;
use std::sync::Arc;

use tokio::sync::Semaphore;

use crate::data::Erased;
use crate::graph::{NodeIdx, NodeKind, TaskRun};
use crate::{Engine, EngineError, InstanceHandle, Process, ProcessData, TaskError};

/// One replaced handler: like the graph's, it owns the task's copy and gives it back
/// (over erased data, as the loop runs it).
type Replacement<D> = Arc<dyn Fn(D) -> TaskRun<D> + Send + Sync>;

/// The replaced handlers of one process, by node (what an instance's loop looks a
/// task up in before it runs the process's own handler).
pub(crate) struct HandlerTable<D>(HashMap<NodeIdx, Replacement<D>>);

impl<D> HandlerTable<D> {
    /// This (engine-wide) table with `over`'s replacements on top: one instance's.
    pub(crate) fn under(&self, over: HandlerTable<D>) -> HandlerTable<D> {
        let mut table = self.0.clone();
        table.extend(over.0);
        HandlerTable(table)
    }

    pub(crate) fn get(&self, node: NodeIdx) -> Option<&Replacement<D>> {
        self.0.get(&node)
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

/// Why a handler could not be replaced: the id names no element of the process, or
/// an element that is not a task (only a task has a handler).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum OverrideError {
    /// No element of the process has this id.
    #[error("process {process} has no element `{id}`")]
    UnknownElement {
        /// The process.
        process: &'static str,
        /// The id asked for.
        id: String,
    },
    /// The element is not a task.
    #[error("`{id}` in process {process} is not a task (it is `{kind}`): only a task's handler can be replaced")]
    NotATask {
        /// The process.
        process: &'static str,
        /// The element.
        id: &'static str,
        /// What it is (`user`, `exclusive`, ...).
        kind: &'static str,
    },
}

/// Task handlers of one process replaced, by element id, checked against the
/// process — for one engine or for one instance. [`install`](Overrides::install)
/// them on an engine: every instance of the process that engine starts from then on
/// (started or deployed) runs the replacements. Or [`start`](Overrides::start) one
/// instance with them: only that instance runs them (over the engine's installed
/// ones). The process's code is unchanged, and everything else runs the real
/// handlers.
///
/// ```
/// use thresh::testing::{expect_ended, observe, Overrides};
/// use thresh::{process, Engine, ProcessData, TaskError};
///
/// #[derive(Clone, Debug, Default, ProcessData)]
/// pub struct Order { pub charged: u64 }
///
/// async fn charge_card(order: &mut Order) -> Result<(), TaskError> {
///     unreachable!("calls the payment service")
/// }
///
/// process! {
///     pub ORDER: Order {
///         start s; task charge = charge_card;
///         boundary declined on charge: error("DECLINED");
///         end paid; end refused;
///         s -> charge -> paid; declined -> refused;
///     }
/// }
///
/// # #[tokio::main(flavor = "current_thread")] async fn main() {
/// let engine = Engine::new();
/// Overrides::new(&ORDER)
///     .raise_error("charge", "DECLINED", "card expired")
///     .unwrap()
///     .install(&engine);
/// let handle = engine.start(&ORDER, Order::default()).await.unwrap();
/// expect_ended(&handle).await;
/// observe(&handle).await.assert_ended_at(["refused"]);
///
/// assert_eq!(
///     Overrides::new(&ORDER).fail("paid", "x").err().unwrap().to_string(),
///     "`paid` in process ORDER is not a task (it is `end`): only a task's handler can be replaced"
/// );
/// # }
/// ```
pub struct Overrides<D: 'static> {
    process: &'static Process<D>,
    table: HashMap<NodeIdx, Replacement<Erased>>,
}

impl<D: ProcessData> Overrides<D> {
    /// No handler replaced yet.
    pub fn new(process: &'static Process<D>) -> Self {
        Overrides {
            process,
            table: HashMap::new(),
        }
    }

    fn task(&self, id: &str) -> Result<NodeIdx, OverrideError> {
        let process = self.process.name();
        let Some(at) = self.process.nodes().iter().position(|n| n.id() == id) else {
            return Err(OverrideError::UnknownElement {
                process,
                id: id.to_string(),
            });
        };
        let node = &self.process.nodes()[at];
        match node.kind {
            NodeKind::Task(_) => Ok(at),
            _ => Err(OverrideError::NotATask {
                process,
                id: node.id(),
                kind: node.keyword(),
            }),
        }
    }

    fn with(mut self, id: &str, replacement: Replacement<Erased>) -> Result<Self, OverrideError> {
        let at = self.task(id)?;
        self.table.insert(at, replacement);
        Ok(self)
    }

    /// The task `id` runs `handler` on its copy of the data instead (a mock: set
    /// what the real service would, or return an error).
    pub fn replace(
        self,
        id: &str,
        handler: impl Fn(&mut D) -> Result<(), TaskError> + Send + Sync + 'static,
    ) -> Result<Self, OverrideError> {
        let handler = Arc::new(handler);
        self.with(
            id,
            Arc::new(move |data: Erased| {
                let handler = Arc::clone(&handler);
                let mut data = data;
                let run: TaskRun<Erased> = Box::pin(async move {
                    let result = handler(data.typed_mut::<D>());
                    (data, result)
                });
                run
            }),
        )
    }

    /// The task `id` runs an async replacement: it gets the task's copy of the data
    /// and gives it back with its result.
    pub fn replace_async<F, Fut>(self, id: &str, handler: F) -> Result<Self, OverrideError>
    where
        F: Fn(D) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = (D, Result<(), TaskError>)> + Send + 'static,
    {
        self.with(
            id,
            Arc::new(move |data: Erased| {
                let run = handler(data.into_data::<D>());
                let run: TaskRun<Erased> = Box::pin(async move {
                    let (data, result) = run.await;
                    (Erased::new(data), result)
                });
                run
            }),
        )
    }

    /// The task `id` fails with `message` (the instance fails with
    /// `InstanceError::TaskFailed` naming it).
    pub fn fail(self, id: &str, message: impl Into<String>) -> Result<Self, OverrideError> {
        let message: String = message.into();
        self.replace(id, move |_| Err(TaskError::new(&message)))
    }

    /// The task `id` raises the BPMN error `code` (`TaskError::bpmn`).
    pub fn raise_error(
        self,
        id: &str,
        code: impl Into<String>,
        message: impl Into<String>,
    ) -> Result<Self, OverrideError> {
        let (code, message): (String, String) = (code.into(), message.into());
        self.replace(id, move |_| Err(TaskError::bpmn(code.clone(), &message)))
    }

    /// The task `id` raises the escalation `code` (`TaskError::escalate`).
    pub fn escalate(self, id: &str, code: impl Into<String>) -> Result<Self, OverrideError> {
        let code: String = code.into();
        self.replace(id, move |_| Err(TaskError::escalate(code.clone())))
    }

    /// The task `id` waits until the test releases it ([`Gate::release`]), then
    /// runs the process's own handler. While it waits the token is working at the
    /// task, so boundaries on it (a timer, a message) can interrupt it.
    pub fn hold(self, id: &str) -> Result<(Self, Gate), OverrideError> {
        let at = self.task(id)?;
        let NodeKind::Task(own) = self.process.nodes()[at].kind else {
            // `task` checked the kind.
            return Err(OverrideError::UnknownElement {
                process: self.process.name(),
                id: id.to_string(),
            });
        };
        let permits = Arc::new(Semaphore::new(0));
        let gate = Gate {
            permits: Arc::clone(&permits),
        };
        let this = self.with(
            id,
            Arc::new(move |data: Erased| {
                let permits = Arc::clone(&permits);
                let run: TaskRun<Erased> = Box::pin(async move {
                    if let Ok(permit) = permits.acquire().await {
                        permit.forget();
                    }
                    own(data).await
                });
                run
            }),
        )?;
        Ok((this, gate))
    }

    /// Replace the handlers on `engine`: for the instances of this process it
    /// starts from now on (instances already running keep theirs). Installing again
    /// replaces the whole set; an empty set restores the process's own handlers.
    pub fn install(self, engine: &Engine) {
        engine.set_overrides(self.process, HandlerTable(self.table));
    }

    /// Start one instance of the process on `engine` with `data`, running these
    /// replacements — over those [`install`](Overrides::install)ed on the engine,
    /// which its other tasks keep. Other instances, started before or after, are
    /// not affected.
    ///
    /// ```
    /// use thresh::testing::{expect_ended, observe, Overrides};
    /// use thresh::{process, Engine, ProcessData, TaskError};
    ///
    /// #[derive(Clone, Debug, Default, ProcessData)]
    /// pub struct Order { pub charged: bool }
    ///
    /// process! {
    ///     pub ORDER: Order {
    ///         start s; task charge = |o| async move { o.charged = true; Ok(()) };
    ///         boundary declined on charge: error("DECLINED");
    ///         end paid; end refused;
    ///         s -> charge -> paid; declined -> refused;
    ///     }
    /// }
    ///
    /// # #[tokio::main(flavor = "current_thread")] async fn main() {
    /// let engine = Engine::new();
    /// let declined = Overrides::new(&ORDER)
    ///     .raise_error("charge", "DECLINED", "card expired")
    ///     .unwrap()
    ///     .start(&engine, Order::default())
    ///     .await
    ///     .unwrap();
    /// let paid = engine.start(&ORDER, Order::default()).await.unwrap();
    /// expect_ended(&declined).await;
    /// expect_ended(&paid).await;
    /// observe(&declined).await.assert_ended_at(["refused"]);
    /// observe(&paid).await.assert_ended_at(["paid"]);
    /// # }
    /// ```
    /// Fails as [`Engine::start`] does.
    pub async fn start(self, engine: &Engine, data: D) -> Result<InstanceHandle<D>, EngineError> {
        engine.start_overridden(self.process, data, HandlerTable(self.table))
    }
}

/// Releases the runs of a task held by [`Overrides::hold`].
#[derive(Clone, Debug)]
pub struct Gate {
    permits: Arc<Semaphore>,
}

impl Gate {
    /// Let one run of the held task go on (now, or when it next starts).
    pub fn release(&self) {
        self.permits.add_permits(1);
    }
}
