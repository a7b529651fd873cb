//! Steps 3 and 5: the sizes of shapes, their coordinates (columns as wide as their
//! widest shape; slots packed around the mean height of their neighbours), boundary
//! events on their host's border, containers' content and event sub-processes.

use std::collections::BTreeMap;

use super::super::model::{Elem, Model};
use super::order::{Order, Slot};
use super::rank::Ranks;
use super::{
    flow_label, label_below, text_width, wrap, Block, Bounds, BOUNDARY_ROOM, EVENT, GAP_X, GAP_Y,
    GATEWAY, LABEL_CHARS, LABEL_ROOM, PAD_BOTTOM, PAD_TOP, PAD_X, TASK_H, TASK_W,
};

/// Each member's size, and the room taken under it (its label, its boundary events).
/// The width of a boundary's label (its longest line).
fn label_width(model: &Model, b: usize) -> i32 {
    wrap(&model.label(b), LABEL_CHARS)
        .iter()
        .map(|l| text_width(l))
        .max()
        .unwrap_or(0)
}

/// Where the boundary events `bs` stand along their host's bottom border, from the
/// first, and how far the last stands from the first: each label is drawn right of
/// its event's flow, and the next event stands clear of it (at least 44 apart), so
/// no flow leaving by a boundary runs through another's label.
fn boundary_offsets(model: &Model, bs: &[usize]) -> (Vec<i32>, i32) {
    let mut offsets = vec![0];
    for &b in &bs[..bs.len().saturating_sub(1)] {
        let last = *offsets.last().expect("one");
        offsets.push(last + (label_width(model, b) + 16).max(44));
    }
    let span = *offsets.last().expect("one");
    (offsets, span)
}

/// How far the tallest label of the boundary events `bs` reaches below a one-line
/// label: their lanes go that much lower.
fn label_overhang(model: &Model, bs: &[usize]) -> i32 {
    let lines = bs
        .iter()
        .map(|&b| wrap(&model.label(b), LABEL_CHARS).len().max(1) as i32)
        .max()
        .unwrap_or(1);
    14 * (lines - 1)
}

pub(super) fn sizes(
    model: &Model,
    members: &[usize],
    boundaries: &[Vec<usize>],
    inner: &BTreeMap<usize, Block>,
) -> (Vec<(i32, i32)>, Vec<i32>) {
    let m = members.len();
    let size = |i: usize| -> (i32, i32) {
        let n = members[i];
        let elem = &model.nodes[n].elem;
        let min_w = match boundaries[i].is_empty() {
            true => 0,
            false => boundary_offsets(model, &boundaries[i]).1 + 56,
        };
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
                BOUNDARY_ROOM + 8 * (nb - 1) + label_overhang(model, &boundaries[i])
            } else {
                0
            };
            label.max(bound)
        })
        .collect();

    (sizes, below)
}

/// Where everything of a container stands.
pub(super) struct Grid {
    /// Each column's left edge (one more, for the gap after the last).
    pub col_x: Vec<i32>,
    /// Room before each column for the condition texts of the flows into it.
    pub extra: Vec<i32>,
    /// The width of each flow's label (0: none).
    pub label_w: Vec<i32>,
    /// The centre height of every slot.
    pub cy: BTreeMap<(usize, Slot), f64>,
    pub node_bounds: Vec<Bounds>,
    /// Each boundary event's bounds and the height of the lane its flow leaves by.
    pub boundary_at: BTreeMap<usize, (Bounds, i32)>,
}

impl Grid {
    /// The height of dummy `d`.
    pub fn dummy_y(&self, order: &Order, d: usize) -> i32 {
        let (r, _) = order.dummies[d];
        self.cy
            .get(&(r, Slot::Dummy(d)))
            .copied()
            .unwrap_or(0.0)
            .round() as i32
    }
}

/// The coordinates of the ordered slots.
pub(super) fn coordinates(
    model: &Model,
    members: &[usize],
    r: &Ranks,
    o: &Order,
    sizes: &[(i32, i32)],
    below: &[i32],
    boundaries: &[Vec<usize>],
) -> Grid {
    let Ranks {
        redges,
        rank,
        ranks,
        ..
    } = r;
    let Order {
        layers,
        preds,
        succs,
        ..
    } = o;
    let (m, ranks) = (rank.len(), *ranks);
    // 3. Coordinates. Columns first.
    let mut col_w = vec![0i32; ranks];
    for (r, layer) in layers.iter().enumerate() {
        for s in layer {
            if let Slot::Node(i) = *s {
                // An event's or gateway's label, drawn under it, stays in its
                // column: the flows fanning out or in beside it pass clear of it.
                let n = members[i];
                let elem = &model.nodes[n].elem;
                let label = match elem.is_event() || matches!(elem, Elem::Gateway(_)) {
                    true => {
                        label_below(
                            model,
                            n,
                            &Bounds {
                                x: 0,
                                y: 0,
                                width: 0,
                                height: 0,
                            },
                        )
                        .width
                            + 8
                    }
                    false => 0,
                };
                // A boundary's label, beside its flow, stays in its host's column
                // too (a label reaches as far from the host's centre as its event
                // stands, plus its width).
                let (offsets, span) = boundary_offsets(model, &boundaries[i]);
                let reach = boundaries[i]
                    .iter()
                    .zip(&offsets)
                    .map(|(&bn, &o)| (o - span / 2).abs() + 4 + label_width(model, bn))
                    .max()
                    .unwrap_or(0);
                col_w[r] = col_w[r]
                    .max(sizes[i].0.max(60))
                    .max(label)
                    .max(2 * reach + 8);
            }
        }
    }
    // Room before a column for the condition texts of the flows into it.
    let label_w: Vec<i32> = redges
        .iter()
        .map(|re| match model.flows.get(re.flow).and_then(flow_label) {
            Some(text) => text_width(&text) + 8,
            None => 0,
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
    // Boundary events on their host's bottom border.
    let mut boundary_at: BTreeMap<usize, (Bounds, i32)> = BTreeMap::new(); // node -> (bounds, lane y)
    for i in 0..m {
        let host = node_bounds[i];
        let nb = boundaries[i].len() as i32;
        let (offsets, span) = boundary_offsets(model, &boundaries[i]);
        for (k, &b) in boundaries[i].iter().enumerate() {
            let k = k as i32;
            // 44 apart, centred on the host (which is made wide enough for them).
            let cx = host.x + host.width / 2 - span / 2 + offsets[k as usize];
            let bounds = Bounds {
                x: cx - EVENT / 2,
                y: host.y + host.height - EVENT / 2,
                width: EVENT,
                height: EVENT,
            };
            // Under the boundaries' labels, so no flow leaving by it runs through
            // one.
            let lane = host.y
                + host.height
                + 44
                + label_overhang(model, &boundaries[i])
                + 8 * (nb - 1 - k);
            boundary_at.insert(b, (bounds, lane));
        }
    }
    Grid {
        col_x,
        extra,
        label_w,
        cy,
        node_bounds,
        boundary_at,
    }
}

/// The shapes: members (containers with their content), boundaries, labels, and the
/// event sub-processes in a row under the flow (whose lowest point is `flow_bottom`).
#[allow(clippy::too_many_arguments)]
pub(super) fn shapes(
    model: &Model,
    members: &[usize],
    event_subs: &[usize],
    boundaries: &[Vec<usize>],
    grid: &Grid,
    mut inner: BTreeMap<usize, Block>,
    flow_bottom: i32,
    block: &mut Block,
) {
    let Grid {
        node_bounds,
        boundary_at,
        ..
    } = grid;
    let m = members.len();
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
        for &bn in &boundaries[i] {
            if let Some(&(bb, _)) = boundary_at.get(&bn) {
                let lines = wrap(&model.label(bn), LABEL_CHARS);
                let w = lines.iter().map(|l| text_width(l)).max().unwrap_or(0);
                // Right of the line its flow leaves by, clear of the next
                // boundary's (`boundary_offsets`).
                let label = Bounds {
                    x: bb.center().x + 4,
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
    for &n in event_subs {
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
