//! Deployed processes started by timers.

use super::*;

/// `timer(Duration::from_secs(10))` starts exactly one instance, ten seconds after the
/// deployment. With its schedule spent, the deployment's `next()` returns `None`,
/// though it is still deployed (`undeploy` returns `true`).
#[tokio::test(start_paused = true)]
async fn a_timer_start_fires_once() {
    let engine = Engine::new();
    let t0 = Instant::now();
    let mut ticks = engine.deploy(&ONCE, tagged("t")).expect("deployed");
    let h = next_handle(&mut ticks).await;
    assert_eq!(t0.elapsed(), Duration::from_secs(10));
    let (outcome, history) = finish(&h).await;
    assert_eq!(completed(outcome, &history), tagged("t"));
    assert_eq!(steps(&history), timer_history());
    // Nothing more, ever: the schedule is spent and the deployment says so.
    ended(&mut ticks).await;
    assert_eq!(t0.elapsed(), Duration::from_secs(10));
    tokio::time::sleep(Duration::from_secs(3600)).await;
    assert_eq!(engine.running_instances(), 0);
    // Instance ids are handed out in order: nothing else was started.
    assert_eq!(
        engine.start(&PLAIN, Order::default()).await.unwrap().id(),
        InstanceId(1)
    );
    assert!(engine.undeploy(ticks.id()));
    assert!(!engine.undeploy(ticks.id()));
    engine.shutdown(HANG).await.expect("every loop stops");
}

process! {
    /// Started every five seconds, three times.
    THRICE: Order {
        start tick: timer(every = Duration::from_secs(5), times = 3);
        end   done;
        tick -> done;
    }
}

/// `timer(every = 5 s, times = 3)` starts three instances, at 5, 10 and 15 s, and no
/// more.
#[tokio::test(start_paused = true)]
async fn a_timer_cycle_starts_its_instances_and_no_more() {
    let engine = Engine::new();
    let t0 = Instant::now();
    let mut ticks = engine.deploy(&THRICE, Order::default()).expect("deployed");
    let mut at = Vec::new();
    for _ in 0..3 {
        let h = next_handle(&mut ticks).await;
        at.push(t0.elapsed().as_secs());
        let (outcome, history) = finish(&h).await;
        completed(outcome, &history);
        assert_eq!(steps(&history), timer_history());
    }
    assert_eq!(at, [5, 10, 15]);
    ended(&mut ticks).await;
    assert_eq!(t0.elapsed(), Duration::from_secs(15));
    tokio::time::sleep(Duration::from_secs(3600)).await;
    assert_eq!(engine.running_instances(), 0);
    assert_eq!(
        engine.start(&PLAIN, Order::default()).await.unwrap().id(),
        InstanceId(3)
    );
    engine.shutdown(HANG).await.expect("every loop stops");
}
