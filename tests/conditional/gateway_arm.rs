//! A conditional arm of an event-based gateway racing a message.

use super::*;

process! {
    /// A conditional arm of an event-based gateway races a message arm.
    GATE: Gauge {
        start       s;
        parallel    fork;
        event_based gate;
        catch       warm: condition(|d| d.temp > 100, on = [temp]);
        catch       told: message("enough", key = |d| d.id.clone());
        end         warm_end;
        end         told_end;
        catch       top: link("set");
        user        set;
        exclusive   more;
        throw       again: link("set");
        end         set_done;
        s -> fork -> gate, set;
        gate -> warm, told;
        warm -> warm_end;
        told -> told_end;
        top -> set;
        set -> more;
        more -> again when |d| !d.finished;
        more -> set_done else;
    }
}

/// A conditional arm of an event-based gateway: the commit that makes it true wins
/// the gateway (the choice is recorded in that step); when the message arm wins
/// first, the condition is disarmed and a later edge does nothing.
async fn a_conditional_gateway_arm_races_a_message(i: usize) {
    let engine = Engine::new();
    let id = format!("gate-{i}");
    let handle = engine
        .start(
            &GATE,
            Gauge {
                id: id.clone(),
                ..Gauge::default()
            },
        )
        .await
        .unwrap();
    expect_that(&handle, "the gateway waits", |h| {
        count(h, "gate", &Happening::Parked) == 1
    })
    .await;
    let message_first = i % 2 == 1;
    if message_first {
        assert_eq!(
            engine.publish_message("enough", &id, ()).await.unwrap(),
            thresh::Published::Delivered
        );
        expect_that(&handle, "the message arm won", |h| {
            count(h, "told_end", &Happening::Ended) == 1
        })
        .await;
    }
    set(&handle, |d| d.temp = 50).await;
    set(&handle, |d| d.temp = 150).await;
    finish_setting(&handle).await;
    let (outcome, history) = finish_strict(&handle).await;
    completed(outcome, &history);
    let routes: Vec<Happening> = history
        .steps()
        .iter()
        .filter(|s| s.node == "gate")
        .map(|s| s.what.clone())
        .collect();
    if message_first {
        assert_eq!(routes, [Happening::Parked, routed(&["told"])]);
        assert_eq!(history.ended_at(), ["told_end", "set_done"]);
    } else {
        assert_eq!(routes, [Happening::Parked, routed(&["warm"])]);
        // Chosen in the step of the commit that made the condition true.
        let c = indices(&history, "set", |h| *h == done(&["temp"]))[1];
        let next = &history.steps()[c + 1];
        assert_eq!(
            (next.node, &next.what),
            ("gate", &routed(&["warm"])),
            "{history}"
        );
        assert_eq!(history.ended_at().len(), 2);
        assert_eq!(count(&history, "warm_end", &Happening::Ended), 1);
        // The message arm is gone: the message waits in the broker.
        assert_eq!(
            engine.publish_message("enough", &id, ()).await.unwrap(),
            thresh::Published::Buffered
        );
    }
}

both_runtimes!(RUNS => a_conditional_gateway_arm_races_a_message);
