//! `PostgresStore`: reconnecting, the open errors (each leaving the schema untouched),
//! connection failures, the writer with four submitters, and calls from every kind of
//! thread a tokio program has. Each test works in a schema of its own in the database
//! of `THRESH_POSTGRES_URL` (default: the local `test` database), dropped at its end.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use super::super::*;
use super::{four_submitters, msg, rec, snapshot};

mod commits;
mod nodes;

/// The database the tests use.
fn url() -> String {
    std::env::var("THRESH_POSTGRES_URL")
        .unwrap_or_else(|_| "postgres://root@127.0.0.1:5432/test".into())
}

/// A plain connection for the test's own SQL.
fn raw() -> ::postgres::Client {
    ::postgres::Client::connect(&url(), ::postgres::NoTls).unwrap()
}

/// A fresh schema, `thresh_test_<pid>_<n>`, dropped (with everything in it) at drop.
pub(crate) struct TestSchema(pub(crate) String);

impl TestSchema {
    pub(crate) fn new() -> TestSchema {
        static NEXT: AtomicUsize = AtomicUsize::new(0);
        let name = format!(
            "thresh_test_{}_{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        );
        let schema = TestSchema(name);
        schema.sql(&format!("DROP SCHEMA IF EXISTS {} CASCADE", schema.0));
        schema
    }

    pub(crate) fn connect(&self) -> Result<PostgresStore, StoreError> {
        PostgresStore::connect_schema(&url(), &self.0)
    }

    /// Run `sql` on a connection of its own (off any tokio context).
    pub(crate) fn sql(&self, sql: &str) {
        let sql = sql.to_owned();
        std::thread::spawn(move || raw().batch_execute(&sql).unwrap())
            .join()
            .unwrap();
    }

    /// The schema's tables and the rows of its `meta` (to see it was left untouched).
    pub(crate) fn contents(&self) -> (Vec<String>, Vec<String>) {
        let name = self.0.clone();
        std::thread::spawn(move || {
            let mut c = raw();
            let tables = c
                .query(
                    "SELECT tablename::text FROM pg_tables WHERE schemaname = $1 ORDER BY 1",
                    &[&name],
                )
                .unwrap()
                .iter()
                .map(|r| r.get(0))
                .collect::<Vec<String>>();
            let meta = if tables.iter().any(|t| t == "meta") {
                c.query(
                    &format!("SELECT row(m.*)::text FROM {name}.meta m ORDER BY 1"),
                    &[],
                )
                .unwrap()
                .iter()
                .map(|r| r.get(0))
                .collect()
            } else {
                vec![]
            };
            (tables, meta)
        })
        .join()
        .unwrap()
    }

    /// Connecting fails as `expected` and leaves the schema as it was.
    fn refused(&self, expected: fn(&StoreError) -> bool) -> StoreError {
        let before = self.contents();
        let err = self.connect().unwrap_err();
        eprintln!("refused: {err}");
        assert!(expected(&err), "connect gave {err:?}");
        assert_eq!(
            self.contents(),
            before,
            "a refused connect changed the schema"
        );
        err
    }
}

impl Drop for TestSchema {
    fn drop(&mut self) {
        let sql = format!("DROP SCHEMA IF EXISTS {} CASCADE", self.0);
        let _ = std::thread::spawn(move || {
            if let Ok(mut c) = ::postgres::Client::connect(&url(), ::postgres::NoTls) {
                let _ = c.batch_execute(&sql);
            }
        })
        .join();
    }
}

#[test]
fn a_new_schema_becomes_a_store_and_keeps_its_records() {
    let schema = TestSchema::new();
    let store = schema.connect().unwrap();
    assert!(store.location().display().to_string().contains(&schema.0));
    store
        .apply(&[
            Write::Put(rec(41, 3, r#"{"a":[1,2,3]}"#)),
            Write::Buffer(msg(9, 77)),
        ])
        .unwrap();
    let before = snapshot(&store);
    drop(store);
    let (tables, meta) = schema.contents();
    assert_eq!(
        tables,
        [
            "commit_marks",
            "deployments",
            "handovers",
            "instance_waits",
            "instance_wakes",
            "instances",
            "messages",
            "meta",
            "user_tasks"
        ]
    );
    assert!(
        meta.contains(&"(magic,thresh-store)".to_string()),
        "{meta:?}"
    );
    assert!(
        meta.contains(&format!("(schema_version,{PG_SCHEMA_VERSION})")),
        "{meta:?}"
    );
    assert_eq!(snapshot(&schema.connect().unwrap()), before);
}

/// A store written at schema 2 (several nodes, before start messages went
/// cluster-wide) migrates to 3 with its records: its stored messages get their
/// place in the order of storing, and a node claims them as before.
#[test]
fn a_schema_2_store_migrates_with_its_messages() {
    let schema = TestSchema::new();
    let v1 = include_str!("../postgres_v1.sql");
    let v2 = include_str!("../postgres_v2.sql");
    schema.sql(&format!(
        "CREATE SCHEMA {0}; SET search_path TO {0}; {v1} {v2}
         UPDATE meta SET value = '2' WHERE key = 'schema_version';
         INSERT INTO messages (id, name, key, payload, expires_ms)
           VALUES (5, 'pay', 'K', '3', {far}), (2, 'pay', 'L', '4', {far});",
        schema.0,
        far = i64::MAX
    ));
    let store = PostgresStore::connect_node(&url(), &schema.0, "n", Default::default()).unwrap();
    let (_, meta) = schema.contents();
    assert!(
        meta.contains(&format!("(schema_version,{PG_SCHEMA_VERSION})")),
        "{meta:?}"
    );
    let ids: Vec<u64> = store.messages().unwrap().iter().map(|m| m.id).collect();
    assert_eq!(ids, [2, 5]);
    let candidates = store
        .claim_candidates(&["pay".to_string()], &[], 0, 0, 10)
        .unwrap();
    assert_eq!(candidates.len(), 2, "{candidates:?}");
    let claimed = store.claim_waited(&[5], 0).unwrap();
    assert_eq!(claimed.iter().map(|m| m.id).collect::<Vec<_>>(), [5]);
}

#[test]
fn a_schema_another_program_made_is_not_a_store() {
    let schema = TestSchema::new();
    schema.sql(&format!(
        "CREATE SCHEMA {0}; CREATE TABLE {0}.orders (id int)",
        schema.0
    ));
    let err = schema.refused(|e| matches!(e, StoreError::NotAStore { .. }));
    assert!(err.to_string().contains("not a thresh store"), "{err}");
    // A `meta` table of someone else's is not ours either, whatever its shape.
    schema.sql(&format!(
        "CREATE TABLE {0}.meta (key text, value text); INSERT INTO {0}.meta VALUES ('magic', 'x')",
        schema.0
    ));
    schema.refused(|e| matches!(e, StoreError::NotAStore { .. }));
    schema.sql(&format!(
        "DROP TABLE {0}.meta; CREATE TABLE {0}.meta (n int)",
        schema.0
    ));
    schema.refused(|e| matches!(e, StoreError::NotAStore { .. }));
}

#[test]
fn a_store_from_a_newer_schema_is_refused() {
    let schema = TestSchema::new();
    drop(schema.connect().unwrap());
    schema.sql(&format!(
        "UPDATE {}.meta SET value = '99' WHERE key = 'schema_version'",
        schema.0
    ));
    let err = schema.refused(
        |e| matches!(e, StoreError::NewerSchema { found: 99, supported, .. } if *supported == PG_SCHEMA_VERSION),
    );
    assert!(err.to_string().contains("newer thresh"), "{err}");
}

#[test]
fn connection_failures_are_store_errors() {
    // Nothing listens on port 1; a URL that does not parse.
    let err = PostgresStore::connect("postgres://root@127.0.0.1:1/test").unwrap_err();
    assert!(
        matches!(
            err,
            StoreError::Postgres {
                doing: "connecting",
                ..
            }
        ),
        "{err:?}"
    );
    assert!(err.to_string().contains("127.0.0.1:1/test"), "{err}");
    let err = PostgresStore::connect("postgres://[::1").unwrap_err();
    assert!(matches!(err, StoreError::Postgres { .. }), "{err:?}");
    // A database that does not exist.
    let err =
        PostgresStore::connect("postgres://root@127.0.0.1:5432/no_such_db_thresh").unwrap_err();
    assert!(matches!(err, StoreError::Postgres { .. }), "{err:?}");
}

#[test]
fn a_killed_connection_is_made_again_and_the_batch_applied() {
    let schema = TestSchema::new();
    let store = schema.connect().unwrap();
    store.apply(&[Write::Put(rec(1, 0, "{}"))]).unwrap();
    let pid = store.backend_pid();
    std::thread::spawn(move || {
        raw()
            .execute("SELECT pg_terminate_backend($1)", &[&pid])
            .unwrap()
    })
    .join()
    .unwrap();
    // The store connects again and the batch is applied on the new connection.
    store.apply(&[Write::Put(rec(1, 1, "{}"))]).unwrap();
    assert_ne!(store.backend_pid(), pid, "a new connection");
    assert_eq!(store.instance(1).unwrap().unwrap().seq, 1);
    // Killed again between calls: a read reconnects too.
    let pid = store.backend_pid();
    kill(pid);
    assert_eq!(store.instance(1).unwrap().unwrap().seq, 1);
    drop(store);
    assert_eq!(
        schema.connect().unwrap().instance(1).unwrap().unwrap().seq,
        1
    );
}

/// Terminate the server process `pid` (from a connection of its own).
fn kill(pid: i32) {
    std::thread::spawn(move || {
        raw()
            .execute("SELECT pg_terminate_backend($1)", &[&pid])
            .unwrap()
    })
    .join()
    .unwrap();
}

#[test]
fn text_with_a_nul_is_refused_as_invalid() {
    let schema = TestSchema::new();
    let store = schema.connect().unwrap();
    let mut bad = rec(1, 0, "{}");
    bad.key = Some("a\0b".into());
    let err = store
        .apply(&[Write::Put(rec(2, 0, "{}")), Write::Put(bad)])
        .unwrap_err();
    assert!(
        matches!(err, StoreError::Invalid { kind: "put", .. }),
        "{err:?}"
    );
    assert_eq!(store.list(None, None).unwrap(), vec![]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn four_submitters_on_postgres() {
    let schema = TestSchema::new();
    let store = Arc::new(schema.connect().unwrap());
    four_submitters(store.clone(), 100).await;
    // Read and dropped on an async worker: no panic of the client's own runtime.
    let before = snapshot(&*store);
    drop(store);
    assert_eq!(snapshot(&schema.connect().unwrap()), before);
}

#[test]
fn calls_from_a_plain_thread_spawn_blocking_and_async_workers() {
    let schema = TestSchema::new();
    // Connected on a plain thread while a runtime exists elsewhere in the process.
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let store = Arc::new(schema.connect().unwrap());
    store.apply(&[Write::Put(rec(1, 0, "{}"))]).unwrap();
    let (s, t) = (store.clone(), store.clone());
    rt.block_on(async move {
        // spawn_blocking, as the trait asks.
        tokio::task::spawn_blocking(move || s.apply(&[Write::Put(rec(1, 1, "{}"))]))
            .await
            .unwrap()
            .unwrap();
        // Straight on an async worker (not recommended, but no panic).
        tokio::spawn(async move { t.apply(&[Write::Put(rec(1, 2, "{}"))]) })
            .await
            .unwrap()
            .unwrap();
    });
    // A current-thread runtime's context too; and the store dropped inside it.
    let current = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    let s = store.clone();
    drop(store);
    current.block_on(async move {
        assert_eq!(s.instance(1).unwrap().unwrap().seq, 2);
        let connected = schema.connect().unwrap(); // connect in a runtime's context
        assert_eq!(connected.instance(1).unwrap().unwrap().seq, 2);
        drop(connected);
        drop(s);
    });
}

#[test]
fn engines_connecting_at_once_create_the_store_once() {
    let schema = TestSchema::new();
    let stores: Vec<PostgresStore> = std::thread::scope(|scope| {
        let threads: Vec<_> = (0..4).map(|_| scope.spawn(|| schema.connect())).collect();
        threads
            .into_iter()
            .map(|t| t.join().unwrap().unwrap())
            .collect()
    });
    stores[0].apply(&[Write::Put(rec(1, 0, "{}"))]).unwrap();
    for store in &stores {
        assert_eq!(store.instance(1).unwrap(), Some(rec(1, 0, "{}")));
    }
    let (_, meta) = schema.contents();
    assert_eq!(
        meta.iter()
            .filter(|m| m.starts_with("(created_ms,"))
            .count(),
        1
    );
}

#[test]
fn a_run_of_checkpoints_in_one_statement_names_the_one_at_fault() {
    let schema = TestSchema::new();
    let store = schema.connect().unwrap();
    let puts = |seq: u64| (0..6).map(move |id| Write::Put(rec(id, seq, "{}")));
    store.apply(&puts(1).collect::<Vec<_>>()).unwrap();
    // A stale one in the middle of a run: the batch is refused naming it, and
    // nothing of it is stored.
    let mut batch: Vec<Write> = puts(2).collect();
    batch[3] = Write::Put(rec(3, 1, "{}"));
    let err = store.apply(&batch).unwrap_err();
    assert!(
        matches!(
            err,
            StoreError::StaleCheckpoint {
                id: 3,
                stored: 1,
                given: 1
            }
        ),
        "{err:?}"
    );
    assert!(store.running().unwrap().iter().all(|r| r.seq == 1));
    // A run of ends with one of an unknown instance.
    let end = |id| Write::End {
        id,
        status: Status::Completed,
        outcome: Some("{}".into()),
        at_ms: 9,
    };
    let err = store.apply(&[end(0), end(1), end(77)]).unwrap_err();
    assert!(
        matches!(err, StoreError::UnknownInstance { id: 77 }),
        "{err:?}"
    );
    assert_eq!(store.running().unwrap().len(), 6);
    // Whole runs go through.
    store.apply(&puts(2).collect::<Vec<_>>()).unwrap();
    store.apply(&[end(0), end(1), end(2)]).unwrap();
    assert_eq!(store.running().unwrap().len(), 3);

    // A node's run with one instance another node owns: fenced, nothing stored.
    let a = PostgresStore::connect_node(&url(), &schema.0, "a", Default::default()).unwrap();
    let b = PostgresStore::connect_node(&url(), &schema.0, "b", std::time::Duration::from_secs(60))
        .unwrap();
    a.apply(
        &(10..14)
            .map(|id| Write::Put(rec(id, 1, "{}")))
            .collect::<Vec<_>>(),
    )
    .unwrap();
    let prints: Vec<(String, u64)> = (10..14)
        .map(|id| {
            let r = rec(id, 1, "{}");
            (r.process, r.fingerprint)
        })
        .filter(|(_, f)| *f & 0xff == 12)
        .collect();
    assert_eq!(b.take_over(&prints, &[], 10).unwrap().len(), 1);
    let err = a
        .apply(
            &(10..14)
                .map(|id| Write::Put(rec(id, 2, "{}")))
                .collect::<Vec<_>>(),
        )
        .unwrap_err();
    assert!(matches!(err, StoreError::Fenced { id: 12, .. }), "{err:?}");
    assert!((10..14).all(|id| a.instance(id).unwrap().unwrap().seq == 1));
    // b's run with the instance it took (fence 2): stored.
    b.apply(&[Write::Put(rec(12, 2, "{}")), Write::Put(rec(13, 0, "{}"))])
        .unwrap_err();
    b.apply(&[Write::Put(rec(12, 2, "{}"))]).unwrap();
}
