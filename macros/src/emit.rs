//! Stage 4: model → Rust. The process becomes one `static thresh::Process<D>` built
//! entirely at compile time: node and flow tables, handlers and conditions as plain
//! functions, and the OR-joins' reachability masks.

use proc_macro2::{Span, TokenStream};
use quote::{format_ident, quote, quote_spanned, ToTokens};
use syn::spanned::Spanned;

use crate::model::{Kind, Model};
use crate::parse::{EventAst, EventTrigger, TimerAst};

/// The static for `model`. With `has_errors`, an empty graph of the right type: the
/// errors speak for themselves and nothing downstream trips over a missing item.
pub fn process(model: &Model, has_errors: bool) -> TokenStream {
    let Model {
        vis,
        name,
        data,
        doc,
        attrs,
        ..
    } = model;
    let name_str = name.to_string();
    let doc_attr = (!doc.is_empty()).then(|| quote!(#[doc = #doc]));
    let body = if has_errors {
        // The user's handlers, conditions, keys and payload mappings are still
        // emitted (unused), so they are type-checked with the other errors and the
        // imports they use do not read as unused.
        let fns = user_fns(model);
        quote! {
            #(#[allow(dead_code)] #fns)*
            ::thresh::Process { name: #name_str, doc: #doc, nodes: &[], flows: &[], starts: &[], event_subs: &[] }
        }
    } else {
        graph(model)
    };
    quote! {
        #doc_attr
        #(#attrs)*
        #vis static #name: ::thresh::Process<#data> = { #body };
    }
}

fn graph(model: &Model) -> TokenStream {
    let data = model.data;
    let name_str = model.name.to_string();
    let doc = &model.doc;
    let mut fns = Vec::new();

    let nodes = model.nodes.iter().enumerate().map(|(n, node)| {
        let id = node.id.to_string();
        let node_doc = &node.doc;
        let kind = match node.kind {
            Kind::Start => quote!(Start),
            Kind::StartEvent(_) => {
                let event = node.event.as_ref().expect("a start event parsed its event, or the model has errors");
                let trigger = trigger(n, data, event, &mut fns);
                quote!(StartEvent(#trigger))
            }
            Kind::End => quote!(End),
            Kind::Terminate => quote!(Terminate),
            Kind::Exclusive => quote!(Exclusive),
            Kind::Parallel => quote!(Parallel),
            Kind::Inclusive => {
                let masks = if node.incoming.len() > 1 {
                    model.reach_masks(n)
                } else {
                    Vec::new()
                };
                quote!(Inclusive { reach: &[#(#masks),*] })
            }
            Kind::Complex => {
                let converging = node.incoming.len() > 1;
                let masks = if converging { model.reach_masks(n) } else { Vec::new() };
                let sources: Vec<String> =
                    node.incoming.iter().map(|&f| model.nodes[model.flows[f].source].id.to_string()).collect();
                let triples = node.activation.iter().enumerate().filter(|_| converging).map(|(k, triple)| {
                    let count = triple.count.as_ref().map_or(1, |c| c.base10_parse::<u32>().unwrap_or(1));
                    let required = triple
                        .require
                        .iter()
                        .filter_map(|r| sources.iter().position(|s| r == s))
                        .fold(0u64, |mask, i| mask | 1 << i);
                    let condition = match &triple.when {
                        Some(expr) => {
                            let f = format_ident!("__thresh_activation_{}_{}", n, k);
                            fns.push(condition_fn(&f, data, expr));
                            quote!(::core::option::Option::Some(#f))
                        }
                        None => quote!(::core::option::Option::None),
                    };
                    quote!(::thresh::__private::Activation { condition: #condition, count: #count, required: #required })
                });
                let triples: Vec<TokenStream> = triples.collect();
                quote!(Complex { reach: &[#(#masks),*], activation: &[#(#triples),*] })
            }
            // A link throw and its catch are pass-throughs joined by a direct edge.
            Kind::Catch(EventTrigger::Link) | Kind::Throw(EventTrigger::Link) => quote!(Link),
            Kind::Catch(_) | Kind::Receive | Kind::Throw(_) | Kind::ThrowEnd(_) => {
                let event = node.event.as_ref().expect("an element with an event parsed it, or the model has errors");
                let what = match node.kind {
                    Kind::Catch(_) => quote!(Catch),
                    Kind::Receive => quote!(Receive),
                    Kind::Throw(_) => quote!(Throw),
                    _ => quote!(ThrowEnd),
                };
                let body = match node.kind {
                    Kind::Catch(_) | Kind::Receive => trigger(n, data, event, &mut fns),
                    _ => throw(n, data, event, &mut fns),
                };
                quote!(#what(#body))
            }
            Kind::User => quote!(User),
            Kind::Boundary { interrupting, .. } => {
                let event = node.event.as_ref().expect("a boundary parsed its event, or the model has errors");
                let activity = node.attached_to.expect("a boundary is attached, or the model has errors");
                let trigger = trigger(n, data, event, &mut fns);
                quote!(Boundary { activity: #activity, trigger: #trigger, interrupting: #interrupting })
            }
            Kind::ErrorEnd => {
                let code = code_of(node.event.as_ref());
                quote!(ErrorEnd { code: #code })
            }
            Kind::Escalate { end } => {
                let code = code_of(node.event.as_ref());
                quote!(Escalate { code: #code, end: #end })
            }
            Kind::EventGate => quote!(EventGate),
            Kind::InstantiatingGate { parallel } => quote!(InstantiatingGate { parallel: #parallel }),
            Kind::Task => {
                let handler = node.handler.expect("a task has its handler");
                let f = format_ident!("__thresh_task_{}", n);
                fns.push(task_fn(&f, data, handler));
                quote!(Task(#f))
            }
            Kind::SubProcess => {
                let start = model
                    .starts_in(Some(n))
                    .into_iter()
                    .find(|&s| model.nodes[s].kind == Kind::Start)
                    .expect("a sub-process has its none start, or the model has errors");
                let event_subs = event_subs(model, Some(n));
                quote!(SubProcess { start: #start, event_subs: &[#(#event_subs),*] })
            }
            Kind::EventSubProcess => {
                let start = *model
                    .starts_in(Some(n))
                    .first()
                    .expect("an event sub-process has its start, or the model has errors");
                let event_subs = event_subs(model, Some(n));
                quote!(EventSubProcess { start: #start, event_subs: &[#(#event_subs),*] })
            }
            Kind::EventSubStart { interrupting, .. } => {
                let event = node.event.as_ref().expect("a start event parsed its event, or the model has errors");
                let trigger = trigger(n, data, event, &mut fns);
                quote!(EventSubStart { trigger: #trigger, interrupting: #interrupting })
            }
        };
        let (incoming, outgoing, boundaries) = (&node.incoming, &node.outgoing, &node.boundaries);
        let default = option(node.default);
        let scope = option(node.scope);
        quote! {
            ::thresh::__private::Node {
                id: #id,
                doc: #node_doc,
                kind: ::thresh::__private::NodeKind::#kind,
                incoming: &[#(#incoming),*],
                outgoing: &[#(#outgoing),*],
                default: #default,
                boundaries: &[#(#boundaries),*],
                scope: #scope,
            }
        }
    });
    let nodes: Vec<TokenStream> = nodes.collect();

    let flows = model.flows.iter().enumerate().map(|(i, flow)| {
        let (source, target) = (flow.source, flow.target);
        let (condition, text) = match flow.condition {
            Some(expr) => {
                let f = format_ident!("__thresh_condition_{}", i);
                fns.push(condition_fn(&f, data, expr));
                (quote!(::core::option::Option::Some(#f)), expr.to_token_stream().to_string())
            }
            None => (quote!(::core::option::Option::None), String::new()),
        };
        quote! {
            ::thresh::__private::Flow { source: #source, target: #target, condition: #condition, condition_text: #text }
        }
    });
    let flows: Vec<TokenStream> = flows.collect();
    let starts = model.starts();
    let event_subs = event_subs(model, None);

    quote! {
        #(#fns)*
        ::thresh::Process {
            name: #name_str,
            doc: #doc,
            nodes: &[#(#nodes),*],
            flows: &[#(#flows),*],
            starts: &[#(#starts),*],
            event_subs: &[#(#event_subs),*],
        }
    }
}

/// The event sub-processes written directly in `scope` (`None`: the top level).
fn event_subs(model: &Model, scope: Option<usize>) -> Vec<usize> {
    model
        .members(scope)
        .filter(|&n| model.nodes[n].kind == Kind::EventSubProcess)
        .collect()
}

/// The functions wrapping the user's code, for a model with errors (no graph).
fn user_fns(model: &Model) -> Vec<TokenStream> {
    let data = model.data;
    let mut fns = Vec::new();
    for (n, node) in model.nodes.iter().enumerate() {
        if let Some(handler) = node.handler {
            fns.push(task_fn(
                &format_ident!("__thresh_task_{}", n),
                data,
                handler,
            ));
        }
        for (k, triple) in node.activation.iter().enumerate() {
            if let Some(expr) = &triple.when {
                fns.push(condition_fn(
                    &format_ident!("__thresh_activation_{}_{}", n, k),
                    data,
                    expr,
                ));
            }
        }
        if let Some(event) = &node.event {
            // The trigger's and the throw's fns; the returned table entry is unused.
            let mut event_fns = Vec::new();
            match event.trigger {
                EventTrigger::Link => {}
                _ if matches!(node.kind, Kind::Throw(_) | Kind::ThrowEnd(_)) => {
                    throw(n, data, event, &mut event_fns);
                }
                EventTrigger::Error | EventTrigger::Escalation => {}
                _ => {
                    trigger(n, data, event, &mut event_fns);
                }
            }
            fns.extend(event_fns);
        }
    }
    for (i, flow) in model.flows.iter().enumerate() {
        if let Some(expr) = flow.condition {
            fns.push(condition_fn(
                &format_ident!("__thresh_condition_{}", i),
                data,
                expr,
            ));
        }
    }
    fns
}

/// A task handler — a path to an async fn or a closure returning a future — wrapped
/// as the graph's uniform `fn(D) -> TaskRun<D>`: the run owns the task's copy and
/// gives it back with the result. Spanned on the user's expression, so a handler of
/// the wrong type (or whose future is not `Send`) is reported there.
fn task_fn(name: &syn::Ident, data: &syn::Type, handler: &syn::Expr) -> TokenStream {
    let span = handler.span();
    let call = quote_spanned!(span=> ::thresh::__private::call_task(#handler, &mut data).await);
    let run = quote_spanned!(span=> ::thresh::__private::task_run(async move {
        let result = #call;
        (data, result)
    }));
    quote! {
        #[allow(non_snake_case)]
        fn #name(mut data: #data) -> ::thresh::__private::TaskRun<#data> { #run }
    }
}

/// What a catch or receive task waits for, with its key, payload mapping or timer
/// as plain fns.
fn trigger(
    n: usize,
    data: &syn::Type,
    event: &EventAst,
    fns: &mut Vec<TokenStream>,
) -> TokenStream {
    let name = &event.name;
    let apply = match &event.apply {
        Some((_, expr)) => {
            let f = format_ident!("__thresh_apply_{}", n);
            let call =
                quote_spanned!(expr.span()=> ::thresh::__private::call_apply(#expr, data, payload));
            fns.push(quote! {
                #[allow(non_snake_case)]
                fn #f(data: &mut #data, payload: &::thresh::__private::Payload) -> ::core::result::Result<(), &'static str> { #call }
            });
            quote!(::core::option::Option::Some(#f))
        }
        None => quote!(::core::option::Option::None),
    };
    match event.trigger {
        EventTrigger::Message => {
            let key = key_fn(n, data, event, fns);
            quote!(::thresh::__private::Trigger::Message { name: #name, key: #key, apply: #apply })
        }
        EventTrigger::Signal => {
            quote!(::thresh::__private::Trigger::Signal { name: #name, apply: #apply })
        }
        EventTrigger::Link => unreachable!("a link catch is emitted as a pass-through node"),
        EventTrigger::Condition => {
            let f = format_ident!("__thresh_when_{}", n);
            let condition = event
                .condition
                .as_ref()
                .expect("a condition parsed its closure");
            fns.push(condition_fn(&f, data, condition));
            let on: Vec<String> = event
                .on
                .iter()
                .flat_map(|(_, _, fields)| fields.iter().map(|f| f.to_string()))
                .collect();
            // Each named field is read once in a dead fn, so a misspelt one is a
            // compile error on the user's name.
            let probe = format_ident!("__thresh_on_{}", n);
            let fields = event.on.iter().flat_map(|(_, _, fields)| fields.iter());
            fns.push(quote! {
                #[allow(non_snake_case, dead_code)]
                fn #probe(data: &#data) { #( let _ = &data.#fields; )* }
            });
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
            let f = format_ident!("__thresh_timer_{}", n);
            let spec = match event.timer.as_ref().expect("a timer parsed its arguments") {
                TimerAst::After(d) => quote_spanned!(d.span()=> ::thresh::TimerSpec::After(#d)),
                TimerAst::At(at) => quote_spanned!(at.span()=> ::thresh::TimerSpec::At(#at)),
                TimerAst::Every { every, times } => {
                    let times = match times {
                        Some(t) => quote_spanned!(t.span()=> ::core::option::Option::Some(#t)),
                        None => quote!(::core::option::Option::None),
                    };
                    quote_spanned!(every.span()=> ::thresh::TimerSpec::Every { every: #every, times: #times })
                }
            };
            fns.push(quote! {
                #[allow(non_snake_case)]
                fn #f() -> ::thresh::TimerSpec { #spec }
            });
            quote!(::thresh::__private::Trigger::Timer(#f))
        }
    }
}

/// What a throw (or throwing end) sends, with its key and payload as plain fns.
fn throw(n: usize, data: &syn::Type, event: &EventAst, fns: &mut Vec<TokenStream>) -> TokenStream {
    let name = &event.name;
    let payload = match &event.payload {
        Some((_, expr)) => {
            let f = format_ident!("__thresh_payload_{}", n);
            let call = quote_spanned!(expr.span()=> ::thresh::__private::call_payload(#expr, data));
            fns.push(quote! {
                #[allow(non_snake_case)]
                fn #f(data: &#data) -> ::thresh::__private::Payload { #call }
            });
            quote!(::core::option::Option::Some(#f))
        }
        None => quote!(::core::option::Option::None),
    };
    match event.trigger {
        EventTrigger::Message => {
            let key = key_fn(n, data, event, fns);
            quote!(::thresh::__private::Throw::Message { name: #name, key: #key, payload: #payload })
        }
        _ => quote!(::thresh::__private::Throw::Signal { name: #name, payload: #payload }),
    }
}

/// The code of an error or escalation throw (`check::events` makes sure there is one).
fn code_of(event: Option<&EventAst>) -> TokenStream {
    match event.and_then(|e| e.code.as_ref()) {
        Some(code) => quote!(#code),
        None => quote!(""),
    }
}

/// A message's correlation key as a plain fn (`check::events` makes sure there is one).
fn key_fn(n: usize, data: &syn::Type, event: &EventAst, fns: &mut Vec<TokenStream>) -> TokenStream {
    let f = format_ident!("__thresh_key_{}", n);
    let call = match &event.key {
        Some((_, expr)) => quote_spanned!(expr.span()=> ::thresh::__private::call_key(#expr, data)),
        None => quote!(::std::string::String::new()),
    };
    fns.push(quote! {
        #[allow(non_snake_case)]
        fn #f(data: &#data) -> ::std::string::String { #call }
    });
    quote!(#f)
}

/// A flow condition — a closure or a path to a fn over `&D` — as a plain fn.
fn condition_fn(name: &syn::Ident, data: &syn::Type, condition: &syn::Expr) -> TokenStream {
    let span = condition.span();
    let call = quote_spanned!(span=> ::thresh::__private::call_condition(#condition, data));
    quote! {
        #[allow(non_snake_case)]
        fn #name(data: &#data) -> bool { #call }
    }
}

fn option(value: Option<usize>) -> TokenStream {
    match value {
        Some(v) => quote_spanned!(Span::call_site()=> ::core::option::Option::Some(#v)),
        None => quote!(::core::option::Option::None),
    }
}
