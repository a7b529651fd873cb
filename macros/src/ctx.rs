//! The error context every stage reports into (after serde_derive's `internals::Ctxt`).

use std::cell::RefCell;
use std::fmt::Display;

use quote::ToTokens;

/// Collects errors; [`Ctx::finish`] combines them into one `syn::Error`.
pub struct Ctx {
    errors: RefCell<Vec<syn::Error>>,
}

impl Ctx {
    pub fn new() -> Self {
        Self {
            errors: RefCell::new(Vec::new()),
        }
    }

    /// An error spanning `at` (from its first token to its last).
    pub fn error(&self, at: impl ToTokens, message: impl Display) {
        self.errors
            .borrow_mut()
            .push(syn::Error::new_spanned(at.into_token_stream(), message));
    }

    /// An error made elsewhere (e.g. by a nested parser).
    pub fn push(&self, error: syn::Error) {
        self.errors.borrow_mut().push(error);
    }

    /// An error at one span.
    pub fn error_at(&self, span: proc_macro2::Span, message: impl Display) {
        self.errors
            .borrow_mut()
            .push(syn::Error::new(span, message));
    }

    /// Whether any error was reported so far.
    pub fn has_errors(&self) -> bool {
        !self.errors.borrow().is_empty()
    }

    /// All errors, combined in the order they were reported; `None` if there were none.
    pub fn finish(self) -> Option<syn::Error> {
        self.errors.into_inner().into_iter().reduce(|mut all, e| {
            all.combine(e);
            all
        })
    }
}
