//! Scope rules: what an event sub-process may be. The rules that every scope has its
//! own start and end are `graph`'s, the ones about flows, links and boundaries
//! crossing a scope `model`'s (they decide how names resolve).
//!
//! - no flow enters or leaves an event sub-process: its start's trigger runs it;
//! - an error start always interrupts;
//! - a scope has at most one interrupting event sub-process per event definition
//!   (the first would always take the scope over before the second);
//! - an instantiating event-based gateway starts instances of the process, so it
//!   stands only at the process's top level.

use crate::check::boundary::{definition, event_phrase};
use crate::ctx::Ctx;
use crate::model::{Kind, Model};
use crate::parse::EventTrigger;

pub fn check(ctx: &Ctx, model: &Model) {
    // A process imported from a diagram is mended in the modeler, not in the DSL.
    let imported = model.file.is_some();
    for (n, node) in model.nodes.iter().enumerate() {
        match node.kind {
            Kind::EventSubProcess => unconnected(ctx, model, n, imported),
            Kind::EventSubStart {
                trigger,
                interrupting,
            } => {
                if let (EventTrigger::Error, Some(marker)) = (trigger, node.non_interrupting) {
                    let mend = match imported {
                        true => "mark it interrupting in the modeler",
                        false => "remove `non_interrupting`",
                    };
                    ctx.error(
                        marker,
                        format!("an error start event always interrupts: the error ended the work it was thrown from, so there is nothing to run beside — {mend}"),
                    );
                }
                // Two compensation event sub-processes are `check::compensation`'s.
                if interrupting && trigger != EventTrigger::Compensation {
                    shadowed(ctx, model, n, imported);
                }
            }
            Kind::InstantiatingGate { .. } => {
                if let Some(scope) = node.scope {
                    let mend = match imported {
                        true => "with a plain event-based gateway: untick its \"instantiate\" in the modeler and flow into it from the start event".to_string(),
                        false => format!("with a plain `event_based {};` after the start", node.id),
                    };
                    ctx.error(
                        node.id,
                        format!(
                            "the instantiating event-based gateway `{}` starts instances of the deployed process, so it stands at the process's top level, not in {} `{}` — inside, wait mid-flow {mend}",
                            node.id,
                            model.nodes[scope].kind.describe(),
                            model.nodes[scope].id,
                        ),
                    );
                }
            }
            _ => {}
        }
    }
}

/// An event sub-process has no incoming and no outgoing flow.
fn unconnected(ctx: &Ctx, model: &Model, n: usize, imported: bool) {
    let node = &model.nodes[n];
    let (plain, inside) = match imported {
        true => (
            "a plain sub-process (untick \"triggered by event\") in the modeler",
            "inside it, before its end, in the modeler",
        ),
        false => ("a `subprocess`", "into its block, before its end"),
    };
    // An imported flow is named by its id, which the modeler shows.
    let remove = |flow: &crate::model::Flow| match flow.file {
        Some(meta) if imported => format!("delete the sequence flow `{}` in the modeler", meta.id),
        _ => "remove the flow".to_string(),
    };
    for &f in &node.incoming {
        let flow = &model.flows[f];
        ctx.error(
            flow.tokens(),
            format!(
                "no flow enters the event sub-process `{}` (`{} -> {}`): it runs when the trigger of its start event comes, while its enclosing scope runs — {}; to run it on this path, make it {plain}",
                node.id, flow.source_ident, node.id, remove(flow)
            ),
        );
    }
    for &f in &node.outgoing {
        let flow = &model.flows[f];
        ctx.error(
            flow.tokens(),
            format!(
                "no flow leaves the event sub-process `{}` (`{} -> {}`): it ends at its own end events, inside its enclosing scope — {}, and move what should follow {inside}",
                node.id, node.id, flow.target_ident, remove(flow)
            ),
        );
    }
}

/// A second interrupting event sub-process start for the same event in one scope.
fn shadowed(ctx: &Ctx, model: &Model, n: usize, imported: bool) {
    let node = &model.nodes[n];
    let Some(esp) = node.scope else { return };
    let scope = model.nodes[esp].scope;
    let first = model
        .members(scope)
        .take_while(|&e| e != esp)
        .find_map(|e| {
            let start = model.starts_in(Some(e)).into_iter().next()?;
            let other = &model.nodes[start];
            let same = other.kind == node.kind && definition(other) == definition(node);
            same.then_some(e)
        });
    if let Some(first) = first {
        let place = match scope {
            Some(s) => format!("{} `{}`", model.nodes[s].kind.describe(), model.nodes[s].id),
            None => format!("process `{}`", model.name),
        };
        let mark = match imported {
            true => "untick \"interrupting\" on this start event in the modeler",
            false => "mark this start `non_interrupting`",
        };
        ctx.error(
            node.id,
            format!(
                "{place} already has an interrupting event sub-process `{}` for the same{} as `{}`: the first takes the scope over when it comes, so `{}` never would — remove one, or {mark} to run beside the scope",
                model.nodes[first].id,
                event_phrase(node),
                node.id,
                model.nodes[esp].id
            ),
        );
    }
}
