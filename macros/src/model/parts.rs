//! The parts of a declaration beside its kind: what its kind does not take (a
//! misplaced handler, alternatives or spec), the markers after its `:` (soundness
//! markers, `spawn`), and the specs some kinds carry — an event, a complex gateway's
//! activation rule, a compensation throw's activity.

use syn::Ident;

use super::ir::{Kind, Marker};
use crate::ctx::Ctx;
use crate::parse::{self, ActivationAst, EventAst, NodeAst};
use crate::suggest;
use crate::symbol::{
    ACTIVATE, COMPENSATION, ERROR, LINK, MAY_DEADLOCK, MESSAGE, MULTI, RETRY, SIGNAL, SPAWN,
    TERMINATE, TIMEOUT,
};

/// The parts of a declaration its kind does not take: a handler (only a task's),
/// alternatives after `|` (only a complex gateway's), a `: spec` on an element
/// without one.
pub(super) fn misplaced_parts(ctx: &Ctx, decl: &NodeAst, kind: Kind) {
    if !matches!(kind, Kind::Task | Kind::Call) {
        if let Some(handler) = &decl.handler {
            ctx.error(
                handler,
                format!(
                    "{} takes no handler; only a `task` binds one with `=` — drop the handler, or make `{}` a task",
                    kind.describe_with_article(),
                    decl.id
                ),
            );
        }
    }
    // A task's markers (`: spawn`, `: multi`, or both joined by `|`) and policy
    // (`retry(..)`, `timeout(..)`: `policy_of`).
    if kind == Kind::Task && decl.spec.is_some() && task_markers_only(decl) {
        for spec in decl.spec.iter().chain(&decl.more).filter(|s| !is_policy(s)) {
            if let Some(args) = &spec.args {
                ctx.error(
                    args,
                    format!(
                        "`{}` takes no arguments: `task {} = handler: {};`",
                        spec.name, decl.id, spec.name
                    ),
                );
            }
        }
        return;
    }
    // `retry(..) | timeout(..)` alone (a call activity's, or misplaced: `check/policy.rs`
    // says where they go).
    let policy_only = decl.spec.iter().chain(&decl.more).all(is_policy);
    if kind != Kind::Complex && !policy_only {
        if let Some(extra) = decl.more.first() {
            ctx.error(
                &extra.name,
                format!(
                    "only a complex gateway's activation rule has alternatives joined by `|`; {} has one kind at most",
                    kind.describe_with_article()
                ),
            );
        }
    }
    if !matches!(
        kind,
        Kind::End
            | Kind::Terminate
            | Kind::Complex
            | Kind::InstantiatingGate { .. }
            | Kind::Compensate { .. }
            | Kind::CancelEnd
    ) && !kind.has_event()
    {
        if let Some(spec) = decl.spec.as_ref().filter(|s| !is_policy(s)) {
            if kind == Kind::Task && spec.name == COMPENSATION {
                // A compensation handler: `task refund = refund_card: compensation;`.
                if let Some(args) = &spec.args {
                    ctx.error(
                        args,
                        format!("`compensation` on a task takes no arguments: `task {id} = handler: compensation;` marks it a compensation handler, and the activity it undoes names it, `boundary undo on some_task: compensation -> {id};`", id = decl.id),
                    );
                }
                return;
            }
            if marker_of(decl, kind).is_some() {
                if let Some(args) = &spec.args {
                    ctx.error(
                        args,
                        format!(
                            "`{}` takes no arguments: `{} {}: {};`",
                            spec.name, decl.keyword, decl.id, spec.name
                        ),
                    );
                }
                return;
            }
            if spec.name == MULTI || spec.name == MAY_DEADLOCK {
                let right = if spec.name == MULTI {
                    format!("`multi` marks an exclusive merge that lets every token through on purpose (a multi-merge: what follows it runs once per token), `exclusive {id}: multi;` — {what} does not merge tokens (mark the exclusive gateway, task or user task where they meet)", id = decl.id, what = kind.describe_with_article())
                } else {
                    format!("`may_deadlock` marks a parallel or inclusive join that may wait for ever on purpose, `parallel {id}: may_deadlock;` — {what} does not wait for tokens", id = decl.id, what = kind.describe_with_article())
                };
                ctx.error(&spec.name, right);
                return;
            }
            if spec.name == SPAWN {
                ctx.error(
                    &spec.name,
                    format!(
                        "`spawn` marks a task whose handler runs on its own tokio task from the start, `task {id} = handler: spawn;` — {what} runs no handler of its own",
                        id = decl.id,
                        what = kind.describe_with_article(),
                    ),
                );
                return;
            }
            if spec.name == LINK {
                ctx.error(
                    &spec.name,
                    format!(
                        "{} cannot be a link: a link is a pair of elements of its own — end the path that jumps with `throw jump: link(\"name\");`, and go on where it lands from `catch landing: link(\"name\");`",
                        kind.describe_with_article(),
                    ),
                );
                return;
            }
            let id = &decl.id;
            let flow = format!("with a flow between it and `{id}`");
            let place = match spec.name.to_string().as_str() {
                MESSAGE => Some(format!("`catch` to wait for it, `receive` (a task) to wait for a message, `throw` to send it — {flow}")),
                SIGNAL => Some(format!("`catch` to wait for it, `throw` to send it — {flow}")),
                "timer" | "condition" => Some(format!("`catch` to wait for it — {flow}")),
                "error" | "escalation" => Some(format!(
                    "a `boundary` on the activity that raises it catches it, `boundary caught on some_task: {kw}(\"CODE\");`; a task raises it by returning `Err(TaskError::{raise}(\"CODE\"{more}))`, a path by ending in `end failed: {kw}(\"CODE\");`",
                    kw = spec.name,
                    raise = if spec.name == ERROR { "bpmn" } else { "escalate" },
                    more = if spec.name == ERROR { ", ..." } else { "" },
                )),
                _ => None,
            };
            if let Some(place) = place {
                ctx.error(
                    &spec.name,
                    format!(
                        "{} takes no event; {} `{}(...)` goes on an element of its own — {place}",
                        kind.describe_with_article(),
                        if spec.name.to_string().starts_with('e') {
                            "an"
                        } else {
                            "a"
                        },
                        spec.name,
                    ),
                );
                return;
            }
            let mend = if spec.name == TERMINATE {
                format!(
                    "to end the process after `{}`, flow into a terminate end event: `end stop: terminate;` and `{} -> stop;`",
                    decl.id, decl.id
                )
            } else {
                "remove it".to_string()
            };
            ctx.error(
                &spec.name,
                format!(
                    "{} takes no `: {}`; only an end event has a kind (`end name: terminate;`) — {mend}",
                    kind.describe_with_article(),
                    spec.name,
                ),
            );
        }
    }
}

/// A soundness marker after the `:` of an element: `multi` on an exclusive gateway
/// (or on a task or user task with several incoming flows, an implicit merge),
/// `may_deadlock` on a parallel or inclusive join.
pub(super) fn marker_of(decl: &NodeAst, kind: Kind) -> Option<Marker> {
    if kind == Kind::Task && task_markers_only(decl) {
        let multi = decl.spec.iter().chain(&decl.more).any(|s| s.name == MULTI);
        return multi.then_some(Marker::Multi);
    }
    let spec = decl.spec.as_ref()?;
    match kind {
        Kind::Exclusive | Kind::Task | Kind::User if spec.name == MULTI => Some(Marker::Multi),
        Kind::Parallel | Kind::Inclusive if spec.name == MAY_DEADLOCK => Some(Marker::MayDeadlock),
        _ => None,
    }
}

/// Whether every spec of a task is one of its markers, `spawn` or `multi`, or its
/// policy.
fn task_markers_only(decl: &NodeAst) -> bool {
    decl.spec
        .iter()
        .chain(&decl.more)
        .all(|spec| spec.name == SPAWN || spec.name == MULTI || is_policy(spec))
}

/// Whether a spec is part of a retry policy: `retry(..)` or `timeout(..)`.
fn is_policy(spec: &parse::Spec) -> bool {
    spec.name == RETRY || spec.name == TIMEOUT
}

/// The `retry(..)` and `timeout(..)` after an element's `:`, parsed (on any kind:
/// `check/policy.rs` says where they do not belong).
pub(super) fn policy_of(ctx: &Ctx, decl: &NodeAst) -> Option<parse::policy::PolicyAst> {
    let mut specs = decl.spec.iter().chain(&decl.more).filter(|s| is_policy(s));
    let first = specs.next()?;
    let mut policy = parse::policy::PolicyAst {
        at: first.name.span(),
        retry: None,
        timeout: None,
    };
    for spec in std::iter::once(first).chain(specs) {
        let twice = |what: &str| {
            ctx.error(
                &spec.name,
                format!("`{what}` is given twice on `{}`; keep one", decl.id),
            )
        };
        if spec.name == RETRY {
            if policy.retry.is_some() {
                twice(RETRY);
                continue;
            }
            match parse::policy::retry(spec) {
                Ok(retry) => policy.retry = Some(retry),
                Err(error) => ctx.push(error),
            }
        } else {
            if policy.timeout.is_some() {
                twice(TIMEOUT);
                continue;
            }
            match parse::policy::timeout(spec) {
                Ok(timeout) => policy.timeout = Some(timeout),
                Err(error) => ctx.push(error),
            }
        }
    }
    Some(policy)
}

/// `task t = h: spawn;` (also `: multi | spawn`): the handler runs on its track's
/// own tokio task from its first poll, not on the instance's loop.
pub(super) fn spawns(decl: &NodeAst, kind: Kind) -> bool {
    kind == Kind::Task
        && task_markers_only(decl)
        && decl.spec.iter().chain(&decl.more).any(|s| s.name == SPAWN)
}

/// The event of an element that carries one, parsed; `None` (with the error) when it
/// does not parse.
pub(super) fn event_of(ctx: &Ctx, decl: &NodeAst, kind: Kind) -> Option<EventAst> {
    if !kind.has_event() {
        return None;
    }
    let Some(spec) = &decl.spec else {
        ctx.error(
            &decl.id,
            format!(
                "receive task `{}` needs its message: `receive {}: message(\"name\", key = |data| data.id.clone());`",
                decl.id, decl.id
            ),
        );
        return None;
    };
    parse::event(spec).map_err(|e| ctx.push(e)).ok()
}

/// A complex gateway's activation triples, each `activate(...)` parsed; errors for
/// anything else after the `:`. A triple that does not parse is kept as a placeholder
/// (no count, nothing required), so the gateway does not also read as having no rule.
pub(super) fn activation_of(ctx: &Ctx, decl: &NodeAst, kind: Kind) -> Vec<ActivationAst> {
    if kind != Kind::Complex {
        return Vec::new();
    }
    let placeholder = |spec: &parse::Spec| ActivationAst {
        keyword: spec.name.clone(),
        count: None,
        require: Vec::new(),
        when: None,
    };
    let specs = decl.spec.iter().chain(&decl.more);
    specs
        .map(|spec| {
            if spec.name != ACTIVATE {
                let hint = suggest::hint(&spec.name.to_string(), ["activate"]);
                ctx.error(
                    &spec.name,
                    format!(
                        "unknown activation `{}`; {hint}a complex gateway's rule is one or more `activate(count = N, require = [a], when = |data| ...)` joined by `|`",
                        spec.name
                    ),
                );
                return placeholder(spec);
            }
            parse::activation(spec).unwrap_or_else(|e| {
                ctx.push(e);
                placeholder(spec)
            })
        })
        .collect()
}

/// The activity a compensation throw names, `compensation(charge)`; `None` for the
/// whole scope (`compensation`) or when the argument is not one name (reported).
pub(super) fn compensated_activity(ctx: &Ctx, decl: &NodeAst, kind: Kind) -> Option<Ident> {
    if !matches!(kind, Kind::Compensate { .. }) {
        return None;
    }
    let spec = decl.spec.as_ref()?;
    let args = spec.args.as_ref()?;
    let keyword = &decl.keyword;
    let id = &decl.id;
    let form = format!("`{keyword} {id}: compensation;` compensates every completed activity of its scope, `{keyword} {id}: compensation(some_task);` one activity");
    if args.is_empty() {
        ctx.error_at(
            spec.close,
            format!("`compensation()` has empty parentheses; {form}"),
        );
        return None;
    }
    match syn::parse2::<Ident>(args.clone()) {
        Ok(activity) => Some(activity),
        Err(_) => {
            ctx.error(
                args,
                format!("a compensation throw names at most one activity, by its id; {form}"),
            );
            None
        }
    }
}

/// A task's BPMN type from its `kind(..)`; an error on anything but a task.
pub(super) fn element_of(ctx: &Ctx, decl: &NodeAst, kind: Kind) -> Option<&'static str> {
    let (keyword, what) = decl.kind.as_ref()?;
    if kind != Kind::Task {
        ctx.error(
            keyword,
            format!(
                "`kind(..)` gives a task's type for the pictures, and `{}` is {}; leave it out",
                decl.id,
                kind.describe_with_article()
            ),
        );
        return None;
    }
    parse::label::TASK_KINDS
        .iter()
        .find(|(k, _)| what == k)
        .map(|(_, tag)| *tag)
}
