//! Versions across nodes (issue 34): a task completion or an incident's retry with
//! data handed to the node that runs an instance of an older version, whose data
//! type is not the newest version's, reads that data with the instance's own
//! version (the stored request names only the process).

use std::time::Duration;

use serde::{Deserialize, Serialize};
use thresh::{process, ProcessData, TaskError, TaskQuery};

use super::{one_at_a_time, order, Order, Schema, HANG};

/// Version 2's data: a field version 1's JSON has not, so reading version 1's
/// data as version 2's fails.
#[derive(Clone, Debug, Default, PartialEq, ProcessData, Serialize, Deserialize)]
pub struct OrderCents {
    pub id: String,
    pub cents: u64,
}

process! {
    SIGN_V1: Order = "sign" version 1 {
        start s;
        user  approve;
        task  charge = |o| async move {
            match o.paid {
                0 => Err(TaskError::permanent("nothing to charge")),
                _ => { o.checked += 1; Ok(()) }
            }
        };
        end   e;
        s -> approve -> charge -> e;
    }

    SIGN_V2: OrderCents = "sign" version 2 {
        start s;
        user  approve;
        task  charge = |o| async move { o.cents += 1; Ok(()) };
        end   e;
        s -> approve -> charge -> e;
    }
}

/// Node b completes, then retries with data, the task of a version 1 instance
/// node a runs, while both nodes know version 2 (another data type) as the newest.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn another_nodes_completion_and_retry_read_the_instances_own_version() {
    let _serial = one_at_a_time().await;
    let schema = Schema::new("versions");
    let a = schema.node("a").await;
    let b = schema.node("b").await;
    for node in [&a, &b] {
        node.register(&SIGN_V1).expect("register");
        node.register(&SIGN_V2).expect("register");
    }
    let handle = a.start(&SIGN_V1, order("V-1")).await.expect("start");
    let task = tokio::time::timeout(HANG, async {
        loop {
            let tasks = b.tasks(&TaskQuery::new()).await.expect("list");
            if let Some(task) = tasks.into_iter().next() {
                return task;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await
    .expect("the task stored");
    b.complete_task(&SIGN_V1, task.id, |o: &mut Order| o.approved = true)
        .await
        .expect("handed to a");
    // Nothing paid: the charge opens an incident, retried from b with new data.
    let incident = tokio::time::timeout(HANG, async {
        loop {
            if let Some(incident) = b.incidents().await.expect("list").into_iter().next() {
                return incident;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await
    .expect("the incident stored");
    let mut fixed = order("V-1");
    fixed.paid = 7;
    fixed.approved = true;
    b.retry_with_data(incident.id, fixed)
        .await
        .expect("handed to a");
    let done = tokio::time::timeout(HANG, handle.outcome())
        .await
        .expect("ended")
        .completed()
        .expect("completed on version 1");
    assert_eq!((done.approved, done.paid, done.checked), (true, 7, 1));
    for node in [a, b] {
        node.shutdown(HANG).await.expect("shutdown");
    }
}

process! {
    DESK_V1: Order = "desk" version 1 {
        start s;
        user  approve;
        end   e;
        s -> approve -> e;
    }

    DESK_V2: Order = "desk" version 2 {
        start s;
        user  review;
        task  ship = |o| async move { o.checked += 100; Ok(()) };
        end   e;
        s -> review -> ship -> e;
    }
}

static DESK_PLAN: thresh::Migration<Order, Order> =
    thresh::migrate!(DESK_V1 => DESK_V2 { approve => review });

/// Migration on two nodes: each node moves the instances it owns and skips the
/// other's; migrating on both moves all, while completions race the migration
/// on the owner (each lands once, on the version that took it).
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn each_node_migrates_the_instances_it_owns() {
    let _serial = one_at_a_time().await;
    let schema = Schema::new("migrate_nodes");
    let a = schema.node("a").await;
    let b = schema.node("b").await;
    for node in [&a, &b] {
        node.register(&DESK_V1).expect("register");
        node.register(&DESK_V2).expect("register");
    }
    let mut on_a = Vec::new();
    let mut on_b = Vec::new();
    for i in 0..6 {
        on_a.push(
            a.start(&DESK_V1, order(&format!("A-{i}")))
                .await
                .expect("start"),
        );
        on_b.push(
            b.start(&DESK_V1, order(&format!("B-{i}")))
                .await
                .expect("start"),
        );
    }
    for handle in on_a.iter().chain(&on_b) {
        super::until_open(handle, "approve").await;
    }
    // a migrates while one of its instances is completed on version 1.
    let racing = on_a[0].clone();
    let race = tokio::spawn(async move {
        let _ = racing
            .complete("approve", |o: &mut Order| o.approved = true)
            .await;
    });
    let report = thresh::Query::of(&DESK_V1);
    let from_a = a.migrate(&DESK_PLAN, &report).await.expect("migrate on a");
    race.await.expect("raced");
    for handle in &on_b {
        let skipped = from_a.skipped.iter().find(|(id, _)| *id == handle.id());
        let why = &skipped.expect("b's instance skipped on a").1;
        assert!(why.contains("another node"), "{why}");
    }
    let from_b = b.migrate(&DESK_PLAN, &report).await.expect("migrate on b");
    assert_eq!(from_b.migrated.len(), on_b.len(), "{from_b:?}");
    for handle in on_a.iter().chain(&on_b) {
        let migrated =
            from_a.migrated.contains(&handle.id()) || from_b.migrated.contains(&handle.id());
        if migrated {
            handle
                .complete("review", |o: &mut Order| o.approved = true)
                .await
                .expect("reviewed");
        } else {
            assert_eq!(handle.id(), on_a[0].id(), "only the raced one stays");
        }
        let done = tokio::time::timeout(HANG, handle.outcome())
            .await
            .expect("ended")
            .completed()
            .expect("completed");
        assert!(done.approved);
        assert_eq!(done.checked, if migrated { 100 } else { 0 });
    }
    for node in [a, b] {
        node.shutdown(HANG).await.expect("shutdown");
    }
}
