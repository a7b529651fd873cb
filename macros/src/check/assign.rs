//! A user task's assignment (`user u: assignee(..) | groups(..) | due(..) |
//! priority(..);`): only on a user task, the one activity a person works from a task
//! list; a due date after the task opens. The values' types are rustc's to check
//! (the emitted fn takes them as the engine does).

use crate::ctx::Ctx;
use crate::model::{Kind, Model};
use crate::parse::assign::Value;

pub fn check(ctx: &Ctx, model: &Model) {
    for node in &model.nodes {
        let Some(assign) = &node.assign else {
            continue;
        };
        if node.kind != Kind::User {
            ctx.error_at(
                assign.at,
                format!(
                    "`{id}` is {what}, which nobody works from a task list: `assignee(..)`, `groups(..)`, `due(..)` and `priority(..)` go on a user task, `user {id}: assignee(\"alice\") | groups(\"finance\");` — drop them here, or make `{id}` a user task",
                    id = node.id,
                    what = node.kind.describe_with_article(),
                ),
            );
            continue;
        }
        if let Some(Value::Constant(due)) = &assign.due {
            if due.millis == 0 {
                ctx.error_at(
                    due.span,
                    format!("a zero due time makes `{}` overdue as it opens: give how long after it opens it is due, `due(2d)`, or drop `due(..)` for a task with no due date", node.id),
                );
            }
        }
        if let Some(Value::Constant(groups)) = &assign.groups {
            let mut seen = Vec::new();
            for group in groups {
                if let syn::Expr::Lit(syn::ExprLit {
                    lit: syn::Lit::Str(name),
                    ..
                }) = group
                {
                    if seen.contains(&name.value()) {
                        ctx.error(
                            name,
                            format!(
                                "the group \"{}\" is named twice on `{}`; keep one",
                                name.value(),
                                node.id
                            ),
                        );
                    }
                    seen.push(name.value());
                }
            }
        }
    }
}
