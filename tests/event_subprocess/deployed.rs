//! Deployed processes run their event sub-processes, keyed on their start message's data.

use super::*;

process! {
    /// Started by an `order` message; top-level event sub-processes.
    DEPLOYED: Order {
        start received: message("order", apply = |o, id: &String| o.id = id.clone());
        user  review;
        end   done;
        received -> review -> done;
        event_subprocess on_cancel {
            start cancel: message("cancel", key = |o| o.id.clone(), apply = |o, p: &String| o.reason = p.clone());
            task  undo = undo;
            end   cancelled;
            cancel -> undo -> cancelled;
        }
        event_subprocess on_ping {
            start ping: non_interrupting signal("ping");
            task  note = note;
            end   noted;
            ping -> note -> noted;
        }
    }
}

/// An instance a message start started (`Engine::deploy`) has its top-level event
/// sub-processes armed: a signal runs the non-interrupting one, a `cancel` message
/// with its key the interrupting one; the key is free again afterwards.
#[tokio::test(start_paused = true)]
async fn a_deployed_instance_runs_its_event_sub_processes() {
    let engine = Engine::new();
    let mut orders = engine
        .deploy(&DEPLOYED, Order::default())
        .expect("deployed");
    assert_eq!(
        engine
            .publish_message("order", "D-1", "D-1".to_string())
            .await
            .unwrap(),
        Published::Started
    );
    let handle = next_handle(&mut orders).await;
    expect_open_work(&handle, "review").await;
    assert_eq!(engine.broadcast_signal("ping", ()).await.unwrap(), 1);
    expect_that(&handle, "the ping ran", |h| ends(h, "noted") == 1).await;
    assert_eq!(
        engine
            .publish_message("cancel", "D-1", "changed my mind".to_string())
            .await
            .unwrap(),
        Published::Delivered
    );
    let (outcome, history) = outcome_of(&handle).await;
    let data = completed(outcome, &history);
    assert_eq!(
        (
            data.id.as_str(),
            data.reason.as_str(),
            data.undone,
            data.notes
        ),
        ("D-1", "changed my mind", 1, 1)
    );
    assert_eq!(
        steps(&history)[..2],
        [
            (0, "received", Happening::Started),
            (0, "received", caught(&["id"])),
        ]
    );
    assert_eq!(count(&history, "review", &Happening::Cancelled), 1);
    assert_eq!(ends(&history, "cancelled"), 1);

    // The key is free: a new order with it starts a new instance, which completes.
    assert_eq!(
        engine
            .publish_message("order", "D-1", "D-1".to_string())
            .await
            .unwrap(),
        Published::Started
    );
    let handle = next_handle(&mut orders).await;
    complete(&handle, "review", |_| {}).await;
    let (outcome, history) = outcome_of(&handle).await;
    let data = completed(outcome, &history);
    assert_eq!((data.undone, data.notes), (0, 0));
    assert_eq!(engine.broadcast_signal("ping", ()).await.unwrap(), 0);
}

process! {
    /// Started by an `order` message; later `order` messages with its id run its
    /// non-interrupting event sub-process.
    DEPLOYED_MORE: Order {
        start received: message("order", apply = |o, id: &String| o.id = id.clone());
        user  review;
        end   done;
        received -> review -> done;
        event_subprocess on_more {
            start more: non_interrupting message("order", key = |o| o.id.clone(), apply = |o, id: &String| o.reason.push_str(id));
            task  note = note;
            end   noted;
            more -> note -> noted;
        }
    }
}

/// A deployed instance whose event sub-process waits for the start's own message
/// name: while it runs, an `order` message with its key goes to it (not to a new
/// instance) — each one runs the event sub-process; once it has ended, the key
/// starts a new instance.
#[tokio::test(start_paused = true)]
async fn a_deployed_instance_catches_its_start_message_again_in_an_event_sub_process() {
    let engine = Engine::new();
    let mut orders = engine
        .deploy(&DEPLOYED_MORE, Order::default())
        .expect("deployed");
    assert_eq!(
        engine
            .publish_message("order", "M-1", "M-1".to_string())
            .await
            .unwrap(),
        Published::Started
    );
    let handle = next_handle(&mut orders).await;
    expect_open_work(&handle, "review").await;
    for k in 1..=2 {
        assert_eq!(
            engine
                .publish_message("order", "M-1", "+".to_string())
                .await
                .unwrap(),
            Published::Delivered
        );
        expect_that(&handle, "the run ended", |h| ends(h, "noted") == k).await;
    }
    complete(&handle, "review", |_| {}).await;
    let (outcome, history) = outcome_of(&handle).await;
    let data = completed(outcome, &history);
    assert_eq!(
        (data.id.as_str(), data.reason.as_str(), data.notes),
        ("M-1", "++", 2)
    );
    assert_eq!(
        engine
            .publish_message("order", "M-1", "M-1".to_string())
            .await
            .unwrap(),
        Published::Started
    );
    let handle = next_handle(&mut orders).await;
    complete(&handle, "review", |_| {}).await;
    let (outcome, history) = outcome_of(&handle).await;
    assert_eq!(completed(outcome, &history).notes, 0);
    engine
        .shutdown(Duration::from_secs(10))
        .await
        .expect("stops");
}
