//! The layout a diagram came with: an imported process is drawn where its file drew
//! it (ARCHITECTURE.md, "The pipeline": `import/di.rs` reads the file's diagram
//! interchange), so an export keeps the modeler's layout. Elements the import made
//! (implicit starts and ends) are placed beside the element they attach to; an
//! element of the file it does not draw makes the whole layout computed instead.

use super::{text_width, Bounds, Edge, Layout, Point, Shape, EVENT, MARGIN};
use crate::diagram::model::{Elem, Model};

/// How far an added start or end stands from its neighbour.
const BESIDE: i32 = 40;

/// The file's layout of `model`, if it was imported with one.
pub(super) fn kept(model: &Model) -> Option<Layout> {
    if !model.imported() {
        return None;
    }
    let n = model.nodes.len();
    let mut bounds: Vec<Option<Bounds>> = vec![None; n];
    let mut labels: Vec<Option<Bounds>> = vec![None; n];
    for (i, node) in model.nodes.iter().enumerate() {
        match node.drawing.as_slice() {
            [x, y, w, h, rest @ ..] => {
                bounds[i] = Some(Bounds {
                    x: *x,
                    y: *y,
                    width: *w,
                    height: *h,
                });
                if let [lx, ly, lw, lh] = rest {
                    labels[i] = Some(Bounds {
                        x: *lx,
                        y: *ly,
                        width: *lw,
                        height: *lh,
                    });
                }
            }
            // Made by the import: placed below.
            _ if node.tag.is_empty() => {}
            _ => return None,
        }
    }
    place_added(model, &mut bounds)?;
    let shapes: Vec<Shape> = model
        .nodes
        .iter()
        .enumerate()
        .map(|(i, node)| {
            let b = bounds[i].expect("placed");
            let outside = node.elem.is_event() || matches!(node.elem, Elem::Gateway(_));
            let label = outside.then(|| {
                labels[i].unwrap_or_else(|| {
                    let width = text_width(&model.label(i)).max(1);
                    Bounds {
                        x: b.x + b.width / 2 - width / 2,
                        y: b.y + b.height + 5,
                        width,
                        height: 14,
                    }
                })
            });
            Shape {
                id: node.id.clone(),
                bounds: b,
                label,
                node: i,
                container: node.scope,
                host: match node.elem {
                    Elem::Boundary { host, .. } => Some(host),
                    _ => None,
                },
            }
        })
        .collect();
    let mut edges = Vec::new();
    for (f, flow) in model.flows.iter().enumerate().filter(|(_, f)| f.drawn) {
        let (mut points, mut label) = (Vec::new(), None);
        let mut parts = flow.drawing.split(|v| *v == i32::MIN);
        for pair in parts.next().unwrap_or_default().chunks_exact(2) {
            points.push(Point {
                x: pair[0],
                y: pair[1],
            });
        }
        if let Some([x, y, w, h]) = parts.next().and_then(|l| <[i32; 4]>::try_from(l).ok()) {
            let labelled = !flow.name.is_empty() || flow.condition.is_some();
            label = labelled.then_some(Bounds {
                x,
                y,
                width: w,
                height: h,
            });
        }
        if points.len() < 2 {
            let added = |n: usize| model.nodes[n].tag.is_empty();
            if !added(flow.source) && !added(flow.target) {
                return None;
            }
            points = straight(bounds[flow.source]?, bounds[flow.target]?);
        }
        edges.push(Edge {
            id: flow.id.clone(),
            flow: f,
            waypoints: points,
            label,
        });
    }
    // The file's drawing of an association is not read: drawn from the boundary
    // down, then across to the handler.
    let associations = model
        .associations
        .iter()
        .enumerate()
        .filter_map(|(a, &(boundary, handler))| {
            Some(Edge {
                id: super::super::bpmn::association_id(model, boundary, handler),
                flow: a,
                waypoints: from_below(bounds[boundary]?, bounds[handler]?),
                label: None,
            })
        })
        .collect();
    Some(framed(shapes, edges, associations))
}

/// Place the nodes the import added, each beside a placed neighbour: an end right of
/// what flows into it, a start (or its split) left of what it flows to.
fn place_added(model: &Model, bounds: &mut [Option<Bounds>]) -> Option<()> {
    loop {
        let mut progress = false;
        let mut missing = false;
        for i in 0..model.nodes.len() {
            if bounds[i].is_some() {
                continue;
            }
            let node = &model.nodes[i];
            let size = match node.elem {
                Elem::Gateway(_) => 50,
                _ => EVENT,
            };
            let from = node
                .incoming
                .iter()
                .find_map(|&f| bounds[model.flows[f].source]);
            let to = node
                .outgoing
                .iter()
                .find_map(|&f| bounds[model.flows[f].target]);
            bounds[i] = match (from, to) {
                (Some(s), _) => Some(Bounds {
                    x: s.x + s.width + BESIDE,
                    y: s.y + s.height / 2 - size / 2,
                    width: size,
                    height: size,
                }),
                (None, Some(t)) => Some(Bounds {
                    x: t.x - BESIDE - size,
                    y: t.y + t.height / 2 - size / 2,
                    width: size,
                    height: size,
                }),
                (None, None) => None,
            };
            // Off whatever the file drew there: further down, a few times.
            if let Some(mut b) = bounds[i] {
                for _ in 0..6 {
                    let hit = (0..bounds.len())
                        .any(|j| j != i && bounds[j].is_some_and(|o| o.overlaps(&b)));
                    if !hit {
                        break;
                    }
                    b.y += size + BESIDE / 2;
                }
                bounds[i] = Some(b);
            }
            progress |= bounds[i].is_some();
            missing |= bounds[i].is_none();
        }
        if !missing {
            return Some(());
        }
        if !progress {
            return None;
        }
    }
}

/// An orthogonal route from the bottom of `s` (a boundary event) down to `t`, and
/// across into its nearer side; `t` not below `s`: as [`straight`].
fn from_below(s: Bounds, t: Bounds) -> Vec<Point> {
    let (sx, bottom) = (s.x + s.width / 2, s.y + s.height);
    let tc = t.center();
    if t.y >= bottom && sx > t.x && sx < t.x + t.width {
        return vec![Point { x: sx, y: bottom }, Point { x: sx, y: t.y }];
    }
    if tc.y <= bottom {
        return straight(s, t);
    }
    let side = if tc.x >= sx { t.x } else { t.x + t.width };
    vec![
        Point { x: sx, y: bottom },
        Point { x: sx, y: tc.y },
        Point { x: side, y: tc.y },
    ]
}

/// An orthogonal route from `s`'s right side to `t`'s left side.
fn straight(s: Bounds, t: Bounds) -> Vec<Point> {
    let (sx, sy) = (s.x + s.width, s.y + s.height / 2);
    let (tx, ty) = (t.x, t.y + t.height / 2);
    if sy == ty {
        return vec![Point { x: sx, y: sy }, Point { x: tx, y: ty }];
    }
    let mx = (sx + tx) / 2;
    vec![
        Point { x: sx, y: sy },
        Point { x: mx, y: sy },
        Point { x: mx, y: ty },
        Point { x: tx, y: ty },
    ]
}

/// The layout's size; drawn from the origin on, so a drawing that reaches left of or
/// above it is moved right or down (only then).
fn framed(mut shapes: Vec<Shape>, mut edges: Vec<Edge>, mut associations: Vec<Edge>) -> Layout {
    let xs = shapes
        .iter()
        .flat_map(|s| [Some(s.bounds), s.label].into_iter().flatten())
        .chain(edges.iter().filter_map(|e| e.label))
        .map(|b| (b.x, b.y, b.x + b.width, b.y + b.height))
        .chain(
            edges
                .iter()
                .chain(&associations)
                .flat_map(|e| e.waypoints.iter().map(|p| (p.x, p.y, p.x, p.y))),
        );
    let (mut min_x, mut min_y, mut max_x, mut max_y) = (0, 0, 0, 0);
    for (x0, y0, x1, y1) in xs {
        min_x = min_x.min(x0);
        min_y = min_y.min(y0);
        max_x = max_x.max(x1);
        max_y = max_y.max(y1);
    }
    let dx = if min_x < 0 { MARGIN - min_x } else { 0 };
    let dy = if min_y < 0 { MARGIN - min_y } else { 0 };
    if dx != 0 || dy != 0 {
        let mv = |b: &mut Bounds| {
            b.x += dx;
            b.y += dy;
        };
        for s in &mut shapes {
            mv(&mut s.bounds);
            if let Some(l) = &mut s.label {
                mv(l);
            }
        }
        for e in edges.iter_mut().chain(&mut associations) {
            if let Some(l) = &mut e.label {
                mv(l);
            }
            for p in &mut e.waypoints {
                p.x += dx;
                p.y += dy;
            }
        }
    }
    Layout {
        shapes,
        edges,
        associations,
        width: max_x + dx + MARGIN,
        height: max_y + dy + MARGIN,
    }
}
