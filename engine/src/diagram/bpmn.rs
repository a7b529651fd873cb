//! BPMN 2.0 XML with diagram interchange, from the model and its layout.
//!
//! Every element keeps its node's id, and every flow an id made of its ends, so a
//! file exported here can be read back by id.

use std::collections::BTreeMap;

use super::layout::Layout;
use super::model::{Elem, EventDef, Gateway, Model};
use super::xml::Writer;

mod elements;
use elements::node;

const BPMN: &str = "http://www.omg.org/spec/BPMN/20100524/MODEL";
const BPMNDI: &str = "http://www.omg.org/spec/BPMN/20100524/DI";
const DC: &str = "http://www.omg.org/spec/DD/20100524/DC";
const DI: &str = "http://www.omg.org/spec/DD/20100524/DI";
const XSI: &str = "http://www.w3.org/2001/XMLSchema-instance";

/// An XML name (NCName) made of `text`: letters, digits, `_`, `-` and `.` kept,
/// anything else `_`, and a leading `_` when it would not start with a letter.
pub(crate) fn ncname(text: &str) -> String {
    let mut out: String = text
        .chars()
        .map(|c| {
            if c.is_alphanumeric() || matches!(c, '_' | '-' | '.') {
                c
            } else {
                '_'
            }
        })
        .collect();
    if !out
        .chars()
        .next()
        .is_some_and(|c| c.is_alphabetic() || c == '_')
    {
        out.insert(0, '_');
    }
    out
}

/// A condition's source text with the spaces token printing adds taken out where
/// Rust is written without them (`| o | o . total > 5` → `|o| o.total > 5`).
pub(crate) fn tidy_condition(text: &str) -> String {
    let mut s = text.trim().to_string();
    for (from, to) in [
        (" . ", "."),
        (" .", "."),
        ("( ", "("),
        (" )", ")"),
        (" ,", ","),
        ("[ ", "["),
        (" ]", "]"),
        ("! ", "!"),
        (" (", "("),
    ] {
        s = s.replace(from, to);
    }
    // A closure's parameter list: `| o |` → `|o|`.
    if let Some(rest) = s.strip_prefix("| ") {
        if let Some(end) = rest.find(" |") {
            s = format!("|{}|{}", &rest[..end], &rest[end + 2..]);
        }
    }
    s
}

/// The global elements (messages, signals, errors, escalations) the events refer to.
struct Globals {
    /// (kind, name) -> id, in first-use order by id.
    ids: BTreeMap<(&'static str, String), String>,
    order: Vec<(&'static str, String, String)>,
}

impl Globals {
    fn collect(model: &Model, taken: &mut std::collections::BTreeSet<String>) -> Globals {
        let mut g = Globals {
            ids: BTreeMap::new(),
            order: Vec::new(),
        };
        for node in &model.nodes {
            let (kind, name) = match (&node.elem, node.elem.event_def()) {
                (Elem::ReceiveTask(Some(name)), _) => ("message", name.clone()),
                (_, Some(EventDef::Message(name))) => ("message", name.clone()),
                (_, Some(EventDef::Signal(name))) => ("signal", name.clone()),
                (_, Some(EventDef::Error(Some(code)))) => ("error", code.clone()),
                (_, Some(EventDef::Escalation(Some(code)))) => ("escalation", code.clone()),
                _ => continue,
            };
            if g.ids.contains_key(&(kind, name.clone())) {
                continue;
            }
            let prefix = match kind {
                "message" => "Message",
                "signal" => "Signal",
                "error" => "Error",
                _ => "Escalation",
            };
            let base = format!("{prefix}_{}", ncname(&name));
            let mut id = base.clone();
            let mut k = 2;
            while taken.contains(&id) {
                id = format!("{base}_{k}");
                k += 1;
            }
            taken.insert(id.clone());
            g.ids.insert((kind, name.clone()), id.clone());
            g.order.push((kind, name, id));
        }
        g
    }

    fn id(&self, kind: &'static str, name: &str) -> Option<&str> {
        self.ids.get(&(kind, name.to_string())).map(String::as_str)
    }
}

/// The BPMN document of a model laid out as `layout`.
pub(crate) fn write(model: &Model, layout: &Layout) -> String {
    let mut taken: std::collections::BTreeSet<String> = model
        .nodes
        .iter()
        .map(|n| n.id.clone())
        .chain(model.flows.iter().map(|f| f.id.clone()))
        .collect();
    let mut fresh = |base: String| {
        let mut id = base.clone();
        let mut k = 2;
        while taken.contains(&id) {
            id = format!("{base}_{k}");
            k += 1;
        }
        taken.insert(id.clone());
        id
    };
    let process_id = fresh(ncname(&model.name));
    let definitions_id = fresh(format!("Definitions_{}", ncname(&model.name)));
    let diagram_id = fresh(format!("{process_id}_diagram"));
    let plane_id = fresh(format!("{process_id}_plane"));
    let globals = Globals::collect(model, &mut taken);

    let mut w = Writer::new();
    w.open(
        "bpmn:definitions",
        &[
            ("xmlns:bpmn", BPMN),
            ("xmlns:bpmndi", BPMNDI),
            ("xmlns:dc", DC),
            ("xmlns:di", DI),
            ("xmlns:xsi", XSI),
            ("id", &definitions_id),
            ("targetNamespace", "https://thresh.rs/bpmn"),
            ("exporter", "thresh"),
            ("exporterVersion", env!("CARGO_PKG_VERSION")),
        ],
    );
    for (kind, name, id) in &globals.order {
        let attrs: Vec<(&str, &str)> = match *kind {
            "message" | "signal" => vec![("id", id), ("name", name)],
            "error" => vec![("id", id), ("name", name), ("errorCode", name)],
            _ => vec![("id", id), ("name", name), ("escalationCode", name)],
        };
        w.empty(&format!("bpmn:{kind}"), &attrs);
    }
    w.open(
        "bpmn:process",
        &[
            ("id", &process_id),
            ("name", &model.name),
            ("isExecutable", "true"),
        ],
    );
    documentation(&mut w, &model.doc);
    scope(&mut w, model, &globals, None);
    w.end();

    // Diagram interchange.
    w.open("bpmndi:BPMNDiagram", &[("id", &diagram_id)]);
    w.open(
        "bpmndi:BPMNPlane",
        &[("id", &plane_id), ("bpmnElement", &process_id)],
    );
    for shape in &layout.shapes {
        let Some(node) = model.nodes.get(shape.node) else {
            continue;
        };
        let di = format!("{}_di", shape.id);
        let mut attrs: Vec<(&str, &str)> = vec![("id", &di), ("bpmnElement", &shape.id)];
        if node.elem.is_container() {
            attrs.push(("isExpanded", "true"));
        }
        if matches!(node.elem, Elem::Gateway(Gateway::Exclusive)) {
            attrs.push(("isMarkerVisible", "true"));
        }
        w.open("bpmndi:BPMNShape", &attrs);
        bounds(&mut w, &shape.bounds);
        if let Some(label) = &shape.label {
            w.open("bpmndi:BPMNLabel", &[]);
            bounds(&mut w, label);
            w.end();
        }
        w.end();
    }
    // Associations: routed as the layout routed them, from the boundary down.
    for association in &layout.associations {
        w.open(
            "bpmndi:BPMNEdge",
            &[
                ("id", &format!("{}_di", association.id)),
                ("bpmnElement", &association.id),
            ],
        );
        for p in &association.waypoints {
            w.empty(
                "di:waypoint",
                &[("x", &p.x.to_string()), ("y", &p.y.to_string())],
            );
        }
        w.end();
    }
    for edge in &layout.edges {
        let di = format!("{}_di", edge.id);
        w.open("bpmndi:BPMNEdge", &[("id", &di), ("bpmnElement", &edge.id)]);
        for p in &edge.waypoints {
            w.empty(
                "di:waypoint",
                &[("x", &p.x.to_string()), ("y", &p.y.to_string())],
            );
        }
        if let Some(label) = &edge.label {
            w.open("bpmndi:BPMNLabel", &[]);
            bounds(&mut w, label);
            w.end();
        }
        w.end();
    }
    w.end();
    w.end();
    w.finish()
}

fn bounds(w: &mut Writer, b: &super::layout::Bounds) {
    w.empty(
        "dc:Bounds",
        &[
            ("x", &b.x.to_string()),
            ("y", &b.y.to_string()),
            ("width", &b.width.to_string()),
            ("height", &b.height.to_string()),
        ],
    );
}

fn documentation(w: &mut Writer, doc: &str) {
    if !doc.trim().is_empty() {
        w.text("bpmn:documentation", &[], doc.trim());
    }
}

/// The flow elements of `scope`: its nodes (sub-processes with theirs) and the
/// sequence flows that start in it, each list in declaration order. A flow of the
/// scope declared before a sub-process's block is written before the sub-process, so
/// a reader that walks the document in order (`process!`'s import) meets nodes and
/// flows in the order `process!` declared them and gets the same model back — the
/// same fingerprint. (BPMN lets flow elements come in any order.)
fn scope(w: &mut Writer, model: &Model, globals: &Globals, scope: Option<usize>) {
    let flows: Vec<usize> = (0..model.flows.len())
        .filter(|&f| {
            let flow = &model.flows[f];
            flow.drawn && model.nodes.get(flow.source).map(|n| n.scope) == Some(scope)
        })
        .collect();
    let mut flows = flows.into_iter().peekable();
    for n in model.members(scope) {
        if let Some(first) = first_flow_inside(model, n) {
            while let Some(f) = flows.next_if(|&f| f < first) {
                sequence_flow(w, model, f);
            }
        }
        node(w, model, globals, n);
    }
    for f in flows {
        sequence_flow(w, model, f);
    }
    // Compensation boundaries' associations to their handlers, all among the
    // process's artifacts (where bpmnlint looks for them, wherever the boundary is).
    if scope.is_some() {
        return;
    }
    for &(b, h) in &model.associations {
        let (Some(boundary), Some(handler)) = (model.nodes.get(b), model.nodes.get(h)) else {
            continue;
        };
        w.empty(
            "bpmn:association",
            &[
                ("id", &association_id(model, b, h)),
                ("associationDirection", "One"),
                ("sourceRef", &boundary.id),
                ("targetRef", &handler.id),
            ],
        );
    }
}

/// The id of the association from compensation boundary `b` to its handler `h`.
pub(crate) fn association_id(model: &Model, b: usize, h: usize) -> String {
    let id = |n: usize| model.nodes.get(n).map_or("", |n| n.id.as_str());
    format!("Association_{}_{}", id(b), id(h))
}

/// The first drawn flow (by index) that starts inside the container `n`, at any depth.
fn first_flow_inside(model: &Model, n: usize) -> Option<usize> {
    if !model.nodes[n].elem.is_container() {
        return None;
    }
    let inside = |mut m: usize| {
        while let Some(s) = model.nodes.get(m).and_then(|node| node.scope) {
            if s == n {
                return true;
            }
            m = s;
        }
        false
    };
    (0..model.flows.len()).find(|&f| model.flows[f].drawn && inside(model.flows[f].source))
}

fn sequence_flow(w: &mut Writer, model: &Model, f: usize) {
    let flow = &model.flows[f];
    let (Some(source), Some(target)) = (model.nodes.get(flow.source), model.nodes.get(flow.target))
    else {
        return;
    };
    let condition = flow.condition.as_deref().map(tidy_condition);
    let mut attrs: Vec<(&str, &str)> = vec![
        ("id", &flow.id),
        ("sourceRef", &source.id),
        ("targetRef", &target.id),
    ];
    if !flow.name.is_empty() {
        attrs.push(("name", &flow.name));
    } else if let (Some(c), false) = (&condition, model.imported()) {
        // An inline flow is labelled by its condition; an imported one keeps its
        // diagram's name, or none.
        attrs.push(("name", c));
    }
    match &condition {
        Some(c) => {
            w.open("bpmn:sequenceFlow", &attrs);
            w.text(
                "bpmn:conditionExpression",
                &[("xsi:type", "bpmn:tFormalExpression")],
                c,
            );
            w.end();
        }
        None => w.empty("bpmn:sequenceFlow", &attrs),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_conditions() {
        assert_eq!(ncname("order paid"), "order_paid");
        assert_eq!(ncname("1st"), "_1st");
        assert_eq!(tidy_condition("| o | o . total > 5"), "|o| o.total > 5");
        assert_eq!(tidy_condition("| l | l . score < 70"), "|l| l.score < 70");
    }
}
