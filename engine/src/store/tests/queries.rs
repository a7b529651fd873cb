//! Instance queries on every store: the SQL stores answer as the reference
//! semantics (`InstanceQuery::select` over every record) does, pages included.

use super::*;

fn instance(id: u64) -> InstanceRecord {
    let mut r = rec(id, 1, r#"{"data":1}"#);
    r.process = if id.is_multiple_of(3) {
        "order"
    } else {
        "refund"
    }
    .into();
    r.business_key = (!id.is_multiple_of(4)).then(|| format!("b{}", id % 5));
    // Some share a start time: the order goes on by id.
    r.started_ms = 10_000 + (id as i64 % 7) * 100;
    r.waits = match id % 4 {
        0 => vec![],
        1 => vec!["approve".into()],
        2 => vec!["approve".into(), "pay".into()],
        _ => vec!["pay".into()],
    };
    r.incidents = u32::from(id.is_multiple_of(6));
    r
}

fn queries() -> Vec<InstanceQuery> {
    let base = InstanceQuery::default();
    let of = |p: &str| InstanceQuery {
        process: Some(p.into()),
        ..base.clone()
    };
    let mut all = vec![
        base.clone(),
        of("order"),
        InstanceQuery {
            statuses: vec![Status::Running],
            ..of("refund")
        },
        InstanceQuery {
            statuses: vec![Status::Completed, Status::Failed],
            ..base.clone()
        },
        InstanceQuery {
            waiting_at: Some("approve".into()),
            sort: SortBy::Started,
            ..of("refund")
        },
        InstanceQuery {
            waiting_at: Some("pay".into()),
            ..base.clone()
        },
        InstanceQuery {
            business_key: Some("b2".into()),
            ..base.clone()
        },
        InstanceQuery {
            id: Some(7),
            ..base.clone()
        },
        InstanceQuery {
            id: Some(7),
            ..of("order")
        },
        InstanceQuery {
            id: Some(5),
            waiting_at: Some("approve".into()),
            ..base.clone()
        },
        InstanceQuery {
            id: Some(u64::MAX),
            ..base.clone()
        },
        InstanceQuery {
            key: Some("k7".into()),
            ..base.clone()
        },
        InstanceQuery {
            incident: Some(true),
            ..base.clone()
        },
        InstanceQuery {
            incident: Some(false),
            statuses: vec![Status::Running],
            ..base.clone()
        },
        InstanceQuery {
            started: (Some(10_200), Some(10_500)),
            sort: SortBy::Started,
            descending: true,
            ..base.clone()
        },
        InstanceQuery {
            ended: (Some(20_005), None),
            sort: SortBy::Ended,
            ..base.clone()
        },
        InstanceQuery {
            sort: SortBy::Ended,
            descending: true,
            ..base.clone()
        },
        InstanceQuery {
            offset: 3,
            limit: Some(4),
            sort: SortBy::Started,
            ..base.clone()
        },
    ];
    // Every query again, paged by cursor from a row in the middle.
    let paged: Vec<InstanceQuery> = all
        .iter()
        .map(|q| InstanceQuery {
            after: Some(After {
                value: match q.sort {
                    SortBy::Id => 11,
                    SortBy::Started => 10_300,
                    SortBy::Ended => 20_010,
                },
                id: 11,
            }),
            limit: Some(5),
            ..q.clone()
        })
        .collect();
    all.extend(paged);
    all
}

pub(super) fn queries_match_the_reference(s: &dyn Store) {
    let mut writes: Vec<Write> = (1..=30).map(|id| Write::Put(instance(id))).collect();
    // Some end: completed, failed; their waits and incidents go with the end.
    for id in (1..=30).filter(|id: &u64| id.is_multiple_of(5) || id.is_multiple_of(6)) {
        writes.push(Write::End {
            id,
            status: if id % 2 == 0 {
                Status::Completed
            } else {
                Status::Failed
            },
            outcome: Some("{}".into()),
            at_ms: 20_000 + id as i64,
        });
    }
    s.apply(&writes).unwrap();
    // A later checkpoint replaces the waits.
    let mut moved = instance(7);
    moved.seq = 2;
    moved.waits = vec!["ship".into()];
    s.apply(&[Write::Put(moved.clone())]).unwrap();
    assert_eq!(s.instance(7).unwrap(), Some(moved));
    let ended = s.instance(30).unwrap().unwrap();
    assert_eq!((ended.waits.len(), ended.incidents), (0, 0));
    assert_eq!(ended.ended_ms(), Some(20_030));

    let every = s.list(None, None).unwrap();
    for q in queries() {
        let expected = q.select(every.clone());
        let got = s.query(&q).unwrap();
        let ids = |rs: &[InstanceRecord]| rs.iter().map(|r| r.id).collect::<Vec<_>>();
        assert_eq!(ids(&got), ids(&expected), "{q:?}");
        assert_eq!(got, expected, "{q:?}");
        let all = InstanceQuery {
            after: None,
            offset: 0,
            limit: None,
            ..q.clone()
        };
        assert_eq!(
            s.count(&q).unwrap(),
            all.select(every.clone()).len() as u64,
            "{q:?}"
        );
    }
    // The reference itself, on a few hand-checked answers.
    let waiting = |node: &str| InstanceQuery {
        waiting_at: Some(node.into()),
        ..InstanceQuery::default()
    };
    let ids = |q: InstanceQuery| {
        s.query(&q)
            .unwrap()
            .iter()
            .map(|r| r.id)
            .collect::<Vec<_>>()
    };
    assert_eq!(ids(waiting("ship")), [7]);
    assert_eq!(
        ids(InstanceQuery {
            business_key: Some("b2".into()),
            ..InstanceQuery::default()
        }),
        [2, 7, 17, 22, 27]
    );
}

/// What a store migrated from before queries holds: its instance, with its last
/// write's time as its start, no key, no waits until its next checkpoint — and
/// queries run on it.
#[cfg(any(feature = "sqlite", feature = "postgres"))]
pub(super) fn migrated_instance_is_queryable(s: &dyn Store) {
    let old = s.instance(4).unwrap().unwrap();
    assert_eq!(old.started_ms, old.updated_ms);
    assert_eq!((old.business_key.as_deref(), old.waits.len()), (None, 0));
    let by_start = InstanceQuery {
        sort: SortBy::Started,
        ..InstanceQuery::default()
    };
    assert_eq!(s.query(&by_start).unwrap(), vec![old.clone()]);
    let mut next = old.clone();
    next.seq += 1;
    next.waits = vec!["approve".into()];
    s.apply(&[Write::Put(next.clone())]).unwrap();
    let waiting = InstanceQuery {
        waiting_at: Some("approve".into()),
        ..InstanceQuery::default()
    };
    assert_eq!(s.query(&waiting).unwrap(), vec![next]);
    s.apply(&[Write::End {
        id: 4,
        status: Status::Completed,
        outcome: Some("{}".into()),
        at_ms: old.updated_ms + 5,
    }])
    .unwrap();
    let ended = InstanceQuery {
        sort: SortBy::Ended,
        ..InstanceQuery::default()
    };
    let ended = s.query(&ended).unwrap();
    assert_eq!(ended[0].ended_ms(), Some(old.updated_ms + 5));
    assert!(s.query(&waiting).unwrap().is_empty());
}

/// A SQLite store of schema 1 (before queries) migrates to 2 with its records.
#[cfg(feature = "sqlite")]
#[test]
fn a_schema_1_sqlite_store_migrates_for_queries() {
    let dir = super::sqlite::TempDir::new();
    {
        let raw = rusqlite::Connection::open(dir.file()).unwrap();
        raw.pragma_update(None, "application_id", 0x7468_7273)
            .unwrap();
        raw.execute_batch(include_str!("../schema_v1.sql")).unwrap();
        raw.execute_batch(
            "UPDATE meta SET value = 1 WHERE key = 'schema_version';
             INSERT INTO instances (id, process, fingerprint, status, key, seq, state, outcome,
                                    updated_ms)
               VALUES (4, 'order', 9, 'running', NULL, 3, '{\"running\":{}}', NULL, 1234);",
        )
        .unwrap();
    }
    let store = SqliteStore::open(dir.file()).unwrap();
    // Through the queries' migration (2), the task list's (3) and its business
    // keys' (4), and the wake index (5).
    assert_eq!(SCHEMA_VERSION, 5);
    migrated_instance_is_queryable(&store);
}

/// A SQLite store of schema 3 migrates to 4: a task open before it takes its
/// instance's business key, and is found by it.
#[cfg(feature = "sqlite")]
#[test]
fn a_schema_3_sqlite_store_gives_open_tasks_their_business_keys() {
    use crate::tasklist::TaskQuery;
    let dir = super::sqlite::TempDir::new();
    {
        let raw = rusqlite::Connection::open(dir.file()).unwrap();
        raw.pragma_update(None, "application_id", 0x7468_7273)
            .unwrap();
        for schema in [
            include_str!("../schema_v1.sql"),
            include_str!("../schema_v2.sql"),
            include_str!("../schema_v3.sql"),
        ] {
            raw.execute_batch(schema).unwrap();
        }
        raw.execute_batch(
            "UPDATE meta SET value = 3 WHERE key = 'schema_version';
             INSERT INTO instances (id, process, fingerprint, status, key, seq, state, outcome,
                                    updated_ms, business_key, started_ms)
               VALUES (4, 'order', 9, 'running', NULL, 3, '{}', NULL, 1234, 'ORDER-7', 1200);
             INSERT INTO user_tasks (instance, number, process, element, name, iteration,
                                     assignee, groups, due_ms, priority, claimed_by,
                                     created_ms, key)
               VALUES (4, 1, 'order', 'approve', '', NULL, NULL, '[]', NULL, 50, NULL,
                       1230, NULL);",
        )
        .unwrap();
    }
    let store = SqliteStore::open(dir.file()).unwrap();
    let found = store.tasks(&TaskQuery::new().key("ORDER-7")).unwrap();
    assert_eq!(found.len(), 1, "{found:?}");
    assert_eq!(found[0].business_key.as_deref(), Some("ORDER-7"));
}

/// A PostgreSQL store of schema 4 (before queries) migrates to 5 with its records.
#[cfg(feature = "postgres")]
#[test]
fn a_schema_4_postgres_store_migrates_for_queries() {
    let schema = super::postgres::TestSchema::new();
    let v: Vec<&str> = vec![
        include_str!("../postgres_v1.sql"),
        include_str!("../postgres_v2.sql"),
        include_str!("../postgres_v3.sql"),
        include_str!("../postgres_v4.sql"),
    ];
    schema.sql(&format!(
        "CREATE SCHEMA {0}; SET search_path TO {0}; {1}
         UPDATE meta SET value = '4' WHERE key = 'schema_version';
         INSERT INTO instances (id, process, fingerprint, status, key, seq, state, outcome,
                                updated_ms)
           VALUES (4, 'order', 9, 'running', NULL, 3, '{{\"running\":{{}}}}', NULL, 1234);",
        schema.0,
        v.join("\n")
    ));
    let store = schema.connect().unwrap();
    let (_, meta) = schema.contents();
    // Through the queries' migration (5), the task list's (6) and its business
    // keys' (7), and the wake index (8).
    assert!(meta.contains(&"(schema_version,8)".to_string()), "{meta:?}");
    migrated_instance_is_queryable(&store);
}
