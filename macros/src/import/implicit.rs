//! What BPMN leaves implicit and the model needs drawn: a flow node with no outgoing
//! sequence flow ends its path there (BPMN 2.0, 13.3.4: an implicit end), and in a
//! process or sub-process with no start event every flow node with no incoming flow
//! starts when the scope does (13.4.6: they all start, in parallel). Each such scope
//! gets a none end (per node) or a none start (and, for several nodes, a parallel
//! split) made here, with ids no file element has; the exports draw them.

use std::collections::HashSet;

use proc_macro2::Span;
use syn::Ident;

use crate::parse::{FlowAst, FlowMeta, NodeAst, ProcessAst};

/// Kinds of node whose path may end without an end event.
const ENDS_PATH: &[&str] = &[
    "task",
    "user",
    "receive",
    "call",
    "subprocess",
    "transaction",
    "exclusive",
    "parallel",
    "inclusive",
    "complex",
    "catch",
    "throw",
    "boundary",
];

/// Add the implicit starts and ends of `out` (see the module's doc).
pub(super) fn complete(out: &mut ProcessAst, span: Span) {
    let has_out: HashSet<String> = out
        .flows
        .iter()
        .map(|f| f.groups[0][0].to_string())
        .collect();
    let has_in: HashSet<String> = out
        .flows
        .iter()
        .map(|f| f.groups[1][0].to_string())
        .collect();
    // Compensation handlers stand beside the paths; a link throw goes on at its
    // catch; a compensation boundary has no flows.
    let handlers: HashSet<String> = out
        .nodes
        .iter()
        .filter_map(|n| n.association.as_ref().map(Ident::to_string))
        .collect();
    let off_path = |n: &NodeAst| {
        let spec = n.spec.as_ref().map(|s| s.name.to_string());
        handlers.contains(&n.id.to_string())
            || matches!(spec.as_deref(), Some("compensation" | "link"))
    };
    let taken: HashSet<String> = out.nodes.iter().map(|n| n.id.to_string()).collect();
    let fresh = |base: String| {
        let mut id = base.clone();
        let mut k = 2;
        while taken.contains(&id) {
            id = format!("{base}_{k}");
            k += 1;
        }
        Ident::new(&id, span)
    };
    let mut nodes = Vec::new();
    let mut flows = Vec::new();
    // Scopes: the process (`None`) and every sub-process but event sub-processes.
    let scopes = std::iter::once(None).chain(
        out.nodes
            .iter()
            .enumerate()
            .filter(|(_, n)| matches!(n.keyword.to_string().as_str(), "subprocess" | "transaction"))
            .map(|(i, _)| Some(i)),
    );
    for scope in scopes.collect::<Vec<_>>() {
        let members = || out.nodes.iter().filter(move |n| n.scope == scope);
        if members().any(|n| n.keyword == "start") {
            continue;
        }
        let first: Vec<&NodeAst> = members()
            .filter(|n| {
                let kw = n.keyword.to_string();
                kw != "boundary"
                    && ENDS_PATH.contains(&kw.as_str())
                    && !has_in.contains(&n.id.to_string())
                    && !off_path(n)
            })
            .collect();
        if first.is_empty() {
            continue;
        }
        let base = scope.map_or_else(|| "process".to_string(), |s| out.nodes[s].id.to_string());
        let start = fresh(format!("{base}_implicit_start"));
        nodes.push(plain("start", start.clone(), scope, span));
        let from = match first.len() {
            1 => start,
            _ => {
                let split = fresh(format!("{base}_implicit_split"));
                nodes.push(plain("parallel", split.clone(), scope, span));
                flows.push(flow(start, split.clone(), scope));
                split
            }
        };
        for n in first {
            flows.push(flow(from.clone(), n.id.clone(), scope));
        }
    }
    // A node with no way in (in a scope with a start: reported by the graph
    // rules) gets no end: it would only be reported too.
    let has_in: HashSet<String> = has_in
        .into_iter()
        .chain(flows.iter().map(|f: &FlowAst| f.groups[1][0].to_string()))
        .collect();
    for n in &out.nodes {
        let kw = n.keyword.to_string();
        let reached = has_in.contains(&n.id.to_string()) || kw == "boundary";
        if ENDS_PATH.contains(&kw.as_str())
            && reached
            && !has_out.contains(&n.id.to_string())
            && !off_path(n)
        {
            let end = fresh(format!("{}_implicit_end", n.id));
            nodes.push(plain("end", end.clone(), n.scope, span));
            flows.push(flow(n.id.clone(), end, n.scope));
        }
    }
    out.nodes.extend(nodes);
    out.flows.extend(flows);
}

fn plain(keyword: &str, id: Ident, scope: Option<usize>, span: Span) -> NodeAst {
    NodeAst {
        attrs: Vec::new(),
        keyword: Ident::new(keyword, span),
        id,
        handler: None,
        spec: None,
        more: Vec::new(),
        attached: None,
        non_interrupting: None,
        association: None,
        scope,
        label: None,
        kind: None,
        assign: Vec::new(),
    }
}

/// A made flow, with an id of its own: an export writes it, and the export
/// imported back has the same flow.
fn flow(source: Ident, target: Ident, scope: Option<usize>) -> FlowAst {
    let id = format!("Flow_{source}_{target}");
    FlowAst {
        groups: vec![vec![source], vec![target]],
        guard: None,
        scope,
        file: Some(FlowMeta {
            id,
            name: String::new(),
            drawing: Vec::new(),
        }),
    }
}
