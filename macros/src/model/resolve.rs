//! Flows, their names resolved: each name to the element it means, looked for first in
//! the scope the flow is written in (a flow stays within one scope: a token enters a
//! sub-process at its start event and leaves at its end).

use syn::Ident;

use super::ir::{Flow, Kind, Node};
use crate::ctx::Ctx;
use crate::parse::{Guard, ProcessAst};
use crate::suggest;

/// Every flow of the process's flow statements, its ends resolved. A flow naming an
/// element that did not resolve, or one of another scope, is reported and left out;
/// the element at its other end gets the benefit of the doubt on its paths.
pub(super) fn flows<'a>(
    ctx: &Ctx,
    ast: &'a ProcessAst,
    nodes: &mut [Node<'a>],
    scope_of: &dyn Fn(Option<usize>) -> Option<usize>,
) -> Vec<Flow<'a>> {
    let known: Vec<String> = ast.nodes.iter().map(|n| n.id.to_string()).collect();
    // Nodes suggested for a misspelt name: the flow was likely meant for them.
    let guessed = std::cell::RefCell::new(Vec::new());
    // A misspelt name in a flow written in `here`: the elements of that scope
    // are the likely meaning (a flow stays within it), then any other.
    let resolve = |id: &Ident, here: Option<usize>| -> Option<usize> {
        let found = nodes.iter().position(|n| n.id == id);
        if found.is_none() && !known.iter().any(|k| id == k) {
            let local: Vec<String> = nodes
                .iter()
                .filter(|n| n.scope == here)
                .map(|n| n.id.to_string())
                .collect();
            let near = suggest::nearest(&id.to_string(), local.iter().map(String::as_str))
                .or_else(|| suggest::nearest(&id.to_string(), known.iter().map(String::as_str)));
            guessed
                .borrow_mut()
                .extend(near.and_then(|near| nodes.iter().position(|n| n.id == near)));
            let hint = near
                .map(|n| format!("; {}", suggest::did_you_mean(n)))
                .unwrap_or_else(|| {
                    format!("; declare it, e.g. `task {id} = handler;` or `end {id};`")
                });
            ctx.error(id, format!("unknown element `{id}` in flow{hint}"));
        }
        found
    };

    let mut flows = Vec::new();
    // Nodes at one end of a flow whose other end did not resolve, and which end.
    let mut loose: Vec<(usize, End)> = Vec::new();
    for stmt in &ast.flows {
        let hops = stmt.groups.len() - 1;
        let here = scope_of(stmt.scope);
        // Each name once, so an unknown one is reported once per place it is written.
        let resolved: Vec<Vec<Option<usize>>> = stmt
            .groups
            .iter()
            .map(|group| group.iter().map(|id| resolve(id, here)).collect())
            .collect();
        for (h, pair) in stmt.groups.windows(2).enumerate() {
            let last = h + 1 == hops;
            if let Some(guard) = stmt.guard.as_ref().filter(|_| last) {
                if pair[0].len() > 1 || pair[1].len() > 1 {
                    let (word, example) = match guard {
                        Guard::When { .. } => ("`when`", "when |data| ..."),
                        Guard::Else { .. } => ("`else`", "else"),
                    };
                    let join = |ids: &[Ident]| {
                        ids.iter()
                            .map(Ident::to_string)
                            .collect::<Vec<_>>()
                            .join(", ")
                    };
                    ctx.error_at(
                        guard.span(),
                        format!(
                            "{word} qualifies exactly one flow, but `{} -> {}` is {} flows: write each as its own statement, e.g. `{} -> {} {example};`",
                            join(&pair[0]),
                            join(&pair[1]),
                            pair[0].len() * pair[1].len(),
                            pair[0][0],
                            pair[1][0],
                        ),
                    );
                }
            }
            for (source, s) in pair[0].iter().zip(&resolved[h]) {
                for (target, t) in pair[1].iter().zip(&resolved[h + 1]) {
                    let (s, t) = match (*s, *t) {
                        (Some(s), Some(t)) => (s, t),
                        (Some(s), None) => {
                            loose.push((s, End::Source));
                            continue;
                        }
                        (None, Some(t)) => {
                            loose.push((t, End::Target));
                            continue;
                        }
                        (None, None) => continue,
                    };
                    // A flow stays within its scope: a token
                    // enters a sub-process at its start and leaves at its end.
                    // Both ends of a crossing flow get the benefit of the doubt on their
                    // paths, as for a name that did not resolve: the one error says it.
                    let crossing = if nodes[s].scope != here {
                        Some((s, source, End::Source))
                    } else if nodes[t].scope != here {
                        Some((t, target, End::Target))
                    } else {
                        None
                    };
                    if let Some((wrong, written, end)) = crossing {
                        // A name declared twice (reported) may mean the dropped copy,
                        // written in this scope: no crossing error on top.
                        if ast.nodes.iter().filter(|n| n.id == *written).count() == 1 {
                            ctx.error(written, crossing_error(nodes, wrong, here, end));
                        }
                        loose.push((s, End::Source));
                        loose.push((t, End::Target));
                        continue;
                    }
                    let guard = if last { stmt.guard.as_ref() } else { None };
                    let condition = match guard {
                        Some(Guard::When { condition, .. }) => Some(condition),
                        _ => None,
                    };
                    flows.push(Flow {
                        source: s,
                        target: t,
                        source_ident: source,
                        target_ident: target,
                        condition,
                        guard,
                        link: false,
                        file: stmt.file.as_ref(),
                    });
                }
            }
        }
    }
    for n in guessed.into_inner() {
        nodes[n].loose_in = true;
        nodes[n].loose_out = true;
    }
    for (n, end) in loose {
        match end {
            End::Source => nodes[n].loose_out = true,
            End::Target => nodes[n].loose_in = true,
        }
    }
    flows
}

/// Where an element of scope `scope` is, as messages say it: "in sub-process
/// `handle`", "at the process's top level".
pub(super) fn place(nodes: &[Node], scope: Option<usize>) -> String {
    match scope {
        Some(c) => format!("in {} `{}`", nodes[c].kind.describe(), nodes[c].id),
        None => "at the process's top level".to_string(),
    }
}

/// One end of a flow.
#[derive(Clone, Copy, PartialEq, Eq)]
enum End {
    Source,
    Target,
}

/// Why a flow written in scope `here` cannot name `wrong`, an element of another
/// scope at the flow's `end`, and the flow that would do instead: one written where
/// the two scopes meet.
fn crossing_error(nodes: &[Node], wrong: usize, here: Option<usize>, end: End) -> String {
    let id = nodes[wrong].id;
    let place = |c: Option<usize>| place(nodes, c);
    // `c` and the scopes around it, innermost first.
    let around = |mut c: Option<usize>| {
        std::iter::from_fn(move || {
            let this = c?;
            c = nodes[this].scope;
            Some(this)
        })
    };
    // Where the two ends meet: the innermost scope around `here` that holds
    // `wrong` (`None`: the top level).
    let meet = around(here).find(|&c| around(nodes[wrong].scope).any(|w| w == c));
    // The element written directly in `meet` that is, or holds, `n`.
    let outermost = |mut n: usize| {
        while nodes[n].scope != meet {
            n = nodes[n]
                .scope
                .expect("`meet` holds every element around `n`");
        }
        n
    };
    // The flow's two sides at the meeting level: `wrong`'s, and `here`'s (`None` when
    // the flow is written there).
    let far = outermost(wrong);
    let near = here.filter(|&h| Some(h) != meet).map(outermost);
    // An event sub-process between an end and the meeting level: no flow enters or
    // leaves one.
    let event_sub = |c: Option<usize>| {
        around(c)
            .take_while(|&c| Some(c) != meet)
            .find(|&c| nodes[c].kind == Kind::EventSubProcess)
    };
    let (leaving, entering) = match end {
        End::Target => (event_sub(here), event_sub(Some(wrong))),
        End::Source => (event_sub(Some(wrong)), event_sub(here)),
    };
    let mend = if near == Some(far) {
        let path = match (end, nodes[far].kind) {
            (End::Target, Kind::SubProcess) => format!(
                "ends at its end events; to run `{id}` again, loop back to it outside its block"
            ),
            (End::Target, _) => "ends at its end events".to_string(),
            (End::Source, _) => "begins at its start event: flow on from there".to_string(),
        };
        format!(
            "`{id}` holds this flow, and a path inside {} {path}",
            nodes[far].kind.describe_with_article()
        )
    } else if let Some(sub) = leaving {
        format!(
            "no flow leaves an event sub-process: `{}` ends at its own end events, so move what should follow into its block, before its end",
            nodes[sub].id
        )
    } else if let Some(sub) = entering {
        let path = if end == End::Target {
            format!(
                "to run `{id}` on this path, declare it outside `{}`",
                nodes[sub].id
            )
        } else {
            format!(
                "inside `{}`, a path begins at its start event",
                nodes[sub].id
            )
        };
        format!(
            "an event sub-process is started by its start event's trigger, never by a flow; {path}"
        )
    } else {
        // How a token passes `c`, the sub-process to flow from or into, and the one the
        // flow is written in further in: "`pay` at its end event, then `handle` (which
        // holds it) at its own".
        let passes = |c: usize| {
            let (c, event) = (
                nodes[c].id,
                match end {
                    End::Target => "end",
                    End::Source => "start",
                },
            );
            match here.map(|h| nodes[h].id).filter(|&h| h != c) {
                Some(h) if end == End::Target => {
                    format!("`{h}` at its {event} event, then `{c}` (which holds it) at its own")
                }
                Some(h) => format!("`{c}` at its {event} event, then `{h}` (within it) at its own"),
                None => format!("`{c}` at its {event} event"),
            }
        };
        match (end, near) {
            (End::Target, None) => format!(
                "a token enters a sub-process at its start event, so flow into the sub-process itself: `... -> {};`",
                nodes[far].id
            ),
            (End::Target, Some(c)) => format!(
                "a token leaves {} and goes on along the flows of `{c}` itself, written outside its block: `{c} -> {};`",
                passes(c),
                nodes[far].id,
                c = nodes[c].id
            ),
            (End::Source, None) => format!(
                "a token leaves a sub-process at its end event, so flow on from the sub-process itself: `{} -> ...;`",
                nodes[far].id
            ),
            (End::Source, Some(c)) => format!(
                "a token enters {}, so flow into `{c}` itself, outside its block: `{} -> {c};`",
                passes(c),
                nodes[far].id,
                c = nodes[c].id
            ),
        }
    };
    format!(
        "a flow written {} cannot {} `{id}`, which is {}: flows stay within their process or sub-process — {mend}",
        place(here),
        match end {
            End::Target => "reach",
            End::Source => "start from",
        },
        place(nodes[wrong].scope)
    )
}
