//! The task list across nodes (issue 33, item 4): every node lists every node's
//! tasks from the store; a claim made on one node holds on the other; a task of an
//! instance another node runs is completed (its update run on the stored data, its
//! changes merged there), failed or raised from through a stored request that node
//! claims.

use std::time::Duration;

use thresh::{process, Outcome, Task, TaskListError, TaskQuery};

use super::{one_at_a_time, order, Order, Schema, HANG};

process! {
    SIGNOFF: Order {
        start s;
        task  check = |o| async move { o.checked += 1; Ok(()) };
        user  approve: groups("finance") | priority(|o| if o.paid > 100 { 90 } else { 10 });
        boundary refused on approve: error("REFUSED");
        end   e;
        end   refused_end;
        s -> check -> approve -> e;
        refused -> refused_end;
    }
}

/// The tasks `query` lists on `node`, once there are `count`.
async fn listed(node: &thresh::DurableEngine, query: &TaskQuery, count: usize) -> Vec<Task> {
    tokio::time::timeout(HANG, async {
        loop {
            let tasks = node.tasks(query).await.expect("list");
            if tasks.len() == count {
                return tasks;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await
    .expect("the tasks stored")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_task_another_node_runs_is_listed_claimed_and_completed_from_this_one() {
    let _serial = one_at_a_time().await;
    let schema = Schema::new("tasks");
    let a = schema.node("a").await;
    let b = schema.node("b").await;
    for node in [&a, &b] {
        node.register(&SIGNOFF).expect("register");
    }
    let mut big = order("T-1");
    big.paid = 500;
    let on_a = a.start(&SIGNOFF, big).await.expect("start");
    let on_b = b.start(&SIGNOFF, order("T-2")).await.expect("start");
    let refused = a.start(&SIGNOFF, order("T-3")).await.expect("start");
    let finance = TaskQuery::new().candidate_groups(["finance"]);
    // Each node lists both nodes' tasks, highest priority first.
    let tasks = listed(&b, &finance, 3).await;
    assert_eq!(tasks[0].id.instance, on_a.id());
    assert_eq!(tasks[0].priority, 90);
    assert_eq!(listed(&a, &finance, 3).await, tasks);

    // A claim made on b holds on a.
    let id = tasks[0].id;
    b.claim(id, "ann").await.expect("claimed on b");
    assert_eq!(
        a.claim(id, "bob").await,
        Err(TaskListError::ClaimedByOther {
            id,
            by: "ann".into()
        })
    );

    // Completed from b: a runs the instance and completes it.
    b.complete_task(&SIGNOFF, id, |o| o.approved = true)
        .await
        .expect("handed to a");
    let done = tokio::time::timeout(HANG, on_a.outcome())
        .await
        .expect("ended")
        .completed()
        .expect("completed");
    assert_eq!((done.checked, done.paid, done.approved), (1, 500, true));

    // And the other way round: a completes b's task.
    let b_task = b
        .tasks(&TaskQuery::new().instance(on_b.id()))
        .await
        .unwrap()
        .remove(0);
    a.complete_task(&SIGNOFF, b_task.id, |o| o.approved = true)
        .await
        .expect("handed to b");
    let done = tokio::time::timeout(HANG, on_b.outcome())
        .await
        .expect("ended")
        .completed()
        .expect("completed");
    assert!(done.approved);

    // An error raised from b on a's task: a's boundary catches it.
    let r_task = b
        .tasks(&TaskQuery::new().instance(refused.id()))
        .await
        .unwrap()
        .remove(0);
    b.raise_task_error(r_task.id, "REFUSED", "no budget")
        .await
        .expect("handed to a");
    let outcome = tokio::time::timeout(HANG, refused.outcome())
        .await
        .expect("ended");
    assert!(matches!(outcome, Outcome::Completed(_)), "{outcome:?}");
    listed(&a, &TaskQuery::new(), 0).await;
    // Gone from the store: completing it again is no task.
    assert_eq!(
        b.complete_task(&SIGNOFF, id, |_| {}).await,
        Err(TaskListError::NoTask(id))
    );
    for node in [a, b] {
        node.shutdown(HANG).await.expect("shutdown");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_taken_over_instances_task_keeps_its_id_and_claim_and_completes_on_the_new_node() {
    let _serial = one_at_a_time().await;
    let schema = Schema::new("tasks_moved");
    let a = schema.node("a").await;
    let b = schema.node("b").await;
    for node in [&a, &b] {
        node.register(&SIGNOFF).expect("register");
    }
    let handle = a.start(&SIGNOFF, order("M-1")).await.expect("start");
    let task = listed(&b, &TaskQuery::new(), 1).await.remove(0);
    b.claim(task.id, "ann").await.expect("claimed");
    // a stops: its lease runs out and b takes the instance over.
    a.shutdown(HANG).await.expect("shutdown");
    let moved = tokio::time::timeout(HANG, async {
        loop {
            if let Some(handle) = b.handle(&SIGNOFF, handle.id()) {
                return handle;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await
    .expect("taken over");
    let after = b.task(task.id).await.expect("still open");
    assert_eq!(after.claimed_by.as_deref(), Some("ann"));
    b.complete_task(&SIGNOFF, task.id, |o| o.approved = true)
        .await
        .expect("completed where it runs now");
    let done = tokio::time::timeout(HANG, moved.outcome())
        .await
        .expect("ended")
        .completed()
        .expect("completed");
    assert!(done.approved);
    listed(&b, &TaskQuery::new(), 0).await;
    b.shutdown(HANG).await.expect("shutdown");
}
