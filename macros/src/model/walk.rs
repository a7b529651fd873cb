//! Walking the graph.

use super::ir::{Kind, Model};

/// Which way a walk follows the flows.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Direction {
    /// From source to target.
    Forward,
    /// From target back to source.
    Backward,
}

/// Which steps a walk takes besides written flows, link edges and boundary
/// attachments.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Edges {
    /// Nothing more: the walk stays in the scope it begins in, as the per-scope path
    /// rules need.
    WithinScope,
    /// Also how a token's completion leaves a scope: from an end event to the
    /// sub-process (or event sub-process) it ends, and from an event sub-process to
    /// its enclosing scope — the paths the OR-join's reachability needs.
    ScopeExits,
}

/// Walking the graph: shared by the checks and by the reachability masks `emit`
/// precomputes for the inclusive joins.
impl Model<'_> {
    /// Per node, whether it is reachable from `from` (included) walking in
    /// `direction` along `edges` (see [`Edges`]); the walk never enters `barrier`.
    pub fn reachable(
        &self,
        from: &[usize],
        direction: Direction,
        barrier: Option<usize>,
        edges: Edges,
    ) -> Vec<bool> {
        let mut seen = vec![false; self.nodes.len()];
        let mut stack: Vec<usize> = from
            .iter()
            .copied()
            .filter(|n| Some(*n) != barrier)
            .collect();
        while let Some(n) = stack.pop() {
            if std::mem::replace(&mut seen[n], true) {
                continue;
            }
            for next in self.neighbours(n, direction, edges) {
                if !seen[next] && Some(next) != barrier {
                    stack.push(next);
                }
            }
        }
        seen
    }

    /// The nodes one step from `n`, forward or backward: along flows (link edges
    /// included) and along the attachment of a boundary event to its activity — a
    /// token at an activity can go on from any of its boundaries.
    pub fn neighbours(
        &self,
        n: usize,
        direction: Direction,
        edges: Edges,
    ) -> impl Iterator<Item = usize> + '_ {
        let backward = direction == Direction::Backward;
        let node = &self.nodes[n];
        let (flows, mut attached): (&[usize], Vec<usize>) = if backward {
            (&node.incoming, node.attached_to.into_iter().collect())
        } else {
            (&node.outgoing, node.boundaries.clone())
        };
        if edges == Edges::ScopeExits {
            if backward {
                // Into a scope from what completes it: its ends and event sub-processes.
                if matches!(node.kind, Kind::SubProcess | Kind::EventSubProcess) {
                    attached.extend((0..self.nodes.len()).filter(|&e| {
                        self.nodes[e].scope == Some(n)
                            && (self.nodes[e].kind.is_end()
                                || self.nodes[e].kind == Kind::EventSubProcess)
                    }));
                }
            } else if node.kind.is_end() || node.kind == Kind::EventSubProcess {
                attached.extend(node.scope);
            }
        }
        let along = flows.iter().map(move |&f| {
            if backward {
                self.flows[f].source
            } else {
                self.flows[f].target
            }
        });
        along.chain(attached)
    }

    /// Whether `node` lies on a cycle: some successor leads back to it.
    pub fn on_cycle(&self, node: usize) -> bool {
        let next: Vec<usize> = self
            .neighbours(node, Direction::Forward, Edges::ScopeExits)
            .collect();
        self.reachable(&next, Direction::Forward, None, Edges::ScopeExits)[node]
    }

    /// For a converging inclusive or complex gateway `join`: per node `p`, bit `i` set when the
    /// source of incoming flow `i` is reachable from `p` without passing `join`.
    pub fn reach_masks(&self, join: usize) -> Vec<u64> {
        let mut masks = vec![0u64; self.nodes.len()];
        for (i, &f) in self.nodes[join].incoming.iter().enumerate().take(64) {
            let from = self.reachable(
                &[self.flows[f].source],
                Direction::Backward,
                Some(join),
                Edges::ScopeExits,
            );
            for (p, reaches) in from.into_iter().enumerate() {
                if reaches {
                    masks[p] |= 1 << i;
                }
            }
        }
        masks
    }

    /// Whether `scope` lost a declaration to an error (see [`Model::incomplete`]).
    pub fn is_incomplete(&self, scope: Option<usize>) -> bool {
        self.incomplete.contains(&scope)
    }

    /// The process's own start events (its top level).
    pub fn starts(&self) -> Vec<usize> {
        self.starts_in(None)
    }

    /// The start events written directly in `scope` (`None`: the top level).
    pub fn starts_in(&self, scope: Option<usize>) -> Vec<usize> {
        self.members(scope)
            .filter(|&n| self.nodes[n].kind.is_start())
            .collect()
    }

    /// The elements written directly in `scope` (`None`: the top level).
    pub fn members(&self, scope: Option<usize>) -> impl Iterator<Item = usize> + '_ {
        (0..self.nodes.len()).filter(move |&n| self.nodes[n].scope == scope)
    }

    /// Every scope: the top level (`None`), then each sub-process and event
    /// sub-process in declaration order.
    pub fn scopes(&self) -> Vec<Option<usize>> {
        let nested = (0..self.nodes.len())
            .filter(|&n| matches!(self.nodes[n].kind, Kind::SubProcess | Kind::EventSubProcess));
        std::iter::once(None).chain(nested.map(Some)).collect()
    }
}
