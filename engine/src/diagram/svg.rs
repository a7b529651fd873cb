//! The layout drawn as a self-contained SVG in BPMN notation, optionally with an
//! instance's overlay.

use std::fmt::Write as _;

use super::layout::{
    flow_label, text_width, wrap, Bounds, Layout, Point, Shape, LABEL_CHARS, TASK_CHARS,
};
use super::model::{Elem, EventDef, Gateway, Model};
use super::overlay::Overlay;
use super::xml::escape;

mod shapes;
use shapes::{activity, event, gateway};

const INK: &str = "#22242a";
const PASSED_FILL: &str = "#dbeafe";
const PASSED_INK: &str = "#1d4ed8";
const WAIT_INK: &str = "#ea580c";
const WAIT_FILL: &str = "#ffedd5";
const FAIL_INK: &str = "#dc2626";
const FAIL_FILL: &str = "#fee2e2";
const FONT: &str = "font-family=\"Helvetica, Arial, sans-serif\"";

/// How a node is painted.
struct Paint {
    ink: &'static str,
    fill: &'static str,
    class: &'static str,
}

impl Paint {
    fn of(overlay: Option<&Overlay>, node: usize) -> Paint {
        let state = overlay.and_then(|o| o.nodes.get(node));
        match state {
            Some(s) if s.failed.is_some() => Paint {
                ink: FAIL_INK,
                fill: FAIL_FILL,
                class: "failed",
            },
            Some(s) if s.incident.is_some() => Paint {
                ink: FAIL_INK,
                fill: FAIL_FILL,
                class: "incident",
            },
            Some(s) if s.waiting > 0 => Paint {
                ink: WAIT_INK,
                fill: WAIT_FILL,
                class: "waiting",
            },
            Some(s) if s.visits > 0 => Paint {
                ink: PASSED_INK,
                fill: PASSED_FILL,
                class: "passed",
            },
            _ => Paint {
                ink: INK,
                fill: "#ffffff",
                class: "idle",
            },
        }
    }
}

/// Draw the layout of `model`; with an overlay, the instance on it.
pub(crate) fn draw(model: &Model, layout: &Layout, overlay: Option<&Overlay>) -> String {
    let mut s = String::new();
    let (w, h) = (layout.width.max(1), layout.height.max(1));
    let _ = writeln!(
        s,
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{w}\" height=\"{h}\" viewBox=\"0 0 {w} {h}\" {FONT} font-size=\"12\">"
    );
    // A version past the first is part of what the picture shows.
    match model.version {
        1 => writeln!(s, "<title>{}</title>", escape(&model.name)),
        v => writeln!(s, "<title>{} version {v}</title>", escape(&model.name)),
    }
    .ok();
    s.push_str(concat!(
        "<defs>\n",
        "<marker id=\"arrow\" viewBox=\"0 0 10 10\" refX=\"10\" refY=\"5\" markerWidth=\"11\" markerHeight=\"11\" markerUnits=\"userSpaceOnUse\" orient=\"auto\">",
        "<path d=\"M0,0 L10,5 L0,10 z\" fill=\"context-stroke\"/></marker>\n",
        "<marker id=\"arrow-ink\" viewBox=\"0 0 10 10\" refX=\"10\" refY=\"5\" markerWidth=\"11\" markerHeight=\"11\" markerUnits=\"userSpaceOnUse\" orient=\"auto\">",
        "<path d=\"M0,0 L10,5 L0,10 z\" fill=\"#22242a\"/></marker>\n",
        "<marker id=\"arrow-passed\" viewBox=\"0 0 10 10\" refX=\"10\" refY=\"5\" markerWidth=\"11\" markerHeight=\"11\" markerUnits=\"userSpaceOnUse\" orient=\"auto\">",
        "<path d=\"M0,0 L10,5 L0,10 z\" fill=\"#1d4ed8\"/></marker>\n",
        "<marker id=\"diamond\" viewBox=\"0 0 16 10\" refX=\"0\" refY=\"5\" markerWidth=\"16\" markerHeight=\"10\" markerUnits=\"userSpaceOnUse\" orient=\"auto\">",
        "<path d=\"M0,5 L8,0 L16,5 L8,10 z\" fill=\"#ffffff\" stroke=\"#22242a\"/></marker>\n",
        "</defs>\n"
    ));
    let _ = writeln!(s, "<rect width=\"{w}\" height=\"{h}\" fill=\"#ffffff\"/>");

    // Containers first, outermost first, so their content is drawn over them.
    let depth = |shape: &Shape| {
        let mut d = 0;
        let mut at = shape.container;
        while let Some(c) = at {
            d += 1;
            at = model.nodes.get(c).and_then(|n| n.scope);
        }
        d
    };
    let mut containers: Vec<&Shape> = layout
        .shapes
        .iter()
        .filter(|sh| {
            model
                .nodes
                .get(sh.node)
                .is_some_and(|n| n.elem.is_container())
        })
        .collect();
    containers.sort_by_key(|sh| (depth(sh), sh.node));
    for shape in containers {
        container(&mut s, model, shape, overlay);
    }
    for edge in &layout.edges {
        flow(
            &mut s,
            model,
            edge.flow,
            &edge.waypoints,
            edge.label.as_ref(),
            overlay,
        );
    }
    // Compensation associations: dotted, from the boundary down to its handler.
    for association in &layout.associations {
        let points: Vec<String> = association
            .waypoints
            .iter()
            .map(|p| format!("{},{}", p.x, p.y))
            .collect();
        let _ = writeln!(
            s,
            "<polyline class=\"association\" points=\"{}\" fill=\"none\" stroke=\"#555555\" stroke-width=\"1.2\" stroke-dasharray=\"2 3\"/>",
            points.join(" ")
        );
    }
    for shape in &layout.shapes {
        let Some(node) = model.nodes.get(shape.node) else {
            continue;
        };
        if node.elem.is_container() {
            continue;
        }
        let paint = Paint::of(overlay, shape.node);
        let _ = writeln!(
            s,
            "<g id=\"{}\" class=\"{}\">",
            escape(&shape.id),
            paint.class
        );
        match &node.elem {
            Elem::Gateway(g) => gateway(&mut s, *g, &shape.bounds, &paint),
            e if e.is_event() => event(&mut s, e, &shape.bounds, &paint),
            e => activity(&mut s, model, shape, e, &paint),
        }
        if let Some(label) = &shape.label {
            text_lines(
                &mut s,
                &wrap(&model.label(shape.node), LABEL_CHARS),
                label,
                paint.ink,
            );
        }
        let _ = writeln!(s, "</g>");
    }
    if let Some(o) = overlay {
        for shape in &layout.shapes {
            badge(&mut s, shape, o);
        }
    }
    s.push_str("</svg>\n");
    s
}

fn container(s: &mut String, model: &Model, shape: &Shape, overlay: Option<&Overlay>) {
    let b = shape.bounds;
    let paint = Paint::of(overlay, shape.node);
    let event_sub = model
        .nodes
        .get(shape.node)
        .is_some_and(|n| n.elem == Elem::EventSubProcess);
    let (dash, width) = if event_sub {
        (" stroke-dasharray=\"6 4\"", 1.5)
    } else {
        ("", 2.0)
    };
    let fill = if paint.class == "idle" {
        "#ffffff"
    } else {
        paint.fill
    };
    let width = if paint.class == "waiting" { 3.0 } else { width };
    let _ = writeln!(
        s,
        "<g id=\"{}\" class=\"{}\"><rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" rx=\"10\" fill=\"{fill}\" fill-opacity=\"0.5\" stroke=\"{}\" stroke-width=\"{width}\"{dash}/>",
        escape(&shape.id),
        paint.class,
        b.x,
        b.y,
        b.width,
        b.height,
        paint.ink
    );
    let _ = writeln!(
        s,
        "<text x=\"{}\" y=\"{}\" fill=\"{}\" font-weight=\"bold\">{}</text></g>",
        b.x + 10,
        b.y + 20,
        paint.ink,
        escape(&model.label(shape.node))
    );
    if let Some(mark) = model.nodes.get(shape.node).and_then(|n| n.looping.as_ref()) {
        loop_marker(s, b, mark, paint.ink);
    }
}

/// BPMN's activity markers at the bottom centre: three bars for multi-instance
/// (upright: parallel, lying: sequential), a circling arrow for the standard loop.
fn loop_marker(s: &mut String, b: Bounds, mark: &super::model::LoopMark, ink: &str) {
    use super::model::LoopMark;
    let (x, y) = (b.x + b.width / 2, b.y + b.height - 16);
    match mark {
        LoopMark::Multi { sequential, .. } => {
            for k in -1..=1 {
                let (x1, y1, x2, y2) = if *sequential {
                    (x - 6, y + 6 + 4 * k, x + 6, y + 6 + 4 * k)
                } else {
                    (x + 4 * k, y, x + 4 * k, y + 12)
                };
                let _ = write!(
                    s,
                    "<line x1=\"{x1}\" y1=\"{y1}\" x2=\"{x2}\" y2=\"{y2}\" stroke=\"{ink}\" stroke-width=\"2\"/>"
                );
            }
        }
        LoopMark::Standard { .. } => {
            let _ = write!(
                s,
                "<path d=\"M{},{} a6,6 0 1,1 6,0\" fill=\"none\" stroke=\"{ink}\" stroke-width=\"1.6\"/><polyline points=\"{},{} {},{} {},{}\" fill=\"none\" stroke=\"{ink}\" stroke-width=\"1.6\"/>",
                x - 3,
                y + 11,
                x + 3,
                y + 7,
                x + 3,
                y + 11,
                x + 7,
                y + 10
            );
        }
    }
    s.push('\n');
}

fn flow(
    s: &mut String,
    model: &Model,
    f: usize,
    points: &[Point],
    label: Option<&Bounds>,
    overlay: Option<&Overlay>,
) {
    let Some(flow) = model.flows.get(f) else {
        return;
    };
    if points.len() < 2 {
        return;
    }
    let taken = overlay.is_some_and(|o| o.flows.get(f).is_some_and(|&n| n > 0));
    let (ink, marker, width) = if taken {
        (PASSED_INK, "arrow-passed", 2.0)
    } else {
        (INK, "arrow-ink", 1.5)
    };
    let path: Vec<String> = points.iter().map(|p| format!("{},{}", p.x, p.y)).collect();
    let source_is_gateway = model
        .nodes
        .get(flow.source)
        .is_some_and(|n| matches!(n.elem, Elem::Gateway(_)));
    let start_marker = if flow.condition.is_some() && !source_is_gateway {
        " marker-start=\"url(#diamond)\""
    } else {
        ""
    };
    let _ = writeln!(
        s,
        "<polyline id=\"{}\" points=\"{}\" fill=\"none\" stroke=\"{ink}\" stroke-width=\"{width}\" stroke-linejoin=\"round\" marker-end=\"url(#{marker})\"{start_marker}/>",
        escape(&flow.id),
        path.join(" ")
    );
    let (a, b) = (points[0], points[1]);
    let n = points.len();
    if flow.default {
        // The default-flow slash, by its gateway: a split's flows share their first
        // stretch, so on a turning route it goes on the stretch after the first
        // turn (this flow's own, next to the gateway) when that is long enough to
        // hold it; else on the stretch into the target, or near the source.
        let long = |p: Point, q: Point| (q.x - p.x).abs() + (q.y - p.y).abs() >= 24;
        let (p, q) = if n > 2 && long(points[1], points[2]) {
            (points[1], points[2])
        } else if n > 2 && points[n - 2].y == points[n - 1].y {
            (points[n - 2], points[n - 1])
        } else {
            (a, b)
        };
        let (dx, dy) = (sign(q.x - p.x), sign(q.y - p.y));
        let (cx, cy) = (p.x + dx * 12, p.y + dy * 12);
        let (px, py) = (-dy, dx);
        let _ = writeln!(
            s,
            "<line x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\" stroke=\"{ink}\" stroke-width=\"1.5\"/>",
            cx - 6 * px - 4 * dx,
            cy - 6 * py - 4 * dy,
            cx + 6 * px + 4 * dx,
            cy + 6 * py + 4 * dy
        );
    }
    if let (Some(text), Some(l)) = (flow_label(flow), label) {
        let _ = writeln!(
            s,
            "<text x=\"{}\" y=\"{}\" font-size=\"11\" fill=\"#555a66\">{}</text>",
            l.x,
            l.y + 11,
            escape(&text)
        );
    }
}

fn sign(v: i32) -> i32 {
    v.signum()
}

fn text_lines(s: &mut String, lines: &[String], b: &Bounds, ink: &str) {
    let cx = b.x + b.width / 2;
    for (k, line) in lines.iter().enumerate() {
        let _ = writeln!(
            s,
            "<text x=\"{cx}\" y=\"{}\" text-anchor=\"middle\" font-size=\"11\" fill=\"{ink}\">{}</text>",
            b.y + 11 + 14 * k as i32,
            escape(line)
        );
    }
}

/// The number of visits (and waiting tokens) at a node's top right.
fn badge(s: &mut String, shape: &Shape, overlay: &Overlay) {
    let Some(state) = overlay.nodes.get(shape.node) else {
        return;
    };
    if state.visits == 0 {
        return;
    }
    let b = shape.bounds;
    let (x, y) = (b.x + b.width, b.y);
    let text = state.visits.to_string();
    let w = (text_width(&text) + 10).max(18);
    let color = if state.failed.is_some() || state.incident.is_some() {
        FAIL_INK
    } else if state.waiting > 0 {
        WAIT_INK
    } else {
        PASSED_INK
    };
    let _ = writeln!(
        s,
        "<g class=\"badge\"><rect x=\"{}\" y=\"{}\" width=\"{w}\" height=\"18\" rx=\"9\" fill=\"{color}\"/><text x=\"{}\" y=\"{}\" text-anchor=\"middle\" font-size=\"11\" font-weight=\"bold\" fill=\"#ffffff\">{text}</text>",
        x - w / 2,
        y - 9,
        x,
        y + 4
    );
    if let Some(message) = &state.failed {
        let _ = write!(s, "<title>{}</title>", escape(message));
    } else if let Some(error) = &state.incident {
        let _ = write!(s, "<title>incident: {}</title>", escape(error));
    }
    s.push_str("</g>\n");
}
