//! A `bpmn:callActivity` imports as a call activity: its `calledElement` names the
//! called process's static (`call audit = AUDIT;` when nothing is bound), and a
//! binding gives the mappings (`call ship = SHIPPING(input = .., output = ..);`). The
//! imported process runs like its inline twin and has the same fingerprint.

use thresh::{process, Engine, ProcessData};

#[derive(Clone, Debug, Default, PartialEq, ProcessData)]
pub struct Order {
    pub id: String,
    pub tracking: String,
}

#[derive(Clone, Debug, Default, PartialEq, ProcessData)]
pub struct Shipment {
    pub order: String,
    pub tracking: String,
}

#[derive(Clone, Debug, Default, PartialEq, ProcessData)]
pub struct Audit {
    pub seen: bool,
}

process! {
    pub SHIPPING: Shipment {
        start s;
        task label = |s| async move { s.tracking = format!("T-{}", s.order); Ok(()) };
        end e;
        s -> label -> e;
    }

    pub AUDIT: Audit {
        start s;
        task look = |a| async move { a.seen = true; Ok(()) };
        end e;
        s -> look -> e;
    }
}

process! {
    pub IMPORTED: Order from "tests/import/calls/order_calls.bpmn" {
        call ship = SHIPPING(
            input = |o| Shipment { order: o.id.clone(), ..Shipment::default() },
            output = |o, s| o.tracking = s.tracking
        );
    }
}

process! {
    pub INLINE: Order {
        start placed;
        call ship = SHIPPING(
            input = |o| Shipment { order: o.id.clone(), ..Shipment::default() },
            output = |o, s| o.tracking = s.tracking
        );
        call audit = AUDIT;
        end done;
        placed -> ship -> audit -> done;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_imported_call_activity_runs_its_called_process() {
    assert_eq!(IMPORTED.node("audit").expect("imported").keyword(), "call");
    let engine = Engine::new();
    let h = engine
        .start(
            &IMPORTED,
            Order {
                id: "I-1".into(),
                ..Order::default()
            },
        )
        .await
        .unwrap();
    let o = h.outcome().await.completed().expect("completed");
    assert_eq!(o.tracking, "T-I-1");
    assert_eq!(h.history().await.completed_tasks(), ["ship", "audit"]);
}

#[test]
fn the_import_is_its_inline_twin() {
    // The same elements and flows (the import's export keeps the file's flow ids,
    // `f1`, where the inline one's names them after their ends).
    let elements = |p: &thresh::Process<Order>| {
        let nodes: Vec<(&str, &str)> = p.nodes().iter().map(|n| (n.id(), n.keyword())).collect();
        let flows: Vec<(usize, usize)> =
            p.flows().iter().map(|f| (f.source(), f.target())).collect();
        (nodes, flows)
    };
    assert_eq!(elements(&IMPORTED), elements(&INLINE));
    assert!(IMPORTED
        .to_bpmn()
        .contains(r#"<bpmn:sequenceFlow id="f1" sourceRef="placed" targetRef="ship" />"#));
}
