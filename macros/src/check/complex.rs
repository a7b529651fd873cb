//! Complex gateway rules (ADR-005 §2.11): a converging complex gateway has an
//! activation rule, only a converging one does, and every triple of the rule is
//! satisfiable on its own: 1 ≤ count ≤ M, count ≥ |required|, and every required flow
//! is a real incoming flow (named by its source).

use crate::check::suggest;
use crate::ctx::Ctx;
use crate::model::{Kind, Model};

pub fn check(ctx: &Ctx, model: &Model) {
    for node in model.nodes.iter().filter(|n| n.kind == Kind::Complex) {
        let m = node.incoming.len();
        let converging = m > 1;
        if converging && node.activation.is_empty() {
            ctx.error(
                node.id,
                format!(
                    "the complex gateway `{}` joins {m} flows but has no activation rule; say when it fires, e.g. `complex {}: activate(count = 1);` (1 of {m}: a discriminator) or `activate(count = 2, require = [a])`",
                    node.id, node.id
                ),
            );
        }
        if !converging {
            if let Some(first) = node.activation.first() {
                ctx.error(
                    &first.keyword,
                    format!(
                        "the complex gateway `{}` has {} incoming flow, so it never synchronises and an activation rule has nothing to count; remove the rule, or route more flows into `{}`",
                        node.id,
                        if m == 0 { "no".to_string() } else { m.to_string() },
                        node.id
                    ),
                );
            }
            continue;
        }
        let sources: Vec<String> = node
            .incoming
            .iter()
            .map(|&f| model.nodes[model.flows[f].source].id.to_string())
            .collect();
        for triple in &node.activation {
            let Some(count_lit) = &triple.count else {
                continue;
            };
            match count_lit.base10_parse::<usize>() {
                Ok(count) if count < 1 || count > m => ctx.error(
                    count_lit,
                    format!(
                        "`count = {count}` is out of range: `{}` has {m} incoming flows, so a count is between 1 and {m}",
                        node.id
                    ),
                ),
                Ok(count) if count < triple.require.len() => ctx.error(
                    count_lit,
                    format!(
                        "`count = {count}` is less than the {} required flows; every required flow counts as an arrival, so raise the count to at least {}",
                        triple.require.len(),
                        triple.require.len()
                    ),
                ),
                Ok(_) => {}
                Err(e) => ctx.push(e),
            }
            for (i, required) in triple.require.iter().enumerate() {
                if triple.require[..i].contains(required) {
                    ctx.error(
                        required,
                        format!("`{required}` is required twice in this activation"),
                    );
                } else if !sources.iter().any(|s| required == s) {
                    let hint =
                        suggest::nearest(&required.to_string(), sources.iter().map(String::as_str))
                            .map(|s| format!("did you mean `{s}`? "))
                            .unwrap_or_default();
                    ctx.error(
                        required,
                        format!(
                            "`{required}` does not flow into `{}`; a required flow is named by its source, one of: {} — {hint}",
                            node.id,
                            sources.join(", ")
                        )
                        .trim_end_matches([' ', '—'])
                        .to_string(),
                    );
                }
            }
        }
    }
}
