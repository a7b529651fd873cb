//! A user task's assignment after its `:` — `assignee(..)`, `groups(..)`, `due(..)`,
//! `priority(..)` — parsed: each a constant or a closure over the instance's data,
//! evaluated when the user task opens. Where they may stand and their values are
//! checked in `check/assign.rs`.

use proc_macro2::Span;
use syn::parse::ParseStream;
use syn::punctuated::Punctuated;
use syn::{Expr, Token};

use super::policy::{long_duration, DurationAst};
use super::Spec;
use crate::symbol::{ASSIGNEE, DUE, GROUPS, PRIORITY};

/// The names of the assignment's parts.
pub const NAMES: &[&str] = &[ASSIGNEE, GROUPS, DUE, PRIORITY];

/// A value as written: a constant, or a closure reading the data.
// Spans with locations make syn's trees larger; these live briefly in one macro
// run (as `parse::Guard`).
#[allow(clippy::large_enum_variant)]
pub enum Value<T> {
    Constant(T),
    FromData(Expr),
}

/// What a user task's `:` list says of who works it and when.
pub struct AssignAst {
    /// The first of the parts, where an error about the whole points.
    pub at: Span,
    /// `assignee("alice")`, `assignee(|e| e.manager.clone())`.
    pub assignee: Option<Value<Expr>>,
    /// `groups("finance", "audit")`, `groups(|e| e.groups.clone())`.
    pub groups: Option<Value<Vec<Expr>>>,
    /// `due(2d)`, `due(|e| e.deadline)`.
    pub due: Option<Value<DurationAst>>,
    /// `priority(80)`, `priority(|e| if e.amount > 1000 { 80 } else { 50 })`.
    pub priority: Option<Value<Expr>>,
}

/// Whether a spec is a part of a user task's assignment.
pub fn is_assignment(spec: &Spec) -> bool {
    NAMES.iter().any(|n| spec.name == n)
}

/// The assignment's specs of an element, parsed; the errors are returned beside
/// what parsed.
pub fn parse(specs: &[Spec]) -> (Option<AssignAst>, Vec<syn::Error>) {
    let Some(first) = specs.first() else {
        return (None, Vec::new());
    };
    let mut assign = AssignAst {
        at: first.name.span(),
        assignee: None,
        groups: None,
        due: None,
        priority: None,
    };
    let mut errors = Vec::new();
    for spec in specs {
        let name = spec.name.to_string();
        let twice = match name.as_str() {
            ASSIGNEE => assign.assignee.is_some(),
            GROUPS => assign.groups.is_some(),
            DUE => assign.due.is_some(),
            _ => assign.priority.is_some(),
        };
        if twice {
            errors.push(syn::Error::new(
                spec.name.span(),
                format!("`{name}` is given twice on this user task; keep one"),
            ));
            continue;
        }
        match part(spec, &name) {
            Ok(Part::Assignee(v)) => assign.assignee = Some(v),
            Ok(Part::Groups(v)) => assign.groups = Some(v),
            Ok(Part::Due(v)) => assign.due = Some(v),
            Ok(Part::Priority(v)) => assign.priority = Some(v),
            Err(error) => errors.push(error),
        }
    }
    (Some(assign), errors)
}

enum Part {
    Assignee(Value<Expr>),
    Groups(Value<Vec<Expr>>),
    Due(Value<DurationAst>),
    Priority(Value<Expr>),
}

/// What each part takes, for the messages.
fn form(name: &str) -> &'static str {
    match name {
        ASSIGNEE => "the user who works it, `assignee(\"alice\")`, or read off the data, `assignee(|e| e.manager.clone())`",
        GROUPS => "the groups whose members may claim it, `groups(\"finance\", \"audit\")`, or read off the data, `groups(|e| e.approvers.clone())`",
        DUE => "how long after it opens it is due, `due(2d)` (units `min`, `h`, `d`), or read off the data, `due(|e| e.deadline)` (a `Duration` from now or a `SystemTime`)",
        _ => "a whole number, higher first, `priority(80)`, or read off the data, `priority(|e| if e.amount > 1000 { 80 } else { 50 })`",
    }
}

fn part(spec: &Spec, name: &str) -> syn::Result<Part> {
    let args = match &spec.args {
        Some(args) if !args.is_empty() => args,
        Some(_) => {
            return Err(syn::Error::new(
                spec.close,
                format!("`{name}()` is empty: give {}", form(name)),
            ))
        }
        None => {
            return Err(syn::Error::new(
                spec.name.span(),
                format!("`{name}` needs {}", form(name)),
            ))
        }
    };
    spec.parse_args(args, |input: ParseStream| {
        if input.peek(Token![|]) || input.peek(Token![move]) {
            let closure: Expr = input.parse()?;
            return Ok(match name {
                ASSIGNEE => Part::Assignee(Value::FromData(closure)),
                GROUPS => Part::Groups(Value::FromData(closure)),
                DUE => Part::Due(Value::FromData(closure)),
                _ => Part::Priority(Value::FromData(closure)),
            });
        }
        Ok(match name {
            ASSIGNEE => Part::Assignee(Value::Constant(input.parse()?)),
            GROUPS => {
                let groups = Punctuated::<Expr, Token![,]>::parse_terminated(input)?;
                Part::Groups(Value::Constant(groups.into_iter().collect()))
            }
            DUE => Part::Due(Value::Constant(long_duration(input)?)),
            _ => {
                let lit: syn::LitInt = input.parse().map_err(|e| {
                    syn::Error::new(e.span(), format!("`priority` takes {}", form(PRIORITY)))
                })?;
                lit.base10_parse::<i32>().map_err(|_| {
                    syn::Error::new(
                        lit.span(),
                        format!("`{lit}` is no priority: {}", form(PRIORITY)),
                    )
                })?;
                Part::Priority(Value::Constant(Expr::Lit(syn::ExprLit {
                    attrs: Vec::new(),
                    lit: syn::Lit::Int(lit),
                })))
            }
        })
    })
}
