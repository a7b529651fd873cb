//! The layout's unit tests, on models made by hand.

use super::super::model::{Elem, Gateway, MFlow, MNode, Model};
use super::*;

/// A model by hand: `nodes` as (id, element, scope), `flows` as (source, target).
fn model(nodes: &[(&str, Elem, Option<usize>)], flows: &[(usize, usize)]) -> Model {
    let mut m = Model {
        name: "T".into(),
        version: 1,
        doc: String::new(),
        nodes: nodes
            .iter()
            .map(|(id, elem, scope)| MNode {
                id: id.to_string(),
                name: String::new(),
                tag: String::new(),
                drawing: Vec::new(),
                doc: String::new(),
                elem: elem.clone(),
                scope: *scope,
                incoming: Vec::new(),
                outgoing: Vec::new(),
                default: None,
                activation: String::new(),
                looping: None,
            })
            .collect(),
        flows: Vec::new(),
        associations: Vec::new(),
        imported: false,
    };
    for (f, &(s, t)) in flows.iter().enumerate() {
        m.flows.push(MFlow {
            id: format!("f{f}"),
            name: String::new(),
            drawing: Vec::new(),
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
        x("s") < x("g") && x("g") < x("a") && x("a") < x("b") && x("b") < x("m") && x("m") < x("e")
    );
    // The loop m -> g runs under the columns it spans and enters g from the left.
    let back = &l.edges[6];
    let lowest = back.waypoints.iter().map(|p| p.y).max().unwrap_or(0);
    for id in ["g", "a", "b", "m"] {
        let b = l.shape(id).map(|s| s.bounds).unwrap();
        assert!(lowest > b.y + b.height, "the loop passes under {id}");
    }
    // From the left: its last stretch runs right, onto the diamond's left half (a
    // merge's flows meet it at heights of their own, on its outline).
    let g = l.shape("g").map(|s| s.bounds).unwrap();
    let [.., before, last] = back.waypoints[..] else {
        panic!("a route has two points at least")
    };
    assert!(
        before.y == last.y && before.x < last.x,
        "{:?}",
        back.waypoints
    );
    assert!(last.x >= g.x && last.x <= g.center().x, "{last:?} on {g:?}");
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
