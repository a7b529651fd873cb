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
    for node in nodes.iter_mut() {
        if let Some(handler) = node.association {
            match names.iter().position(|x| handler == x) {
                Some(h) => node.handler_node = Some(h),
                None => unknown(
                    handler,
                    format!(
                        "unknown compensation handler `{handler}` for `{}`; declare it as a task marked for compensation: `task {handler} = handler: compensation;`",
                        node.id
                    ),
                ),
            }
        }
        if let Some(activity) = node.compensate.clone() {
            match names.iter().position(|x| activity == x) {
                Some(a) => node.compensate_target = Some(a),
                None => unknown(
                    &activity,
                    format!(
                        "unknown activity `{activity}` to compensate at `{}`; name an activity of this scope that has a compensation boundary, or write `compensation` alone to compensate every completed activity of the scope",
                        node.id
                    ),
                ),
            }
        }
    }
}
