//! The task list of a durable engine: listed and claimed in the store, completed by
//! id with its acknowledgment stored, kept across a restart (ids and claims), and
//! gone with its instance's end or cancel.

use std::time::SystemTime;

use super::*;
use thresh::{Task, TaskId, TaskListError, TaskQuery};

#[derive(Clone, Debug, Default, PartialEq, ProcessData, Serialize, Deserialize)]
pub struct Expense {
    pub id: String,
    pub amount: u32,
    pub manager: String,
    pub approved: bool,
}

process! {
    EXPENSES: Expense {
        start s;
        user approve: assignee(|e| e.manager.clone())
            | groups("finance")
            | due(2d)
            | priority(|e| if e.amount > 1000 { 80 } else { 50 });
        user file: groups("clerks");
        end e;
        s -> approve -> file -> e;
    }
}

fn expense(id: &str, amount: u32, manager: &str) -> Expense {
    Expense {
        id: id.into(),
        amount,
        manager: manager.into(),
        ..Expense::default()
    }
}

/// The stored tasks `query` selects, once `count` are (a user task's row is written
/// with the checkpoint after it opens).
async fn stored_tasks(engine: &DurableEngine, query: &TaskQuery, count: usize) -> Vec<Task> {
    tokio::time::timeout(HANG, async {
        loop {
            let tasks = engine.tasks(query).await.expect("listed");
            if tasks.len() == count {
                return tasks;
            }
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
    })
    .await
    .expect("the tasks were stored")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tasks_are_listed_claimed_and_completed_from_the_store() {
    let store = test_store();
    let engine = store.engine().expect("open");
    engine.register(&EXPENSES).expect("register");
    let before = SystemTime::now();
    let big = engine
        .start(&EXPENSES, expense("e-1", 5000, "maria"))
        .await
        .expect("stored");
    let small = engine
        .start(&EXPENSES, expense("e-2", 10, "li"))
        .await
        .expect("stored");
    let finance = TaskQuery::new().candidate_groups(["finance"]);
    let tasks = stored_tasks(&engine, &finance, 2).await;
    // Highest priority first.
    assert_eq!(tasks[0].id.instance, big.id());
    assert_eq!(tasks[0].priority, 80);
    assert_eq!(tasks[0].assignee.as_deref(), Some("maria"));
    assert_eq!(tasks[0].element, "approve");
    assert!(tasks[0].created >= before - Duration::from_millis(1));
    assert_eq!(tasks[1].priority, 50);
    let li = engine
        .tasks(&TaskQuery::new().assignee("li"))
        .await
        .unwrap();
    assert_eq!(li.len(), 1);
    assert_eq!(li[0].id.instance, small.id());
    let page = engine.tasks(&finance.clone().page(1, 1)).await.unwrap();
    assert_eq!(page.len(), 1);
    assert_eq!(page[0].id, tasks[1].id);

    // Claims are store writes; another user's claim is refused.
    let id = tasks[0].id;
    engine.claim(id, "ann").await.expect("claimed");
    assert_eq!(
        engine.claim(id, "bob").await,
        Err(TaskListError::ClaimedByOther {
            id,
            by: "ann".into()
        })
    );
    let ann = engine
        .tasks(&TaskQuery::new().claimed_by("ann"))
        .await
        .unwrap();
    assert_eq!(ann.len(), 1);

    engine
        .complete_task(&EXPENSES, id, |e| e.approved = true)
        .await
        .expect("completed");
    // Acknowledged means stored: the completion, and the task's row gone.
    let state = store.instance(id.instance.0).unwrap().unwrap().state;
    let state: serde_json::Value = serde_json::from_str(&state).unwrap();
    assert_eq!(state["running"]["data"]["approved"], true);
    assert_eq!(
        engine.complete_task(&EXPENSES, id, |_| {}).await,
        Err(TaskListError::NoTask(id))
    );
    let clerks = stored_tasks(&engine, &TaskQuery::new().candidate_groups(["clerks"]), 1).await;
    assert_eq!(clerks[0].id.instance, big.id());
    assert_eq!(clerks[0].id.number, 2);
    let unknown = TaskId {
        instance: InstanceId(987_654),
        number: 1,
    };
    assert_eq!(
        engine.task(unknown).await,
        Err(TaskListError::NoTask(unknown))
    );
    assert_eq!(
        engine.claim(unknown, "ann").await,
        Err(TaskListError::NoTask(unknown))
    );
    engine.shutdown(HANG).await.expect("shutdown");
}

/// A stored task carries its instance's business key (`start_keyed`), and the list
/// is filtered by it in the store.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stored_task_carries_its_instances_business_key() {
    let store = test_store();
    let engine = store.engine().expect("open");
    engine.register(&EXPENSES).expect("register");
    let keyed = engine
        .start_keyed(&EXPENSES, "ORDER-7", expense("e-1", 10, "maria"))
        .await
        .expect("stored");
    engine
        .start(&EXPENSES, expense("e-2", 10, "li"))
        .await
        .expect("stored");
    stored_tasks(&engine, &TaskQuery::new(), 2).await;
    let found = stored_tasks(&engine, &TaskQuery::new().key("ORDER-7"), 1).await;
    assert_eq!(found[0].id.instance, keyed.id());
    assert_eq!(found[0].business_key.as_deref(), Some("ORDER-7"));
    assert_eq!(found[0].key, None);
    assert!(engine
        .tasks(&TaskQuery::new().correlation_key("ORDER-7"))
        .await
        .expect("listed")
        .is_empty());
    engine.shutdown(HANG).await.expect("shutdown");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restart_keeps_the_task_list_its_ids_and_claims() {
    let store = test_store();
    let engine = store.engine().expect("open");
    engine.register(&EXPENSES).expect("register");
    let handle = engine
        .start(&EXPENSES, expense("e-1", 10, "maria"))
        .await
        .expect("stored");
    let id = handle.id();
    let task = stored_tasks(&engine, &TaskQuery::new(), 1).await.remove(0);
    engine.claim(task.id, "ann").await.expect("claimed");

    let restarted = thresh::testing::restart(engine, &store, |e| e.register(&EXPENSES))
        .await
        .expect("restarted");
    let engine = restarted.engine;
    assert_eq!(restarted.report.resumed, [(id, "EXPENSES")]);
    let after = engine.tasks(&TaskQuery::new()).await.unwrap();
    assert_eq!(after.len(), 1);
    assert_eq!(after[0].id, task.id);
    assert_eq!(after[0].claimed_by.as_deref(), Some("ann"));
    assert_eq!(after[0].due, task.due);
    engine
        .complete_task(&EXPENSES, task.id, |e| e.approved = true)
        .await
        .expect("completed after the restart");
    // The next task is numbered after the restored ones.
    let next = stored_tasks(&engine, &TaskQuery::new().element("file"), 1).await;
    assert_eq!(next[0].id.number, 2);
    // Written again with a checkpoint after the restart, the claim was kept.
    engine
        .complete_task(&EXPENSES, next[0].id, |_| {})
        .await
        .unwrap();
    let handle = engine.handle(&EXPENSES, id).expect("resumed handle");
    let outcome = tokio::time::timeout(HANG, handle.outcome()).await.unwrap();
    assert!(outcome.completed().unwrap().approved);
    assert!(engine.tasks(&TaskQuery::new()).await.unwrap().is_empty());
    engine.shutdown(HANG).await.expect("shutdown");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancelled_instance_takes_its_stored_task_off_the_list() {
    let store = test_store();
    let engine = store.engine().expect("open");
    engine.register(&EXPENSES).expect("register");
    let handle = engine
        .start(&EXPENSES, expense("e-1", 10, "maria"))
        .await
        .expect("stored");
    let id = stored_tasks(&engine, &TaskQuery::new(), 1).await[0].id;
    handle.cancel();
    let outcome = tokio::time::timeout(HANG, handle.outcome()).await.unwrap();
    assert!(matches!(outcome, Outcome::Cancelled(_)));
    assert!(engine.tasks(&TaskQuery::new()).await.unwrap().is_empty());
    assert_eq!(
        engine.complete_task(&EXPENSES, id, |_| {}).await,
        Err(TaskListError::NoTask(id))
    );
    engine.shutdown(HANG).await.expect("shutdown");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stored_task_no_loop_runs_says_so_until_resumed() {
    let store = test_store();
    let engine = store.engine().expect("open");
    engine.register(&EXPENSES).expect("register");
    engine
        .start(&EXPENSES, expense("e-1", 10, "maria"))
        .await
        .expect("stored");
    let id = stored_tasks(&engine, &TaskQuery::new(), 1).await[0].id;
    engine.shutdown(HANG).await.expect("shutdown");
    // Reopened, registered, not resumed: listed from the store, run by no loop.
    let engine = store.engine().expect("reopen");
    engine.register(&EXPENSES).expect("register");
    assert_eq!(engine.tasks(&TaskQuery::new()).await.unwrap().len(), 1);
    assert_eq!(
        engine.complete_task(&EXPENSES, id, |_| {}).await,
        Err(TaskListError::NotRunning(id))
    );
    engine.resume().await.expect("resumed");
    engine
        .complete_task(&EXPENSES, id, |e| e.approved = true)
        .await
        .expect("completed once resumed");
    engine.shutdown(HANG).await.expect("shutdown");
}
