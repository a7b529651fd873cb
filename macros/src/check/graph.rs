//! Graph rules: starts and ends, duplicate flows, and that every element lies on a
//! path from a start to an end. (Duplicate ids and unknown names are found while the
//! model resolves names; see `model::build`.)

use crate::ctx::Ctx;
use crate::model::{Kind, Model};

pub fn check(ctx: &Ctx, model: &Model) {
    starts(ctx, model);
    duplicate_flows(ctx, model);
    flow_ends(ctx, model);
    paths(ctx, model);
}

fn starts(ctx: &Ctx, model: &Model) {
    let starts = model.starts();
    match starts.as_slice() {
        [] => ctx.error(
            model.name,
            format!(
                "process `{}` has no start event; add one, e.g. `start begin;` and `begin -> ...;`",
                model.name
            ),
        ),
        [_] => {}
        [first, rest @ ..] => {
            for &s in rest {
                ctx.error(
                    model.nodes[s].id,
                    format!(
                        "process `{}` has a second none start event `{}` (the first is `{}`); `Engine::start` begins at one start — merge them into one",
                        model.name, model.nodes[s].id, model.nodes[*first].id
                    ),
                );
            }
        }
    }
}

fn duplicate_flows(ctx: &Ctx, model: &Model) {
    for (i, flow) in model.flows.iter().enumerate() {
        if model.flows[..i]
            .iter()
            .any(|f| f.source == flow.source && f.target == flow.target)
        {
            ctx.error(
                flow.tokens(),
                format!(
                    "the flow `{} -> {}` is declared twice; remove one (to route two tokens, fork through a gateway)",
                    flow.source_ident, flow.target_ident
                ),
            );
        }
    }
}

fn flow_ends(ctx: &Ctx, model: &Model) {
    for flow in &model.flows {
        let (source, target) = (&model.nodes[flow.source], &model.nodes[flow.target]);
        if target.kind == Kind::Start {
            ctx.error(
                flow.tokens(),
                format!(
                    "start event `{}` cannot have an incoming flow (`{} -> {}`); a start only begins the process — route the flow to another element",
                    target.id, source.id, target.id
                ),
            );
        }
        if source.kind.is_end() {
            ctx.error(
                flow.tokens(),
                format!(
                    "{} `{}` cannot have an outgoing flow (`{} -> {}`); the path ends there — move the flow to the element before it",
                    source.kind.describe(), source.id, source.id, target.id
                ),
            );
        }
    }
}

/// Every element has an incoming flow (or is a start), is reachable from a start, and
/// can reach an end. One error per element: the first rule it breaks.
fn paths(ctx: &Ctx, model: &Model) {
    let from_start = model.reachable(&model.starts(), false, None);
    let ends: Vec<usize> = (0..model.nodes.len())
        .filter(|&n| model.nodes[n].kind.is_end())
        .collect();
    let to_end = model.reachable(&ends, true, None);
    for (n, node) in model.nodes.iter().enumerate() {
        if node.kind == Kind::Start {
            if node.outgoing.is_empty() {
                ctx.error(
                    node.id,
                    format!(
                        "start event `{}` has no outgoing flow; add one, e.g. `{} -> first_task;`",
                        node.id, node.id
                    ),
                );
            }
            continue;
        }
        if node.incoming.is_empty() {
            ctx.error(
                node.id,
                format!(
                    "`{}` has no incoming flow, so no token can reach it; only a start event begins a path — add a flow into it, e.g. `previous -> {};`",
                    node.id, node.id
                ),
            );
        } else if !from_start[n] && !model.starts().is_empty() {
            ctx.error(
                node.id,
                format!(
                    "`{}` cannot be reached from the start event; its incoming flows only come from elements that are themselves unreachable",
                    node.id
                ),
            );
        } else if !to_end[n] && !ends.is_empty() {
            ctx.error(
                node.id,
                format!(
                    "no path leads from `{}` to an end event, so a token there could never finish; add a flow towards an end",
                    node.id
                ),
            );
        }
    }
    if ends.is_empty() {
        ctx.error(
            model.name,
            format!(
                "process `{}` has no end event; add one, e.g. `end done;`",
                model.name
            ),
        );
    }
}
