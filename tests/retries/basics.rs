//! Retries, permanent errors, panics, timeouts, incidents and their retry, the
//! gateway with no flow, fail-fast.

use super::*;

process! {
    pub CHARGE: Order {
        start s;
        task charge = flaky: retry(3, backoff = 1s..1min);
        end e;
        s -> charge -> e;
    }
}

#[tokio::test(start_paused = true)]
async fn two_failed_attempts_then_the_third_completes_with_one_commit() {
    let engine = Engine::new();
    let handle = engine
        .start(
            &CHARGE,
            Order {
                fail_first: 2,
                ..Order::default()
            },
        )
        .await
        .unwrap();
    let order = handle
        .outcome()
        .await
        .completed()
        .expect("the third attempt completes");
    assert_eq!(order.charged, 3);
    let history = handle.history().await;
    let at_charge: Vec<&Happening> = history
        .steps()
        .iter()
        .filter(|s| s.node == "charge")
        .map(|s| &s.what)
        .collect();
    assert_eq!(
        at_charge
            .iter()
            .filter(|w| matches!(w, Happening::AttemptFailed { .. }))
            .count(),
        2,
        "{history:?}"
    );
    assert_eq!(
        at_charge
            .iter()
            .filter(|w| matches!(w, Happening::Completed { .. }))
            .count(),
        1,
        "one commit: {history:?}"
    );
    assert!(matches!(
        at_charge[1],
        Happening::AttemptFailed { attempt: 1, message } if message == "network blip #1"
    ));
}

process! {
    pub PAY: Order {
        start s;
        task charge = needs_card: retry(2, backoff = 1s);
        end e;
        s -> charge -> e;
    }
}

#[tokio::test(start_paused = true)]
async fn spent_attempts_open_an_incident_and_retry_after_a_fix_completes() {
    let engine = Engine::new();
    let handle = engine.start(&PAY, Order::default()).await.unwrap();
    let incident = next_incident(&engine).await;
    assert_eq!(
        (
            incident.process,
            incident.node,
            incident.error.as_str(),
            incident.attempts
        ),
        ("PAY", "charge", "no card", 2)
    );
    assert_eq!(incident.id.instance, handle.id());
    assert_eq!(handle.incidents().await, vec![incident.clone()]);
    assert!(
        !handle.is_finished(),
        "the instance waits, it does not fail"
    );
    // Visible in history and picture.
    let history = handle.history().await;
    assert!(matches!(
        history.steps().last().map(|s| &s.what),
        Some(Happening::Incident { attempts: 2, .. })
    ));
    assert!(PAY.to_svg_with(&history).contains("class=\"incident\""));
    // A retry of the wrong type changes nothing; the incident stays.
    let wrong = engine.retry_with(incident.id, |n: &mut u32| *n += 1).await;
    assert_eq!(wrong, Err(thresh::RetryError::WrongData(incident.id)));
    assert_eq!(engine.incidents().await.unwrap().len(), 1);
    engine
        .retry_with(incident.id, |o: &mut Order| o.card = "4242".into())
        .await
        .expect("the incident is open");
    let order = handle
        .outcome()
        .await
        .completed()
        .expect("completes after the fix");
    assert_eq!((order.card.as_str(), order.charged), ("4242", 3));
    assert!(engine.incidents().await.unwrap().is_empty());
    assert_eq!(
        engine.retry(incident.id).await,
        Err(thresh::RetryError::NoIncident(incident.id))
    );
    let history = handle.history().await;
    assert!(history
        .steps()
        .iter()
        .any(|s| matches!(&s.what, Happening::Retried { changed } if changed[..] == ["card"])));
}

#[tokio::test(start_paused = true)]
async fn a_retry_that_fails_again_opens_the_incident_again() {
    let engine = Engine::new();
    let handle = engine.start(&PAY, Order::default()).await.unwrap();
    let first = next_incident(&engine).await;
    handle.retry(first.id).await.unwrap();
    let second = next_incident(&engine).await;
    assert_ne!(first.id, second.id);
    assert_eq!(second.attempts, 3, "the retry is one more attempt");
    handle.cancel();
    assert!(matches!(handle.outcome().await, Outcome::Cancelled(_)));
    assert!(
        engine.incidents().await.unwrap().is_empty(),
        "a cancel resolves its incidents"
    );
}

async fn declined(order: &mut Order) -> Result<(), TaskError> {
    order.charged = attempt();
    Err(TaskError::permanent("card declined"))
}

process! {
    pub DECLINED: Order {
        start s;
        task charge = declined: retry(5, backoff = 1s);
        end e;
        s -> charge -> e;
    }
}

#[tokio::test(start_paused = true)]
async fn a_permanent_error_opens_an_incident_at_once() {
    let engine = Engine::new();
    let started = tokio::time::Instant::now();
    let handle = engine.start(&DECLINED, Order::default()).await.unwrap();
    let incident = next_incident(&engine).await;
    assert_eq!(
        (incident.error.as_str(), incident.attempts),
        ("card declined", 1)
    );
    assert!(
        started.elapsed() < Duration::from_secs(1),
        "no backoff waited"
    );
    let history = handle.history().await;
    assert!(!history
        .steps()
        .iter()
        .any(|s| matches!(s.what, Happening::AttemptFailed { .. })));
}

/// One instance's incidents, without the others': `incidents_of`, the same on
/// both engines (a durable one reads that instance's checkpoint alone).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn incidents_of_one_instance_are_its_own() {
    let memory = Engine::new();
    let durable =
        thresh::DurableEngine::with_store(std::sync::Arc::new(thresh::store::MemoryStore::new()))
            .unwrap();
    macro_rules! check {
        ($engine:expr) => {{
            let engine = &$engine;
            let a = engine
                .start(&DECLINED, Order::default())
                .await
                .unwrap()
                .id();
            let b = engine
                .start(&DECLINED, Order::default())
                .await
                .unwrap()
                .id();
            let both = tokio::time::timeout(Duration::from_secs(10), async {
                loop {
                    let open = engine.incidents().await.unwrap();
                    if open.len() == 2 {
                        return open;
                    }
                    tokio::time::sleep(Duration::from_millis(5)).await;
                }
            })
            .await
            .expect("two incidents");
            let of_a = engine.incidents_of(&DECLINED, a).await.unwrap();
            assert_eq!(of_a.len(), 1);
            assert_eq!(of_a[0].id.instance, a);
            assert_eq!(both.iter().find(|i| i.id.instance == a), Some(&of_a[0]));
            assert_eq!(
                engine.incidents_of(&DECLINED, b).await.unwrap()[0]
                    .id
                    .instance,
                b
            );
            // Not of another process, nor of an unknown instance.
            assert!(engine.incidents_of(&PAY, a).await.unwrap().is_empty());
            let unknown = thresh::InstanceId(u64::MAX / 2);
            assert!(engine
                .incidents_of(&DECLINED, unknown)
                .await
                .unwrap()
                .is_empty());
        }};
    }
    check!(memory);
    check!(durable);
}

async fn panics_once(order: &mut Order) -> Result<(), TaskError> {
    order.charged = attempt();
    if order.charged == 1 {
        panic!("the driver fell over");
    }
    Ok(())
}

process! {
    pub PANICS: Order {
        start s;
        task charge = panics_once: retry(2, backoff = 1s);
        end e;
        s -> charge -> e;
    }
}

#[tokio::test(start_paused = true)]
async fn a_panic_counts_as_a_failed_attempt() {
    let handle = Engine::new()
        .start(&PANICS, Order::default())
        .await
        .unwrap();
    let order = handle
        .outcome()
        .await
        .completed()
        .expect("the second attempt completes");
    assert_eq!(order.charged, 2);
    let history = handle.history().await;
    assert!(history.steps().iter().any(|s| matches!(
        &s.what,
        Happening::AttemptFailed { attempt: 1, message } if message.contains("the driver fell over")
    )));
}

async fn slow_first(order: &mut Order) -> Result<(), TaskError> {
    let attempt = attempt();
    if attempt == 1 {
        // Written to the copy, then cancelled at the await: never committed.
        order.amount = 99;
        tokio::time::sleep(Duration::from_secs(3600)).await;
    }
    order.charged = attempt;
    Ok(())
}

process! {
    pub SLOW: Order {
        start s;
        task charge = slow_first: retry(2, backoff = 1s) | timeout(30s);
        end e;
        s -> charge -> e;
    }
}

#[tokio::test(start_paused = true)]
async fn a_timeout_cancels_an_attempt() {
    let started = tokio::time::Instant::now();
    let handle = Engine::new().start(&SLOW, Order::default()).await.unwrap();
    let order = handle
        .outcome()
        .await
        .completed()
        .expect("the second attempt completes");
    assert_eq!((order.charged, order.amount), (2, 0));
    // The first attempt was cut at 30 s, not run its hour.
    assert!(started.elapsed() < Duration::from_secs(60));
    let history = handle.history().await;
    assert!(history.steps().iter().any(|s| matches!(
        &s.what,
        Happening::AttemptFailed { attempt: 1, message } if message.contains("timed out after 30s")
    )));
}

async fn never(order: &mut Order) -> Result<(), TaskError> {
    order.charged = attempt();
    Err(TaskError::new("down"))
}

process! {
    pub GUARDED: Order {
        start s;
        task charge = never: retry(10, backoff = 1min);
        boundary late on charge: timer(Duration::from_secs(90));
        end e;
        end gave_up;
        s -> charge -> e;
        late -> gave_up;
    }
}

#[tokio::test(start_paused = true)]
async fn a_boundary_timer_fires_while_the_task_waits_for_its_next_attempt() {
    let engine = Engine::new();
    let handle = engine.start(&GUARDED, Order::default()).await.unwrap();
    let order = handle
        .outcome()
        .await
        .completed()
        .expect("the boundary leads out");
    assert_eq!(order.charged, 0, "a failed attempt commits nothing");
    let history = handle.history().await;
    // Attempts at 0 s and 60 s; the boundary at 90 s, during the second backoff.
    let attempts = history
        .steps()
        .iter()
        .filter(|s| s.node == "charge" && s.what == Happening::TaskStarted)
        .count();
    assert_eq!(attempts, 2, "{history:?}");
    assert!(history
        .steps()
        .iter()
        .any(|s| s.node == "charge" && s.what == Happening::Interrupted { by: "late" }));
    assert!(history.steps().iter().any(|s| s.node == "gave_up"));
    assert!(engine.incidents().await.unwrap().is_empty());
}

#[tokio::test(start_paused = true)]
async fn an_interrupting_boundary_resolves_an_open_incident() {
    process! {
        pub HELD: Order {
            start s;
            task charge = declined;
            boundary late on charge: timer(Duration::from_secs(90));
            end e;
            end gave_up;
            s -> charge -> e;
            late -> gave_up;
        }
    }
    let engine = Engine::new();
    let handle = engine.start(&HELD, Order::default()).await.unwrap();
    next_incident(&engine).await;
    assert!(handle.outcome().await.completed().is_some());
    assert!(
        engine.incidents().await.unwrap().is_empty(),
        "leaving the task resolves it"
    );
}

#[tokio::test(start_paused = true)]
async fn cancel_during_a_backoff_cancels() {
    let engine = Engine::new();
    let handle = engine.start(&GUARDED, Order::default()).await.unwrap();
    tokio::time::sleep(Duration::from_secs(10)).await;
    handle.cancel();
    assert!(matches!(handle.outcome().await, Outcome::Cancelled(_)));
    let history = handle.history().await;
    assert_eq!(
        history
            .steps()
            .iter()
            .filter(|s| s.what == Happening::TaskStarted)
            .count(),
        1,
        "no attempt after the cancel: {history:?}"
    );
}

async fn branch_a(order: &mut Order) -> Result<(), TaskError> {
    order.a = attempt();
    match order.a {
        1 => Err(TaskError::new("a blip")),
        _ => Ok(()),
    }
}

async fn branch_b(order: &mut Order) -> Result<(), TaskError> {
    order.b = attempt();
    tokio::task::yield_now().await;
    match order.b {
        1..=3 => Err(TaskError::new("b blip")),
        _ => Ok(()),
    }
}

process! {
    pub BRANCHES: Order {
        start s;
        parallel fork;
        task a = branch_a: retry(5, backoff = 5ms);
        task b = branch_b: retry(5, backoff = 1ms..20ms, multiplier = 3, jitter = 0.5);
        parallel join;
        end e;
        s -> fork -> a, b;
        a, b -> join -> e;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn parallel_branches_retry_independently() {
    let engine = Engine::new();
    let mut handles: Vec<_> = Vec::new();
    for _ in 0..50 {
        handles.push(engine.start(&BRANCHES, Order::default()).await.unwrap());
    }
    for handle in handles {
        let order = handle
            .outcome()
            .await
            .completed()
            .expect("both branches complete");
        assert_eq!((order.a, order.b), (2, 4));
    }
}

async fn nothing(_: &mut Order) -> Result<(), TaskError> {
    Ok(())
}

process! {
    pub ROUTE: Order {
        start s;
        exclusive size;
        task big = nothing;
        task small = nothing;
        end e1;
        end e2;
        s -> size;
        size -> big when |o| o.amount > 100;
        size -> small when |o| o.amount > 0 && o.amount <= 100;
        big -> e1;
        small -> e2;
    }
}

#[tokio::test(start_paused = true)]
async fn a_gateway_with_no_flow_opens_an_incident_and_a_retry_after_a_fix_routes() {
    let engine = Engine::new();
    let handle = engine
        .start(
            &ROUTE,
            Order {
                amount: -5,
                ..Order::default()
            },
        )
        .await
        .unwrap();
    let incident = next_incident(&engine).await;
    assert_eq!((incident.node, incident.attempts), ("size", 0));
    assert!(incident.error.contains("size"), "{}", incident.error);
    handle
        .retry_with(incident.id, |o: &mut Order| o.amount = 500)
        .await
        .unwrap();
    assert!(handle.outcome().await.completed().is_some());
    let history = handle.history().await;
    assert!(history.steps().iter().any(|s| s.node == "big"));
    assert!(!history.steps().iter().any(|s| s.node == "small"));
}

#[tokio::test(start_paused = true)]
async fn fail_fast_fails_the_instance_as_before() {
    let engine = Engine::with_config(EngineConfig::fail_fast());
    let handle = engine.start(&ROUTE, Order::default()).await.unwrap();
    assert_eq!(
        handle.outcome().await.error(),
        Some(&InstanceError::NoFlowTaken { node: "size" })
    );
    // A task's own policy still retries; spent, the instance fails.
    let handle = engine.start(&PAY, Order::default()).await.unwrap();
    match handle.outcome().await {
        Outcome::Failed(InstanceError::TaskFailed { node, message }) => {
            assert_eq!((node, message.as_str()), ("charge", "no card"))
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(
        handle.data().await.unwrap().charged,
        0,
        "no failed attempt commits"
    );
}

process! {
    pub PLAIN: Order {
        start s;
        task charge = flaky;
        end e;
        s -> charge -> e;
    }
}

#[tokio::test(start_paused = true)]
async fn the_engine_default_policy_retries_a_task_without_its_own() {
    let engine = Engine::new();
    let handle = engine
        .start(
            &PLAIN,
            Order {
                fail_first: 2,
                ..Order::default()
            },
        )
        .await
        .unwrap();
    assert_eq!(handle.outcome().await.completed().unwrap().charged, 3);
    // Three attempts by default: a fourth would be needed here.
    let handle = engine
        .start(
            &PLAIN,
            Order {
                fail_first: 3,
                ..Order::default()
            },
        )
        .await
        .unwrap();
    assert_eq!(next_incident(&engine).await.attempts, 3);
    handle.cancel();
}
