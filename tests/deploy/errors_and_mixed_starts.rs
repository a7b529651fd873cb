//! Deployment errors and processes with several kinds of start.

use super::*;

/// A process with only a none start cannot be deployed.
#[tokio::test]
async fn deploy_needs_an_event_start() {
    let engine = Engine::new();
    let error = engine
        .deploy(&PLAIN, Order::default())
        .err()
        .expect("an error");
    assert!(
        matches!(
            error,
            EngineError::Deploy(DeployError::NoEventStart { process: "PLAIN" })
        ),
        "{error:?}"
    );
    assert!(error.to_string().contains("`PLAIN`"), "{error}");
    assert_eq!(engine.running_instances(), 0);
}

/// Deploying outside a tokio runtime is an error, not a panic.
#[test]
fn deploy_needs_a_runtime() {
    let engine = Engine::new();
    let error = engine
        .deploy(&ORDER, Order::default())
        .err()
        .expect("an error");
    assert!(matches!(error, EngineError::NoRuntime), "{error:?}");
    // Nothing was registered: a message published now is buffered.
    assert_eq!(
        at_once(engine.publish_message("order", "K", placed("K", 1))).unwrap(),
        Published::Buffered
    );
}

/// `Engine::start` on a process with only event starts: the instance fails with
/// `NoNoneStart` at once.
#[tokio::test]
async fn start_needs_a_none_start() {
    let engine = Engine::new();
    for h in [
        engine.start(&ORDER, Order::default()).await.unwrap(),
        engine.start(&GO_A, Order::default()).await.unwrap(),
        engine.start(&ONCE, Order::default()).await.unwrap(),
    ] {
        let (outcome, history) =
            tokio::time::timeout(HANG, async { (h.outcome().await, h.history().await) })
                .await
                .expect("it ends");
        assert!(
            matches!(outcome, Outcome::Failed(InstanceError::NoNoneStart)),
            "{outcome:?}"
        );
        assert!(history.steps().is_empty(), "{history}");
    }
    engine.shutdown(HANG).await.expect("every loop stops");
}

process! {
    /// A none start and a message start, both into the same task.
    BOTH: Order {
        start plain;
        start received: message("order", apply = |o, p: &Placed| {
            o.id = p.id.clone();
            o.amount = p.amount;
        });
        task  stamp = |o| async move {
            o.tag = format!("{}-stamped", o.tag);
            Ok(())
        };
        end   done;
        plain -> stamp;
        received -> stamp;
        stamp -> done;
    }
}

/// A process with a none start and a message start: `Engine::start` starts it at the
/// none start, a deployment at the message start.
#[tokio::test(start_paused = true)]
async fn a_process_with_both_kinds_of_start_starts_both_ways() {
    let engine = Engine::new();
    let (outcome, history) = run(&engine, &BOTH, tagged("plain")).await;
    assert_eq!(completed(outcome, &history), tagged("plain-stamped"));
    assert_eq!(
        steps(&history),
        [
            (0, "plain", Happening::Started),
            (0, "stamp", Happening::TaskStarted),
            (0, "stamp", done(&["tag"])),
            (0, "done", Happening::Ended),
        ]
    );

    let mut both = engine.deploy(&BOTH, tagged("msg")).expect("deployed");
    assert_eq!(
        engine
            .publish_message("order", "B", placed("B", 4))
            .await
            .unwrap(),
        Published::Started
    );
    let (outcome, history) = finish(&next_handle(&mut both).await).await;
    assert_eq!(
        completed(outcome, &history),
        Order {
            id: "B".into(),
            amount: 4,
            extra: 0,
            tag: "msg-stamped".into(),
        }
    );
    assert_eq!(
        steps(&history),
        [
            (0, "received", Happening::Started),
            (0, "received", caught(&["id", "amount"])),
            (0, "stamp", Happening::TaskStarted),
            (0, "stamp", done(&["tag"])),
            (0, "done", Happening::Ended),
        ]
    );
    // Still startable by hand while deployed; that starts nothing in the deployment.
    let (outcome, history) = run(&engine, &BOTH, tagged("hand")).await;
    assert_eq!(completed(outcome, &history).tag, "hand-stamped");
    no_handle_for_an_hour(&mut both).await;
    engine.shutdown(HANG).await.expect("every loop stops");
    ended(&mut both).await;
}
