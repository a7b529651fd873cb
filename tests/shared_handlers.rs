//! Tasks written with the same handler share one handler fn in the graph
//! (`process!` emits one per distinct handler expression: one call target for the
//! loop, less to compile) and still run, record and commit one by one.

use thresh::__private::NodeKind;
use thresh::{process, Engine, Outcome, ProcessData, TaskError};

#[derive(Clone, Debug, Default, ProcessData)]
pub struct Number {
    pub n: u64,
    pub runs: Vec<&'static str>,
}

async fn double(x: &mut Number) -> Result<(), TaskError> {
    x.n *= 2;
    x.runs.push("double");
    Ok(())
}

async fn add_one(x: &mut Number) -> Result<(), TaskError> {
    x.n += 1;
    x.runs.push("add_one");
    Ok(())
}

process! {
    pub SHARED: Number {
        start begin;
        task first = double;
        task second = double;
        task third = add_one;
        task fourth = |x: &mut Number| async move { x.n += 10; x.runs.push("closure"); Ok(()) };
        task fifth = |x: &mut Number| async move { x.n += 10; x.runs.push("closure"); Ok(()) };
        task sixth = double;
        end done;
        begin -> first -> second -> third -> fourth -> fifth -> sixth -> done;
    }
}

/// The handler fn of task `id`, as an address.
fn handler_of(id: &str) -> usize {
    match SHARED.node(id).map(|n| &n.kind) {
        Some(NodeKind::Task(handler)) => *handler as usize,
        _ => panic!("{id} is a task"),
    }
}

#[test]
fn tasks_with_the_same_handler_share_its_fn_and_others_do_not() {
    let double = handler_of("first");
    assert_eq!(handler_of("second"), double);
    assert_eq!(handler_of("sixth"), double);
    assert_ne!(handler_of("third"), double);
    // The same closure, written twice: one fn.
    assert_eq!(handler_of("fourth"), handler_of("fifth"));
    assert_ne!(handler_of("fourth"), double);
    assert_ne!(handler_of("fourth"), handler_of("third"));
}

#[tokio::test]
async fn each_task_with_a_shared_handler_runs_records_and_commits_on_its_own() {
    let engine = Engine::new();
    let handle = engine
        .start(&SHARED, Number { n: 1, runs: vec![] })
        .await
        .unwrap();
    let Outcome::Completed(end) = handle.outcome().await else {
        panic!("completed")
    };
    // ((1*2*2)+1+10+10)*2
    assert_eq!(end.n, 50);
    assert_eq!(
        end.runs,
        ["double", "double", "add_one", "closure", "closure", "double"]
    );
    let history = handle.history().await;
    assert_eq!(
        history.completed_tasks(),
        ["first", "second", "third", "fourth", "fifth", "sixth"]
    );
}
