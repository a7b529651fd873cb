//! Event rules (see ARCHITECTURE.md, "Compile-time checks"): what each event element may
//! carry, that a message can always be correlated, and the event-based gateway's
//! rules for a mid-flow gate.

use crate::ctx::Ctx;
use crate::model::{Kind, Model};
use crate::parse::{EventTrigger, TimerAst};

pub fn check(ctx: &Ctx, model: &Model) {
    for (n, node) in model.nodes.iter().enumerate() {
        if let Some(event) = &node.event {
            let catches = matches!(
                node.kind,
                Kind::Catch(_)
                    | Kind::Receive
                    | Kind::Boundary { .. }
                    | Kind::StartEvent(_)
                    | Kind::EventSubStart { .. }
            );
            let name = event
                .name
                .as_ref()
                .map(|n| format!("`{:?}` ", n.value()))
                .unwrap_or_default();
            if node.kind == Kind::Receive && event.trigger != EventTrigger::Message {
                ctx.error(
                    &event.keyword,
                    format!(
                        "a receive task waits for a message, not a {kw}: `receive {id}: message(\"name\", key = |data| ...);` — to wait for a {kw}, use a catch event: `catch {id}: {kw}(...);`",
                        kw = event.keyword,
                        id = node.id,
                    ),
                );
            }
            if let (Kind::StartEvent(EventTrigger::Timer), Some(TimerAst::FromData(closure))) =
                (node.kind, &event.timer)
            {
                ctx.error(
                    closure,
                    format!(
                        "a timer start event starts instances, so it has no instance data to read its time from: give it a fixed time, `start {id}: timer(every = Duration::from_secs(3600));` — a timer read off the data goes on a catch or boundary, `catch due: timer(|data| data.due);`",
                        id = node.id,
                    ),
                );
            }
            let message_start = matches!(node.kind, Kind::StartEvent(EventTrigger::Message));
            if let Some((key, _)) = event.key.as_ref().filter(|_| message_start) {
                ctx.error(
                    key,
                    format!(
                        "a message start event takes no `key`: the published message's key becomes the new instance's correlation key — remove `{key}`"
                    ),
                );
            }
            if event.trigger == EventTrigger::Message && event.key.is_none() && !message_start {
                // An imported event gets its key from a binding of the element.
                let keyword = match node.kind {
                    Kind::Receive => Some("receive"),
                    Kind::Catch(_) => Some("catch"),
                    Kind::Boundary { .. } => Some("boundary"),
                    Kind::Throw(_) => Some("throw"),
                    Kind::End => Some("end"),
                    Kind::EventSubStart { .. } => Some("start"),
                    _ => None,
                };
                let add = match (model.file.is_some(), keyword) {
                    (true, Some(keyword)) => {
                        let named = event
                            .name
                            .as_ref()
                            .map(|n| format!("{:?}, ", n.value()))
                            .unwrap_or_default();
                        format!("bind one to it, e.g. `{keyword} {}: message({named}key = |data| data.id.clone());`", node.id)
                    }
                    _ => "add one, e.g. `key = |data| data.id.clone()`".to_string(),
                };
                ctx.error(
                    &event.keyword,
                    format!(
                        "`{}` {} a message but gives no correlation key, so the engine cannot tell which waiting instance the {name}message is for; {add} (any `ToString` value)",
                        node.id,
                        if catches { "waits for" } else { "sends" },
                    ),
                );
            }
            // What a link may carry is `check::link`'s to say.
            let link = event.trigger == EventTrigger::Link;
            if event.trigger != EventTrigger::Message && !link {
                if let Some((key, _)) = &event.key {
                    ctx.error(
                        key,
                        format!(
                            "only a message has a correlation key; a {} reaches every instance waiting for it — remove `key`, or make it a `message(...)`",
                            event.keyword
                        ),
                    );
                }
            }
            if let Some((apply, _)) = event.apply.as_ref().filter(|_| !catches && !link) {
                let mend = if matches!(
                    event.trigger,
                    EventTrigger::Error | EventTrigger::Escalation
                ) {
                    format!("an {} thrown here carries only its code", event.keyword)
                } else {
                    "to send a payload, give it with `payload = |data| ...`".to_string()
                };
                ctx.error(
                    apply,
                    format!(
                        "`apply` maps a caught payload into the data, but `{}` is {}, which sends — remove `apply`; {mend}",
                        node.id,
                        node.kind.describe_with_article()
                    ),
                );
            }
            if let Some((payload, _)) = event.payload.as_ref().filter(|_| catches && !link) {
                ctx.error(
                    payload,
                    format!(
                        "`payload` is what a throw sends, but `{}` is {}, which waits — remove `payload`; to take what it receives into the data, use `apply = |data, payload: &P| ...`",
                        node.id,
                        node.kind.describe_with_article()
                    ),
                );
            }
        }
        if node.kind.is_event_gate() {
            event_gate(ctx, model, n);
        }
    }
}

/// The event-based gateway's rules, for a mid-flow exclusive gate and for an
/// instantiating one (whose arms must be messages): at least two arms, each a
/// message, timer, signal or conditional catch or a receive task entered only from
/// the gate, no guards on arms, no boundary on a receive-task arm, and message catches
/// and receive tasks never mixed.
fn event_gate(ctx: &Ctx, model: &Model, n: usize) {
    let gate = &model.nodes[n];
    let instantiating = gate.kind != Kind::EventGate;
    // A process imported from a diagram is mended in the modeler, not in the DSL.
    let imported = model.file.is_some();
    if gate.outgoing.len() < 2 && !gate.loose_out && instantiating {
        let parallel = gate.kind == (Kind::InstantiatingGate { parallel: true });
        let what = if parallel {
            "one instance takes a message on every arm"
        } else {
            "each message for one of its arms starts an instance on that arm"
        };
        let mend = match gate.outgoing.first() {
            Some(&f) if imported => {
                let arm = model.flows[f].target_ident;
                format!(
                    "draw another message catch event after it in the modeler — or, to start instances on `{arm}`'s message alone, remove the gateway and make `{arm}` a message start event"
                )
            }
            None if imported => "draw sequence flows from it to the message catch events (or receive tasks) that start instances, in the modeler".to_string(),
            Some(&f) => {
                let arm = model.flows[f].target_ident;
                format!(
                    "add another message arm, e.g. `catch other: message(\"other\", key = |d| ...);` and `{} -> other;` — or, to start instances on `{arm}`'s message alone, drop the gateway and make `{arm}` a message start event: `start {arm}: message(\"name\", apply = ...);`",
                    gate.id
                )
            }
            None => format!(
                "flow it into the message catch events (or receive tasks) that start instances, e.g. `{} -> paid, shipped;`",
                gate.id
            ),
        };
        let has = match gate.outgoing.first() {
            Some(&f) => format!("only one arm (`{}`)", model.flows[f].target_ident),
            None => "no arm".to_string(),
        };
        ctx.error(
            gate.id,
            format!(
                "the instantiating event-based gateway `{}` has {has}; {what}, so it needs at least two — {mend}",
                gate.id
            ),
        );
    } else if gate.outgoing.len() < 2 && !gate.loose_out {
        let (has, example) = match gate.outgoing.first() {
            Some(&f) if imported => (
                format!("only one arm (`{}`)", model.flows[f].target_ident),
                "draw another event after it in the modeler, e.g. a timer catch event for a time-out".to_string(),
            ),
            None if imported => (
                "no arm".to_string(),
                "draw sequence flows from it to the events it waits for (message, signal or timer catch events, or receive tasks) in the modeler".to_string(),
            ),
            Some(&f) => (
                format!("only one arm (`{}`)", model.flows[f].target_ident),
                format!(
                    "add another, e.g. a time-out: `catch timeout: timer(Duration::from_secs(30));` and `{} -> timeout;`",
                    gate.id
                ),
            ),
            None => (
                "no arm".to_string(),
                format!(
                    "flow it into the events it waits for, e.g. `{} -> paid, timeout;` with a message catch `paid` and a timer catch `timeout`",
                    gate.id
                ),
            ),
        };
        ctx.error(
            gate.id,
            format!(
                "the event-based gateway `{}` has {has}; it takes the arm whose event comes first, so it needs at least two — {example}",
                gate.id
            ),
        );
    }
    // The flows to the first message catch and the first receive task among the arms.
    let (mut message_catch, mut receive) = (None, None);
    for &f in &gate.outgoing {
        let flow = &model.flows[f];
        let arm = &model.nodes[flow.target];
        if let Some(guard) = flow.guard {
            let (what, mend) = match (flow.is_default(), imported) {
                (true, false) => ("be the default (`else`)", "remove `else`"),
                (true, true) => ("be the default", "unmark it as the gateway's default flow in the modeler"),
                (false, false) => ("have a condition (`when`)", "remove the condition; to choose by the data, put an exclusive gateway after the arm"),
                (false, true) => ("have a condition", "remove its binding (`flow ... when`) and its condition in the modeler; to choose by the data, put an exclusive gateway after the arm"),
            };
            let (gateway, chooses) = if instantiating {
                (
                    "an instantiating event-based gateway",
                    "the message that comes takes its arm",
                )
            } else {
                (
                    "an event-based gateway",
                    "the event that comes first chooses the arm",
                )
            };
            ctx.error_at(
                guard.span(),
                format!(
                    "the arm `{} -> {}` of {gateway} cannot {what}: {chooses} — {mend}",
                    gate.id, arm.id
                ),
            );
        }
        match arm.kind {
            Kind::Catch(EventTrigger::Message) => message_catch = message_catch.or(Some(f)),
            Kind::Receive => {
                receive = receive.or(Some(f));
                // A receive-task arm carries no boundary event — the
                // gateway's other arms are the alternatives to its message.
                for &b in &arm.boundaries {
                    ctx.error(
                        model.nodes[b].id,
                        format!(
                            "boundary event `{}` sits on `{}`, a receive task that is an arm of the event-based gateway `{}`; an arm carries no boundary event — make the alternative another arm of `{}` (e.g. a timer catch)",
                            model.nodes[b].id, arm.id, gate.id, gate.id
                        ),
                    );
                }
            }
            Kind::Catch(EventTrigger::Link) => {
                ctx.error(
                    flow.target_ident,
                    format!(
                        "`{}` is a link catch event, which waits for nothing: it is entered only by the link throws of its name, so it cannot be an arm of the {} `{}` — an arm waits for {}; to jump after the event, end its path with a link throw",
                        arm.id,
                        gate.kind.describe(),
                        gate.id,
                        if instantiating { "a message" } else { "a message, signal, timer or condition" },
                    ),
                );
                continue;
            }
            Kind::Catch(trigger) if instantiating => {
                // An instance can only be started by a message.
                let (arm_id, gate_id) = (arm.id, gate.id);
                let kw = arm
                    .event
                    .as_ref()
                    .map_or_else(|| "event".to_string(), |e| e.keyword.to_string());
                let parallel = gate.kind == (Kind::InstantiatingGate { parallel: true });
                let starts_alone =
                    !parallel && matches!(trigger, EventTrigger::Timer | EventTrigger::Signal);
                let make = match imported {
                    true => "give it a message event definition in the modeler".to_string(),
                    false => format!("e.g. `catch {arm_id}: message(\"name\", key = |d| ...);`"),
                };
                let other = if starts_alone && imported {
                    format!(
                        "or, to start instances on the {kw} as well, draw `{arm_id}` as a start event of its own, without the flow from `{gate_id}`"
                    )
                } else if starts_alone {
                    format!(
                        "or, to start instances on the {kw} as well, make `{arm_id}` a start event of its own — `start {arm_id}: {kw}(...);` — and remove the flow `{gate_id} -> {arm_id}`"
                    )
                } else {
                    let after = gate
                        .outgoing
                        .iter()
                        .map(|&o| &model.flows[o])
                        .find(|o| o.target != flow.target)
                        .map_or_else(|| "an arm".to_string(), |o| format!("`{}`", o.target_ident));
                    format!(
                        "or, to wait for the {kw} once the instance has started, move `{arm_id}` onto the path after {after}"
                    )
                };
                ctx.error(
                    flow.target_ident,
                    format!(
                        "`{arm_id}` waits for a {kw}, but it is an arm of the instantiating event-based gateway `{gate_id}`, whose arms start instances, and only a message can start one — make `{arm_id}` a message catch event ({make}), {other}"
                    ),
                );
                continue;
            }
            Kind::Catch(_) => {}
            _ => {
                ctx.error(
                    flow.target_ident,
                    format!(
                        "`{}` is {}, but an arm of the {} `{}` must wait for {} — flow from `{}` into such an event, and from the event on to `{}`",
                        arm.id,
                        arm.kind.describe_with_article(),
                        gate.kind.describe(),
                        gate.id,
                        if instantiating {
                            "a message: a message catch event or a receive task"
                        } else {
                            "an event: a message, signal or timer catch event, or a receive task"
                        },
                        gate.id,
                        arm.id,
                    ),
                );
                continue;
            }
        }
        // Every other flow into the arm, each where it is written.
        for &other in arm.incoming.iter().filter(|&&i| model.flows[i].source != n) {
            let other = &model.flows[other];
            ctx.error(
                other.tokens(),
                format!(
                    "`{}` is an arm of the event-based gateway `{}`, so its only incoming flow must be the gateway's, but `{} -> {}` flows into it too — move this flow to the element after `{}` (merge there)",
                    arm.id, gate.id, other.source_ident, arm.id, arm.id
                ),
            );
        }
    }
    if let (Some(catch), Some(receive)) = (message_catch, receive) {
        // Reported at whichever of the two comes later among the arms.
        let (first, second) = (catch.min(receive), catch.max(receive));
        let (first, second) = (&model.flows[first], &model.flows[second]);
        let what =
            |flow: &crate::model::Flow| model.nodes[flow.target].kind.describe_with_article();
        let mend = match imported {
            true => "draw it in the modeler as the same kind as",
            false => "declare it like",
        };
        ctx.error(
            second.target_ident,
            format!(
                "`{}` is {}, but the event-based gateway `{}` already waits for a message with {} (`{}`); its message arms must all be catch events or all receive tasks — {mend} `{}`",
                second.target_ident,
                what(second),
                gate.id,
                what(first),
                first.target_ident,
                first.target_ident,
            ),
        );
    }
}
