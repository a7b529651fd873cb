//! Instance queries on the in-memory engine: from its listing, which each loop
//! renews when it rests (every token waits) — by process, status, element, business
//! key, incident, time; sorted and paged by cursor while instances start; bad input
//! answered with errors that say what is wrong. The durable engine's are in
//! `tests/durable/instance_queries.rs`.

use std::time::Duration;

use thresh::{
    process, Engine, EngineConfig, EngineError, ProcessData, Query, QueryError, SortBy, Status,
    TaskError,
};

#[derive(Clone, Debug, Default, PartialEq, ProcessData)]
pub struct Expense {
    pub amount: u32,
    pub approved: bool,
    pub card: String,
}

async fn charge(e: &mut Expense) -> Result<(), TaskError> {
    match e.card.is_empty() {
        true => Err(TaskError::new("no card")),
        false => Ok(()),
    }
}

process! {
    pub EXPENSE: Expense {
        start s;
        task  check = |e| async move { e.amount += 1; Ok(()) };
        user  approve;
        task  pay = charge: retry(1);
        end   done;
        s -> check -> approve -> pay -> done;
    }
}

process! {
    pub QUICK: Expense {
        start s;
        task  t = |e| async move { e.amount *= 2; Ok(()) };
        end   e;
        s -> t -> e;
    }
}

/// Yield until `engine` lists `n` instances of `query`.
async fn until_listed(engine: &Engine, query: &Query<Expense>, n: u64) {
    for _ in 0..10_000 {
        if engine.count(query).await.expect("count") == n {
            return;
        }
        tokio::task::yield_now().await;
    }
    panic!("never {n} instances listed");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn instances_are_found_by_key_element_and_status_with_their_data() {
    let engine = Engine::with_config(EngineConfig {
        keep_ended: 10,
        ..EngineConfig::default()
    });
    let seven = engine
        .start_keyed(
            &EXPENSE,
            "expense-7",
            Expense {
                amount: 70,
                ..Expense::default()
            },
        )
        .await
        .expect("started");
    engine
        .start_keyed(
            &EXPENSE,
            "expense-8",
            Expense {
                amount: 80,
                ..Expense::default()
            },
        )
        .await
        .expect("started");
    // By its typed reference (a misspelt one does not compile), or by id.
    let waiting = Query::of(&EXPENSE).waiting_at(EXPENSE::user.approve);
    until_listed(&engine, &waiting, 2).await;
    let by_id = Query::of(&EXPENSE).waiting_at("approve");
    assert_eq!(engine.count(&by_id).await.expect("count"), 2);

    let page = engine
        .instances(&Query::of(&EXPENSE).key("expense-7"))
        .await
        .expect("query");
    assert_eq!(page.items.len(), 1);
    let found = &page.items[0];
    assert_eq!(found.id, seven.id());
    assert_eq!(found.business_key.as_deref(), Some("expense-7"));
    assert_eq!(found.status, Status::Running);
    assert_eq!(found.waiting_at, ["approve"]);
    assert_eq!(
        (found.process.as_str(), found.fingerprint),
        ("EXPENSE", EXPENSE.fingerprint())
    );
    // Typed data as it rested: `check` ran.
    assert_eq!(found.data.amount, 71);
    assert!(found.ended_ms.is_none());

    // Approved with a card: it ends, and is kept (keep_ended = 10).
    seven
        .complete("approve", |e: &mut Expense| {
            e.approved = true;
            e.card = "visa".into();
        })
        .await
        .expect("completed");
    tokio::time::timeout(Duration::from_secs(20), seven.outcome())
        .await
        .expect("ended");
    until_listed(&engine, &Query::of(&EXPENSE).status(Status::Completed), 1).await;
    let done = engine
        .instances(
            &Query::of(&EXPENSE)
                .status(Status::Completed)
                .sort_by(SortBy::Ended),
        )
        .await
        .expect("query");
    assert_eq!(done.items[0].id, seven.id());
    assert!(done.items[0].data.approved);
    assert!(done.items[0].ended_ms.is_some());
    assert_eq!(engine.count(&waiting).await.expect("count"), 1);
    // Ready-at-once instances are listed only as ended ones.
    engine
        .start(
            &QUICK,
            Expense {
                amount: 2,
                ..Expense::default()
            },
        )
        .await
        .expect("started");
    let quick = engine.instances(&Query::of(&QUICK)).await.expect("query");
    assert_eq!(quick.items.len(), 1);
    assert_eq!(
        (quick.items[0].status, quick.items[0].data.amount),
        (Status::Completed, 4)
    );
    engine
        .shutdown(Duration::from_secs(20))
        .await
        .expect("shutdown");
}

#[tokio::test(start_paused = true)]
async fn an_open_incident_is_found_and_ended_instances_are_forgotten_by_default() {
    let engine = Engine::new();
    let handle = engine
        .start(&EXPENSE, Expense::default())
        .await
        .expect("started");
    until_listed(&engine, &Query::of(&EXPENSE).waiting_at("approve"), 1).await;
    // No card: `pay` fails its one attempt and opens an incident.
    handle
        .complete("approve", |_: &mut Expense| {})
        .await
        .expect("completed");
    let stuck = Query::of(&EXPENSE).incident(true);
    until_listed(&engine, &stuck, 1).await;
    let page = engine.instances(&stuck).await.expect("query");
    assert_eq!(
        (page.items[0].incidents, page.items[0].waiting_at.clone()),
        (1, vec!["pay".to_string()])
    );
    assert_eq!(
        engine
            .count(&Query::of(&EXPENSE).incident(false))
            .await
            .expect("count"),
        0
    );
    handle.cancel();
    tokio::time::timeout(Duration::from_secs(20), handle.outcome())
        .await
        .expect("ended");
    until_listed(&engine, &Query::of(&EXPENSE), 0).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pages_by_cursor_neither_repeat_nor_miss_while_instances_start() {
    let engine = Engine::new();
    let mut first = Vec::new();
    for n in 0..25 {
        let h = engine
            .start_keyed(&EXPENSE, format!("e-{n}"), Expense::default())
            .await
            .expect("started");
        first.push(h.id());
    }
    let waiting = Query::of(&EXPENSE)
        .waiting_at("approve")
        .sort_by(SortBy::Started);
    until_listed(&engine, &waiting, 25).await;
    let mut seen = Vec::new();
    let mut next: Option<String> = None;
    loop {
        let mut query = waiting.clone().limit(7);
        if let Some(cursor) = &next {
            query = query.after(cursor);
        }
        let page = engine.instances(&query).await.expect("page");
        seen.extend(page.items.iter().map(|i| i.id));
        // New instances start between pages: they sort after every page so far.
        engine
            .start(&EXPENSE, Expense::default())
            .await
            .expect("started");
        match page.next {
            Some(cursor) => next = Some(cursor),
            None => break,
        }
        assert!(seen.len() < 200, "paging does not end");
    }
    let mut unique = seen.clone();
    unique.sort();
    unique.dedup();
    assert_eq!(unique.len(), seen.len(), "an instance came twice: {seen:?}");
    for id in &first {
        assert!(seen.contains(id), "{id:?} missed");
    }
    engine
        .shutdown(Duration::from_secs(20))
        .await
        .expect("shutdown");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_input_is_a_clear_error() {
    let engine = Engine::new();
    let unknown = engine
        .instances(&Query::of(&EXPENSE).waiting_at("aprove"))
        .await
        .expect_err("no such element");
    let text = unknown.to_string();
    assert!(
        matches!(
            unknown,
            EngineError::Query(QueryError::UnknownElement { .. })
        ),
        "{text}"
    );
    assert!(
        text.contains("`aprove`") && text.contains("approve"),
        "{text}"
    );
    let garbage = engine
        .instances(&Query::of(&EXPENSE).after("garbage"))
        .await
        .expect_err("bad cursor");
    assert!(
        matches!(garbage, EngineError::Query(QueryError::BadCursor { .. })),
        "{garbage}"
    );
    // A cursor of another order is refused, not misread.
    let by_start = "s:a:1700000000000:4";
    let other = engine
        .instances(&Query::of(&EXPENSE).after(by_start))
        .await
        .expect_err("another order");
    assert!(other.to_string().contains("sorted another way"), "{other}");
    let Err(empty) = engine.start_keyed(&EXPENSE, "", Expense::default()).await else {
        panic!("an empty business key started an instance");
    };
    assert!(
        matches!(empty, EngineError::BadBusinessKey { .. }),
        "{empty}"
    );
    let untyped = engine
        .instances(&Query::named("EXPENSE"))
        .await
        .expect_err("in memory: typed only");
    assert!(
        matches!(untyped, EngineError::Query(QueryError::Untyped)),
        "{untyped}"
    );
}

process! {
    pub TWO_WAYS: Expense {
        start s;
        parallel split;
        user  approve;
        user  review;
        parallel join;
        end   done;
        s -> split;
        split -> approve -> join;
        split -> review -> join;
        join -> done;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_instance_waiting_at_several_elements_is_found_at_each() {
    let engine = Engine::new();
    let handle = engine
        .start_keyed(&TWO_WAYS, "both", Expense::default())
        .await
        .expect("started");
    until_listed(&engine, &Query::of(&TWO_WAYS).waiting_at("review"), 1).await;
    let page = engine
        .instances(&Query::of(&TWO_WAYS).waiting_at("approve"))
        .await
        .expect("query");
    assert_eq!(page.items[0].waiting_at, ["approve", "review"]);
    assert_eq!(page.items[0].business_key.as_deref(), Some("both"));
    handle
        .complete("approve", |_: &mut Expense| {})
        .await
        .expect("completed");
    // Now at the join and at review.
    until_listed(&engine, &Query::of(&TWO_WAYS).waiting_at("join"), 1).await;
    let page = engine
        .instances(&Query::of(&TWO_WAYS))
        .await
        .expect("query");
    assert_eq!(page.items[0].waiting_at, ["join", "review"]);
    assert_eq!(
        engine
            .count(&Query::of(&TWO_WAYS).waiting_at("approve"))
            .await
            .expect("count"),
        0
    );
    engine
        .shutdown(Duration::from_secs(20))
        .await
        .expect("shutdown");
}

/// The message buffer listed: what waits for a catch, oldest first, with its time
/// left — the same on the in-memory and the durable engine.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn buffered_messages_are_listed_oldest_first_until_taken_or_expired() {
    let memory = thresh::Engine::new();
    let durable =
        thresh::DurableEngine::with_store(std::sync::Arc::new(thresh::store::MemoryStore::new()))
            .unwrap();
    macro_rules! check {
        ($engine:expr, $stored:expr) => {{
            let engine = &$engine;
            assert!(engine.buffered_messages(10).is_empty());
            engine
                .publish_message_ttl("paid", "o-1", 5_u32, Duration::from_secs(600))
                .await
                .unwrap();
            engine
                .publish_message_ttl("shipped", "o-2", 6_u32, Duration::from_secs(60))
                .await
                .unwrap();
            engine
                .publish_message_ttl("paid", "o-3", 7_u32, Duration::from_millis(1))
                .await
                .unwrap();
            tokio::time::sleep(Duration::from_millis(20)).await;
            let listed = engine.buffered_messages(10);
            let names: Vec<(&str, &str)> = listed
                .iter()
                .map(|m| (m.name.as_str(), m.key.as_str()))
                .collect();
            // o-3 expired: no longer listed.
            assert_eq!(names, [("paid", "o-1"), ("shipped", "o-2")]);
            assert!(listed[0].expires_in > Duration::from_secs(60));
            assert!(listed[1].expires_in <= Duration::from_secs(60));
            assert!(listed.iter().all(|m| m.stored == $stored));
            assert_eq!(engine.buffered_messages(1).len(), 1);
            assert_eq!(engine.buffered_messages(1)[0].key, "o-1");
        }};
    }
    check!(memory, false);
    check!(durable, true);
}

process! {
    pub TIMED: Expense {
        start s;
        user  approve;
        boundary late on approve: timer(Duration::from_secs(3600));
        catch cool: timer(Duration::from_secs(600));
        end   done;
        end   expired;
        s -> approve -> cool -> done;
        late -> expired;
    }
}

/// The timers page's listing: every running instance's armed timers, earliest
/// first, renewed as each instance rests, gone when it ends.
#[tokio::test(start_paused = true)]
async fn armed_timers_are_listed_earliest_first() {
    let engine = Engine::new();
    let first = engine.start(&TIMED, Expense::default()).await.unwrap();
    until_listed(&engine, &Query::of(&TIMED).waiting_at("approve"), 1).await;
    tokio::time::advance(Duration::from_secs(300)).await;
    let second = engine.start(&TIMED, Expense::default()).await.unwrap();
    until_listed(&engine, &Query::of(&TIMED).waiting_at("approve"), 2).await;
    let timers = engine.timers_due(10).await.unwrap();
    let seen: Vec<(u64, &str)> = timers
        .iter()
        .map(|t| (t.instance.0, t.element.as_str()))
        .collect();
    assert_eq!(seen, [(first.id().0, "late"), (second.id().0, "late")]);
    assert!(timers
        .iter()
        .all(|t| t.process == "TIMED" && t.version == Some(1)));
    // Due an hour after each start, 300 s apart.
    assert!((timers[1].due_ms - timers[0].due_ms - 300_000).abs() < 50);
    assert_eq!(engine.timers_due(1).await.unwrap().len(), 1);

    // The first approved: its boundary disarmed, its catch armed, now the earliest.
    first
        .complete("approve", |_: &mut Expense| {})
        .await
        .unwrap();
    until_listed(&engine, &Query::of(&TIMED).waiting_at("cool"), 1).await;
    let timers = engine.timers_due(10).await.unwrap();
    let seen: Vec<(u64, &str)> = timers
        .iter()
        .map(|t| (t.instance.0, t.element.as_str()))
        .collect();
    assert_eq!(seen, [(first.id().0, "cool"), (second.id().0, "late")]);

    // Ended instances leave the listing, and their timers with them.
    tokio::time::advance(Duration::from_secs(601)).await;
    assert!(matches!(
        first.outcome().await,
        thresh::Outcome::Completed(_)
    ));
    assert_eq!(engine.timers_due(10).await.unwrap().len(), 1);
    second.cancel();
    assert!(matches!(
        second.outcome().await,
        thresh::Outcome::Cancelled(_)
    ));
    until_listed(&engine, &Query::of(&TIMED).status(Status::Running), 0).await;
    assert!(engine.timers_due(10).await.unwrap().is_empty());
}
