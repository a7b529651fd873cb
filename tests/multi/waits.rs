use std::time::Duration;

use thresh::{process, Engine, Happening, ProcessData, TaskError};

#[derive(Clone, Debug, Default, ProcessData)]
pub struct Review {
    pub id: String,
    pub reviewers: Vec<String>,
    pub approvals: u32,
    pub notes: Vec<String>,
    pub paid: u32,
    pub boxes: Vec<String>,
    pub weighed: u32,
    pub bad: String,
    pub rejected: bool,
}

process! {
    pub APPROVE: Review {
        start s;
        #[multi_instance(each = |r| r.reviewers.clone(), completion = |_r, n| n.completed >= 2)]
        user approve;
        end e;
        s -> approve -> e;
    }
}

process! {
    pub PAYMENTS: Review {
        start s;
        #[multi_instance(count = |r| r.reviewers.len())]
        receive pay: message("payment", key = |r| r.id.clone(), apply = |r, amount: &u32| r.paid += amount);
        end e;
        s -> pay -> e;
    }
}

async fn label(r: &mut Review, name: &String, index: usize) -> Result<String, TaskError> {
    tokio::time::sleep(Duration::from_millis(((3 - index) % 3) as u64)).await;
    if *name == r.bad {
        return Err(TaskError::bpmn("BAD", format!("cannot box {name}")));
    }
    Ok(format!("{index}:{name}"))
}

process! {
    pub BOXES: Review {
        start s;
        #[multi_instance(each = |r| r.reviewers.clone(), output = |r, _i, note| r.notes.push(note))]
        subprocess pack {
            start ps;
            parallel fork;
            #[item(output)]
            task label = label;
            task weigh = |r| async move { r.weighed += 1; Ok(()) };
            parallel join;
            end pe;
            ps -> fork -> label, weigh -> join -> pe;
        }
        boundary bad on pack: error("BAD");
        task reject = |r| async move { r.rejected = true; Ok(()) };
        end e;
        end rejected;
        s -> pack -> e;
        bad -> reject -> rejected;
    }
}

fn names(n: usize) -> Vec<String> {
    (0..n).map(|i| format!("r{i}")).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_multi_instance_user_task_opens_one_work_item_per_instance() {
    let engine = Engine::new();
    let h = engine
        .start(
            &APPROVE,
            Review {
                reviewers: names(3),
                ..Review::default()
            },
        )
        .await
        .unwrap();
    thresh::testing::wait_until_open_work(&h, "approve")
        .await
        .unwrap();
    let open = h.open_work().await;
    assert_eq!(open.len(), 3);
    assert!(open.iter().all(|w| w.node == "approve"));
    h.complete("approve", |r| r.approvals += 1).await.unwrap();
    h.complete("approve", |r| r.approvals += 1).await.unwrap();
    // Two approvals are enough: the third is cancelled.
    let done = h.outcome().await.completed().unwrap();
    assert!(
        (1..=2).contains(&done.approvals),
        "one field both wrote: the later commit wins"
    );
    let history = h.history().await;
    assert_eq!(
        history.count("approve", |w| matches!(w, Happening::Cancelled)),
        1
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_multi_instance_receive_task_takes_one_message_per_instance() {
    for _ in 0..100 {
        let engine = Engine::new();
        let h = engine
            .start(
                &PAYMENTS,
                Review {
                    id: "R1".into(),
                    reviewers: names(3),
                    ..Review::default()
                },
            )
            .await
            .unwrap();
        thresh::testing::wait_until_parked(&h, "pay").await.unwrap();
        let publishers: Vec<_> = (1..=3u32)
            .map(|amount| {
                let engine = engine.clone();
                tokio::spawn(async move {
                    engine
                        .publish_message("payment", "R1", amount)
                        .await
                        .unwrap()
                })
            })
            .collect();
        for p in publishers {
            p.await.unwrap();
        }
        // Each instance took one message (their `apply`s wrote one field: the later
        // commit wins it).
        let done = h.outcome().await.completed().unwrap();
        assert!((1..=6).contains(&done.paid));
        assert_eq!(engine.broker_stats().delivered, 3);
        let history = h.history().await;
        assert_eq!(
            history.count("pay", |w| matches!(w, Happening::Completed { .. })),
            4
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn each_instance_of_a_sub_process_is_its_own_scope_with_its_item() {
    for _ in 0..100 {
        let engine = Engine::new();
        let h = engine
            .start(
                &BOXES,
                Review {
                    reviewers: names(3),
                    ..Review::default()
                },
            )
            .await
            .unwrap();
        let done = h.outcome().await.completed().unwrap();
        // In index order; `weighed` is one field three parallel instances wrote (the
        // later commit wins a field both changed: ARCHITECTURE.md, "The instance loop").
        assert_eq!(done.notes, ["0:r0", "1:r1", "2:r2"]);
        assert!((1..=3).contains(&done.weighed));
        let history = h.history().await;
        // One join firing per instance: each instance's join counts its own tokens.
        assert_eq!(history.fired("join"), 3);
        assert_eq!(history.ended_at().iter().filter(|e| **e == "pe").count(), 3);
        assert_eq!(history.ended_at().last(), Some(&"e"));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn an_error_in_one_sub_process_instance_leaves_through_the_activity_boundary() {
    for _ in 0..100 {
        let engine = Engine::new();
        let h = engine
            .start(
                &BOXES,
                Review {
                    reviewers: names(3),
                    bad: "r1".into(),
                    ..Review::default()
                },
            )
            .await
            .unwrap();
        let done = h.outcome().await.completed().unwrap();
        assert!(done.rejected);
        assert_eq!(h.history().await.ended_at().last(), Some(&"rejected"));
    }
}

process! {
    pub APPROVE_ALL: Review {
        start s;
        #[multi_instance(each = |r| r.reviewers.clone())]
        user approve;
        end e;
        s -> approve -> e;
    }
}

process! {
    pub SIGN_ROUNDS: Review {
        start s;
        #[multi_instance(sequential, count = |_r| 2)]
        subprocess rounds {
            start rs;
            user sign;
            end re;
            rs -> sign -> re;
        }
        end e;
        s -> rounds -> e;
    }
}

/// Wait until `n` work items are open at `node`.
async fn open(h: &thresh::InstanceHandle<Review>, n: usize) -> Vec<thresh::OpenWork> {
    loop {
        let open = h.open_work().await;
        if open.len() >= n {
            return open;
        }
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn open_work_carries_its_instance_index_and_completes_earliest_first() {
    // 40 instances: more than the armed set scans, so the lookups are the index's.
    for _ in 0..10 {
        let engine = Engine::new();
        let h = engine
            .start(
                &APPROVE_ALL,
                Review {
                    reviewers: names(40),
                    ..Review::default()
                },
            )
            .await
            .unwrap();
        let work = open(&h, 40).await;
        let iterations: Vec<Option<u32>> = work.iter().map(|w| w.iteration).collect();
        assert_eq!(iterations, (0..40).map(Some).collect::<Vec<_>>());
        for i in 0..40u32 {
            let first = h.open_work().await.into_iter().next().unwrap();
            assert_eq!(first.iteration, Some(i));
            h.complete("approve", |r| r.approvals += 1).await.unwrap();
        }
        h.outcome().await.completed().unwrap();
        let history = h.history().await;
        assert_eq!(
            history.count("approve", |w| matches!(w, Happening::Completed { .. })),
            41
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_user_task_in_a_multi_instance_sub_process_carries_the_sub_process_index() {
    let engine = Engine::new();
    let h = engine.start(&SIGN_ROUNDS, Review::default()).await.unwrap();
    for round in 0..2 {
        let work = thresh::testing::wait_until_open_work(&h, "sign")
            .await
            .unwrap();
        assert_eq!(work.iteration, Some(round));
        h.complete("sign", |r| r.approvals += 1).await.unwrap();
    }
    h.outcome().await.completed().unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn forty_receive_instances_each_take_one_message() {
    for _ in 0..10 {
        let engine = Engine::new();
        let h = engine
            .start(
                &PAYMENTS,
                Review {
                    id: "R2".into(),
                    reviewers: names(40),
                    ..Review::default()
                },
            )
            .await
            .unwrap();
        while h
            .history()
            .await
            .count("pay", |w| matches!(w, Happening::Parked))
            < 40
        {
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
        for _ in 0..40 {
            engine.publish_message("payment", "R2", 1u32).await.unwrap();
        }
        h.outcome().await.completed().unwrap();
        assert_eq!(engine.broker_stats().delivered, 40);
        assert_eq!(
            h.history()
                .await
                .count("pay", |w| matches!(w, Happening::Completed { .. })),
            41
        );
    }
}

process! {
    pub SIGN_TWICE: Review {
        start s;
        #[standard_loop(while = |_r, runs| runs < 2)]
        user sign;
        end e;
        s -> sign -> e;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_looped_user_task_carries_its_run() {
    let engine = Engine::new();
    let h = engine.start(&SIGN_TWICE, Review::default()).await.unwrap();
    for run in 0..2 {
        let work = thresh::testing::wait_until_open_work(&h, "sign")
            .await
            .unwrap();
        assert_eq!(work.iteration, Some(run));
        h.complete("sign", |_| {}).await.unwrap();
    }
    h.outcome().await.completed().unwrap();
}
