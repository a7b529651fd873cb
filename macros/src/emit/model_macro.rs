//! The process's model for another macro: `process!` emits beside the static a
//! hidden `macro_rules! __thresh_model_NAME` that hands what `migrate!` checks to a
//! callback (ARCHITECTURE.md, "Migration plans"):
//!
//! ```text
//! __thresh_model_ORDER! { [callback path] tokens.. }
//!   => callback path! { tokens.. { name = "order", version = 1, nodes = [ .. ] } }
//! ```
//!
//! Each node is `id: "what it is" / "how a token rests there" in (scope)`, its id
//! spanned where the process declares it, so `migrate!` reports a V1 element's
//! error there. "How a token rests there" is empty for elements no token rests at
//! (starts, ends, throws, splits, boundaries). The macro is made path-addressable by
//! a `pub(crate) use` (so a plan elsewhere in the crate names it as
//! `v1::__thresh_model_ORDER`); inside a function it is found by textual scope.

use proc_macro2::TokenStream;
use quote::{format_ident, quote};

use crate::model::{Kind, Model};
use crate::parse::loops::LoopAstKind;
use crate::parse::EventTrigger;

/// The hidden model macro of `model`; `whole` when the model passed every check
/// (else `migrate!` reports nothing more: the process's errors speak).
pub fn emit(model: &Model, whole: bool) -> TokenStream {
    let name = format_ident!("__thresh_model_{}", model.name);
    let process_name = &model.process_name;
    let version = model.version;
    let nodes = model.nodes.iter().enumerate().map(|(n, node)| {
        let id = node.id;
        let what = node.kind.describe();
        let rest = rests(model, n).unwrap_or_default();
        let scope = node.scope.map(|s| model.nodes[s].id);
        quote!(#id: #what / #rest in (#scope),)
    });
    let nodes = match whole {
        true => quote!(nodes = [#(#nodes)*]),
        false => quote!(broken),
    };
    quote! {
        #[doc(hidden)]
        #[allow(unused_macros)]
        macro_rules! #name {
            ([$($callback:tt)*] $($rest:tt)*) => {
                $($callback)*! { $($rest)* { name = #process_name, version = #version, #nodes } }
            };
        }
        #[doc(hidden)]
        #[allow(unused_imports)]
        pub(crate) use #name;
    }
}

/// How a token rests at node `n` — what a place of another version must be for a
/// token there to rest there the same way — or `None` if none rests there.
pub fn rests(model: &Model, n: usize) -> Option<String> {
    let node = &model.nodes[n];
    let joins = node.incoming.len() > 1;
    let mut rest = match node.kind {
        Kind::Task if node.for_compensation => "compensation handler".to_string(),
        Kind::Task => "task".to_string(),
        Kind::User => "user task".to_string(),
        Kind::Receive => "receive task".to_string(),
        Kind::Catch(EventTrigger::Link) => return None,
        Kind::Catch(trigger) => format!("{} catch event", trigger_word(trigger)),
        Kind::EventGate => "event-based gateway".to_string(),
        Kind::Parallel if joins => "parallel join".to_string(),
        Kind::Inclusive if joins => "inclusive join".to_string(),
        Kind::Complex if joins => "complex join".to_string(),
        Kind::SubProcess if node.transaction => "transaction".to_string(),
        Kind::SubProcess => "sub-process".to_string(),
        Kind::EventSubProcess => "event sub-process".to_string(),
        Kind::Call => "call activity".to_string(),
        Kind::Compensate { end: false } => "compensation throw event".to_string(),
        _ => return None,
    };
    match node.looping.as_ref().map(|l| &l.kind) {
        Some(LoopAstKind::Multi(multi)) if multi.sequential.is_some() => {
            rest += " (sequential multi-instance)"
        }
        Some(LoopAstKind::Multi(_)) => rest += " (multi-instance)",
        Some(LoopAstKind::Standard(_)) => rest += " (loop)",
        None => {}
    }
    let compensable = node
        .boundaries
        .iter()
        .any(|&b| model.nodes[b].association.is_some());
    if compensable {
        rest += " with a compensation handler";
    }
    Some(rest)
}

fn trigger_word(trigger: EventTrigger) -> &'static str {
    match trigger {
        EventTrigger::Message => "message",
        EventTrigger::Signal => "signal",
        EventTrigger::Timer => "timer",
        EventTrigger::Link => "link",
        EventTrigger::Condition => "conditional",
        EventTrigger::Error => "error",
        EventTrigger::Escalation => "escalation",
        EventTrigger::Compensation => "compensation",
        EventTrigger::Cancel => "cancel",
    }
}
