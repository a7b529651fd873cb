//! The error context every stage reports into (after serde_derive's `internals::Ctxt`).

use std::cell::RefCell;
use std::collections::HashMap;
use std::fmt::Display;

use proc_macro2::Span;
use quote::ToTokens;

/// Collects errors; [`Ctx::finish`] combines them into one `syn::Error`.
pub struct Ctx {
    errors: RefCell<Vec<syn::Error>>,
    origin: RefCell<Option<Origin>>,
}

/// Where the elements of an imported process come from: their tokens are all spanned
/// on the `from "file.bpmn"` literal, so an error on them says which element of the
/// file it is about and on which line.
pub struct Origin {
    /// The path as written.
    pub file: String,
    /// The literal's span, as its debug form (spans have no equality on stable).
    pub span: String,
    /// Element and flow ids (as identifiers, and as written) → their line in the file.
    pub lines: HashMap<String, usize>,
    /// Identifier → the id as the file writes it, for the ids that are no Rust
    /// identifier: messages show the file's.
    pub renamed: HashMap<String, String>,
    /// Identifier → the element's `name` in the file, where it has one: generated
    /// ids say little to the person who drew the diagram.
    pub names: HashMap<String, String>,
}

impl Origin {
    pub fn new(
        file: String,
        span: Span,
        lines: HashMap<String, usize>,
        renamed: HashMap<String, String>,
        names: HashMap<String, String>,
    ) -> Self {
        Origin {
            file,
            span: format!("{span:?}"),
            lines,
            renamed,
            names,
        }
    }

    /// `message` with every renamed identifier between backticks shown as the file
    /// writes it: alone, the id; inside a piece of code, the quoted id a binding
    /// takes (`task "check-stock" = ...`).
    fn written(&self, message: String) -> String {
        if self.renamed.is_empty() {
            return message;
        }
        let mut out = String::with_capacity(message.len());
        for (i, part) in message.split('`').enumerate() {
            if i > 0 {
                out.push('`');
            }
            if i % 2 == 0 {
                out.push_str(part);
            } else if let Some(w) = self.renamed.get(part) {
                out.push_str(w);
            } else if self.renamed.values().any(|w| w == part) {
                out.push_str(part);
            } else {
                out.push_str(&self.code(part));
            }
        }
        out
    }

    /// A piece of code with each renamed identifier in it, and each id as written
    /// that is no identifier, as the quoted id a binding takes.
    fn code(&self, part: &str) -> String {
        let part = self.quote_written(part);
        let part = part.as_str();
        let mut out = String::with_capacity(part.len());
        let mut word = String::new();
        let flush = |word: &mut String, out: &mut String| {
            match self.renamed.get(word.as_str()) {
                Some(w) => out.push_str(&format!("\"{w}\"")),
                None => out.push_str(word),
            }
            word.clear();
        };
        for c in part.chars() {
            if c.is_ascii_alphanumeric() || c == '_' {
                word.push(c);
            } else {
                flush(&mut word, &mut out);
                out.push(c);
            }
        }
        flush(&mut word, &mut out);
        out
    }

    /// `part` with the file's ids that are no identifier quoted where they stand
    /// unquoted (whole: not inside a longer id).
    fn quote_written(&self, part: &str) -> String {
        let mut written: Vec<&String> = self.renamed.values().collect();
        written.sort_by_key(|w| std::cmp::Reverse(w.len()));
        let mut out = part.to_string();
        let in_id =
            |c: Option<char>| c.is_some_and(|c| c.is_ascii_alphanumeric() || "_-\"".contains(c));
        for w in written {
            let mut from = 0;
            while let Some(at) = out[from..].find(w.as_str()).map(|i| i + from) {
                let end = at + w.len();
                if in_id(out[..at].chars().next_back()) || in_id(out[end..].chars().next()) {
                    from = end;
                    continue;
                }
                out.replace_range(at..end, &format!("\"{w}\""));
                from = end + 2;
            }
        }
        out
    }

    /// `message`, opened with "in file:line, " when `span` is the file's literal: the
    /// line of the element the error is spanned on (its first token `first`), else of
    /// the first element the message names.
    fn locate(&self, span: Span, first: Option<String>, message: String) -> String {
        if format!("{span:?}") != self.span {
            return self.written(message);
        }
        let named = message.split('`').skip(1).step_by(2).map(str::to_string);
        let found = first
            .into_iter()
            .chain(named)
            .find_map(|id| self.lines.get(&id).map(|line| (id, *line)));
        let message = self.written(message);
        match found {
            Some((id, line)) => {
                let written = self.renamed.get(&id).unwrap_or(&id);
                let name = self
                    .names
                    .get(&id)
                    .filter(|n| *n != written)
                    .map(|n| format!(" (\"{n}\")"));
                let name = name.unwrap_or_default();
                format!("in {}:{line}{name}, {message}", self.file)
            }
            None => format!("in {}, {message}", self.file),
        }
    }
}

impl Ctx {
    pub fn new() -> Self {
        Self {
            errors: RefCell::new(Vec::new()),
            origin: RefCell::new(None),
        }
    }

    /// Errors on tokens spanned on the diagram's literal are located in the file.
    pub fn set_origin(&self, origin: Origin) {
        *self.origin.borrow_mut() = Some(origin);
    }

    /// An error spanning `at` (from its first token to its last).
    pub fn error(&self, at: impl ToTokens, message: impl Display) {
        let tokens = at.into_token_stream();
        let message = match (&*self.origin.borrow(), tokens.clone().into_iter().next()) {
            (Some(origin), Some(first)) => {
                let name = match &first {
                    proc_macro2::TokenTree::Ident(i) => Some(i.to_string()),
                    _ => None,
                };
                origin.locate(first.span(), name, message.to_string())
            }
            _ => message.to_string(),
        };
        self.errors
            .borrow_mut()
            .push(syn::Error::new_spanned(tokens, message));
    }

    /// An error made elsewhere (e.g. by a nested parser).
    pub fn push(&self, error: syn::Error) {
        self.errors.borrow_mut().push(error);
    }

    /// An error at one span.
    pub fn error_at(&self, span: proc_macro2::Span, message: impl Display) {
        let message = match &*self.origin.borrow() {
            Some(origin) => origin.locate(span, None, message.to_string()),
            None => message.to_string(),
        };
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
