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
//! `triggeredByEvent`. Rejected: `manualTask`, `callActivity`, `transaction`,
//! `adHocSubProcess`, a none intermediate throw, loops and multi-instance markers,
//! events with several definitions or a definition thresh has no event for.

mod read;
mod timer;

use std::collections::HashMap;
use std::path::PathBuf;

use proc_macro2::{Group, Literal, Span, TokenStream, TokenTree};
use quote::quote;
use syn::Ident;

use crate::ctx::{Ctx, Origin};
use crate::parse::{FlowAst, Guard, ImportAst, NodeAst, ProcessAst, Spec};
use crate::suggest;
use read::{Def, Diagram, Element, Unreadable};

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
        nodes: Vec::new(),
        flows: Vec::new(),
        syntax_error: None,
        import: None,
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
    let mut lines: HashMap<String, usize> = HashMap::new();
    for e in &diagram.elements {
        lines.insert(e.id.clone(), e.line);
    }
    for f in &diagram.flows {
        lines.insert(f.id.clone(), f.line);
    }
    ctx.set_origin(Origin::new(written.clone(), lit.span(), lines));
    let whole = Importer {
        ctx,
        span: lit.span(),
        diagram: &diagram,
        import,
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
}

/// What thresh makes of a BPMN element, or why it does not run it.
fn keyword(e: &Element) -> Result<&'static str, String> {
    if let Some(looped) = &e.looped {
        return Err(format!("`{}` is marked to repeat (`{looped}`), which thresh does not run; draw the repetition as a loop of flows through a gateway", e.id));
    }
    let events = [
        "startEvent",
        "endEvent",
        "intermediateCatchEvent",
        "intermediateThrowEvent",
        "boundaryEvent",
    ];
    if events.contains(&e.tag.as_str()) {
        if e.defs.len() > 1 {
            return Err(format!("`{}` has {} event definitions (a multiple event), which thresh does not run; give it one", e.id, e.defs.len()));
        }
        if let Some(Def::Other(other)) = e.defs.first() {
            return Err(format!("`{}` has a `{other}`, which thresh does not run; thresh's events are message, signal, timer, conditional, link, error, escalation and terminate", e.id));
        }
    }
    Ok(match e.tag.as_str() {
        "startEvent" => "start",
        "endEvent" => "end",
        "intermediateCatchEvent" => "catch",
        "intermediateThrowEvent" if e.defs.is_empty() => {
            return Err(format!("`{}` is an intermediate throw event with no definition, which does nothing thresh runs; remove it, or give it a signal, message, escalation or link", e.id))
        }
        "intermediateThrowEvent" => "throw",
        "boundaryEvent" => "boundary",
        "task" | "serviceTask" | "scriptTask" | "sendTask" | "businessRuleTask" => "task",
        "userTask" => "user",
        "receiveTask" => "receive",
        "exclusiveGateway" => "exclusive",
        "parallelGateway" => "parallel",
        "inclusiveGateway" => "inclusive",
        "complexGateway" => "complex",
        "eventBasedGateway" => "event_based",
        "subProcess" if e.attrs.get("triggeredByEvent").is_some_and(|v| v == "true") => "event_subprocess",
        "subProcess" => "subprocess",
        "manualTask" => return Err(format!("`{}` is a manual task, which nothing runs; make it a user task (the instance waits for the person) or a task with a handler", e.id)),
        "callActivity" => return Err(format!("`{}` is a call activity, which thresh does not run; draw the called process as a sub-process, or start it from a task's handler", e.id)),
        "transaction" | "adHocSubProcess" => return Err(format!("`{}` is a `{}`, which thresh does not run; make it a plain sub-process", e.id, e.tag)),
        other => return Err(format!("`{}` is a `bpmn:{other}`, which thresh does not run", e.id)),
    })
}

impl Importer<'_> {
    fn ident(&self, text: &str) -> Ident {
        Ident::new(text, self.span)
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
    /// opens it with the element's line.
    fn error(&self, id: &str, message: String) {
        self.ctx.error(self.ident_or_literal(id), message);
    }

    /// `id` as an identifier spanned on the literal (so the origin finds its line), or
    /// the literal's span alone when `id` is no identifier.
    fn ident_or_literal(&self, id: &str) -> TokenStream {
        match syn::parse_str::<Ident>(id) {
            Ok(_) => TokenTree::Ident(self.ident(id)).into(),
            Err(_) => self.string(id),
        }
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
        // Element index → index in `out.nodes`, for the scopes.
        let mut placed: Vec<Option<usize>> = vec![None; diagram.elements.len()];
        for (i, e) in diagram.elements.iter().enumerate() {
            // A binding for an element of the file is used even when the element
            // is rejected: its error is the element's, not "no element `x`".
            let binding = import.nodes.iter().position(|b| b.id == e.id);
            if let Some(b) = binding {
                used[b] = true;
            }
            if e.scope.is_some_and(|s| placed[s].is_none()) {
                continue; // its sub-process was rejected, with an error
            }
            if syn::parse_str::<Ident>(&e.id).is_err() {
                self.error(&e.id, format!("`{}` is the id of a `bpmn:{}`, and not a Rust identifier; rename it in the modeler (letters, digits and `_`, not a Rust keyword)", e.id, e.tag));
                continue;
            }
            let keyword = match keyword(e) {
                Ok(k) => k,
                Err(message) => {
                    self.error(&e.id, message);
                    continue;
                }
            };
            let binding = binding.map(|b| &import.nodes[b]);
            if let Some(node) = self.node(e, keyword, binding) {
                let mut node = node;
                node.scope = e.scope.and_then(|s| placed[s]);
                placed[i] = Some(out.nodes.len());
                out.nodes.push(node);
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
            if !known(&flow.source) || !known(&flow.target) {
                // An end the file does not have is named by the model's error; one
                // that was rejected has its error already, and leaves a hole.
                let missing = |id: &str| !diagram.elements.iter().any(|e| e.id == id);
                if !missing(&flow.source) && !missing(&flow.target) {
                    whole = false;
                    continue;
                }
            }
            if syn::parse_str::<Ident>(&flow.source).is_err()
                || syn::parse_str::<Ident>(&flow.target).is_err()
            {
                whole = false;
                continue;
            }
            let binding = import.flows.iter().position(|b| b.id == flow.id);
            if let Some(b) = binding {
                used_flows[b] = true;
            }
            let source = diagram.elements.iter().find(|e| e.id == flow.source);
            let is_default = source.is_some_and(|s| s.attrs.get("default") == Some(&flow.id));
            let guard = match binding.map(|b| &import.flows[b]) {
                Some(b) if is_default => {
                    self.ctx.error(&b.id, format!("flow `{}` is the default flow of `{}` in the diagram, taken when no other condition holds, so it has no condition of its own; remove this binding, or unmark the default in the modeler", b.id, flow.source));
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
                        self.error(&flow.id, format!("flow `{}` has a condition in the diagram (`{text}`), which thresh does not run: conditions are Rust — bind it: `flow {} when |data| ...;`", flow.id, flow.id));
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
                groups: vec![
                    vec![self.ident(&flow.source)],
                    vec![self.ident(&flow.target)],
                ],
                guard,
                scope: source.and_then(|s| {
                    let i = diagram.elements.iter().position(|e| std::ptr::eq(e, s))?;
                    diagram.elements[i].scope.and_then(|sc| placed[sc])
                }),
            });
        }
        // Bindings for ids the file lacks.
        let element_ids = || diagram.elements.iter().map(|e| e.id.as_str());
        let flow_ids = || diagram.flows.iter().map(|f| f.id.as_str());
        for (b, _) in used.iter().enumerate().filter(|(_, u)| !**u) {
            let id = &import.nodes[b].id;
            let text = id.to_string();
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
            let text = id.to_string();
            let hint = suggest::hint(&text, flow_ids());
            self.ctx.error(id, format!("the diagram `{}` has no sequence flow `{text}`; {hint}a flow binding names a flow by its id in the file", import.path.value()));
        }
        whole
    }

    /// The declaration of element `e` as `keyword`, with its binding.
    fn node(
        &self,
        e: &Element,
        keyword: &'static str,
        binding: Option<&NodeAst>,
    ) -> Option<NodeAst> {
        let mut binding = binding;
        if let Some(b) = binding {
            if b.keyword != keyword {
                let shown = match keyword {
                    "task" => format!("`task {} = handler;`", e.id),
                    "user" => format!(
                        "`user {}` (a user task needs no binding: leave it out)",
                        e.id
                    ),
                    _ => format!("`{keyword} {} ...;`", e.id),
                };
                self.ctx.error(&b.keyword, format!("`{}` is a `bpmn:{}` in the diagram, which thresh runs as `{keyword}`, not `{}`; bind it as {shown}, or change the element's type in the modeler", e.id, e.tag, b.keyword));
                // The element as the file has it, without the binding: the graph
                // stays whole.
                binding = None;
            }
        }
        if let Some(b) = binding {
            if let Some(on) = &b.attached {
                self.ctx.error(on, format!("the diagram attaches `{}` to its activity (`attachedToRef`); leave `on ...` out of the binding", e.id));
            }
            if let Some(ni) = &b.non_interrupting {
                self.ctx.error(ni, format!("the diagram says whether `{}` interrupts (`cancelActivity`, `isInterrupting`); leave `non_interrupting` out of the binding", e.id));
            }
        }
        let mut node = NodeAst {
            attrs: binding.map(|b| b.attrs.clone()).unwrap_or_default(),
            keyword: self.ident(keyword),
            id: self.ident(&e.id),
            handler: binding.and_then(|b| b.handler.clone()),
            spec: None,
            more: Vec::new(),
            attached: None,
            non_interrupting: None,
            scope: None,
        };
        let attr = |name: &str| e.attrs.get(name).map(String::as_str);
        if keyword == "boundary" {
            match attr("attachedToRef") {
                Some(host) if syn::parse_str::<Ident>(host).is_ok() => {
                    node.attached = Some(self.ident(host))
                }
                _ => {
                    self.error(&e.id, format!("boundary event `{}` is attached to nothing (`attachedToRef`); attach it to an activity in the modeler", e.id));
                    return None;
                }
            }
            if attr("cancelActivity") == Some("false") {
                node.non_interrupting = Some(self.ident("non_interrupting"));
            }
        }
        if keyword == "start" && attr("isInterrupting") == Some("false") {
            node.non_interrupting = Some(self.ident("non_interrupting"));
        }
        let from_file = self.file_spec(e, keyword, binding.is_some_and(|b| b.spec.is_some()))?;
        match binding.and_then(|b| b.spec.as_ref().map(|s| (s, &b.more))) {
            Some((spec, more)) => {
                if let Some(file) = &from_file {
                    self.agrees(e, file, spec);
                }
                node.spec = Some(clone_spec(spec));
                node.more = more.iter().map(clone_spec).collect();
            }
            None => {
                if let Some(specs) = from_file {
                    let mut specs = specs.into_iter();
                    node.spec = specs.next();
                    node.more = specs.collect();
                }
            }
        }
        Some(node)
    }

    /// The specs the file gives `e` (`None`: none; an error reported: the element is
    /// dropped). `bound`: the binding gives a spec, so what only code can say need
    /// not be in the file.
    fn file_spec(&self, e: &Element, keyword: &str, bound: bool) -> Option<Option<Vec<Spec>>> {
        let attr = |name: &str| e.attrs.get(name).map(String::as_str);
        let one = |spec: Spec| Some(Some(vec![spec]));
        match keyword {
            "receive" => {
                let name = attr("messageRef");
                return match name {
                    Some(name) => one(self.spec("message", Some(self.string(name)))),
                    None => Some(None),
                };
            }
            "event_based" if attr("instantiate") == Some("true") => {
                let args = (attr("eventGatewayType") == Some("Parallel"))
                    .then(|| self.respan(quote!(parallel)));
                return one(self.spec("instantiate", args));
            }
            "complex" => return self.activation(e, bound),
            _ => {}
        }
        let Some(def) = e.defs.first() else {
            return Some(None);
        };
        let named = |what: &str, name: &Option<String>| match name {
            Some(n) => one(self.spec(what, Some(self.string(n)))),
            None if bound => Some(None),
            None => {
                self.error(&e.id, format!("`{}` has a {what} event definition with no {what} name; give it one in the modeler, or bind it: `{keyword} {}: {what}(\"name\" ...);`", e.id, e.id));
                None
            }
        };
        match def {
            Def::Message(name) => named("message", name),
            Def::Signal(name) => named("signal", name),
            Def::Link(name) => named("link", name),
            Def::Error(code) => one(self.spec("error", code.as_ref().map(|c| self.string(c)))),
            Def::Escalation(code) => {
                one(self.spec("escalation", code.as_ref().map(|c| self.string(c))))
            }
            Def::Terminate => one(self.spec("terminate", None)),
            Def::Conditional if bound => one(self.spec("condition", None)),
            Def::Conditional => {
                self.error(&e.id, format!("`{}` is a conditional event: bind its condition, `{keyword} {}: condition(|data| ..., on = [field]);`", e.id, e.id));
                None
            }
            Def::Timer(text) => {
                let args = text.as_ref().and_then(|(el, t)| timer::arguments(el, t));
                match args.and_then(|a| a.parse::<TokenStream>().ok()) {
                    Some(args) => one(self.spec("timer", Some(self.respan(args)))),
                    None if bound => one(self.spec("timer", None)),
                    None => {
                        let shown = text.as_ref().map_or_else(
                            || "no time".to_string(),
                            |(el, t)| format!("`{el}` `{t}`"),
                        );
                        let example = match text.as_ref().map(|(el, _)| el.as_str()) {
                            Some("timeCycle") => "every = Duration::from_secs(3600), times = 3",
                            Some("timeDate") => "at = deadline",
                            _ => "Duration::from_secs(30)",
                        };
                        self.error(&e.id, format!("timer `{}` has {shown}, which is not an ISO 8601 duration (`PT1H30M`), cycle (`R3/PT20S`) or UTC date (`2030-01-01T00:00:00Z`); fix it in the modeler, or bind the timer in Rust: `{keyword} {}: timer({example});`", e.id, e.id));
                        None
                    }
                }
            }
            Def::Other(_) => Some(None),
        }
    }

    /// A converging complex gateway's activation rule from the file's
    /// `activationCondition` (thresh's own `activate(..) | ..` form, without `when`:
    /// a condition is code, bound in Rust).
    fn activation(&self, e: &Element, bound: bool) -> Option<Option<Vec<Spec>>> {
        let Some(text) = &e.activation else {
            return Some(None);
        };
        if bound {
            return Some(None);
        }
        let hint = format!(
            "bind the rule in Rust: `complex {}: activate(count = 2) | activate(...);`",
            e.id
        );
        let parsed = text.parse::<TokenStream>().ok().and_then(|tokens| {
            let tokens = self.respan(tokens);
            let parser = |input: syn::parse::ParseStream| -> syn::Result<Vec<Spec>> {
                let mut specs = vec![crate::parse::parse_spec(input)?];
                while input.peek(syn::Token![|]) {
                    input.parse::<syn::Token![|]>()?;
                    specs.push(crate::parse::parse_spec(input)?);
                }
                Ok(specs)
            };
            syn::parse::Parser::parse2(parser, tokens).ok()
        });
        match parsed {
            Some(specs) if !text.contains("when") && specs.iter().all(|s| s.name == "activate") => {
                Some(Some(specs))
            }
            Some(_) if text.contains("when") => {
                self.error(&e.id, format!("the activation rule of `{}` in the diagram has a condition (`when = ...`), which is code; {hint}", e.id));
                None
            }
            _ => {
                self.error(&e.id, format!("the activation rule of `{}` in the diagram (`{text}`) is not thresh's `activate(count = N, require = [a, b])`; {hint}", e.id));
                None
            }
        }
    }

    /// A binding's spec says the same event as the file's (its kind, and its message,
    /// signal or link name).
    fn agrees(&self, e: &Element, file: &[Spec], bound: &Spec) {
        let Some(file) = file.first() else {
            return;
        };
        if file.name != bound.name {
            self.ctx.error(
                &bound.name,
                format!(
                    "`{}` is a `{}` event in the diagram; bind it as one: `{}(...)`",
                    e.id, file.name, file.name
                ),
            );
            return;
        }
        let first_string = |s: &Spec| {
            s.args
                .as_ref()
                .and_then(|a| match a.clone().into_iter().next() {
                    Some(TokenTree::Literal(l)) => {
                        syn::parse2::<syn::LitStr>(TokenTree::Literal(l).into()).ok()
                    }
                    _ => None,
                })
        };
        if let (Some(f), Some(b)) = (first_string(file), first_string(bound)) {
            if f.value() != b.value() {
                self.ctx.error(&b, format!("the diagram names the {} of `{}` `{}`, not `{}`; write `{}(\"{}\", ...)` here, or rename the {} in the modeler", file.name, e.id, f.value(), b.value(), file.name, f.value(), file.name));
            }
        }
    }
}

fn clone_spec(s: &Spec) -> Spec {
    Spec {
        name: s.name.clone(),
        args: s.args.clone(),
        close: s.close,
    }
}
