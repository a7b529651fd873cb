//! Each declaration's kind, from its keyword, handler and spec: one function per
//! family of elements (starts, ends, tasks and gateways, boundaries, catches and
//! throws), then the parts a declaration has that its kind does not take.

use syn::Ident;

use super::ir::{Kind, Marker, ScopeKind};
use crate::ctx::Ctx;
use crate::parse::{self, ActivationAst, EventAst, EventTrigger, NodeAst};
use crate::suggest;
use crate::symbol::{
    ACTIVATE, BOUNDARY, CANCEL, CATCH, COMPENSATION, COMPLEX, CONDITION, ELEMENTS, END, ERROR,
    ESCALATION, EVENT_BASED, EVENT_SUBPROCESS, EXCLUSIVE, INCLUSIVE, INSTANTIATE, LINK,
    MAY_DEADLOCK, MESSAGE, MULTI, NON_INTERRUPTING, PARALLEL, RECEIVE, SIGNAL, START, SUBPROCESS,
    TASK, TERMINATE, THROW, TIMER, TRANSACTION, USER,
};

/// The node's kind from its keyword, handler and spec; `None` (with an error) when
/// they do not fit together.
pub(super) fn of(ctx: &Ctx, decl: &NodeAst, scope_kind: ScopeKind) -> Option<Kind> {
    let kind = match decl.keyword.to_string().as_str() {
        START => start(ctx, decl, scope_kind)?,
        END => end(ctx, decl),
        TASK => task(ctx, decl)?,
        EXCLUSIVE => Kind::Exclusive,
        PARALLEL => Kind::Parallel,
        INCLUSIVE => Kind::Inclusive,
        COMPLEX => Kind::Complex,
        EVENT_BASED => event_gate(ctx, decl)?,
        USER => Kind::User,
        RECEIVE => Kind::Receive,
        SUBPROCESS | TRANSACTION => Kind::SubProcess,
        EVENT_SUBPROCESS => Kind::EventSubProcess,
        BOUNDARY => boundary(ctx, decl)?,
        CATCH | THROW => catch_or_throw(ctx, decl)?,
        _ => {
            unknown(ctx, decl);
            return None;
        }
    };
    misplaced_parts(ctx, decl, kind);
    Some(kind)
}

/// A start event: none, or started by a message, signal or timer — in an event
/// sub-process by any trigger, in a sub-process by none.
fn start(ctx: &Ctx, decl: &NodeAst, scope_kind: ScopeKind) -> Option<Kind> {
    Some(match () {
        _ if scope_kind == ScopeKind::EventSubProcess => event_sub_start(ctx, decl)?,
        _ if scope_kind == ScopeKind::SubProcess => match &decl.spec {
            None => Kind::Start,
            Some(spec) => {
                ctx.error(
                    &spec.name,
                    format!(
                        "a sub-process starts when a token enters it, so its start event has no trigger: `start {id};` — to react to an event while the sub-process runs, give it an event sub-process: `event_subprocess on_event {{ start {id}: {kw}(...); ... }}`",
                        id = decl.id,
                        kw = spec.name,
                    ),
                );
                return None;
            }
        },
        _ if decl.spec.as_ref().is_some_and(|s| s.name == CONDITION) => {
            ctx.error(
                &decl.spec.as_ref().expect("checked").name,
                format!(
                    "a conditional start event belongs in an event sub-process, never at a process's top level: before the start there is no instance whose data it could read — wait for it in an event sub-process, `event_subprocess on_{id} {{ start {id}: condition(|data| ...); ... }}`, or start plainly and wait: `start begin;`, `catch {id}: condition(|data| ...);` and `begin -> {id};`",
                    id = decl.id
                ),
            );
            return None;
        }
        _ if decl
            .spec
            .as_ref()
            .is_some_and(|s| s.name == COMPENSATION || s.name == CANCEL) =>
        {
            let kw = &decl.spec.as_ref().expect("checked").name;
            let right = if kw == COMPENSATION {
                format!("a compensation start event belongs in an event sub-process inside a sub-process, which then compensates that sub-process: `subprocess booking {{ ...; event_subprocess undo {{ start {id}: compensation; ... }} }}`", id = decl.id)
            } else {
                "a transaction is cancelled by a cancel end event inside it, `end cancelled: cancel;`, and left through its cancel boundary, `boundary on_cancel on booking: cancel;` — no start event is cancel".to_string()
            };
            ctx.error(kw, right);
            return None;
        }
        _ if decl
            .spec
            .as_ref()
            .is_some_and(|s| s.name == ERROR || s.name == ESCALATION) =>
        {
            let kw = &decl.spec.as_ref().expect("checked").name;
            ctx.error(
                kw,
                format!(
                    "an {kw} start event belongs in an event sub-process, where it catches the {kw} thrown in the enclosing scope — `event_subprocess on_{kw} {{ start {id}: {kw}(\"CODE\"); ... }}`; a process's own start is `start {id};`, or started by a message, signal or timer",
                    id = decl.id
                ),
            );
            return None;
        }
        _ => match decl.spec.as_ref().map(|s| s.name.to_string()).as_deref() {
            None => Kind::Start,
            Some(MESSAGE) => Kind::StartEvent(EventTrigger::Message),
            Some(SIGNAL) => Kind::StartEvent(EventTrigger::Signal),
            Some(TIMER) => Kind::StartEvent(EventTrigger::Timer),
            Some(LINK) => {
                ctx.error(
                    &decl.spec.as_ref().expect("matched").name,
                    format!(
                        "a start event cannot be a link: a link jumps within a running instance, from a link throw to the link catch of its name — begin the process with `start {id};`, and where a path should jump back, end it with `throw jump: link(\"name\");` and go on from `catch landing: link(\"name\");`",
                        id = decl.id
                    ),
                );
                return None;
            }
            Some(other) => {
                ctx.error(
                    &decl.spec.as_ref().expect("matched").name,
                    format!(
                        "a start event is `start {id};`, or started by an event: `start {id}: message(\"name\");`, `signal(\"name\")` or `timer(...)` — not `{other}`",
                        id = decl.id
                    ),
                );
                return None;
            }
        },
    })
}

/// An end event: none, terminate, or throwing a signal, message, error or escalation.
fn end(ctx: &Ctx, decl: &NodeAst) -> Kind {
    match &decl.spec {
        Some(spec) if spec.name == TERMINATE && spec.args.is_none() => Kind::Terminate,
        Some(spec) if spec.name == SIGNAL => Kind::ThrowEnd(EventTrigger::Signal),
        Some(spec) if spec.name == MESSAGE => Kind::ThrowEnd(EventTrigger::Message),
        Some(spec) if spec.name == ERROR => Kind::ErrorEnd,
        Some(spec) if spec.name == ESCALATION => Kind::Escalate { end: true },
        Some(spec) if spec.name == COMPENSATION => Kind::Compensate { end: true },
        Some(spec) if spec.name == CANCEL => {
            if let Some(args) = &spec.args {
                ctx.error(
                    args,
                    format!("a cancel end event takes no arguments: `end {id}: cancel;` cancels the transaction it is in", id = decl.id),
                );
            }
            Kind::CancelEnd
        }
        Some(spec) if spec.name == LINK => {
            ctx.error(
                &spec.name,
                format!(
                    "an end event cannot be a link: at a link throw the path jumps on to the link catch of its name, so it does not end there — declare `{id}` as a link throw, `throw {id}: link({args});`",
                    id = decl.id,
                    args = spec.args.as_ref().map_or("\"name\"".to_string(), ToString::to_string),
                ),
            );
            // Checked on as the link throw it stands for, so its catch is paired.
            Kind::Throw(EventTrigger::Link)
        }
        Some(spec) => {
            ctx.error(
                &spec.name,
                format!(
                    "unknown end event kind `{}`; an end event is `end {id};`, `end {id}: terminate;`, `end {id}: signal(\"name\");`, `end {id}: message(\"name\", key = ...);`, `end {id}: error(\"CODE\");`, `end {id}: escalation(\"CODE\");`, `end {id}: compensation;` or, in a transaction, `end {id}: cancel;`",
                    spec.name,
                    id = decl.id
                ),
            );
            // Checked on as a plain end, so the flows into it raise nothing more.
            Kind::End
        }
        None => Kind::End,
    }
}

/// A task, which needs its handler.
fn task(ctx: &Ctx, decl: &NodeAst) -> Option<Kind> {
    Some(match &decl.handler {
        Some(_) => Kind::Task,
        None => {
            ctx.error(
                &decl.id,
                format!(
                    "task `{}` has no handler; bind one: `task {} = path::to::async_fn;` or `= |data| async move {{ ... }}`",
                    decl.id, decl.id
                ),
            );
            return None;
        }
    })
}

/// An event-based gateway: mid-flow, or instantiating (`: instantiate`).
fn event_gate(ctx: &Ctx, decl: &NodeAst) -> Option<Kind> {
    Some(match &decl.spec {
        None => Kind::EventGate,
        Some(spec) if spec.name == INSTANTIATE => {
            let args = spec.args.as_ref().map(|a| a.to_string());
            match args.as_deref() {
                None => Kind::InstantiatingGate { parallel: false },
                Some(PARALLEL) => Kind::InstantiatingGate { parallel: true },
                Some(other) => {
                    let id = &decl.id;
                    let kinds = format!(
                        "write `event_based {id}: instantiate;` (each message for one of its arms starts an instance on that arm) or `event_based {id}: instantiate(parallel);` (the first message starts an instance, which then waits for a message on every other arm)"
                    );
                    match spec.args.as_ref().filter(|a| !a.is_empty()) {
                        Some(args) => ctx.error(
                            args,
                            format!("unknown `instantiate` argument `{other}`; {kinds}"),
                        ),
                        None => ctx.error_at(
                            spec.close,
                            format!("`instantiate()` has empty parentheses; {kinds}"),
                        ),
                    }
                    return None;
                }
            }
        }
        Some(spec) => {
            ctx.error(
                &spec.name,
                format!(
                    "unknown event-based gateway kind `{}`; an event-based gateway is `event_based {id};` mid-flow (the first of its arms' events chooses the path), or `event_based {id}: instantiate;` / `event_based {id}: instantiate(parallel);` with no incoming flow, to start instances of a deployed process on its arms' messages",
                    spec.name,
                    id = decl.id
                ),
            );
            return None;
        }
    })
}

/// A boundary event, with the event it catches.
fn boundary(ctx: &Ctx, decl: &NodeAst) -> Option<Kind> {
    let trigger = match decl.spec.as_ref().map(|s| s.name.to_string()).as_deref() {
        Some(TIMER) => EventTrigger::Timer,
        Some(MESSAGE) => EventTrigger::Message,
        Some(SIGNAL) => EventTrigger::Signal,
        Some(CONDITION) => EventTrigger::Condition,
        Some(ERROR) => EventTrigger::Error,
        Some(ESCALATION) => EventTrigger::Escalation,
        Some(COMPENSATION) => EventTrigger::Compensation,
        Some(CANCEL) => EventTrigger::Cancel,
        _ => {
            let id = &decl.id;
            let activity = decl
                .attached
                .as_ref()
                .map_or("some_task".to_string(), Ident::to_string);
            let events = "a timer, message, signal, condition, error, escalation, compensation or (on a transaction) cancel";
            let example = format!("`boundary {id} on {activity}: timer(Duration::from_secs(60));`");
            match &decl.spec {
                None => ctx.error(
                    id,
                    format!("`boundary {id}` needs the event it catches: {events}, e.g. {example}"),
                ),
                Some(spec) if spec.name == LINK => ctx.error(
                    &spec.name,
                    format!("a boundary event cannot be a link: a link catch is entered only by its link throws, never from an activity — to leave `{activity}` on an event, catch {events}; to jump, end a path with `throw {id}: link(...);`"),
                ),
                Some(spec) => {
                    let known = ["timer", "message", "signal", "condition", "error", "escalation", "compensation", "cancel"];
                    let hint = suggest::hint(&spec.name.to_string(), known);
                    ctx.error(
                        &spec.name,
                        format!("unknown event `{}`; {hint}a boundary event catches {events}, e.g. {example}", spec.name),
                    );
                }
            }
            return None;
        }
    };
    Some(Kind::Boundary {
        interrupting: decl.non_interrupting.is_none(),
        trigger,
    })
}

/// An intermediate catch or throw event, with its trigger (an escalation throw is
/// its own kind).
fn catch_or_throw(ctx: &Ctx, decl: &NodeAst) -> Option<Kind> {
    let keyword = decl.keyword.to_string();
    Some(match keyword.as_str() {
        THROW if decl.spec.as_ref().is_some_and(|s| s.name == ESCALATION) => {
            Kind::Escalate { end: false }
        }
        THROW if decl.spec.as_ref().is_some_and(|s| s.name == COMPENSATION) => {
            Kind::Compensate { end: false }
        }
        _ => {
            let trigger = match decl.spec.as_ref().map(|s| s.name.to_string()).as_deref() {
                Some(MESSAGE) => EventTrigger::Message,
                Some(SIGNAL) => EventTrigger::Signal,
                Some(TIMER) if keyword == CATCH => EventTrigger::Timer,
                Some(LINK) => EventTrigger::Link,
                Some(CONDITION) if keyword == CATCH => EventTrigger::Condition,
                _ => {
                    let id = &decl.id;
                    let (what, known, example): (_, &[&str], _) = if keyword == CATCH {
                        (
                            "an event to wait for",
                            &["message", "signal", "timer", "condition", "link"],
                            format!("`catch {id}: message(\"payment\", key = |data| data.id.clone());`, `catch {id}: signal(\"alarm\");` or `catch {id}: timer(Duration::from_secs(30));`"),
                        )
                    } else {
                        (
                            "an event to send",
                            &["message", "signal", "escalation", "compensation", "link"],
                            format!("`throw {id}: signal(\"alarm\");` or `throw {id}: message(\"request\", key = |data| data.id.clone());`"),
                        )
                    };
                    match &decl.spec {
                        None => ctx.error(id, format!("`{keyword} {id}` needs {what}: {example}")),
                        Some(spec) if spec.name == TIMER || spec.name == CONDITION => ctx.error(
                            &spec.name,
                            format!("a throw event cannot send a {kw}: a {kw} is only waited for — to wait, declare `catch {id}: {kw}(...);`; a throw sends a signal, a message, an escalation or a link: {example}", kw = spec.name),
                        ),
                        Some(spec) if spec.name == COMPENSATION && keyword == CATCH => ctx.error(
                            &spec.name,
                            format!("compensation is not waited for mid-path: an activity's compensation boundary names the handler that undoes it, `boundary undo on some_task: compensation -> handler;`, and a path throws it, `throw {id}: compensation;` (every completed activity of the scope) or `compensation(some_task)`"),
                        ),
                        Some(spec) if spec.name == CANCEL => ctx.error(
                            &spec.name,
                            format!("a transaction is cancelled by its cancel end event, `end {id}: cancel;`, and left through its cancel boundary, `boundary {id} on booking: cancel;` — there is no intermediate cancel event"),
                        ),
                        Some(spec) if spec.name == ERROR && keyword == THROW => ctx.error(
                            &spec.name,
                            format!("an error ends its path, so only an end event throws one: `end {id}: error(\"CODE\");` — a task raises one by returning `Err(TaskError::bpmn(\"CODE\", ...))`; an error boundary on the activity catches it"),
                        ),
                        Some(spec) if spec.name == ERROR || spec.name == ESCALATION => ctx.error(
                            &spec.name,
                            format!(
                                "an {kw} is not waited for mid-path: it is caught by a boundary event on the activity that raises it — `boundary {id} on some_task: {kw}(\"CODE\");`, and flow on from `{id}`",
                                kw = spec.name
                            ),
                        ),
                        Some(spec) => {
                            let hint = suggest::hint(&spec.name.to_string(), known.iter().copied());
                            ctx.error(
                                &spec.name,
                                format!("unknown event `{}`; {hint}`{keyword} {id}` needs {what}: {example}", spec.name),
                            );
                        }
                    }
                    return None;
                }
            };
            if keyword == CATCH {
                Kind::Catch(trigger)
            } else {
                Kind::Throw(trigger)
            }
        }
    })
}

/// An unknown element keyword: the nearest known one, and every one.
fn unknown(ctx: &Ctx, decl: &NodeAst) {
    let keyword = decl.keyword.to_string();
    let hint = suggest::hint(&keyword, ELEMENTS.iter().copied());
    ctx.error(
        &decl.keyword,
        format!(
            "unknown element kind `{keyword}`; {hint}expected one of: {}",
            ELEMENTS.join(", ")
        ),
    );
}

/// The parts of a declaration its kind does not take: a handler (only a task's),
/// alternatives after `|` (only a complex gateway's), a `: spec` on an element
/// without one.
fn misplaced_parts(ctx: &Ctx, decl: &NodeAst, kind: Kind) {
    if !matches!(kind, Kind::Task) {
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
    if kind != Kind::Complex {
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
        if let Some(spec) = &decl.spec {
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
    let spec = decl.spec.as_ref()?;
    match kind {
        Kind::Exclusive | Kind::Task | Kind::User if spec.name == MULTI => Some(Marker::Multi),
        Kind::Parallel | Kind::Inclusive if spec.name == MAY_DEADLOCK => Some(Marker::MayDeadlock),
        _ => None,
    }
}

/// The start event of an event sub-process: its trigger, interrupting unless marked.
fn event_sub_start(ctx: &Ctx, decl: &NodeAst) -> Option<Kind> {
    let id = &decl.id;
    let triggers = "a message, signal, timer, condition, error or escalation";
    let example = format!("`start {id}: message(\"cancel\", key = |data| data.id.clone());`");
    let trigger = match decl.spec.as_ref().map(|s| s.name.to_string()).as_deref() {
        Some(MESSAGE) => EventTrigger::Message,
        Some(SIGNAL) => EventTrigger::Signal,
        Some(TIMER) => EventTrigger::Timer,
        Some(CONDITION) => EventTrigger::Condition,
        Some(ERROR) => EventTrigger::Error,
        Some(ESCALATION) => EventTrigger::Escalation,
        Some(COMPENSATION) => {
            if let Some(marker) = &decl.non_interrupting {
                ctx.error(
                    marker,
                    format!("a compensation event sub-process runs when its sub-process, completed, is compensated — nothing of it is still running to interrupt or not: `start {id}: compensation;`"),
                );
            }
            return Some(Kind::EventSubStart {
                trigger: EventTrigger::Compensation,
                interrupting: true,
            });
        }
        None => {
            ctx.error(
                id,
                format!(
                    "an event sub-process is started by an event, so its start event names one — {triggers}, e.g. {example} (add `non_interrupting` before the event to run beside the rest of the scope instead of cancelling it)"
                ),
            );
            return None;
        }
        Some(NON_INTERRUPTING) => {
            ctx.error(
                &decl.spec.as_ref().expect("matched").name,
                format!("`non_interrupting` marks the trigger that follows it, and none does: write it before the event, e.g. `start {id}: non_interrupting signal(\"ping\");`"),
            );
            return None;
        }
        Some(other) => {
            let known = [
                "message",
                "signal",
                "timer",
                "condition",
                "error",
                "escalation",
            ];
            let hint = suggest::hint(other, known);
            ctx.error(
                &decl.spec.as_ref().expect("matched").name,
                format!("an event sub-process cannot start on `{other}`; {hint}it starts on {triggers}, e.g. {example}"),
            );
            return None;
        }
    };
    Some(Kind::EventSubStart {
        trigger,
        interrupting: decl.non_interrupting.is_none(),
    })
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
