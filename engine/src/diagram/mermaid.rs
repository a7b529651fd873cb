//! The process as a Mermaid flowchart.

use std::fmt::Write as _;

use super::bpmn::tidy_condition;
use super::model::{Elem, EventDef, Gateway, LoopMark, Model};

/// Text for a Mermaid label in quotes.
fn quote(text: &str) -> String {
    let mut out = String::from("\"");
    for c in text.chars() {
        match c {
            '"' => out.push_str("#quot;"),
            '|' => out.push_str("#124;"),
            '<' => out.push_str("#lt;"),
            '>' => out.push_str("#gt;"),
            '#' => out.push_str("#35;"),
            '\n' | '\r' => out.push(' '),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// A node id Mermaid accepts (letters, digits, `_`), distinct from its keywords.
fn mid(id: &str) -> String {
    let s: String = id
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect();
    match s.as_str() {
        "end" | "graph" | "subgraph" | "flowchart" | "style" | "class" | "click" | "default"
        | "linkStyle" | "classDef" | "direction" => {
            format!("{s}_")
        }
        _ => s,
    }
}

fn marker(def: Option<&EventDef>) -> &'static str {
    match def {
        None => "",
        Some(EventDef::Message(_)) => "✉ ",
        Some(EventDef::Signal(_)) => "▲ ",
        Some(EventDef::Timer(_)) => "⏱ ",
        Some(EventDef::Conditional(_)) => "≡ ",
        Some(EventDef::Error(_)) => "⚡ ",
        Some(EventDef::Escalation(_)) => "⇧ ",
        Some(EventDef::Terminate) => "● ",
        Some(EventDef::Link(_)) => "➜ ",
        Some(EventDef::Compensate(_)) => "⏪ ",
        Some(EventDef::Cancel) => "✖ ",
    }
}

/// The suffix an activity's label carries for its loop or multi-instance marker
/// (Mermaid draws no markers): BPMN's loop arrow, parallel bars, sequential bars.
fn loop_suffix(mark: Option<&LoopMark>) -> &'static str {
    match mark {
        None => "",
        Some(LoopMark::Standard { .. }) => " ↻",
        Some(LoopMark::Multi {
            sequential: false, ..
        }) => " |||",
        Some(LoopMark::Multi {
            sequential: true, ..
        }) => " ≡",
    }
}

fn node_line(model: &Model, n: usize) -> String {
    let node = &model.nodes[n];
    let label = format!("{}{}", model.label(n), loop_suffix(node.looping.as_ref()));
    let id = mid(&node.id);
    let text = |prefix: &str| quote(&format!("{prefix}{label}"));
    match &node.elem {
        Elem::Start { def, .. } => format!("{id}(({}))", text(marker(def.as_ref()))),
        Elem::End { def } => format!("{id}((({})))", text(marker(def.as_ref()))),
        Elem::Catch(d) | Elem::Throw(d) | Elem::Boundary { def: d, .. } => {
            format!("{id}(({}))", text(marker(Some(d))))
        }
        Elem::Gateway(g) => {
            let sign = match g {
                Gateway::Exclusive => "×",
                Gateway::Parallel => "+",
                Gateway::Inclusive => "○",
                Gateway::Complex => "✱",
                Gateway::EventBased { .. } => "⬠",
            };
            format!("{id}{{{}}}", text(&format!("{sign} ")))
        }
        Elem::UserTask => format!("{id}[{}]", text("👤 ")),
        Elem::ReceiveTask(_) => format!("{id}[{}]", text("✉ ")),
        // A subroutine shape: Mermaid's double-bordered box.
        Elem::CallActivity(_) => format!("{id}[[{}]]", text("")),
        Elem::CompensationTask => format!("{id}[{}]", text("⏪ ")),
        _ => format!("{id}[{}]", text("")),
    }
}

fn scope(out: &mut String, model: &Model, scope: Option<usize>, depth: usize) {
    let pad = "    ".repeat(depth);
    for n in model.members(scope) {
        let node = &model.nodes[n];
        if node.elem.is_container() {
            let title = if node.elem == Elem::EventSubProcess {
                format!("event sub-process: {}", model.label(n))
            } else if node.elem == Elem::Transaction {
                format!("transaction: {}", model.label(n))
            } else {
                format!("{}{}", model.label(n), loop_suffix(node.looping.as_ref()))
            };
            let _ = writeln!(out, "{pad}subgraph {}[{}]", mid(&node.id), quote(&title));
            let _ = writeln!(out, "{pad}    direction LR");
            self::scope(out, model, Some(n), depth + 1);
            let _ = writeln!(out, "{pad}end");
        } else {
            let _ = writeln!(out, "{pad}{}", node_line(model, n));
        }
    }
}

/// The Mermaid text of a model.
pub(crate) fn write(model: &Model) -> String {
    let mut out = String::from("flowchart LR\n");
    scope(&mut out, model, None, 1);
    // A boundary event hangs off its host by a dotted line.
    for node in &model.nodes {
        if let Elem::Boundary {
            host, interrupting, ..
        } = node.elem
        {
            if let Some(h) = model.nodes.get(host) {
                let label = if interrupting {
                    ""
                } else {
                    "|non-interrupting|"
                };
                let _ = writeln!(out, "    {} -.-{label} {}", mid(&h.id), mid(&node.id));
            }
        }
    }
    // A compensation boundary's association to its handler.
    for &(b, h) in &model.associations {
        if let (Some(b), Some(h)) = (model.nodes.get(b), model.nodes.get(h)) {
            let _ = writeln!(out, "    {} -. compensation .-> {}", mid(&b.id), mid(&h.id));
        }
    }
    for flow in &model.flows {
        let (Some(s), Some(t)) = (model.nodes.get(flow.source), model.nodes.get(flow.target))
        else {
            continue;
        };
        let (s, t) = (mid(&s.id), mid(&t.id));
        if !flow.drawn {
            // A link pair's jump.
            let _ = writeln!(out, "    {s} -. link .-> {t}");
        } else if flow.default {
            let _ = writeln!(out, "    {s} -->|else| {t}");
        } else if let Some(c) = &flow.condition {
            let _ = writeln!(out, "    {s} -->|{}| {t}", quote(&tidy_condition(c)));
        } else {
            let _ = writeln!(out, "    {s} --> {t}");
        }
    }
    out
}
