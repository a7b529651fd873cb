//! Step 1: ranks. A depth-first walk from the container's sources marks the flows
//! that close a loop as back edges; the rest form a DAG ranked by longest path.

use std::collections::BTreeMap;

use super::super::model::{Elem, Model};

/// A flow between two members of one container, for ranking.
pub(super) struct RankEdge {
    pub flow: usize,
    /// The drawn source (a boundary event, or a node).
    pub source: usize,
    /// The source for ranking (a boundary's host).
    pub from: usize,
    pub to: usize,
    pub back: bool,
}

fn is_start_like(elem: &Elem) -> bool {
    matches!(
        elem,
        Elem::Start { .. }
            | Elem::Gateway(super::super::model::Gateway::EventBased {
                instantiate: true,
                ..
            })
    )
}

/// A container's flows, ranked.
pub(super) struct Ranks {
    pub redges: Vec<RankEdge>,
    /// Each member's place in the walk's discovery order.
    pub discovery: Vec<usize>,
    /// Each member's rank (its column).
    pub rank: Vec<usize>,
    /// How many ranks there are.
    pub ranks: usize,
}

/// Rank the members of one container (`index`: node → position in `members`).
pub(super) fn rank(model: &Model, members: &[usize], index: &BTreeMap<usize, usize>) -> Ranks {
    let m = members.len();
    // Flows among the members (a boundary's as its host's).
    let host_of = |n: usize| match model.nodes[n].elem {
        Elem::Boundary { host, .. } => host,
        _ => n,
    };
    let mut redges: Vec<RankEdge> = Vec::new();
    for (f, flow) in model.flows.iter().enumerate() {
        if !flow.drawn {
            continue;
        }
        let (Some(&from), Some(&to)) = (index.get(&host_of(flow.source)), index.get(&flow.target))
        else {
            continue;
        };
        redges.push(RankEdge {
            flow: f,
            source: flow.source,
            from,
            to,
            back: false,
        });
    }
    // A compensation boundary's association to its handler is ranked and routed as
    // a flow of the boundary's (numbered after the flows): the handler stands right
    // of its host, the line leaves the boundary downwards and meets it from the left.
    for (a, &(boundary, handler)) in model.associations.iter().enumerate() {
        let (Some(&from), Some(&to)) = (index.get(&host_of(boundary)), index.get(&handler)) else {
            continue;
        };
        redges.push(RankEdge {
            flow: model.flows.len() + a,
            source: boundary,
            from,
            to,
            back: false,
        });
    }
    let mut out_edges: Vec<Vec<usize>> = vec![Vec::new(); m];
    let mut in_count = vec![0usize; m];
    for (e, re) in redges.iter().enumerate() {
        out_edges[re.from].push(e);
        in_count[re.to] += 1;
    }

    // 1. Depth-first walk: back edges and discovery order.
    let mut state = vec![0u8; m]; // 0 new, 1 on stack, 2 done
    let mut order: Vec<usize> = Vec::with_capacity(m);
    let roots: Vec<usize> = (0..m).filter(|&i| in_count[i] == 0).chain(0..m).collect();
    for root in roots {
        if state[root] != 0 {
            continue;
        }
        state[root] = 1;
        order.push(root);
        let mut stack: Vec<(usize, usize)> = vec![(root, 0)];
        while let Some(&mut (v, ref mut k)) = stack.last_mut() {
            if let Some(&e) = out_edges[v].get(*k) {
                *k += 1;
                let w = redges[e].to;
                match state[w] {
                    0 => {
                        state[w] = 1;
                        order.push(w);
                        stack.push((w, 0));
                    }
                    1 => redges[e].back = true,
                    _ => {}
                }
            } else {
                state[v] = 2;
                stack.pop();
            }
        }
    }
    let mut discovery = vec![0usize; m];
    for (k, &i) in order.iter().enumerate() {
        discovery[i] = k;
    }

    // Longest-path ranks over the forward edges (Kahn, lowest index first).
    let mut rank = vec![0usize; m];
    let mut indeg = vec![0usize; m];
    for re in redges.iter().filter(|re| !re.back) {
        indeg[re.to] += 1;
    }
    let mut ready: std::collections::BTreeSet<usize> = (0..m).filter(|&i| indeg[i] == 0).collect();
    let mut topo: Vec<usize> = Vec::with_capacity(m);
    while let Some(v) = ready.pop_first() {
        topo.push(v);
        for &e in &out_edges[v] {
            let re = &redges[e];
            if re.back {
                continue;
            }
            rank[re.to] = rank[re.to].max(rank[v] + 1);
            indeg[re.to] -= 1;
            if indeg[re.to] == 0 {
                ready.insert(re.to);
            }
        }
    }
    // Pull sources that are not starts right, to just before their nearest successor.
    for &v in topo.iter().rev() {
        let has_in = redges.iter().any(|re| !re.back && re.to == v);
        if has_in || is_start_like(&model.nodes[members[v]].elem) {
            continue;
        }
        let succ = out_edges[v]
            .iter()
            .filter(|&&e| !redges[e].back)
            .map(|&e| rank[redges[e].to])
            .min();
        if let Some(s) = succ {
            rank[v] = rank[v].max(s.saturating_sub(1));
        }
    }
    let ranks = rank.iter().max().map_or(0, |r| r + 1);
    Ranks {
        redges,
        discovery,
        rank,
        ranks,
    }
}
