//! Stage 2: syntax tree → model, the one IR of a process that `check` and `emit` read.
//! Names are resolved to indices here, so the rules that resolution itself needs —
//! every id declared once, every flow naming declared nodes within its scope, every
//! boundary beside its activity, every link paired — are reported here.
//!
//! - [`ir`]: the model's types;
//! - [`kind`]: each declaration's kind, from its keyword, handler and spec;
//! - [`resolve`]: flows, their names resolved within their scope;
//! - [`attach`]: boundary events onto their activities;
//! - [`links`]: link throws paired with their catches, as direct edges;
//! - [`walk`]: walks over the finished graph, for `check` and `emit`.

mod attach;
pub mod call;
mod compensation;
mod ir;
mod kind;
mod links;
mod parts;
mod resolve;
mod walk;

pub use ir::{Flow, Kind, Marker, Model, Node, ScopeKind};
pub use walk::{Direction, Edges};

use crate::ctx::Ctx;
use crate::parse::{doc_text, NodeAst, ProcessAst};
use crate::symbol::{COMPENSATION, SUBPROCESS, TRANSACTION};

/// The model of one process; every error found on the way is reported into `ctx`.
pub fn build<'a>(ctx: &Ctx, ast: &'a ProcessAst) -> Model<'a> {
    let mut nodes: Vec<Node<'a>> = Vec::new();
    // Declarations dropped with an error, by index (what a dropped scope held
    // is dropped silently and not listed).
    let mut failed: Vec<usize> = Vec::new();
    // Declarations dropped with an error; what a dropped scope holds is dropped
    // with it (silently: moved up a level, it would break rules it never broke).
    let mut dropped = vec![false; ast.nodes.len()];
    for (i, decl) in ast.nodes.iter().enumerate() {
        if decl.scope.is_some_and(|c| dropped[c]) {
            dropped[i] = true;
            continue;
        }
        if let Some(first) = ast.nodes[..i].iter().find(|n| n.id == decl.id) {
            dropped[i] = true;
            ctx.error(
                &decl.id,
                format!(
                    "`{}` is declared twice (first as `{} {}`); every element needs its own identifier — rename one",
                    decl.id, first.keyword, first.id
                ),
            );
            failed.push(i);
            continue;
        }
        let scope_kind = match decl.scope.map(|c| ast.nodes[c].keyword.to_string()) {
            None => ScopeKind::Process,
            Some(k) if k == SUBPROCESS || k == TRANSACTION => ScopeKind::SubProcess,
            Some(_) => ScopeKind::EventSubProcess,
        };
        match kind::of(ctx, decl, scope_kind) {
            Some(kind) => nodes.push(Node {
                id: &decl.id,
                kind,
                handler: decl
                    .handler
                    .as_ref()
                    .filter(|_| matches!(kind, Kind::Task | Kind::Call)),
                doc: doc_text(&decl.attrs),
                incoming: Vec::new(),
                outgoing: Vec::new(),
                default: None,
                loose_in: false,
                loose_out: false,
                activation: parts::activation_of(ctx, decl, kind),
                event: parts::event_of(ctx, decl, kind),
                attached_to: None,
                on: decl.attached.as_ref(),
                boundaries: Vec::new(),
                non_interrupting: decl.non_interrupting.as_ref(),
                // Resolved below, once every scope has its index.
                scope: None,
                marker: parts::marker_of(decl, kind),
                spawn: parts::spawns(decl, kind),
                label: decl.label.as_ref().map(syn::LitStr::value),
                element: parts::element_of(ctx, decl, kind),
                policy: parts::policy_of(ctx, decl),
                assign: {
                    let (assign, errors) = crate::parse::assign::parse(&decl.assign);
                    errors.into_iter().for_each(|e| ctx.push(e));
                    assign
                },
                looping: loop_marker(ctx, decl),
                item: decl
                    .attrs
                    .iter()
                    .find(|a| a.path().is_ident(crate::symbol::ITEM)),
                transaction: decl.keyword == TRANSACTION,
                for_compensation: kind == Kind::Task
                    && decl.spec.as_ref().is_some_and(|s| s.name == COMPENSATION),
                association: decl.association.as_ref(),
                handler_node: None,
                compensate: parts::compensated_activity(ctx, decl, kind),
                compensate_target: None,
            }),
            None => {
                dropped[i] = true;
                failed.push(i);
            }
        }
    }
    // Each declaration's node, by identity (a dropped declaration has none), and each
    // element's scope.
    let decl_node: Vec<Option<usize>> = ast
        .nodes
        .iter()
        .map(|decl| nodes.iter().position(|n| std::ptr::eq(n.id, &decl.id)))
        .collect();
    let scope_of = |mut scope: Option<usize>| {
        while let Some(c) = scope {
            if decl_node[c].is_some() {
                return decl_node[c];
            }
            scope = ast.nodes[c].scope;
        }
        None
    };
    for (decl, n) in ast.nodes.iter().zip(&decl_node) {
        if let Some(n) = *n {
            nodes[n].scope = scope_of(decl.scope);
        }
    }
    let incomplete: Vec<Option<usize>> = failed
        .iter()
        .map(|&i| scope_of(ast.nodes[i].scope))
        .collect();

    let mut flows = resolve::flows(ctx, ast, &mut nodes, &scope_of);
    let links = links::edges(ctx, &mut nodes, &flows);
    flows.extend(links);
    attach::boundaries(ctx, ast, &mut nodes);
    compensation::resolve(ctx, &mut nodes);
    for (i, flow) in flows.iter().enumerate() {
        nodes[flow.source].outgoing.push(i);
        nodes[flow.target].incoming.push(i);
        if flow.is_default() && nodes[flow.source].default.is_none() {
            nodes[flow.source].default = Some(i);
        }
    }

    Model {
        vis: &ast.vis,
        name: &ast.name,
        process_name: ast
            .identity
            .name
            .as_ref()
            .map_or_else(|| ast.name.to_string(), syn::LitStr::value),
        version: ast
            .identity
            .version
            .as_ref()
            .and_then(|v| v.base10_parse().ok())
            .unwrap_or(1),
        data: &ast.data,
        doc: doc_text(&ast.attrs),
        attrs: ast
            .attrs
            .iter()
            .filter(|a| !a.path().is_ident("doc"))
            .collect(),
        handler_fn: ir::handler_fns(&nodes),
        nodes,
        flows,
        incomplete,
        file: ast.file.as_ref(),
    }
}

/// The loop or multi-instance marker among a declaration's attributes; a second
/// one, or one whose arguments do not parse, is an error (and is dropped).
fn loop_marker(ctx: &Ctx, decl: &NodeAst) -> Option<crate::parse::loops::LoopAst> {
    let mut found: Option<crate::parse::loops::LoopAst> = None;
    for attr in &decl.attrs {
        match crate::parse::loops::marker(attr) {
            None => {}
            Some(Err(error)) => ctx.push(error),
            Some(Ok(marker)) if found.is_some() => ctx.error(
                &marker.name,
                format!(
                    "`{}` has two loop markers; an activity is either multi-instance or a standard loop — keep one (loop inside a multi-instance sub-process for both)",
                    decl.id
                ),
            ),
            Some(Ok(marker)) => found = Some(marker),
        }
    }
    found
}
