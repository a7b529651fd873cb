//! Instance queries on a durable engine: from the store's indexed columns (on the
//! store `THRESH_TEST_STORE` names), data read back typed from checkpoints and
//! outcomes; pages by cursor while instances start; bad input.

use thresh::{EngineError, Query, QueryError, SortBy};

use super::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stored_instances_are_found_by_key_element_and_status_with_their_data() {
    let store = test_store();
    let engine = store.engine().expect("open");
    let seven = engine
        .start_keyed(
            &APPROVAL,
            "expense-7",
            Order {
                id: "7".into(),
                ..Order::default()
            },
        )
        .await
        .expect("stored");
    let eight = engine
        .start_keyed(
            &APPROVAL,
            "expense-8",
            Order {
                id: "8".into(),
                ..Order::default()
            },
        )
        .await
        .expect("stored");
    until_open(&seven, "approve").await;
    until_open(&eight, "approve").await;
    let waiting = Query::of(&APPROVAL).waiting_at("approve");
    // The checkpoint that records the wait is written a moment after it opens.
    let mut tries = 0;
    while engine.count(&waiting).await.expect("count") < 2 {
        tries += 1;
        assert!(tries < 2_000, "the waits were never stored");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let page = engine
        .instances(&Query::of(&APPROVAL).key("expense-7"))
        .await
        .expect("query");
    assert_eq!(page.items.len(), 1);
    let found = &page.items[0];
    assert_eq!(found.id, seven.id());
    assert_eq!(found.business_key.as_deref(), Some("expense-7"));
    assert_eq!(
        (found.status, found.waiting_at.clone()),
        (Status::Running, vec!["approve".to_string()])
    );
    assert_eq!(found.fingerprint, APPROVAL.fingerprint());
    // Typed data from the checkpoint: `check` ran.
    assert_eq!((found.data.id.as_str(), found.data.checked), ("7", 1));

    seven
        .complete("approve", |o: &mut Order| o.approved = true)
        .await
        .expect("completed");
    outcome(&seven).await;
    let done = engine
        .instances(
            &Query::of(&APPROVAL)
                .status(Status::Completed)
                .sort_by(SortBy::Ended),
        )
        .await
        .expect("query");
    assert_eq!(done.items.len(), 1);
    // From the outcome: approved and shipped.
    assert_eq!(
        (done.items[0].data.approved, done.items[0].data.shipped),
        (true, 1)
    );
    assert!(done.items[0].ended_ms.is_some() && done.items[0].waiting_at.is_empty());
    assert_eq!(engine.count(&waiting).await.expect("count"), 1);
    // By name, as JSON.
    let named = engine
        .instances(&Query::named("APPROVAL").key("expense-8"))
        .await
        .expect("query by name");
    assert_eq!(named.items[0].data["id"], "8");
    engine.shutdown(HANG).await.expect("shutdown");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stored_pages_neither_repeat_nor_miss_while_instances_start() {
    let store = test_store();
    let engine = store.engine().expect("open");
    let mut first = Vec::new();
    for _ in 0..12 {
        let h = engine
            .start(&APPROVAL, Order::default())
            .await
            .expect("stored");
        first.push(h.id());
    }
    let by_start = Query::of(&APPROVAL).sort_by(SortBy::Started).descending();
    let mut seen = Vec::new();
    let mut next: Option<String> = None;
    loop {
        let mut query = by_start.clone().limit(5);
        if let Some(cursor) = &next {
            query = query.after(cursor);
        }
        let page = engine.instances(&query).await.expect("page");
        seen.extend(page.items.iter().map(|i| i.id));
        // Newest first: one started now sorts before every page so far.
        engine
            .start(&APPROVAL, Order::default())
            .await
            .expect("stored");
        match page.next {
            Some(cursor) => next = Some(cursor),
            None => break,
        }
        assert!(seen.len() < 100, "paging does not end");
    }
    let mut unique = seen.clone();
    unique.sort();
    unique.dedup();
    assert_eq!(unique.len(), seen.len(), "an instance came twice: {seen:?}");
    for id in &first {
        assert!(seen.contains(id), "{id:?} missed");
    }
    engine.shutdown(HANG).await.expect("shutdown");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_queries_say_what_is_wrong() {
    let store = test_store();
    let engine = store.engine().expect("open");
    engine.register(&APPROVAL).expect("registered");
    let unknown = engine
        .instances(&Query::named("APROVAL"))
        .await
        .expect_err("no such process");
    let text = unknown.to_string();
    assert!(
        matches!(
            unknown,
            EngineError::Query(QueryError::UnknownProcess { .. })
        ),
        "{text}"
    );
    assert!(
        text.contains("`APROVAL`") && text.contains("APPROVAL"),
        "{text}"
    );
    let element = engine
        .instances(&Query::of(&APPROVAL).waiting_at("aprove"))
        .await
        .expect_err("no such element");
    assert!(element.to_string().contains("approve"), "{element}");
    let cursor = engine
        .count(&Query::of(&APPROVAL).after("1:2"))
        .await
        .expect_err("bad cursor");
    assert!(
        matches!(cursor, EngineError::Query(QueryError::BadCursor { .. })),
        "{cursor}"
    );
    let Err(key) = engine
        .start_keyed(&APPROVAL, "a\0b", Order::default())
        .await
    else {
        panic!("a key with a NUL started an instance");
    };
    assert!(key.to_string().contains("NUL"), "{key}");
    engine.shutdown(HANG).await.expect("shutdown");
}
