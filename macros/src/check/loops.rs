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
                        "`{id}` is {}; only an activity — a task, user task, receive task, sub-process or call activity — runs as a loop or as multi-instance: put the marker on the activity that does the work",
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
                        if node.kind == Kind::SubProcess {
                            let outputs: Vec<usize> = (0..model.nodes.len())
                                .filter(|&t| {
                                    is_output_task(model, t) && enclosing_multi(model, t) == Some(n)
                                })
                                .collect();
                            if outputs.len() != 1 {
                                ctx.error(
                                    output,
                                    format!(
                                        "the output of an instance of `{id}` is what one task inside returns: mark exactly one task `#[item(output)]` (its handler gets the item and returns the output){}",
                                        if outputs.is_empty() { String::new() } else { format!(" — {} are marked", outputs.len()) }
                                    ),
                                );
                            }
                        } else if !matches!(node.kind, Kind::Task | Kind::Call) {
                            ctx.error(
                                output,
                                format!(
                                    "`output` merges what a task's handler returns (or a call activity's child's final data), and {} returns nothing — drop `output`; the instances write into the data (inside a multi-instance sub-process, a task marked `#[item]` gets the instance's item)",
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
        if let (Kind::Call, Some(binding)) = (node.kind, node.handler) {
            let multi = matches!(
                node.looping.as_ref().map(|m| &m.kind),
                Some(LoopAstKind::Multi(_))
            );
            let input = crate::model::call::parts(binding)
                .ok()
                .and_then(|p| p.input);
            if let (false, Some(input)) = (multi, input) {
                if crate::model::call::takes_item(input) {
                    ctx.error(
                        input,
                        format!("`{id}` is no multi-instance activity, so its child has no item to take: its `input` maps the parent's data alone, `input = |parent| child_data` — or mark `{id}` `#[multi_instance(each = |data| ...)]` so `input = |parent, item, index| ...` gets each instance's item"),
                    );
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
            } else if let Err(error) = item_args(attr) {
                ctx.push(error);
            } else if let (true, Some(sub)) = (is_output_task(model, n), enclosing_multi(model, n))
            {
                let has_output = matches!(
                    model.nodes[sub].looping.as_ref().map(|m| &m.kind),
                    Some(LoopAstKind::Multi(m)) if m.output.is_some()
                );
                if !has_output {
                    ctx.error(
                        attr,
                        format!(
                            "`{id}`'s output goes nowhere: give `{}` an `output = |data, index, output| ...` mapping, or write `#[item]`",
                            model.nodes[sub].id
                        ),
                    );
                }
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

/// `#[item]` or `#[item(output)]`: whether the task's result is its instance's output.
pub fn item_args(attr: &syn::Attribute) -> syn::Result<bool> {
    match &attr.meta {
        syn::Meta::Path(_) => Ok(false),
        syn::Meta::List(list) => {
            let word: syn::Ident = list.parse_args().map_err(|e| {
                syn::Error::new(
                    e.span(),
                    "`#[item]` takes nothing, or `output`: `#[item(output)]`",
                )
            })?;
            if word == "output" {
                Ok(true)
            } else {
                Err(syn::Error::new_spanned(
                    &word,
                    format!("unknown `item` argument `{word}`; `#[item(output)]` makes the task's result its instance's output"),
                ))
            }
        }
        syn::Meta::NameValue(_) => Err(syn::Error::new_spanned(
            attr,
            "`#[item]` takes nothing, or `output`: `#[item(output)]`",
        )),
    }
}

/// A task marked `#[item(output)]`.
pub fn is_output_task(model: &Model, n: usize) -> bool {
    let node = &model.nodes[n];
    node.kind == Kind::Task && node.item.is_some_and(|a| matches!(item_args(a), Ok(true)))
}
