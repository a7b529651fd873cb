//! Where a token goes from a node it completed at when routing would do no more than
//! take the node's one flow: worked out by `process!` for every node, so that a
//! chain of tasks, or a task before a synchronising join, moves on with one lookup
//! (`Instance::straight_on`).

use super::{FlowIdx, NodeIdx, TaskHandler};

/// Where a token that completes at a node goes straight on, whatever the data: by
/// the node's one outgoing flow, which has no condition, to a task or a
/// synchronising join (`Instance::straight_on`).
#[doc(hidden)]
pub enum Next<D: 'static> {
    /// Routed: more flows than one, a condition, or a target of another kind.
    Route,
    /// To a task with no loop or multi-instance marker, with its handler. `plain`:
    /// the task has no boundary event and is not `spawn`.
    Task {
        flow: FlowIdx,
        to: NodeIdx,
        handler: TaskHandler<D>,
        plain: bool,
    },
    /// To a synchronising join, arriving on its incoming flow number `slot`.
    Join {
        flow: FlowIdx,
        to: NodeIdx,
        slot: usize,
    },
}
