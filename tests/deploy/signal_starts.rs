//! Deployed processes started by signals.

use super::*;

process! {
    /// An instance (started with `Engine::start`) that catches `go`.
    LISTENER: Order {
        start s;
        catch heard: signal("go", apply = |o, n: &u64| o.extra = *n);
        end   e;
        s -> heard -> e;
    }
}

/// One broadcast starts one instance of every process deployed with that signal start,
/// and counts them with the catchers it reached; a second broadcast starts them again.
/// Two deployments of the same process start one each.
#[tokio::test(start_paused = true)]
async fn a_signal_starts_one_instance_per_deployed_process() {
    let engine = Engine::new();
    let mut a = engine.deploy(&GO_A, tagged("a")).expect("deployed");
    let mut b = engine.deploy(&GO_B, Order::default()).expect("deployed");
    let listener = engine.start(&LISTENER, Order::default()).await.unwrap();
    expect_parked(&listener, "heard").await;

    assert_eq!(engine.broadcast_signal("go", 7_u64).await.unwrap(), 3);
    let (outcome, history) = finish(&next_handle(&mut a).await).await;
    assert_eq!(completed(outcome, &history), {
        let mut o = tagged("a");
        o.amount = 7;
        o
    });
    assert_eq!(
        steps(&history),
        [
            (0, "go", Happening::Started),
            (0, "go", caught(&["amount"])),
            (0, "done", Happening::Ended),
        ]
    );
    let (outcome, history) = finish(&next_handle(&mut b).await).await;
    assert_eq!(completed(outcome, &history), tagged("b"));
    assert_eq!(
        steps(&history),
        [
            (0, "go", Happening::Started),
            (0, "go", caught(&[])),
            (0, "mark", Happening::TaskStarted),
            (0, "mark", done(&["tag"])),
            (0, "done", Happening::Ended),
        ]
    );
    let (outcome, history) = finish(&listener).await;
    assert_eq!(completed(outcome, &history).extra, 7);
    no_handle_for_an_hour(&mut a).await;
    no_handle_for_an_hour(&mut b).await;

    // No catcher now: the two starts alone.
    assert_eq!(engine.broadcast_signal("go", 8_u64).await.unwrap(), 2);
    let (outcome, history) = finish(&next_handle(&mut a).await).await;
    assert_eq!(completed(outcome, &history).amount, 8);
    let (outcome, history) = finish(&next_handle(&mut b).await).await;
    completed(outcome, &history);

    // A second deployment of GO_A: one instance each.
    let mut a2 = engine.deploy(&GO_A, tagged("a2")).expect("deployed");
    assert_ne!(a2.id(), a.id());
    assert_eq!(engine.broadcast_signal("go", 9_u64).await.unwrap(), 3);
    let (outcome, history) = finish(&next_handle(&mut a).await).await;
    assert_eq!(completed(outcome, &history).tag, "a");
    let (outcome, history) = finish(&next_handle(&mut a2).await).await;
    assert_eq!(completed(outcome, &history).tag, "a2");
    let (outcome, history) = finish(&next_handle(&mut b).await).await;
    completed(outcome, &history);
    no_handle_for_an_hour(&mut a).await;
    no_handle_for_an_hour(&mut a2).await;
    no_handle_for_an_hour(&mut b).await;

    // Another signal's name starts nothing.
    assert_eq!(engine.broadcast_signal("stop", 1_u64).await.unwrap(), 0);
    no_handle_for_an_hour(&mut a).await;
    engine.shutdown(HANG).await.expect("every loop stops");
    ended(&mut a).await;
    ended(&mut a2).await;
    ended(&mut b).await;
}
