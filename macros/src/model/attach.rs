//! Boundary events onto their activities.

use super::ir::{Kind, Node};
use super::resolve::place;
use crate::ctx::Ctx;
use crate::parse::ProcessAst;
use crate::suggest;

/// Attach every boundary event to its activity (`boundary b on activity: ...`). A
/// boundary left unattached (reported here) gets the benefit of the doubt on its
/// paths, as does an element given a stray `on`: it was likely meant as a boundary.
pub(super) fn boundaries(ctx: &Ctx, ast: &ProcessAst, nodes: &mut [Node]) {
    for decl in &ast.nodes {
        // By identity: a second declaration of an id was dropped, with its `on`.
        let Some(b) = nodes.iter().position(|n| std::ptr::eq(n.id, &decl.id)) else {
            continue;
        };
        let is_boundary = matches!(nodes[b].kind, Kind::Boundary { .. });
        let kind = nodes[b].kind.describe_with_article();
        let id = &decl.id;
        let may_interrupt = is_boundary || matches!(nodes[b].kind, Kind::EventSubStart { .. });
        if let Some(marker) = decl.non_interrupting.as_ref().filter(|_| !may_interrupt) {
            // A start that should run beside the process is an event sub-process's.
            let mend = if nodes[b].kind.is_start() {
                format!("or, to run beside the process while it runs, make it an event sub-process's start: `event_subprocess on_{id} {{ start {id}: non_interrupting ...; ... }}`")
            } else {
                format!("or attach `{id}` to a task as `boundary {id} on some_task: non_interrupting ...;`")
            };
            ctx.error(
                marker,
                format!(
                    "only a boundary event or an event sub-process's start is `non_interrupting` (it runs beside the work it would otherwise interrupt); {kind} interrupts nothing — remove `non_interrupting`, {mend}"
                ),
            );
        }
        match (&decl.attached, is_boundary) {
            (Some(activity), false) => {
                ctx.error(
                    activity,
                    format!(
                        "only a boundary event is attached with `on`, but `{id}` is {kind} — to catch its event while `{activity}` runs, declare it `boundary {id} on {activity}: ...;`, else remove `on {activity}`"
                    ),
                );
                nodes[b].loose_in = true;
            }
            (None, true) => {
                ctx.error(
                    id,
                    format!("boundary event `{id}` needs the activity it is attached to: `boundary {id} on some_task: ...;`"),
                );
                nodes[b].loose_in = true;
            }
            (Some(activity), true) => match nodes.iter().position(|n| n.id == activity) {
                Some(a) if nodes[a].scope != nodes[b].scope => {
                    let place = |n: usize| place(nodes, nodes[n].scope);
                    ctx.error(
                        activity,
                        format!(
                            "boundary event `{id}` is declared {}, but `{activity}` is {}: a boundary event is declared beside its activity — move `boundary {id} on {activity}: ...;` and the flows out of it next to `{activity}`",
                            place(b),
                            place(a)
                        ),
                    );
                    nodes[b].loose_in = true;
                }
                Some(a) => {
                    nodes[b].attached_to = Some(a);
                    nodes[a].boundaries.push(b);
                }
                None => {
                    let names: Vec<String> = nodes.iter().map(|n| n.id.to_string()).collect();
                    let hint = suggest::nearest(&activity.to_string(), names.iter().map(String::as_str))
                        .map(suggest::did_you_mean)
                        .unwrap_or_else(|| format!("attach it to a task, receive task or user task of this process, e.g. `task {activity} = handler;`"));
                    ctx.error(
                        activity,
                        format!("unknown activity `{activity}` for boundary event `{id}`; {hint}"),
                    );
                    nodes[b].loose_in = true;
                }
            },
            (None, false) => {}
        }
    }
}
