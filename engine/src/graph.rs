//! The static process graph that `process!` emits.
//!
//! Everything here is built at compile time and lives in a `static`: nodes, flows,
//! each node's incoming and outgoing flows, the gateways' conditions and defaults, and
//! for every converging inclusive gateway the precomputed reachability masks that turn
//! the OR-join's run-time check into a lookup. Indices are positions in the `nodes` and
//! `flows` slices; the engine never searches the graph by name.
//!
//! The fields are public so the expansion of `process!` can build the graph in a
//! constant; they are hidden from the docs because a graph written by hand skips the
//! macro's checks. Read a graph through the accessor methods.

use std::future::Future;
use std::pin::Pin;

use std::marker::PhantomData;

use crate::data::{Erased, TaskError};

/// Index of a node in [`Graph::nodes`].
pub type NodeIdx = usize;
/// Index of a flow in [`Graph::flows`].
pub type FlowIdx = usize;

/// One run of a task's handler: it owns the task's copy of the data and gives it
/// back with the handler's result. Boxed so handlers of any shape fit one table;
/// `'static`, so the loop can start it and hand it to a track if it has to wait.
pub type TaskRun<D> = Pin<Box<dyn Future<Output = (D, Result<(), TaskError>)> + Send>>;

/// A task's handler as the graph stores it: it works on the task's own copy of the
/// process data, which the instance loop commits when the handler returns `Ok`.
pub type TaskHandler<D> = fn(D) -> TaskRun<D>;

/// A sequence-flow condition over the process data.
pub type Condition<D> = fn(&D) -> bool;

/// A process definition: the static graph of one `process!` block, over data of
/// type `D`.
///
/// The graph itself is type-erased ([`Graph`] over [`Erased`] data): the instance
/// loop is compiled once for every data type, and the fns `process!` emits for the
/// user's code take the data back to `D`. `Process<D>` is what carries the type, so
/// [`Engine::start`](crate::Engine::start) takes a `D` and gives an
/// [`InstanceHandle<D>`](crate::InstanceHandle).
pub struct Process<D: 'static> {
    graph: Graph<Erased>,
    data: PhantomData<fn(D) -> D>,
}

impl<D> Process<D> {
    /// The process over `graph` (the expansion of `process!` builds it).
    #[doc(hidden)]
    pub const fn new(graph: Graph<Erased>) -> Self {
        Process {
            graph,
            data: PhantomData,
        }
    }

    /// The graph the engine runs.
    #[doc(hidden)]
    pub fn graph(&self) -> &Graph<Erased> {
        &self.graph
    }

    /// The name the engines and the store know the process by: the header's
    /// `= "order"`, or the identifier it was declared with. Several versions of a
    /// process share it (README, "Versions").
    pub fn name(&self) -> &'static str {
        self.graph.name
    }

    /// The version the process declares (`version 2` in its header); 1 when it
    /// declares none.
    pub fn version(&self) -> u32 {
        self.graph.version
    }

    /// The process's doc comment.
    pub fn doc(&self) -> &'static str {
        self.graph.doc
    }

    /// The model's fingerprint: see [`Graph::fingerprint`].
    pub fn fingerprint(&self) -> u64 {
        self.graph.fingerprint
    }

    /// All nodes, in declaration order.
    pub fn nodes(&self) -> &'static [Node<Erased>] {
        self.graph.nodes
    }

    /// All flows, in declaration order.
    pub fn flows(&self) -> &'static [Flow<Erased>] {
        self.graph.flows
    }

    /// The none start event, where [`Engine::start`](crate::Engine::start) begins.
    pub fn none_start(&self) -> Option<NodeIdx> {
        self.graph.none_start()
    }

    /// The node declared as `id`, if any.
    pub fn node(&self, id: &str) -> Option<&'static Node<Erased>> {
        self.graph.node(id)
    }
}

/// The static graph of one `process!` block: nodes, flows, starts. `D` is the data
/// its fns take: [`Erased`] in every graph `process!` emits.
pub struct Graph<D: 'static> {
    #[doc(hidden)]
    pub name: &'static str,
    /// See [`Process::version`].
    #[doc(hidden)]
    pub version: u32,
    #[doc(hidden)]
    pub doc: &'static str,
    /// See [`Graph::fingerprint`].
    #[doc(hidden)]
    pub fingerprint: u64,
    #[doc(hidden)]
    pub nodes: &'static [Node<D>],
    #[doc(hidden)]
    pub flows: &'static [Flow<D>],
    /// Start nodes of the top level, in declaration order.
    #[doc(hidden)]
    pub starts: &'static [NodeIdx],
    /// The event sub-processes of the top level, armed while the instance runs.
    #[doc(hidden)]
    pub event_subs: &'static [NodeIdx],
    /// The activities' loop and multi-instance markers, by node (`crate::loops`).
    #[doc(hidden)]
    pub loops: &'static [crate::loops::ActivityLoop<D>],
    /// The tasks inside multi-instance sub-processes that take their item.
    #[doc(hidden)]
    pub item_tasks: &'static [crate::loops::ItemTask<D>],
}

/// One BPMN flow node.
pub struct Node<D: 'static> {
    #[doc(hidden)]
    pub id: &'static str,
    /// The element's name as the diagram it was imported from gives it (empty: none;
    /// the pictures then label it by its id).
    #[doc(hidden)]
    pub label: &'static str,
    /// The BPMN element type the diagram gives it (`sendTask`, `manualTask`, ...),
    /// where its kind alone does not say it; empty otherwise.
    #[doc(hidden)]
    pub tag: &'static str,
    /// Where that diagram draws it: `x, y, width, height`, then its label's bounds
    /// when it has some; empty when it does not draw it.
    #[doc(hidden)]
    pub drawing: &'static [i32],
    #[doc(hidden)]
    pub doc: &'static str,
    #[doc(hidden)]
    pub kind: NodeKind<D>,
    /// Incoming flows, in declaration order.
    #[doc(hidden)]
    pub incoming: &'static [FlowIdx],
    /// Outgoing flows, in declaration order (the order an exclusive split tries them).
    #[doc(hidden)]
    pub outgoing: &'static [FlowIdx],
    /// The default flow (`else`), if any.
    #[doc(hidden)]
    pub default: Option<FlowIdx>,
    /// Boundary events attached to this activity, in declaration order.
    #[doc(hidden)]
    pub boundaries: &'static [NodeIdx],
    /// The sub-process or event sub-process this node is written in; `None` at the
    /// process's top level.
    #[doc(hidden)]
    pub scope: Option<NodeIdx>,
    /// What the model says in words that running it does not need, for the pictures:
    /// a link event's name, a conditional event's condition as written, a converging
    /// complex gateway's activation rule as written (`activate(..) | activate(..)`);
    /// empty for every other node.
    #[doc(hidden)]
    pub text: &'static str,
    /// A task marked `: spawn`: its handler runs on its track's own tokio task from
    /// the start, not first on the instance's loop (for handlers that compute long
    /// before they first await).
    #[doc(hidden)]
    pub spawn: bool,
    /// A task's own retry policy and timeout (`: retry(..) | timeout(..)`); `None`
    /// for the engine's default and no timeout.
    #[doc(hidden)]
    pub policy: Option<&'static crate::retry::TaskPolicy>,
    /// A user task's assignment (`: assignee(..) | groups(..) | due(..) |
    /// priority(..)`), evaluated on the data when it opens; `None` for none.
    #[doc(hidden)]
    pub assign: Option<fn(&D) -> crate::tasklist::Assigned>,
    /// Where a token that completes here goes straight on (`Next`).
    #[doc(hidden)]
    pub next: Next<D>,
    /// The ids of the nodes its outgoing flows lead to, in flow order: the `Routed`
    /// of a split that takes them all, with nothing to allocate.
    #[doc(hidden)]
    pub targets: &'static [&'static str],
}

/// What a node is and what the engine needs to run it.
#[non_exhaustive]
pub enum NodeKind<D: 'static> {
    /// A none start event.
    Start,
    /// A none end event: the track that reaches it ends.
    End,
    /// A terminate end event: every track of the instance ends.
    Terminate,
    /// A service/script task with its handler.
    Task(TaskHandler<D>),
    /// Exclusive gateway: pass-through merge, first-true split.
    Exclusive,
    /// Parallel gateway: one-token-per-flow join, all-flows split.
    Parallel,
    /// Inclusive gateway: OR-join, every-true split.
    Inclusive {
        /// When converging: for each node `p` (indexed like `nodes`), bit `i` is set
        /// when incoming flow `i` of this gateway is reachable from `p` without passing
        /// through the gateway. Empty when the gateway does not converge.
        reach: &'static [u64],
    },
    /// Complex gateway (ARCHITECTURE.md, "Joins"): diverging, an inclusive split; converging, a
    /// join driven by its activation rule.
    Complex {
        /// As for [`NodeKind::Inclusive`]; empty when the gateway does not converge.
        reach: &'static [u64],
        /// The activation rule: the join fires when any of these holds. Empty when
        /// the gateway does not converge.
        activation: &'static [Activation<D>],
    },
    /// Intermediate catch event: the token waits for its trigger.
    Catch(Trigger<D>),
    /// Receive task: an activity that waits for a message.
    Receive(Trigger<D>),
    /// User task: waits for completion from outside, through the instance handle.
    User,
    /// Intermediate throw event: signal or message, then on.
    Throw(Throw<D>),
    /// End event that throws a signal or message, then ends its track.
    ThrowEnd(Throw<D>),
    /// Exclusive event-based gateway: the token waits for the first of its arms'
    /// triggers (the targets of its outgoing flows) and goes on along that arm.
    EventGate,
    /// A boundary event on an activity: armed while the activity works; when its
    /// trigger comes, an interrupting one stops the activity and the token goes on
    /// from here, a non-interrupting one starts a new token here.
    Boundary {
        #[doc(hidden)]
        activity: NodeIdx,
        #[doc(hidden)]
        trigger: Trigger<D>,
        #[doc(hidden)]
        interrupting: bool,
    },
    /// Error end event: throws the error to the enclosing scope; with no catcher
    /// there, the instance fails with it.
    ErrorEnd {
        #[doc(hidden)]
        code: &'static str,
    },
    /// Escalation throw (intermediate, or an end when `end`): with no catcher, not an
    /// error — the token goes on (or ends).
    Escalate {
        #[doc(hidden)]
        code: &'static str,
        #[doc(hidden)]
        end: bool,
    },
    /// An instantiating event-based gateway (ARCHITECTURE.md, "Joins"): no incoming
    /// flow; a deployed process starts an instance when a message for one of its arms
    /// comes, and the token goes on along that arm. `parallel`: the instance also
    /// waits on every other arm (under the same correlation) and completes only once
    /// each has fired.
    InstantiatingGate {
        #[doc(hidden)]
        parallel: bool,
    },
    /// A start event with a trigger (message, signal or timer): a deployed process
    /// (`Engine::deploy`) starts an instance here when its trigger comes.
    StartEvent(Trigger<D>),
    /// A link throw or link catch event. `process!` pairs each throw with the catch
    /// of its name as a direct flow, so both simply pass the token on.
    Link,
    /// An embedded sub-process: an activity whose work is a scope of its own. The
    /// token entering it waits while a new token runs from `start`; when nothing is
    /// left running inside, the sub-process completes and the waiting token goes on.
    SubProcess {
        /// The none start event inside it.
        #[doc(hidden)]
        start: NodeIdx,
        /// Its event sub-processes, armed while it runs.
        #[doc(hidden)]
        event_subs: &'static [NodeIdx],
        /// Declared `transaction name { ... }`: a cancel end event inside compensates
        /// what completed in it and leaves through its cancel boundary.
        #[doc(hidden)]
        transaction: bool,
    },
    /// An event sub-process: no flow enters it; its start's trigger runs it inside
    /// the enclosing scope (the process, or a sub-process) while that scope runs.
    EventSubProcess {
        /// Its start event (an [`NodeKind::EventSubStart`]).
        #[doc(hidden)]
        start: NodeIdx,
        /// The event sub-processes nested in it, armed while it runs.
        #[doc(hidden)]
        event_subs: &'static [NodeIdx],
    },
    /// The start event of an event sub-process: its trigger, and whether it cancels
    /// the rest of its enclosing scope (interrupting) or runs beside it.
    EventSubStart {
        #[doc(hidden)]
        trigger: Trigger<D>,
        #[doc(hidden)]
        interrupting: bool,
    },
    /// A compensation throw (intermediate, or an end when `end`): the completed
    /// activities of its scope — or only `activity`'s completions — are compensated,
    /// latest first, and the token waits until every handler has finished.
    Compensate {
        #[doc(hidden)]
        activity: Option<NodeIdx>,
        #[doc(hidden)]
        end: bool,
    },
    /// A transaction's cancel end event: what else runs in the transaction is
    /// cancelled, what completed in it is compensated, and the transaction is left
    /// through its cancel boundary.
    CancelEnd,
    /// A compensation boundary: never armed; each completion of `activity` is logged
    /// for compensation, and `handler` (a task with no flows) undoes it.
    CompensationBoundary {
        #[doc(hidden)]
        activity: NodeIdx,
        #[doc(hidden)]
        handler: NodeIdx,
    },
    /// A transaction's cancel boundary: the transaction leaves here once cancelled.
    CancelBoundary {
        #[doc(hidden)]
        activity: NodeIdx,
    },
    /// The start of a compensation event sub-process: it runs when its sub-process,
    /// completed, is compensated.
    CompensationStart,
    /// A call activity: the token waits while another process (its own data type)
    /// runs as a child instance in the same engine; its output is mapped back when
    /// the child ends (README, "Call activities").
    Call(CallActivity<D>),
}

mod call;
mod events;
mod next;
mod reading;

pub use call::{CallActivity, CallItemStart};
pub use events::{
    ApplyFailure, ApplyPayload, Payload, PayloadDecode, PayloadType, Throw, TimerDef, Trigger,
};
pub use next::Next;

/// One triple of a complex gateway's activation rule: it holds when its condition is
/// true (or absent), at least `count` incoming flows have delivered a token, and every
/// flow in `required` is among them.
pub struct Activation<D: 'static> {
    #[doc(hidden)]
    pub condition: Option<Condition<D>>,
    #[doc(hidden)]
    pub count: u32,
    /// Bit `i` set when incoming flow `i` (in the gateway's incoming order) is required.
    #[doc(hidden)]
    pub required: u64,
}

/// A sequence flow.
pub struct Flow<D: 'static> {
    #[doc(hidden)]
    pub source: NodeIdx,
    #[doc(hidden)]
    pub target: NodeIdx,
    #[doc(hidden)]
    pub condition: Option<Condition<D>>,
    /// The condition as written, for logs and errors.
    #[doc(hidden)]
    pub condition_text: &'static str,
    /// The id of the diagram's sequence flow it was imported from (empty: the
    /// exports make one).
    #[doc(hidden)]
    pub id: &'static str,
    /// The flow's name in that diagram (empty: none).
    #[doc(hidden)]
    pub label: &'static str,
    /// Where that diagram draws it: `x, y` waypoints, then `i32::MIN` and its label's
    /// bounds when it has some; empty when it does not draw it.
    #[doc(hidden)]
    pub drawing: &'static [i32],
}

impl<D> Graph<D> {
    /// The message names of the arms of its parallel instantiating gateways: their
    /// repeats, stored while the instance with their key ran, are stale once it ends.
    #[cfg(feature = "durable")]
    pub(crate) fn stale_arm_names(&self) -> Vec<String> {
        let mut names = Vec::new();
        for &start in self.starts {
            if !matches!(
                self.nodes[start].kind,
                NodeKind::InstantiatingGate { parallel: true }
            ) {
                continue;
            }
            for &flow in self.nodes[start].outgoing {
                if let Some(Trigger::Message { name, .. }) =
                    self.nodes[self.flows[flow].target].kind.trigger()
                {
                    names.push(name.to_string());
                }
            }
        }
        names
    }

    /// The name the process was declared with: see [`Process::name`].
    pub fn name(&self) -> &'static str {
        self.name
    }

    /// See [`Process::version`].
    pub fn version(&self) -> u32 {
        self.version
    }

    /// The process's doc comment.
    pub fn doc(&self) -> &'static str {
        self.doc
    }

    /// The model's fingerprint: a 64-bit hash that `process!` computes at compile
    /// time from the model — the process's name (and its version, past 1), every node (id, scope, kind, the
    /// kind's parameters, its event's names, codes, timer and condition text) and every
    /// flow (ends, condition text, default), in declaration order. It leaves out what
    /// is code rather than model: task handlers, message keys, `apply` and `payload`
    /// mappings; and doc comments. The hash is thresh's own (FNV-1a over a fixed
    /// encoding), so it does not change with the Rust version or the platform.
    ///
    /// A durable store keeps it beside each instance and never resumes an instance
    /// under a model with another fingerprint; changing a handler's body keeps it.
    ///
    /// ```
    /// use thresh::ProcessData;
    ///
    /// #[derive(Clone, Debug, Default, ProcessData)]
    /// pub struct Order {
    ///     pub total: u64,
    /// }
    ///
    /// mod v1 {
    ///     thresh::process! {
    ///         pub ORDER: super::Order {
    ///             start received;
    ///             task price = |o| async move { o.total = 10; Ok(()) };
    ///             end done;
    ///             received -> price -> done;
    ///         }
    ///     }
    /// }
    ///
    /// mod v2 {
    ///     // Only the handler's body differs: the same model.
    ///     thresh::process! {
    ///         pub ORDER: super::Order {
    ///             start received;
    ///             task price = |o| async move { o.total = 12; Ok(()) };
    ///             end done;
    ///             received -> price -> done;
    ///         }
    ///     }
    /// }
    ///
    /// fn main() {
    ///     assert_eq!(v1::ORDER.fingerprint(), v2::ORDER.fingerprint());
    /// }
    /// ```
    pub fn fingerprint(&self) -> u64 {
        self.fingerprint
    }

    /// All nodes, in declaration order.
    pub fn nodes(&self) -> &'static [Node<D>] {
        self.nodes
    }

    /// All flows, in declaration order.
    pub fn flows(&self) -> &'static [Flow<D>] {
        self.flows
    }

    /// The none start event, where [`Engine::start`](crate::Engine::start) begins.
    pub fn none_start(&self) -> Option<NodeIdx> {
        self.starts
            .iter()
            .copied()
            .find(|&s| matches!(self.nodes[s].kind, NodeKind::Start))
    }

    /// The node declared as `id`, if any.
    pub fn node(&self, id: &str) -> Option<&'static Node<D>> {
        self.nodes.iter().find(|n| n.id == id)
    }

    /// The loop or multi-instance marker of the activity `node`, if it has one.
    #[doc(hidden)]
    pub fn loop_of(&self, node: NodeIdx) -> Option<&'static crate::loops::ActivityLoop<D>> {
        self.loops.iter().find(|l| l.node == node)
    }

    /// The item-taking run of the task `node` inside a multi-instance sub-process.
    pub(crate) fn item_task(&self, node: NodeIdx) -> Option<&'static crate::loops::ItemTask<D>> {
        self.item_tasks.iter().find(|t| t.node == node)
    }
}
