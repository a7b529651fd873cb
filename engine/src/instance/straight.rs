//! Where a completed task's token goes straight on, with no routing: to the next
//! task of a chain, or to a synchronising join (`tasks::run_task` takes it).

use super::core::Instance;
use crate::data::ProcessData;
use crate::graph::{FlowIdx, Next, Node, NodeIdx, NodeKind, TaskHandler};

/// Where a completed task's token goes straight on (`Instance::straight_on`): the
/// flow, the node it leads to, and what the token does there.
pub(super) struct Straight<D: 'static> {
    pub(super) flow: FlowIdx,
    pub(super) to: NodeIdx,
    pub(super) then: Then<D>,
}

/// What a token that went straight on does at the node it reached.
pub(super) enum Then<D: 'static> {
    /// Start the task, with its handler. `plain`: the task has no boundary event
    /// and is not `spawn` (`Next::Task`), which `runs_plain` need not look up.
    /// `fresh`: the spare copy is a copy of the data as it is, made by the commit
    /// before (`commit_into`), for the task to take as it is.
    Run {
        handler: TaskHandler<D>,
        plain: bool,
        fresh: bool,
    },
    /// Arrive at the synchronising join on its incoming flow number `slot`.
    Arrive { slot: usize },
}

impl<D: ProcessData> Instance<D> {
    /// The one flow out of `at` when the token takes it whatever the data and it
    /// leads to a task that runs as it is (no loop or multi-instance marker) — a
    /// chain of tasks — or to a synchronising join. Taking it is all `split` and
    /// `enter` would do — no route is recorded, no track forked, no activation
    /// entered — so the caller may start that task, or arrive at that join, at
    /// once. `None` while any loop or multi-instance activation runs: `split`
    /// first looks whether the track is one of its instances (which reports to its
    /// activation instead of leaving).
    ///
    /// `process!` works it out for every node (`Node::next`): one lookup, where
    /// the flow, its target and the target's loop marker took five.
    ///
    /// `fresh`: the commit before left a copy of the data as it is as the spare
    /// copy (`Then::Run`).
    #[inline(always)]
    pub(super) fn straight_on(&self, at: &Node<D>, fresh: bool) -> Option<Straight<D>> {
        debug_assert!(
            self.next_agrees(at),
            "`Node::next` is not what the graph says"
        );
        let (flow, to, then) = match at.next {
            Next::Route => return None,
            Next::Task {
                flow,
                to,
                handler,
                plain,
            } => {
                let then = Then::Run {
                    handler,
                    plain,
                    fresh,
                };
                (flow, to, then)
            }
            Next::Join { flow, to, slot } => (flow, to, Then::Arrive { slot }),
        };
        if !self.loops.is_empty() {
            return None;
        }
        Some(Straight { flow, to, then })
    }

    /// Whether `at.next` is what the graph's flows and nodes say (for the debug
    /// assertion in `straight_on`).
    fn next_agrees(&self, at: &Node<D>) -> bool {
        let process = self.process;
        let route = || -> Option<(FlowIdx, NodeIdx, Then<D>)> {
            let &[flow] = at.outgoing else {
                return None;
            };
            if process.flows[flow].condition.is_some() {
                return None;
            }
            let to = process.flows[flow].target;
            let target = &process.nodes[to];
            let then = match target.kind {
                NodeKind::Task(handler) if process.loop_of(to).is_none() => Then::Run {
                    handler,
                    plain: target.boundaries.is_empty() && !target.spawn,
                    fresh: false,
                },
                _ if target.is_sync_join() => Then::Arrive {
                    slot: target.incoming.iter().position(|f| *f == flow)?,
                },
                _ => return None,
            };
            Some((flow, to, then))
        };
        match (&at.next, route()) {
            (Next::Route, None) => true,
            (
                Next::Task {
                    flow, to, plain, ..
                },
                Some((f, t, Then::Run { plain: p, .. })),
            ) => (*flow, *to, *plain) == (f, t, p),
            (Next::Join { flow, to, slot }, Some((f, t, Then::Arrive { slot: s }))) => {
                (*flow, *to, *slot) == (f, t, s)
            }
            _ => false,
        }
    }
}
