//! Receive tasks and user tasks.

use super::*;

/// A receive task waits for its correlated message like a catch; being a task, it
/// records `Completed` when the message came.
#[tokio::test(start_paused = true)]
async fn a_receive_task_waits_for_its_message() {
    let engine = Engine::new();
    let h = engine.start(&RECEIVER, deal("r1")).await.unwrap();
    expect_parked(&h, "take").await;
    assert_eq!(
        engine.publish_message("order", "r2", 5_u64).await.unwrap(),
        Published::Buffered
    );
    an_hour_later().await;
    assert!(!h.is_finished());
    assert_eq!(
        engine.publish_message("order", "r1", 7_u64).await.unwrap(),
        Published::Delivered
    );
    let (outcome, history) = finish(&h).await;
    assert_eq!(completed(outcome, &history).amount, 7);
    assert_eq!(
        steps(&history),
        [
            (0, "s", Happening::Started),
            (0, "take", Happening::Parked),
            (0, "take", done(&["amount"])),
            (0, "e", Happening::Ended),
        ]
    );
}

/// A user task: listed by `open_work`; completing another node is `NoSuchUserTask`;
/// completing it applies the update and the instance goes on; afterwards there is no
/// open work and completing again is `InstanceEnded`.
#[tokio::test(start_paused = true)]
async fn a_user_task_is_completed_through_the_handle() {
    let engine = Engine::new();
    let h = engine.start(&APPROVAL, deal("u1")).await.unwrap();
    expect_parked(&h, "approve").await;
    assert_eq!(
        h.open_work().await,
        [OpenWork {
            node: "approve",
            track: TrackId(0),
            iteration: None,
        }]
    );
    // Names that are no user task of the process say which ones are.
    assert!(matches!(
        h.complete("approved", |d| d.approved = true).await,
        Err(WorkError::NoSuchUserTask { node, known, .. }) if node == "approved" && known == ["approve"]
    ));
    assert!(matches!(
        h.fail_work("e", "no").await,
        Err(WorkError::NoSuchUserTask { node, .. }) if node == "e"
    ));
    an_hour_later().await;
    assert!(!h.is_finished());
    assert_eq!(
        h.complete("approve", |d| {
            d.approved = true;
            d.note = "ok".into();
        })
        .await,
        Ok(())
    );
    let (outcome, history) = finish(&h).await;
    let data = completed(outcome, &history);
    assert!(data.approved);
    assert_eq!(data.note, "ok");
    assert_eq!(
        steps(&history),
        [
            (0, "s", Happening::Started),
            (0, "approve", Happening::Parked),
            (0, "approve", done(&["note", "approved"])),
            (0, "e", Happening::Ended),
        ]
    );
    assert_eq!(h.open_work().await, []);
    assert_eq!(
        h.complete("approve", |d| d.approved = false).await,
        Err(WorkError::InstanceEnded)
    );
}

process! {
    /// Two user tasks in parallel.
    TWO_APPROVALS: Deal {
        start    s;
        parallel fork;
        user     legal;
        user     finance;
        parallel join;
        end      e;
        s -> fork -> legal, finance;
        legal, finance -> join -> e;
    }
}

/// Two user tasks in parallel: both open, in the order reached; completed in the
/// other order, each update lands.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn parallel_user_tasks_are_completed_in_any_order() {
    let engine = Engine::new();
    for i in 0..200 {
        let h = engine
            .start(&TWO_APPROVALS, deal(format!("p{i}")))
            .await
            .unwrap();
        expect_parked(&h, "legal").await;
        expect_parked(&h, "finance").await;
        assert_eq!(
            h.open_work().await,
            [
                OpenWork {
                    node: "legal",
                    track: TrackId(0),
                    iteration: None,
                },
                OpenWork {
                    node: "finance",
                    track: TrackId(1),
                    iteration: None,
                },
            ]
        );
        let (first, second) = if i % 2 == 0 {
            ("finance", "legal")
        } else {
            ("legal", "finance")
        };
        let (h1, h2) = (h.clone(), h.clone());
        let a = tokio::spawn(async move { h1.complete(first, |d| d.note = "noted".into()).await });
        let b = tokio::spawn(async move { h2.complete(second, |d| d.approved = true).await });
        assert_eq!(a.await.expect("task"), Ok(()));
        assert_eq!(b.await.expect("task"), Ok(()));
        let (outcome, history) = finish(&h).await;
        let data = completed(outcome, &history);
        assert!(data.approved);
        assert_eq!(data.note, "noted");
        assert_eq!(
            history.count(first, |w| *w == done(&["note"])),
            1,
            "{history}"
        );
        assert_eq!(
            history.count(second, |w| *w == done(&["approved"])),
            1,
            "{history}"
        );
        assert_eq!(history.fired("join"), 1);
    }
    engine.shutdown(HANG).await.expect("loops stop");
}

/// Failing a user task fails the instance with `TaskFailed` naming it.
#[tokio::test(start_paused = true)]
async fn failing_a_user_task_fails_the_instance() {
    let engine = Engine::new();
    let h = engine.start(&APPROVAL, deal("u2")).await.unwrap();
    expect_parked(&h, "approve").await;
    assert_eq!(h.fail_work("approve", "rejected by Bob").await, Ok(()));
    let (outcome, history) = finish(&h).await;
    assert_eq!(
        failed(outcome, &history),
        InstanceError::TaskFailed {
            node: "approve",
            message: "rejected by Bob".into()
        }
    );
    assert_eq!(
        steps(&history),
        [
            (0, "s", Happening::Started),
            (0, "approve", Happening::Parked),
            (
                0,
                "approve",
                Happening::Failed {
                    message: "rejected by Bob".into()
                }
            ),
            (0, "approve", Happening::Cancelled),
        ]
    );
    assert_eq!(h.data().await, Some(deal("u2")));
}

/// Wait until the history shows a `Caught` at `node`.
async fn caught_at<D: Clone>(handle: &InstanceHandle<D>, node: &str) {
    let what = format!("a catch at `{node}`");
    expect_that(handle, &what, |h| {
        h.count(node, |w| matches!(w, Happening::Caught { .. })) > 0
    })
    .await;
}

process! {
    /// A message catch reached before two user tasks.
    MESSAGE_THEN_APPROVALS: Deal {
        start    s;
        parallel fork;
        catch    ack: message("ack", key = |d| d.id.clone());
        user     legal;
        user     finance;
        parallel join;
        end      e;
        s -> fork -> ack, legal, finance;
        ack, legal, finance -> join -> e;
    }
}

/// `open_work` lists the user tasks in the order they were reached — also after an
/// event took a token that parked before them (`ack`, a catch without `apply`).
///
/// Today the parked set is kept with `swap_remove`, so when `ack` (parked first)
/// flips, the last entry (`finance`) takes its place and `open_work` lists
/// `[finance, legal]`.
#[tokio::test(start_paused = true)]
async fn open_work_keeps_the_order_reached_after_an_event() {
    let engine = Engine::new();
    let h = engine
        .start(&MESSAGE_THEN_APPROVALS, deal("ow"))
        .await
        .unwrap();
    expect_parked(&h, "finance").await;
    let legal = OpenWork {
        node: "legal",
        track: TrackId(1),
        iteration: None,
    };
    let finance = OpenWork {
        node: "finance",
        track: TrackId(2),
        iteration: None,
    };
    assert_eq!(h.open_work().await, [legal.clone(), finance.clone()]);
    assert_eq!(
        engine.publish_message("ack", "ow", ()).await.unwrap(),
        Published::Delivered
    );
    caught_at(&h, "ack").await;
    assert_eq!(h.open_work().await, [legal, finance]);
    h.complete("legal", |_| {}).await.expect("legal is open");
    h.complete("finance", |_| {})
        .await
        .expect("finance is open");
    let (outcome, history) = finish(&h).await;
    completed(outcome, &history);
}
