//! A condition that panics fails the instance.

use super::*;

process! {
    /// A condition that panics.
    PANICKY: Gauge {
        start s;
        catch ready: condition(|d| {
            if d.level == 0 {
                panic!("no level yet");
            }
            true
        });
        end   e;
        s -> ready -> e;
    }
}

/// A condition that panics fails the instance, naming the catch.
#[tokio::test(start_paused = true)]
async fn a_panicking_condition_fails_the_instance() {
    let engine = Engine::new();
    let (outcome, history) =
        finish_strict(&engine.start(&PANICKY, Gauge::default()).await.unwrap()).await;
    assert_eq!(
        failed(outcome, &history),
        InstanceError::TaskPanicked {
            node: "ready",
            message: "no level yet".into()
        }
    );
    let data = Gauge {
        level: 1,
        ..Gauge::default()
    };
    let (outcome, history) = finish_strict(&engine.start(&PANICKY, data).await.unwrap()).await;
    completed(outcome, &history);
}
