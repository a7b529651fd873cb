//! Each node as its BPMN element: the element with its attributes, its loop or
//! multi-instance characteristics, and its event definition.

use super::*;

/// A task's element: the type its diagram gave it, where thresh runs that type as a
/// task with a handler, else `serviceTask`.
fn task_tag(tag: &str) -> &str {
    match tag {
        "task"
        | "scriptTask"
        | "sendTask"
        | "businessRuleTask"
        | "manualTask"
        | "intermediateThrowEvent"
        | "intermediateCatchEvent" => tag,
        _ => "serviceTask",
    }
}

pub(super) fn node(w: &mut Writer, model: &Model, globals: &Globals, n: usize) {
    let node = &model.nodes[n];
    let name = model.label(n);
    let direction = gateway_direction(node.incoming.len(), node.outgoing.len());
    let default_id = node
        .default
        .and_then(|f| model.flows.get(f))
        .filter(|f| f.drawn)
        .map(|f| f.id.clone());
    let host_id = match node.elem {
        Elem::Boundary { host, .. } => model.nodes.get(host).map(|h| h.id.clone()),
        _ => None,
    };
    let mut attrs: Vec<(&str, &str)> = vec![("id", &node.id)];
    // An imported process's elements keep the names their diagram gives (an element
    // it left unnamed stays so); an inline one's are labelled by their ids.
    if !model.imported() || !node.name.is_empty() {
        attrs.push(("name", &name));
    }
    let tag = match &node.elem {
        Elem::Start { interrupting, .. } => {
            if !interrupting {
                attrs.push(("isInterrupting", "false"));
            }
            "startEvent"
        }
        Elem::End { .. } => "endEvent",
        Elem::Catch(_) => "intermediateCatchEvent",
        Elem::Throw(_) => "intermediateThrowEvent",
        Elem::Boundary { interrupting, .. } => {
            if let Some(h) = &host_id {
                attrs.push(("attachedToRef", h));
            }
            if !interrupting {
                attrs.push(("cancelActivity", "false"));
            }
            "boundaryEvent"
        }
        Elem::Gateway(g) => {
            match g {
                Gateway::EventBased {
                    instantiate,
                    parallel,
                } => {
                    attrs.push(("gatewayDirection", "Diverging"));
                    if *instantiate {
                        attrs.push(("instantiate", "true"));
                        attrs.push((
                            "eventGatewayType",
                            if *parallel { "Parallel" } else { "Exclusive" },
                        ));
                    }
                }
                _ => attrs.push(("gatewayDirection", direction)),
            }
            match g {
                Gateway::Exclusive => "exclusiveGateway",
                Gateway::Parallel => "parallelGateway",
                Gateway::Inclusive => "inclusiveGateway",
                Gateway::Complex => "complexGateway",
                Gateway::EventBased { .. } => "eventBasedGateway",
            }
        }
        Elem::ServiceTask => task_tag(&node.tag),
        Elem::UserTask => "userTask",
        Elem::ReceiveTask(message) => {
            if let Some(id) = message.as_deref().and_then(|m| globals.id("message", m)) {
                attrs.push(("messageRef", id));
            }
            "receiveTask"
        }
        Elem::SubProcess => "subProcess",
        Elem::CallActivity(callee) => {
            attrs.push(("calledElement", callee));
            "callActivity"
        }
        Elem::Transaction => "transaction",
        Elem::CompensationTask => {
            attrs.push(("isForCompensation", "true"));
            task_tag(&node.tag)
        }
        Elem::EventSubProcess => {
            attrs.push(("triggeredByEvent", "true"));
            "subProcess"
        }
    };
    let takes_default = matches!(
        node.elem,
        Elem::Gateway(Gateway::Exclusive | Gateway::Inclusive | Gateway::Complex)
            | Elem::ServiceTask
            | Elem::UserTask
            | Elem::ReceiveTask(_)
            | Elem::SubProcess
            | Elem::CallActivity(_)
            | Elem::Transaction
    );
    if let (Some(d), true) = (&default_id, takes_default) {
        attrs.push(("default", d));
    }
    let tag = format!("bpmn:{tag}");
    w.open(&tag, &attrs);
    documentation(w, &node.doc);
    for &f in &node.incoming {
        if let Some(flow) = model.flows.get(f) {
            w.text("bpmn:incoming", &[], &flow.id);
        }
    }
    for &f in &node.outgoing {
        if let Some(flow) = model.flows.get(f) {
            w.text("bpmn:outgoing", &[], &flow.id);
        }
    }
    if let Some(def) = node.elem.event_def() {
        event_definition(w, globals, &node.id, def);
    }
    if !node.activation.is_empty() {
        w.text(
            "bpmn:activationCondition",
            &[("xsi:type", "bpmn:tFormalExpression")],
            &tidy_condition(&node.activation),
        );
    }
    if let Some(mark) = &node.looping {
        loop_characteristics(w, mark);
    }
    if node.elem.is_container() {
        scope(w, model, globals, Some(n));
    }
    w.end();
}

/// An activity's `multiInstanceLoopCharacteristics` or
/// `standardLoopCharacteristics` (after its flows, before a sub-process's content,
/// as the schema orders them). A count is the `loopCardinality`; a collection, which
/// BPMN would take from a data input, is said in the marker's documentation.
pub(super) fn loop_characteristics(w: &mut Writer, mark: &crate::diagram::model::LoopMark) {
    use crate::diagram::model::LoopMark;
    let formal = [("xsi:type", "bpmn:tFormalExpression")];
    match mark {
        LoopMark::Multi {
            sequential,
            items,
            completion,
        } => {
            w.open(
                "bpmn:multiInstanceLoopCharacteristics",
                &[("isSequential", if *sequential { "true" } else { "false" })],
            );
            match items.strip_prefix("count = ") {
                Some(count) => w.text("bpmn:loopCardinality", &formal, &tidy_condition(count)),
                None => w.text("bpmn:documentation", &[], &tidy_condition(items)),
            }
            if !completion.is_empty() {
                w.text(
                    "bpmn:completionCondition",
                    &formal,
                    &tidy_condition(completion),
                );
            }
            w.end();
        }
        LoopMark::Standard {
            test_before,
            condition,
            max,
        } => {
            let max = max.map(|m| m.to_string());
            let mut attrs = vec![("testBefore", if *test_before { "true" } else { "false" })];
            if let Some(max) = &max {
                attrs.push(("loopMaximum", max));
            }
            w.open("bpmn:standardLoopCharacteristics", &attrs);
            w.text("bpmn:loopCondition", &formal, &tidy_condition(condition));
            w.end();
        }
    }
}

pub(super) fn gateway_direction(incoming: usize, outgoing: usize) -> &'static str {
    match (incoming > 1, outgoing > 1) {
        (true, true) => "Mixed",
        (true, false) => "Converging",
        (false, true) => "Diverging",
        (false, false) => "Unspecified",
    }
}

pub(super) fn event_definition(w: &mut Writer, globals: &Globals, node_id: &str, def: &EventDef) {
    let id = format!("{node_id}_definition");
    match def {
        EventDef::Message(name) => {
            let mut attrs = vec![("id", id.as_str())];
            if let Some(r) = globals.id("message", name) {
                attrs.push(("messageRef", r));
            }
            w.empty("bpmn:messageEventDefinition", &attrs);
        }
        EventDef::Signal(name) => {
            let mut attrs = vec![("id", id.as_str())];
            if let Some(r) = globals.id("signal", name) {
                attrs.push(("signalRef", r));
            }
            w.empty("bpmn:signalEventDefinition", &attrs);
        }
        EventDef::Error(code) => {
            let mut attrs = vec![("id", id.as_str())];
            if let Some(r) = code.as_deref().and_then(|c| globals.id("error", c)) {
                attrs.push(("errorRef", r));
            }
            w.empty("bpmn:errorEventDefinition", &attrs);
        }
        EventDef::Escalation(code) => {
            let mut attrs = vec![("id", id.as_str())];
            if let Some(r) = code.as_deref().and_then(|c| globals.id("escalation", c)) {
                attrs.push(("escalationRef", r));
            }
            w.empty("bpmn:escalationEventDefinition", &attrs);
        }
        EventDef::Timer(timer) => {
            w.open("bpmn:timerEventDefinition", &[("id", &id)]);
            w.text(
                &format!("bpmn:{}", timer.element),
                &[("xsi:type", "bpmn:tFormalExpression")],
                &timer.text,
            );
            w.end();
        }
        EventDef::Conditional(condition) => {
            w.open("bpmn:conditionalEventDefinition", &[("id", &id)]);
            w.text(
                "bpmn:condition",
                &[("xsi:type", "bpmn:tFormalExpression")],
                &tidy_condition(condition),
            );
            w.end();
        }
        EventDef::Terminate => w.empty("bpmn:terminateEventDefinition", &[("id", &id)]),
        EventDef::Link(name) => w.empty("bpmn:linkEventDefinition", &[("id", &id), ("name", name)]),
        EventDef::Compensate(activity) => {
            let mut attrs = vec![("id", id.as_str())];
            if let Some(a) = activity {
                attrs.push(("activityRef", a));
            }
            w.empty("bpmn:compensateEventDefinition", &attrs);
        }
        EventDef::Cancel => w.empty("bpmn:cancelEventDefinition", &[("id", &id)]),
    }
}
