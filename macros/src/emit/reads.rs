//! Which fields of the process data a message's correlation key reads, when that can
//! be seen from its closure: the engine then re-evaluates a waiting catch's key only
//! after a commit that changed one of them (ARCHITECTURE.md, "Events").
//!
//! The reading is conservative: `|d| d.id.clone()` or `|d| format!("{}-{}", d.a, d.b)`
//! read `id`, and `a` and `b`; anything else — a fn path, a pattern parameter, the
//! parameter used whole (`d.key()`, `helper(d)`, `{d:?}` in a format string) or
//! shadowed — is "unknown": re-evaluated after every commit that changed something.

use proc_macro2::{TokenStream, TokenTree};
use syn::{Expr, Pat};

/// The top-level fields `key` reads, or `None` when that cannot be seen.
pub(crate) fn key_reads(key: &Expr) -> Option<Vec<String>> {
    let Expr::Closure(closure) = key else {
        return None;
    };
    let [param] = closure.inputs.iter().collect::<Vec<_>>()[..] else {
        return None;
    };
    let param = match param {
        Pat::Ident(p) if p.subpat.is_none() => p.ident.to_string(),
        Pat::Type(t) => match &*t.pat {
            Pat::Ident(p) if p.subpat.is_none() => p.ident.to_string(),
            _ => return None,
        },
        _ => return None,
    };
    let body = quote::ToTokens::to_token_stream(&*closure.body);
    let mut reads = Vec::new();
    fields(body, &param, &mut reads)?;
    reads.sort();
    reads.dedup();
    Some(reads)
}

/// Collect `param.field` reads in `tokens`; `None` at any other use of `param`.
fn fields(tokens: TokenStream, param: &str, reads: &mut Vec<String>) -> Option<()> {
    let tokens: Vec<TokenTree> = tokens.into_iter().collect();
    let mut i = 0;
    while i < tokens.len() {
        match &tokens[i] {
            TokenTree::Group(group) => fields(group.stream(), param, reads)?,
            // An inline format argument names the parameter whole.
            TokenTree::Literal(literal) if literal.to_string().contains(&format!("{{{param}")) => {
                return None;
            }
            TokenTree::Ident(ident) if *ident == param => {
                // Not after a `.` (then it is a field of something else).
                let after_dot =
                    i > 0 && matches!(&tokens[i - 1], TokenTree::Punct(p) if p.as_char() == '.');
                if !after_dot {
                    let dot = matches!(tokens.get(i + 1), Some(TokenTree::Punct(p)) if p.as_char() == '.');
                    let field = match tokens.get(i + 2) {
                        Some(TokenTree::Ident(field)) if dot => field.to_string(),
                        _ => return None,
                    };
                    // `param.method(..)` uses the parameter whole.
                    if matches!(tokens.get(i + 3), Some(TokenTree::Group(g)) if g.delimiter() == proc_macro2::Delimiter::Parenthesis)
                    {
                        return None;
                    }
                    reads.push(field);
                    i += 3;
                    continue;
                }
            }
            _ => {}
        }
        i += 1;
    }
    Some(())
}

#[cfg(test)]
mod tests {
    use super::key_reads;

    fn reads(key: &str) -> Option<Vec<String>> {
        key_reads(&syn::parse_str(key).unwrap())
    }

    #[test]
    fn fields_read_by_a_closure() {
        assert_eq!(reads("|d| d.id.clone()"), Some(vec!["id".into()]));
        assert_eq!(
            reads("|o: &Order| format!(\"{}-{}\", o.region, o.id)"),
            Some(vec!["id".into(), "region".into()])
        );
        assert_eq!(reads("|d| d.a.b.to_string()"), Some(vec!["a".into()]));
        assert_eq!(reads("|_d| \"fixed\".to_string()"), Some(vec![]));
    }

    #[test]
    fn unknown_when_the_parameter_is_used_whole() {
        assert_eq!(reads("order_key"), None);
        assert_eq!(reads("|d| d.key()"), None);
        assert_eq!(reads("|d| helper(d)"), None);
        assert_eq!(reads("|d| format!(\"{d:?}\")"), None);
        assert_eq!(reads("|Order { id, .. }| id.clone()"), None);
        assert_eq!(reads("|d| { let d = &d.inner; d.id.clone() }"), None);
        assert_eq!(reads("|d| d.0.to_string()"), None);
    }
}
