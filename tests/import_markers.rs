//! Loop and multi-instance markers imported from a .bpmn file (README, "Importing a
//! .bpmn file"): the file says how an activity repeats — `isSequential`,
//! `testBefore`, `loopMaximum`, a constant `loopCardinality` —, a binding's
//! `#[multi_instance(..)]` or `#[standard_loop(..)]` what only Rust can say (the
//! collection, the conditions, the outputs). The round trip of processes with both
//! markers is in `tests/import.rs` (`processes::MULTI`, `shipping::ORDER`); the
//! errors are `tests/ui/import/markers.rs`.

use thresh::{process, Engine, Happening, ProcessData};

#[derive(Clone, Debug, Default, PartialEq, ProcessData)]
pub struct Order {
    pub lines: Vec<String>,
    pub picked: Vec<String>,
    pub retries: u32,
}

process! {
    /// Camunda's markers: the collection and the completion condition bound in
    /// Rust; the sequential count of two and the loop of three runs from the file.
    pub MARKED: Order from "tests/import/markers/camunda_markers.bpmn" {
        #[multi_instance(each = |o| o.lines.clone(), completion = |_o, n| n.completed >= 2, output = |o, _i, line| o.picked.push(line))]
        task pick = |_o, line: &String, _i| async move { Ok(line.to_uppercase()) };
        task retry = |o| async move { o.retries += 1; Ok(()) };
    }
}

/// The same process inline (the name is part of the fingerprint).
mod inline {
    use super::Order;
    use thresh::process;

    process! {
            pub MARKED: Order {
            start begin;
            #[multi_instance(each = |o| o.lines.clone(), completion = |_o, n| n.completed >= 2, output = |o, _i, line| o.picked.push(line))]
            task pick = |_o, line: &String, _i| async move { Ok(line.to_uppercase()) };
            #[multi_instance(sequential, count = |_| 2usize)]
            user sign;
            #[standard_loop(max = 3, while = |_, _| true)]
            task retry = |o| async move { o.retries += 1; Ok(()) };
            end done;
            begin -> pick -> sign -> retry -> done;
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn imported_markers_run_as_the_file_says() {
    let engine = Engine::new();
    let h = engine
        .start(
            &MARKED,
            Order {
                lines: vec!["a".into(), "b".into(), "c".into()],
                ..Order::default()
            },
        )
        .await
        .unwrap();
    // Sequential: one work item at a time, twice.
    for i in 0..2 {
        let work = thresh::testing::wait_until_open_work(&h, "sign")
            .await
            .unwrap();
        assert_eq!(work.iteration, Some(i));
        assert_eq!(h.open_work().await.len(), 1);
        h.complete("sign", |_| {}).await.unwrap();
    }
    let done = h.outcome().await.completed().unwrap();
    // Two picks were enough (the completion condition); three runs of the loop.
    assert_eq!(done.picked.len(), 2);
    assert_eq!(done.retries, 3);
    let history = h.history().await;
    assert_eq!(
        history.count("retry", |w| matches!(w, Happening::Completed { .. })),
        4
    );
}

#[test]
fn imported_markers_make_the_inline_model() {
    assert_eq!(MARKED.fingerprint(), inline::MARKED.fingerprint());
}
