//! The one parser of `key = value` argument lists, behind every spec that takes named
//! arguments (`activate(..)`, `message(..)`, `signal(..)`, `condition(..)`, `timer(..)`).

use syn::parse::ParseStream;
use syn::{Ident, Token};

use crate::suggest;

/// The vocabulary of one argument list, and how its errors word it.
pub struct NamedArgs<'a> {
    /// What the arguments belong to, as errors name it: `activation`, `timer`, ...
    pub what: &'a str,
    pub keys: &'a [&'a str],
    /// The keys an unknown one may be a typo of: `keys`, or fewer where some are
    /// parsed only so that a later check can say why they do not belong.
    pub suggest: &'a [&'a str],
    /// How the arguments are written, ending the error about an unknown key.
    pub takes: &'a str,
    /// Said after "`key` is given twice in this ...; keep one".
    pub twice: &'a str,
    /// The error when a key is not followed by `=`.
    pub no_equals: &'a dyn Fn(&Ident) -> String,
    /// Whether an unknown key may also be an abbreviation of a known one (`cnt`).
    pub abbreviations: bool,
}

impl NamedArgs<'_> {
    /// Parse `key = value, ...` (a trailing comma allowed), each key at most once, in
    /// any order; `value` parses the value of `keys[index]` after its `=`.
    pub fn parse(
        &self,
        input: ParseStream,
        mut value: impl FnMut(usize, Ident, ParseStream) -> syn::Result<()>,
    ) -> syn::Result<()> {
        let mut seen: Vec<usize> = Vec::new();
        while !input.is_empty() {
            let key: Ident = input.parse()?;
            let Some(index) = self.keys.iter().position(|k| key == k) else {
                return Err(syn::Error::new_spanned(
                    &key,
                    format!(
                        "unknown {} argument `{key}`; {}{}",
                        self.what,
                        self.hint(&key.to_string()),
                        self.takes
                    ),
                ));
            };
            if seen.contains(&index) {
                return Err(syn::Error::new_spanned(
                    &key,
                    format!(
                        "`{key}` is given twice in this {}; keep one{}",
                        self.what, self.twice
                    ),
                ));
            }
            input
                .parse::<Token![=]>()
                .map_err(|e| syn::Error::new(e.span(), (self.no_equals)(&key)))?;
            value(index, key, input)?;
            seen.push(index);
            if !input.is_empty() {
                input.parse::<Token![,]>()?;
            }
        }
        Ok(())
    }

    /// "did you mean `count`? " for a typo or (where allowed) an abbreviation.
    fn hint(&self, name: &str) -> String {
        // An abbreviation has the key's letters in order.
        let abbreviates = |k: &&str| {
            let mut letters = k.chars();
            self.abbreviations && name.len() > 1 && name.chars().all(|c| letters.any(|l| l == c))
        };
        suggest::nearest(name, self.suggest.iter().copied())
            .or_else(|| self.suggest.iter().copied().find(abbreviates))
            .map(|s| format!("{} ", suggest::did_you_mean(s)))
            .unwrap_or_default()
    }
}
