//! Step 4: routes. Flows are orthogonal: out of the source's right side, vertically
//! in the gap between columns (one lane per fork or long flow, and one per flow into
//! a merge), into the target's left side — the flows into a merge each at a height
//! of its own, so each can be followed to its end; a boundary event's flow leaves
//! downwards under its host; a back edge runs under the columns it spans and enters
//! its target from the left.

use std::collections::BTreeMap;

use super::order::{Order, Slot};
use super::place::Grid;
use super::rank::{RankEdge, Ranks};
use super::{Bounds, Point, GAP_X, LOOP_STEP};

/// A flow's route and its label's bounds, by flow index.
pub(super) type Route = (usize, Vec<Point>, Option<Bounds>);

/// The outline of a shape, where a flow meets it.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Outline {
    /// A task's or sub-process's box: its left side is straight.
    Box,
    /// A gateway's diamond.
    Diamond,
    /// An event's circle.
    Circle,
}

impl Outline {
    /// Where a flow coming from the left at height `y` meets the shape `b`.
    fn entry(self, b: &Bounds, y: i32) -> Point {
        let c = b.center();
        let dy = f64::from((y - c.y).abs());
        let (hw, hh) = (f64::from(b.width) / 2.0, f64::from(b.height) / 2.0);
        let inset = match self {
            Outline::Box => 0.0,
            Outline::Diamond => dy * hw / hh,
            Outline::Circle => hw - (hh * hh - dy * dy).max(0.0).sqrt(),
        };
        Point {
            x: b.x + inset.round() as i32,
            y,
        }
    }
}

/// Smallest distance between two flows' entries into one shape that leaves room for
/// each one's label over its own last stretch.
const LABELLED_ENTRIES: i32 = 20;

/// The routes of a container's flows, and the lowest point of its flow (routes and
/// columns' content).
pub(super) fn routes(
    r: &Ranks,
    o: &Order,
    grid: &Grid,
    below: &[i32],
    outline: &[Outline],
) -> (Vec<Route>, i32) {
    let Ranks {
        redges,
        rank,
        ranks,
        ..
    } = r;
    let Order { layers, chains, .. } = o;
    let Grid {
        col_x,
        extra,
        label_w,
        node_bounds,
        boundary_at,
        ..
    } = grid;
    let ranks = *ranks;
    let dummy_y = |d: usize| grid.dummy_y(o, d);
    let mut edges: Vec<Route> = Vec::new();
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
    // Into a merge each flow has a lane of its own (it enters at a height of its
    // own); a back edge shares its target's.
    let tgt_key = |re: &RankEdge, e: usize| {
        if re.back && in_count(re.to) > 1 {
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
    // The height each flow enters its target at: spread over the target's height
    // for a merge, in the order the flows arrive from (top first, back edges from
    // below last), so they do not cross; the middle for one flow.
    let arrives_from = |e: usize, re: &RankEdge| -> (bool, i32) {
        if re.back {
            return (true, 0);
        }
        let chain = &chains[e];
        let y = match chain.len().checked_sub(2).map(|k| chain[k].1) {
            Some(Slot::Dummy(d)) => dummy_y(d),
            _ => source_y(re),
        };
        (false, y)
    };
    let mut entry_y: Vec<i32> = redges.iter().map(|re| center(re.to).y).collect();
    let mut spread_into: BTreeMap<usize, i32> = BTreeMap::new();
    let mut into: BTreeMap<usize, Vec<(bool, i32, usize)>> = BTreeMap::new();
    for (e, re) in redges.iter().enumerate() {
        let (back, y) = arrives_from(e, re);
        into.entry(re.to).or_default().push((back, y, e));
    }
    for (&t, flows) in &mut into {
        if let [(false, y, e)] = flows[..] {
            // One flow in, arriving level with the target's side (a boundary's lane
            // just under its host's middle, say): straight in, with no jog.
            let b = node_bounds[t];
            if y > b.y + 4 && y < b.y + b.height - 4 {
                entry_y[e] = y;
            }
            continue;
        }
        if flows.len() < 2 {
            continue;
        }
        flows.sort();
        let b = node_bounds[t];
        let n = flows.len() as i32;
        for (k, &(_, _, e)) in flows.iter().enumerate() {
            entry_y[e] = b.y + b.height * (k as i32 + 1) / (n + 1);
        }
        spread_into.insert(t, b.height / (n + 1));
    }
    let mut loops = 0;
    // Labels placed so far over the stretch into each target.
    let mut labelled_into: BTreeMap<usize, i32> = BTreeMap::new();
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
            points.push(Point {
                x: in_x,
                y: entry_y[e],
            });
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
                    Slot::Node(_) => entry_y[e],
                    Slot::Dummy(d) => dummy_y(d),
                };
                points.push(Point { x, y });
                points.push(Point { x, y: next_y });
                y = next_y;
            }
        }
        points.push(outline[re.to].entry(&target, entry_y[e]));
        let mut label = (label_w[e] > 0).then(|| Bounds {
            x: col_x[rank[re.to]] - extra[rank[re.to]] + 2,
            y: entry_y[e] - 18,
            width: label_w[e] - 8,
            height: 14,
        });
        // Over its own last stretch when the merge's entries leave room for it;
        // else the merge's labels are stacked over its top entry, so no two are
        // drawn over each other and no flow runs through one.
        let roomy = spread_into
            .get(&re.to)
            .is_none_or(|&gap| gap >= LABELLED_ENTRIES);
        if let (Some(l), false) = (&mut label, roomy) {
            let top = into[&re.to]
                .first()
                .map_or(tc.y, |&(_, _, first)| entry_y[first]);
            let k = labelled_into.entry(re.to).or_insert(0);
            l.y = top - 18 - 15 * *k;
            *k += 1;
        }
        edges.push((re.flow, points, label));
    }
    let flow_bottom = edges
        .iter()
        .flat_map(|(_, p, _)| p.iter().map(|p| p.y))
        .chain(col_bottom.iter().copied())
        .max()
        .unwrap_or(0);

    (edges, flow_bottom)
}
