//! Stage 1: tokens → syntax tree. Only the shape of the DSL is checked here; names,
//! kinds and every rule about the graph are left to `model` and `check`.
//!
//! ```text
//! input   := process*
//! process := attr* vis NAME ':' DataType identity '{' stmt* '}'
//! identity := ('=' "name")? ('version' INT)?        the stable name and the version
//! stmt    := attr* KIND id ('=' handler)? (':' spec ('|' spec)*)? ('->' id)? ';'   a node
//!          | attr* ('subprocess' | 'event_subprocess' | 'transaction') id '{' stmt* '}'   a scope
//!          | ids ('->' ids)+ ('when' condition | 'else')? ';'             flows
//! spec    := NAME ('(' args ')')?
//! ids     := id (',' id)*
//! ```
//!
//! A sub-process's block is flattened here: its elements and flows join the
//! process's lists, each marked with the scope it was written in.
//!
//! A process imported from a diagram has a header with `from` and a body of bindings
//! (the `import` stage turns the file and the bindings into the same tree):
//!
//! ```text
//! process := attr* vis NAME ':' DataType identity 'from' "file.bpmn" ('process' "Id")? '{' binding* '}'
//! binding := attr* KIND ref ('=' handler)? (':' spec ('|' spec)*)? ';'     an element's code
//!          | 'flow' ref 'when' condition ';'                              a flow's condition
//! ref     := id | "id as the file writes it"
//! ```

use proc_macro2::{Delimiter, Group, Span, TokenStream, TokenTree};
use syn::parse::{Parse, ParseStream};
use syn::{braced, parenthesized, Attribute, Expr, Ident, Token, Type, Visibility};

mod args;
pub mod assign;
mod import;
pub mod label;
pub mod loops;
pub mod policy;
mod spec;

use import::parse_bindings;
pub use import::{FileMeta, FlowMeta, ImportAst, NodeMeta};
pub use spec::{activation, event, ActivationAst, EventAst, EventTrigger, TimerAst};

use crate::symbol::{FROM, NON_INTERRUPTING, ON, PROCESS, SCOPES, VERSION, WHEN};

pub struct Input {
    pub processes: Vec<ProcessAst>,
}

pub struct ProcessAst {
    pub attrs: Vec<Attribute>,
    pub vis: Visibility,
    pub name: Ident,
    pub data: Type,
    /// The process's stable name and version (`= "order" version 2`).
    pub identity: Identity,
    /// Every element, scopes before what they contain, in source order.
    pub nodes: Vec<NodeAst>,
    pub flows: Vec<FlowAst>,
    /// A syntax error in the body; then `nodes` and `flows` are empty, and the
    /// process is emitted as an empty graph beside this error.
    pub syntax_error: Option<syn::Error>,
    /// `from "file.bpmn" { bindings }`: the structure is in the file; `nodes` and
    /// `flows` are empty until the `import` stage fills them.
    pub import: Option<ImportAst>,
    /// What the file says of its elements beyond the structure (made by `import`).
    pub file: Option<FileMeta>,
}

/// The header's `= "order" version 2`: the name the engines and the store know the
/// process by (the static's identifier when not given) and its version (1 when not
/// given). Several versions of one name are registered side by side.
#[derive(Clone, Default)]
pub struct Identity {
    pub name: Option<syn::LitStr>,
    pub version: Option<syn::LitInt>,
}

impl Identity {
    /// `('=' "name")? ('version' INT)?`
    fn parse(input: ParseStream) -> syn::Result<Self> {
        let mut identity = Identity::default();
        if input.peek(Token![=]) {
            input.parse::<Token![=]>()?;
            let name: syn::LitStr = input.parse().map_err(|e| {
                syn::Error::new(
                    e.span(),
                    "expected the process's name as a string literal: `ORDER_V2: Order = \"order\" version 2 { .. }`",
                )
            })?;
            if name.value().is_empty() || name.value().contains('\0') {
                return Err(syn::Error::new(
                    name.span(),
                    "a process's name is not empty and holds no NUL: `= \"order\"`",
                ));
            }
            identity.name = Some(name);
        }
        if input.peek(Ident) && input.fork().parse::<Ident>()? == VERSION {
            input.parse::<Ident>()?;
            let version: syn::LitInt = input.parse().map_err(|e| {
                syn::Error::new(
                    e.span(),
                    "expected the version as a whole number: `version 2`",
                )
            })?;
            match version.base10_parse::<u32>() {
                Ok(1..) if version.suffix().is_empty() => {}
                _ => {
                    return Err(syn::Error::new(
                        version.span(),
                        "a version is a whole number from 1 (no suffix): `version 2`",
                    ))
                }
            }
            identity.version = Some(version);
        }
        Ok(identity)
    }
}

/// How deep sub-processes may nest: parsing recurses once per level, and the
/// compiler's stack is finite.
const MAX_NESTING: usize = 64;

/// `task check_stock = handlers::check_stock;`, `end expired: terminate;`
pub struct NodeAst {
    pub attrs: Vec<Attribute>,
    /// The element keyword (`start`, `task`, ...), resolved by `model`.
    pub keyword: Ident,
    pub id: Ident,
    pub handler: Option<Expr>,
    pub spec: Option<Spec>,
    /// Further specs after `|` (a complex gateway's alternative activations).
    pub more: Vec<Spec>,
    /// A boundary event's `on activity`: the activity it is attached to.
    pub attached: Option<Ident>,
    /// A boundary event's (or event sub-process start's) `non_interrupting` marker.
    pub non_interrupting: Option<Ident>,
    /// A compensation boundary's association to its handler, `-> handler` after the
    /// spec: `boundary undo on charge: compensation -> refund;`.
    pub association: Option<Ident>,
    /// The sub-process this element is written in (an index into
    /// [`ProcessAst::nodes`]); `None` at the process's top level.
    pub scope: Option<usize>,
    /// Its name for the pictures, a string literal after the `:` (`label.rs`).
    pub label: Option<syn::LitStr>,
    /// `kind(send)`: a task's BPMN type for the pictures, with the `kind` keyword.
    pub kind: Option<(Ident, Ident)>,
    /// A user task's `assignee(..)`, `groups(..)`, `due(..)`, `priority(..)`
    /// (`assign.rs`), kept apart from its other specs.
    pub assign: Vec<Spec>,
}

/// What follows the `:` of a node: `terminate`, `message("name", ...)`, `activate(...)`.
#[derive(Clone)]
pub struct Spec {
    pub name: Ident,
    pub args: Option<TokenStream>,
    /// The `)` closing the arguments (the name when there are none): where an error at
    /// the end of the arguments points.
    pub close: Span,
}

impl Spec {
    /// Run `parser` over the arguments inside their parentheses, so that an error at
    /// their end ("expected an expression") points at the `)` rather than at the whole
    /// macro, as it would with the bare token stream.
    fn parse_args<T>(
        &self,
        args: &TokenStream,
        parser: impl FnOnce(ParseStream) -> syn::Result<T>,
    ) -> syn::Result<T> {
        let mut group = Group::new(Delimiter::Parenthesis, args.clone());
        group.set_span(self.close);
        let inside = |input: ParseStream| -> syn::Result<T> {
            let content;
            parenthesized!(content in input);
            parser(&content)
        };
        syn::parse::Parser::parse2(inside, TokenTree::Group(group).into())
    }
}

/// One flow statement: `a -> b, c -> d when |x| ...;`. Each pair of adjacent groups
/// is a hop; every source of a hop flows to every target of it.
pub struct FlowAst {
    pub groups: Vec<Vec<Ident>>,
    pub guard: Option<Guard>,
    /// The sub-process the statement is written in, as for [`NodeAst::scope`].
    pub scope: Option<usize>,
    /// The diagram's flow it was made of (an imported process).
    pub file: Option<FlowMeta>,
}

/// A guard applies to the statement's last hop, which must be a single flow.
// Spans with locations (proc-macro2's `span-locations`) make syn's trees larger;
// these live briefly in one macro run.
#[allow(clippy::large_enum_variant)]
pub enum Guard {
    When { keyword: Ident, condition: Expr },
    Else { keyword: Token![else] },
}

impl Guard {
    pub fn span(&self) -> Span {
        match self {
            Guard::When { keyword, .. } => keyword.span(),
            Guard::Else { keyword } => keyword.span,
        }
    }
}

impl Parse for Input {
    fn parse(input: ParseStream) -> syn::Result<Self> {
        let mut processes = Vec::new();
        while !input.is_empty() {
            processes.push(input.parse()?);
        }
        Ok(Input { processes })
    }
}

impl Parse for ProcessAst {
    fn parse(input: ParseStream) -> syn::Result<Self> {
        let attrs = input.call(Attribute::parse_outer)?;
        let vis = input.parse()?;
        let name = input.parse()?;
        input.parse::<Token![:]>()?;
        let data = input.parse()?;
        let identity = Identity::parse(input)?;
        let from = if input.peek(Ident) && input.fork().parse::<Ident>()? == FROM {
            input.parse::<Ident>()?;
            let path: syn::LitStr = input.parse().map_err(|e| {
                syn::Error::new(
                    e.span(),
                    "expected the diagram's path as a string literal: `from \"processes/order.bpmn\"`",
                )
            })?;
            let process = if input.peek(Ident) && input.fork().parse::<Ident>()? == PROCESS {
                input.parse::<Ident>()?;
                Some(input.parse::<syn::LitStr>().map_err(|e| {
                    syn::Error::new(
                        e.span(),
                        "expected the process's id as a string literal: `process \"Process_1\"`",
                    )
                })?)
            } else {
                None
            };
            Some((path, process))
        } else {
            None
        };
        if let Some((path, process)) = from {
            if !input.peek(syn::token::Brace) {
                return Err(input.error("expected curly braces with the diagram's bindings: `{ task check_stock = check_stock; }` (or `{}` when there is nothing to bind)"));
            }
            let body: Group = input.parse()?;
            let mut import = ImportAst {
                path,
                process,
                nodes: Vec::new(),
                flows: Vec::new(),
            };
            let in_braces = |input: ParseStream| -> syn::Result<()> {
                let content;
                braced!(content in input);
                parse_bindings(&content, &mut import)
            };
            let syntax_error =
                syn::parse::Parser::parse2(in_braces, TokenTree::Group(body).into()).err();
            return Ok(ProcessAst {
                attrs,
                vis,
                name,
                data,
                identity,
                nodes: Vec::new(),
                flows: Vec::new(),
                syntax_error,
                import: Some(import),
                file: None,
            });
        }
        // The body is parsed on its own (in its braces, so that an error at its end
        // points at the `}`): a syntax error there leaves the header standing, and the
        // static is still emitted, so code using it raises nothing more.
        if !input.peek(syn::token::Brace) {
            return Err(input.error("expected curly braces"));
        }
        let body: Group = input.parse()?;
        let (mut nodes, mut flows) = (Vec::new(), Vec::new());
        let in_braces = |input: ParseStream| -> syn::Result<()> {
            let content;
            braced!(content in input);
            parse_body(&content, None, 0, &mut nodes, &mut flows)
        };
        let syntax_error =
            syn::parse::Parser::parse2(in_braces, TokenTree::Group(body).into()).err();
        if syntax_error.is_some() {
            nodes.clear();
            flows.clear();
        }
        Ok(ProcessAst {
            attrs,
            vis,
            name,
            data,
            identity,
            nodes,
            flows,
            syntax_error,
            import: None,
            file: None,
        })
    }
}

/// The statements of one scope (the process, or a sub-process's block), appended
/// to `nodes` and `flows`; a nested block recurses with its own index as scope.
fn parse_body(
    body: ParseStream,
    scope: Option<usize>,
    depth: usize,
    nodes: &mut Vec<NodeAst>,
    flows: &mut Vec<FlowAst>,
) -> syn::Result<()> {
    while !body.is_empty() {
        let attrs = body.call(Attribute::parse_outer)?;
        if body.peek(Ident) && body.peek2(Ident) {
            let fork = body.fork();
            let keyword: Ident = fork.parse()?;
            fork.parse::<Ident>()?;
            if fork.peek(syn::token::Brace) {
                let keyword_text = keyword.to_string();
                if !SCOPES.contains(&keyword_text.as_str()) {
                    let hint = crate::suggest::hint(&keyword_text, SCOPES);
                    return Err(syn::Error::new_spanned(
                        &keyword,
                        format!("only a sub-process has a block of its own; {hint}write `subprocess name {{ ... }}` for an embedded sub-process, `event_subprocess name {{ ... }}` for an event sub-process"),
                    ));
                }
                body.parse::<Ident>()?;
                let id: Ident = body.parse()?;
                if depth == MAX_NESTING {
                    return Err(syn::Error::new_spanned(
                        &id,
                        format!("`{id}` nests sub-processes {} deep; at most {MAX_NESTING} levels are supported — move part of the work into a sub-process of its own level, or a separate process", depth + 1),
                    ));
                }
                let index = nodes.len();
                nodes.push(NodeAst {
                    attrs,
                    keyword,
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
                });
                let inner;
                braced!(inner in body);
                parse_body(&inner, Some(index), depth + 1, nodes, flows)?;
                // A `;` after the block is allowed, as after any other element.
                if body.peek(Token![;]) {
                    body.parse::<Token![;]>()?;
                }
                continue;
            }
            let mut node = parse_node(body, attrs)?;
            node.scope = scope;
            nodes.push(node);
        } else {
            if let Some(attr) = attrs.first() {
                return Err(syn::Error::new_spanned(
                    attr,
                    "attributes and doc comments belong on node declarations, not on flows",
                ));
            }
            let mut flow = parse_flow(body)?;
            flow.scope = scope;
            flows.push(flow);
        }
    }
    Ok(())
}

fn parse_node(input: ParseStream, attrs: Vec<Attribute>) -> syn::Result<NodeAst> {
    let keyword: Ident = input.parse()?;
    let id = input.parse()?;
    parse_node_rest(input, attrs, keyword, id)
}

/// A declaration after its keyword and id.
fn parse_node_rest(
    input: ParseStream,
    attrs: Vec<Attribute>,
    keyword: Ident,
    id: Ident,
) -> syn::Result<NodeAst> {
    // `boundary late on pay: ...` — the activity the boundary event is attached to.
    let attached = if input.peek(Ident) && input.fork().parse::<Ident>()? == ON {
        input.parse::<Ident>()?;
        Some(input.parse()?)
    } else {
        None
    };
    let handler = if input.peek(Token![=]) {
        input.parse::<Token![=]>()?;
        Some(input.parse()?)
    } else {
        None
    };
    let mut spec = None;
    let mut more = Vec::new();
    let mut non_interrupting = None;
    let (mut label, mut kind) = (None, None);
    let mut assign = Vec::new();
    if input.peek(Token![:]) {
        input.parse::<Token![:]>()?;
        if input.peek(Ident)
            && input.peek2(Ident)
            && input.fork().parse::<Ident>()? == NON_INTERRUPTING
        {
            non_interrupting = Some(input.parse()?);
        }
        let items = label::items(input)?;
        (label, kind) = (items.label, items.kind);
        let (assigning, specs): (Vec<Spec>, Vec<Spec>) =
            items.specs.into_iter().partition(assign::is_assignment);
        assign = assigning;
        let mut specs = specs.into_iter();
        spec = specs.next();
        more = specs.collect();
    }
    // `boundary undo on charge: compensation -> refund;` — an association, not a flow.
    let association = if input.peek(Token![->]) {
        input.parse::<Token![->]>()?;
        Some(input.parse()?)
    } else {
        None
    };
    input.parse::<Token![;]>()?;
    Ok(NodeAst {
        attrs,
        keyword,
        id,
        handler,
        spec,
        more,
        attached,
        non_interrupting,
        association,
        scope: None,
        label,
        kind,
        assign,
    })
}

pub(crate) fn parse_spec(input: ParseStream) -> syn::Result<Spec> {
    let name: Ident = input.parse()?;
    let mut close = name.span();
    let args = if input.peek(syn::token::Paren) {
        let content;
        close = parenthesized!(content in input).span.close();
        Some(content.parse()?)
    } else {
        None
    };
    Ok(Spec { name, args, close })
}

fn parse_flow(input: ParseStream) -> syn::Result<FlowAst> {
    let mut groups = vec![parse_ids(input)?];
    while input.peek(Token![->]) {
        input.parse::<Token![->]>()?;
        groups.push(parse_ids(input)?);
    }
    if groups.len() < 2 {
        return Err(input
            .error("expected `->`: a flow statement reads `a -> b;` (or `a, b -> c -> d, e;`)"));
    }
    let guard = if input.peek(Token![else]) {
        let keyword = input.parse()?;
        if input.peek(Ident) && input.fork().parse::<Ident>()? == WHEN {
            return Err(input.error(
                "a default flow (`else`) cannot have a condition: it is taken exactly when no condition holds",
            ));
        }
        Some(Guard::Else { keyword })
    } else if input.peek(Ident) && input.fork().parse::<Ident>()? == WHEN {
        let keyword = input.parse()?;
        let condition = input.parse()?;
        if input.peek(Token![else]) {
            return Err(input.error(
                "a default flow (`else`) cannot have a condition: it is taken exactly when no condition holds",
            ));
        }
        Some(Guard::When { keyword, condition })
    } else {
        None
    };
    input.parse::<Token![;]>()?;
    Ok(FlowAst {
        groups,
        guard,
        scope: None,
        file: None,
    })
}

fn parse_ids(input: ParseStream) -> syn::Result<Vec<Ident>> {
    let mut ids = vec![input.parse::<Ident>()?];
    while input.peek(Token![,]) {
        input.parse::<Token![,]>()?;
        ids.push(input.parse()?);
    }
    Ok(ids)
}

/// The text of the `#[doc]` attributes among `attrs`, one line each.
pub fn doc_text(attrs: &[Attribute]) -> String {
    attrs
        .iter()
        .filter(|a| a.path().is_ident("doc"))
        .filter_map(|a| match &a.meta {
            syn::Meta::NameValue(nv) => match &nv.value {
                Expr::Lit(syn::ExprLit {
                    lit: syn::Lit::Str(s),
                    ..
                }) => Some(s.value()),
                _ => None,
            },
            _ => None,
        })
        .map(|line| line.strip_prefix(' ').map(str::to_string).unwrap_or(line))
        .collect::<Vec<_>>()
        .join("\n")
}
