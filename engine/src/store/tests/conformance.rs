//! Conformance: the same bodies against every store.

use super::queries::queries_match_the_reference;
use super::tasks::tasks_are_listed_claimed_and_ended;
use super::wake::{due_times_are_paged_by_cursor, wake_index_finds_what_wakes};
use super::*;

/// Every kind of write, applied and read back.
fn every_write_round_trips(s: &dyn Store) {
    assert_eq!(snapshot(s), (vec![], vec![], vec![], Ids::default()));
    s.apply(&[]).unwrap();

    // Put: create, then replace with a greater seq.
    let mut one = rec(1, 0, r#"{"n":0}"#);
    one.fingerprint = u64::MAX; // all 64 bits survive
    one.key = None;
    s.apply(&[Write::Put(one.clone()), Write::Put(rec(2, 3, "[1,2]"))])
        .unwrap();
    assert_eq!(s.instance(1).unwrap(), Some(one.clone()));
    one.seq = 1;
    one.state = r#"{"n":1,"text":"é ✓ \"q\""}"#.into();
    s.apply(&[Write::Put(one.clone())]).unwrap();
    assert_eq!(s.instance(1).unwrap(), Some(one.clone()));
    assert_eq!(s.instance(99).unwrap(), None);
    assert_eq!(s.running().unwrap(), vec![one.clone(), rec(2, 3, "[1,2]")]);

    // End keeps the state, sets status, outcome and time.
    s.apply(&[Write::End {
        id: 2,
        status: Status::Failed,
        outcome: Some(r#"{"error":"boom"}"#.into()),
        at_ms: 5_000,
    }])
    .unwrap();
    let two = s.instance(2).unwrap().unwrap();
    assert_eq!(two.status, Status::Failed);
    assert_eq!(two.outcome.as_deref(), Some(r#"{"error":"boom"}"#));
    assert_eq!(
        (two.state.as_str(), two.seq, two.updated_ms),
        ("[1,2]", 3, 5_000)
    );
    assert_eq!(s.running().unwrap(), vec![one.clone()]);

    // A final checkpoint as a Put with an ended status works too.
    let mut three = rec(3, 0, "{}");
    three.status = Status::Completed;
    three.outcome = Some("null".into());
    s.apply(&[Write::Put(three.clone())]).unwrap();

    // Listings by process and status.
    let ids = |v: Vec<InstanceRecord>| v.into_iter().map(|r| r.id).collect::<Vec<_>>();
    assert_eq!(ids(s.list(None, None).unwrap()), [1, 2, 3]);
    assert_eq!(ids(s.list(Some("odd"), None).unwrap()), [1, 3]);
    assert_eq!(ids(s.list(Some("even"), None).unwrap()), [2]);
    assert_eq!(ids(s.list(None, Some(Status::Failed)).unwrap()), [2]);
    assert_eq!(
        ids(s.list(Some("odd"), Some(Status::Completed)).unwrap()),
        [3]
    );
    assert_eq!(
        ids(s.list(Some("odd"), Some(Status::Failed)).unwrap()),
        [0u64; 0]
    );
    assert_eq!(ids(s.list(Some("nobody"), None).unwrap()), [0u64; 0]);

    // Messages: buffer, consume, drop, expire.
    s.apply(&[
        Write::Buffer(msg(10, 100)),
        Write::Buffer(msg(11, 200)),
        Write::Buffer(msg(12, 300)),
        Write::Buffer(msg(13, 400)),
    ])
    .unwrap();
    assert_eq!(
        s.messages().unwrap(),
        vec![msg(10, 100), msg(11, 200), msg(12, 300), msg(13, 400)]
    );
    s.apply(&[Write::Consume { message: 11 }]).unwrap();
    s.apply(&[Write::DropMessage { id: 13 }, Write::DropMessage { id: 13 }])
        .unwrap();
    assert_eq!(s.messages().unwrap(), vec![msg(10, 100), msg(12, 300)]);
    s.apply(&[Write::Expire { now_ms: 100 }]).unwrap(); // expires_ms <= now
    assert_eq!(s.messages().unwrap(), vec![msg(12, 300)]);
    s.apply(&[Write::Expire { now_ms: 299 }]).unwrap();
    assert_eq!(s.messages().unwrap(), vec![msg(12, 300)]);

    // Deployments: put, replace, remove.
    s.apply(&[
        Write::PutDeployment(dep(0, "{}")),
        Write::PutDeployment(dep(4, r#"{"a":1}"#)),
    ])
    .unwrap();
    s.apply(&[Write::PutDeployment(dep(4, r#"{"a":2}"#))])
        .unwrap();
    assert_eq!(
        s.deployments().unwrap(),
        vec![dep(0, "{}"), dep(4, r#"{"a":2}"#)]
    );
    s.apply(&[
        Write::RemoveDeployment { id: 0 },
        Write::RemoveDeployment { id: 77 },
    ])
    .unwrap();
    assert_eq!(s.deployments().unwrap(), vec![dep(4, r#"{"a":2}"#)]);

    // Purge: ended ones before the cut-off only; running ones never.
    one.seq = 2;
    one.updated_ms = 0;
    s.apply(&[Write::Put(one.clone())]).unwrap();
    s.apply(&[Write::Purge {
        ended_before_ms: 5_000,
    }])
    .unwrap();
    assert_eq!(ids(s.list(None, None).unwrap()), [1, 2]); // 3 ended at 1000
    s.apply(&[Write::Purge {
        ended_before_ms: 5_001,
    }])
    .unwrap();
    assert_eq!(ids(s.list(None, None).unwrap()), [1]);

    // The high-water marks saw every id, purged or removed ones included.
    assert_eq!(
        s.next_ids().unwrap(),
        Ids {
            instance: 4,
            message: 14,
            deployment: 5
        }
    );
}

/// What a refused write's error must match.
type Expect = fn(&StoreError) -> bool;

/// Each write a store refuses, with its error; and the batch around it is undone.
fn refusals_and_atomic_batches(s: &dyn Store) {
    s.apply(&[
        Write::Put(rec(1, 5, r#"{"v":1}"#)),
        Write::Put(rec(2, 0, "{}")),
        Write::End {
            id: 2,
            status: Status::Completed,
            outcome: None,
            at_ms: 10,
        },
        Write::Buffer(msg(10, 1_000)),
        Write::Buffer(msg(12, 1_000)),
        Write::PutDeployment(dep(1, "{}")),
    ])
    .unwrap();
    let before = snapshot(s);

    let mut bad_state = rec(3, 0, "{not json");
    bad_state.key = None;
    let mut running_outcome = rec(3, 0, "{}");
    running_outcome.outcome = Some("1".into());
    let mut bad_payload = msg(20, 1);
    bad_payload.payload = "".into();
    let huge = rec(i64::MAX as u64 + 1, 0, "{}");
    let cases: Vec<(Write, Expect)> = vec![
        (Write::Put(bad_state), |e| {
            matches!(e, StoreError::Invalid { kind: "put", .. })
        }),
        (Write::Put(running_outcome), |e| {
            matches!(e, StoreError::Invalid { kind: "put", .. })
        }),
        (Write::Put(huge), |e| {
            matches!(e, StoreError::Invalid { .. })
        }),
        (Write::Put(rec(1, 5, "{}")), |e| {
            matches!(
                e,
                StoreError::StaleCheckpoint {
                    id: 1,
                    given: 5,
                    ..
                }
            )
        }),
        (Write::Put(rec(1, 4, "{}")), |e| {
            matches!(
                e,
                StoreError::StaleCheckpoint {
                    id: 1,
                    given: 4,
                    ..
                }
            )
        }),
        (Write::Put(rec(2, 9, "{}")), |e| {
            matches!(e, StoreError::InstanceEnded { id: 2 })
        }),
        (
            Write::End {
                id: 2,
                status: Status::Failed,
                outcome: None,
                at_ms: 0,
            },
            |e| matches!(e, StoreError::InstanceEnded { id: 2 }),
        ),
        (
            Write::End {
                id: 42,
                status: Status::Cancelled,
                outcome: None,
                at_ms: 0,
            },
            |e| matches!(e, StoreError::UnknownInstance { id: 42 }),
        ),
        (
            Write::End {
                id: 1,
                status: Status::Running,
                outcome: None,
                at_ms: 0,
            },
            |e| matches!(e, StoreError::Invalid { kind: "end", .. }),
        ),
        (
            Write::End {
                id: 1,
                status: Status::Completed,
                outcome: Some("{".into()),
                at_ms: 0,
            },
            |e| matches!(e, StoreError::Invalid { kind: "end", .. }),
        ),
        (Write::Consume { message: 99 }, |e| {
            matches!(e, StoreError::MessageGone { id: 99 })
        }),
        (Write::Buffer(msg(10, 5)), |e| {
            matches!(e, StoreError::DuplicateMessage { id: 10 })
        }),
        (Write::Buffer(bad_payload), |e| {
            matches!(e, StoreError::Invalid { kind: "buffer", .. })
        }),
        (Write::PutDeployment(dep(2, "nope")), |e| {
            matches!(
                e,
                StoreError::Invalid {
                    kind: "put-deployment",
                    ..
                }
            )
        }),
    ];
    for (bad, expected) in cases {
        // Alone, and in the middle of a batch of good writes touching every table.
        let alone = s.apply(std::slice::from_ref(&bad)).unwrap_err();
        assert!(expected(&alone), "{bad:?} gave {alone:?}");
        let batch = [
            Write::Put(rec(1, 6, r#"{"v":2}"#)),
            Write::Put(rec(7, 0, "{}")),
            Write::Consume { message: 12 },
            Write::Buffer(msg(11, 5)),
            Write::PutDeployment(dep(1, r#"{"changed":true}"#)),
            Write::RemoveDeployment { id: 1 },
            Write::PutDeployment(dep(50, "{}")),
            Write::Purge { ended_before_ms: 5 },
            bad.clone(),
            Write::Put(rec(8, 0, "{}")),
        ];
        let in_batch = s.apply(&batch).unwrap_err();
        assert!(expected(&in_batch), "{bad:?} in a batch gave {in_batch:?}");
        assert_eq!(snapshot(s), before, "after {bad:?} the store changed");
    }
    // The same good writes without the bad one go through.
    s.apply(&[
        Write::Put(rec(1, 6, r#"{"v":2}"#)),
        Write::Consume { message: 10 },
        Write::Consume { message: 12 },
    ])
    .unwrap();
    assert_eq!(s.instance(1).unwrap().unwrap().seq, 6);
    assert!(s.messages().unwrap().is_empty());
}

/// A purge does not give ids back.
fn ids_are_never_reused(s: &dyn Store) {
    s.apply(&[
        Write::Put(rec(7, 0, "{}")),
        Write::Buffer(msg(3, 0)),
        Write::PutDeployment(dep(2, "{}")),
    ])
    .unwrap();
    s.apply(&[
        Write::End {
            id: 7,
            status: Status::Terminated,
            outcome: None,
            at_ms: 0,
        },
        Write::Purge { ended_before_ms: 1 },
        Write::Expire { now_ms: 0 },
        Write::RemoveDeployment { id: 2 },
    ])
    .unwrap();
    assert_eq!(snapshot(s).0, vec![]);
    let expect = Ids {
        instance: 8,
        message: 4,
        deployment: 3,
    };
    assert_eq!(s.next_ids().unwrap(), expect);
    // A lower id does not lower the marks.
    s.apply(&[Write::Put(rec(1, 0, "{}"))]).unwrap();
    assert_eq!(s.next_ids().unwrap(), expect);
}

/// A timer tick is a compare-and-set on one start's stored schedule: it creates
/// the deployment if missing, advances only from the schedule stored, keeps the
/// other starts' schedules, and a lost one rolls its batch back.
fn timer_ticks_compare_and_set(s: &dyn Store) {
    let tick = |fired, due_ms| TimerTick { fired, due_ms };
    let write = |start: &str, from, to| Write::Tick {
        deployment: dep(7, "{}"),
        start: start.into(),
        from,
        to,
    };
    s.apply(&[write("a", None, tick(0, Some(100)))]).unwrap();
    let stored = s.deployments().unwrap();
    assert_eq!(stored_tick(&stored, 7, "a"), Some(tick(0, Some(100))));
    assert_eq!(
        (stored[0].process.as_str(), stored[0].data.as_str()),
        ("order", "{}")
    );
    assert!(s.next_ids().unwrap().deployment >= 8);
    s.apply(&[
        write("b", None, tick(0, Some(50))),
        write("a", Some(tick(0, Some(100))), tick(1, Some(200))),
    ])
    .unwrap();
    // Lost: computed from a schedule that is not the stored one.
    for from in [None, Some(tick(0, Some(100))), Some(tick(1, Some(201)))] {
        let lost = s.apply(&[
            Write::Put(rec(40, 1, "{}")),
            write("a", from, tick(2, None)),
        ]);
        assert!(
            matches!(lost, Err(StoreError::TickTaken { deployment: 7, ref start }) if start == "a"),
            "{lost:?}"
        );
    }
    assert_eq!(s.instance(40).unwrap(), None, "rolled back with the tick");
    s.apply(&[write("a", Some(tick(1, Some(200))), tick(2, None))])
        .unwrap();
    let stored = s.deployments().unwrap();
    assert_eq!(stored.len(), 1);
    assert_eq!(stored_tick(&stored, 7, "a"), Some(tick(2, None)));
    assert_eq!(stored_tick(&stored, 7, "b"), Some(tick(0, Some(50))));
    assert_eq!(stored_tick(&stored, 7, "c"), None);
}

/// A drop of stale repeats takes the messages of the names given with the key
/// given, and no other.
fn stale_repeats_drop_by_names_and_key(s: &dyn Store) {
    let message = |id, name: &str, key: &str| MessageRecord {
        name: name.into(),
        key: key.into(),
        ..msg(id, i64::MAX)
    };
    let all = [
        message(1, "left", "K"),
        message(2, "right", "K"),
        message(3, "left", "L"),
        message(4, "other", "K"),
    ];
    let buffer: Vec<Write> = all.iter().cloned().map(Write::Buffer).collect();
    s.apply(&buffer).unwrap();
    s.apply(&[Write::DropStale {
        names: vec!["left".into(), "right".into()],
        key: "K".into(),
    }])
    .unwrap();
    assert_eq!(s.messages().unwrap(), vec![all[2].clone(), all[3].clone()]);
}

macro_rules! conformance {
    ($($name:ident),* $(,)?) => {
        mod memory_store {
            $(
                #[test]
                fn $name() {
                    super::$name(&super::MemoryStore::new());
                }
            )*
        }
        #[cfg(feature = "sqlite")]
        mod sqlite_store {
            $(
                #[test]
                fn $name() {
                    let dir = super::sqlite::TempDir::new();
                    let store = super::SqliteStore::open(dir.file()).unwrap();
                    super::$name(&store);
                    // And everything is still there after reopening.
                    let before = super::snapshot(&store);
                    drop(store);
                    let store = super::SqliteStore::open(dir.file()).unwrap();
                    assert_eq!(super::snapshot(&store), before);
                }
            )*
        }
        #[cfg(feature = "postgres")]
        mod postgres_store {
            $(
                #[test]
                fn $name() {
                    let schema = super::postgres::TestSchema::new();
                    let store = schema.connect().unwrap();
                    super::$name(&store);
                    // And everything is still there after reconnecting.
                    let before = super::snapshot(&store);
                    drop(store);
                    assert_eq!(super::snapshot(&schema.connect().unwrap()), before);
                }
            )*
        }
    };
}

conformance!(
    every_write_round_trips,
    refusals_and_atomic_batches,
    ids_are_never_reused,
    timer_ticks_compare_and_set,
    stale_repeats_drop_by_names_and_key,
    queries_match_the_reference,
    tasks_are_listed_claimed_and_ended,
    wake_index_finds_what_wakes,
    due_times_are_paged_by_cursor
);
