//! What an element says of itself for the pictures, in its `:` list: its name, a
//! string literal (`task check = h: "Check stock";`), and a task's BPMN type,
//! `kind(send)` — kept by the exports, run the same (a task runs its handler
//! whatever it is drawn as).

use syn::parse::ParseStream;
use syn::{Ident, LitStr, Token};

use super::{parse_spec, Spec};
use crate::symbol::KIND;

/// A task's types, as `kind(..)` takes them, and the BPMN element each is drawn as.
pub const TASK_KINDS: &[(&str, &str)] = &[
    ("service", "serviceTask"),
    ("send", "sendTask"),
    ("script", "scriptTask"),
    ("business_rule", "businessRuleTask"),
    ("manual", "manualTask"),
    ("plain", "task"),
];

/// The items after an element's `:` (its `non_interrupting` aside).
pub struct Items {
    pub label: Option<LitStr>,
    /// `kind(send)`: the `kind` keyword and its type.
    pub kind: Option<(Ident, Ident)>,
    pub specs: Vec<Spec>,
}

/// `item ('|' item)*`, an item a string literal (the name) or a spec.
pub fn items(input: ParseStream) -> syn::Result<Items> {
    let mut out = Items {
        label: None,
        kind: None,
        specs: Vec::new(),
    };
    loop {
        if input.peek(LitStr) {
            let lit: LitStr = input.parse()?;
            if out.label.is_some() {
                return Err(syn::Error::new(
                    lit.span(),
                    "an element has one name; keep one of the string literals",
                ));
            }
            out.label = Some(lit);
        } else {
            let spec = parse_spec(input)?;
            if spec.name == KIND {
                out.kind = Some(kind(spec, out.kind.is_some())?);
            } else {
                out.specs.push(spec);
            }
        }
        if !input.peek(Token![|]) {
            return Ok(out);
        }
        input.parse::<Token![|]>()?;
    }
}

fn kind(spec: Spec, twice: bool) -> syn::Result<(Ident, Ident)> {
    let names = TASK_KINDS
        .iter()
        .map(|(k, _)| format!("`{k}`"))
        .collect::<Vec<_>>()
        .join(", ");
    if twice {
        return Err(syn::Error::new(
            spec.name.span(),
            "`kind` is given twice; a task has one type",
        ));
    }
    let args = spec.args.clone().unwrap_or_default();
    let what: Ident = syn::parse2(args).map_err(|_| {
        syn::Error::new(
            spec.close,
            format!("`kind` takes the task's type, one of {names}: `kind(send)`"),
        )
    })?;
    if !TASK_KINDS.iter().any(|(k, _)| what == k) {
        let hint = crate::suggest::hint(&what.to_string(), TASK_KINDS.iter().map(|(k, _)| *k));
        return Err(syn::Error::new(
            what.span(),
            format!("`{what}` is no task type; {hint}a task is one of {names}"),
        ));
    }
    Ok((spec.name, what))
}
