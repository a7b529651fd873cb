//! Stage 4: model → Rust. The process becomes one `static thresh::Process<D>` built
//! entirely at compile time: node and flow tables, handlers and conditions as plain
//! functions, and the OR-joins' reachability masks. The tables are over erased data
//! (`thresh::data::Erased`), so the engine's loop is compiled once for every data
//! type; each fn takes the data back to `D` before the user's code sees it.
//!
//! - [`fns`]: the user's code as plain fns, each named once;
//! - [`nodes`]: the node table, one function per family of nodes;
//! - [`fingerprint`]: the model's stable hash, for the durable store;
//! - [`refs`]: the typed references beside the static (`ORDER::user.approve`);
//! - [`model_macro`]: the hidden macro that hands the model to `migrate!`.

mod assign;
mod fingerprint;
mod fns;
pub mod loops;
pub mod model_macro;
mod nodes;
mod reads;
mod refs;

use proc_macro2::{Span, TokenStream};
use quote::{quote, quote_spanned, ToTokens};

use crate::model::{Kind, Model};
use fns::UserFn;

/// What to emit of the model.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Graph {
    /// The whole graph: the model passed every check.
    Full,
    /// An empty graph of the right type, beside the model's errors: they speak for
    /// themselves, and nothing downstream trips over a missing item.
    Empty,
}

/// The static for `model`, with its graph as `graph` says; `notes` (what the
/// soundness analysis could not decide) go into its doc.
pub fn process(model: &Model, graph: Graph, notes: &[String]) -> TokenStream {
    let Model {
        vis,
        name,
        process_name: name_str,
        version,
        data,
        doc,
        attrs,
        ..
    } = model;
    let doc_attr = (!doc.is_empty()).then(|| quote!(#[doc = #doc]));
    // The user's handlers, conditions, keys and payload mappings are emitted either
    // way: with errors (unused), so they are type-checked with the other errors and
    // the imports they use do not read as unused.
    let fns = fns::all(model);
    let body = match graph {
        Graph::Full => {
            let tables = tables(model);
            let fingerprint = fingerprint::of(model);
            quote! {
                #(#fns)*
                ::thresh::Process::new(::thresh::__private::Graph { name: #name_str, version: #version, doc: #doc, fingerprint: #fingerprint, #tables })
            }
        }
        Graph::Empty => quote! {
            #(#[allow(dead_code)] #fns)*
            ::thresh::Process::new(::thresh::__private::Graph { name: #name_str, version: #version, doc: #doc, fingerprint: 0, nodes: &[], flows: &[], starts: &[], event_subs: &[], loops: &[], item_tasks: &[] })
        },
    };
    let notes = notes.iter().map(|n| quote!(#[doc = #n]));
    let refs = refs::emit(model);
    let model_macro = model_macro::emit(model, graph == Graph::Full);
    quote! {
        #refs
        #model_macro
        #doc_attr
        #(#notes)*
        #(#attrs)*
        #vis static #name: ::thresh::Process<#data> = { #body };
    }
}

/// The fields of the graph after its name and doc: nodes, flows, starts, event
/// sub-processes.
fn tables(model: &Model) -> TokenStream {
    let nodes = (0..model.nodes.len()).map(|n| node(model, n));
    let flows = (0..model.flows.len()).map(|i| flow(model, i));
    let starts = model.starts();
    let event_subs = event_subs(model, None);
    let loops = loops::tables(model);
    quote! {
        nodes: &[#(#nodes),*],
        flows: &[#(#flows),*],
        starts: &[#(#starts),*],
        event_subs: &[#(#event_subs),*],
        #loops
    }
}

/// Node `n`'s entry of the node table.
fn node(model: &Model, n: usize) -> TokenStream {
    let node = &model.nodes[n];
    let id = model.written_id(n);
    let meta = model.meta(n);
    let label = meta.map_or(node.label.as_deref().unwrap_or(""), |m| m.name.as_str());
    let tag = meta.map_or(node.element.unwrap_or(""), |m| m.tag.as_str());
    let drawing = meta.map_or(&[][..], |m| &m.drawing[..]);
    let doc = &node.doc;
    let kind = nodes::kind(model, n);
    let (incoming, outgoing, boundaries) = (&node.incoming, &node.outgoing, &node.boundaries);
    let default = option(node.default);
    let scope = option(node.scope);
    let text = text(node);
    let spawn = node.spawn;
    let policy = policy(node);
    let assign = assign::field(model, n);
    let next = next(model, n);
    let targets = outgoing
        .iter()
        .map(|&f| model.written_id(model.flows[f].target));
    quote! {
        ::thresh::__private::Node {
            id: #id,
            label: #label,
            tag: #tag,
            drawing: &[#(#drawing),*],
            doc: #doc,
            kind: ::thresh::__private::NodeKind::#kind,
            incoming: &[#(#incoming),*],
            outgoing: &[#(#outgoing),*],
            default: #default,
            boundaries: &[#(#boundaries),*],
            scope: #scope,
            text: #text,
            spawn: #spawn,
            policy: #policy,
            assign: #assign,
            next: #next,
            targets: &[#(#targets),*],
        }
    }
}

/// A task's `Node::policy`: what its `retry(..)` and `timeout(..)` give.
fn policy(node: &crate::model::Node) -> TokenStream {
    let Some(policy) = &node.policy else {
        return quote!(::core::option::Option::None);
    };
    let some = |value: Option<TokenStream>| match value {
        Some(value) => quote!(::core::option::Option::Some(#value)),
        None => quote!(::core::option::Option::None),
    };
    let duration = |millis: u64| quote!(::core::time::Duration::from_millis(#millis));
    let retry = policy.retry.as_ref();
    let attempts = some(retry.map(|r| {
        let n = r.attempts;
        quote!(#n)
    }));
    let backoff = some(retry.and_then(|r| r.backoff).map(|(first, last)| {
        let (first, last) = (duration(first.millis), duration(last.millis));
        quote!((#first, #last))
    }));
    let float = |v: Option<(f64, proc_macro2::Span)>| {
        some(v.map(|(v, _)| {
            let v = proc_macro2::Literal::f64_suffixed(v);
            quote!(#v)
        }))
    };
    let multiplier = float(retry.and_then(|r| r.multiplier));
    let jitter = float(retry.and_then(|r| r.jitter));
    let timeout = some(policy.timeout.map(|t| duration(t.millis)));
    quote! {
        ::core::option::Option::Some(&::thresh::__private::TaskPolicy {
            attempts: #attempts,
            backoff: #backoff,
            multiplier: #multiplier,
            jitter: #jitter,
            timeout: #timeout,
        })
    }
}

/// Node `n`'s `Node::next`: where a token completing there goes straight on —
/// what the engine's routing would do by its one flow, if that has no condition and
/// leads to a task with no marker, or to a synchronising join.
fn next(model: &Model, n: usize) -> TokenStream {
    let route = quote!(::thresh::__private::Next::Route);
    let [f] = model.nodes[n].outgoing[..] else {
        return route;
    };
    let to = model.flows[f].target;
    let target = &model.nodes[to];
    let joins = matches!(
        target.kind,
        Kind::Parallel | Kind::Inclusive | Kind::Complex
    );
    let slot = target.incoming.iter().position(|&i| i == f);
    match (target.kind, slot) {
        _ if model.flows[f].condition.is_some() => route,
        (Kind::Task, _) if target.looping.is_none() => {
            let handler = UserFn::Task(model.handler_fn[to]).name();
            let plain = target.boundaries.is_empty() && !target.spawn;
            quote!(::thresh::__private::Next::Task { flow: #f, to: #to, handler: #handler, plain: #plain })
        }
        (_, Some(slot)) if joins && target.incoming.len() > 1 => {
            quote!(::thresh::__private::Next::Join { flow: #f, to: #to, slot: #slot })
        }
        _ => route,
    }
}

/// An expression's text; a closure's parameters written `|p|`, as Rust is written.
pub(crate) fn closure_text(expr: &syn::Expr) -> String {
    match expr {
        syn::Expr::Closure(c) if c.attrs.is_empty() && c.capture.is_none() => {
            let inputs: Vec<String> = c
                .inputs
                .iter()
                .map(|p| p.to_token_stream().to_string())
                .collect();
            format!("|{}| {}", inputs.join(", "), c.body.to_token_stream())
        }
        _ => expr.to_token_stream().to_string(),
    }
}

/// A node's words for the pictures (`Node::text` in the graph): a link's name, a
/// conditional event's condition, a converging complex gateway's activation rule.
fn text(node: &crate::model::Node) -> String {
    use crate::parse::EventTrigger;
    if node.kind == Kind::Complex && node.incoming.len() > 1 {
        return node
            .activation
            .iter()
            .map(|triple| {
                let mut args = Vec::new();
                if let Some(count) = &triple.count {
                    args.push(format!("count = {count}"));
                }
                if !triple.require.is_empty() {
                    let names: Vec<String> = triple.require.iter().map(|r| r.to_string()).collect();
                    args.push(format!("require = [{}]", names.join(", ")));
                }
                if let Some(when) = &triple.when {
                    args.push(format!("when = {}", closure_text(when)));
                }
                format!("activate({})", args.join(", "))
            })
            .collect::<Vec<_>>()
            .join(" | ");
    }
    match &node.event {
        Some(event) if event.trigger == EventTrigger::Link => {
            event.name.as_ref().map(|n| n.value()).unwrap_or_default()
        }
        Some(event) if event.trigger == EventTrigger::Condition => event
            .condition
            .as_ref()
            .map(|c| c.to_token_stream().to_string())
            .unwrap_or_default(),
        _ => String::new(),
    }
}

/// Flow `i`'s entry of the flow table.
fn flow(model: &Model, i: usize) -> TokenStream {
    let flow = &model.flows[i];
    let (source, target) = (flow.source, flow.target);
    let condition = UserFn::Condition(i).some_if(flow.condition.is_some());
    let text = flow
        .condition
        .map_or_else(String::new, |expr| expr.to_token_stream().to_string());
    let id = flow.file.map_or("", |f| f.id.as_str());
    let label = flow.file.map_or("", |f| f.name.as_str());
    let drawing = flow.file.map_or(&[][..], |f| &f.drawing[..]);
    quote! {
        ::thresh::__private::Flow { source: #source, target: #target, condition: #condition, condition_text: #text, id: #id, label: #label, drawing: &[#(#drawing),*] }
    }
}

/// The event sub-processes written directly in `scope` (`None`: the top level).
fn event_subs(model: &Model, scope: Option<usize>) -> Vec<usize> {
    model
        .members(scope)
        .filter(|&n| model.nodes[n].kind == Kind::EventSubProcess)
        .collect()
}

fn option(value: Option<usize>) -> TokenStream {
    match value {
        Some(v) => quote_spanned!(Span::call_site()=> ::core::option::Option::Some(#v)),
        None => quote!(::core::option::Option::None),
    }
}

/// The locals an emitted fn declares (its parameters and `let`s) that code spanned
/// at a user's expression names.
const LOCALS: &[&str] = &[
    "data",
    "payload",
    "caller",
    "index",
    "value",
    "runs",
    "counts",
    "item",
    "at",
    "output",
    "output_type",
];

/// Code spanned at a user's expression (`quote_spanned!`), with the locals it names
/// given the macro's own hygiene (call site) at that location: they are found even
/// when the user's tokens — and so the span — come through a `macro_rules!` of
/// theirs, and errors still point at the user's expression.
pub(crate) fn hygienic(tokens: TokenStream) -> TokenStream {
    use proc_macro2::{Group, Span, TokenTree};
    tokens
        .into_iter()
        .map(|tree| match tree {
            TokenTree::Ident(mut ident) if LOCALS.iter().any(|l| ident == l) => {
                ident.set_span(Span::call_site().located_at(ident.span()));
                TokenTree::Ident(ident)
            }
            TokenTree::Group(group) => {
                let mut respanned = Group::new(group.delimiter(), hygienic(group.stream()));
                respanned.set_span(group.span());
                TokenTree::Group(respanned)
            }
            other => other,
        })
        .collect()
}
