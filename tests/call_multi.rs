//! Multi-instance call activities (issue 13): `#[multi_instance(each = ..)]` before
//! `call ship = SHIPPING(input = |o, line, index| .., ..)` runs one child per item.
//!
//! - parallel: every child starts at once with its item as its input; the children's
//!   final data come back as the instances' outputs, merged in index order whatever
//!   order the children end in;
//! - sequential: one child at a time, the next started when the one before ends;
//! - a BPMN error one child does not catch is raised at the activity: its error
//!   boundary catches it and every other child is cancelled;
//! - cancelling the parent cancels every child;
//! - the completion condition cancels the children still running.
//!
//! Races run many times on a four-worker runtime. (The durable side:
//! `tests/call_durable.rs`.)

use std::time::Duration;

use thresh::{process, Engine, Happening, InstanceHandle, Outcome, ProcessData};

const HANG: Duration = Duration::from_secs(20);

#[derive(Clone, Debug, Default, PartialEq, ProcessData)]
struct Order {
    id: String,
    lines: Vec<Line>,
    tracking: Vec<String>,
    shipped: u32,
    note: String,
}

#[derive(Clone, Debug, Default, PartialEq)]
struct Line {
    sku: String,
    kilos: u32,
}

#[derive(Clone, Debug, Default, PartialEq, ProcessData)]
struct Shipment {
    order: String,
    sku: String,
    index: usize,
    kilos: u32,
    tracking: String,
}

process! {
    /// Labels the shipment after a delay that makes later lines finish first.
    SHIPPING: Shipment {
        start begin;
        task label = |s| async move {
            tokio::time::sleep(Duration::from_millis(u64::from(10 - s.kilos.min(10)))).await;
            s.tracking = format!("{}/{}#{}", s.order, s.sku, s.index);
            Ok(())
        };
        end shipped;
        begin -> label -> shipped;
    }
}

process! {
    /// Waits at a user task: the test completes it, or raises an error from it.
    PACKING: Shipment {
        start begin;
        user pack;
        end packed;
        begin -> pack -> packed;
    }
}

process! {
    PARALLEL: Order {
        start placed;
        #[multi_instance(each = |o| o.lines.clone(), output = |o, _i, s| o.tracking.push(s.tracking))]
        call ship = SHIPPING(
            input = |o, line, index| Shipment { order: o.id.clone(), sku: line.sku.clone(), index, kilos: line.kilos, ..Shipment::default() },
            output = |o, _s| o.shipped += 1
        );
        end done;
        placed -> ship -> done;
    }
}

process! {
    SEQUENTIAL: Order {
        start placed;
        #[multi_instance(sequential, each = |o| o.lines.clone(), output = |o, i, s| o.tracking.push(format!("{i}:{}", s.sku)))]
        call pack = PACKING(input = |o, line, index| Shipment { order: o.id.clone(), sku: line.sku.clone(), index, ..Shipment::default() });
        end done;
        placed -> pack -> done;
    }
}

process! {
    /// A count and a parent-only input; an error boundary on the activity.
    GUARDED: Order {
        start placed;
        #[multi_instance(count = |_o| 3)]
        call pack = PACKING(input = |o| Shipment { order: o.id.clone(), ..Shipment::default() });
        boundary broken on pack: error("BROKEN", apply = |o, _e: &thresh::events::BpmnError| o.note = "broken".into());
        end done;
        end refused;
        placed -> pack -> done;
        broken -> refused;
    }
}

process! {
    /// Done as soon as one child completes.
    FIRST: Order {
        start placed;
        #[multi_instance(count = |_o| 3, completion = |_o, n| n.completed >= 1)]
        call pack = PACKING(input = |o, _k, index| Shipment { order: o.id.clone(), index, ..Shipment::default() });
        end done;
        placed -> pack -> done;
    }
}

fn order(lines: &[(&str, u32)]) -> Order {
    Order {
        id: "O1".into(),
        lines: lines
            .iter()
            .map(|(sku, kilos)| Line {
                sku: (*sku).into(),
                kilos: *kilos,
            })
            .collect(),
        ..Order::default()
    }
}

/// Until the parent's call runs `n` children, all parked at their user task.
async fn children(parent: &InstanceHandle<Order>, n: usize) -> Vec<InstanceHandle<Shipment>> {
    tokio::time::timeout(HANG, async {
        loop {
            let children = parent.children_of(&PACKING).await;
            if children.len() == n {
                let mut open = 0;
                for c in &children {
                    open += c.open_work().await.len();
                }
                if open == n {
                    return children;
                }
            }
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
    })
    .await
    .expect("the children started and parked")
}

async fn ended<D: Clone>(h: &InstanceHandle<D>) -> Outcome<D> {
    tokio::time::timeout(HANG, h.outcome())
        .await
        .expect("ended")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn parallel_children_get_their_items_and_outputs_merge_in_index_order() {
    for _ in 0..20 {
        let engine = Engine::new();
        let h = engine
            .start(&PARALLEL, order(&[("a", 1), ("b", 5), ("c", 9)]))
            .await
            .unwrap();
        let Outcome::Completed(done) = ended(&h).await else {
            panic!("not completed")
        };
        // Line c's child finished first, a's last: the outputs are in index order.
        assert_eq!(done.tracking, ["O1/a#0", "O1/b#1", "O1/c#2"]);
        let history = h.history().await;
        let called = history.count("ship", |w| matches!(w, Happening::Called { .. }));
        assert_eq!(called, 3, "one child per line");
        // The call's own `output` ran per child; parallel commits of one field keep
        // the later one (ARCHITECTURE.md, "The instance loop").
        assert!((1..=3).contains(&done.shipped));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn an_empty_collection_calls_no_child() {
    let engine = Engine::new();
    let h = engine.start(&PARALLEL, order(&[])).await.unwrap();
    let Outcome::Completed(done) = ended(&h).await else {
        panic!("not completed")
    };
    assert!(done.tracking.is_empty());
    let history = h.history().await;
    assert_eq!(
        history.count("ship", |w| matches!(w, Happening::Called { .. })),
        0
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn sequential_children_run_one_at_a_time() {
    let engine = Engine::new();
    let h = engine
        .start(&SEQUENTIAL, order(&[("a", 0), ("b", 0), ("c", 0)]))
        .await
        .unwrap();
    for (index, sku) in ["a", "b", "c"].into_iter().enumerate() {
        // Only the current item's child runs.
        let child = children(&h, 1).await.pop().unwrap();
        let data = child.data().await.unwrap();
        assert_eq!((data.sku.as_str(), data.index), (sku, index));
        child.complete("pack", |_| {}).await.unwrap();
        ended(&child).await;
    }
    let Outcome::Completed(done) = ended(&h).await else {
        panic!("not completed")
    };
    assert_eq!(done.tracking, ["0:a", "1:b", "2:c"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn an_error_in_one_child_is_caught_at_the_activity_and_cancels_the_others() {
    for _ in 0..20 {
        let engine = Engine::new();
        let h = engine.start(&GUARDED, order(&[])).await.unwrap();
        let kids = children(&h, 3).await;
        // The parent-only input: every child gets the order.
        for c in &kids {
            assert_eq!(c.data().await.unwrap().order, "O1");
        }
        kids[1]
            .raise_error("pack", "BROKEN", "the crate split")
            .await
            .unwrap();
        let Outcome::Completed(done) = ended(&h).await else {
            panic!("not completed")
        };
        assert_eq!(done.note, "broken");
        assert_eq!(h.history().await.ended_at().last(), Some(&"refused"));
        assert!(matches!(ended(&kids[1]).await, Outcome::Failed(_)));
        for i in [0, 2] {
            assert!(
                matches!(ended(&kids[i]).await, Outcome::Cancelled(_)),
                "child {i} cancelled"
            );
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn cancelling_the_parent_cancels_every_child() {
    for _ in 0..20 {
        let engine = Engine::new();
        let h = engine.start(&GUARDED, order(&[])).await.unwrap();
        let kids = children(&h, 3).await;
        h.cancel();
        assert!(matches!(ended(&h).await, Outcome::Cancelled(_)));
        for c in &kids {
            assert!(matches!(ended(c).await, Outcome::Cancelled(_)));
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn the_completion_condition_cancels_the_children_still_running() {
    for _ in 0..20 {
        let engine = Engine::new();
        let h = engine.start(&FIRST, order(&[])).await.unwrap();
        let kids = children(&h, 3).await;
        kids[2].complete("pack", |_| {}).await.unwrap();
        assert!(matches!(ended(&h).await, Outcome::Completed(_)));
        assert!(matches!(ended(&kids[2]).await, Outcome::Completed(_)));
        for i in [0, 1] {
            assert!(
                matches!(ended(&kids[i]).await, Outcome::Cancelled(_)),
                "child {i} cancelled"
            );
        }
        let history = h.history().await;
        assert_eq!(
            history.count("pack", |w| matches!(w, Happening::Cancelled)),
            2
        );
    }
}

process! {
    /// The same track comes back to the call: twice through `pack`.
    TWICE: Order {
        start placed;
        call pack = PACKING(input = |o| Shipment { order: o.id.clone(), ..Shipment::default() }, output = |o, _s| o.shipped += 1);
        exclusive again;
        end done;
        placed -> pack -> again;
        again -> pack when |o| o.shipped < 2;
        again -> done else;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_track_back_at_the_same_call_lists_only_its_new_child() {
    let engine = Engine::new();
    let h = engine.start(&TWICE, order(&[])).await.unwrap();
    let first = children(&h, 1).await.pop().unwrap();
    first.complete("pack", |_| {}).await.unwrap();
    ended(&first).await;
    let second = tokio::time::timeout(HANG, async {
        loop {
            let kids = h.children_of(&PACKING).await;
            if kids.iter().any(|c| c.id() != first.id()) {
                return kids;
            }
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
    })
    .await
    .unwrap();
    assert_eq!(second.len(), 1, "the ended child is not listed");
    assert_eq!(h.children().await, [second[0].id()]);
    second[0].complete("pack", |_| {}).await.unwrap();
    let Outcome::Completed(done) = ended(&h).await else {
        panic!("not completed")
    };
    assert_eq!(done.shipped, 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_thousand_parallel_children_are_listed_and_all_come_back() {
    let engine = Engine::new();
    let lines: Vec<(String, u32)> = (0..1000).map(|i| (format!("l{i}"), 10)).collect();
    let lines: Vec<(&str, u32)> = lines.iter().map(|(s, k)| (s.as_str(), *k)).collect();
    let h = engine.start(&PARALLEL, order(&lines)).await.unwrap();
    let Outcome::Completed(done) = ended(&h).await else {
        panic!("not completed")
    };
    let expected: Vec<String> = (0..1000).map(|i| format!("O1/l{i}#{i}")).collect();
    assert_eq!(done.tracking, expected);
    assert!(h.children().await.is_empty());
}
