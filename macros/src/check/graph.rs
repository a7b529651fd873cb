//! Graph rules: starts and ends, duplicate flows, and that every element lies on a
//! path from a start to an end. (Duplicate ids and unknown names are found while the
//! model resolves names; see `model::build`.)

use crate::ctx::Ctx;
use crate::model::{Direction, Edges, Kind, Model};
use crate::parse::EventTrigger;

pub fn check(ctx: &Ctx, model: &Model) {
    starts(ctx, model);
    duplicate_flows(ctx, model);
    flow_ends(ctx, model);
    paths(ctx, model);
}

/// How errors name a scope: "process `order`", "sub-process `claim`".
fn scope_name(model: &Model, scope: Option<usize>) -> String {
    match scope {
        Some(c) => format!("{} `{}`", model.nodes[c].kind.describe(), model.nodes[c].id),
        None => format!("process `{}`", model.name),
    }
}

/// Where a scope's errors point: the process's or the sub-process's name.
fn scope_span<'a>(model: &Model<'a>, scope: Option<usize>) -> &'a syn::Ident {
    scope.map_or(model.name, |c| model.nodes[c].id)
}

/// Every scope has its start: the process one or more (one none start at most),
/// a sub-process exactly one none start (`model` rejects triggered ones there), an
/// event sub-process exactly one start with a trigger.
fn starts(ctx: &Ctx, model: &Model) {
    for scope in model.scopes() {
        let all = model.starts_in(scope);
        let event_sub = scope.is_some_and(|c| model.nodes[c].kind == Kind::EventSubProcess);
        let name = scope_name(model, scope);
        if all.is_empty() {
            if !model.is_incomplete(scope) {
                let begin = free_id(model, scope, "begin");
                let example = if event_sub {
                    format!("`start {begin}: message(\"cancel\", key = |data| data.id.clone());` (or a signal, timer, condition, error or escalation)")
                } else {
                    format!("`start {begin};`")
                };
                ctx.error(
                    scope_span(model, scope),
                    format!(
                        "{name} has no start event; add one, e.g. {example} and `{begin} -> {};`",
                        first_orphan(model, scope)
                    ),
                );
            }
            continue;
        }
        if event_sub {
            for &s in &all[1..] {
                ctx.error(
                    model.nodes[s].id,
                    format!(
                        "{name} has a second start event `{}` (the first is `{}`); an event sub-process runs on the one trigger of its start — for another trigger, declare another event sub-process",
                        model.nodes[s].id,
                        model.nodes[all[0]].id
                    ),
                );
            }
            continue;
        }
        // Event starts may stand beside a none start; two none starts are ambiguous.
        let none: Vec<usize> = all
            .into_iter()
            .filter(|&s| model.nodes[s].kind == Kind::Start)
            .collect();
        let begins = if scope.is_some() {
            "a token entering the sub-process begins at its one start"
        } else {
            "`Engine::start` begins at the one start"
        };
        if let [first, rest @ ..] = none.as_slice() {
            for &s in rest {
                ctx.error(
                    model.nodes[s].id,
                    format!(
                        "{name} has a second none start event `{}` (the first is `{}`); {begins} — remove `{}` and route its flows from `{}`",
                        model.nodes[s].id,
                        model.nodes[*first].id,
                        model.nodes[s].id,
                        model.nodes[*first].id
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
        if matches!(target.kind, Kind::InstantiatingGate { .. }) {
            ctx.error(
                flow.tokens(),
                format!(
                    "the instantiating event-based gateway `{}` starts instances of the deployed process, so it cannot have an incoming flow (`{} -> {}`) — route the flow to another element; to wait for its arms' messages again mid-flow, flow into a plain event-based gateway (`event_based wait_again;`, no `: instantiate`) with catches of its own",
                    target.id, source.id, target.id
                ),
            );
        } else if target.kind.is_start() {
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
/// can reach an end — of its own scope: flows stay within one, so the walks need
/// no scope edges. One error per element: the first rule it breaks.
///
/// A node with a flow to or from a name that did not resolve (reported already) counts
/// as reached from a start, or as reaching an end, so one typo does not cascade.
fn paths(ctx: &Ctx, model: &Model) {
    let nodes = &model.nodes;
    let all = 0..nodes.len();
    // An event sub-process is entered by its start's trigger: what hangs on it (a
    // boundary, wrongly, or a flow out, both reported) counts as reached.
    let mut seeds: Vec<usize> = all
        .clone()
        .filter(|&n| nodes[n].loose_in || nodes[n].kind == Kind::EventSubProcess)
        .collect();
    seeds.extend(all.clone().filter(|&n| nodes[n].kind.is_start()));
    // A compensation handler is reached through its association, and it and its
    // boundary end there: neither is on a path (`check::compensation` keeps flows off).
    // (A task a compensation boundary names, marked or not, is one: `check::compensation`
    // says what is wrong with it.)
    let association = |n: usize| {
        nodes[n].for_compensation
            || super::compensation::is_compensation_boundary(nodes[n].kind)
            || nodes.iter().any(|b| b.handler_node == Some(n))
    };
    seeds.extend(all.clone().filter(|&n| association(n)));
    let from_start = model.reachable(&seeds, Direction::Forward, None, Edges::WithinScope);
    let mut seeds: Vec<usize> = all.clone().filter(|&n| nodes[n].loose_out).collect();
    seeds.extend(
        all.clone()
            .filter(|&n| nodes[n].kind.is_end() || association(n)),
    );
    let to_end = model.reachable(&seeds, Direction::Backward, None, Edges::WithinScope);
    // A process imported from a diagram is mended in the modeler, not in the DSL.
    let imported = model.file.is_some();
    for scope in model.scopes() {
        let starts = model.starts_in(scope);
        let ends: Vec<usize> = model
            .members(scope)
            .filter(|&n| nodes[n].kind.is_end())
            .collect();
        // Whether "reachable from a start" says anything: with no start, or a start
        // that leads nowhere, every element is unreachable, and the one error about
        // the start says so.
        let started = starts
            .iter()
            .any(|&s| !nodes[s].outgoing.is_empty() || nodes[s].loose_out);
        for n in model.members(scope) {
            let node = &nodes[n];
            if node.kind.is_start() {
                // An instantiating gate without arms is reported by `events`.
                let gate = matches!(node.kind, Kind::InstantiatingGate { .. });
                if node.outgoing.is_empty() && !node.loose_out && !gate {
                    let hint = match imported {
                        true => "draw a sequence flow from it in the modeler".to_string(),
                        false => format!(
                            "add one, e.g. `{} -> {};`",
                            node.id,
                            first_orphan(model, scope)
                        ),
                    };
                    ctx.error(
                        node.id,
                        format!("start event `{}` has no outgoing flow; {hint}", node.id),
                    );
                }
                continue;
            }
            // An event sub-process is entered by its trigger, never by a flow
            // (`check::scopes` reports flows on it).
            if node.kind == Kind::EventSubProcess {
                continue;
            }
            let boundary = matches!(node.kind, Kind::Boundary { .. }) || association(n);
            if started && node.incoming.is_empty() && !node.loose_in && !boundary {
                let hint = match imported {
                    true => "draw a sequence flow into it in the modeler, or remove it".to_string(),
                    false => format!(
                        "add a flow into it, e.g. `previous -> {};`, or remove it",
                        node.id
                    ),
                };
                ctx.error(
                    node.id,
                    format!(
                        "`{}` has no incoming flow, so no token can reach it; only a start event begins a path — {hint}",
                        node.id
                    ),
                );
            } else if started && !from_start[n] {
                ctx.error(
                    node.id,
                    format!(
                        "`{}` cannot be reached from the start event; its incoming flows only come from elements that are themselves unreachable — add a flow into it from an element the start reaches, or remove it",
                        node.id
                    ),
                );
            } else if !to_end[n] && !ends.is_empty() {
                let hint = match imported {
                    true => "draw a sequence flow from it (or from the loop it is on) towards an end event in the modeler".to_string(),
                    false => format!("add a flow towards an end, e.g. `{} -> {};`", node.id, nodes[ends[0]].id),
                };
                ctx.error(
                    node.id,
                    format!(
                        "no path leads from `{}` to an end event, so a token there could never finish; {hint}",
                        node.id
                    ),
                );
            }
        }
        if ends.is_empty() && !model.is_incomplete(scope) {
            // Where a path stops: an element with no flow out of it that resolved
            // (a flow that left the scope, reported already, was likely meant
            // for an end). A link throw goes on at its catch.
            let dead_end = model
                .members(scope)
                .find(|&n| {
                    !nodes[n].kind.is_start()
                        && !matches!(
                            nodes[n].kind,
                            Kind::EventSubProcess | Kind::Throw(EventTrigger::Link)
                        )
                        && !association(n)
                        && nodes[n].outgoing.is_empty()
                })
                .map(|n| nodes[n].id.to_string())
                .unwrap_or_else(|| "last_task".into());
            let done = free_id(model, scope, "done");
            let hint = match imported {
                true => "draw one in the modeler, and a sequence flow into it".to_string(),
                false => format!("add one, e.g. `end {done};` and `{dead_end} -> {done};`"),
            };
            ctx.error(
                scope_span(model, scope),
                format!("{} has no end event; {hint}", scope_name(model, scope)),
            );
        }
    }
}

/// `name` for an example declaration in `scope`, if no element has it; else prefixed
/// with the scope's name (`handle_done`): ids are unique across the process.
fn free_id(model: &Model, scope: Option<usize>, name: &str) -> String {
    let prefix = scope.map_or_else(|| "process".to_string(), |c| model.nodes[c].id.to_string());
    std::iter::once(name.to_string())
        .chain((1..).map(|i| match i {
            1 => format!("{prefix}_{name}"),
            _ => format!("{prefix}_{name}{i}"),
        }))
        .find(|id| !model.nodes.iter().any(|n| n.id == id))
        .expect("some name is free")
}

/// The first element of `scope` other than a start with no incoming flow: where a
/// start that leads nowhere most likely should lead.
fn first_orphan(model: &Model, scope: Option<usize>) -> String {
    model
        .members(scope)
        .map(|n| &model.nodes[n])
        .find(|n| {
            !n.kind.is_start()
                && !matches!(n.kind, Kind::Boundary { .. } | Kind::EventSubProcess)
                && n.incoming.is_empty()
                && !n.loose_in
        })
        .map_or_else(|| "first_task".into(), |n| n.id.to_string())
}
