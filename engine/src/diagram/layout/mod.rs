//! A deterministic layered layout, left to right.
//!
//! Each container (the process, every sub-process and event sub-process) is laid out
//! on its own, innermost first, so a container is sized to fit its content:
//!
//! 1. *Ranks.* A depth-first walk from the container's sources (in declaration
//!    order) marks the flows that close a loop as back edges; the rest form a DAG
//!    ranked by longest path. A boundary event's flows count as its host's. A source
//!    that is not a start event (a link catch) is pulled right to just before its
//!    first successor.
//! 2. *Order.* A flow spanning several ranks gets a dummy slot in each rank between,
//!    so its line has a free lane. The order within ranks starts from the walk's
//!    order and is improved by barycenter sweeps (down, up, ...), keeping the order
//!    with the fewest crossings.
//! 3. *Coordinates.* Columns are as wide as their widest shape; within a column each
//!    slot wants to sit at the mean height of its neighbours and slots that collide
//!    are packed as blocks around their mean (down, up, down again).
//! 4. *Routes.* Flows are orthogonal: out of the source's right side, vertically in
//!    the gap between columns (one lane per fork or long flow, one per flow into a
//!    merge), into the target's left side — the flows into a merge at heights of
//!    their own, met where the diamond, circle or box is; a boundary event's flow
//!    leaves downwards under its host; a back edge runs under the columns it spans
//!    and enters its target from the left.
//! 5. *Shapes.* Boundary events sit on their host's bottom border; event sub-processes form a
//!    row under the container's flow; everything is moved so the container's
//!    content starts at (0, 0).
//!
//! One module per step: `rank.rs` (1), `order.rs` (2), `place.rs` (3 and 5, and the
//! sizes of shapes), `route.rs` (4); this file holds the types, the entry and the
//! driver of one container.

use std::collections::BTreeMap;

use super::model::{Elem, Model};

mod kept;
mod order;
mod place;
mod rank;
mod route;

#[cfg(test)]
mod tests;

/// A point of a diagram, in pixels.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Point {
    /// Left to right.
    pub x: i32,
    /// Top to bottom.
    pub y: i32,
}

/// An axis-aligned rectangle: top-left corner and size.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Bounds {
    /// Left edge.
    pub x: i32,
    /// Top edge.
    pub y: i32,
    /// Width.
    pub width: i32,
    /// Height.
    pub height: i32,
}

impl Bounds {
    /// Whether the two rectangles share interior area (touching edges do not count).
    pub fn overlaps(&self, other: &Bounds) -> bool {
        self.x < other.x + other.width
            && other.x < self.x + self.width
            && self.y < other.y + other.height
            && other.y < self.y + self.height
    }

    /// Whether `other` lies entirely inside this rectangle.
    pub fn contains(&self, other: &Bounds) -> bool {
        other.x >= self.x
            && other.y >= self.y
            && other.x + other.width <= self.x + self.width
            && other.y + other.height <= self.y + self.height
    }

    /// The centre.
    pub fn center(&self) -> Point {
        Point {
            x: self.x + self.width / 2,
            y: self.y + self.height / 2,
        }
    }

    fn translate(&mut self, dx: i32, dy: i32) {
        self.x += dx;
        self.y += dy;
    }
}

/// One node's shape in a [`Layout`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Shape {
    /// The node's id (also the BPMN element id).
    pub id: String,
    /// The shape's rectangle.
    pub bounds: Bounds,
    /// Where its label goes, when it is drawn outside the shape (events, gateways).
    pub label: Option<Bounds>,
    /// The node's index in [`Process::nodes`](crate::Process::nodes).
    pub node: usize,
    /// The shape of the sub-process or event sub-process it is drawn in.
    pub container: Option<usize>,
    /// For a boundary event, the node it is attached to.
    pub host: Option<usize>,
}

/// One sequence flow's route in a [`Layout`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Edge {
    /// The flow's id in the BPMN export (`Flow_<source>_<target>`).
    pub id: String,
    /// The flow's index in [`Process::flows`](crate::Process::flows).
    pub flow: usize,
    /// The route, source to target; consecutive points differ in x or in y, not both.
    pub waypoints: Vec<Point>,
    /// Where the condition's text goes, for a conditional flow: above the stretch
    /// into the target, in room the layout keeps for it before the target's column.
    pub label: Option<Bounds>,
}

/// The layout of a process: a shape per node, a route per drawn flow (a link pair's
/// jump is not drawn), and the size of the whole. Made by
/// [`Process::layout`](crate::Process::layout).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Layout {
    /// The shapes, in node order.
    pub shapes: Vec<Shape>,
    /// The routes, in flow order.
    pub edges: Vec<Edge>,
    /// The routes of the compensation associations (a compensation boundary to its
    /// handler), in the model's order; `flow` is the association's place in it.
    pub associations: Vec<Edge>,
    /// Width of the drawing, margins included.
    pub width: i32,
    /// Height of the drawing, margins included.
    pub height: i32,
}

impl Layout {
    /// The shape of the node `id`.
    pub fn shape(&self, id: &str) -> Option<&Shape> {
        self.shapes.iter().find(|s| s.id == id)
    }

    /// Pairs of shapes that overlap though neither contains the other as its
    /// container and neither is a boundary event on the other: empty for every
    /// layout this module makes.
    pub fn overlapping(&self) -> Vec<(&str, &str)> {
        let mut out = Vec::new();
        for (i, a) in self.shapes.iter().enumerate() {
            for b in &self.shapes[i + 1..] {
                if a.bounds.overlaps(&b.bounds)
                    && !self.encloses(a, b)
                    && !self.encloses(b, a)
                    && !self.attached(a, b)
                    && !self.attached(b, a)
                {
                    out.push((a.id.as_str(), b.id.as_str()));
                }
            }
        }
        out
    }

    /// Whether `outer` is a container `inner` is drawn in (at any depth).
    fn encloses(&self, outer: &Shape, inner: &Shape) -> bool {
        let mut at = inner
            .container
            .or(inner.host.and_then(|h| self.shape_of(h)?.container));
        while let Some(c) = at {
            if c == outer.node {
                return true;
            }
            at = self.shape_of(c).and_then(|s| s.container);
        }
        false
    }

    /// Whether `boundary` is attached to `host`, or to a shape inside it.
    fn attached(&self, boundary: &Shape, host: &Shape) -> bool {
        match boundary.host {
            Some(h) if h == host.node => true,
            Some(h) => self.shape_of(h).is_some_and(|hs| self.encloses(host, hs)),
            None => false,
        }
    }

    fn shape_of(&self, node: usize) -> Option<&Shape> {
        self.shapes.iter().find(|s| s.node == node)
    }
}

// Sizes as bpmn.io draws them.
pub(crate) const EVENT: i32 = 36;
pub(crate) const GATEWAY: i32 = 50;
pub(crate) const TASK_W: i32 = 100;
pub(crate) const TASK_H: i32 = 80;

/// Space between columns (room for vertical lanes and labels).
const GAP_X: i32 = 60;
/// Space between shapes in a column.
const GAP_Y: i32 = 30;
/// Room under an event or gateway for its label.
const LABEL_ROOM: i32 = 38;
/// Room under an activity with boundary events: the circles' lower halves, their
/// labels and the lane their flows leave by.
const BOUNDARY_ROOM: i32 = 52;
/// Spacing of the lanes of back edges under the columns.
const LOOP_STEP: i32 = 12;
/// A container's frame around its content.
const PAD_X: i32 = 30;
const PAD_TOP: i32 = 40;
const PAD_BOTTOM: i32 = 30;
/// The margin around the whole drawing.
const MARGIN: i32 = 30;
/// Characters per label line (11px text).
pub(crate) const LABEL_CHARS: usize = 16;
/// Characters per line inside a task.
pub(crate) const TASK_CHARS: usize = 14;

/// Split `text` into lines of at most `width` characters at spaces (a longer word is
/// a line of its own).
pub(crate) fn wrap(text: &str, width: usize) -> Vec<String> {
    let mut lines: Vec<String> = Vec::new();
    let mut line = String::new();
    for word in text.split_whitespace() {
        if !line.is_empty() && line.chars().count() + 1 + word.chars().count() > width {
            lines.push(std::mem::take(&mut line));
        }
        if !line.is_empty() {
            line.push(' ');
        }
        line.push_str(word);
    }
    if !line.is_empty() {
        lines.push(line);
    }
    lines
}

/// The estimated width of 11px text.
pub(crate) fn text_width(text: &str) -> i32 {
    (text.chars().count() as i32 * 13 + 1) / 2
}

/// Lay out a model: as its diagram drew it, for one imported with a drawing;
/// else computed.
pub(crate) fn layout(model: &Model) -> Layout {
    if let Some(kept) = kept::kept(model) {
        return kept;
    }
    let mut block = container(model, None);
    block.translate(MARGIN, MARGIN);
    let mut shapes: Vec<Option<Shape>> = vec![None; model.nodes.len()];
    for (n, bounds, label) in block.shapes {
        let Some(node) = model.nodes.get(n) else {
            continue;
        };
        let host = match node.elem {
            Elem::Boundary { host, .. } => Some(host),
            _ => None,
        };
        shapes[n] = Some(Shape {
            id: node.id.clone(),
            bounds,
            label,
            node: n,
            container: node.scope,
            host,
        });
    }
    let (mut edges, mut associations) = (Vec::new(), Vec::new());
    for (f, points, label) in block.edges {
        let waypoints = simplify(points);
        match model.flows.get(f) {
            Some(flow) => edges.push(Edge {
                id: flow.id.clone(),
                flow: f,
                waypoints,
                label,
            }),
            None => {
                let a = f - model.flows.len();
                let Some(&(boundary, handler)) = model.associations.get(a) else {
                    continue;
                };
                associations.push(Edge {
                    id: super::bpmn::association_id(model, boundary, handler),
                    flow: a,
                    waypoints,
                    label: None,
                });
            }
        }
    }
    edges.sort_by_key(|e| e.flow);
    associations.sort_by_key(|e| e.flow);
    Layout {
        shapes: shapes.into_iter().flatten().collect(),
        edges,
        associations,
        width: block.width + 2 * MARGIN,
        height: block.height + 2 * MARGIN,
    }
}

/// Drop repeated and collinear points.
fn simplify(points: Vec<Point>) -> Vec<Point> {
    let mut out: Vec<Point> = Vec::with_capacity(points.len());
    for p in points {
        if out.last() == Some(&p) {
            continue;
        }
        if out.len() >= 2 {
            let (a, b) = (out[out.len() - 2], out[out.len() - 1]);
            if (a.x == b.x && b.x == p.x) || (a.y == b.y && b.y == p.y) {
                out.pop();
            }
        }
        out.push(p);
    }
    out
}

/// A laid-out container's content, with its origin at (0, 0).
#[derive(Default)]
struct Block {
    width: i32,
    height: i32,
    shapes: Vec<(usize, Bounds, Option<Bounds>)>,
    edges: Vec<(usize, Vec<Point>, Option<Bounds>)>,
}

impl Block {
    fn translate(&mut self, dx: i32, dy: i32) {
        for (_, b, l) in &mut self.shapes {
            b.translate(dx, dy);
            if let Some(l) = l {
                l.translate(dx, dy);
            }
        }
        for (_, points, label) in &mut self.edges {
            for p in points {
                p.x += dx;
                p.y += dy;
            }
            if let Some(l) = label {
                l.translate(dx, dy);
            }
        }
    }

    /// Move everything so the bounding box of shapes, labels and routes starts at
    /// (0, 0), and size the block to it.
    fn normalize(&mut self) {
        let (mut x0, mut y0, mut x1, mut y1) = (i32::MAX, i32::MAX, i32::MIN, i32::MIN);
        let mut add = |b: &Bounds| {
            x0 = x0.min(b.x);
            y0 = y0.min(b.y);
            x1 = x1.max(b.x + b.width);
            y1 = y1.max(b.y + b.height);
        };
        for (_, b, l) in &self.shapes {
            add(b);
            if let Some(l) = l {
                add(l);
            }
        }
        for (_, points, label) in &self.edges {
            for p in points {
                add(&Bounds {
                    x: p.x,
                    y: p.y,
                    width: 0,
                    height: 0,
                });
            }
            if let Some(l) = label {
                add(l);
            }
        }
        if x0 > x1 {
            self.width = 0;
            self.height = 0;
            return;
        }
        self.translate(-x0, -y0);
        self.width = x1 - x0;
        self.height = y1 - y0;
    }
}

/// Lay out the content of `scope` (`None`: the process).
fn container(model: &Model, scope: Option<usize>) -> Block {
    let members: Vec<usize> = model
        .members(scope)
        .filter(|&n| {
            !matches!(
                model.nodes[n].elem,
                Elem::Boundary { .. } | Elem::EventSubProcess
            )
        })
        .collect();
    let event_subs: Vec<usize> = model
        .members(scope)
        .filter(|&n| model.nodes[n].elem == Elem::EventSubProcess)
        .collect();
    let index: BTreeMap<usize, usize> = members.iter().enumerate().map(|(i, &n)| (n, i)).collect();

    // Inner containers first: their blocks give their sizes.
    let mut inner: BTreeMap<usize, Block> = BTreeMap::new();
    for &n in members.iter().chain(&event_subs) {
        if model.nodes[n].elem.is_container() {
            inner.insert(n, container(model, Some(n)));
        }
    }
    let boundaries: Vec<Vec<usize>> = members.iter().map(|&n| model.boundaries_of(n)).collect();
    let (sizes, below) = place::sizes(model, &members, &boundaries, &inner);
    let ranks = rank::rank(model, &members, &index);
    let order = order::order(&ranks, &members);
    let grid = place::coordinates(model, &members, &ranks, &order, &sizes, &below, &boundaries);
    let outline: Vec<route::Outline> = members
        .iter()
        .map(|&n| match &model.nodes[n].elem {
            Elem::Gateway(_) => route::Outline::Diamond,
            elem if elem.is_event() => route::Outline::Circle,
            _ => route::Outline::Box,
        })
        .collect();
    let (edges, flow_bottom) = route::routes(&ranks, &order, &grid, &below, &outline);
    let mut block = Block {
        edges,
        ..Block::default()
    };
    place::shapes(
        model,
        &members,
        &event_subs,
        &boundaries,
        &grid,
        inner,
        flow_bottom,
        &mut block,
    );
    block.normalize();
    block
}

/// A condition's text as drawn: tidied, and cut at 24 characters.
/// What a flow is labelled with: its name from the diagram it was imported from,
/// else a short form of its condition; `None` for neither.
pub(crate) fn flow_label(flow: &super::model::MFlow) -> Option<String> {
    match flow.name.as_str() {
        "" => flow.condition.as_deref().map(condition_label),
        name if name.chars().count() > 24 => Some(name.chars().take(23).collect::<String>() + "…"),
        name => Some(name.to_string()),
    }
}

pub(crate) fn condition_label(condition: &str) -> String {
    let text = super::bpmn::tidy_condition(condition);
    if text.chars().count() > 24 {
        text.chars().take(23).collect::<String>() + "…"
    } else {
        text
    }
}

/// An event's or gateway's label, centred under it.
fn label_below(model: &Model, n: usize, b: &Bounds) -> Bounds {
    let lines = wrap(&model.label(n), LABEL_CHARS);
    let w = lines.iter().map(|l| text_width(l)).max().unwrap_or(0);
    Bounds {
        x: b.center().x - w / 2,
        y: b.y + b.height + 5,
        width: w,
        height: 14 * lines.len().max(1) as i32,
    }
}
