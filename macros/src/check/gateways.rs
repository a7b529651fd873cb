//! Gateway rules (ADR-005 §2.2, §2.8–§2.10): which flows may carry conditions and
//! defaults, that a split's flows are all guarded, and the limits of the OR-join.

use crate::ctx::Ctx;
use crate::model::{Kind, Model};
use crate::parse::Guard;

pub fn check(ctx: &Ctx, model: &Model) {
    for (n, node) in model.nodes.iter().enumerate() {
        guards(ctx, model, n);
        if node.kind == Kind::Inclusive && node.incoming.len() > 1 {
            inclusive_join(ctx, model, n);
        }
    }
}

/// The conditions and defaults on one node's outgoing flows.
fn guards(ctx: &Ctx, model: &Model, n: usize) {
    let node = &model.nodes[n];
    let mut default_seen = false;
    for &f in &node.outgoing {
        let flow = &model.flows[f];
        let Some(guard) = flow.guard else {
            if matches!(node.kind, Kind::Exclusive | Kind::Inclusive) && node.outgoing.len() > 1 {
                ctx.error(
                    flow.tokens(),
                    format!(
                        "the flow `{} -> {}` leaves the {} `{}`, which splits, so it needs a condition: add `when |data| ...`, or `else` to make it the default flow",
                        node.id, flow.target_ident, node.kind.describe(), node.id
                    ),
                );
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
            Kind::Exclusive | Kind::Inclusive | Kind::Task(_) => {
                if flow.is_default() && std::mem::replace(&mut default_seen, true) {
                    ctx.error_at(
                        guard.span(),
                        format!(
                            "`{}` already has a default flow; at most one outgoing flow can be `else` — give this one a condition",
                            node.id
                        ),
                    );
                }
            }
            _ => ctx.error_at(
                guard.span(),
                format!(
                    "a {} cannot have {what} on its outgoing flow `{} -> {}`; only exclusive and inclusive gateways and tasks choose between flows",
                    node.kind.describe(), node.id, flow.target_ident
                ),
            ),
        }
    }
}

/// A converging inclusive gateway: single-pass (no cycles), at most 64 incoming flows
/// (one bit each in the precomputed reachability masks).
fn inclusive_join(ctx: &Ctx, model: &Model, n: usize) {
    let node = &model.nodes[n];
    if model.on_cycle(n) {
        ctx.error(
            node.id,
            format!(
                "the inclusive join `{}` lies on a cycle; thresh's OR-join is single-pass (ADR-005 §2.10) and would misjudge the tokens of a second round — move the loop's merge to an exclusive gateway outside the join",
                node.id
            ),
        );
    }
    if node.incoming.len() > 64 {
        ctx.error(
            node.id,
            format!(
                "the inclusive join `{}` has {} incoming flows; at most 64 are supported — join in two stages",
                node.id,
                node.incoming.len()
            ),
        );
    }
}
