//! The wake index: what can wake a running instance that is not in memory, written
//! with its checkpoints and read by due time, message, signal and for a resume.

use super::*;

fn wake(messages: &[(&str, &str)], signals: &[&str], due_ms: Option<i64>) -> WakeIndex {
    WakeIndex {
        messages: messages
            .iter()
            .map(|(n, k)| (n.to_string(), k.to_string()))
            .collect(),
        signals: signals.iter().map(|s| s.to_string()).collect(),
        due_ms,
        at_rest: true,
    }
}

fn ids(split: &[InstanceRecord]) -> Vec<u64> {
    split.iter().map(|r| r.id).collect()
}

/// Written with each checkpoint, replaced by the next, cleared by an end; read by
/// due time, by message (name, key), by signal a page at a time, and split for a
/// resume into what has work now and what rests.
pub(super) fn wake_index_finds_what_wakes(s: &dyn Store) {
    let mut a = rec(1, 1, "{}");
    a.wake = wake(&[("paid", "k1")], &["stop"], Some(5_000));
    let mut b = rec(2, 1, "{}");
    b.wake = wake(&[], &["stop"], Some(3_000));
    // At a user task: nothing but its task wakes it.
    let mut c = rec(3, 1, "{}");
    c.wake = wake(&[], &[], None);
    // A task under way (or a record of before the index): not at rest.
    let d = rec(4, 1, "{}");
    let mut e = rec(5, 1, "{}");
    e.wake = wake(&[("paid", "k5"), ("shipped", "k5")], &[], Some(9_000));
    // Id 0 is an id like any other.
    let mut z = rec(0, 1, "{}");
    z.wake = wake(&[("paid", "k0")], &[], None);
    let all = [&z, &a, &b, &c, &d, &e];
    s.apply(&all.map(|r| Write::Put(r.clone()))).unwrap();
    for r in all {
        assert_eq!(s.instance(r.id).unwrap().as_ref(), Some(r));
    }

    assert_eq!(s.due(4_000, 10).unwrap(), [(3_000, 2)]);
    assert_eq!(s.due(5_000, 10).unwrap(), [(3_000, 2), (5_000, 1)]);
    assert_eq!(s.due(i64::MAX, 2).unwrap(), [(3_000, 2), (5_000, 1)]);
    assert_eq!(s.next_due().unwrap(), Some(3_000));
    assert_eq!(s.waiting_for_message("paid", "k0").unwrap(), [0]);
    assert_eq!(s.waiting_for_message("paid", "k1").unwrap(), [1]);
    assert_eq!(s.waiting_for_message("paid", "k5").unwrap(), [5]);
    assert_eq!(s.waiting_for_message("shipped", "k5").unwrap(), [5]);
    assert!(s.waiting_for_message("paid", "k2").unwrap().is_empty());
    assert!(s.waiting_for_message("k1", "paid").unwrap().is_empty());
    assert_eq!(s.waiting_for_signal("stop", None, 10).unwrap(), [1, 2]);
    assert_eq!(s.waiting_for_signal("stop", None, 1).unwrap(), [1]);
    assert_eq!(s.waiting_for_signal("stop", Some(1), 10).unwrap(), [2]);
    assert!(s.waiting_for_signal("paid", None, 10).unwrap().is_empty());

    // A timer due, and a task under way: loaded; the rest rests.
    let load = s.to_load(4_000).unwrap();
    assert_eq!(ids(&load), [2, 4]);
    assert_eq!(load[0], b);
    let flags = |after, limit| -> Vec<(u64, bool, bool, Option<i64>)> {
        let page = s.resting(after, limit).unwrap();
        page.iter()
            .map(|r| (r.id, r.messages, r.signals, r.due_ms))
            .collect()
    };
    let all = [
        (0, true, false, None),
        (1, true, true, Some(5_000)),
        (2, false, true, Some(3_000)),
        (3, false, false, None),
        (5, true, false, Some(9_000)),
    ];
    assert_eq!(flags(None, 10), all);
    // A page at a time, after the last id of the one before.
    assert_eq!(flags(None, 2), all[..2]);
    assert_eq!(flags(Some(1), 2), all[2..4]);
    assert_eq!(flags(Some(3), 2), all[4..]);
    assert_eq!(flags(Some(5), 2), []);
    let resting = s.resting(Some(0), 1).unwrap();
    assert_eq!(resting[0].process, "odd");
    assert_eq!(resting[0].fingerprint, a.fingerprint);
    assert_eq!(resting[0].key.as_deref(), Some("k1"));
    // A stored message for one of its subscriptions: it has work now too.
    s.apply(&[Write::Buffer(MessageRecord {
        name: "shipped".into(),
        key: "k5".into(),
        ..msg(70, i64::MAX)
    })])
    .unwrap();
    assert_eq!(ids(&s.to_load(4_000).unwrap()), [2, 4, 5]);
    assert_eq!(ids(&s.to_load(i64::MAX).unwrap()), [1, 2, 4, 5]);

    // The next checkpoint's index replaces the last.
    let mut a2 = rec(1, 2, "{}");
    a2.wake = wake(&[("paid", "k9")], &[], None);
    s.apply(&[Write::Put(a2.clone())]).unwrap();
    assert_eq!(s.instance(1).unwrap(), Some(a2));
    assert!(s.waiting_for_message("paid", "k1").unwrap().is_empty());
    assert_eq!(s.waiting_for_message("paid", "k9").unwrap(), [1]);
    assert_eq!(s.waiting_for_signal("stop", None, 10).unwrap(), [2]);
    assert_eq!(s.due(i64::MAX, 10).unwrap(), [(3_000, 2), (9_000, 5)]);

    // An end clears it, so does an ended put.
    s.apply(&[Write::End {
        id: 2,
        status: Status::Completed,
        outcome: None,
        at_ms: 6_000,
    }])
    .unwrap();
    let mut e2 = e.clone();
    e2.seq = 2;
    e2.status = Status::Terminated;
    s.apply(&[Write::Put(e2)]).unwrap();
    for id in [2, 5] {
        assert_eq!(s.instance(id).unwrap().unwrap().wake, WakeIndex::default());
    }
    assert!(s.waiting_for_signal("stop", None, 10).unwrap().is_empty());
    assert!(s.waiting_for_message("shipped", "k5").unwrap().is_empty());
    assert!(s.due(i64::MAX, 10).unwrap().is_empty());
    assert_eq!(s.next_due().unwrap(), None);
    // Subscribed and ended in one batch: nothing left.
    let mut f = rec(6, 1, "{}");
    f.wake = wake(&[("paid", "k6")], &["stop"], Some(1));
    s.apply(&[
        Write::Put(f),
        Write::End {
            id: 6,
            status: Status::Completed,
            outcome: None,
            at_ms: 7_000,
        },
    ])
    .unwrap();
    assert!(s.waiting_for_message("paid", "k6").unwrap().is_empty());
    assert!(s.waiting_for_signal("stop", None, 10).unwrap().is_empty());
    assert_eq!(ids(&s.to_load(i64::MAX).unwrap()), [4]);
    assert_eq!(ids_of(&s.resting(None, 10).unwrap()), [0, 1, 3]);
}

/// The due-time index read with a cursor, as the evicted instances' one timer
/// reads it: a page at a time in (due time, id) order, each once, however many
/// share a due time; only the running, and only up to the time asked.
pub(super) fn due_times_are_paged_by_cursor(s: &dyn Store) {
    // Ids out of due order, three due at once, ids either side of the others.
    let dues = [
        (7, 2_000),
        (3, 1_000),
        (9, 1_000),
        (1, 1_000),
        (4, 3_000),
        (8, 2_000),
        (0, i64::MAX),
        (2, i64::MIN),
    ];
    let mut writes: Vec<Write> = dues
        .iter()
        .map(|&(id, due)| {
            let mut r = rec(id, 1, "{}");
            r.wake = wake(&[], &[], Some(due));
            Write::Put(r)
        })
        .collect();
    // No timer, and a timer of an ended instance: never listed.
    let mut none = rec(5, 1, "{}");
    none.wake = wake(&[], &[], None);
    let mut ended = rec(6, 1, "{}");
    ended.wake = wake(&[], &[], Some(1_000));
    writes.push(Write::Put(none));
    writes.push(Write::Put(ended));
    writes.push(Write::End {
        id: 6,
        status: Status::Completed,
        outcome: None,
        at_ms: 1,
    });
    s.apply(&writes).unwrap();
    let order = [
        (i64::MIN, 2),
        (1_000, 1),
        (1_000, 3),
        (1_000, 9),
        (2_000, 7),
        (2_000, 8),
        (3_000, 4),
        (i64::MAX, 0),
    ];
    assert_eq!(s.due_after(None, i64::MAX, 100).unwrap(), order);
    assert_eq!(s.due(i64::MAX, 100).unwrap(), order);
    // Page by page, two at a time: each once, in order.
    let mut paged = Vec::new();
    let mut after = None;
    loop {
        let page = s.due_after(after, i64::MAX, 2).unwrap();
        assert!(page.len() <= 2);
        let Some(&last) = page.last() else { break };
        paged.extend(page);
        after = Some(last);
    }
    assert_eq!(paged, order);
    // Within one due time, after an id: the others of that time, then the later.
    assert_eq!(
        s.due_after(Some((1_000, 1)), 2_000, 10).unwrap(),
        order[2..6]
    );
    // Up to `at_ms` only; a cursor between ids that are not stored.
    assert_eq!(
        s.due_after(Some((1_000, 5)), 1_999, 10).unwrap(),
        [(1_000, 9)]
    );
    assert_eq!(s.due_after(Some((1_000, 9)), 1_999, 10).unwrap(), []);
    assert_eq!(s.due_after(Some((3_000, 4)), i64::MAX - 1, 10).unwrap(), []);
    assert_eq!(
        s.due_after(Some((3_000, 4)), i64::MAX, 10).unwrap(),
        [(i64::MAX, 0)]
    );
    // The earliest after the cursor, whenever due: what the timer sleeps until.
    assert_eq!(
        s.due_after(Some((2_000, 8)), i64::MAX, 1).unwrap(),
        [(3_000, 4)]
    );
    assert_eq!(s.next_due().unwrap(), Some(i64::MIN));
    // A new checkpoint moves an instance in the order; an end takes it out.
    let mut moved = rec(1, 2, "{}");
    moved.wake = wake(&[], &[], Some(2_500));
    s.apply(&[
        Write::Put(moved),
        Write::End {
            id: 8,
            status: Status::Cancelled,
            outcome: None,
            at_ms: 2,
        },
    ])
    .unwrap();
    assert_eq!(
        s.due_after(Some((1_000, 9)), 3_000, 10).unwrap(),
        [(2_000, 7), (2_500, 1), (3_000, 4)]
    );
}

/// A running instance of a store of before the index is not at rest (a resume
/// loads it) until its next checkpoint indexes it; an ended one is not listed.
#[cfg(any(feature = "sqlite", feature = "postgres"))]
pub(super) fn migrated_instances_are_loaded_until_indexed(s: &dyn Store) {
    let old = s.instance(4).unwrap().unwrap();
    assert_eq!(old.wake, WakeIndex::default());
    assert_eq!(ids(&s.to_load(i64::MAX).unwrap()), [4]);
    assert!(s.resting(None, 10).unwrap().is_empty());
    let mut next = old.clone();
    next.seq += 1;
    next.wake = wake(&[("paid", "x")], &[], Some(77));
    s.apply(&[Write::Put(next.clone())]).unwrap();
    assert_eq!(s.instance(4).unwrap(), Some(next));
    assert!(s.to_load(50).unwrap().is_empty());
    assert_eq!(ids_of(&s.resting(None, 10).unwrap()), [4]);
    assert_eq!(s.waiting_for_message("paid", "x").unwrap(), [4]);
    assert_eq!(s.due(100, 10).unwrap(), [(77, 4)]);
}

fn ids_of(resting: &[Resting]) -> Vec<u64> {
    resting.iter().map(|r| r.id).collect()
}

/// A SQLite store of schema 4 migrates to 5: its running instances are loaded at
/// the next resume, and indexed by their next checkpoint.
#[cfg(feature = "sqlite")]
#[test]
fn a_schema_4_sqlite_store_migrates_to_the_wake_index() {
    let dir = super::sqlite::TempDir::new();
    {
        let raw = rusqlite::Connection::open(dir.file()).unwrap();
        raw.pragma_update(None, "application_id", 0x7468_7273)
            .unwrap();
        for schema in [
            include_str!("../schema_v1.sql"),
            include_str!("../schema_v2.sql"),
            include_str!("../schema_v3.sql"),
            include_str!("../schema_v4.sql"),
        ] {
            raw.execute_batch(schema).unwrap();
        }
        raw.execute_batch(
            "UPDATE meta SET value = 4 WHERE key = 'schema_version';
             INSERT INTO instances (id, process, fingerprint, status, key, seq, state, outcome,
                                    updated_ms, business_key, started_ms)
               VALUES (4, 'order', 9, 'running', NULL, 3, '{}', NULL, 1234, NULL, 1200),
                      (5, 'order', 9, 'completed', NULL, 3, '{}', '{}', 1234, NULL, 1200);",
        )
        .unwrap();
    }
    let store = SqliteStore::open(dir.file()).unwrap();
    assert_eq!(SCHEMA_VERSION, 5);
    migrated_instances_are_loaded_until_indexed(&store);
}

/// A PostgreSQL store of schema 7 migrates to 8, the same.
#[cfg(feature = "postgres")]
#[test]
fn a_schema_7_postgres_store_migrates_to_the_wake_index() {
    let schema = super::postgres::TestSchema::new();
    let v: Vec<&str> = vec![
        include_str!("../postgres_v1.sql"),
        include_str!("../postgres_v2.sql"),
        include_str!("../postgres_v3.sql"),
        include_str!("../postgres_v4.sql"),
        include_str!("../postgres_v5.sql"),
        include_str!("../postgres_v6.sql"),
        include_str!("../postgres_v7.sql"),
    ];
    schema.sql(&format!(
        "CREATE SCHEMA {0}; SET search_path TO {0}; {1}
         UPDATE meta SET value = '7' WHERE key = 'schema_version';
         INSERT INTO instances (id, process, fingerprint, status, key, seq, state, outcome,
                                updated_ms)
           VALUES (4, 'order', 9, 'running', NULL, 3, '{{}}', NULL, 1234),
                  (5, 'order', 9, 'completed', NULL, 3, '{{}}', '{{}}', 1234);",
        schema.0,
        v.join("\n")
    ));
    let store = schema.connect().unwrap();
    let (_, meta) = schema.contents();
    assert!(meta.contains(&"(schema_version,8)".to_string()), "{meta:?}");
    migrated_instances_are_loaded_until_indexed(&store);
}
