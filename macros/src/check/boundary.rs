//! Boundary and error rules: a boundary event sits on an
//! activity and is only left (never entered) by flows; an error boundary always
//! interrupts; an activity has at most one interrupting boundary per event
//! definition; errors and escalations thrown by end events carry a code; a
//! condition's dependency list, when given, names at least one field.

use crate::ctx::Ctx;
use crate::model::{Kind, Model};
use crate::parse::{EventTrigger, TimerAst};

pub fn check(ctx: &Ctx, model: &Model) {
    for (n, node) in model.nodes.iter().enumerate() {
        let event = node.event.as_ref();
        if let (
            Kind::Boundary {
                interrupting,
                trigger,
            },
            Some(activity),
        ) = (node.kind, node.attached_to)
        {
            let host = &model.nodes[activity];
            if !host.kind.is_activity() {
                // An event waits already: racing a second event against it is a gate's job.
                let mend = if matches!(host.kind, Kind::Catch(_)) {
                    format!(
                        "; to take whichever of two events comes first, put an event-based gateway before both: `event_based gate;`, `catch {}: ...;` and `gate -> {}, {};`",
                        node.id, host.id, node.id
                    )
                } else {
                    String::new()
                };
                ctx.error(
                    node.on.unwrap_or(node.id),
                    format!(
                        "boundary event `{}` is attached to {} `{}`, but boundary events sit only on activities — a task, receive task, user task or sub-process{mend}",
                        node.id,
                        host.kind.describe_with_article(),
                        host.id
                    ),
                );
            }
            if let (EventTrigger::Error, Some(marker)) = (trigger, node.non_interrupting) {
                ctx.error(
                    marker,
                    "an error boundary event always interrupts: an error ends the activity that threw it — remove `non_interrupting`",
                );
            }
            // Two compensation boundaries are `check::compensation`'s.
            if interrupting && trigger != EventTrigger::Compensation {
                let same = model.nodes[activity]
                    .boundaries
                    .iter()
                    .take_while(|&&b| b != n)
                    .find(|&&b| {
                        let other = &model.nodes[b];
                        other.kind == node.kind && definition(other) == definition(node)
                    });
                if let Some(&first) = same {
                    let event = event_phrase(node);
                    ctx.error(
                        node.id,
                        format!(
                            "`{}` already has an interrupting boundary event `{}` for the same{event}: when it fires, the first interrupts `{}`, so `{}` never would — remove one, or make this one `non_interrupting` to run beside `{}`",
                            host.id, model.nodes[first].id, host.id, node.id, host.id
                        ),
                    );
                }
            }
        }
        for &f in &node.incoming {
            let flow = &model.flows[f];
            if matches!(node.kind, Kind::Boundary { .. }) && !flow.link {
                ctx.error(
                    flow.tokens(),
                    format!(
                        "boundary event `{}` is entered through its activity, so it cannot have an incoming flow (`{} -> {}`) — flow into the activity instead",
                        node.id, flow.source_ident, node.id
                    ),
                );
            }
        }
        let code_needed = matches!(node.kind, Kind::ErrorEnd | Kind::Escalate { .. });
        if let Some(event) = event.filter(|e| code_needed && e.code.is_none()) {
            ctx.error(
                &event.keyword,
                format!(
                    "`{}` throws {} but names no code; give one: `{} {}: {}(\"CODE\");` — only a boundary may leave the code out, to catch every one",
                    node.id,
                    if node.kind == Kind::ErrorEnd { "an error" } else { "an escalation" },
                    if node.kind.is_end() { "end" } else { "throw" },
                    node.id,
                    event.keyword
                ),
            );
        }
        if let Some((on, brackets, fields)) = event.and_then(|e| e.on.as_ref()) {
            if fields.is_empty() {
                ctx.error_at(
                    *brackets,
                    format!("`{on} = []` would never re-evaluate the condition; name the fields it reads (`on = [total]`), or leave `on` out to re-evaluate on every commit"),
                );
            }
        }
    }
}

/// The event of a boundary (or event sub-process start) as messages name it, with a
/// leading space: `` `message("paid")` ``, ` timer`, `` `error` (any code) ``.
pub(super) fn event_phrase(node: &crate::model::Node) -> String {
    node.event
        .as_ref()
        .map_or(String::new(), |e| match (&e.name, &e.code) {
            (Some(name), _) => format!(" `{}(\"{}\")`", e.keyword, name.value()),
            (None, Some(code)) => format!(" `{}(\"{}\")`", e.keyword, code.value()),
            (None, None) if e.trigger == EventTrigger::Timer => " timer".to_string(),
            (None, None) if e.trigger == EventTrigger::Condition => " condition".to_string(),
            (None, None) => format!(" `{}` (any code)", e.keyword),
        })
}

/// What makes two boundary events the same event definition: the trigger and what
/// it names (a message or signal name, an error or escalation code, the timer or
/// condition as written).
pub(super) fn definition(node: &crate::model::Node) -> String {
    let Some(event) = &node.event else {
        return String::new();
    };
    let name = event.name.as_ref().map(|n| n.value());
    let code = event.code.as_ref().map(|c| c.value());
    let text = |e: &syn::Expr| quote::ToTokens::to_token_stream(e).to_string();
    let written = match (&event.timer, &event.condition) {
        (Some(TimerAst::After(d)), _) => text(d),
        (Some(TimerAst::At(at)), _) => format!("at {}", text(at)),
        (Some(TimerAst::Every { every, times }), _) => {
            format!("every {} {:?}", text(every), times.as_ref().map(text))
        }
        (Some(TimerAst::FromData(closure)), _) => format!("data {}", text(closure)),
        (None, Some(condition)) => text(condition),
        (None, None) => String::new(),
    };
    format!("{:?}|{name:?}|{code:?}|{written}", event.trigger)
}
