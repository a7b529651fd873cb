//! Compensation and transaction rules (ARCHITECTURE.md, "Compile-time checks"):
//! a compensation boundary names its handler (`-> refund`), a task marked
//! `: compensation` in its scope, used by no other boundary, with no flows in or out
//! and no boundaries of its own; the boundary itself has no flows and always applies;
//! an activity has at most one; a compensation throw names an activity of its scope
//! that has something to compensate (or, naming none, its scope has one); a
//! compensation event sub-process sits directly in a sub-process, one at most; cancel
//! end events and cancel boundaries exist only on and in a transaction, and come
//! together.

use crate::ctx::Ctx;
use crate::model::{Kind, Model};
use crate::parse::EventTrigger;

pub fn check(ctx: &Ctx, model: &Model) {
    boundaries(ctx, model);
    handlers(ctx, model);
    throws(ctx, model);
    event_subprocesses(ctx, model);
    transactions(ctx, model);
}

/// A compensation boundary (its kind says so).
pub fn is_compensation_boundary(kind: Kind) -> bool {
    matches!(
        kind,
        Kind::Boundary {
            trigger: EventTrigger::Compensation,
            ..
        }
    )
}

/// A transaction's cancel boundary.
fn is_cancel_boundary(kind: Kind) -> bool {
    matches!(
        kind,
        Kind::Boundary {
            trigger: EventTrigger::Cancel,
            ..
        }
    )
}

/// The start of a compensation event sub-process.
fn is_compensation_start(kind: Kind) -> bool {
    matches!(
        kind,
        Kind::EventSubStart {
            trigger: EventTrigger::Compensation,
            ..
        }
    )
}

/// The scope whose completed activities a compensation throw in `scope` compensates:
/// out of event sub-processes, to the sub-process (or process) they run in — an
/// error event sub-process compensates its process, a compensation event
/// sub-process its sub-process.
pub fn compensation_scope(model: &Model, mut scope: Option<usize>) -> Option<usize> {
    while let Some(s) = scope.filter(|&s| model.nodes[s].kind == Kind::EventSubProcess) {
        scope = model.nodes[s].scope;
    }
    scope
}

/// Whether activity `a` has something a compensation throw would run: a compensation
/// boundary, or — a sub-process — a compensation event sub-process or an activity
/// inside with something to compensate.
pub fn compensable(model: &Model, a: usize) -> bool {
    let node = &model.nodes[a];
    if node
        .boundaries
        .iter()
        .any(|&b| is_compensation_boundary(model.nodes[b].kind))
    {
        return true;
    }
    node.kind == Kind::SubProcess
        && model.members(Some(a)).any(|m| {
            let inner = &model.nodes[m];
            (inner.kind == Kind::EventSubProcess
                && model
                    .members(Some(m))
                    .any(|s| is_compensation_start(model.nodes[s].kind)))
                || (inner.kind.is_activity() && compensable(model, m))
        })
}

fn boundaries(ctx: &Ctx, model: &Model) {
    for (n, node) in model.nodes.iter().enumerate() {
        let compensation = is_compensation_boundary(node.kind);
        if let Some(handler) = node.association.filter(|_| !compensation) {
            ctx.error(
                handler,
                format!(
                    "only a compensation boundary names a handler after `->`: `boundary {id} on some_task: compensation -> {handler};` — `{id}` is {what}; join it to `{handler}` with a flow statement, `{id} -> {handler};`",
                    id = node.id,
                    what = node.kind.describe_with_article(),
                ),
            );
        }
        if !compensation {
            continue;
        }
        if let Some(marker) = node.non_interrupting {
            ctx.error(
                marker,
                "a compensation boundary interrupts nothing: it applies after its activity completed, when compensation is thrown — remove `non_interrupting`",
            );
        }
        // (An event that did not parse is reported already.)
        if node.association.is_none() && node.event.is_some() {
            ctx.error(
                node.id,
                format!(
                    "compensation boundary `{id}` needs the handler that undoes its activity: `boundary {id} on some_task: compensation -> undo_it;` with `task undo_it = handler: compensation;`",
                    id = node.id
                ),
            );
        }
        for &f in &node.outgoing {
            let flow = &model.flows[f];
            ctx.error(
                flow.tokens(),
                format!(
                    "compensation boundary `{}` has no flows out (`{} -> {}`): it is joined to its handler by the association after `->`, and the handler runs when compensation is thrown — remove this flow",
                    node.id, node.id, flow.target_ident
                ),
            );
        }
        let Some(host) = node.attached_to else {
            continue;
        };
        let earlier = model.nodes[host]
            .boundaries
            .iter()
            .take_while(|&&b| b != n)
            .find(|&&b| is_compensation_boundary(model.nodes[b].kind));
        if let Some(&first) = earlier {
            ctx.error(
                node.id,
                format!(
                    "`{}` already has a compensation boundary, `{}`: an activity is undone by one handler — remove one (a handler that has several things to undo is a sub-process)",
                    model.nodes[host].id, model.nodes[first].id
                ),
            );
        }
        if model.nodes[host].for_compensation {
            ctx.error(
                node.id,
                format!(
                    "`{}` is a compensation handler, which is not compensated in turn — remove `{}`",
                    model.nodes[host].id, node.id
                ),
            );
        }
        let Some(h) = node.handler_node else {
            continue;
        };
        let handler = &model.nodes[h];
        let written = node.association.expect("a resolved handler was written");
        if !handler.for_compensation {
            let mend = if handler.kind == Kind::Task {
                format!("mark it: `task {} = ...: compensation;`", handler.id)
            } else {
                format!(
                    "declare a task for it, `task {} = handler: compensation;`",
                    handler.id
                )
            };
            ctx.error(
                written,
                format!(
                    "`{}` is {}, not a compensation handler — {mend}",
                    handler.id,
                    handler.kind.describe_with_article()
                ),
            );
        } else if handler.scope != node.scope {
            ctx.error(
                written,
                format!(
                    "compensation handler `{}` is declared in another scope than `{}`: a handler is declared beside the activity it undoes — move `task {} = ...: compensation;` next to `{}`",
                    handler.id,
                    node.id,
                    handler.id,
                    model.nodes[host].id
                ),
            );
        }
        let other = model.nodes[..n]
            .iter()
            .find(|o| is_compensation_boundary(o.kind) && o.handler_node == Some(h));
        if let Some(other) = other {
            ctx.error(
                written,
                format!(
                    "`{}` is the compensation handler of `{}` already: each activity has its own handler — declare another task for `{}`",
                    handler.id, other.id, node.id
                ),
            );
        }
    }
}

fn handlers(ctx: &Ctx, model: &Model) {
    for (h, node) in model.nodes.iter().enumerate() {
        if !node.for_compensation {
            continue;
        }
        for &f in node.incoming.iter().chain(&node.outgoing) {
            let flow = &model.flows[f];
            if flow.link {
                continue;
            }
            ctx.error(
                flow.tokens(),
                format!(
                    "`{}` is a compensation handler: it runs when compensation is thrown, joined to its activity by an association, never by flows — remove `{} -> {}`",
                    node.id, flow.source_ident, flow.target_ident
                ),
            );
        }
        if let Some(&b) = node.boundaries.first() {
            ctx.error(
                model.nodes[b].id,
                format!(
                    "compensation handler `{}` takes no boundary events: it is not on a path, so nothing could flow on from `{}` — handle the failure inside the handler, or let it fail the instance",
                    node.id, model.nodes[b].id
                ),
            );
        }
        let used = model
            .nodes
            .iter()
            .any(|b| is_compensation_boundary(b.kind) && b.handler_node == Some(h));
        if !used {
            ctx.error(
                node.id,
                format!(
                    "`{id}` is marked as a compensation handler, but no compensation boundary names it; attach one to the activity it undoes: `boundary undo on some_task: compensation -> {id};`",
                    id = node.id
                ),
            );
        }
    }
}

fn throws(ctx: &Ctx, model: &Model) {
    for node in &model.nodes {
        if !matches!(node.kind, Kind::Compensate { .. }) {
            continue;
        }
        let scope = compensation_scope(model, node.scope);
        let scope_name = scope.map_or_else(
            || "the process".to_string(),
            |s| format!("`{}`", model.nodes[s].id),
        );
        match (node.compensate.as_ref(), node.compensate_target) {
            (Some(written), Some(a)) => {
                let activity = &model.nodes[a];
                if !activity.kind.is_activity() || activity.for_compensation {
                    ctx.error(
                        written,
                        format!(
                            "`{}` is {}, which is not compensated: a compensation throw names an activity with a compensation boundary",
                            activity.id,
                            activity.kind.describe_with_article()
                        ),
                    );
                } else if activity.scope != scope {
                    ctx.error(
                        written,
                        format!(
                            "`{}` is not an activity of {scope_name}, the scope `{}` compensates: a compensation throw names an activity of its own scope (in an event sub-process, of the scope it runs in)",
                            activity.id, node.id
                        ),
                    );
                } else if !compensable(model, a) {
                    ctx.error(
                        written,
                        format!(
                            "`{a}` has nothing to compensate: give it a compensation boundary and handler, `boundary undo_{a} on {a}: compensation -> undo;` and `task undo = handler: compensation;`",
                            a = activity.id
                        ),
                    );
                }
            }
            (None, _) => {
                let any = model
                    .members(scope)
                    .any(|m| model.nodes[m].kind.is_activity() && compensable(model, m));
                if !any {
                    ctx.error(
                        node.id,
                        format!(
                            "`{}` compensates {scope_name}, but no activity there has a compensation boundary, so it would do nothing — attach one with its handler, `boundary undo on some_task: compensation -> undo;` and `task undo = handler: compensation;`",
                            node.id
                        ),
                    );
                }
            }
            // An unknown name, reported by the model.
            (Some(_), None) => {}
        }
    }
}

fn event_subprocesses(ctx: &Ctx, model: &Model) {
    for (s, node) in model.nodes.iter().enumerate() {
        if !is_compensation_start(node.kind) {
            continue;
        }
        let Some(esp) = node.scope else { continue };
        let host = model.nodes[esp].scope;
        match host.filter(|&h| model.nodes[h].kind == Kind::SubProcess) {
            None => ctx.error(
                node.id,
                format!(
                    "a compensation event sub-process compensates the sub-process it is written in, and `{}` is not directly in one — move it into the sub-process it undoes, `subprocess booking {{ ...; event_subprocess {} {{ start {}: compensation; ... }} }}`",
                    model.nodes[esp].id, model.nodes[esp].id, node.id
                ),
            ),
            Some(h) => {
                let earlier = model.nodes[..s].iter().find(|o| {
                    is_compensation_start(o.kind)
                        && o.scope.is_some_and(|e| model.nodes[e].scope == Some(h))
                });
                if let Some(first) = earlier {
                    ctx.error(
                        node.id,
                        format!(
                            "`{}` has a compensation event sub-process already (started at `{}`): a sub-process is compensated one way — merge them",
                            model.nodes[h].id, first.id
                        ),
                    );
                }
            }
        }
    }
}

fn transactions(ctx: &Ctx, model: &Model) {
    let in_transaction = |scope: Option<usize>| scope.filter(|&t| model.nodes[t].transaction);
    for (n, node) in model.nodes.iter().enumerate() {
        if node.kind == Kind::CancelEnd && in_transaction(node.scope).is_none() {
            let place = node.scope.map_or_else(
                || "the process".to_string(),
                |s| format!("`{}`", model.nodes[s].id),
            );
            ctx.error(
                node.id,
                format!(
                    "a cancel end event cancels the transaction it is written in, and {place} is not a transaction — declare the sub-process as `transaction name {{ ... }}`, or end with `end {}: error(\"CODE\");` to fail the scope",
                    node.id
                ),
            );
        }
        if is_cancel_boundary(node.kind) {
            if let Some(marker) = node.non_interrupting {
                ctx.error(
                    marker,
                    "a cancel boundary always interrupts: the cancelled transaction is over — remove `non_interrupting`",
                );
            }
            let Some(host) = node.attached_to else {
                continue;
            };
            if !model.nodes[host].transaction {
                ctx.error(
                    node.on.unwrap_or(node.id),
                    format!(
                        "a cancel boundary sits only on a transaction, and `{}` is {} — declare it `transaction {} {{ ... }}`, or catch an error instead",
                        model.nodes[host].id,
                        model.nodes[host].kind.describe_with_article(),
                        model.nodes[host].id
                    ),
                );
            } else if !model
                .members(Some(host))
                .any(|m| model.nodes[m].kind == Kind::CancelEnd)
            {
                ctx.error(
                    node.id,
                    format!(
                        "`{}` has no cancel end event, so `{}` could never fire — end a path in it with `end cancelled: cancel;`, or remove the boundary",
                        model.nodes[host].id, node.id
                    ),
                );
            }
            let earlier = model.nodes[host]
                .boundaries
                .iter()
                .take_while(|&&b| b != n)
                .find(|&&b| is_cancel_boundary(model.nodes[b].kind));
            if let Some(&first) = earlier {
                ctx.error(
                    node.id,
                    format!(
                        "`{}` has a cancel boundary already, `{}`: a transaction is left one way when cancelled — remove one",
                        model.nodes[host].id, model.nodes[first].id
                    ),
                );
            }
        }
        if node.transaction
            && model
                .members(Some(n))
                .any(|m| model.nodes[m].kind == Kind::CancelEnd)
            && !node
                .boundaries
                .iter()
                .any(|&b| is_cancel_boundary(model.nodes[b].kind))
        {
            ctx.error(
                node.id,
                format!(
                    "transaction `{id}` has a cancel end event but no cancel boundary to leave through when cancelled — add one, `boundary {id}_cancelled on {id}: cancel;`, and a flow from it",
                    id = node.id
                ),
            );
        }
    }
}
