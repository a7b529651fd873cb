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
//!    the gap between columns (one lane per fork, join or long flow), into the
//!    target's left side; a boundary event's flow leaves downwards under its host; a
//!    back edge runs under the columns it spans and enters its target from the left.
//! 5. Boundary events sit on their host's bottom border; event sub-processes form a
//!    row under the container's flow; everything is moved so the container's
//!    content starts at (0, 0).

use std::collections::BTreeMap;

use super::model::{Elem, Model};

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

/// Lay out a model.
pub(crate) fn layout(model: &Model) -> Layout {
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
    let mut edges: Vec<Edge> = block
        .edges
        .into_iter()
        .filter_map(|(f, points, label)| {
            Some(Edge {
                id: model.flows.get(f)?.id.clone(),
                flow: f,
                waypoints: simplify(points),
                label,
            })
        })
        .collect();
    edges.sort_by_key(|e| e.flow);
    Layout {
        shapes: shapes.into_iter().flatten().collect(),
        edges,
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

/// One slot of a rank: a node, or a long flow passing through.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Slot {
    Node(usize),
    /// The `k`-th dummy of forward edge `e`.
    Dummy(usize),
}

/// A flow between two members of one container, for ranking.
struct RankEdge {
    flow: usize,
    /// The drawn source (a boundary event, or a node).
    source: usize,
    /// The source for ranking (a boundary's host).
    from: usize,
    to: usize,
    back: bool,
}

fn is_start_like(elem: &Elem) -> bool {
    matches!(
        elem,
        Elem::Start { .. }
            | Elem::Gateway(super::model::Gateway::EventBased {
                instantiate: true,
                ..
            })
    )
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
    let m = members.len();

    // Inner containers first: their blocks give their sizes.
    let mut inner: BTreeMap<usize, Block> = BTreeMap::new();
    for &n in members.iter().chain(&event_subs) {
        if model.nodes[n].elem.is_container() {
            inner.insert(n, container(model, Some(n)));
        }
    }
    let boundaries: Vec<Vec<usize>> = members.iter().map(|&n| model.boundaries_of(n)).collect();
    let size = |i: usize| -> (i32, i32) {
        let n = members[i];
        let elem = &model.nodes[n].elem;
        let min_w = boundaries[i].len() as i32 * 44 + 12;
        if let Some(b) = inner.get(&n) {
            (
                (b.width + 2 * PAD_X).max(160).max(min_w),
                (b.height + PAD_TOP + PAD_BOTTOM).max(100),
            )
        } else if elem.is_event() {
            (EVENT, EVENT)
        } else if matches!(elem, Elem::Gateway(_)) {
            (GATEWAY, GATEWAY)
        } else {
            (TASK_W.max(min_w), TASK_H)
        }
    };
    let sizes: Vec<(i32, i32)> = (0..m).map(size).collect();
    // Room taken under each shape.
    let below: Vec<i32> = (0..m)
        .map(|i| {
            let elem = &model.nodes[members[i]].elem;
            let label = if elem.is_event() || matches!(elem, Elem::Gateway(_)) {
                LABEL_ROOM
            } else {
                0
            };
            let nb = boundaries[i].len() as i32;
            let bound = if nb > 0 {
                BOUNDARY_ROOM + 8 * (nb - 1)
            } else {
                0
            };
            label.max(bound)
        })
        .collect();

    // Flows among the members (a boundary's as its host's).
    let host_of = |n: usize| match model.nodes[n].elem {
        Elem::Boundary { host, .. } => host,
        _ => n,
    };
    let mut redges: Vec<RankEdge> = Vec::new();
    for (f, flow) in model.flows.iter().enumerate() {
        if !flow.drawn {
            continue;
        }
        let (Some(&from), Some(&to)) = (index.get(&host_of(flow.source)), index.get(&flow.target))
        else {
            continue;
        };
        redges.push(RankEdge {
            flow: f,
            source: flow.source,
            from,
            to,
            back: false,
        });
    }
    let mut out_edges: Vec<Vec<usize>> = vec![Vec::new(); m];
    let mut in_count = vec![0usize; m];
    for (e, re) in redges.iter().enumerate() {
        out_edges[re.from].push(e);
        in_count[re.to] += 1;
    }

    // 1. Depth-first walk: back edges and discovery order.
    let mut state = vec![0u8; m]; // 0 new, 1 on stack, 2 done
    let mut order: Vec<usize> = Vec::with_capacity(m);
    let roots: Vec<usize> = (0..m).filter(|&i| in_count[i] == 0).chain(0..m).collect();
    for root in roots {
        if state[root] != 0 {
            continue;
        }
        state[root] = 1;
        order.push(root);
        let mut stack: Vec<(usize, usize)> = vec![(root, 0)];
        while let Some(&mut (v, ref mut k)) = stack.last_mut() {
            if let Some(&e) = out_edges[v].get(*k) {
                *k += 1;
                let w = redges[e].to;
                match state[w] {
                    0 => {
                        state[w] = 1;
                        order.push(w);
                        stack.push((w, 0));
                    }
                    1 => redges[e].back = true,
                    _ => {}
                }
            } else {
                state[v] = 2;
                stack.pop();
            }
        }
    }
    let mut discovery = vec![0usize; m];
    for (k, &i) in order.iter().enumerate() {
        discovery[i] = k;
    }

    // Longest-path ranks over the forward edges (Kahn, lowest index first).
    let mut rank = vec![0usize; m];
    let mut indeg = vec![0usize; m];
    for re in redges.iter().filter(|re| !re.back) {
        indeg[re.to] += 1;
    }
    let mut ready: std::collections::BTreeSet<usize> = (0..m).filter(|&i| indeg[i] == 0).collect();
    let mut topo: Vec<usize> = Vec::with_capacity(m);
    while let Some(v) = ready.pop_first() {
        topo.push(v);
        for &e in &out_edges[v] {
            let re = &redges[e];
            if re.back {
                continue;
            }
            rank[re.to] = rank[re.to].max(rank[v] + 1);
            indeg[re.to] -= 1;
            if indeg[re.to] == 0 {
                ready.insert(re.to);
            }
        }
    }
    // Pull sources that are not starts right, to just before their nearest successor.
    for &v in topo.iter().rev() {
        let has_in = redges.iter().any(|re| !re.back && re.to == v);
        if has_in || is_start_like(&model.nodes[members[v]].elem) {
            continue;
        }
        let succ = out_edges[v]
            .iter()
            .filter(|&&e| !redges[e].back)
            .map(|&e| rank[redges[e].to])
            .min();
        if let Some(s) = succ {
            rank[v] = rank[v].max(s.saturating_sub(1));
        }
    }
    let ranks = rank.iter().max().map_or(0, |r| r + 1);

    // 2. Slots: nodes and dummies, and the chain of slots of every forward edge.
    let mut layers: Vec<Vec<Slot>> = vec![Vec::new(); ranks];
    let mut keys: Vec<Vec<f64>> = vec![Vec::new(); ranks];
    for i in 0..m {
        layers[rank[i]].push(Slot::Node(i));
        keys[rank[i]].push(discovery[i] as f64);
    }
    let mut dummies: Vec<(usize, usize)> = Vec::new(); // (rank, edge)
    let mut chains: Vec<Vec<(usize, Slot)>> = vec![Vec::new(); redges.len()];
    for (e, re) in redges.iter().enumerate() {
        if re.back {
            continue;
        }
        let (r0, r1) = (rank[re.from], rank[re.to]);
        let mut chain = vec![(r0, Slot::Node(re.from))];
        for r in r0 + 1..r1 {
            let d = dummies.len();
            dummies.push((r, e));
            layers[r].push(Slot::Dummy(d));
            keys[r].push(discovery[re.from] as f64 + 0.5);
            chain.push((r, Slot::Dummy(d)));
        }
        chain.push((r1, Slot::Node(re.to)));
        chains[e] = chain;
    }
    for (layer, key) in layers.iter_mut().zip(&keys) {
        let mut paired: Vec<(f64, Slot)> = key.iter().copied().zip(layer.iter().copied()).collect();
        paired.sort_by(|a, b| a.0.total_cmp(&b.0));
        *layer = paired.into_iter().map(|(_, s)| s).collect();
    }
    // Neighbours of each slot, with a bias that keeps a boundary's targets below
    // its host's other successors.
    let mut preds: BTreeMap<(usize, Slot), Vec<(Slot, f64)>> = BTreeMap::new();
    let mut succs: BTreeMap<(usize, Slot), Vec<(Slot, f64)>> = BTreeMap::new();
    for (e, chain) in chains.iter().enumerate() {
        let bias = if redges[e].source != members[redges[e].from] {
            0.5
        } else {
            0.0
        };
        for w in chain.windows(2) {
            let ((ra, a), (rb, b)) = (w[0], w[1]);
            preds.entry((rb, b)).or_default().push((a, bias));
            succs.entry((ra, a)).or_default().push((b, -bias));
        }
    }
    let pos_of = |layers: &Vec<Vec<Slot>>, r: usize, s: Slot| -> f64 {
        layers[r].iter().position(|&x| x == s).unwrap_or(0) as f64
    };
    let crossings = |layers: &Vec<Vec<Slot>>| -> usize {
        let mut total = 0;
        for r in 0..ranks.saturating_sub(1) {
            let mut pairs: Vec<(f64, f64)> = Vec::new();
            for (p, &s) in layers[r].iter().enumerate() {
                for &(t, _) in succs.get(&(r, s)).map_or(&[][..], |v| &v[..]) {
                    pairs.push((p as f64, pos_of(layers, r + 1, t)));
                }
            }
            for (i, a) in pairs.iter().enumerate() {
                for b in &pairs[i + 1..] {
                    if (a.0 - b.0) * (a.1 - b.1) < 0.0 {
                        total += 1;
                    }
                }
            }
        }
        total
    };
    let mut best = layers.clone();
    let mut best_cross = crossings(&layers);
    for sweep in 0..8 {
        let down = sweep % 2 == 0;
        let rs: Vec<usize> = if down {
            (1..ranks).collect()
        } else {
            (0..ranks.saturating_sub(1)).rev().collect()
        };
        for r in rs {
            let adj = if down { r - 1 } else { r + 1 };
            let mut keyed: Vec<(f64, usize, Slot)> = layers[r]
                .iter()
                .enumerate()
                .map(|(p, &s)| {
                    let nbrs = if down {
                        preds.get(&(r, s))
                    } else {
                        succs.get(&(r, s))
                    };
                    let key = match nbrs {
                        Some(v) if !v.is_empty() => {
                            v.iter()
                                .map(|&(t, b)| pos_of(&layers, adj, t) + b)
                                .sum::<f64>()
                                / v.len() as f64
                        }
                        _ => p as f64,
                    };
                    (key, p, s)
                })
                .collect();
            keyed.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
            layers[r] = keyed.into_iter().map(|(_, _, s)| s).collect();
        }
        let c = crossings(&layers);
        if c < best_cross {
            best_cross = c;
            best = layers.clone();
        }
    }
    let layers = best;

    // 3. Coordinates. Columns first.
    let mut col_w = vec![0i32; ranks];
    for (r, layer) in layers.iter().enumerate() {
        for s in layer {
            if let Slot::Node(i) = *s {
                col_w[r] = col_w[r].max(sizes[i].0.max(60));
            }
        }
    }
    // Room before a column for the condition texts of the flows into it.
    let label_w: Vec<i32> = redges
        .iter()
        .map(|re| {
            match model
                .flows
                .get(re.flow)
                .and_then(|f| f.condition.as_deref())
            {
                Some(c) => text_width(&condition_label(c)) + 8,
                None => 0,
            }
        })
        .collect();
    let mut extra = vec![0i32; ranks + 1];
    for (e, re) in redges.iter().enumerate() {
        extra[rank[re.to]] = extra[rank[re.to]].max(label_w[e]);
    }
    let mut col_x = vec![0i32; ranks + 1];
    for r in 0..ranks {
        col_x[r + 1] = col_x[r] + col_w[r] + GAP_X + extra[r + 1];
    }
    // Heights: (above the centre line, below it) of each slot's room.
    let extent = |s: Slot| -> (f64, f64) {
        match s {
            Slot::Node(i) => {
                let h = sizes[i].1 as f64;
                (h / 2.0, h / 2.0 + below[i] as f64)
            }
            Slot::Dummy(_) => (0.0, 0.0),
        }
    };
    let gap = |a: Slot, b: Slot| -> f64 {
        match (a, b) {
            (Slot::Dummy(_), Slot::Dummy(_)) => 14.0,
            _ => GAP_Y as f64,
        }
    };
    let mut cy: BTreeMap<(usize, Slot), f64> = BTreeMap::new();
    for (r, layer) in layers.iter().enumerate() {
        let desired = vec![0.0; layer.len()];
        for (s, y) in layer.iter().zip(pack(layer, &desired, &extent, &gap)) {
            cy.insert((r, *s), y);
        }
    }
    for pass in 0..3 {
        let down = pass != 1;
        let rs: Vec<usize> = if down {
            (1..ranks).collect()
        } else {
            (0..ranks.saturating_sub(1)).rev().collect()
        };
        for r in rs {
            let adj = if down { r - 1 } else { r + 1 };
            let layer = &layers[r];
            let desired: Vec<f64> = layer
                .iter()
                .map(|&s| {
                    let own = cy.get(&(r, s)).copied().unwrap_or(0.0);
                    let nbrs = if down {
                        preds.get(&(r, s))
                    } else {
                        succs.get(&(r, s))
                    };
                    // Up passes move only the slots with nothing before them.
                    if !down && preds.get(&(r, s)).is_some_and(|v| !v.is_empty()) {
                        return own;
                    }
                    match nbrs {
                        Some(v) if !v.is_empty() => {
                            let ys: Vec<f64> = v
                                .iter()
                                .filter_map(|&(t, _)| cy.get(&(adj, t)).copied())
                                .collect();
                            if ys.is_empty() {
                                own
                            } else {
                                ys.iter().sum::<f64>() / ys.len() as f64
                            }
                        }
                        _ => own,
                    }
                })
                .collect();
            for (s, y) in layer.iter().zip(pack(layer, &desired, &extent, &gap)) {
                cy.insert((r, *s), y);
            }
        }
    }

    let mut block = Block::default();
    let mut node_bounds: Vec<Bounds> = vec![
        Bounds {
            x: 0,
            y: 0,
            width: 0,
            height: 0
        };
        m
    ];
    for i in 0..m {
        let r = rank[i];
        let (w, h) = sizes[i];
        let c = cy.get(&(r, Slot::Node(i))).copied().unwrap_or(0.0).round() as i32;
        node_bounds[i] = Bounds {
            x: col_x[r] + (col_w[r] - w) / 2,
            y: c - h / 2,
            width: w,
            height: h,
        };
    }
    let dummy_y = |d: usize| -> i32 {
        let (r, _) = dummies[d];
        cy.get(&(r, Slot::Dummy(d))).copied().unwrap_or(0.0).round() as i32
    };

    // Boundary events on their host's bottom border.
    let mut boundary_at: BTreeMap<usize, (Bounds, i32)> = BTreeMap::new(); // node -> (bounds, lane y)
    for i in 0..m {
        let host = node_bounds[i];
        let nb = boundaries[i].len() as i32;
        for (k, &b) in boundaries[i].iter().enumerate() {
            let k = k as i32;
            // 44 apart, centred on the host (which is made wide enough for them).
            let cx = host.x + host.width / 2 + (2 * k - (nb - 1)) * 22;
            let bounds = Bounds {
                x: cx - EVENT / 2,
                y: host.y + host.height - EVENT / 2,
                width: EVENT,
                height: EVENT,
            };
            let lane = host.y + host.height + 44 + 8 * (nb - 1 - k);
            boundary_at.insert(b, (bounds, lane));
        }
    }

    // 4. Routes. Lanes in the gaps between columns: gap g lies before column g.
    #[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
    enum LaneKey {
        Src(usize),
        Tgt(usize),
        Edge(usize),
    }
    let mut lanes: BTreeMap<usize, Vec<(LaneKey, i32)>> = BTreeMap::new();
    let mut want = |g: usize, key: LaneKey, y: i32| {
        let v = lanes.entry(g).or_default();
        if !v.iter().any(|(k, _)| *k == key) {
            v.push((key, y));
        }
    };
    let center = |i: usize| node_bounds[i].center();
    let out_count = |s: usize| redges.iter().filter(|re| re.source == s).count();
    let in_count = |t: usize| redges.iter().filter(|re| re.to == t).count();
    let src_key = |re: &RankEdge, e: usize| {
        if out_count(re.source) > 1 {
            LaneKey::Src(re.source)
        } else {
            LaneKey::Edge(e)
        }
    };
    let tgt_key = |re: &RankEdge, e: usize| {
        if in_count(re.to) > 1 {
            LaneKey::Tgt(re.to)
        } else {
            LaneKey::Edge(e)
        }
    };
    let source_y = |re: &RankEdge| match boundary_at.get(&re.source) {
        Some(&(_, lane)) => lane,
        None => center(re.from).y,
    };
    for (e, re) in redges.iter().enumerate() {
        if re.back {
            let (rs, rt) = (rank[re.from], rank[re.to]);
            want(rs + 1, src_key(re, e), source_y(re));
            want(rt, tgt_key(re, e), center(re.to).y);
        } else {
            let chain = &chains[e];
            let last = chain.len().saturating_sub(2);
            for (k, w) in chain.windows(2).enumerate() {
                let g = w[1].0;
                let key = if k == 0 && (out_count(re.source) > 1 || last > 0) {
                    src_key(re, e)
                } else if k == last {
                    tgt_key(re, e)
                } else {
                    LaneKey::Edge(e)
                };
                let y = match w[0].1 {
                    Slot::Node(_) => source_y(re),
                    Slot::Dummy(d) => dummy_y(d),
                };
                want(g, key, y);
            }
        }
    }
    // Lane x: spread over the gap, ordered by the height they start at.
    let mut lane_x: BTreeMap<(usize, LaneKey), i32> = BTreeMap::new();
    for (&g, v) in &mut lanes {
        v.sort_by_key(|&(k, y)| (y, k));
        let left = col_x[g] - GAP_X - extra[g];
        let n = v.len() as i32;
        for (k, &(key, _)) in v.iter().enumerate() {
            lane_x.insert((g, key), left + GAP_X * (k as i32 + 1) / (n + 1));
        }
    }
    let lane = |g: usize, key: LaneKey| {
        lane_x
            .get(&(g, key))
            .copied()
            .unwrap_or(col_x[g] - extra[g] - GAP_X / 2)
    };

    // Under the columns: the lowest point of each column's content.
    let col_bottom: Vec<i32> = (0..ranks)
        .map(|r| {
            layers[r]
                .iter()
                .map(|&s| match s {
                    Slot::Node(i) => node_bounds[i].y + node_bounds[i].height + below[i],
                    Slot::Dummy(d) => dummy_y(d),
                })
                .max()
                .unwrap_or(0)
        })
        .collect();
    let mut loops = 0;
    for (e, re) in redges.iter().enumerate() {
        let mut points: Vec<Point> = Vec::new();
        let target = node_bounds[re.to];
        let tc = target.center();
        // Where the route leaves the source, and the height it then runs at.
        let (first, run_y) = match boundary_at.get(&re.source) {
            Some(&(b, lane_y)) => {
                points.push(Point {
                    x: b.center().x,
                    y: b.y + b.height,
                });
                (
                    Point {
                        x: b.center().x,
                        y: lane_y,
                    },
                    lane_y,
                )
            }
            None => {
                let c = center(re.from);
                (
                    Point {
                        x: node_bounds[re.from].x + node_bounds[re.from].width,
                        y: c.y,
                    },
                    c.y,
                )
            }
        };
        points.push(first);
        if re.back {
            let (rs, rt) = (rank[re.from], rank[re.to]);
            let floor = col_bottom[rt.min(rs)..=rt.max(rs)]
                .iter()
                .copied()
                .max()
                .unwrap_or(0);
            let loop_y = floor + 20 + LOOP_STEP * loops;
            loops += 1;
            let out_x = lane(rs + 1, src_key(re, e));
            let in_x = lane(rt, tgt_key(re, e));
            points.push(Point { x: out_x, y: run_y });
            points.push(Point {
                x: out_x,
                y: loop_y,
            });
            points.push(Point { x: in_x, y: loop_y });
            points.push(Point { x: in_x, y: tc.y });
        } else {
            let chain = &chains[e];
            let last = chain.len().saturating_sub(2);
            let mut y = run_y;
            for (k, w) in chain.windows(2).enumerate() {
                let g = w[1].0;
                let key = if k == 0 && (out_count(re.source) > 1 || last > 0) {
                    src_key(re, e)
                } else if k == last {
                    tgt_key(re, e)
                } else {
                    LaneKey::Edge(e)
                };
                let x = lane(g, key);
                let next_y = match w[1].1 {
                    Slot::Node(_) => tc.y,
                    Slot::Dummy(d) => dummy_y(d),
                };
                points.push(Point { x, y });
                points.push(Point { x, y: next_y });
                y = next_y;
            }
        }
        points.push(Point {
            x: target.x,
            y: tc.y,
        });
        let label = (label_w[e] > 0).then(|| Bounds {
            x: col_x[rank[re.to]] - extra[rank[re.to]] + 2,
            y: tc.y - 18,
            width: label_w[e] - 8,
            height: 14,
        });
        block.edges.push((re.flow, points, label));
    }
    let flow_bottom = block
        .edges
        .iter()
        .flat_map(|(_, p, _)| p.iter().map(|p| p.y))
        .chain(col_bottom.iter().copied())
        .max()
        .unwrap_or(0);

    // Shapes: members (containers with their content), boundaries, labels.
    for i in 0..m {
        let n = members[i];
        let b = node_bounds[i];
        let elem = &model.nodes[n].elem;
        let label = if elem.is_event() || matches!(elem, Elem::Gateway(_)) {
            Some(label_below(model, n, &b))
        } else {
            None
        };
        block.shapes.push((n, b, label));
        let nb = boundaries[i].len();
        for (k, &bn) in boundaries[i].iter().enumerate() {
            if let Some(&(bb, _)) = boundary_at.get(&bn) {
                let lines = wrap(&model.label(bn), LABEL_CHARS);
                let w = lines.iter().map(|l| text_width(l)).max().unwrap_or(0);
                // Beside the line the flow leaves by: the left half's labels to
                // its left, the others' to its right.
                let left = nb > 1 && 2 * k + 1 < nb;
                let label = Bounds {
                    x: if left {
                        bb.center().x - 4 - w
                    } else {
                        bb.center().x + 4
                    },
                    y: bb.y + bb.height + 1,
                    width: w,
                    height: 14 * lines.len().max(1) as i32,
                };
                block.shapes.push((bn, bb, Some(label)));
            }
        }
        if let Some(mut content) = inner.remove(&n) {
            content.translate(b.x + PAD_X, b.y + PAD_TOP);
            block.shapes.extend(content.shapes);
            block.edges.extend(content.edges);
        }
    }
    // Event sub-processes: a row under the flow.
    let mut x = 0;
    let row_y = if m > 0 { flow_bottom + 40 } else { 0 };
    for &n in &event_subs {
        let Some(mut content) = inner.remove(&n) else {
            continue;
        };
        let b = Bounds {
            x,
            y: row_y,
            width: (content.width + 2 * PAD_X).max(160),
            height: (content.height + PAD_TOP + PAD_BOTTOM).max(100),
        };
        content.translate(b.x + PAD_X, b.y + PAD_TOP);
        block.shapes.push((n, b, None));
        block.shapes.extend(content.shapes);
        block.edges.extend(content.edges);
        x += b.width + 40;
    }
    block.normalize();
    block
}

/// A condition's text as drawn: tidied, and cut at 24 characters.
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

/// Centre heights for the slots of a column, in order, each as near its desired
/// height as the others allow: slots that would collide are packed as one block
/// placed at the mean of their wishes.
fn pack(
    layer: &[Slot],
    desired: &[f64],
    extent: &dyn Fn(Slot) -> (f64, f64),
    gap: &dyn Fn(Slot, Slot) -> f64,
) -> Vec<f64> {
    // Offsets of each slot's centre from its block's first centre.
    struct Run {
        first: usize,
        len: usize,
        /// Σ (desired_i - offset_i)
        sum: f64,
        /// The first slot's centre.
        at: f64,
        /// Offset of the last slot's centre.
        last_offset: f64,
    }
    let mut runs: Vec<Run> = Vec::new();
    let mut offsets = vec![0.0; layer.len()];
    for (i, &want) in desired.iter().enumerate().take(layer.len()) {
        runs.push(Run {
            first: i,
            len: 1,
            sum: want,
            at: want,
            last_offset: 0.0,
        });
        while runs.len() >= 2 {
            let cur = &runs[runs.len() - 1];
            let prev = &runs[runs.len() - 2];
            let prev_last = prev.first + prev.len - 1;
            let need = extent(layer[prev_last]).1
                + gap(layer[prev_last], layer[cur.first])
                + extent(layer[cur.first]).0;
            let prev_last_y = prev.at + prev.last_offset;
            if prev_last_y + need <= cur.at + 1e-9 {
                break;
            }
            let Some(cur) = runs.pop() else {
                break;
            };
            let Some(prev) = runs.last_mut() else {
                break;
            };
            let shift = prev.last_offset + need;
            for o in &mut offsets[cur.first..cur.first + cur.len] {
                *o += shift;
            }
            prev.sum += cur.sum - shift * cur.len as f64;
            prev.len += cur.len;
            prev.last_offset = shift + cur.last_offset;
            prev.at = prev.sum / prev.len as f64;
        }
    }
    let mut out = offsets;
    for run in &runs {
        for o in &mut out[run.first..run.first + run.len] {
            *o += run.at;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::super::model::{Elem, Gateway, MFlow, MNode, Model};
    use super::*;

    /// A model by hand: `nodes` as (id, element, scope), `flows` as (source, target).
    fn model(nodes: &[(&str, Elem, Option<usize>)], flows: &[(usize, usize)]) -> Model {
        let mut m = Model {
            name: "T".into(),
            doc: String::new(),
            nodes: nodes
                .iter()
                .map(|(id, elem, scope)| MNode {
                    id: id.to_string(),
                    doc: String::new(),
                    elem: elem.clone(),
                    scope: *scope,
                    incoming: Vec::new(),
                    outgoing: Vec::new(),
                    default: None,
                })
                .collect(),
            flows: Vec::new(),
        };
        for (f, &(s, t)) in flows.iter().enumerate() {
            m.flows.push(MFlow {
                id: format!("f{f}"),
                source: s,
                target: t,
                condition: None,
                default: false,
                drawn: true,
            });
            m.nodes[s].outgoing.push(f);
            m.nodes[t].incoming.push(f);
        }
        m
    }

    fn start() -> Elem {
        Elem::Start {
            def: None,
            interrupting: true,
        }
    }

    fn end() -> Elem {
        Elem::End { def: None }
    }

    /// A split whose arms differ in length (a long flow gets a dummy lane), a loop
    /// back, and a task with a boundary event.
    fn sample() -> Model {
        model(
            &[
                ("s", start(), None),                           // 0
                ("g", Elem::Gateway(Gateway::Exclusive), None), // 1
                ("a", Elem::ServiceTask, None),                 // 2
                ("b", Elem::ServiceTask, None),                 // 3
                ("m", Elem::Gateway(Gateway::Exclusive), None), // 4
                ("e", end(), None),                             // 5
                (
                    "late",
                    Elem::Boundary {
                        host: 2,
                        def: super::super::model::EventDef::Terminate,
                        interrupting: true,
                    },
                    None,
                ), // 6
                ("x", end(), None),                             // 7
            ],
            &[
                (0, 1),
                (1, 2),
                (2, 3),
                (3, 4),
                (1, 4),
                (4, 5),
                (4, 1),
                (6, 7),
            ],
        )
    }

    #[test]
    fn ranks_run_left_to_right_and_loops_go_back() {
        let l = layout(&sample());
        let x = |id: &str| l.shape(id).map(|s| s.bounds.x).unwrap_or(-1);
        assert!(
            x("s") < x("g")
                && x("g") < x("a")
                && x("a") < x("b")
                && x("b") < x("m")
                && x("m") < x("e")
        );
        // The loop m -> g runs under the columns it spans and enters g from the left.
        let back = &l.edges[6];
        let lowest = back.waypoints.iter().map(|p| p.y).max().unwrap_or(0);
        for id in ["g", "a", "b", "m"] {
            let b = l.shape(id).map(|s| s.bounds).unwrap();
            assert!(lowest > b.y + b.height, "the loop passes under {id}");
        }
        assert_eq!(back.waypoints.last().map(|p| p.x), Some(x("g")));
    }

    #[test]
    fn a_long_flow_passes_no_shape() {
        let l = layout(&sample());
        let long = &l.edges[4]; // g -> m, past a and b
        for pair in long.waypoints.windows(2) {
            let (p, q) = (pair[0], pair[1]);
            let seg = Bounds {
                x: p.x.min(q.x),
                y: p.y.min(q.y),
                width: (p.x - q.x).abs().max(1),
                height: (p.y - q.y).abs().max(1),
            };
            for id in ["a", "b"] {
                let b = l.shape(id).map(|s| s.bounds).unwrap();
                assert!(
                    !seg.overlaps(&b),
                    "g -> m crosses {id}: {:?}",
                    long.waypoints
                );
            }
        }
    }

    #[test]
    fn layout_is_deterministic_and_has_no_overlaps() {
        let (a, b) = (layout(&sample()), layout(&sample()));
        assert_eq!(a, b);
        assert!(a.overlapping().is_empty());
        let late = a.shape("late").unwrap();
        let host = a.shape("a").unwrap();
        assert_eq!(late.bounds.center().y, host.bounds.y + host.bounds.height);
    }

    #[test]
    fn wraps_labels() {
        assert_eq!(
            wrap("check stock level now", 14),
            vec!["check stock", "level now"]
        );
        assert_eq!(wrap("", 14), Vec::<String>::new());
    }

    #[test]
    fn an_empty_model_lays_out() {
        let l = layout(&model(&[], &[]));
        assert!(l.shapes.is_empty() && l.edges.is_empty());
    }
}
