//! The file's ids → Rust identifiers. Modelers write ids that are no Rust identifier
//! (`service-fetch-data`, UUIDs, `1st-check`); the model works on identifiers, so
//! each such id is given one here, unique in the process, while messages, the
//! emitted node ids and the exports keep the id as written.
//!
//! An id is tested by its characters before syn sees it: handing `check-5EF1` to
//! the compiler's lexer reports `expected at least one digit in exponent` on the
//! whole macro call, whatever the caller does with the result.

use std::collections::{HashMap, HashSet};

/// Written id → identifier, for every element and flow of the file.
pub struct Ids {
    map: HashMap<String, String>,
}

/// Whether `text` is a Rust identifier (ASCII, not a keyword).
pub fn is_ident(text: &str) -> bool {
    let mut chars = text.chars();
    let Some(first) = chars.next() else {
        return false;
    };
    (first.is_ascii_alphabetic() || first == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
        && text != "_"
        // Only identifier characters: the lexer sees one token, and syn refuses the
        // keywords.
        && syn::parse_str::<syn::Ident>(text).is_ok()
}

/// An identifier made of `written`: other characters as `_`, a leading digit
/// behind `_`, a keyword with a trailing `_`.
fn sanitized(written: &str) -> String {
    let mut out: String = written
        .chars()
        .map(|c| match c.is_ascii_alphanumeric() {
            true => c,
            false => '_',
        })
        .collect();
    if out.is_empty() || out.starts_with(|c: char| c.is_ascii_digit()) || out == "_" {
        out.insert(0, '_');
    }
    if out == "_" {
        out.push('x');
    }
    if !is_ident(&out) {
        out.push('_');
    }
    out
}

impl Ids {
    /// Identifiers for `written` ids: each one that is an identifier keeps it; the
    /// others get a sanitized form, numbered when it is taken.
    pub fn new<'a>(written: impl Iterator<Item = &'a str> + Clone) -> Ids {
        let mut taken: HashSet<String> = written
            .clone()
            .filter(|w| is_ident(w))
            .map(str::to_string)
            .collect();
        let mut map = HashMap::new();
        for w in written {
            if map.contains_key(w) {
                continue;
            }
            let ident = match is_ident(w) {
                true => w.to_string(),
                false => {
                    let base = sanitized(w);
                    let mut ident = base.clone();
                    let mut k = 2;
                    while taken.contains(&ident) {
                        ident = format!("{base}_{k}");
                        k += 1;
                    }
                    taken.insert(ident.clone());
                    ident
                }
            };
            map.insert(w.to_string(), ident);
        }
        Ids { map }
    }

    /// The identifier of the written id `written` (a sanitized form for an id the
    /// file does not have).
    pub fn ident(&self, written: &str) -> String {
        self.map
            .get(written)
            .cloned()
            .unwrap_or_else(|| match is_ident(written) {
                true => written.to_string(),
                false => sanitized(written),
            })
    }

    /// Identifier → written id, for the ids that differ.
    pub fn renamed(&self) -> HashMap<String, String> {
        self.map
            .iter()
            .filter(|(w, i)| w != i)
            .map(|(w, i)| (i.clone(), w.clone()))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_become_identifiers() {
        let written = ["check-5EF1", "1st", "fn", "a_b", "a-b", "Task_1"];
        let ids = Ids::new(written.iter().copied());
        assert_eq!(ids.ident("check-5EF1"), "check_5EF1");
        assert_eq!(ids.ident("1st"), "_1st");
        assert_eq!(ids.ident("fn"), "fn_");
        assert_eq!(ids.ident("a_b"), "a_b");
        // `a_b` is the file's: the hyphenated one is numbered.
        assert_eq!(ids.ident("a-b"), "a_b_2");
        assert_eq!(ids.ident("Task_1"), "Task_1");
        assert!(!is_ident("check-5EF1"));
        assert!(!is_ident("self"));
    }
}
