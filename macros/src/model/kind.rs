//! Each declaration's kind, from its keyword, handler and spec: one function per
//! family of elements (starts, ends, tasks and gateways, boundaries, catches and
//! throws). The parts a declaration has beside its kind are in `parts.rs`.

use syn::Ident;

use super::ir::{Kind, ScopeKind};
use crate::ctx::Ctx;
use crate::parse::{EventTrigger, NodeAst};
use crate::suggest;
use crate::symbol::{
    BOUNDARY, CALL, CANCEL, CATCH, COMPENSATION, COMPLEX, CONDITION, ELEMENTS, END, ERROR,
    ESCALATION, EVENT_BASED, EVENT_SUBPROCESS, EXCLUSIVE, INCLUSIVE, INSTANTIATE, LINK, MESSAGE,
    NON_INTERRUPTING, PARALLEL, RECEIVE, SIGNAL, START, SUBPROCESS, TASK, TERMINATE, THROW, TIMER,
    TRANSACTION, USER,
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
        CALL => call(ctx, decl)?,
        BOUNDARY => boundary(ctx, decl)?,
        CATCH | THROW => catch_or_throw(ctx, decl)?,
        _ => {
            unknown(ctx, decl);
            return None;
        }
    };
    super::parts::misplaced_parts(ctx, decl, kind);
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

/// A call activity, which needs its binding: the called process and its mappings.
fn call(ctx: &Ctx, decl: &NodeAst) -> Option<Kind> {
    let Some(binding) = &decl.handler else {
        ctx.error(
            &decl.id,
            format!(
                "call activity `{id}` names no process to call; bind one: `call {id} = SHIPPING(input = |data| ..., output = |data, child| ...);`",
                id = decl.id
            ),
        );
        return None;
    };
    match super::call::parts(binding) {
        Ok(_) => Some(Kind::Call),
        Err(error) => {
            ctx.push(error);
            None
        }
    }
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
