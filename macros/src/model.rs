//! Stage 2: syntax tree → model, the one IR of a process that `check` and `emit` read.
//! Names are resolved to indices here, so the two rules that resolution itself needs —
//! every id declared once, every flow naming declared nodes — are reported here.

use proc_macro2::TokenStream;
use quote::quote;
use syn::{Expr, Ident, Type, Visibility};

use crate::check::suggest;
use crate::ctx::Ctx;
use crate::parse::{doc_text, Guard, NodeAst, ProcessAst};

pub struct Model<'a> {
    pub vis: &'a Visibility,
    pub name: &'a Ident,
    pub data: &'a Type,
    pub doc: String,
    /// Non-doc attributes of the process (e.g. `#[allow(...)]`), kept on the static.
    pub attrs: Vec<&'a syn::Attribute>,
    pub nodes: Vec<Node<'a>>,
    pub flows: Vec<Flow<'a>>,
}

pub struct Node<'a> {
    pub id: &'a Ident,
    pub kind: Kind<'a>,
    pub doc: String,
    /// Flow indices, in declaration order.
    pub incoming: Vec<usize>,
    pub outgoing: Vec<usize>,
    pub default: Option<usize>,
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Kind<'a> {
    Start,
    End,
    Terminate,
    Task(&'a Expr),
    Exclusive,
    Parallel,
    Inclusive,
}

impl Kind<'_> {
    /// How a message names this kind of element.
    pub fn describe(&self) -> &'static str {
        match self {
            Kind::Start => "start event",
            Kind::End => "end event",
            Kind::Terminate => "terminate end event",
            Kind::Task(_) => "task",
            Kind::Exclusive => "exclusive gateway",
            Kind::Parallel => "parallel gateway",
            Kind::Inclusive => "inclusive gateway",
        }
    }

    pub fn is_end(&self) -> bool {
        matches!(self, Kind::End | Kind::Terminate)
    }
}

pub struct Flow<'a> {
    pub source: usize,
    pub target: usize,
    /// The source and target as written in this flow statement: errors about the
    /// flow span from one to the other.
    pub source_ident: &'a Ident,
    pub target_ident: &'a Ident,
    pub condition: Option<&'a Expr>,
    pub guard: Option<&'a Guard>,
}

impl Flow<'_> {
    /// Tokens spanning the flow as written, `a -> b`, for error spans.
    pub fn tokens(&self) -> TokenStream {
        let (s, t) = (self.source_ident, self.target_ident);
        quote!(#s #t)
    }

    pub fn is_default(&self) -> bool {
        matches!(self.guard, Some(Guard::Else { .. }))
    }
}

const KINDS: &[&str] = &["start", "end", "task", "exclusive", "parallel", "inclusive"];

pub fn build<'a>(ctx: &Ctx, ast: &'a ProcessAst) -> Model<'a> {
    let mut nodes: Vec<Node<'a>> = Vec::new();
    for decl in &ast.nodes {
        if let Some(first) = nodes.iter().find(|n| *n.id == decl.id) {
            ctx.error(
                &decl.id,
                format!(
                    "`{}` is declared twice (first as a {}); every element needs its own identifier",
                    decl.id,
                    first.kind.describe()
                ),
            );
            continue;
        }
        if let Some(kind) = kind_of(ctx, decl) {
            nodes.push(Node {
                id: &decl.id,
                kind,
                doc: doc_text(&decl.attrs),
                incoming: Vec::new(),
                outgoing: Vec::new(),
                default: None,
            });
        }
    }

    let known: Vec<String> = ast.nodes.iter().map(|n| n.id.to_string()).collect();
    let resolve = |id: &Ident| -> Option<usize> {
        let found = nodes.iter().position(|n| n.id == id);
        if found.is_none() && !known.iter().any(|k| id == k) {
            let hint = suggest::nearest(&id.to_string(), known.iter().map(String::as_str))
                .map(|n| format!("; did you mean `{n}`?"))
                .unwrap_or_else(|| "; declare it first, e.g. `task name = handler;`".into());
            ctx.error(id, format!("unknown element `{id}` in flow{hint}"));
        }
        found
    };

    let mut flows = Vec::new();
    for stmt in &ast.flows {
        let hops = stmt.groups.len() - 1;
        for (h, pair) in stmt.groups.windows(2).enumerate() {
            let last = h + 1 == hops;
            if last && stmt.guard.is_some() && (pair[0].len() > 1 || pair[1].len() > 1) {
                ctx.error_at(
                    stmt.guard.as_ref().expect("checked").span(),
                    "`when` and `else` qualify exactly one flow: write each conditional flow as its own `a -> b when ...;`",
                );
            }
            for source in &pair[0] {
                for target in &pair[1] {
                    let (Some(s), Some(t)) = (resolve(source), resolve(target)) else {
                        continue;
                    };
                    let guard = if last { stmt.guard.as_ref() } else { None };
                    let condition = match guard {
                        Some(Guard::When { condition, .. }) => Some(condition),
                        _ => None,
                    };
                    flows.push(Flow {
                        source: s,
                        target: t,
                        source_ident: source,
                        target_ident: target,
                        condition,
                        guard,
                    });
                }
            }
        }
    }
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
        data: &ast.data,
        doc: doc_text(&ast.attrs),
        attrs: ast
            .attrs
            .iter()
            .filter(|a| !a.path().is_ident("doc"))
            .collect(),
        nodes,
        flows,
    }
}

/// The node's kind from its keyword, handler and spec; `None` (with an error) when
/// they do not fit together.
fn kind_of<'a>(ctx: &Ctx, decl: &'a NodeAst) -> Option<Kind<'a>> {
    let keyword = decl.keyword.to_string();
    let kind = match keyword.as_str() {
        "start" => Kind::Start,
        "end" => match &decl.spec {
            Some(spec) if spec.name == "terminate" && spec.args.is_none() => Kind::Terminate,
            Some(spec) => {
                ctx.error(
                    &spec.name,
                    format!(
                        "unknown end event kind `{}`; an end event is `end name;` or `end name: terminate;`",
                        spec.name
                    ),
                );
                return None;
            }
            None => Kind::End,
        },
        "task" => match &decl.handler {
            Some(handler) => Kind::Task(handler),
            None => {
                ctx.error(
                    &decl.id,
                    format!(
                        "task `{}` has no handler; bind one: `task {} = path::to::async_fn;` or `= |data| async move {{ ... }}`",
                        decl.id, decl.id
                    ),
                );
                return None;
            }
        },
        "exclusive" => Kind::Exclusive,
        "parallel" => Kind::Parallel,
        "inclusive" => Kind::Inclusive,
        _ => {
            let hint = suggest::nearest(&keyword, KINDS.iter().copied())
                .map(|k| format!("did you mean `{k}`? "))
                .unwrap_or_default();
            ctx.error(
                &decl.keyword,
                format!(
                    "unknown element kind `{keyword}`; {hint}expected one of: {}",
                    KINDS.join(", ")
                ),
            );
            return None;
        }
    };
    if !matches!(kind, Kind::Task(_)) {
        if let Some(handler) = &decl.handler {
            ctx.error(
                handler,
                format!(
                    "a {} takes no handler; only a `task` binds one with `=`",
                    kind.describe()
                ),
            );
        }
    }
    if !matches!(kind, Kind::End | Kind::Terminate) {
        if let Some(spec) = &decl.spec {
            ctx.error(
                &spec.name,
                format!("a {} takes no `: {}`", kind.describe(), spec.name),
            );
        }
    }
    Some(kind)
}

/// Walking the graph: shared by the checks and by the reachability masks `emit`
/// precomputes for the inclusive joins.
impl Model<'_> {
    /// Nodes reachable from `from` (included) following flows forward, or backward
    /// when `backward`; the walk never enters `barrier`.
    pub fn reachable(&self, from: &[usize], backward: bool, barrier: Option<usize>) -> Vec<bool> {
        let mut seen = vec![false; self.nodes.len()];
        let mut stack: Vec<usize> = from
            .iter()
            .copied()
            .filter(|n| Some(*n) != barrier)
            .collect();
        while let Some(n) = stack.pop() {
            if std::mem::replace(&mut seen[n], true) {
                continue;
            }
            let node = &self.nodes[n];
            let flows = if backward {
                &node.incoming
            } else {
                &node.outgoing
            };
            for &f in flows {
                let next = if backward {
                    self.flows[f].source
                } else {
                    self.flows[f].target
                };
                if !seen[next] && Some(next) != barrier {
                    stack.push(next);
                }
            }
        }
        seen
    }

    /// Whether `node` lies on a cycle: some successor leads back to it.
    pub fn on_cycle(&self, node: usize) -> bool {
        let next: Vec<usize> = self.nodes[node]
            .outgoing
            .iter()
            .map(|&f| self.flows[f].target)
            .collect();
        self.reachable(&next, false, None)[node]
    }

    /// For a converging inclusive gateway `join`: per node `p`, bit `i` set when the
    /// source of incoming flow `i` is reachable from `p` without passing `join`.
    pub fn reach_masks(&self, join: usize) -> Vec<u64> {
        let mut masks = vec![0u64; self.nodes.len()];
        for (i, &f) in self.nodes[join].incoming.iter().enumerate().take(64) {
            let from = self.reachable(&[self.flows[f].source], true, Some(join));
            for (p, reaches) in from.into_iter().enumerate() {
                if reaches {
                    masks[p] |= 1 << i;
                }
            }
        }
        masks
    }

    pub fn starts(&self) -> Vec<usize> {
        (0..self.nodes.len())
            .filter(|&n| self.nodes[n].kind == Kind::Start)
            .collect()
    }
}
