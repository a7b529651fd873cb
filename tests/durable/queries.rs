//! Ended instances queried and purged; stored instances drawn; kept histories.

use super::*;

/// Outcomes stay queryable; a listing by process and status; a purge removes ended
/// instances past their retention.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ended_instances_are_listed_and_purged() {
    let store = test_store();
    let engine = store.engine().expect("open");
    let done = engine
        .start(&APPROVAL, Order::default())
        .await
        .expect("stored");
    until_open(&done, "approve").await;
    done.complete("approve", |_: &mut Order| {})
        .await
        .expect("completed");
    // Its end is stored before its handles see it.
    outcome(&done).await;
    let waiting = engine
        .start(&APPROVAL, Order::default())
        .await
        .expect("stored");
    until_open(&waiting, "approve").await;
    let ended = engine
        .list(Some("APPROVAL"), Some(Status::Completed))
        .await
        .expect("list");
    assert_eq!(ended.len(), 1);
    assert_eq!(ended[0].0, done.id());
    assert!(ended[0]
        .2
        .as_deref()
        .is_some_and(|o| o.contains("completed")));
    assert_eq!(engine.list(None, None).await.expect("list").len(), 2);
    // Ended a few milliseconds ago: past a zero retention.
    tokio::time::sleep(Duration::from_millis(5)).await;
    engine.purge(Duration::ZERO).await.expect("purge");
    let left = engine.list(None, None).await.expect("list");
    assert_eq!(left.len(), 1, "the running one stays");
    assert_eq!(left[0].1, Status::Running);
    engine.shutdown(HANG).await.expect("shutdown");
}

/// A stored instance can be drawn from the store alone — what an operator looks at
/// when an order is stuck — also by an engine that does not run it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stored_instance_is_drawn_where_its_token_waits() {
    let store = test_store();
    let engine = store.engine().expect("open");
    let handle = engine
        .start(&APPROVAL, Order::default())
        .await
        .expect("stored");
    let id = handle.id();
    until_open(&handle, "approve").await;
    engine.shutdown(HANG).await.expect("shutdown");

    let engine = store.engine().expect("reopen");
    let svg = engine
        .picture(&APPROVAL, id)
        .await
        .expect("read")
        .expect("stored");
    assert!(svg.starts_with("<svg"), "{svg}");
    assert_eq!(
        svg.matches("class=\"waiting\"").count(),
        1,
        "one waiting token: {svg}"
    );
    assert!(engine
        .picture(&APPROVAL, thresh::InstanceId(999))
        .await
        .expect("read")
        .is_none());
    engine.shutdown(HANG).await.expect("shutdown");
}

/// With `keep_history`, a resumed instance's history goes on from before the restart.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_kept_history_goes_on_after_a_restart() {
    let store = test_store();
    let engine = store.engine().expect("open");
    engine.keep_history(true);
    let handle = engine
        .start(&APPROVAL, Order::default())
        .await
        .expect("stored");
    let id = handle.id();
    until_open(&handle, "approve").await;
    engine.shutdown(HANG).await.expect("shutdown");

    let engine = store.engine().expect("reopen");
    engine.keep_history(true);
    engine.register(&APPROVAL).expect("register");
    engine.resume().await.expect("resume");
    let handle = engine.handle(&APPROVAL, id).expect("resumed");
    until_open(&handle, "approve").await;
    handle
        .complete("approve", |o: &mut Order| o.approved = true)
        .await
        .expect("completed");
    outcome(&handle).await;
    let history = handle.history().await;
    assert_eq!(history.completed_tasks(), ["check", "approve", "ship"]);
    assert_eq!(history.steps()[0].what, thresh::Happening::Started);
    engine.shutdown(HANG).await.expect("shutdown");
}

/// With `keep_history`, a stored instance's history is read from the store — also
/// by an engine that does not run it — and its picture shows the flows it took as
/// well as where its token waits; without it, there is none to read.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stored_history_is_read_and_drawn_from_the_store() {
    let store = test_store();
    let engine = store.engine().expect("open");
    engine.keep_history(true);
    let handle = engine
        .start(&APPROVAL, Order::default())
        .await
        .expect("stored");
    let id = handle.id();
    until_open(&handle, "approve").await;
    let plain = engine
        .start(&APPROVAL, Order::default())
        .await
        .expect("stored");
    engine.shutdown(HANG).await.expect("shutdown");

    let engine = store.engine().expect("reopen");
    engine.register(&APPROVAL).expect("register");
    let history = engine
        .history(&APPROVAL, id)
        .await
        .expect("read")
        .expect("kept");
    assert_eq!(history.steps()[0].what, thresh::Happening::Started);
    assert_eq!(history.completed_tasks(), ["check"]);
    assert!(
        history.steps().iter().any(|s| s.node == "approve"),
        "{history}"
    );
    let svg = engine
        .picture(&APPROVAL, id)
        .await
        .expect("read")
        .expect("stored");
    assert_eq!(
        svg.matches("class=\"waiting\"").count(),
        1,
        "one waiting token: {svg}"
    );
    assert!(
        svg.contains("url(#arrow-passed)"),
        "the flows it took: {svg}"
    );
    drop(plain);
    assert!(engine
        .history(&APPROVAL, thresh::InstanceId(999))
        .await
        .expect("read")
        .is_none());
    engine.shutdown(HANG).await.expect("shutdown");
}
