//! Findings from an exploration, each with its witness: the choices (the flow each
//! gateway took, the boundary that fired) on the run the exploration found, and the
//! way to mend it.
//!
//! - deadlock: a marking where tokens remain, nothing can move, and no end was
//!   reached on the run: tokens wait at a parallel (or complex) join for ever;
//! - improper completion: the same, on a run that did reach an end: the scope
//!   finishes there while a token is left behind at a join;
//! - lack of synchronisation: two tokens at a merge that does not synchronise (an
//!   exclusive gateway, or any element with two incoming flows) at once — what
//!   follows it runs once per token; never at a merge marked `multi`, nor downstream
//!   of a doubling nobody declared earlier on the run (its echo); with multi-merges,
//!   looked for in the synchronised net (`Net::synchronised`);
//! - dead element: an element no run reaches, when the exploration was complete;
//!   reported where a dead path begins, not along all of it.
//!
//! An OR-join left waiting in a dead marking waits for a token stuck at another join:
//! that join is the fault reported (and the OR-join, if it never fires, as waiting
//! for it). A join marked `may_deadlock` is not reported, nor what is dead behind it,
//! nor an OR-join waiting for the token left at it.

use std::collections::VecDeque;

use super::explore::Exploration;
use super::net::{count, Label, Net, Place};
use super::{Class, Finding};
use crate::model::{Direction, Edges, Kind, Marker, Model};

/// `a -> b`, quoted.
pub fn flow_name(model: &Model, f: usize) -> String {
    let flow = &model.flows[f];
    format!(
        "`{} -> {}`",
        model.nodes[flow.source].id, model.nodes[flow.target].id
    )
}

fn list(items: &[String]) -> String {
    match items {
        [] => String::new(),
        [one] => one.clone(),
        [init @ .., last] => format!("{} and {last}", init.join(", ")),
    }
}

/// The choices made on the run to state `i`, as a parenthesised clause.
fn witness(net: &Net, ex: &Exploration, i: u32) -> String {
    let model = net.model;
    let starts = net.initial().len();
    let mut choices = Vec::new();
    for s in ex.path(i) {
        let state = &ex.states[s as usize];
        let node = model.nodes[state.node as usize].id;
        match &state.label {
            Label::Begin(start, flows) => {
                if net.options[*start].len() > 1 {
                    let flows: Vec<String> = flows.iter().map(|&f| flow_name(model, f)).collect();
                    choices.push(format!(
                        "the run starts at `{node}` and takes {}",
                        list(&flows)
                    ));
                } else if starts > 1 {
                    choices.push(format!("the run starts at `{node}`"));
                }
            }
            Label::Took(flows) => {
                let names: Vec<String> = flows.iter().map(|&f| flow_name(model, f)).collect();
                let only = if flows.len() < model.nodes[state.node as usize].outgoing.len()
                    && flows.len() > 1
                {
                    " only"
                } else {
                    ""
                };
                choices.push(format!("`{node}` takes {}{only}", list(&names)));
            }
            Label::Boundary(b) => {
                let verb = match model.nodes[*b].kind {
                    Kind::Boundary {
                        interrupting: true, ..
                    } => "interrupts",
                    _ => "fires on",
                };
                choices.push(format!("`{}` {verb} `{node}`", model.nodes[*b].id));
            }
            Label::Completed(flows) => {
                let names: Vec<String> = flows.iter().map(|&f| flow_name(model, f)).collect();
                match flows.len() < model.nodes[state.node as usize].outgoing.len() {
                    true => {
                        choices.push(format!("`{node}` ends normally and takes {}", list(&names)))
                    }
                    false => choices.push(format!("`{node}` ends normally")),
                }
            }
            Label::Clear | Label::Ended | Label::Pass => {}
        }
    }
    const SHOWN: usize = 10;
    if choices.is_empty() {
        return "on every run".to_string();
    }
    let skipped = choices.len().saturating_sub(SHOWN);
    let shown = choices[skipped..].join(", then ");
    if skipped > 0 {
        format!("e.g. after {skipped} earlier choices, {shown}")
    } else {
        format!("e.g. when {shown}")
    }
}

/// The findings of `ex`, `net`'s exploration; lack of synchronisation from `lacks`
/// (the same, or the synchronised net's when the scope has multi-merges).
pub fn findings(net: &Net, ex: &Exploration, lacks: (&Net, &Exploration)) -> Vec<Finding> {
    let mut out = Vec::new();
    let stuck = deadlocks(net, ex, &mut out);
    lack_of_sync(lacks.0, lacks.1, &mut out);
    if ex.complete {
        dead(net, ex, &stuck, &mut out);
    }
    out
}

/// Per dead marking, the joins holding tokens that are the fault: parallel joins (an
/// OR-join there waits for one of them). A complex gateway whose activation can no
/// longer hold is no deadlock: it fails the instance with `ActivationUnsatisfiable`,
/// a designed outcome. Returns the joins reported.
fn deadlocks(net: &Net, ex: &Exploration, out: &mut Vec<Finding>) -> Vec<usize> {
    let model = net.model;
    let mut reported = Vec::new();
    for &i in &ex.dead {
        let m = &ex.markings[i as usize];
        let mut joins: Vec<usize> = m
            .iter()
            .filter_map(|e| match net.places[(e >> 8) as usize] {
                Place::Flow(f) => Some(model.flows[f].target),
                _ => None,
            })
            .filter(|&j| model.nodes[j].kind == Kind::Parallel)
            .collect();
        joins.dedup();
        for j in joins {
            if reported.contains(&j) || matches!(model.nodes[j].marker, Some(Marker::MayDeadlock)) {
                continue;
            }
            reported.push(j);
            out.push(deadlock(net, ex, i, j));
        }
    }
    reported
}

fn deadlock(net: &Net, ex: &Exploration, i: u32, j: usize) -> Finding {
    let model = net.model;
    let m = &ex.markings[i as usize];
    let node = &model.nodes[j];
    let id = node.id;
    let marked: Vec<usize> = node
        .incoming
        .iter()
        .copied()
        .filter(|&f| net.flow_place[f].is_some_and(|p| count(m, p) > 0))
        .collect();
    let unmarked: Vec<usize> = node
        .incoming
        .iter()
        .copied()
        .filter(|f| !marked.contains(f))
        .collect();
    let path = ex.path(i);
    let ended = path
        .iter()
        .rev()
        .find(|&&s| ex.states[s as usize].label == Label::Ended)
        .map(|&s| model.nodes[ex.states[s as usize].node as usize].id);
    let witness = witness(net, ex, i);
    let have: Vec<String> = marked.iter().map(|&f| flow_name(model, f)).collect();
    let missing: Vec<String> = unmarked.iter().map(|&f| flow_name(model, f)).collect();
    let waits = format!("`{id}` waits for a token on each of its incoming flows");
    let cause = cause(net, ex, &path, j, &unmarked);
    let why = match cause {
        Some(Cause::Choice(c, kind)) => {
            let c_id = model.nodes[c].id;
            match kind {
                Kind::Exclusive => format!(
                    "but `{c_id}` is exclusive: it takes only one of its flows, so no token comes on {} ({witness}) — make `{id}` an exclusive merge if the paths are alternatives, or make `{c_id}` parallel if all of them should run",
                    list(&missing)
                ),
                Kind::EventGate => format!(
                    "but `{c_id}` is event-based: only the first of its events is taken, so no token comes on {} ({witness}) — make `{id}` an exclusive merge, which goes on after whichever event came",
                    list(&missing)
                ),
                _ => format!(
                    "but `{c_id}` may take only some of its flows, so no token comes on {} ({witness}) — make `{id}` an inclusive join, which waits only for the paths `{c_id}` took, or make `{c_id}` parallel",
                    list(&missing)
                ),
            }
        }
        Some(Cause::Boundary(host)) => format!(
            "but `{h}` ends either normally or through an interrupting boundary, never both, so no token comes on {} ({witness}) — make `{id}` an exclusive merge, which goes on after whichever way `{h}` ended",
            list(&missing),
            h = model.nodes[host].id,
        ),
        None => format!(
            "but it is left with a token on {} that no token on {} will ever pair ({witness}) — more tokens reach {} than reach the others: synchronise the paths that feed it",
            list(&have),
            list(&missing),
            list(&have)
        ),
    };
    let choices: Vec<(usize, Box<[usize]>)> = path
        .iter()
        .filter_map(|&s| match &ex.states[s as usize].label {
            Label::Took(flows) => Some((ex.states[s as usize].node as usize, flows.clone())),
            _ => None,
        })
        .collect();
    match ended {
        None => Finding {
            at: j,
            class: Class::Deadlock,
            message: format!("deadlock: {waits}, {why}"),
            choices,
        },
        Some(end) => Finding {
            at: j,
            class: Class::ImproperCompletion,
            choices,
            message: format!(
                "improper completion: the run reaches `{end}` while a token is left at `{id}` for ever: {waits}, {why}"
            ),
        },
    }
}

enum Cause {
    Choice(usize, Kind),
    /// The activity's normal end and its interrupting boundaries exclude each other.
    Boundary(usize),
}

/// The last choice on the run whose path not taken leads to one of the join's
/// missing flows.
fn cause(net: &Net, ex: &Exploration, path: &[u32], j: usize, missing: &[usize]) -> Option<Cause> {
    let model = net.model;
    let leads = |flows: &[usize]| {
        flows.iter().any(|&a| {
            if missing.contains(&a) {
                return true;
            }
            let target = model.flows[a].target;
            if target == j {
                return false;
            }
            let seen = model.reachable(&[target], Direction::Forward, Some(j), Edges::WithinScope);
            missing.iter().any(|&u| seen[model.flows[u].source])
        })
    };
    for &s in path.iter().rev() {
        let state = &ex.states[s as usize];
        let v = state.node as usize;
        match &state.label {
            Label::Took(taken) => {
                let other: Vec<usize> = model.nodes[v]
                    .outgoing
                    .iter()
                    .copied()
                    .filter(|f| !taken.contains(f))
                    .collect();
                if leads(&other) {
                    let kind = match model.nodes[v].kind {
                        k @ (Kind::Exclusive | Kind::EventGate) => k,
                        Kind::InstantiatingGate { .. } => Kind::EventGate,
                        _ => Kind::Inclusive,
                    };
                    return Some(Cause::Choice(v, kind));
                }
            }
            Label::Boundary(b)
                if matches!(
                    model.nodes[*b].kind,
                    Kind::Boundary {
                        interrupting: true,
                        ..
                    }
                ) && leads(&model.nodes[v].outgoing) =>
            {
                return Some(Cause::Boundary(v));
            }
            Label::Completed(_) => {
                let boundary_flows: Vec<usize> = model.nodes[v]
                    .boundaries
                    .iter()
                    .filter(|&&b| {
                        matches!(
                            model.nodes[b].kind,
                            Kind::Boundary {
                                interrupting: true,
                                ..
                            }
                        )
                    })
                    .flat_map(|&b| model.nodes[b].outgoing.iter().copied())
                    .collect();
                if leads(&boundary_flows) {
                    return Some(Cause::Boundary(v));
                }
            }
            _ => {}
        }
    }
    None
}

fn lack_of_sync(net: &Net, ex: &Exploration, out: &mut Vec<Finding>) {
    let model = net.model;
    for &(v, i) in &ex.doubled {
        let m = &ex.markings[i as usize];
        let node = &model.nodes[v];
        let id = node.id;
        let mut arriving = Vec::new();
        for &f in &node.incoming {
            if let Some(p) = net.flow_place[f] {
                for _ in 0..count(m, p) {
                    arriving.push(f);
                }
            }
        }
        let names: Vec<String> = arriving.iter().map(|&f| flow_name(model, f)).collect();
        let on = if arriving.len() >= 2 && arriving[0] == arriving[1] {
            format!("two tokens reach `{id}` on {} at once", names[0])
        } else {
            format!("tokens reach `{id}` on {} at once", list(&names))
        };
        let from = arriving
            .first()
            .zip(arriving.get(1))
            .and_then(|(&a, &b)| splitter(net, model.flows[a].source, model.flows[b].source, v))
            .map(|s| format!(" (both from {s})"))
            .unwrap_or_default();
        let witness = witness(net, ex, i);
        let mark = match node.kind {
            Kind::Task => format!(", or mark `{id}` itself: `task {id} = ...: multi;`"),
            Kind::User => format!(", or mark `{id}` itself: `user {id}: multi;`"),
            _ => String::new(),
        };
        // A multi-merge on the way of some of the tokens (not before them all) sends
        // on a token for each it passed: a join here would be left with the extra
        // ones, so that is no mend.
        let back: Vec<Vec<Option<usize>>> = arriving
            .iter()
            .map(|&f| distances(model, model.flows[f].source, v))
            .collect();
        let multi = net
            .nodes
            .iter()
            .copied()
            .filter(|&u| net.is_multi_merge(u) && back.iter().any(|d| d[u].is_none()))
            .filter_map(|u| Some((back.iter().filter_map(|d| d[u]).min()?, u)))
            .min()
            .map(|(_, u)| model.nodes[u].id);
        let message = if let Some(mm) = multi {
            let mend = match node.kind {
                Kind::Exclusive => {
                    format!("mark `{id}` a multi-merge too (`exclusive {id}: multi;`)")
                }
                Kind::Task => format!("mark `{id}` too (`task {id} = ...: multi;`)"),
                Kind::User => format!("mark `{id}` too (`user {id}: multi;`)"),
                _ => format!(
                    "merge them at an exclusive gateway marked as a multi-merge before `{id}`"
                ),
            };
            let join = match node.kind {
                Kind::Exclusive => format!("`{id}` one too"),
                _ => format!("wait at one before `{id}` too"),
            };
            let what = match node.kind {
                Kind::Exclusive => format!("what follows exclusive merge `{id}`"),
                _ => format!("`{id}`"),
            };
            format!(
                "lack of synchronisation: {on}{from}, so {what} runs once for each ({witness}) — `{mm}` is a multi-merge, which passes each of its tokens on, so a join would be left with the extra ones: if every token should pass on its own, {mend}; to wait for all of them, make `{mm}` a parallel join, and {join}"
            )
        } else if node.kind == Kind::Exclusive {
            format!(
                "lack of synchronisation: {on}{from}, so what follows exclusive merge `{id}` runs once for each ({witness}) — make `{id}` a parallel join to wait for all of them, or, if every token should pass on its own, mark it a multi-merge: `exclusive {id}: multi;`"
            )
        } else {
            format!(
                "lack of synchronisation: {on}{from}, so `{id}` runs once for each ({witness}) — wait for all of them at a parallel join before `{id}`, or, if every token should pass on its own, merge them at an exclusive gateway marked as a multi-merge (`exclusive merged: multi;`) before `{id}`{mark}"
            )
        };
        out.push(Finding {
            at: v,
            class: Class::LackOfSync,
            message,
            choices: Vec::new(),
        });
    }
}

/// The nearest element both `a` and `b` come from that sends tokens down several
/// flows at once, described.
fn splitter(net: &Net, a: usize, b: usize, merge: usize) -> Option<String> {
    let model = net.model;
    let da = distances(model, a, merge);
    let db = distances(model, b, merge);
    let forks = |v: usize| {
        net.options[v].iter().any(|o| o.len() >= 2)
            || model.nodes[v].boundaries.iter().any(|&bd| {
                matches!(
                    model.nodes[bd].kind,
                    Kind::Boundary {
                        interrupting: false,
                        ..
                    }
                )
            })
    };
    let best = (0..model.nodes.len())
        .filter(|&v| forks(v))
        .filter_map(|v| Some((da[v]?.max(db[v]?), v)))
        .min()?
        .1;
    let node = &model.nodes[best];
    let id = node.id;
    Some(match node.kind {
        Kind::Parallel => format!("parallel `{id}`"),
        Kind::Inclusive => format!("inclusive `{id}`"),
        Kind::Complex => format!("complex `{id}`"),
        _ if net.options[best].iter().any(|o| o.len() >= 2) => {
            format!("`{id}`, whose outgoing flows run side by side")
        }
        _ => format!("`{id}` and its non-interrupting boundary"),
    })
}

/// Distances walking back from `from` within its scope, never through `barrier`.
fn distances(model: &Model, from: usize, barrier: usize) -> Vec<Option<usize>> {
    let mut d = vec![None; model.nodes.len()];
    let mut queue = VecDeque::from([from]);
    d[from] = Some(0);
    while let Some(v) = queue.pop_front() {
        let next = d[v].expect("queued nodes have a distance") + 1;
        for w in model.neighbours(v, Direction::Backward, Edges::WithinScope) {
            if w != barrier && d[w].is_none() {
                d[w] = Some(next);
                queue.push_back(w);
            }
        }
    }
    d
}

/// Dead elements, where a dead path begins: an element no run reaches, one of whose
/// predecessors runs, or is a join reported for a deadlock. An OR-join (or complex
/// join) that never fires because it waits for a token held at a parallel join that
/// never takes it is that join's echo: behind a reported deadlock it says so, behind a
/// join marked `may_deadlock` it is not reported (the waiting is declared).
fn dead(net: &Net, ex: &Exploration, stuck: &[usize], out: &mut Vec<Finding>) {
    let model = net.model;
    for &v in &net.nodes {
        let node = &model.nodes[v];
        if ex.fired[v]
            || stuck.contains(&v)
            || node.kind.is_end()
            || node.kind == Kind::EventSubProcess
            || matches!(node.marker, Some(Marker::MayDeadlock))
        {
            continue;
        }
        let before: Vec<usize> = model
            .neighbours(v, Direction::Backward, Edges::WithinScope)
            .collect();
        let live = before.iter().any(|&p| ex.fired[p]);
        let waits_for = match node.kind {
            Kind::Inclusive | Kind::Complex if live => held_for(net, ex, v),
            _ => Vec::new(),
        };
        let declared = |j: &usize| matches!(model.nodes[*j].marker, Some(Marker::MayDeadlock));
        if !waits_for.is_empty() && waits_for.iter().all(declared) {
            continue;
        }
        let behind = before
            .iter()
            .copied()
            .find(|p| stuck.contains(p))
            .map(|j| (j, false))
            .or_else(|| {
                waits_for
                    .iter()
                    .copied()
                    .find(|j| stuck.contains(j))
                    .map(|j| (j, true))
            });
        let id = node.id;
        let message = match behind {
            Some((j, false)) => format!(
                "dead element: `{id}` never runs: it is reached only through `{}`, which can never fire (see the deadlock there) — once `{}` is mended, `{id}` runs",
                model.nodes[j].id, model.nodes[j].id
            ),
            Some((j, true)) => format!(
                "dead element: `{id}` never fires on any run: it waits for the token left at `{}`, which could still reach it (see the deadlock there) — once `{}` is mended, `{id}` fires",
                model.nodes[j].id, model.nodes[j].id
            ),
            None if live && node.incoming.len() >= 2 && is_sync(node.kind) => {
                // Never what the element already is.
                let mend = match node.kind {
                    Kind::Inclusive => format!("make `{id}` an exclusive merge"),
                    _ => format!("make `{id}` an exclusive merge, or an inclusive join"),
                };
                format!(
                    "dead element: `{id}` never fires on any run: its incoming flows never all get their tokens together, whatever the conditions choose — {mend}"
                )
            }
            None if live => format!(
                "dead element: `{id}` is never reached on any run, whatever the conditions choose — remove it, or give it a way in"
            ),
            None => continue,
        };
        out.push(Finding {
            at: v,
            class: Class::Dead,
            message,
            choices: Vec::new(),
        });
    }
}

/// The parallel joins an OR-join or complex join `v` waits for: in the dead markings
/// with a token at `v`, the other parallel joins holding tokens that could still
/// reach it.
fn held_for(net: &Net, ex: &Exploration, v: usize) -> Vec<usize> {
    let model = net.model;
    let feeds = model.reachable(&[v], Direction::Backward, None, Edges::WithinScope);
    let mut joins = Vec::new();
    for &i in &ex.dead {
        let m = &ex.markings[i as usize];
        let at: Vec<usize> = m.iter().filter_map(|e| net.position(e >> 8)).collect();
        if !at.contains(&v) {
            continue;
        }
        for j in at {
            if j != v && feeds[j] && model.nodes[j].kind == Kind::Parallel && !joins.contains(&j) {
                joins.push(j);
            }
        }
    }
    joins
}

fn is_sync(kind: Kind) -> bool {
    matches!(kind, Kind::Parallel | Kind::Inclusive | Kind::Complex)
}
