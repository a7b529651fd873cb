//! The specs after a node's `:` that take arguments: a complex gateway's
//! `activate(..)` and the events (`message`, `signal`, `timer`, `link`, `condition`,
//! `error`, `escalation`).

use proc_macro2::{Span, TokenStream};
use syn::parse::{Parse, ParseStream};
use syn::{Expr, Ident, LitInt, Token};

use super::args::NamedArgs;
use super::Spec;
use crate::symbol::{
    APPLY, AT, CANCEL, COMPENSATION, CONDITION, COUNT, ERROR, ESCALATION, EVERY, KEY, LINK,
    MESSAGE, ON, PAYLOAD, REQUIRE, SIGNAL, TIMER, TIMES, WHEN,
};

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
    let no_equals = |key: &Ident| {
        format!(
            "expected `=` after `{key}`: activation arguments are written `key = value`, here `{key} = {}`",
            match key.to_string().as_str() {
                COUNT => "2",
                REQUIRE => "[a, b]",
                _ => "|data| ...",
            }
        )
    };
    let named = NamedArgs {
        what: "activation",
        keys: &[COUNT, REQUIRE, WHEN],
        suggest: &[COUNT, REQUIRE, WHEN],
        takes: "an activation takes `count = N`, and optionally `require = [a, b]` and `when = |data| ...`",
        twice: " — for an alternative rule, add `| activate(...)`",
        no_equals: &no_equals,
        abbreviations: true,
    };
    let parser = |input: ParseStream| -> syn::Result<()> {
        named.parse(input, |index, _, input| {
            match index {
                0 => {
                    let count = input.parse::<LitInt>().map_err(|e| {
                        syn::Error::new(
                            e.span(),
                            "`count` takes a whole number: how many incoming flows must have delivered a token, e.g. `count = 2`",
                        )
                    })?;
                    triple.count = Some(count);
                }
                1 => {
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
                }
                _ => triple.when = Some(input.parse()?),
            }
            Ok(())
        })
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
    /// Compensation: a compensation boundary (with its handler) or the start of a
    /// compensation event sub-process.
    Compensation,
    /// A transaction's cancel boundary.
    Cancel,
}

/// `timer(DURATION)`, `timer(at = SYSTEM_TIME)`, `timer(every = DURATION, times = N)`.
// Spans with locations (proc-macro2's `span-locations`) make syn's trees larger;
// these live briefly in one macro run.
#[allow(clippy::large_enum_variant)]
pub enum TimerAst {
    After(Expr),
    At(Expr),
    Every {
        every: Expr,
        times: Option<Expr>,
    },
    /// `timer(|data| ..)`: read off the instance's data when armed (a `Duration`, a
    /// `SystemTime` or a `TimerSpec`).
    FromData(Expr),
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
        COMPENSATION => EventTrigger::Compensation,
        CANCEL => EventTrigger::Cancel,
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
    // Compensation and cancel events carry nothing: a compensation boundary names its
    // handler after `->`, a cancel boundary catches its transaction's cancel end.
    if matches!(trigger, EventTrigger::Compensation | EventTrigger::Cancel) {
        if let Some(args) = &spec.args {
            let what = if trigger == EventTrigger::Compensation {
                "`compensation` takes no arguments here: a compensation boundary names its handler after an arrow, `boundary undo on charge: compensation -> refund;`, and a compensation event sub-process starts with `start s: compensation;`"
            } else {
                "`cancel` takes no arguments: a cancel boundary on a transaction is `boundary cancelled on booking: cancel;`"
            };
            return Err(syn::Error::new_spanned(args, what));
        }
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
        // Returned above: they take no arguments.
        EventTrigger::Compensation => "compensation",
        EventTrigger::Cancel => "cancel",
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
            &[KEY, APPLY, PAYLOAD],
            "a message takes `key = |data| ...` (its correlation key), and `apply = |data, payload: &P| ...` on a catch or `payload = |data| ...` on a throw",
        ),
        EventTrigger::Link => (&[], "a link takes nothing but its name: `link(\"retry\")`"),
        _ => (
            &[APPLY, PAYLOAD],
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
                return parse_code(input, &mut event, &spec.name.to_string(), example)
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
        if !input.is_empty() {
            input.parse::<Token![,]>()?;
        }
        let no_equals = |key: &Ident| {
            format!("expected `=` after `{key}`: event arguments are written `name = value`, e.g. `{key} = |data| ...`")
        };
        let what = spec.name.to_string();
        let named = NamedArgs {
            what: &what,
            keys: &[KEY, APPLY, PAYLOAD],
            suggest: arguments,
            takes,
            twice: "",
            no_equals: &no_equals,
            abbreviations: false,
        };
        named.parse(input, |index, key, input| {
            let slot = match index {
                0 => &mut event.key,
                1 => &mut event.apply,
                _ => &mut event.payload,
            };
            *slot = Some((key, input.parse()?));
            Ok(())
        })
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
    if !input.is_empty() {
        input.parse::<Token![,]>()?;
    }
    let list = "`on` takes a list of the data's fields, `on = [total]` or `on = [total, items]`";
    let no_equals = |_: &Ident| format!("expected `=` after `on`: {list}");
    let named = NamedArgs {
        what: "condition",
        keys: &[ON],
        suggest: &[ON],
        takes: TAKES,
        twice: "",
        no_equals: &no_equals,
        abbreviations: false,
    };
    named.parse(input, |_, key, input| {
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
        Ok(())
    })
}

/// `error("CODE", apply = ...)`, `escalation("CODE")`: an optional code, then the
/// named arguments (only `apply`); `what` is `error` or `escalation`.
fn parse_code(
    input: ParseStream,
    event: &mut EventAst,
    what: &str,
    example: &str,
) -> syn::Result<()> {
    if input.peek(syn::LitStr) {
        event.code = Some(input.parse()?);
        if !input.is_empty() {
            input.parse::<Token![,]>()?;
        }
    }
    const APPLY_FORM: &str = "`apply = |data, caught: &P| ...`";
    let takes = format!(
        "an {what} takes its code as a string literal and, on a boundary, {APPLY_FORM} — e.g. `{example}`"
    );
    let no_equals = |key: &Ident| {
        format!("expected `=` after `{key}`: {what} arguments are written `name = value`, here {APPLY_FORM}")
    };
    let named = NamedArgs {
        what,
        keys: &[APPLY],
        suggest: &[APPLY],
        takes: &takes,
        twice: "",
        no_equals: &no_equals,
        abbreviations: false,
    };
    named.parse(input, |_, key, input| {
        event.apply = Some((key, input.parse()?));
        Ok(())
    })
}

/// The arguments of `timer(...)`: one bare duration, or named `at`, `every`, `times`.
fn parse_timer(input: ParseStream) -> syn::Result<TimerAst> {
    const FORMS: &str = "a timer is `timer(DURATION)`, `timer(at = SYSTEM_TIME)`, `timer(every = DURATION, times = N)` or, read off the data when armed, `timer(|data| data.due)`";
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
            return Ok(match after {
                Expr::Closure(_) => TimerAst::FromData(after),
                after => TimerAst::After(after),
            });
        }
        let rest: TokenStream = input.parse()?;
        return Err(syn::Error::new_spanned(
            rest,
            "a duration timer takes one expression, `timer(Duration::from_secs(30))`; a point in time or a repeat is named: `timer(at = SYSTEM_TIME)`, `timer(every = DURATION, times = N)`",
        ));
    }
    // Each argument with its name, for errors about it.
    let [mut at, mut every, mut times]: [Option<(Ident, Expr)>; 3] = Default::default();
    let no_equals = |key: &Ident| {
        format!("expected `=` after `{key}`: timer arguments are written `name = value`; {FORMS}")
    };
    let named = NamedArgs {
        what: "timer",
        keys: &[AT, EVERY, TIMES],
        suggest: &[AT, EVERY, TIMES],
        takes: FORMS,
        twice: "",
        no_equals: &no_equals,
        abbreviations: false,
    };
    named.parse(input, |index, key, input| {
        let slot = [&mut at, &mut every, &mut times]
            .into_iter()
            .nth(index)
            .expect("one of the keys");
        *slot = Some((key, input.parse()?));
        Ok(())
    })?;
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
