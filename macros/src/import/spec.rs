//! The specs the file gives an element: its event definitions (messages, signals,
//! errors, escalations, links, timers), a converging complex gateway's activation,
//! and whether a binding's spec agrees with them.

use proc_macro2::{TokenStream, TokenTree};
use quote::quote;

use super::read::{Def, Element};
use super::{timer, Importer};
use crate::parse::Spec;

impl Importer<'_> {
    /// The specs the file gives `e` (`None`: none; an error reported: the element is
    /// dropped). `bound`: the binding gives a spec, so what only code can say need
    /// not be in the file.
    pub(super) fn file_spec(
        &self,
        e: &Element,
        keyword: &str,
        bound: bool,
    ) -> Option<Option<Vec<Spec>>> {
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
            // A compensation handler: `task refund = ...: compensation;`.
            "task" if attr("isForCompensation") == Some("true") => {
                return one(self.spec("compensation", None));
            }
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
            // A message end names no message where the modeler left the receiver
            // to the collaboration: it sends one named after the element.
            Def::Message(None) if e.tag == "endEvent" && !bound => {
                let name = e
                    .attrs
                    .get("name")
                    .map_or_else(|| e.id.clone(), |n| super::read::one_line(n));
                one(self.spec("message", Some(self.string(&name))))
            }
            Def::Message(name) => named("message", name),
            Def::Signal(name) => named("signal", name),
            Def::Link(name) => named("link", name),
            Def::Error(code) => one(self.spec("error", code.as_ref().map(|c| self.string(c)))),
            Def::Escalation(code) => {
                one(self.spec("escalation", code.as_ref().map(|c| self.string(c))))
            }
            Def::Terminate => one(self.spec("terminate", None)),
            Def::Compensate(activity) => {
                let args = activity
                    .as_ref()
                    .map(|a| TokenStream::from(proc_macro2::TokenTree::Ident(self.id(a))));
                one(self.spec("compensation", args))
            }
            Def::Cancel => one(self.spec("cancel", None)),
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
        // Only thresh's own form is lexed: other text (`${count >= 2}`, a script) is
        // refused below without the compiler's lexer reporting on it first.
        let ours = text.trim_start().starts_with("activate");
        let parsed = ours
            .then(|| text.parse::<TokenStream>().ok())
            .flatten()
            .and_then(|tokens| {
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
    pub(super) fn agrees(&self, e: &Element, file: &[Spec], bound: &Spec) {
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

pub(super) fn clone_spec(s: &Spec) -> Spec {
    Spec {
        name: s.name.clone(),
        args: s.args.clone(),
        close: s.close,
    }
}
