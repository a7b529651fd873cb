//! The loop and multi-instance markers as the graph's `loops` and `item_tasks`
//! tables, and the fns they name: each activation's items, the item-taking runs of
//! multi-instance tasks and `#[item]` tasks, output mappings, completion and loop
//! conditions.
//!
//! The item type is never named: every fn that needs it re-emits the `each`
//! expression (never calling it) so rustc infers the item from it — the handler gets
//! `&Item` of exactly the collection's element type, and a handler or output mapping
//! of another type is a compile error on the user's code.

use proc_macro2::TokenStream;
use quote::{format_ident, quote, quote_spanned};
use syn::spanned::Spanned;

use crate::check::loops::{enclosing_multi, is_output_task};
use crate::model::{Kind, Model};
use crate::parse::loops::{LoopAstKind, MultiAst};

/// The node whose items a task's handler takes: its own (a multi-instance task) or
/// its multi-instance sub-process's (`#[item]`).
pub fn item_source(model: &Model, n: usize) -> Option<usize> {
    let node = &model.nodes[n];
    if node.kind != Kind::Task {
        return None;
    }
    match node.looping.as_ref().map(|m| &m.kind) {
        Some(LoopAstKind::Multi(_)) => Some(n),
        _ if node.item.is_some() => enclosing_multi(model, n),
        _ => None,
    }
}

fn multi<'m>(model: &'m Model, n: usize) -> Option<&'m MultiAst> {
    match model.nodes.get(n)?.looping.as_ref().map(|m| &m.kind) {
        Some(LoopAstKind::Multi(m)) => Some(m),
        _ => None,
    }
}

/// An expression that names the items' type: the `each` expression, or for `count`
/// a closure making `Vec<usize>`.
fn each_expr(model: &Model, source: usize) -> TokenStream {
    let data = model.data;
    match multi(model, source).and_then(|m| m.each.as_ref()) {
        Some((_, each)) => super::hygienic(quote_spanned!(each.span()=> #each)),
        None => quote!(|_: &#data| -> ::std::vec::Vec<usize> { ::std::vec::Vec::new() }),
    }
}

fn name(what: &str, n: usize) -> syn::Ident {
    format_ident!("__thresh_{}_{}", what, n)
}

/// The plain handler fn of a task whose handler takes an item: never run (the loop
/// runs the item-taking one), so it does not call the user's handler.
pub fn placeholder_task_fn(n: usize) -> TokenStream {
    let name = name("task", n);
    quote! {
        #[allow(non_snake_case)]
        fn #name(data: ::thresh::__private::Erased) -> ::thresh::__private::TaskRun<::thresh::__private::Erased> {
            ::thresh::__private::task_run(move || async move { (data, ::core::result::Result::Err(::thresh::__private::item_missing())) })
        }
    }
}

/// Every fn of the markers.
pub fn fns(model: &Model) -> Vec<TokenStream> {
    let data = model.data;
    let mut fns = Vec::new();
    for (n, node) in model.nodes.iter().enumerate() {
        if let Some(source) = item_source(model, n) {
            if let Some(handler) = node.handler {
                fns.push(item_run_fn(model, n, source, handler));
            }
        }
        let Some(marker) = &node.looping else {
            continue;
        };
        match &marker.kind {
            LoopAstKind::Multi(m) => {
                let items = name("items", n);
                let call = match (&m.each, &m.count) {
                    (Some((_, each)), _) => super::hygienic(
                        quote_spanned!(each.span()=> ::thresh::__private::multi_items(#each, data)),
                    ),
                    (None, Some((_, count))) => super::hygienic(
                        quote_spanned!(count.span()=> ::thresh::__private::multi_count(#count, data)),
                    ),
                    (None, None) => quote!(::thresh::__private::Items::of(
                        ::std::vec::Vec::<usize>::new()
                    )),
                };
                fns.push(quote! {
                    #[allow(non_snake_case)]
                    fn #items(data: &::thresh::__private::Erased) -> ::thresh::__private::Items {
                        let data: &#data = ::thresh::__private::Erased::typed(data);
                        #call
                    }
                });
                if let Some((_, completion)) = &m.completion {
                    let f = name("completion", n);
                    let call = super::hygienic(
                        quote_spanned!(completion.span()=> ::thresh::__private::call_completion(#completion, data, counts)),
                    );
                    fns.push(quote! {
                        #[allow(non_snake_case)]
                        fn #f(data: &::thresh::__private::Erased, counts: &::thresh::__private::Counts) -> bool {
                            let data: &#data = ::thresh::__private::Erased::typed(data);
                            #call
                        }
                    });
                }
                let handler = match node.kind {
                    Kind::SubProcess => output_task(model, n).and_then(|t| model.nodes[t].handler),
                    _ => node.handler,
                };
                let call_parts = match (node.kind, node.handler) {
                    (Kind::Call, Some(binding)) => crate::model::call::parts(binding).ok(),
                    _ => None,
                };
                if let Some(parts) = &call_parts {
                    fns.push(call_item_fn(model, n, parts));
                }
                if let (Some((_, output)), Some(handler)) = (&m.output, handler) {
                    let f = name("output", n);
                    let each = each_expr(model, n);
                    // A call's instance outputs the child's final data; a task's, what
                    // its handler returns.
                    let output_type = match &call_parts {
                        Some(parts) => {
                            let callee = parts.callee;
                            quote!(::thresh::__private::child_output_type(&#callee))
                        }
                        None => {
                            quote!(::thresh::__private::output_type::<#data, _, _, _, _, _, _>(&#each, &#handler))
                        }
                    };
                    let call = super::hygienic(
                        quote_spanned!(output.span()=> ::thresh::__private::merge_output(output_type, #output, data, index, value)),
                    );
                    fns.push(quote! {
                        #[allow(non_snake_case)]
                        fn #f(data: &mut ::thresh::__private::Erased, index: usize, value: ::std::boxed::Box<dyn ::std::any::Any + ::core::marker::Send>) -> ::core::result::Result<(), &'static str> {
                            let data: &mut #data = ::thresh::__private::Erased::typed_mut(data);
                            let output_type = #output_type;
                            #call
                        }
                    });
                }
            }
            LoopAstKind::Standard(s) => {
                if let Some((_, condition)) = &s.condition {
                    let f = name("loop", n);
                    let call = super::hygienic(
                        quote_spanned!(condition.span()=> ::thresh::__private::call_loop_condition(#condition, data, runs)),
                    );
                    fns.push(quote! {
                        #[allow(non_snake_case)]
                        fn #f(data: &::thresh::__private::Erased, runs: u32) -> bool {
                            let data: &#data = ::thresh::__private::Erased::typed(data);
                            #call
                        }
                    });
                }
            }
        }
    }
    fns
}

/// The starter of one instance of the multi-instance call activity `n`: its child's
/// data is `input(parent, item, index)` (or `input(parent)`), its final data also the
/// instance's output.
fn call_item_fn(model: &Model, n: usize, parts: &crate::model::call::CallParts) -> TokenStream {
    let data = model.data;
    let f = super::fns::UserFn::CallItem(n).name();
    let callee = parts.callee;
    let each = each_expr(model, n);
    let input = match parts.input {
        Some(input) if crate::model::call::takes_item(input) => {
            super::hygienic(quote_spanned!(input.span()=> #input))
        }
        Some(input) => super::hygienic(quote_spanned!(input.span()=> {
            let input = ::thresh::__private::parent_input::<#data, _, _>(#input);
            move |data: &#data, _, _: usize| input(data)
        })),
        None => super::hygienic(
            quote_spanned!(callee.span()=> |_: &#data, _, _: usize| ::core::default::Default::default()),
        ),
    };
    let output = match parts.output {
        Some(output) => super::hygienic(quote_spanned!(output.span()=> #output)),
        None => quote!(|_: &mut #data, _| {}),
    };
    let call = super::hygienic(
        quote_spanned!(callee.span()=> ::thresh::__private::call_child_item(caller, &#callee, data, &#each, at, #input, #output, output)),
    );
    quote! {
        #[allow(non_snake_case)]
        fn #f(
            caller: ::thresh::__private::Caller,
            data: &::thresh::__private::Erased,
            at: (&::thresh::__private::Items, usize),
            output: ::core::option::Option<::thresh::__private::Output>,
        ) -> ::thresh::__private::ChildCall<::thresh::__private::Erased> {
            let data: &#data = ::thresh::__private::Erased::typed(data);
            #call
        }
    }
}

/// A task's run with its item (taken from the items of `source`) and index; its
/// `Ok` is the instance's output.
fn item_run_fn(model: &Model, n: usize, source: usize, handler: &syn::Expr) -> TokenStream {
    let data = model.data;
    let f = name("item_run", n);
    let each = each_expr(model, source);
    let span = handler.span();
    let call = super::hygienic(
        quote_spanned!(span=> ::thresh::__private::call_item_task(#handler, ::thresh::__private::Erased::typed_mut::<#data>(&mut data), item, index).await),
    );
    quote! {
        #[allow(non_snake_case)]
        fn #f(
            mut data: ::thresh::__private::Erased,
            items: &::thresh::__private::Items,
            index: usize,
            output: ::thresh::__private::Output,
        ) -> ::thresh::__private::TaskRun<::thresh::__private::Erased> {
            let items = ::core::clone::Clone::clone(items);
            ::thresh::__private::task_run(move || async move {
                let result = match ::thresh::__private::item_of::<#data, _, _>(&#each, &items, index) {
                    ::core::option::Option::Some(item) => {
                        #call.map(|value| ::thresh::__private::send_output(output, value))
                    }
                    ::core::option::Option::None => ::core::result::Result::Err(::thresh::__private::item_missing()),
                };
                (data, result)
            })
        }
    }
}

/// The graph's `loops` and `item_tasks` fields.
pub fn tables(model: &Model) -> TokenStream {
    let mut loops = Vec::new();
    let mut items = Vec::new();
    for (n, node) in model.nodes.iter().enumerate() {
        if let (Some(source), true) = (item_source(model, n), node.handler.is_some()) {
            if source != n {
                let run = name("item_run", n);
                let output = is_output_task(model, n);
                items.push(quote!(::thresh::__private::ItemTask { node: #n, of: #source, run: #run, output: #output }));
            }
        }
        let Some(marker) = &node.looping else {
            continue;
        };
        let kind = match &marker.kind {
            LoopAstKind::Multi(m) => {
                let sequential = m.sequential.is_some();
                let items_fn = name("items", n);
                let completion = some(m.completion.is_some(), name("completion", n));
                let run = some(
                    item_source(model, n) == Some(n) && node.handler.is_some(),
                    name("item_run", n),
                );
                let output = some(
                    m.output.is_some()
                        && (node.handler.is_some()
                            || output_task(model, n)
                                .is_some_and(|t| model.nodes[t].handler.is_some())),
                    name("output", n),
                );
                let items_text = match (&m.each, &m.count) {
                    (Some((k, e)), _) | (None, Some((k, e))) => {
                        format!("{k} = {}", super::closure_text(e))
                    }
                    _ => String::new(),
                };
                let completion_text = m
                    .completion
                    .as_ref()
                    .map(|(_, e)| super::closure_text(e))
                    .unwrap_or_default();
                quote!(Multi(::thresh::__private::MultiInstance {
                    sequential: #sequential,
                    items: #items_fn,
                    completion: #completion,
                    run: #run,
                    output: #output,
                    items_text: #items_text,
                    completion_text: #completion_text,
                }))
            }
            LoopAstKind::Standard(s) => {
                let test_before = s.test_before.is_some();
                let condition = name("loop", n);
                let max = match s
                    .max
                    .as_ref()
                    .and_then(|(_, m)| m.base10_parse::<u32>().ok())
                {
                    Some(max) => quote!(::core::option::Option::Some(#max)),
                    None => quote!(::core::option::Option::None),
                };
                let text = s
                    .condition
                    .as_ref()
                    .map(|(_, e)| super::closure_text(e))
                    .unwrap_or_default();
                quote!(Standard(::thresh::__private::StandardLoop {
                    test_before: #test_before,
                    condition: #condition,
                    max: #max,
                    condition_text: #text,
                }))
            }
        };
        loops.push(quote!(::thresh::__private::ActivityLoop { node: #n, kind: ::thresh::__private::LoopKind::#kind }));
    }
    quote! {
        loops: &[#(#loops),*],
        item_tasks: &[#(#items),*],
    }
}

fn some(present: bool, name: syn::Ident) -> TokenStream {
    if present {
        quote!(::core::option::Option::Some(#name))
    } else {
        quote!(::core::option::Option::None)
    }
}

/// The task marked `#[item(output)]` in the multi-instance sub-process `sub`.
fn output_task(model: &Model, sub: usize) -> Option<usize> {
    (0..model.nodes.len())
        .find(|&t| is_output_task(model, t) && enclosing_multi(model, t) == Some(sub))
}
