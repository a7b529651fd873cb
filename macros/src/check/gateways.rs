//! Gateway rules (see ARCHITECTURE.md, "Joins"): which flows may carry conditions and
//! defaults, that a split's flows are all guarded, and the limits of the reachability
//! joins (inclusive and complex: single-pass, at most 64 incoming flows).

use crate::ctx::Ctx;
use crate::model::{Direction, Edges, Kind, Model};
use crate::parse::Guard;

pub fn check(ctx: &Ctx, model: &Model) {
    for (n, node) in model.nodes.iter().enumerate() {
        guards(ctx, model, n);
        if matches!(node.kind, Kind::Inclusive | Kind::Complex) && node.incoming.len() > 1 {
            reachability_join(ctx, model, n);
        }
    }
}

/// The conditions and defaults on one node's outgoing flows.
fn guards(ctx: &Ctx, model: &Model, n: usize) {
    let node = &model.nodes[n];
    let mut first_default: Option<usize> = None;
    for &f in &node.outgoing {
        let flow = &model.flows[f];
        let Some(guard) = flow.guard else {
            if matches!(node.kind, Kind::Exclusive | Kind::Inclusive | Kind::Complex)
                && node.outgoing.len() > 1
            {
                let message = match flow.file {
                    // An imported flow: named by its id, which its binding takes.
                    Some(file) => {
                        let id = &file.id;
                        let bound = match id.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') && !id.starts_with(|c: char| c.is_ascii_digit()) {
                            true => id.clone(),
                            false => format!("\"{id}\""),
                        };
                        format!(
                            "flow `{id}` (from `{}` to `{}`) leaves the {} `{}`, which splits, so it needs a condition: bind one, `flow {bound} when |data| ...;`, or mark it as the gateway's default flow in the modeler",
                            node.id, flow.target_ident, node.kind.describe(), node.id
                        )
                    }
                    None => format!(
                        "the flow `{} -> {}` leaves the {} `{}`, which splits, so it needs a condition: add `when |data| ...`, or `else` to make it the default flow",
                        node.id, flow.target_ident, node.kind.describe(), node.id
                    ),
                };
                ctx.error(flow.tokens(), message);
            }
            continue;
        };
        let what = match guard {
            Guard::When { .. } => "a condition (`when`)",
            Guard::Else { .. } => "a default flow (`else`)",
        };
        match node.kind {
            Kind::Parallel => ctx.error_at(
                guard.span(),
                format!(
                    "a parallel gateway takes every outgoing flow unconditionally, so the flow `{} -> {}` cannot have {what}; use an exclusive or inclusive gateway to choose",
                    node.id, flow.target_ident
                ),
            ),
            Kind::Exclusive | Kind::Inclusive | Kind::Complex | Kind::Task | Kind::Receive | Kind::User | Kind::SubProcess | Kind::Call
                if flow.is_default() =>
            {
                match first_default {
                    None => first_default = Some(f),
                    // One `else` on a statement of several flows: reported by `model`.
                    Some(d) if std::ptr::eq(model.flows[d].guard.expect("default"), guard) => {}
                    Some(d) => ctx.error_at(
                        guard.span(),
                        format!(
                            "`{}` already has a default flow (`{} -> {}`); at most one outgoing flow can be `else` — give this one a condition",
                            node.id, node.id, model.flows[d].target_ident
                        ),
                    ),
                }
            }
            Kind::Exclusive | Kind::Inclusive | Kind::Complex | Kind::Task | Kind::Receive | Kind::User | Kind::SubProcess | Kind::Call => {}
            // An end event's outgoing flow is itself the error (see `graph`); an
            // event-based gateway's guarded arm is reported by `events`.
            Kind::End
            | Kind::Terminate
            | Kind::ThrowEnd(_)
            | Kind::ErrorEnd
            | Kind::Escalate { end: true }
            | Kind::Compensate { end: true }
            | Kind::CancelEnd
            | Kind::EventGate
            | Kind::InstantiatingGate { .. }
            | Kind::EventSubProcess => {}
            Kind::Start
            | Kind::EventSubStart { .. }
            | Kind::StartEvent(_)
            | Kind::Catch(_)
            | Kind::Throw(_)
            | Kind::Boundary { .. }
            | Kind::Compensate { end: false }
            | Kind::Escalate { end: false } => ctx.error_at(
                guard.span(),
                format!(
                    "{} cannot have {what} on its outgoing flow `{} -> {}`; only choosing gateways (exclusive, inclusive, complex) and activities (task, receive, user, sub-process) guard their flows — remove it, or flow from `{}` into an exclusive gateway that chooses",
                    node.kind.describe_with_article(), node.id, flow.target_ident, node.id
                ),
            ),
        }
    }
}

/// A converging inclusive gateway: single-pass (no cycles), at most 64 incoming flows
/// (one bit each in the precomputed reachability masks).
fn reachability_join(ctx: &Ctx, model: &Model, n: usize) {
    let node = &model.nodes[n];
    if let Some(cycle) = cycle_through(model, n) {
        let path = cycle
            .iter()
            .map(|&c| model.nodes[c].id.to_string())
            .collect::<Vec<_>>()
            .join(" -> ");
        let why = if node.kind == Kind::Complex {
            "thresh's complex join is single-pass: once fired it consumes every later token and does not re-arm for a second round yet"
        } else {
            "thresh's OR-join is single-pass and would misjudge the tokens of a second round"
        };
        ctx.error(
            node.id,
            format!(
                "the {} join `{}` lies on a cycle ({path}); {why} — merge a loop's back edge with an exclusive gateway, and keep {} joins out of loop bodies",
                node.kind.describe().trim_end_matches(" gateway"),
                node.id,
                node.kind.describe().trim_end_matches(" gateway"),
            ),
        );
    }
    if node.incoming.len() > 64 {
        ctx.error(
            node.id,
            format!(
                "the {} join `{}` has {} incoming flows; at most 64 are supported — join in two stages",
                node.kind.describe().trim_end_matches(" gateway"),
                node.id,
                node.incoming.len()
            ),
        );
    }
}

/// A shortest cycle through `node`, as the nodes along it from `node` back to `node`;
/// `None` when `node` is on no cycle.
fn cycle_through(model: &Model, node: usize) -> Option<Vec<usize>> {
    if !model.on_cycle(node) {
        return None;
    }
    // Breadth-first from `node`, remembering how each node was first reached.
    let mut came_from: Vec<Option<usize>> = vec![None; model.nodes.len()];
    let mut queue = std::collections::VecDeque::from([node]);
    while let Some(at) = queue.pop_front() {
        // The same steps `on_cycle` takes: flows, boundary attachments, scope exits —
        // a loop back through a boundary event is a loop.
        for next in model.neighbours(at, Direction::Forward, Edges::ScopeExits) {
            if next == node {
                // Back from `at` to `node` (the root, with no `came_from`), then around.
                let mut path = vec![at];
                while let Some(prev) = came_from[*path.last().expect("non-empty")] {
                    path.push(prev);
                }
                path.reverse();
                path.push(node);
                return Some(path);
            }
            if came_from[next].is_none() {
                came_from[next] = Some(at);
                queue.push_back(next);
            }
        }
    }
    None
}
