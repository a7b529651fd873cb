//! Link rules (ADR-006 §2.8): a link throw is a path's last element before the jump
//! (no outgoing flow of its own), a link catch the first after it (no incoming flow of
//! its own), and a link carries nothing but its name. Pairing — every throw's name has
//! exactly one catch — is resolved, and reported, by `model` when it builds the edges.

use crate::ctx::Ctx;
use crate::model::{Kind, Model};
use crate::parse::EventTrigger;

pub fn check(ctx: &Ctx, model: &Model) {
    for flow in model.flows.iter().filter(|f| !f.link) {
        let (source, target) = (&model.nodes[flow.source], &model.nodes[flow.target]);
        if source.kind == Kind::Throw(EventTrigger::Link) {
            ctx.error(
                flow.tokens(),
                format!(
                    "the link throw `{}` jumps to its link catch, so it cannot have an outgoing flow of its own (`{} -> {}`); flow out of the link catch instead",
                    source.id, source.id, target.id
                ),
            );
        }
        if target.kind == Kind::Catch(EventTrigger::Link) {
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
            ctx.error(
                arg,
                format!(
                    "a link carries nothing but its name: `{}` takes no `{arg}`",
                    node.id
                ),
            );
        }
    }
}
