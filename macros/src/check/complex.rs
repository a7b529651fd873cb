//! Complex gateway rules (see ARCHITECTURE.md, "Joins"): a converging complex gateway has an
//! activation rule, only a converging one does, and every triple of the rule is
//! satisfiable on its own: 1 ≤ count ≤ M, count ≥ |required|, and every required flow
//! is a real incoming flow (named by its source).

use crate::ctx::Ctx;
use crate::model::{Kind, Model};
use crate::suggest;

pub fn check(ctx: &Ctx, model: &Model) {
    for node in model.nodes.iter().filter(|n| n.kind == Kind::Complex) {
        let m = node.incoming.len();
        let converging = m > 1;
        if converging && node.activation.is_empty() {
            let first = model.nodes[model.flows[node.incoming[0]].source].id;
            ctx.error(
                node.id,
                format!(
                    "the complex gateway `{id}` joins {m} flows but has no activation rule; say when it fires, e.g. `complex {id}: activate(count = 1);` (on the first arrival: a discriminator), `activate(count = {m})` (when all {m} have arrived) or `activate(count = 2, require = [{first}])` (2 of {m}, `{first}` among them)",
                    id = node.id,
                ),
            );
        }
        if !converging {
            if let Some(first) = node.activation.first() {
                ctx.error(
                    &first.keyword,
                    format!(
                        "the complex gateway `{}` has {} incoming flow, so it never synchronises and an activation rule has nothing to count (it only splits, like an inclusive gateway); remove the rule, or route more flows into `{}`",
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
                Ok(0) => ctx.error(
                    count_lit,
                    format!(
                        "`count = 0` would fire before any token arrived; a count is between 1 and {m}, the number of flows into `{}` (`count = 1` fires on the first arrival)",
                        node.id
                    ),
                ),
                Ok(count) if count > m => ctx.error(
                    count_lit,
                    format!(
                        "`count = {count}` can never be reached: only {m} flows come into `{}` ({}), so a count is between 1 and {m} (`count = {m}` waits for all of them)",
                        node.id,
                        sources.join(", ")
                    ),
                ),
                Ok(count) if count < triple.require.len() => ctx.error(
                    count_lit,
                    format!(
                        "`count = {count}` is less than the {} required flows ({}); every required flow counts as an arrival, so raise the count to at least {}",
                        triple.require.len(),
                        triple.require.iter().map(ToString::to_string).collect::<Vec<_>>().join(", "),
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
                        format!("`{required}` is required twice in this activation; name each required flow once — remove this one"),
                    );
                } else if !sources.iter().any(|s| required == s) {
                    let hint =
                        suggest::hint(&required.to_string(), sources.iter().map(String::as_str));
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
