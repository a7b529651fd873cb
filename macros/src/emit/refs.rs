//! The process's typed references: what a caller can act on, as constants of a
//! struct named as the process's static (a braced struct lives in the type
//! namespace only, so it stands beside the static): `ORDER::user.approve`,
//! `ORDER::message.receipt`, `ORDER::signal.alarm`, `ORDER::error.REJECTED`,
//! `ORDER::escalation.LATE`. Constants of zero-cost types (`thresh::refs`), so a
//! misspelt name is rustc's "no field" error listing the fields there are, and a
//! payload of another type than the catch's `apply` takes is a type error. Nothing
//! here is in the graph or the fingerprint.

use std::collections::HashSet;

use proc_macro2::{Span, TokenStream};
use quote::{format_ident, quote};

use super::fns::Role;
use crate::import::ids::Ids;
use crate::model::{Kind, Model};
use crate::parse::{EventAst, EventTrigger};

/// One field of a group: its name, what the doc says of it, its type and value.
struct Field {
    ident: syn::Ident,
    doc: String,
    ty: TokenStream,
    value: TokenStream,
}

/// The struct beside the static, its groups' types and its constants.
pub fn emit(model: &Model) -> TokenStream {
    let Model { vis, name, .. } = model;
    let groups = [
        ("user", "UserTasks", "user tasks", user_tasks(model)),
        (
            "message",
            "Messages",
            "messages its catches take (message catches, receive tasks, boundaries, starts)",
            events(model, EventTrigger::Message),
        ),
        (
            "signal",
            "Signals",
            "signals its catches take",
            events(model, EventTrigger::Signal),
        ),
        (
            "error",
            "Errors",
            "error codes a caller may raise on its user tasks that a boundary or event sub-process catches",
            codes(model, EventTrigger::Error),
        ),
        (
            "escalation",
            "Escalations",
            "escalation codes a caller may raise on its user tasks that a boundary or event sub-process catches",
            codes(model, EventTrigger::Escalation),
        ),
    ];
    let mut types = Vec::new();
    let mut consts = Vec::new();
    for (group, suffix, what, fields) in groups {
        let ty = format_ident!("{}_{}", name, suffix, span = name.span());
        let group = syn::Ident::new(group, name.span());
        let doc = format!("The {what} of [`{name}`](static@{name}).");
        let (idents, docs, tys, values) = fields.into_iter().fold(
            (Vec::new(), Vec::new(), Vec::new(), Vec::new()),
            |(mut i, mut d, mut t, mut v), f| {
                i.push(f.ident);
                d.push(f.doc);
                t.push(f.ty);
                v.push(f.value);
                (i, d, t, v)
            },
        );
        types.push(quote! {
            #[doc = #doc]
            #[allow(non_camel_case_types, non_snake_case, private_interfaces, dead_code)]
            #[derive(Clone, Copy, Debug)]
            #vis struct #ty { #( #[doc = #docs] pub #idents: #tys, )* }
        });
        consts.push(quote! {
            #[doc = #doc]
            pub const #group: #ty = #ty { #( #idents: #values, )* };
        });
    }
    let doc = format!(
        "Typed references to what a caller can act on in [`{name}`](static@{name}), \
         emitted by `process!`: `{name}::user` its user tasks, `{name}::message` and \
         `{name}::signal` the messages and signals its catches take (typed by the \
         payload their `apply` takes), `{name}::error` and `{name}::escalation` the \
         codes a caller may raise on its user tasks. Constants: they cost nothing at \
         run time."
    );
    quote! {
        #[doc = #doc]
        #[allow(non_camel_case_types, clippy::upper_case_acronyms, dead_code)]
        #vis struct #name {}
        #(#types)*
        #[allow(non_upper_case_globals, dead_code, private_interfaces)]
        impl #name { #(#consts)* }
    }
}

/// The user tasks, by their names in the model (an imported one's identifier; the
/// reference holds the id as written, as the graph does).
fn user_tasks(model: &Model) -> Vec<Field> {
    let data = model.data;
    let mut seen = HashSet::new();
    let mut fields = Vec::new();
    for (n, node) in model.nodes.iter().enumerate() {
        if node.kind != Kind::User || !seen.insert(node.id.to_string()) {
            continue;
        }
        let id = model.written_id(n);
        fields.push(Field {
            ident: node.id.clone(),
            doc: format!("The user task `{id}`."),
            ty: quote!(::thresh::refs::UserTask<#data>),
            value: quote!(::thresh::refs::UserTask::new(#id)),
        });
    }
    fields
}

/// The messages (or signals) the process's catching elements take, by name, each
/// typed by the payload the first catch whose `apply` names its type takes: an
/// `apply` closure's payload parameter as written. A name only `apply` paths take
/// (whose type cannot be named here) is `AnyMessage`/`AnySignal`: any payload; one
/// no catch applies takes `()` — its payload is never read.
fn events(model: &Model, trigger: EventTrigger) -> Vec<Field> {
    let mut names: Vec<(String, Span, Vec<&EventAst>)> = Vec::new();
    for node in &model.nodes {
        let Some(event) = &node.event else { continue };
        if event.trigger != trigger || Role::of(node.kind) != Some(Role::Catches) {
            continue;
        }
        let Some(lit) = &event.name else { continue };
        let name = lit.value();
        match names.iter_mut().find(|(n, ..)| *n == name) {
            Some((_, _, events)) => events.push(event),
            None => names.push((name, lit.span(), vec![event])),
        }
    }
    let ids = Ids::new(names.iter().map(|(n, ..)| n.as_str()));
    let (typed, any, what) = match trigger {
        EventTrigger::Message => (quote!(Message), quote!(AnyMessage), "message"),
        _ => (quote!(Signal), quote!(AnySignal), "signal"),
    };
    names
        .into_iter()
        .map(|(name, span, events)| {
            let written = events.iter().find_map(|e| written_payload(e));
            let applied = events.iter().any(|e| e.apply.is_some());
            let (ty, said) = match (written, applied) {
                (Some(p), _) => (quote!(::thresh::refs::#typed<#p>), "its payload type"),
                (None, true) => (quote!(::thresh::refs::#any), "any payload"),
                (None, false) => (
                    quote!(::thresh::refs::#typed<()>),
                    "`()`: no catch reads it",
                ),
            };
            let value = match written.is_some() || !applied {
                true => quote!(::thresh::refs::#typed::new(#name)),
                false => quote!(::thresh::refs::#any::new(#name)),
            };
            Field {
                ident: syn::Ident::new(&ids.ident(&name), span),
                doc: format!("The {what} `{name}`, carrying {said}."),
                ty,
                value,
            }
        })
        .collect()
}

/// The payload type an `apply` closure's payload parameter names (`&P` or `P`).
fn written_payload(event: &EventAst) -> Option<&syn::Type> {
    let (_, syn::Expr::Closure(closure)) = event.apply.as_ref()? else {
        return None;
    };
    let syn::Pat::Type(typed) = closure.inputs.iter().nth(1)? else {
        return None;
    };
    Some(match &*typed.ty {
        syn::Type::Reference(reference) => &reference.elem,
        other => other,
    })
}

/// The error (or escalation) codes a caller may raise on some user task that a
/// catcher on the way out takes: the user task's own boundaries, then scope by scope
/// outward the event sub-processes' starts and the enclosing sub-process's
/// boundaries. Catch-all catchers name no code.
fn codes(model: &Model, trigger: EventTrigger) -> Vec<Field> {
    let catches = |n: usize| -> Option<(String, Span)> {
        let node = &model.nodes[n];
        let kind_trigger = match node.kind {
            Kind::Boundary { trigger, .. } | Kind::EventSubStart { trigger, .. } => trigger,
            _ => return None,
        };
        let code = node.event.as_ref()?.code.as_ref()?;
        (kind_trigger == trigger).then(|| (code.value(), code.span()))
    };
    let mut found: Vec<(String, Span)> = Vec::new();
    let mut add = |code: Option<(String, Span)>| {
        if let Some(code) = code {
            if !found.iter().any(|(c, _)| *c == code.0) {
                found.push(code);
            }
        }
    };
    for user in &model.nodes {
        if user.kind != Kind::User {
            continue;
        }
        user.boundaries.iter().for_each(|&b| add(catches(b)));
        let mut scope = user.scope;
        loop {
            let subs = model
                .members(scope)
                .filter(|&n| model.nodes[n].kind == Kind::EventSubProcess);
            for sub in subs.collect::<Vec<_>>() {
                model
                    .starts_in(Some(sub))
                    .into_iter()
                    .for_each(|s| add(catches(s)));
            }
            let Some(sp) = scope else { break };
            model.nodes[sp]
                .boundaries
                .iter()
                .for_each(|&b| add(catches(b)));
            scope = model.nodes[sp].scope;
        }
    }
    let ids = Ids::new(found.iter().map(|(c, _)| c.as_str()));
    let (ty, what) = match trigger {
        EventTrigger::Error => (quote!(ErrorCode), "error"),
        _ => (quote!(EscalationCode), "escalation"),
    };
    let data = model.data;
    found
        .into_iter()
        .map(|(code, span)| Field {
            ident: syn::Ident::new(&ids.ident(&code), span),
            doc: format!("The {what} code `{code}`."),
            ty: quote!(::thresh::refs::#ty<#data>),
            value: quote!(::thresh::refs::#ty::new(#code)),
        })
        .collect()
}
