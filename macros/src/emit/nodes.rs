//! The node table: each node's `NodeKind`, one function per family of nodes. The
//! user's code is referred to by name only ([`UserFn::name`]); [`super::fns`] emits it.

use proc_macro2::TokenStream;
use quote::quote;

use super::fns::{Role, UserFn};
use crate::model::{Kind, Model, Node};
use crate::parse::{EventAst, EventTrigger};

/// The `NodeKind` of node `n` (without its `NodeKind::` path).
pub fn kind(model: &Model, n: usize) -> TokenStream {
    let node = &model.nodes[n];
    match node.kind {
        Kind::Start => quote!(Start),
        Kind::End => quote!(End),
        Kind::Terminate => quote!(Terminate),
        Kind::User => quote!(User),
        Kind::Exclusive
        | Kind::Parallel
        | Kind::Inclusive
        | Kind::Complex
        | Kind::EventGate
        | Kind::InstantiatingGate { .. } => gateway(model, n),
        Kind::Task | Kind::SubProcess | Kind::EventSubProcess => activity(model, n),
        Kind::Call => call(n, node),
        Kind::ErrorEnd | Kind::Escalate { .. } => code_throw(node),
        // A link throw and its catch are pass-throughs joined by a direct edge.
        Kind::Catch(EventTrigger::Link) | Kind::Throw(EventTrigger::Link) => quote!(Link),
        Kind::Compensate { .. }
        | Kind::CancelEnd
        | Kind::Boundary {
            trigger: EventTrigger::Compensation | EventTrigger::Cancel,
            ..
        }
        | Kind::EventSubStart {
            trigger: EventTrigger::Compensation,
            ..
        } => compensation(node),
        Kind::StartEvent(_)
        | Kind::Catch(_)
        | Kind::Receive
        | Kind::Boundary { .. }
        | Kind::EventSubStart { .. }
        | Kind::Throw(_)
        | Kind::ThrowEnd(_) => event_node(n, node),
    }
}

/// A gateway: its kind, and a converging OR-join's or complex gateway's state.
fn gateway(model: &Model, n: usize) -> TokenStream {
    let node = &model.nodes[n];
    let converging = node.incoming.len() > 1;
    let masks = if converging {
        model.reach_masks(n)
    } else {
        Vec::new()
    };
    match node.kind {
        Kind::Exclusive => quote!(Exclusive),
        Kind::Parallel => quote!(Parallel),
        Kind::Inclusive => quote!(Inclusive { reach: &[#(#masks),*] }),
        Kind::Complex => {
            let triples = if converging {
                activation(model, n)
            } else {
                Vec::new()
            };
            quote!(Complex { reach: &[#(#masks),*], activation: &[#(#triples),*] })
        }
        Kind::EventGate => quote!(EventGate),
        Kind::InstantiatingGate { parallel } => quote!(InstantiatingGate { parallel: #parallel }),
        _ => unreachable!("`kind` passes gateways only"),
    }
}

/// A converging complex gateway's activation triples, each required flow as a bit of
/// the gateway's incoming flows.
fn activation(model: &Model, n: usize) -> Vec<TokenStream> {
    let node = &model.nodes[n];
    let sources: Vec<String> = node
        .incoming
        .iter()
        .map(|&f| model.nodes[model.flows[f].source].id.to_string())
        .collect();
    let triple = |(k, triple): (usize, &crate::parse::ActivationAst)| {
        let count = triple
            .count
            .as_ref()
            .map_or(1, |c| c.base10_parse::<u32>().unwrap_or(1));
        let required = triple
            .require
            .iter()
            .filter_map(|r| sources.iter().position(|s| r == s))
            .fold(0u64, |mask, i| mask | 1 << i);
        let condition = UserFn::Activation(n, k).some_if(triple.when.is_some());
        quote! {
            ::thresh::__private::Activation { condition: #condition, count: #count, required: #required }
        }
    };
    node.activation.iter().enumerate().map(triple).collect()
}

/// An activity: a task (its handler), or a sub-process (its start and its event
/// sub-processes).
fn activity(model: &Model, n: usize) -> TokenStream {
    let starts = || model.starts_in(Some(n)).into_iter();
    let event_subs = super::event_subs(model, Some(n));
    match model.nodes[n].kind {
        Kind::Task => {
            let f = UserFn::Task(model.handler_fn[n]).name();
            quote!(Task(#f))
        }
        Kind::SubProcess => {
            let start = starts()
                .find(|&s| model.nodes[s].kind == Kind::Start)
                .expect("a sub-process has its none start, or the model has errors");
            let transaction = model.nodes[n].transaction;
            quote!(SubProcess { start: #start, event_subs: &[#(#event_subs),*], transaction: #transaction })
        }
        Kind::EventSubProcess => {
            let start = starts()
                .next()
                .expect("an event sub-process has its start, or the model has errors");
            quote!(EventSubProcess { start: #start, event_subs: &[#(#event_subs),*] })
        }
        _ => unreachable!("`kind` passes activities only"),
    }
}

/// A call activity: the called process's name and its starter.
fn call(n: usize, node: &Node) -> TokenStream {
    let name = node
        .handler
        .and_then(|binding| crate::model::call::parts(binding).ok())
        .map(|parts| parts.name)
        .expect("a call activity's binding was read by `model`");
    let start = UserFn::Call(n).name();
    let multi = matches!(
        node.looping.as_ref().map(|m| &m.kind),
        Some(crate::parse::loops::LoopAstKind::Multi(_))
    );
    let start_item = UserFn::CallItem(n).some_if(multi);
    quote!(Call(::thresh::__private::CallActivity { callee: #name, start: #start, start_item: #start_item }))
}

/// What compensation and transactions add: a compensation throw (its activity, or
/// the whole scope), a cancel end, a compensation boundary with its handler, a cancel
/// boundary, a compensation event sub-process's start.
fn compensation(node: &Node) -> TokenStream {
    let option = |v: Option<usize>| match v {
        Some(v) => quote!(::core::option::Option::Some(#v)),
        None => quote!(::core::option::Option::None),
    };
    // `check::compensation` makes sure a boundary is attached and has its handler.
    let activity = node.attached_to.unwrap_or_default();
    match node.kind {
        Kind::Compensate { end } => {
            let target = option(node.compensate_target);
            quote!(Compensate { activity: #target, end: #end })
        }
        Kind::CancelEnd => quote!(CancelEnd),
        Kind::Boundary {
            trigger: EventTrigger::Compensation,
            ..
        } => {
            let handler = node.handler_node.unwrap_or_default();
            quote!(CompensationBoundary { activity: #activity, handler: #handler })
        }
        Kind::Boundary { .. } => quote!(CancelBoundary { activity: #activity }),
        _ => quote!(CompensationStart),
    }
}

/// An error end, or an escalation throw or end: its code.
fn code_throw(node: &Node) -> TokenStream {
    // `check::events` makes sure there is a code.
    let code = match node.event.as_ref().and_then(|e| e.code.as_ref()) {
        Some(code) => quote!(#code),
        None => quote!(""),
    };
    match node.kind {
        Kind::ErrorEnd => quote!(ErrorEnd { code: #code }),
        Kind::Escalate { end } => quote!(Escalate { code: #code, end: #end }),
        _ => unreachable!("`kind` passes code throws only"),
    }
}

/// An element with an event to wait for or to send.
fn event_node(n: usize, node: &Node) -> TokenStream {
    let event = node
        .event
        .as_ref()
        .expect("an element with an event parsed it, or the model has errors");
    let body = match Role::of(node.kind) {
        Some(Role::Catches) => trigger(n, event),
        Some(Role::Throws) => throw(n, event),
        None => unreachable!("`kind` passes elements with an event role only"),
    };
    match node.kind {
        Kind::StartEvent(_) => quote!(StartEvent(#body)),
        Kind::Catch(_) => quote!(Catch(#body)),
        Kind::Receive => quote!(Receive(#body)),
        Kind::Throw(_) => quote!(Throw(#body)),
        Kind::ThrowEnd(_) => quote!(ThrowEnd(#body)),
        Kind::Boundary { interrupting, .. } => {
            let activity = node
                .attached_to
                .expect("a boundary is attached, or the model has errors");
            quote!(Boundary { activity: #activity, trigger: #body, interrupting: #interrupting })
        }
        Kind::EventSubStart { interrupting, .. } => {
            quote!(EventSubStart { trigger: #body, interrupting: #interrupting })
        }
        _ => unreachable!("`kind` passes elements with an event only"),
    }
}

/// What a catch, receive task, start, boundary or event sub-process start waits for.
fn trigger(n: usize, event: &EventAst) -> TokenStream {
    let name = &event.name;
    let apply = UserFn::Apply(n).some_if(event.apply.is_some());
    match event.trigger {
        EventTrigger::Message => {
            let key = UserFn::Key(n).name();
            let reads = match event
                .key
                .as_ref()
                .and_then(|(_, key)| super::reads::key_reads(key))
            {
                Some(fields) => quote!(::core::option::Option::Some(&[#(#fields),*])),
                None => quote!(::core::option::Option::None),
            };
            let decode = UserFn::Decode(n).name();
            let payload_type = UserFn::PayloadType(n).name();
            quote!(::thresh::__private::Trigger::Message { name: #name, key: #key, reads: #reads, apply: #apply, decode: #decode, payload_type: #payload_type })
        }
        EventTrigger::Signal => {
            quote!(::thresh::__private::Trigger::Signal { name: #name, apply: #apply })
        }
        EventTrigger::Link => unreachable!("a link catch is emitted as a pass-through node"),
        EventTrigger::Condition => {
            let f = UserFn::When(n).name();
            let on = event
                .on
                .iter()
                .flat_map(|(_, _, fields)| fields.iter().map(|f| f.to_string()));
            quote!(::thresh::__private::Trigger::Condition { condition: #f, on: &[#(#on),*] })
        }
        EventTrigger::Error | EventTrigger::Escalation => {
            let code = match &event.code {
                Some(code) => quote!(::core::option::Option::Some(#code)),
                None => quote!(::core::option::Option::None),
            };
            let what = if event.trigger == EventTrigger::Error {
                quote!(Error)
            } else {
                quote!(Escalation)
            };
            quote!(::thresh::__private::Trigger::#what { code: #code, apply: #apply })
        }
        EventTrigger::Timer => {
            let f = UserFn::Timer(n).name();
            match event.timer {
                Some(crate::parse::TimerAst::FromData(_)) => {
                    quote!(::thresh::__private::Trigger::Timer(::thresh::__private::TimerDef::Data(#f)))
                }
                _ => {
                    quote!(::thresh::__private::Trigger::Timer(::thresh::__private::TimerDef::Fixed(#f)))
                }
            }
        }
        // Emitted as nodes of their own, by `compensation`.
        EventTrigger::Compensation | EventTrigger::Cancel => TokenStream::new(),
    }
}

/// What a throw (or throwing end) sends.
fn throw(n: usize, event: &EventAst) -> TokenStream {
    let name = &event.name;
    let payload = UserFn::Payload(n).some_if(event.payload.is_some());
    match event.trigger {
        EventTrigger::Message => {
            let key = UserFn::Key(n).name();
            quote!(::thresh::__private::Throw::Message { name: #name, key: #key, payload: #payload })
        }
        _ => quote!(::thresh::__private::Throw::Signal { name: #name, payload: #payload }),
    }
}
