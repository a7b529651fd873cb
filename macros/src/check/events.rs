//! Event rules (ADR-006 §2.1–§2.5, ADR-005 §2.12.5): what each event element may
//! carry, that a message can always be correlated, and the event-based gateway's
//! rules for a mid-flow gate.

use crate::ctx::Ctx;
use crate::model::{Kind, Model};
use crate::parse::EventTrigger;

pub fn check(ctx: &Ctx, model: &Model) {
    for (n, node) in model.nodes.iter().enumerate() {
        if let Some(event) = &node.event {
            let catches = matches!(node.kind, Kind::Catch(_) | Kind::Receive);
            if node.kind == Kind::Receive && event.trigger != EventTrigger::Message {
                ctx.error(
                    &event.keyword,
                    format!("a receive task waits for a message: `receive {}: message(\"name\", key = |data| ...)`; for a {} use a catch event", node.id, event.keyword),
                );
            }
            if event.trigger == EventTrigger::Message && event.key.is_none() {
                let role = if catches { "waits for" } else { "sends" };
                ctx.error(
                    &event.keyword,
                    format!(
                        "`{}` {role} a message but gives no correlation key, so the engine cannot tell which instance it belongs to; add `key = |data| data.id.clone()` (any `ToString` value)",
                        node.id
                    ),
                );
            }
            if event.trigger != EventTrigger::Message {
                if let Some((key, _)) = &event.key {
                    ctx.error(key, format!("only a message has a correlation key; a {} reaches every catcher — remove `key`", event.keyword));
                }
            }
            if let Some((apply, _)) = event.apply.as_ref().filter(|_| !catches) {
                ctx.error(apply, format!("`apply` maps a caught payload into the data; {} throws — give what it sends with `payload = |data| ...`", node.kind.a()));
            }
            if let Some((payload, _)) = event.payload.as_ref().filter(|_| catches) {
                ctx.error(payload, format!("`payload` is what a throw sends; {} catches — map what it receives with `apply = |data, payload: &P| ...`", node.kind.a()));
            }
        }
        if node.kind == Kind::EventGate {
            event_gate(ctx, model, n);
        }
    }
}

/// ADR-005 §2.12.5, for a mid-flow exclusive gate.
fn event_gate(ctx: &Ctx, model: &Model, n: usize) {
    let gate = &model.nodes[n];
    if gate.outgoing.len() < 2 && !gate.loose_out {
        ctx.error(
            gate.id,
            format!(
                "the event-based gateway `{}` has {} arm; it chooses between events, so it needs at least two, e.g. `{} -> paid, timeout;` with a message catch and a timer catch",
                gate.id,
                gate.outgoing.len(),
                gate.id
            ),
        );
    }
    let (mut message_catch, mut receive) = (None, None);
    for &f in &gate.outgoing {
        let flow = &model.flows[f];
        let arm = &model.nodes[flow.target];
        if let Some(guard) = flow.guard {
            ctx.error_at(
                guard.span(),
                format!("the arm `{} -> {}` of an event-based gateway cannot have a condition or default: the first event to come chooses the arm", gate.id, arm.id),
            );
        }
        match arm.kind {
            Kind::Catch(EventTrigger::Message) => message_catch = message_catch.or(Some(arm.id)),
            Kind::Receive => receive = receive.or(Some(arm.id)),
            Kind::Catch(_) => {}
            _ => {
                ctx.error(
                    flow.tokens(),
                    format!(
                        "`{}` is {}, but an event-based gateway's arm must wait for an event: a message, signal or timer catch event, or a receive task",
                        arm.id,
                        arm.kind.a()
                    ),
                );
                continue;
            }
        }
        if arm.incoming.len() > 1 {
            ctx.error(
                arm.id,
                format!(
                    "`{}` is an arm of the event-based gateway `{}`, so its only incoming flow must be the gateway's; it has {} — merge the other paths after the arm",
                    arm.id,
                    gate.id,
                    arm.incoming.len()
                ),
            );
        }
    }
    if let (Some(catch), Some(receive)) = (message_catch, receive) {
        ctx.error(
            gate.id,
            format!(
                "the event-based gateway `{}` mixes a message catch event (`{catch}`) and a receive task (`{receive}`); use one or the other for its message arms",
                gate.id
            ),
        );
    }
}
