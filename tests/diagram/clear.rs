//! Drawings a reader can follow, checked over the layout-less exports' coordinates
//! (issue 37): no two labels drawn over each other, no flow crossing a shape it
//! does not start or end at (its containers, and a boundary it leaves from, aside),
//! and no two flows into one shape meeting it at one point (each can be followed
//! to its end).

use thresh::diagram::{Bounds, Layout, Point};

/// Whether the segment `a`–`b` (horizontal or vertical) passes through `r`'s inside.
fn crosses(a: Point, b: Point, r: &Bounds) -> bool {
    let (x0, x1) = (a.x.min(b.x), a.x.max(b.x));
    let (y0, y1) = (a.y.min(b.y), a.y.max(b.y));
    let inside_x = |x: i32| x > r.x && x < r.x + r.width;
    let inside_y = |y: i32| y > r.y && y < r.y + r.height;
    if a.y == b.y {
        inside_y(a.y) && x0 < r.x + r.width && x1 > r.x
    } else if a.x == b.x {
        inside_x(a.x) && y0 < r.y + r.height && y1 > r.y
    } else {
        // A diagonal: its box against the shape's, which is enough for the drawings
        // this checks (orthogonal routes).
        x0 < r.x + r.width && x1 > r.x && y0 < r.y + r.height && y1 > r.y
    }
}

/// The shapes a flow may cross: its ends, their containers (at any depth), and the
/// boundary events on its ends.
fn allowed(layout: &Layout, source: usize, target: usize) -> Vec<usize> {
    let mut out = vec![source, target];
    let mut i = 0;
    while i < out.len() {
        let n = out[i];
        if let Some(s) = layout.shapes.iter().find(|s| s.node == n) {
            out.extend(s.container);
            out.extend(s.host);
        }
        i += 1;
    }
    out
}

/// Every problem of `layout`, in words.
pub fn problems(layout: &Layout, ends: &[(usize, usize)]) -> Vec<String> {
    let mut out = Vec::new();
    let labels: Vec<(String, Bounds)> = layout
        .shapes
        .iter()
        .filter_map(|s| s.label.map(|l| (s.id.clone(), l)))
        .chain(
            layout
                .edges
                .iter()
                .filter_map(|e| e.label.map(|l| (e.id.clone(), l))),
        )
        .collect();
    for (i, (a, la)) in labels.iter().enumerate() {
        for (b, lb) in &labels[i + 1..] {
            if la.overlaps(lb) {
                out.push(format!("the labels of {a} and {b} overlap"));
            }
        }
    }
    for (i, a) in layout.edges.iter().enumerate() {
        for b in &layout.edges[i + 1..] {
            if ends[a.flow].1 == ends[b.flow].1 && a.waypoints.last() == b.waypoints.last() {
                out.push(format!(
                    "flows {} and {} enter their target at one point",
                    a.id, b.id
                ));
            }
        }
    }
    // A compensation association is checked as a flow from its boundary.
    // (Its id is `Association_<boundary>_<handler>`.)
    let associations = layout.associations.iter().filter_map(|a| {
        let boundaries = layout.shapes.iter().filter(|s| s.host.is_some());
        boundaries
            .flat_map(|b| layout.shapes.iter().map(move |h| (b, h)))
            .find(|(b, h)| a.id == format!("Association_{}_{}", b.id, h.id))
            .map(|(b, h)| (a, (b.node, h.node)))
    });
    let flows = layout.edges.iter().map(|e| (e, ends[e.flow]));
    for (e, (source, target)) in flows.chain(associations) {
        let allowed = allowed(layout, source, target);
        let name = |n: usize| {
            layout
                .shapes
                .iter()
                .find(|s| s.node == n)
                .map_or("?", |s| s.id.as_str())
        };
        let flow = format!("{} ({} -> {})", e.id, name(source), name(target));
        for s in layout.shapes.iter().filter(|s| !allowed.contains(&s.node)) {
            if e.waypoints
                .windows(2)
                .any(|w| crosses(w[0], w[1], &s.bounds))
            {
                out.push(format!("flow {flow} crosses {}", s.id));
            }
        }
        // A label a flow runs through cannot be read, its own ends' included.
        for (id, l) in labels.iter().filter(|(id, _)| *id != e.id) {
            if e.waypoints.windows(2).any(|w| crosses(w[0], w[1], l)) {
                out.push(format!("flow {flow} crosses the label of {id}"));
            }
        }
    }
    out
}

#[test]
fn the_check_sees_what_it_looks_for() {
    let r = Bounds {
        x: 10,
        y: 10,
        width: 20,
        height: 20,
    };
    let p = |x, y| Point { x, y };
    assert!(crosses(p(0, 20), p(40, 20), &r));
    assert!(!crosses(p(0, 5), p(40, 5), &r));
    assert!(crosses(p(20, 0), p(20, 40), &r));
    // Along an edge is not through.
    assert!(!crosses(p(0, 10), p(40, 10), &r));
}
