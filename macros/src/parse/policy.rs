//! A task's retry policy and timeout after its `:` — `retry(5, backoff = 1s..5min,
//! multiplier = 2, jitter = 0.1)`, `timeout(30s)` — parsed; their values are checked
//! in `check/policy.rs`. Durations are literals with a unit (`500ms`, `30s`, `5min`,
//! `1h`), so a check can read them.

use proc_macro2::Span;
use syn::parse::ParseStream;
use syn::{Ident, Lit, Token};

use super::args::NamedArgs;
use super::Spec;

/// A duration as written: milliseconds, and where.
#[derive(Clone, Copy)]
pub struct DurationAst {
    pub millis: u64,
    pub span: Span,
}

/// `retry(...)` as written.
pub struct RetryAst {
    pub attempts: u32,
    pub attempts_span: Span,
    pub backoff: Option<(DurationAst, DurationAst)>,
    pub multiplier: Option<(f64, Span)>,
    pub jitter: Option<(f64, Span)>,
}

const RETRY_FORM: &str = "`retry(5)` tries up to five times in all; the waits between are named, `retry(5, backoff = 1s..5min, multiplier = 2, jitter = 0.1)`";

/// `retry(N, key = value, ...)`.
pub fn retry(spec: &Spec) -> syn::Result<RetryAst> {
    let empty = || {
        syn::Error::new(
            spec.close,
            format!("an empty retry policy says nothing: give the attempts in all, the first included — {RETRY_FORM}"),
        )
    };
    let Some(args) = &spec.args else {
        return Err(syn::Error::new(
            spec.name.span(),
            format!("`retry` needs its attempts: {RETRY_FORM}"),
        ));
    };
    if args.is_empty() {
        return Err(empty());
    }
    spec.parse_args(args, |input: ParseStream| {
        let count: syn::LitInt = input.parse().map_err(|e| {
            syn::Error::new(
                e.span(),
                format!("`retry` first takes the attempts in all, a number: {RETRY_FORM}"),
            )
        })?;
        let attempts = count.base10_parse::<u32>()?;
        let mut retry = RetryAst {
            attempts,
            attempts_span: count.span(),
            backoff: None,
            multiplier: None,
            jitter: None,
        };
        if input.is_empty() {
            return Ok(retry);
        }
        input.parse::<Token![,]>()?;
        let keys = ["backoff", "multiplier", "jitter"];
        let no_equals = |key: &Ident| format!("expected `=` after `{key}`: {RETRY_FORM}");
        NamedArgs {
            what: "retry policy",
            keys: &keys,
            suggest: &keys,
            takes: RETRY_FORM,
            twice: "",
            no_equals: &no_equals,
            abbreviations: false,
        }
        .parse(input, |index, _key, input| {
            match index {
                0 => {
                    let first = duration(input)?;
                    let last = match input.peek(Token![..]) {
                        true => {
                            input.parse::<Token![..]>()?;
                            duration(input)?
                        }
                        false => first,
                    };
                    retry.backoff = Some((first, last));
                }
                1 => retry.multiplier = Some(number(input)?),
                _ => retry.jitter = Some(number(input)?),
            }
            Ok(())
        })?;
        Ok(retry)
    })
}

/// `timeout(D)`.
pub fn timeout(spec: &Spec) -> syn::Result<DurationAst> {
    const FORM: &str = "an attempt's longest run, `timeout(30s)` (units `ms`, `s`, `min`, `h`)";
    match &spec.args {
        Some(args) if !args.is_empty() => spec.parse_args(args, duration),
        Some(_) => Err(syn::Error::new(
            spec.close,
            format!("`timeout()` is empty: give {FORM}"),
        )),
        None => Err(syn::Error::new(
            spec.name.span(),
            format!("`timeout` needs {FORM}"),
        )),
    }
}

/// A duration literal: a whole number with a unit.
fn duration(input: ParseStream) -> syn::Result<DurationAst> {
    duration_in(input, false)
}

/// A duration literal whose units go up to days (`2d`: a user task's due date).
pub fn long_duration(input: ParseStream) -> syn::Result<DurationAst> {
    duration_in(input, true)
}

fn duration_in(input: ParseStream, days: bool) -> syn::Result<DurationAst> {
    let units = match days {
        true => "`30min`, `8h` or `2d`",
        false => "`500ms`, `30s`, `5min` or `1h`",
    };
    let lit: syn::LitInt = input.parse().map_err(|e| {
        syn::Error::new(
            e.span(),
            format!("expected a duration: a whole number with a unit, {units}"),
        )
    })?;
    let unit: u64 = match lit.suffix() {
        "ms" => 1,
        "s" => 1_000,
        "min" => 60_000,
        "h" => 3_600_000,
        "d" if days => 86_400_000,
        other => {
            let said = match other {
                "" => "no unit".to_string(),
                other => format!("the unit `{other}`"),
            };
            let (names, e_g) = match days {
                true => ("`ms`, `s`, `min`, `h` or `d`", "`2d`"),
                false => ("`ms`, `s`, `min` or `h`", "`30s`"),
            };
            return Err(syn::Error::new(
                lit.span(),
                format!("`{lit}` has {said}: write a duration as a whole number with {names}, e.g. {e_g}"),
            ));
        }
    };
    let value = lit.base10_parse::<u64>()?;
    Ok(DurationAst {
        millis: value.saturating_mul(unit),
        span: lit.span(),
    })
}

/// A number, whole or not.
fn number(input: ParseStream) -> syn::Result<(f64, Span)> {
    let lit: Lit = input.parse()?;
    let value = match &lit {
        Lit::Int(int) => int.base10_parse::<f64>()?,
        Lit::Float(float) => float.base10_parse::<f64>()?,
        _ => {
            return Err(syn::Error::new(
                lit.span(),
                "expected a number, e.g. `2` or `0.1`",
            ))
        }
    };
    Ok((value, lit.span()))
}

/// A task's `retry(..)` and `timeout(..)`, as written after its `:`.
pub struct PolicyAst {
    /// The first of them, where an error about the whole policy points.
    pub at: Span,
    pub retry: Option<RetryAst>,
    pub timeout: Option<DurationAst>,
}
