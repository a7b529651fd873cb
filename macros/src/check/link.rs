//! Link rules: a link throw is a path's last element before the jump
//! (no outgoing flow of its own), a link catch the first after it (no incoming flow of
//! its own), and a link carries nothing but its name. Pairing — every throw's name has
//! exactly one catch — is resolved, and reported, by `model` when it builds the edges.

use crate::ctx::Ctx;
use crate::model::{Kind, Model};
use crate::parse::EventTrigger;

pub fn check(ctx: &Ctx, model: &Model) {
    // A process imported from a diagram is mended in the modeler, not in the DSL.
    let imported = model.file.is_some();
    for flow in model.flows.iter().filter(|f| !f.link) {
        // An imported flow is named by its id, which the modeler shows.
        let (remove, remove_it) = match flow.file {
            Some(meta) if imported => {
                let delete = format!("delete the sequence flow `{}` in the modeler", meta.id);
                (delete.clone(), delete)
            }
            _ => (
                format!("remove `{} -> {}`", flow.source_ident, flow.target_ident),
                "remove it".to_string(),
            ),
        };
        let (source, target) = (&model.nodes[flow.source], &model.nodes[flow.target]);
        let (throw, catch) = (
            source.kind == Kind::Throw(EventTrigger::Link),
            target.kind == Kind::Catch(EventTrigger::Link),
        );
        let name = |node: &crate::model::Node| {
            node.event
                .as_ref()
                .and_then(|e| e.name.as_ref())
                .map(|n| n.value())
        };
        if throw && catch && name(source) == name(target) {
            // The jump, written out as a flow: one error for both rules it breaks.
            ctx.error(
                flow.tokens(),
                format!(
                    "the link throw `{}` already jumps to the link catch `{}` (both name the link \"{}\"); a flow between them is not needed, and a link allows none — {remove}",
                    source.id,
                    target.id,
                    name(source).unwrap_or_default(),
                ),
            );
            continue;
        }
        if throw {
            ctx.error(
                flow.tokens(),
                format!(
                    "the link throw `{}` jumps to its link catch, so it cannot have an outgoing flow of its own (`{} -> {}`); {remove_it}, and flow out of the link catch instead",
                    source.id, source.id, target.id
                ),
            );
        }
        // A link catch as the arm of an event-based gateway is reported by `check::events`.
        if catch && !source.kind.is_event_gate() {
            ctx.error(
                flow.tokens(),
                format!(
                    "the link catch `{}` is entered only by its link throws, so it cannot have an incoming flow (`{} -> {}`); {remove_it}, and flow into a link throw of the same name instead",
                    target.id, source.id, target.id
                ),
            );
        }
    }
    for node in &model.nodes {
        let Some(event) = node
            .event
            .as_ref()
            .filter(|e| e.trigger == EventTrigger::Link)
        else {
            continue;
        };
        for (arg, _) in [&event.key, &event.apply, &event.payload]
            .into_iter()
            .flatten()
        {
            let why = match arg.to_string().as_str() {
                "key" => "it jumps within one instance, so there is nothing to correlate",
                _ => {
                    "it jumps within one instance, whose data it already has, so no payload travels"
                }
            };
            ctx.error(
                arg,
                format!(
                    "a link carries nothing but its name: {why} — remove `{arg}`, leaving `{} {}: link(\"{}\");`",
                    if matches!(node.kind, Kind::Catch(_)) { "catch" } else { "throw" },
                    node.id,
                    event.name.as_ref().map(|n| n.value()).unwrap_or_default(),
                ),
            );
        }
    }
}
