//! Compensation's names resolved: each compensation boundary's handler (its
//! association, `-> refund`) and each compensation throw's activity
//! (`compensation(charge)`). Whether they fit — a handler marked as one, an activity
//! in the throw's scope with something to compensate — is `check::compensation`'s.

use super::ir::Node;
use crate::ctx::Ctx;
use crate::suggest;

pub(super) fn resolve(ctx: &Ctx, nodes: &mut [Node]) {
    let names: Vec<String> = nodes.iter().map(|n| n.id.to_string()).collect();
    let unknown = |name: &syn::Ident, what: String| {
        let hint = suggest::nearest(&name.to_string(), names.iter().map(String::as_str))
            .map(|x| format!(" — {}", suggest::did_you_mean(x)))
            .unwrap_or_default();
        ctx.error(name, format!("{what}{hint}"));
    };
    for n in 0..nodes.len() {
        if let Some(handler) = nodes[n].association {
            match names.iter().position(|x| handler == x) {
                Some(h) => nodes[n].handler_node = Some(h),
                None => unknown(
                    handler,
                    format!(
                        "unknown compensation handler `{handler}` for `{}`; declare it as a task marked for compensation: `task {handler} = handler: compensation;`",
                        nodes[n].id
                    ),
                ),
            }
        }
        if let Some(activity) = nodes[n].compensate.clone() {
            match names.iter().position(|x| activity == x) {
                Some(a) => nodes[n].compensate_target = Some(a),
                None => unknown(
                    &activity,
                    format!(
                        "unknown activity `{activity}` to compensate at `{}`; name an activity of this scope that has a compensation boundary, or write `compensation` alone to compensate every completed activity of the scope",
                        nodes[n].id
                    ),
                ),
            }
        }
    }
}
