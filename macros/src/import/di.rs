//! The file's diagram interchange: where each element and flow is drawn. An export of
//! the imported process draws it there rather than computing a layout of its own.
//! Coordinates are rounded to whole points, as thresh's layout has them.

use std::collections::HashMap;

use roxmltree::{Document, Node};

const BPMNDI: &str = "http://www.omg.org/spec/BPMN/20100524/DI";
const DC: &str = "http://www.omg.org/spec/DD/20100524/DC";
const DI: &str = "http://www.omg.org/spec/DD/20100524/DI";

/// Element or flow id → its drawing: a shape's bounds (`x, y, width, height`), then
/// its label's when it has one; a flow's waypoints (`x, y` pairs), then its label's
/// bounds after a `i32::MIN` marker.
pub type Drawing = HashMap<String, Vec<i32>>;

/// The drawings of every shape and edge in the file (of its first diagram that
/// draws an element).
pub fn read(doc: &Document) -> Drawing {
    let mut out = Drawing::new();
    for n in doc.descendants().filter(|n| n.is_element()) {
        let Some(element) = n.attribute("bpmnElement") else {
            continue;
        };
        if out.contains_key(element) {
            continue;
        }
        let drawing = match n.tag_name() {
            t if t == (BPMNDI, "BPMNShape").into() => {
                let Some(mut v) = bounds_child(&n) else {
                    continue;
                };
                if let Some(label) = label(&n) {
                    v.extend(label);
                }
                v
            }
            t if t == (BPMNDI, "BPMNEdge").into() => {
                let mut v: Vec<i32> = n
                    .children()
                    .filter(|c| c.has_tag_name((DI, "waypoint")))
                    .flat_map(|w| [number(&w, "x"), number(&w, "y")])
                    .collect::<Option<Vec<i32>>>()
                    .unwrap_or_default();
                if v.len() < 4 {
                    continue;
                }
                if let Some(label) = label(&n) {
                    v.push(i32::MIN);
                    v.extend(label);
                }
                v
            }
            _ => continue,
        };
        out.insert(element.to_string(), drawing);
    }
    out
}

fn number(n: &Node, attr: &str) -> Option<i32> {
    let v: f64 = n.attribute(attr)?.trim().parse().ok()?;
    // A drawing far off any canvas is no drawing.
    (v.abs() < 1e7).then(|| v.round() as i32)
}

/// The `dc:Bounds` directly under `n`.
fn bounds_child(n: &Node) -> Option<Vec<i32>> {
    let b = n.children().find(|c| c.has_tag_name((DC, "Bounds")))?;
    ["x", "y", "width", "height"]
        .iter()
        .map(|a| number(&b, a))
        .collect()
}

/// The bounds of `n`'s `BPMNLabel`, when it gives them.
fn label(n: &Node) -> Option<Vec<i32>> {
    let l = n
        .children()
        .find(|c| c.has_tag_name((BPMNDI, "BPMNLabel")))?;
    bounds_child(&l)
}
