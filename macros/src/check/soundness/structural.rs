//! What is still decided when a scope is too large to explore: the classic
//! exclusive-split/parallel-join mismatch, where the run that proves it is plain to
//! see, so the finding keeps its witness.
//!
//! A parallel join `j` deadlocks when two of its incoming flows `u1`, `u2` are fed
//! only through one exclusive split (or event-based gateway) `x`, no branch of `x`
//! reaches both, and `x` passes exactly one token per run: nothing before `x` forks
//! or joins, and `x` is on no cycle. Then the token `x` sends down a branch that
//! leads to `u1` along single flows (no fork, no join on the way) arrives there
//! alone, and nothing else can move: `j` waits for `u2` for ever.

use super::net::Net;
use super::witness::flow_name;
use super::{Class, Finding};
use crate::model::{Direction, Edges, Kind, Marker, Model};

pub fn findings(net: &Net, out: &mut Vec<Finding>) {
    let model = net.model;
    for &j in &net.nodes {
        let node = &model.nodes[j];
        if node.kind != Kind::Parallel
            || node.incoming.len() < 2
            || matches!(node.marker, Some(Marker::MayDeadlock))
            || out.iter().any(|f| f.at == j)
        {
            continue;
        }
        if let Some(finding) = mismatch(net, j) {
            out.push(finding);
        }
    }
}

/// Per node, reachable from `from` walking in `direction` within the scope, never
/// entering `barriers`.
fn walk(model: &Model, from: &[usize], direction: Direction, barriers: &[usize]) -> Vec<bool> {
    let mut seen = vec![false; model.nodes.len()];
    let mut stack: Vec<usize> = from
        .iter()
        .copied()
        .filter(|v| !barriers.contains(v))
        .collect();
    while let Some(v) = stack.pop() {
        if std::mem::replace(&mut seen[v], true) {
            continue;
        }
        stack.extend(
            model
                .neighbours(v, direction, Edges::WithinScope)
                .filter(|w| !seen[*w] && !barriers.contains(w)),
        );
    }
    seen
}

fn mismatch(net: &Net, j: usize) -> Option<Finding> {
    let model = net.model;
    let incoming = &model.nodes[j].incoming;
    let sources: Vec<usize> = incoming.iter().map(|&f| model.flows[f].source).collect();
    let before: Vec<Vec<bool>> = sources
        .iter()
        .map(|&s| walk(model, &[s], Direction::Backward, &[j]))
        .collect();
    let forks = |v: usize| {
        net.options[v].iter().any(|o| o.len() >= 2)
            || model.nodes[v].incoming.len() >= 2
                && matches!(
                    model.nodes[v].kind,
                    Kind::Parallel | Kind::Inclusive | Kind::Complex
                )
            || model.nodes[v].boundaries.iter().any(|&b| {
                matches!(
                    model.nodes[b].kind,
                    Kind::Boundary {
                        interrupting: false,
                        ..
                    }
                )
            })
    };
    for &x in &net.nodes {
        if !matches!(model.nodes[x].kind, Kind::Exclusive | Kind::EventGate)
            || model.nodes[x].outgoing.len() < 2
            || before.iter().filter(|b| b[x]).count() < 2
            || model.on_cycle(x)
        {
            continue;
        }
        // One token per run passes `x`: nothing before it forks or joins.
        let upstream = walk(model, &[x], Direction::Backward, &[]);
        if (0..model.nodes.len()).any(|v| upstream[v] && v != x && forks(v)) {
            continue;
        }
        let branches: Vec<Vec<bool>> = model.nodes[x]
            .outgoing
            .iter()
            .map(|&f| walk(model, &[model.flows[f].target], Direction::Forward, &[j]))
            .collect();
        for a in 0..incoming.len() {
            for b in 0..incoming.len() {
                if a == b || !before[a][x] || !before[b][x] {
                    continue;
                }
                let (sa, sb) = (sources[a], sources[b]);
                if branches.iter().any(|r| r[sa] && r[sb]) {
                    continue;
                }
                // Every token on the way to either flow comes through `x`.
                let around = walk(model, &[sa, sb], Direction::Backward, &[x, j]);
                if (0..model.nodes.len()).any(|v| around[v] && model.nodes[v].kind.is_start()) {
                    continue;
                }
                for (k, &out) in model.nodes[x].outgoing.iter().enumerate() {
                    if !branches[k][sa] {
                        continue;
                    }
                    if let Some(path) = single_path(net, out, incoming[a]) {
                        return Some(finding(net, j, x, out, &path, incoming[b]));
                    }
                }
            }
        }
    }
    None
}

/// A way from flow `from` to flow `to` along which one token moves alone: every node
/// on it passes the token down one flow (a choice, or its only flow), none joins.
fn single_path(net: &Net, from: usize, to: usize) -> Option<Vec<usize>> {
    let model = net.model;
    let mut previous: Vec<Option<usize>> = vec![None; model.flows.len()];
    let mut queue = std::collections::VecDeque::from([from]);
    let mut seen = vec![false; model.flows.len()];
    seen[from] = true;
    while let Some(f) = queue.pop_front() {
        if f == to {
            let mut path = vec![f];
            let mut at = f;
            while let Some(p) = previous[at] {
                path.push(p);
                at = p;
            }
            path.reverse();
            return Some(path);
        }
        let v = model.flows[f].target;
        if model.nodes[v].incoming.len() >= 2
            && matches!(
                model.nodes[v].kind,
                Kind::Parallel | Kind::Inclusive | Kind::Complex
            )
        {
            continue;
        }
        for option in &net.options[v] {
            if let [next] = option[..] {
                if !seen[next] {
                    seen[next] = true;
                    previous[next] = Some(f);
                    queue.push_back(next);
                }
            }
        }
    }
    None
}

fn finding(net: &Net, j: usize, x: usize, first: usize, path: &[usize], missing: usize) -> Finding {
    let model = net.model;
    let (id, x_id) = (model.nodes[j].id, model.nodes[x].id);
    let mut choices = vec![format!("`{x_id}` takes {}", flow_name(model, first))];
    for &f in &path[1..] {
        let v = model.flows[f].source;
        if net.options[v].len() > 1 {
            choices.push(format!(
                "`{}` takes {}",
                model.nodes[v].id,
                flow_name(model, f)
            ));
        }
    }
    let what = if model.nodes[x].kind == Kind::EventGate {
        format!("`{x_id}` is event-based: only the first of its events is taken")
    } else {
        format!("`{x_id}` is exclusive: it takes only one of its flows")
    };
    Finding {
        at: j,
        class: Class::Deadlock,
        message: format!(
            "deadlock: `{id}` waits for a token on each of its incoming flows, but {what}, so no token comes on {} (e.g. when {}) — make `{id}` an exclusive merge if the paths are alternatives, or make `{x_id}` parallel if all of them should run",
            flow_name(model, missing),
            choices.join(", then ")
        ),
        choices: Vec::new(),
    }
}
