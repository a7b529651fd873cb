//! An activity's loop or multi-instance marker in the file, with its binding's: the
//! file says how the activity repeats — `isSequential`, `testBefore`, `loopMaximum`,
//! a constant `loopCardinality` —, the binding, as an attribute on the element's
//! binding (`#[multi_instance(each = |o| o.lines.clone())] task ship = ..;`), what only
//! Rust can say: the collection, a computed count, the completion and loop
//! conditions, the outputs. Both are made into the attribute the inline DSL takes, so
//! every rule of `check::loops` applies. An expression of the file is never run: one
//! the binding does not give is an error at the element, saying how to bind it.

use proc_macro2::TokenStream;
use quote::quote;
use syn::parse::Parser;
use syn::{Attribute, Ident};

use super::read::{Element, Marker};
use super::Importer;
use crate::parse::loops::{marker as parse_marker, LoopAstKind};
use crate::symbol::{MULTI_INSTANCE, STANDARD_LOOP};

/// What a binding's marker gives.
#[derive(Default)]
struct Given {
    items: bool,
    condition: bool,
}

impl Importer<'_> {
    /// Put the marker of `e` (a `keyword`) into `attrs`, its binding's attributes:
    /// the binding's marker with what the file says added, or one made from the file.
    pub(super) fn marker(&self, e: &Element, keyword: &str, attrs: &mut Vec<Attribute>) {
        let is_marker =
            |a: &Attribute| a.path().is_ident(MULTI_INSTANCE) || a.path().is_ident(STANDARD_LOOP);
        let bound = attrs.iter().position(is_marker);
        let Some(m) = &e.looped else {
            if let Some(b) = bound {
                self.ctx.error(
                    attrs[b].path(),
                    format!("the diagram draws no loop or multi-instance marker on `{}`; mark it in the modeler (the file says how the activity repeats, the binding what only Rust can say), or drop the attribute", e.id),
                );
            }
            return;
        };
        let name = if m.multi {
            MULTI_INSTANCE
        } else {
            STANDARD_LOOP
        };
        let (given, bound_args) = match bound {
            Some(b) => match self.bound(e, m, &attrs[b]) {
                Some(given) => (given, list_tokens(&attrs[b])),
                // Of the other kind, or malformed: reported; the binding stays as written.
                None => return,
            },
            None => (Given::default(), None),
        };
        let Some(from_file) = self.file_args(e, keyword, m, &given) else {
            return;
        };
        let path = match bound {
            Some(b) => attrs[b].path().clone(),
            None => self.ident(name).into(),
        };
        let args = match bound_args {
            Some(bound) if from_file.is_empty() => bound,
            Some(bound) => quote!(#(#from_file),*, #bound),
            None => quote!(#(#from_file),*),
        };
        let tokens = quote!(#[#path(#args)]);
        let tokens = match bound {
            Some(_) => tokens,
            None => self.respan(tokens),
        };
        match Attribute::parse_outer.parse2(tokens) {
            Ok(mut made) if made.len() == 1 => {
                let made = made.remove(0);
                match bound {
                    Some(b) => attrs[b] = made,
                    None => attrs.push(made),
                }
            }
            _ => self.error(
                &e.id,
                format!("internal: the marker of `{}` could not be made", e.id),
            ),
        }
    }

    /// Check the binding's marker against the file's: the same kind, and none of what
    /// the file says. `None` when it cannot be used.
    fn bound(&self, e: &Element, m: &Marker, attr: &Attribute) -> Option<Given> {
        let ast = match parse_marker(attr)? {
            Ok(ast) => ast,
            // The model reports the malformed attribute.
            Err(_) => return None,
        };
        let from_file = |what: &Ident, attribute: &str| {
            self.ctx.error(
                what,
                format!("`{what}` is the diagram's `{attribute}` on `{}`: set it in the modeler and leave it out of the binding (the file says how the activity repeats)", e.id),
            );
        };
        match (&ast.kind, m.multi) {
            (LoopAstKind::Multi(multi), true) => {
                if let Some(sequential) = &multi.sequential {
                    from_file(sequential, "isSequential");
                }
                Some(Given {
                    items: multi.each.is_some() || multi.count.is_some(),
                    condition: multi.completion.is_some(),
                })
            }
            (LoopAstKind::Standard(standard), false) => {
                if let Some(test_before) = &standard.test_before {
                    from_file(test_before, "testBefore");
                }
                if let Some((max, _)) = &standard.max {
                    from_file(max, "loopMaximum");
                }
                Some(Given {
                    // A loop has no items to give.
                    items: true,
                    condition: standard.condition.is_some(),
                })
            }
            (_, multi) => {
                let (drawn, bind) = if multi {
                    (
                        "a multi-instance marker",
                        "#[multi_instance(each = |data| ...)]",
                    )
                } else {
                    (
                        "a standard loop marker",
                        "#[standard_loop(while = |data, runs| ...)]",
                    )
                };
                self.ctx.error(
                    &ast.name,
                    format!("the diagram draws {drawn} on `{}`; bind it as `{bind}`, or change the marker in the modeler", e.id),
                );
                None
            }
        }
    }

    /// The marker's arguments the file gives, or `None` after an error at the element
    /// for an expression of the file the binding does not give.
    fn file_args(
        &self,
        e: &Element,
        keyword: &str,
        m: &Marker,
        given: &Given,
    ) -> Option<Vec<TokenStream>> {
        let id = &e.id;
        let mut args = Vec::new();
        let unbound = |message: String| self.error(id, message);
        let mut ok = true;
        if m.multi {
            if m.flag {
                args.push(quote!(sequential));
            }
            if !given.items {
                let constant = m
                    .cardinality
                    .as_deref()
                    .and_then(|c| c.parse::<usize>().ok());
                match (constant, &m.collection, &m.cardinality) {
                    (Some(n), _, _) => args.push(quote!(count = |_| #n)),
                    (None, Some(collection), _) => {
                        ok = false;
                        unbound(format!("the diagram takes `{id}`'s instances from a collection (`{collection}`), which thresh does not read: give it in Rust, `#[multi_instance(each = |data| data.items.clone())] {keyword} {id} ...;`"));
                    }
                    (None, None, Some(count)) => {
                        ok = false;
                        unbound(format!("the diagram counts `{id}`'s instances by `{count}` (its `loopCardinality`), which thresh does not run: give the count in Rust, `#[multi_instance(count = |data| ...)] {keyword} {id} ...;`"));
                    }
                    (None, None, None) => {
                        ok = false;
                        unbound(format!("the diagram's multi-instance `{id}` says not how many instances run (no `loopCardinality`, no collection): give them in Rust, `#[multi_instance(each = |data| ...)] {keyword} {id} ...;` or `count = |data| n`"));
                    }
                }
            }
            if let (Some(condition), false) = (&m.condition, given.condition) {
                ok = false;
                unbound(format!("the diagram's `{id}` has a completion condition (`{condition}`), which thresh does not run: conditions are Rust — bind it, `#[multi_instance(completion = |data, counts| ...)] {keyword} {id} ...;`"));
            }
        } else {
            if m.flag {
                args.push(quote!(test_before));
            }
            let max = match m.max.as_deref().map(str::parse::<u32>) {
                Some(Ok(max @ 1..)) => Some(max),
                Some(_) => {
                    unbound(format!("`{id}`'s `loopMaximum` is `{}`, and the most runs a loop makes is a whole number from 1 to 4294967295; fix it in the modeler", m.max.as_deref().unwrap_or_default()));
                    return None;
                }
                None => None,
            };
            if let Some(max) = max {
                let max = proc_macro2::Literal::u32_unsuffixed(max);
                args.push(quote!(max = #max));
            }
            match (given.condition, &m.condition, max) {
                (true, _, _) => {}
                (false, Some(condition), _) => {
                    ok = false;
                    unbound(format!("the diagram's `{id}` loops while `{condition}` (its `loopCondition`), which thresh does not run: conditions are Rust — bind it, `#[standard_loop(while = |data, runs| ...)] {keyword} {id} ...;`"));
                }
                // Bounded and unconditioned: it runs `loopMaximum` times.
                (false, None, Some(_)) => args.push(quote!(while = |_, _| true)),
                (false, None, None) => {
                    ok = false;
                    unbound(format!("the diagram's `{id}` loops with no condition and no `loopMaximum`, for ever: say in Rust how long it runs, `#[standard_loop(while = |data, runs| ...)] {keyword} {id} ...;`, or set a maximum in the modeler"));
                }
            }
        }
        ok.then_some(args)
    }
}

/// The arguments of a marker attribute, `(..)`'s content.
fn list_tokens(attr: &Attribute) -> Option<TokenStream> {
    match &attr.meta {
        syn::Meta::List(list) => Some(list.tokens.clone()),
        _ => None,
    }
}
