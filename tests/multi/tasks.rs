use std::time::Duration;

use thresh::{process, Engine, Happening, ProcessData, TaskError};

#[derive(Clone, Debug, PartialEq)]
pub struct Line {
    pub sku: String,
    pub qty: u32,
}

#[derive(Clone, Debug, Default, ProcessData)]
pub struct Order {
    pub lines: Vec<Line>,
    pub labels: Vec<String>,
    pub copies: u32,
    pub printed: u32,
    pub enough: u32,
    pub fail_sku: String,
    pub caught: bool,
}

/// Waits longer for early lines, so instances complete in reverse index order.
async fn pack_line(_order: &mut Order, line: &Line, index: usize) -> Result<String, TaskError> {
    if line.qty > 1 {
        tokio::time::sleep(Duration::from_millis(u64::from(line.qty))).await;
    }
    Ok(format!("{index}:{}x{}", line.sku, line.qty))
}

process! {
    pub PACK: Order {
        start s;
        #[multi_instance(each = |o| o.lines.clone(), output = |o, _i, label| o.labels.push(label))]
        task pack = pack_line;
        end e;
        s -> pack -> e;
    }
}

process! {
    pub PACK_SEQ: Order {
        start s;
        #[multi_instance(sequential, each = |o| o.lines.clone(), output = |o, _i, label| o.labels.push(label))]
        task pack = pack_line;
        end e;
        s -> pack -> e;
    }
}

process! {
    pub PRINT: Order {
        start s;
        #[multi_instance(count = |o| o.copies)]
        task print = |o, copy: &usize, i| async move {
            assert_eq!(*copy, i);
            o.printed += 1;
            Ok(())
        };
        end e;
        s -> print -> e;
    }
}

process! {
    pub ENOUGH: Order {
        start s;
        #[multi_instance(each = |o| o.lines.clone(), completion = |o, n| n.completed >= o.enough,
            output = |o, i, label| o.labels.push(format!("{i}={label}")))]
        task pack = pack_line;
        end e;
        s -> pack -> e;
    }
}

process! {
    pub FAILING: Order {
        start s;
        #[multi_instance(each = |o| o.lines.clone())]
        task pack = |o, line: &Line, _i| {
            let fail = line.sku == o.fail_sku;
            let qty = line.qty;
            // The other lines never finish on their own, so the error finds them
            // running however late its instance is scheduled (a loaded machine).
            async move {
                if !fail {
                    std::future::pending::<()>().await;
                }
                tokio::time::sleep(Duration::from_millis(u64::from(qty))).await;
                Err::<(), _>(TaskError::bpmn("OUT_OF_STOCK", "none left"))
            }
        };
        boundary out on pack: error("OUT_OF_STOCK");
        task note = |o| async move { o.caught = true; Ok(()) };
        end e;
        end failed;
        s -> pack -> e;
        out -> note -> failed;
    }
}

process! {
    pub UNCAUGHT: Order {
        start s;
        #[multi_instance(each = |o| o.lines.clone())]
        task pack = |o, line: &Line, _i| {
            let fail = line.sku == o.fail_sku;
            async move { if fail { Err(TaskError::new("broken")) } else { Ok(()) } }
        };
        end e;
        s -> pack -> e;
    }
}

process! {
    pub SLOW: Order {
        start s;
        #[multi_instance(each = |o| o.lines.clone(), output = |o, _i, label| o.labels.push(label))]
        task pack = pack_line;
        boundary late on pack: timer(Duration::from_millis(50));
        boundary remind on pack: non_interrupting timer(Duration::from_millis(5));
        task log = |o| async move { o.printed += 1; Ok(()) };
        end e;
        end timed_out;
        end reminded;
        s -> pack -> e;
        late -> timed_out;
        remind -> log -> reminded;
    }
}

fn lines(qtys: &[u32]) -> Vec<Line> {
    qtys.iter()
        .enumerate()
        .map(|(i, &qty)| Line {
            sku: format!("S{i}"),
            qty,
        })
        .collect()
}

pub fn order(qtys: &[u32]) -> Order {
    Order {
        lines: lines(qtys),
        ..Order::default()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn parallel_outputs_merge_in_index_order_whatever_the_completion_order() {
    for _ in 0..200 {
        let engine = Engine::with_config(thresh::EngineConfig::fail_fast());
        let h = engine.start(&PACK, order(&[9, 7, 5, 3, 1])).await.unwrap();
        let done = h.outcome().await.completed().expect("completes");
        assert_eq!(
            done.labels,
            ["0:S0x9", "1:S1x7", "2:S2x5", "3:S3x3", "4:S4x1"],
            "index order, not completion order"
        );
        let history = h.history().await;
        let instances: Vec<u32> = history
            .steps()
            .iter()
            .filter(|s| s.node == "pack")
            .filter_map(|s| match s.what {
                Happening::Instance { index } => Some(index),
                _ => None,
            })
            .collect();
        assert_eq!(instances, [0, 1, 2, 3, 4]);
        assert_eq!(history.ended_at(), ["e"]);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn sequential_runs_one_instance_after_the_other() {
    let engine = Engine::with_config(thresh::EngineConfig::fail_fast());
    let h = engine.start(&PACK_SEQ, order(&[3, 1, 2])).await.unwrap();
    let done = h.outcome().await.completed().expect("completes");
    assert_eq!(done.labels, ["0:S0x3", "1:S1x1", "2:S2x2"]);
    // Each instance completes before the next is spawned.
    let steps: Vec<String> = h
        .history()
        .await
        .steps()
        .iter()
        .filter(|s| s.node == "pack")
        .map(|s| match &s.what {
            Happening::Instance { index } => format!("i{index}"),
            Happening::Completed { .. } => "done".into(),
            _ => String::new(),
        })
        .filter(|s| !s.is_empty())
        .collect();
    assert_eq!(steps, ["i0", "done", "i1", "done", "i2", "done", "done"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_count_runs_that_many_instances_each_with_its_index() {
    let engine = Engine::with_config(thresh::EngineConfig::fail_fast());
    let h = engine
        .start(
            &PRINT,
            Order {
                copies: 4,
                ..Order::default()
            },
        )
        .await
        .unwrap();
    assert_eq!(h.outcome().await.completed().unwrap().printed, 4);
    let h = engine
        .start(
            &PRINT,
            Order {
                copies: 0,
                ..Order::default()
            },
        )
        .await
        .unwrap();
    assert_eq!(h.outcome().await.completed().unwrap().printed, 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn an_empty_collection_completes_at_once() {
    let engine = Engine::with_config(thresh::EngineConfig::fail_fast());
    let h = engine.start(&PACK, order(&[])).await.unwrap();
    let done = h.outcome().await.completed().expect("completes");
    assert!(done.labels.is_empty());
    let history = h.history().await;
    assert_eq!(history.ended_at(), ["e"]);
    assert_eq!(
        history.count("pack", |w| matches!(w, Happening::Instance { .. })),
        0
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn the_completion_condition_cancels_the_rest() {
    for _ in 0..200 {
        let engine = Engine::with_config(thresh::EngineConfig::fail_fast());
        // Lines 3 and 4 finish first (1 ms, and ready at once); two are enough.
        let mut o = order(&[40, 30, 20, 1, 0]);
        o.enough = 2;
        let h = engine.start(&ENOUGH, o).await.unwrap();
        let done = h.outcome().await.completed().expect("completes");
        assert_eq!(done.labels, ["3=3:S3x1", "4=4:S4x0"]);
        let history = h.history().await;
        assert_eq!(
            history.count("pack", |w| matches!(w, Happening::Cancelled)),
            3
        );
        assert_eq!(history.ended_at(), ["e"]);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn an_error_in_one_instance_is_raised_as_from_the_activity() {
    for _ in 0..100 {
        let engine = Engine::with_config(thresh::EngineConfig::fail_fast());
        let mut o = order(&[20, 1, 30]);
        o.fail_sku = "S1".into();
        let h = engine.start(&FAILING, o).await.unwrap();
        let done = h
            .outcome()
            .await
            .completed()
            .expect("caught by the boundary");
        assert!(done.caught);
        let history = h.history().await;
        assert_eq!(history.ended_at(), ["failed"]);
        assert_eq!(
            history.count("pack", |w| matches!(w, Happening::ErrorThrown { .. })),
            1
        );
        // The raiser and the two others still running.
        assert_eq!(
            history.count("pack", |w| matches!(w, Happening::Cancelled)),
            3
        );
    }
    let engine = Engine::with_config(thresh::EngineConfig::fail_fast());
    let mut o = order(&[0, 0]);
    o.fail_sku = "S1".into();
    let outcome = engine.start(&UNCAUGHT, o).await.unwrap().outcome().await;
    assert!(
        matches!(
            &outcome,
            thresh::Outcome::Failed(thresh::InstanceError::TaskFailed { node: "pack", .. })
        ),
        "{outcome:?}"
    );
}

#[tokio::test(start_paused = true)]
async fn an_interrupting_boundary_cancels_every_instance_a_non_interrupting_leaves_them() {
    let engine = Engine::with_config(thresh::EngineConfig::fail_fast());
    // Every instance waits longer than the 50 ms timer.
    let h = engine.start(&SLOW, order(&[60, 70, 80])).await.unwrap();
    let done = h.outcome().await.completed().expect("completes");
    assert!(done.labels.is_empty(), "nothing completed before the timer");
    assert_eq!(done.printed, 1, "the reminder ran beside the instances");
    let history = h.history().await;
    assert_eq!(
        history.count("pack", |w| matches!(w, Happening::Cancelled)),
        3
    );
    let mut ends = history.ended_at();
    ends.sort();
    assert_eq!(ends, ["reminded", "timed_out"]);
    // Fast instances: the activity completes before the timer, the reminder fired.
    let h = engine.start(&SLOW, order(&[10, 20])).await.unwrap();
    let done = h.outcome().await.completed().expect("completes");
    assert_eq!(done.labels, ["0:S0x10", "1:S1x20"]);
    assert_eq!(done.printed, 1);
}
