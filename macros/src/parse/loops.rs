//! The loop and multi-instance markers, written as attributes on an activity:
//!
//! ```text
//! #[multi_instance(each = |o| o.lines.clone(), output = |o, i, label| ..., completion = |o, n| ...)]
//! #[multi_instance(sequential, count = |o| o.copies)]
//! #[standard_loop(while = |o, runs| !o.answered, max = 5)]
//! #[standard_loop(test_before, while = |o, runs| ...)]
//! #[item]        // a task inside a multi-instance sub-process that takes its item
//! ```
//!
//! Attributes, not a `: spec`, so that any activity takes them — a receive task
//! keeps its `: message(..)`, a sub-process its block — and a call activity will too.

use proc_macro2::Span;
use syn::parse::ParseStream;
use syn::{Attribute, Expr, Ident, LitInt, Token};

use crate::symbol::{MULTI_INSTANCE, STANDARD_LOOP};

/// A marker as written.
pub struct LoopAst {
    /// The attribute's name, where errors about the marker point.
    pub name: Ident,
    pub kind: LoopAstKind,
}

// Like the syntax trees in `parse/mod.rs`: these live briefly in one macro run.
#[allow(clippy::large_enum_variant)]
pub enum LoopAstKind {
    Multi(MultiAst),
    Standard(StandardAst),
}

/// `#[multi_instance(..)]`.
#[derive(Default)]
pub struct MultiAst {
    pub sequential: Option<Ident>,
    pub each: Option<(Ident, Expr)>,
    pub count: Option<(Ident, Expr)>,
    pub completion: Option<(Ident, Expr)>,
    pub output: Option<(Ident, Expr)>,
}

/// `#[standard_loop(..)]`.
#[derive(Default)]
pub struct StandardAst {
    pub test_before: Option<Ident>,
    pub condition: Option<(Span, Expr)>,
    pub max: Option<(Ident, LitInt)>,
}

/// Parse a `#[multi_instance(..)]` or `#[standard_loop(..)]` attribute; `None` for
/// any other attribute.
pub fn marker(attr: &Attribute) -> Option<syn::Result<LoopAst>> {
    let name = attr.path().get_ident()?.clone();
    let multi = name == MULTI_INSTANCE;
    if !multi && name != STANDARD_LOOP {
        return None;
    }
    let list = match &attr.meta {
        syn::Meta::List(list) => list,
        _ => {
            let example = if multi {
                "`#[multi_instance(each = |data| data.items.clone())]`"
            } else {
                "`#[standard_loop(while = |data, runs| !data.done, max = 10)]`"
            };
            return Some(Err(syn::Error::new_spanned(
                attr,
                format!("`{name}` takes its arguments in parentheses: {example}"),
            )));
        }
    };
    let kind = if multi {
        list.parse_args_with(|input: ParseStream| parse_multi(input).map(LoopAstKind::Multi))
    } else {
        list.parse_args_with(|input: ParseStream| parse_standard(input).map(LoopAstKind::Standard))
    };
    Some(kind.map(|kind| LoopAst { name, kind }))
}

const MULTI_KEYS: &str = "`each = |data| collection` or `count = |data| n`, and optionally `sequential`, `completion = |data, counts| bool`, `output = |data, index, output| ...`";
const LOOP_KEYS: &str = "`while = |data, runs| bool`, and optionally `test_before` and `max = N`";

fn twice(key: &Ident) -> syn::Error {
    syn::Error::new_spanned(key, format!("`{key}` is given twice; keep one"))
}

fn parse_multi(input: ParseStream) -> syn::Result<MultiAst> {
    let mut ast = MultiAst::default();
    while !input.is_empty() {
        let key: Ident = input.parse()?;
        if key == "sequential" || key == "parallel" {
            if key == "sequential" {
                if ast.sequential.is_some() {
                    return Err(twice(&key));
                }
                ast.sequential = Some(key);
            }
        } else {
            let slot = match key.to_string().as_str() {
                "each" => &mut ast.each,
                "count" => &mut ast.count,
                "completion" => &mut ast.completion,
                "output" => &mut ast.output,
                other => {
                    let keys = ["each", "count", "completion", "output", "sequential"];
                    let hint = crate::suggest::hint(other, keys);
                    return Err(syn::Error::new_spanned(
                        &key,
                        format!(
                            "unknown multi-instance argument `{key}`; {hint}it takes {MULTI_KEYS}"
                        ),
                    ));
                }
            };
            if slot.is_some() {
                return Err(twice(&key));
            }
            input.parse::<Token![=]>().map_err(|e| {
                syn::Error::new(
                    e.span(),
                    format!("expected `=` after `{key}`: `{key} = |data| ...`"),
                )
            })?;
            let value: Expr = input.parse()?;
            *slot = Some((key, value));
        }
        if !input.is_empty() {
            input.parse::<Token![,]>()?;
        }
    }
    Ok(ast)
}

fn parse_standard(input: ParseStream) -> syn::Result<StandardAst> {
    let mut ast = StandardAst::default();
    while !input.is_empty() {
        if input.peek(Token![while]) {
            let keyword: Token![while] = input.parse()?;
            if ast.condition.is_some() {
                return Err(syn::Error::new(
                    keyword.span,
                    "`while` is given twice; keep one",
                ));
            }
            input.parse::<Token![=]>().map_err(|e| {
                syn::Error::new(
                    e.span(),
                    "expected `=` after `while`: `while = |data, runs| ...`",
                )
            })?;
            ast.condition = Some((keyword.span, input.parse()?));
        } else {
            let key: Ident = input.parse()?;
            match key.to_string().as_str() {
                "test_before" => {
                    if ast.test_before.is_some() {
                        return Err(twice(&key));
                    }
                    ast.test_before = Some(key);
                }
                "max" => {
                    if ast.max.is_some() {
                        return Err(twice(&key));
                    }
                    input.parse::<Token![=]>()?;
                    let max: LitInt = input.parse().map_err(|e| {
                        syn::Error::new(e.span(), "`max` is a whole number of runs: `max = 5`")
                    })?;
                    ast.max = Some((key, max));
                }
                other => {
                    let hint = crate::suggest::hint(other, ["test_before", "max"]);
                    return Err(syn::Error::new_spanned(
                        &key,
                        format!("unknown loop argument `{key}`; {hint}`standard_loop` takes {LOOP_KEYS}"),
                    ));
                }
            }
        }
        if !input.is_empty() {
            input.parse::<Token![,]>()?;
        }
    }
    Ok(ast)
}
