//! `migrate!(ORDER_V1 => ORDER_V2 { approve => review, data = upgrade })`: a plan
//! that moves running instances of one version of a process to another, checked
//! when it compiles (README, "Migration plans"; ARCHITECTURE.md, "Migration plans").
//!
//! Both models are read from the hidden macros `process!` emits beside each static
//! (`emit/model_macro.rs`), by callbacks:
//!
//! ```text
//! migrate!(A => B { plan })
//!   => a::__thresh_model_A! { [::thresh::__migrate_next] (b::__thresh_model_B) {A} {B} {plan} }
//!   => ::thresh::__migrate_next! { (b::__thresh_model_B) {A} {B} {plan} {model A} }
//!   => b::__thresh_model_B! { [::thresh::__migrate_check] {A} {B} {plan} {model A} }
//!   => ::thresh::__migrate_check! { {A} {B} {plan} {model A} {model B} }
//! ```
//!
//! The last step checks the plan: every place a token of A can rest maps to a place
//! of B where it rests the same way (explicitly, or implicitly by the same id), in
//! the scope its own scope maps to; and it emits the `thresh::Migration` value, whose
//! data types rustc checks (the same type, or the conversion `data = f` gives).

use std::collections::HashMap;

use proc_macro2::{Span, TokenStream, TokenTree};
use quote::{format_ident, quote, quote_spanned};
use syn::parse::{Parse, ParseStream};
use syn::spanned::Spanned;
use syn::{braced, bracketed, parenthesized, Expr, Ident, LitInt, LitStr, Path, Token};

use crate::suggest;

/// `A => B { entries }`, as the user writes it.
pub struct Plan {
    pub from: Path,
    pub to: Path,
    pub body: TokenStream,
}

impl Parse for Plan {
    fn parse(input: ParseStream) -> syn::Result<Self> {
        let from = input.parse()?;
        input.parse::<Token![=>]>().map_err(|e| {
            syn::Error::new(
                e.span(),
                "expected `=>` between the two versions: `migrate!(ORDER_V1 => ORDER_V2 { .. })`",
            )
        })?;
        let to = input.parse()?;
        if !input.peek(syn::token::Brace) {
            return Err(input.error(
                "expected the plan in curly braces: `{ approve => review }` (or `{}` when every element keeps its id)",
            ));
        }
        let content;
        braced!(content in input);
        let body = content.parse()?;
        if !input.is_empty() {
            return Err(input.error("unexpected tokens after the plan's braces"));
        }
        Ok(Plan { from, to, body })
    }
}

/// The path of the model macro of the static at `path`: its last segment
/// prefixed `__thresh_model_`.
fn model_path(path: &Path) -> Path {
    let mut path = path.clone();
    if let Some(last) = path.segments.last_mut() {
        last.ident = format_ident!("__thresh_model_{}", last.ident, span = last.ident.span());
    }
    path
}

/// `migrate!`: the first callback, to the model of the version it moves from.
pub fn expand(plan: Plan) -> TokenStream {
    let Plan { from, to, body } = plan;
    let (from_model, to_model) = (model_path(&from), model_path(&to));
    quote! {
        #from_model! { [::thresh::__migrate_next] (#to_model) {#from} {#to} {#body} }
    }
}

/// `__migrate_next!`: the second callback, to the model of the version it moves to.
pub fn next(input: TokenStream) -> syn::Result<TokenStream> {
    let mut tokens = input.into_iter();
    let Some(TokenTree::Group(to_model)) = tokens.next() else {
        return Err(syn::Error::new(
            Span::call_site(),
            "internal: no model path",
        ));
    };
    let to_model = to_model.stream();
    let rest: TokenStream = tokens.collect();
    Ok(quote!(#to_model! { [::thresh::__migrate_check] #rest }))
}

/// A model as its macro hands it over.
struct Model {
    name: LitStr,
    version: u32,
    /// `None`: the process has errors of its own.
    nodes: Option<Vec<ModelNode>>,
}

struct ModelNode {
    id: Ident,
    what: String,
    /// Empty: no token rests there.
    rest: String,
    scope: Option<Ident>,
}

impl Parse for Model {
    fn parse(content: ParseStream) -> syn::Result<Self> {
        let _: Ident = content.parse()?;
        content.parse::<Token![=]>()?;
        let name: LitStr = content.parse()?;
        content.parse::<Token![,]>()?;
        let _: Ident = content.parse()?;
        content.parse::<Token![=]>()?;
        let version: LitInt = content.parse()?;
        content.parse::<Token![,]>()?;
        let key: Ident = content.parse()?;
        if key == "broken" {
            return Ok(Model {
                name,
                version: version.base10_parse()?,
                nodes: None,
            });
        }
        content.parse::<Token![=]>()?;
        let list;
        bracketed!(list in content);
        let mut nodes = Vec::new();
        while !list.is_empty() {
            let id: Ident = list.parse()?;
            list.parse::<Token![:]>()?;
            let what: LitStr = list.parse()?;
            list.parse::<Token![/]>()?;
            let rest: LitStr = list.parse()?;
            let _: Token![in] = list.parse()?;
            let scope_tokens;
            parenthesized!(scope_tokens in list);
            let scope: Option<Ident> = scope_tokens.parse()?;
            list.parse::<Token![,]>()?;
            nodes.push(ModelNode {
                id,
                what: what.value(),
                rest: rest.value(),
                scope,
            });
        }
        Ok(Model {
            name,
            version: version.base10_parse()?,
            nodes: Some(nodes),
        })
    }
}

/// One line of the plan.
enum Entry {
    /// `approve => review`
    Map { from: Ident, to: Ident },
    /// `data = upgrade`: the conversion of the data, `fn(D1) -> D2`.
    Data { key: Ident, convert: Box<Expr> },
}

impl Parse for Entry {
    fn parse(input: ParseStream) -> syn::Result<Self> {
        let from: Ident = input.parse()?;
        if input.peek(Token![=>]) {
            input.parse::<Token![=>]>()?;
            let to = input.parse().map_err(|e| {
                syn::Error::new(
                    e.span(),
                    "expected the element of the new version it maps to: `approve => review`",
                )
            })?;
            return Ok(Entry::Map { from, to });
        }
        if from == "data" && input.peek(Token![=]) {
            input.parse::<Token![=]>()?;
            let convert = Box::new(input.parse()?);
            return Ok(Entry::Data { key: from, convert });
        }
        Err(syn::Error::new(
            from.span(),
            format!(
                "expected `{from} => element` (an element of the old version and the one of the new version it maps to) or `data = conversion`"
            ),
        ))
    }
}

fn entries(body: TokenStream) -> syn::Result<Vec<Entry>> {
    let parse = |input: ParseStream| {
        let list = input.parse_terminated(Entry::parse, Token![,])?;
        Ok(list.into_iter().collect::<Vec<_>>())
    };
    syn::parse::Parser::parse2(parse, body)
}

/// `__migrate_check!`: the plan and both models; checks, then the value.
pub fn check(input: TokenStream) -> TokenStream {
    match check_inner(input) {
        Ok(tokens) => tokens,
        Err(error) => error.to_compile_error(),
    }
}

fn group(tokens: &mut impl Iterator<Item = TokenTree>) -> syn::Result<TokenStream> {
    match tokens.next() {
        Some(TokenTree::Group(g)) => Ok(g.stream()),
        _ => Err(syn::Error::new(
            Span::call_site(),
            "internal: a part is missing",
        )),
    }
}

fn check_inner(input: TokenStream) -> syn::Result<TokenStream> {
    let mut tokens = input.into_iter();
    let from: Path = syn::parse2(group(&mut tokens)?)?;
    let to: Path = syn::parse2(group(&mut tokens)?)?;
    let body = group(&mut tokens)?;
    let old: Model = syn::parse2(group(&mut tokens)?)?;
    let new: Model = syn::parse2(group(&mut tokens)?)?;
    let plan_span = from.span();
    let (Some(old_nodes), Some(new_nodes)) = (&old.nodes, &new.nodes) else {
        // A process with errors: they speak for themselves.
        return Ok(quote!(::thresh::Migration::broken(&#from, &#to)));
    };
    let mut errors: Vec<syn::Error> = Vec::new();
    let entries = entries(body)?;
    let (old_name, new_name) = (old.name.value(), new.name.value());
    let old_label = path_label(&from);
    let new_label = path_label(&to);
    if old_name != new_name {
        errors.push(syn::Error::new(
            to.span(),
            format!(
                "`{new_label}` is a version of `{new_name}`, not of `{old_name}`: a plan moves instances between versions of one process"
            ),
        ));
    } else if old.version == new.version {
        errors.push(syn::Error::new(
            to.span(),
            format!(
                "`{old_label}` and `{new_label}` are both version {} of `{old_name}`: a plan moves instances from one version to another",
                old.version
            ),
        ));
    }

    let old_by_id: HashMap<String, &ModelNode> =
        old_nodes.iter().map(|n| (n.id.to_string(), n)).collect();
    let new_by_id: HashMap<String, &ModelNode> =
        new_nodes.iter().map(|n| (n.id.to_string(), n)).collect();
    let old_ids: Vec<String> = old_nodes.iter().map(|n| n.id.to_string()).collect();

    // The explicit mapping, each side checked.
    let mut explicit: HashMap<String, &Ident> = HashMap::new();
    let mut convert = None;
    for entry in &entries {
        match entry {
            Entry::Data { key, convert: f } => {
                if convert.is_some() {
                    errors.push(syn::Error::new(
                        key.span(),
                        "the data's conversion is given twice: keep one `data = ..`",
                    ));
                }
                convert = Some(f);
            }
            Entry::Map { from: a, to: b } => {
                let a_name = a.to_string();
                let Some(a_node) = old_by_id.get(&a_name) else {
                    errors.push(syn::Error::new(
                        a.span(),
                        format!(
                            "`{old_label}` has no element `{a}`: {}the left side of `=>` names an element of the old version",
                            suggest::hint(&a_name, old_ids.iter().map(String::as_str))
                        ),
                    ));
                    continue;
                };
                if a_node.rest.is_empty() {
                    errors.push(syn::Error::new(
                        a.span(),
                        format!(
                            "no token rests at `{a}` ({} {}): map only where a token of `{old_label}` can wait — a task, a user or receive task, a catch, an event-based gateway, a join, a sub-process, a call activity",
                            article(&a_node.what),
                            a_node.what
                        ),
                    ));
                    continue;
                }
                if explicit.insert(a_name.clone(), b).is_some() {
                    errors.push(syn::Error::new(
                        a.span(),
                        format!("`{a}` is mapped twice: keep one `{a} => ..`"),
                    ));
                }
                let b_name = b.to_string();
                match new_by_id.get(&b_name) {
                    None => errors.push(syn::Error::new(
                        b.span(),
                        format!(
                            "`{new_label}` has no element `{b}`: {}the right side of `=>` names an element of the new version",
                            suggest::hint(
                                &b_name,
                                same_rest(new_nodes, &a_node.rest)
                                    .collect::<Vec<_>>()
                                    .iter()
                                    .map(String::as_str)
                            )
                        ),
                    )),
                    Some(b_node) if b_node.rest != a_node.rest => {
                        errors.push(syn::Error::new(
                            b.span(),
                            format!(
                                "a token at `{a}` rests at {} {}, but `{b}` of `{new_label}` is {} {}{}: map `{a}` to {} {} of `{new_label}`{}",
                                article(&a_node.rest),
                                a_node.rest,
                                article(&b_node.what),
                                b_node.what,
                                rests_there(b_node),
                                article(&a_node.rest),
                                a_node.rest,
                                candidates(&b_name, new_nodes, &a_node.rest)
                            ),
                        ))
                    }
                    Some(_) => {}
                }
            }
        }
    }

    // Every place a token rests: its image, explicit or by the same id.
    let mut image: HashMap<String, String> = HashMap::new();
    for node in old_nodes.iter().filter(|n| !n.rest.is_empty()) {
        let id = node.id.to_string();
        if let Some(b) = explicit.get(&id) {
            image.insert(id, b.to_string());
            continue;
        }
        match new_by_id.get(&id) {
            Some(same) if same.rest == node.rest => {
                image.insert(id.clone(), id);
            }
            found => {
                let why = match found {
                    Some(other) => format!(
                        "its `{id}` is {} {}{}",
                        article(&other.what),
                        other.what,
                        rests_there(other)
                    ),
                    None => format!("it has no element `{id}`"),
                };
                errors.push(syn::Error::new(
                    node.id.span(),
                    format!(
                        "a token at `{id}` ({} {} of `{old_label}`) has no place in `{new_label}` — {why}: map it in the plan, `migrate!({old_label} => {new_label} {{ {id} => .. }})`, to {} {} of `{new_label}`{}",
                        article(&node.rest),
                        node.rest,
                        article(&node.rest),
                        node.rest,
                        candidates(&id, new_nodes, &node.rest)
                    ),
                ));
            }
        }
    }

    // Scopes: a place inside a sub-process maps into the image of that sub-process.
    for node in old_nodes.iter().filter(|n| !n.rest.is_empty()) {
        let id = node.id.to_string();
        let Some(target) = image.get(&id) else {
            continue;
        };
        let Some(target_node) = new_by_id.get(target) else {
            continue;
        };
        let expected = node
            .scope
            .as_ref()
            .map(|s| image.get(&s.to_string()).cloned());
        let expected = match expected {
            None => None,
            Some(Some(scope)) => Some(scope),
            // Its scope has no image: reported there.
            Some(None) => continue,
        };
        let actual = target_node.scope.as_ref().map(ToString::to_string);
        if expected != actual {
            let span = explicit.get(&id).map_or(node.id.span(), |b| b.span());
            let inside = |s: &Option<String>| match s {
                Some(s) => format!("inside `{s}`"),
                None => "at the top level".to_string(),
            };
            errors.push(syn::Error::new(
                span,
                format!(
                    "`{id}` of `{old_label}` maps to `{target}`, which is {} of `{new_label}`; a token at `{id}` would be {} there: map it to an element {}",
                    inside(&actual),
                    inside(&expected),
                    inside(&expected)
                ),
            ));
        }
    }

    if let Some(error) = errors.into_iter().reduce(|mut all, e| {
        all.combine(e);
        all
    }) {
        // In a block, so several errors stand where an expression is expected,
        // beside a value of the right type that raises nothing more.
        let errors = error.to_compile_error();
        return Ok(quote!({ #errors ::thresh::Migration::broken(&#from, &#to) }));
    }

    let mut pairs: Vec<(String, String)> = image.into_iter().collect();
    pairs.sort();
    let pairs = pairs.iter().map(|(a, b)| quote!((#a, #b)));
    let value = match convert {
        Some(convert) => quote_spanned! {convert.span()=>
            ::thresh::Migration::converting(&#from, &#to, &[#(#pairs),*], #convert)
        },
        None => quote_spanned! {plan_span=>
            ::thresh::Migration::same(&#from, &#to, &[#(#pairs),*])
        },
    };
    Ok(value)
}

/// The static as the plan names it, for messages.
fn path_label(path: &Path) -> String {
    path.segments
        .iter()
        .map(|s| s.ident.to_string())
        .collect::<Vec<_>>()
        .join("::")
}

fn article(what: &str) -> &'static str {
    match what.starts_with(['a', 'e', 'i', 'o']) {
        true => "an",
        false => "a",
    }
}

/// ", where a token rests at ..." or ", where no token rests".
fn rests_there(node: &ModelNode) -> String {
    match node.rest.as_str() {
        "" => ", where no token rests".to_string(),
        rest if rest == node.what => String::new(),
        rest => format!(" (a token rests there at {} {rest})", article(rest)),
    }
}

/// The ids of the nodes where a token rests as `rest`.
fn same_rest<'a>(nodes: &'a [ModelNode], rest: &'a str) -> impl Iterator<Item = String> + 'a {
    nodes
        .iter()
        .filter(move |n| n.rest == rest)
        .map(|n| n.id.to_string())
}

/// ": did you mean `x`?" for the place of that kind nearest `name`, else the list
/// of such places, else that there is none.
fn candidates(name: &str, nodes: &[ModelNode], rest: &str) -> String {
    let ids: Vec<String> = same_rest(nodes, rest).collect();
    if let Some(near) = suggest::nearest(name, ids.iter().map(String::as_str)) {
        return format!(" — {}", suggest::did_you_mean(near));
    }
    match ids.len() {
        0 => " (it has none: a token there cannot move to it)".to_string(),
        _ => format!(
            " ({})",
            ids.iter()
                .map(|i| format!("`{i}`"))
                .collect::<Vec<_>>()
                .join(", ")
        ),
    }
}
