//! Stage 1: tokens → syntax tree. Only the shape of the DSL is checked here; names,
//! kinds and every rule about the graph are left to `model` and `check`.
//!
//! ```text
//! input   := process*
//! process := attr* vis NAME ':' DataType '{' stmt* '}'
//! stmt    := attr* KIND id ('=' handler)? (':' spec ('|' spec)*)? ';'   a node
//!          | attr* ('subprocess' | 'event_subprocess') id '{' stmt* '}'   a scope
//!          | ids ('->' ids)+ ('when' condition | 'else')? ';'             flows
//! spec    := NAME ('(' args ')')?
//! ids     := id (',' id)*
//! ```
//!
//! A sub-process's block is flattened here: its elements and flows join the
//! process's lists, each marked with the scope it was written in.

use proc_macro2::{Delimiter, Group, Span, TokenStream, TokenTree};
use syn::parse::{Parse, ParseStream};
use syn::{braced, parenthesized, Attribute, Expr, Ident, LitInt, Token, Type, Visibility};

use crate::symbol::{
    APPLY, AT, CONDITION, COUNT, ERROR, ESCALATION, EVERY, KEY, LINK, MESSAGE, NON_INTERRUPTING,
    ON, PAYLOAD, REQUIRE, SCOPES, SIGNAL, TIMER, TIMES, WHEN,
};

pub struct Input {
    pub processes: Vec<ProcessAst>,
}

pub struct ProcessAst {
    pub attrs: Vec<Attribute>,
    pub vis: Visibility,
    pub name: Ident,
    pub data: Type,
    /// Every element, scopes before what they contain, in source order.
    pub nodes: Vec<NodeAst>,
    pub flows: Vec<FlowAst>,
    /// A syntax error in the body; then `nodes` and `flows` are empty, and the
    /// process is emitted as an empty graph beside this error.
    pub syntax_error: Option<syn::Error>,
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
    /// The sub-process this element is written in (an index into
    /// [`ProcessAst::nodes`]); `None` at the process's top level.
    pub scope: Option<usize>,
}

/// What follows the `:` of a node: `terminate`, `message("name", ...)`, `activate(...)`.
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
}

/// A guard applies to the statement's last hop, which must be a single flow.
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
            nodes,
            flows,
            syntax_error,
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
                    let hint = crate::suggest::nearest(&keyword_text, SCOPES)
                        .map(|s| format!("did you mean `{s}`? "))
                        .unwrap_or_default();
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
                    scope,
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
    if input.peek(Token![:]) {
        input.parse::<Token![:]>()?;
        if input.peek(Ident)
            && input.peek2(Ident)
            && input.fork().parse::<Ident>()? == NON_INTERRUPTING
        {
            non_interrupting = Some(input.parse()?);
        }
        spec = Some(parse_spec(input)?);
        while input.peek(Token![|]) {
            input.parse::<Token![|]>()?;
            more.push(parse_spec(input)?);
        }
    }
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
        scope: None,
    })
}

fn parse_spec(input: ParseStream) -> syn::Result<Spec> {
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

/// One triple of a complex gateway's activation rule, as written:
/// `activate(count = 2, require = [cfo], when = |d| d.urgent)`.
pub struct ActivationAst {
    /// The `activate` keyword, where errors about the whole triple point.
    pub keyword: Ident,
    pub count: Option<LitInt>,
    pub require: Vec<Ident>,
    pub when: Option<Expr>,
}

/// Parse the arguments of one `activate(...)`: `key = value` pairs, each key at most
/// once, in any order.
pub fn activation(spec: &Spec) -> syn::Result<ActivationAst> {
    let mut triple = ActivationAst {
        keyword: spec.name.clone(),
        count: None,
        require: Vec::new(),
        when: None,
    };
    let Some(args) = &spec.args else {
        return Err(syn::Error::new_spanned(
            &spec.name,
            "`activate` needs its arguments: `activate(count = N)`, optionally with `require = [a, b]` and `when = |data| ...`",
        ));
    };
    let parser = |input: ParseStream| -> syn::Result<()> {
        let mut seen: Vec<Ident> = Vec::new();
        while !input.is_empty() {
            let key: Ident = input.parse()?;
            if !["count", "require", "when"].iter().any(|k| key == k) {
                // A typo, or an abbreviation (`cnt`, `req`): its letters in order.
                let name = key.to_string();
                let abbreviates = |k: &&str| {
                    let mut letters = k.chars();
                    name.len() > 1 && name.chars().all(|c| letters.any(|l| l == c))
                };
                let hint = crate::suggest::nearest(&name, ["count", "require", "when"])
                    .or_else(|| ["count", "require", "when"].into_iter().find(abbreviates))
                    .map(|s| format!("did you mean `{s}`? "))
                    .unwrap_or_default();
                return Err(syn::Error::new_spanned(
                    &key,
                    format!("unknown activation argument `{key}`; {hint}an activation takes `count = N`, and optionally `require = [a, b]` and `when = |data| ...`"),
                ));
            }
            if seen.contains(&key) {
                return Err(syn::Error::new_spanned(
                    &key,
                    format!("`{key}` is given twice in this activation; keep one — for an alternative rule, add `| activate(...)`"),
                ));
            }
            input.parse::<Token![=]>().map_err(|e| {
                syn::Error::new(
                    e.span(),
                    format!(
                        "expected `=` after `{key}`: activation arguments are written `key = value`, here `{key} = {}`",
                        match key.to_string().as_str() {
                            COUNT => "2",
                            REQUIRE => "[a, b]",
                            _ => "|data| ...",
                        }
                    ),
                )
            })?;
            if key == COUNT {
                let count = input.parse::<LitInt>().map_err(|e| {
                    syn::Error::new(
                        e.span(),
                        "`count` takes a whole number: how many incoming flows must have delivered a token, e.g. `count = 2`",
                    )
                })?;
                triple.count = Some(count);
            } else if key == REQUIRE {
                if !input.peek(syn::token::Bracket) {
                    return Err(input.error(
                        "`require` takes a list of incoming flows, each named by its source node: `require = [cfo]` or `require = [cfo, legal]`",
                    ));
                }
                let content;
                syn::bracketed!(content in input);
                triple.require = content
                    .parse_terminated(Ident::parse, Token![,])?
                    .into_iter()
                    .collect();
            } else {
                triple.when = Some(input.parse()?);
            }
            seen.push(key);
            if !input.is_empty() {
                input.parse::<Token![,]>()?;
            }
        }
        Ok(())
    };
    spec.parse_args(args, parser)?;
    if triple.count.is_none() {
        let example = if triple.require.is_empty() {
            "`activate(count = 2)`".to_string()
        } else {
            let required: Vec<String> = triple.require.iter().map(Ident::to_string).collect();
            format!(
                "`activate(count = {}, require = [{}])` — the required flows count among the arrivals",
                required.len(),
                required.join(", ")
            )
        };
        return Err(syn::Error::new_spanned(
            &spec.name,
            format!("this activation has no `count`: say how many incoming flows must have delivered a token, e.g. {example}"),
        ));
    }
    Ok(triple)
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

/// An event definition, as written after a node's `:` — `message("name", key = ...)`,
/// `signal("name")`, `timer(...)`.
pub struct EventAst {
    /// `message`, `signal` or `timer`: where errors about the whole event point.
    pub keyword: Ident,
    pub trigger: EventTrigger,
    /// The message or signal name.
    pub name: Option<syn::LitStr>,
    /// `key = |data| ...`: the correlation key of a message.
    pub key: Option<(Ident, Expr)>,
    /// `apply = |data, payload: &P| ...`: how a caught payload changes the data.
    pub apply: Option<(Ident, Expr)>,
    /// `payload = |data| ...`: what a throw sends.
    pub payload: Option<(Ident, Expr)>,
    pub timer: Option<TimerAst>,
    /// `condition(|data| ...)`: the condition.
    pub condition: Option<Expr>,
    /// `on = [field, ...]`: the `on` keyword, the brackets' span, the fields.
    pub on: Option<(Ident, Span, Vec<Ident>)>,
    /// `error("CODE")` / `escalation("CODE")`: the code; `None` catches every code.
    pub code: Option<syn::LitStr>,
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum EventTrigger {
    Message,
    Signal,
    Timer,
    /// A link event: an off-page connector within one process or sub-process.
    Link,
    /// A conditional event over the data.
    Condition,
    /// A BPMN error (end events and boundaries).
    Error,
    /// A BPMN escalation (throws, end events and boundaries).
    Escalation,
}

/// `timer(DURATION)`, `timer(at = SYSTEM_TIME)`, `timer(every = DURATION, times = N)`.
pub enum TimerAst {
    After(Expr),
    At(Expr),
    Every { every: Expr, times: Option<Expr> },
}

/// Parse an event spec: `message("name", key = .., apply = .., payload = ..)`,
/// `signal("name", apply = .., payload = ..)` or a timer. Which arguments an element
/// may take is checked later (`check::events`), so the errors can name the element.
pub fn event(spec: &Spec) -> syn::Result<EventAst> {
    let trigger = match spec.name.to_string().as_str() {
        MESSAGE => EventTrigger::Message,
        SIGNAL => EventTrigger::Signal,
        TIMER => EventTrigger::Timer,
        LINK => EventTrigger::Link,
        CONDITION => EventTrigger::Condition,
        ERROR => EventTrigger::Error,
        ESCALATION => EventTrigger::Escalation,
        other => {
            return Err(syn::Error::new_spanned(
                &spec.name,
                format!("unknown event `{other}`; an event is `message(\"name\", key = |data| ...)`, `signal(\"name\")` or `timer(...)`"),
            ))
        }
    };
    let mut event = EventAst {
        keyword: spec.name.clone(),
        trigger,
        name: None,
        key: None,
        apply: None,
        payload: None,
        timer: None,
        condition: None,
        on: None,
        code: None,
    };
    // An error or escalation without arguments catches every code.
    if spec.args.is_none() && matches!(trigger, EventTrigger::Error | EventTrigger::Escalation) {
        return Ok(event);
    }
    let example = match trigger {
        EventTrigger::Message => "message(\"payment\", key = |data| data.id.clone())",
        EventTrigger::Signal => "signal(\"shipped\")",
        EventTrigger::Timer => "timer(Duration::from_secs(30))",
        EventTrigger::Link => "link(\"retry\")",
        EventTrigger::Condition => "condition(|data| data.total > 100, on = [total])",
        EventTrigger::Error => "error(\"CARD_DECLINED\")",
        EventTrigger::Escalation => "escalation(\"LATE\")",
    };
    let Some(args) = &spec.args else {
        return Err(syn::Error::new_spanned(
            &spec.name,
            format!("`{}` needs its arguments, e.g. `{example}`", spec.name),
        ));
    };
    // `key` is parsed on a signal too, so `check::events` can say why it does not belong.
    let (arguments, takes): (&[&str], _) = match trigger {
        EventTrigger::Message => (
            &["key", "apply", "payload"],
            "a message takes `key = |data| ...` (its correlation key), and `apply = |data, payload: &P| ...` on a catch or `payload = |data| ...` on a throw",
        ),
        EventTrigger::Link => (&[], "a link takes nothing but its name: `link(\"retry\")`"),
        _ => (
            &["apply", "payload"],
            "a signal takes `apply = |data, payload: &P| ...` on a catch or `payload = |data| ...` on a throw",
        ),
    };
    let parser = |input: ParseStream| -> syn::Result<()> {
        match trigger {
            EventTrigger::Timer => {
                event.timer = Some(parse_timer(input)?);
                return Ok(());
            }
            EventTrigger::Condition => return parse_condition(input, &mut event),
            EventTrigger::Error | EventTrigger::Escalation => {
                return parse_code(input, &mut event, example)
            }
            _ => {}
        }
        event.name = Some(input.parse().map_err(|e| {
            syn::Error::new(
                e.span(),
                format!(
                    "a {} begins with its name as a string literal: `{example}`",
                    spec.name
                ),
            )
        })?);
        while !input.is_empty() {
            input.parse::<Token![,]>()?;
            if input.is_empty() {
                break;
            }
            let key: Ident = input.parse()?;
            let slot = match key.to_string().as_str() {
                KEY => &mut event.key,
                APPLY => &mut event.apply,
                PAYLOAD => &mut event.payload,
                name => {
                    let hint = crate::suggest::nearest(name, arguments.iter().copied())
                        .map(|s| format!("did you mean `{s}`? "))
                        .unwrap_or_default();
                    return Err(syn::Error::new_spanned(
                        &key,
                        format!("unknown {} argument `{key}`; {hint}{takes}", spec.name),
                    ));
                }
            };
            if slot.is_some() {
                return Err(syn::Error::new_spanned(
                    &key,
                    format!("`{key}` is given twice in this {}; keep one", spec.name),
                ));
            }
            input.parse::<Token![=]>().map_err(|e| {
                syn::Error::new(
                    e.span(),
                    format!("expected `=` after `{key}`: event arguments are written `name = value`, e.g. `{key} = |data| ...`"),
                )
            })?;
            *slot = Some((key, input.parse()?));
        }
        Ok(())
    };
    spec.parse_args(args, parser)?;
    Ok(event)
}

/// `condition(|data| ..., on = [field, ...])`.
fn parse_condition(input: ParseStream, event: &mut EventAst) -> syn::Result<()> {
    const TAKES: &str = "a condition takes its closure, `condition(|data| data.total > 100)`, and optionally `on = [field, ...]`: the fields whose change re-evaluates it";
    // `condition(on = [..])` would otherwise parse as an assignment expression.
    if input.is_empty() || (input.peek(Ident) && input.peek2(Token![=]) && !input.peek2(Token![==]))
    {
        return Err(input.error(format!("a condition begins with its closure: {TAKES}")));
    }
    event.condition = Some(input.parse()?);
    while !input.is_empty() {
        input.parse::<Token![,]>()?;
        if input.is_empty() {
            break;
        }
        let key: Ident = input.parse()?;
        if key != ON {
            let hint = crate::suggest::nearest(&key.to_string(), ["on"])
                .map(|s| format!("did you mean `{s}`? "))
                .unwrap_or_default();
            return Err(syn::Error::new_spanned(
                &key,
                format!("unknown condition argument `{key}`; {hint}{TAKES}"),
            ));
        }
        if event.on.is_some() {
            return Err(syn::Error::new_spanned(
                &key,
                "`on` is given twice in this condition; keep one",
            ));
        }
        let list =
            "`on` takes a list of the data's fields, `on = [total]` or `on = [total, items]`";
        input
            .parse::<Token![=]>()
            .map_err(|e| syn::Error::new(e.span(), format!("expected `=` after `on`: {list}")))?;
        if !input.peek(syn::token::Bracket) {
            return Err(input.error(list));
        }
        let content;
        let brackets = syn::bracketed!(content in input);
        let fields: Vec<Ident> = content
            .parse_terminated(Ident::parse, Token![,])?
            .into_iter()
            .collect();
        event.on = Some((key, brackets.span.join(), fields));
    }
    Ok(())
}

/// `error("CODE", apply = ...)`, `escalation("CODE")`: an optional code, then `apply`.
fn parse_code(input: ParseStream, event: &mut EventAst, example: &str) -> syn::Result<()> {
    if input.peek(syn::LitStr) {
        event.code = Some(input.parse()?);
        if !input.is_empty() {
            input.parse::<Token![,]>()?;
        }
    }
    while !input.is_empty() {
        let key: Ident = input.parse()?;
        if key != APPLY {
            return Err(syn::Error::new_spanned(
                &key,
                format!("unknown argument `{key}`; this takes its code as a string literal and, on a boundary, `apply = |data, caught: &P| ...` — e.g. `{example}`"),
            ));
        }
        input.parse::<Token![=]>()?;
        event.apply = Some((key, input.parse()?));
        if !input.is_empty() {
            input.parse::<Token![,]>()?;
        }
    }
    Ok(())
}

/// The arguments of `timer(...)`: one bare duration, or named `at`, `every`, `times`.
fn parse_timer(input: ParseStream) -> syn::Result<TimerAst> {
    const FORMS: &str = "a timer is `timer(DURATION)`, `timer(at = SYSTEM_TIME)` or `timer(every = DURATION, times = N)`";
    if input.is_empty() {
        return Err(input.error(format!("a timer needs its time: {FORMS}")));
    }
    let named = input.peek(Ident) && input.peek2(Token![=]) && !input.peek2(Token![==]);
    if !named {
        let after = input.parse()?;
        if input.peek(Token![,]) {
            input.parse::<Token![,]>()?;
        }
        if input.is_empty() {
            return Ok(TimerAst::After(after));
        }
        let rest: TokenStream = input.parse()?;
        return Err(syn::Error::new_spanned(
            rest,
            "a duration timer takes one expression, `timer(Duration::from_secs(30))`; a point in time or a repeat is named: `timer(at = SYSTEM_TIME)`, `timer(every = DURATION, times = N)`",
        ));
    }
    // Each argument with its name, for errors about it.
    let [mut at, mut every, mut times]: [Option<(Ident, Expr)>; 3] = Default::default();
    while !input.is_empty() {
        let key: Ident = input.parse()?;
        let slot = match key.to_string().as_str() {
            AT => &mut at,
            EVERY => &mut every,
            TIMES => &mut times,
            name => {
                let hint = crate::suggest::nearest(name, ["at", "every", "times"])
                    .map(|s| format!("did you mean `{s}`? "))
                    .unwrap_or_default();
                return Err(syn::Error::new_spanned(
                    &key,
                    format!("unknown timer argument `{key}`; {hint}{FORMS}"),
                ));
            }
        };
        if slot.is_some() {
            return Err(syn::Error::new_spanned(
                &key,
                format!("`{key}` is given twice in this timer; keep one"),
            ));
        }
        input.parse::<Token![=]>().map_err(|e| {
            syn::Error::new(
                e.span(),
                format!("expected `=` after `{key}`: timer arguments are written `name = value`; {FORMS}"),
            )
        })?;
        *slot = Some((key, input.parse()?));
        if !input.is_empty() {
            input.parse::<Token![,]>()?;
        }
    }
    match (at, every, times) {
        (Some((_, at)), None, None) => Ok(TimerAst::At(at)),
        (None, Some((_, every)), times) => Ok(TimerAst::Every {
            every,
            times: times.map(|(_, t)| t),
        }),
        (Some(_), Some((every, _)), _) => Err(syn::Error::new_spanned(
            every,
            "a timer fires either once at a point in time, `timer(at = SYSTEM_TIME)`, or repeatedly, `timer(every = DURATION, times = N)`; `at` and `every` do not mix — keep one",
        )),
        (at, None, Some((times, _))) => Err(syn::Error::new_spanned(
            times,
            format!(
                "`times` counts the firings of a repeating timer, so it goes with `every`: `timer(every = DURATION, times = N)`{}",
                if at.is_some() { " — a timer `at` a point in time fires once" } else { "" }
            ),
        )),
        (None, None, None) => Err(input.error(format!("a timer needs its time: {FORMS}"))),
    }
}
