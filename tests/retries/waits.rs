//! The backoff schedule, read off the paused clock: each wait the one before times
//! the multiplier, never past the longest.

use super::*;

async fn stamped(order: &mut Order) -> Result<(), TaskError> {
    let run = thresh::task::current().unwrap();
    STARTS
        .lock()
        .unwrap()
        .push((run.instance.0, tokio::time::Instant::now()));
    order.charged = run.attempt;
    Err(TaskError::new("still down"))
}

process! {
    pub SCHEDULE: Order {
        start s;
        task charge = stamped: retry(5, backoff = 1s..5s, multiplier = 2, jitter = 0);
        end e;
        s -> charge -> e;
    }
}

#[tokio::test(start_paused = true)]
async fn the_backoff_schedule_on_the_paused_clock() {
    let engine = Engine::new();
    let handle = engine.start(&SCHEDULE, Order::default()).await.unwrap();
    let incident = next_incident(&engine).await;
    assert_eq!(incident.attempts, 5);
    let id = handle.id().0;
    let starts: Vec<tokio::time::Instant> = STARTS
        .lock()
        .unwrap()
        .iter()
        .filter(|(i, _)| *i == id)
        .map(|(_, at)| *at)
        .collect();
    let waits: Vec<Duration> = starts.windows(2).map(|w| w[1] - w[0]).collect();
    assert_eq!(
        waits,
        [1, 2, 4, 5].map(Duration::from_secs),
        "1 s, doubled, at most 5 s"
    );
    handle.cancel();
}

#[test]
fn jitter_moves_each_wait_within_its_fraction() {
    let policy = thresh::RetryPolicy {
        attempts: 5,
        backoff: Duration::from_secs(10),
        multiplier: 1.0,
        max_backoff: Duration::from_secs(10),
        jitter: 0.2,
    };
    let waits: Vec<Duration> = (0..100).map(|seed| policy.backoff_after(1, seed)).collect();
    assert!(waits
        .iter()
        .all(|w| (Duration::from_secs(8)..=Duration::from_secs(12)).contains(w)));
    assert!(
        waits.iter().any(|w| *w != waits[0]),
        "spread, not one value"
    );
}
