//! Stage 0 of an imported process (`NAME: Data from "file.bpmn" { bindings }`): the
//! diagram and the Rust bindings → the same syntax tree the inline parser makes, so
//! `model`, `check` and `emit` run unchanged and every rule of the inline DSL applies.
//!
//! The file gives the structure — elements, flows, defaults, boundaries, scopes,
//! event definitions, gateway kinds, link names, timers in ISO 8601 —, the bindings
//! what only code can say: handlers, flow conditions, message keys and `apply`
//! closures, conditional events' conditions. Every token made from the file is
//! spanned on the `from "..."` literal, and [`Ctx`]'s origin opens an error on such a
//! token with the element's place in the file (`in order.bpmn:42, ...`); a binding
//! keeps its own spans, so an error in it points at it.
//!
//! Element mapping (see the README, "Importing a .bpmn file"):
//! `startEvent` → `start`, `endEvent` → `end`, `intermediateCatchEvent` → `catch`,
//! `intermediateThrowEvent` → `throw`, `boundaryEvent` → `boundary`; `task`,
//! `serviceTask`, `scriptTask`, `sendTask`, `businessRuleTask` → `task` (a handler
//! binding); `userTask` → `user`; `receiveTask` → `receive`; the five gateways →
//! their keyword; `subProcess` → `subprocess`, or `event_subprocess` when
//! `triggeredByEvent`; `transaction` → `transaction`; a task with `isForCompensation`
//! → `task id = ..: compensation;`, a compensation boundary's handler is the target of
//! its association (`-> handler`), `compensateEventDefinition` → `compensation`
//! (with its `activityRef`), `cancelEventDefinition` → `cancel`; `callActivity` →
//! `call` (its `calledElement` is the called process's static unless a binding gives
//! it, with its mappings); `standardLoopCharacteristics` and
//! `multiInstanceLoopCharacteristics` → `#[standard_loop(..)]` and
//! `#[multi_instance(..)]` (`marker.rs`: the file's flags and constants, the
//! binding's expressions). Rejected: `manualTask`, `adHocSubProcess`, a none
//! intermediate throw, events with several definitions or a definition thresh has no
//! event for.

mod di;
mod element;
pub(crate) mod ids;
mod implicit;
mod marker;
mod read;
mod spec;
mod timer;

use std::collections::HashMap;
use std::path::PathBuf;

use proc_macro2::{Group, Literal, Span, TokenStream, TokenTree};
use quote::quote;
use syn::Ident;

use crate::ctx::{Ctx, Origin};
use crate::parse::{FileMeta, FlowAst, FlowMeta, Guard, ImportAst, NodeMeta, ProcessAst, Spec};
use crate::suggest;
use element::keyword;
use ids::Ids;
use read::{Diagram, Unreadable};

/// What [`build`] made of the diagram.
pub struct Built {
    /// The imported process as the inline parser would have made it.
    pub tree: ProcessAst,
    /// The diagram's absolute path (for the rebuild trigger), when it was found.
    pub path: Option<PathBuf>,
    /// A process was read from the file (if not, its error is the only one).
    pub read: bool,
    /// Every element with a flow was made: no flow of the file was left out because
    /// an element at one of its ends was rejected. If one was, the graph has a hole,
    /// and the graph checks would report it (a start with no outgoing flow, a node
    /// nothing reaches) as if the file lacked the flow: only the import's errors are
    /// reported.
    pub whole: bool,
}

/// The imported process, from the file `import` names and its bindings.
pub fn build(ctx: &Ctx, ast: &ProcessAst, import: &ImportAst) -> Built {
    let mut out = ProcessAst {
        attrs: ast.attrs.clone(),
        vis: ast.vis.clone(),
        name: ast.name.clone(),
        data: ast.data.clone(),
        identity: ast.identity.clone(),
        nodes: Vec::new(),
        flows: Vec::new(),
        syntax_error: None,
        import: None,
        file: None,
    };
    let written = import.path.value();
    let lit = &import.path;
    let Some(path) = resolve(&written, lit.span()) else {
        ctx.error(
            lit,
            format!("cannot find the diagram `{written}`: a relative path is looked up in the crate's directory (beside its Cargo.toml) and then beside the source file that invokes `process!` — check the path"),
        );
        return Built {
            tree: out,
            path: None,
            read: false,
            whole: false,
        };
    };
    let text = match std::fs::read_to_string(&path) {
        Ok(text) => text,
        Err(e) => {
            ctx.error(lit, format!("cannot read the diagram `{written}`: {e}"));
            return Built {
                tree: out,
                path: None,
                read: false,
                whole: false,
            };
        }
    };
    let which = import.process.as_ref().map(|p| p.value());
    let diagram = match read::read(&text, which.as_deref()) {
        Ok(d) => d,
        Err(why) => {
            let (at, message) = unreadable(&written, why, import);
            ctx.error(at, message);
            return Built {
                tree: out,
                path: Some(path),
                read: false,
                whole: false,
            };
        }
    };
    let ids = Ids::new(
        diagram
            .elements
            .iter()
            .map(|e| e.id.as_str())
            .chain(diagram.flows.iter().map(|f| f.id.as_str())),
    );
    let mut lines: HashMap<String, usize> = HashMap::new();
    let mut names: HashMap<String, String> = HashMap::new();
    let placed = diagram
        .elements
        .iter()
        .map(|e| (&e.id, e.line, e.attrs.get("name")))
        .chain(
            diagram
                .flows
                .iter()
                .map(|f| (&f.id, f.line, f.name.as_ref())),
        );
    for (id, line, name) in placed {
        for key in [id.clone(), ids.ident(id)] {
            lines.insert(key.clone(), line);
            if let Some(name) = name.filter(|n| !n.trim().is_empty()) {
                names.insert(key, read::one_line(name));
            }
        }
    }
    ctx.set_origin(Origin::new(
        written.clone(),
        lit.span(),
        lines,
        ids.renamed(),
        names,
    ));
    let whole = Importer {
        ctx,
        span: lit.span(),
        diagram: &diagram,
        import,
        ids: &ids,
    }
    .run(&mut out);
    Built {
        tree: out,
        path: Some(path),
        read: true,
        whole,
    }
}

/// The diagram's file: `written` itself when absolute, else in the crate's directory
/// (`CARGO_MANIFEST_DIR`), else beside the invoking source file (known to a macro on
/// Rust 1.88 and later: this is how a trybuild case, built in a generated crate,
/// finds the fixture beside it).
fn resolve(written: &str, span: Span) -> Option<PathBuf> {
    let path = PathBuf::from(written);
    if path.is_absolute() {
        return path.is_file().then_some(path);
    }
    let in_crate = std::env::var_os("CARGO_MANIFEST_DIR").map(|d| PathBuf::from(d).join(&path));
    let beside = span
        .local_file()
        .and_then(|f| f.parent().map(|d| d.join(&path)))
        .map(|p| match p.is_absolute() {
            true => p,
            false => std::env::current_dir().map_or(p.clone(), |cwd| cwd.join(&p)),
        });
    in_crate.into_iter().chain(beside).find(|p| p.is_file())
}

fn unreadable(written: &str, why: Unreadable, import: &ImportAst) -> (TokenStream, String) {
    let at = |lit: &syn::LitStr| quote!(#lit);
    match why {
        Unreadable::NotXml(e) => (at(&import.path), format!("`{written}` is not an XML file ({e}); a diagram is a BPMN 2.0 file as Camunda Modeler or bpmn.io saves it")),
        Unreadable::NotBpmn(e) => (at(&import.path), format!("`{written}` is not a BPMN 2.0 file: {e}, where `bpmn:definitions` in the BPMN 2.0 model namespace was expected")),
        Unreadable::NoProcess => (at(&import.path), format!("`{written}` has no process with elements in it; draw one, or import another file")),
        Unreadable::Several(ids) => (at(&import.path), format!("`{written}` has several processes ({}); say which one to import: `from \"{written}\" process \"{}\"`", list(&ids), ids.first().map_or("", String::as_str))),
        Unreadable::NoSuch(which, ids) => {
            let hint = suggest::hint(&which, ids.iter().map(String::as_str));
            let lit = import.process.as_ref().unwrap_or(&import.path);
            (at(lit), format!("`{written}` has no process `{which}`; {hint}its processes are {}", list(&ids)))
        }
    }
}

fn list(ids: &[String]) -> String {
    ids.iter()
        .map(|i| format!("`{i}`"))
        .collect::<Vec<_>>()
        .join(", ")
}

struct Importer<'a> {
    ctx: &'a Ctx,
    /// The `from "..."` literal's span: every token made from the file has it.
    span: Span,
    diagram: &'a Diagram,
    import: &'a ImportAst,
    /// The file's ids as identifiers.
    ids: &'a Ids,
}

impl Importer<'_> {
    fn ident(&self, text: &str) -> Ident {
        Ident::new(text, self.span)
    }

    /// The identifier of the file's element or flow `written`, spanned on the literal.
    fn id(&self, written: &str) -> Ident {
        Ident::new(&self.ids.ident(written), self.span)
    }

    /// `tokens` with every span set to the literal's.
    fn respan(&self, tokens: TokenStream) -> TokenStream {
        tokens
            .into_iter()
            .map(|t| match t {
                TokenTree::Group(g) => {
                    let mut group = Group::new(g.delimiter(), self.respan(g.stream()));
                    group.set_span(self.span);
                    TokenTree::Group(group)
                }
                mut t => {
                    t.set_span(self.span);
                    t
                }
            })
            .collect()
    }

    fn string(&self, text: &str) -> TokenStream {
        let mut lit = Literal::string(text);
        lit.set_span(self.span);
        TokenTree::Literal(lit).into()
    }

    fn spec(&self, name: &str, args: Option<TokenStream>) -> Spec {
        Spec {
            name: self.ident(name),
            args,
            close: self.span,
        }
    }

    /// An error on the file's element `id`, spanned on the literal: the ctx's origin
    /// opens it with the element's line (and name).
    fn error(&self, id: &str, message: String) {
        self.ctx.error(self.id(id), message);
    }

    /// Fill `out` from the diagram and the bindings; whether the graph is whole (see
    /// [`Built::whole`]).
    fn run(&self, out: &mut ProcessAst) -> bool {
        let mut whole = true;
        let import = self.import;
        let diagram = self.diagram;
        // Bindings by id; each is used at most once.
        let mut used = vec![false; import.nodes.len()];
        let mut used_flows = vec![false; import.flows.len()];
        let mut meta = FileMeta::default();
        // Element index → index in `out.nodes`, for the scopes.
        let mut placed: Vec<Option<usize>> = vec![None; diagram.elements.len()];
        for (i, e) in diagram.elements.iter().enumerate() {
            // A binding for an element of the file is used even when the element
            // is rejected: its error is the element's, not "no element `x`".
            let binding = import.nodes.iter().position(|b| b.written == e.id);
            if let Some(b) = binding {
                used[b] = true;
            }
            if e.scope.is_some_and(|s| placed[s].is_none()) {
                continue; // its sub-process was rejected, with an error
            }
            if e.tag == "startEvent"
                && e.scope.is_none()
                && matches!(e.defs.first(), Some(read::Def::Conditional))
            {
                self.error(&e.id, format!("`{}` is a conditional start event at the process's top level, which thresh does not run: an instance is started by `Engine::start` (or a message, signal or timer), and before it exists there is no data for a condition to read; in the modeler, make it a none start followed by a conditional intermediate catch event (the instance then waits for the condition over its data), or a message or signal start", e.id));
                continue;
            }
            let bound_as = binding.map(|b| import.nodes[b].node.keyword.to_string());
            let keyword = match keyword(e) {
                // A collapsed sub-process with nothing inside: a task, if bound as one.
                Ok("subprocess" | "transaction") if e.empty => match bound_as.as_deref() {
                    Some("task") => "task",
                    // Reported, and kept as a task so what hangs on it (its
                    // boundaries, its flows) raises nothing more.
                    _ => {
                        self.error(&e.id, format!("sub-process `{}` is empty in the diagram (drawn collapsed, with nothing inside), so there is nothing to run; draw its content in the modeler, or bind it as a task: `task {} = handler;`", e.id, self.ids.ident(&e.id)));
                        "task"
                    }
                },
                Ok(k) => k,
                Err(message) => {
                    self.error(&e.id, message);
                    continue;
                }
            };
            let binding = binding.map(|b| &import.nodes[b].node);
            match self.node(e, keyword, binding) {
                Some(mut node) => {
                    node.scope = e.scope.and_then(|s| placed[s]);
                    meta.nodes.insert(
                        node.id.to_string(),
                        NodeMeta {
                            written: e.id.clone(),
                            name: e
                                .attrs
                                .get("name")
                                .map_or_else(String::new, |n| read::one_line(n)),
                            tag: e.tag.clone(),
                            drawing: diagram.drawing.get(&e.id).cloned().unwrap_or_default(),
                        },
                    );
                    placed[i] = Some(out.nodes.len());
                    out.nodes.push(node);
                }
                // A compensation boundary left out leaves a hole as a flow would: its
                // handler and the throws would report its absence.
                None if matches!(e.defs.first(), Some(read::Def::Compensate(_))) => whole = false,
                None => {}
            }
        }
        let known = |id: &str| {
            diagram
                .elements
                .iter()
                .zip(&placed)
                .any(|(e, p)| e.id == id && p.is_some())
        };
        for flow in &diagram.flows {
            // A binding for a flow of the file is used even when the flow is left out.
            let binding = import.flows.iter().position(|b| b.written == flow.id);
            if let Some(b) = binding {
                used_flows[b] = true;
            }
            if !known(&flow.source) || !known(&flow.target) {
                // An end the file does not have is named by the model's error; one
                // that was rejected has its error already, and leaves a hole.
                let missing = |id: &str| !diagram.elements.iter().any(|e| e.id == id);
                if !missing(&flow.source) && !missing(&flow.target) {
                    whole = false;
                    continue;
                }
            }
            let source = diagram.elements.iter().find(|e| e.id == flow.source);
            let is_default = source.is_some_and(|s| s.attrs.get("default") == Some(&flow.id));
            let guard = match binding.map(|b| &import.flows[b]) {
                Some(b) if is_default => {
                    self.ctx.error(&b.id, format!("flow `{}` is the default flow of `{}` in the diagram, taken when no other condition holds, so it has no condition of its own; remove this binding, or unmark the default in the modeler", b.written, flow.source));
                    // Still the default, as the file says: the gateway's checks
                    // see the diagram's rule, not a missing condition.
                    Some(Guard::Else {
                        keyword: syn::Token![else](self.span),
                    })
                }
                Some(b) => Some(Guard::When {
                    keyword: b.when.clone(),
                    condition: b.condition.clone(),
                }),
                None if is_default => Some(Guard::Else {
                    keyword: syn::Token![else](self.span),
                }),
                None => match &flow.condition {
                    Some(text) => {
                        self.error(&flow.id, format!("flow `{}` has a condition in the diagram (`{}`), which thresh does not run: conditions are Rust — bind it: `flow {} when |data| ...;`", flow.id, read::one_line(text), self.ids.ident(&flow.id)));
                        // A stand-in, so the gateway's checks do not report the
                        // condition missing a second time.
                        Some(Guard::When {
                            keyword: self.ident("when"),
                            condition: syn::parse2(self.respan(quote!(|_| false)))
                                .expect("a closure"),
                        })
                    }
                    None => None,
                },
            };
            out.flows.push(FlowAst {
                groups: vec![vec![self.id(&flow.source)], vec![self.id(&flow.target)]],
                guard,
                scope: source.and_then(|s| {
                    let i = diagram.elements.iter().position(|e| std::ptr::eq(e, s))?;
                    diagram.elements[i].scope.and_then(|sc| placed[sc])
                }),
                file: Some(FlowMeta {
                    id: flow.id.clone(),
                    name: flow
                        .name
                        .as_deref()
                        .map_or_else(String::new, read::one_line),
                    drawing: diagram.drawing.get(&flow.id).cloned().unwrap_or_default(),
                }),
            });
        }
        // Bindings for ids the file lacks.
        let element_ids = || diagram.elements.iter().map(|e| e.id.as_str());
        let flow_ids = || diagram.flows.iter().map(|f| f.id.as_str());
        for (b, _) in used.iter().enumerate().filter(|(_, u)| !**u) {
            let id = &import.nodes[b].node.id;
            let text = import.nodes[b].written.clone();
            let what = if flow_ids().any(|f| f == text) {
                format!("`{text}` is a flow of the diagram: bind its condition with `flow {text} when |data| ...;`")
            } else {
                let hint = suggest::hint(&text, element_ids());
                format!("the diagram `{}` has no element `{text}`; {hint}a binding names an element by its id in the file", import.path.value())
            };
            self.ctx.error(id, what);
        }
        for (b, _) in used_flows.iter().enumerate().filter(|(_, u)| !**u) {
            let id = &import.flows[b].id;
            let text = import.flows[b].written.clone();
            let hint = suggest::hint(&text, flow_ids());
            self.ctx.error(id, format!("the diagram `{}` has no sequence flow `{text}`; {hint}a flow binding names a flow by its id in the file", import.path.value()));
        }
        if whole {
            implicit::complete(out, self.span);
        }
        out.file = Some(meta);
        whole
    }
}
