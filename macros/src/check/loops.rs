//! Loop and multi-instance markers: only on activities, with what each kind needs;
//! `#[item]` only on a task inside a multi-instance sub-process.

use crate::ctx::Ctx;
use crate::model::{Kind, Model};
use crate::parse::loops::LoopAstKind;

pub fn check(ctx: &Ctx, model: &Model) {
    for (n, node) in model.nodes.iter().enumerate() {
        let id = node.id;
        if let Some(marker) = &node.looping {
            if !node.kind.is_activity() {
                ctx.error(
                    &marker.name,
                    format!(
                        "`{id}` is {}; only an activity — a task, user task, receive task or sub-process — runs as a loop or as multi-instance: put the marker on the activity that does the work",
                        node.kind.describe_with_article()
                    ),
                );
                continue;
            }
            match &marker.kind {
                LoopAstKind::Multi(multi) => {
                    match (&multi.each, &multi.count) {
                        (None, None) => ctx.error(
                            &marker.name,
                            format!("`{id}` is multi-instance but says not how many instances: give `each = |data| collection` (one instance per item, which the handler gets as `&Item`) or `count = |data| n` (instances `0..n`)"),
                        ),
                        (Some(_), Some((count, _))) => ctx.error(
                            count,
                            "`each` and `count` both say how many instances there are; keep one (with `each` the items' count is the collection's length)",
                        ),
                        _ => {}
                    }
                    if let Some((output, _)) = &multi.output {
                        if node.kind != Kind::Task {
                            ctx.error(
                                output,
                                format!(
                                    "`output` merges what a task's handler returns, and {} returns nothing — drop `output`; the instances write into the data (inside a multi-instance sub-process, a task marked `#[item]` gets the instance's item)",
                                    node.kind.describe_with_article()
                                ),
                            );
                        }
                    }
                }
                LoopAstKind::Standard(standard) => {
                    if standard.condition.is_none() {
                        ctx.error(
                            &marker.name,
                            format!("`{id}` loops but says not how long: give `while = |data, runs| ...` (tested after each run, or before with `test_before`; `runs` counts the runs so far), and `max = N` to bound it"),
                        );
                    }
                    if let Some((_, max)) = &standard.max {
                        if !matches!(max.base10_parse::<u32>(), Ok(1..)) {
                            ctx.error(
                                max,
                                "`max` is the most runs the loop makes: a whole number from 1 to 4294967295",
                            );
                        }
                    }
                }
            }
        }
        if let Some(attr) = node.item {
            let multi_task = matches!(
                node.looping.as_ref().map(|m| &m.kind),
                Some(LoopAstKind::Multi(_))
            );
            if node.kind != Kind::Task {
                ctx.error(
                    attr,
                    format!(
                        "`#[item]` gives a task's handler the item of its multi-instance sub-process; `{id}` is {}, which has no handler",
                        node.kind.describe_with_article()
                    ),
                );
            } else if multi_task {
                ctx.error(
                    attr,
                    format!("`{id}` is multi-instance: its handler gets its own item already — drop `#[item]`"),
                );
            } else if enclosing_multi(model, n).is_none() {
                ctx.error(
                    attr,
                    format!("`#[item]` gives a task the item of the multi-instance sub-process it is in, and `{id}` is in none — mark the sub-process `#[multi_instance(each = |data| ...)]`, or drop `#[item]`"),
                );
            }
        }
    }
}

/// The nearest multi-instance sub-process that holds node `n`.
pub fn enclosing_multi(model: &Model, n: usize) -> Option<usize> {
    let mut scope = model.nodes[n].scope;
    while let Some(s) = scope {
        let node = &model.nodes[s];
        if node.kind == Kind::SubProcess
            && matches!(
                node.looping.as_ref().map(|m| &m.kind),
                Some(LoopAstKind::Multi(_))
            )
        {
            return Some(s);
        }
        scope = node.scope;
    }
    None
}
