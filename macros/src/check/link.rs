//! Link rules: a link throw is a path's last element before the jump
//! (no outgoing flow of its own), a link catch the first after it (no incoming flow of
//! its own), and a link carries nothing but its name. Pairing — every throw's name has
//! exactly one catch — is resolved, and reported, by `model` when it builds the edges.

use crate::ctx::Ctx;
use crate::model::{Kind, Model};
use crate::parse::EventTrigger;

pub fn check(ctx: &Ctx, model: &Model) {
    for flow in model.flows.iter().filter(|f| !f.link) {
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
                    "the link throw `{}` already jumps to the link catch `{}` (both name the link \"{}\"); a flow between them is not needed, and a link allows none — remove `{} -> {}`",
                    source.id,
                    target.id,
                    name(source).unwrap_or_default(),
                    source.id,
                    target.id
                ),
            );
            continue;
        }
        if throw {
            ctx.error(
                flow.tokens(),
                format!(
                    "the link throw `{}` jumps to its link catch, so it cannot have an outgoing flow of its own (`{} -> {}`); flow out of the link catch instead",
                    source.id, source.id, target.id
                ),
            );
        }
        // A link catch as the arm of an event-based gateway is reported by `check::events`.
        if catch && !source.kind.is_event_gate() {
            ctx.error(
                flow.tokens(),
                format!(
                    "the link catch `{}` is entered only by its link throws, so it cannot have an incoming flow (`{} -> {}`); flow into a link throw of the same name instead",
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
