//! `SqliteStore`: reopening, the open errors (each leaving the file untouched), a
//! full disk, locking across processes and a real SIGKILL in the middle of writing.

use std::fs;
use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use super::super::*;
use super::{four_submitters, msg, rec, snapshot};

/// A directory for one test's files, removed when dropped.
pub(crate) struct TempDir(PathBuf);

impl TempDir {
    pub(crate) fn new() -> TempDir {
        static NEXT: AtomicUsize = AtomicUsize::new(0);
        let dir = std::env::temp_dir().join(format!(
            "thresh-store-test-{}-{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        ));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(&dir).unwrap();
        TempDir(dir)
    }

    pub(crate) fn file(&self) -> PathBuf {
        self.0.join("store.db")
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.0);
    }
}

/// The file's bytes, and the names of the files beside it.
fn contents(path: &Path) -> (Vec<u8>, Vec<String>) {
    let mut names: Vec<String> = fs::read_dir(path.parent().unwrap())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    (fs::read(path).unwrap(), names)
}

/// Opening `path` fails as `expected` and leaves the file (and its directory) as it was.
fn refused(path: &Path, expected: fn(&StoreError) -> bool) -> StoreError {
    let before = contents(path);
    let err = SqliteStore::open(path).unwrap_err();
    eprintln!("refused: {err}");
    assert!(expected(&err), "open gave {err:?}");
    assert!(
        contents(path) == before,
        "a refused open changed the file or its directory: {:?} -> {:?}",
        before.1,
        contents(path).1
    );
    err
}

fn big_state(n: u64, bytes: usize) -> String {
    format!(r#"{{"n":{n},"pad":"{}"}}"#, "x".repeat(bytes))
}

#[test]
fn records_and_ids_survive_reopening() {
    let dir = TempDir::new();
    let store = SqliteStore::open(dir.file()).unwrap();
    store
        .apply(&[
            Write::Put(rec(41, 3, r#"{"a":[1,2,3]}"#)),
            Write::Buffer(msg(9, 77)),
            Write::Put(rec(5, 0, "{}")),
            Write::End {
                id: 5,
                status: Status::Completed,
                outcome: Some(r#""done""#.into()),
                at_ms: 0,
            },
            Write::Purge { ended_before_ms: 1 },
        ])
        .unwrap();
    let before = snapshot(&store);
    drop(store);
    let store = SqliteStore::open(dir.file()).unwrap();
    assert_eq!(snapshot(&store), before);
    assert_eq!(
        store.next_ids().unwrap(),
        Ids {
            instance: 42,
            message: 10,
            deployment: 0
        }
    );
    assert_eq!(store.path(), dir.file());
    drop(store);

    // What a person sees with sqlite3 once the engine has stopped.
    let raw = rusqlite::Connection::open(dir.file()).unwrap();
    let (journal, app_id, version): (String, i32, i64) = raw
        .query_row(
            "SELECT (SELECT journal_mode FROM pragma_journal_mode),
                    (SELECT application_id FROM pragma_application_id),
                    (SELECT value FROM meta WHERE key = 'schema_version')",
            [],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
        )
        .unwrap();
    assert_eq!(
        (journal.as_str(), app_id, version),
        ("wal", 0x7468_7273, SCHEMA_VERSION as i64)
    );
    let third: i64 = raw
        .query_row(
            "SELECT state ->> '$.a[2]' FROM instances WHERE id = 41",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(third, 3);
}

/// The writer's idle upkeep checkpoints the write-ahead log once enough commits
/// went into it, so SQLite's own checkpoint (inside a commit, at 1 000 pages) is
/// not reached by a store that has quiet moments: the log stays a few commits
/// long, and is reused from its start.
#[test]
fn an_idle_writer_checkpoints_the_log_off_the_commits_path() {
    let dir = TempDir::new();
    let store = SqliteStore::open(dir.file()).unwrap();
    let wal = dir.0.join("store.db-wal");
    let mut seq = 0;
    let mut commit = |store: &SqliteStore| {
        seq += 1;
        store
            .apply(&[Write::Put(rec(seq, 0, &big_state(seq, 12_000)))])
            .unwrap();
    };
    assert!(!store.wants_idle(), "no commit yet: no upkeep");
    for _ in 0..15 {
        commit(&store);
    }
    assert!(
        !store.wants_idle(),
        "fifteen commits are too few to checkpoint"
    );
    commit(&store);
    assert!(store.wants_idle());
    store.idle().unwrap();
    assert!(!store.wants_idle(), "the checkpoint starts the count anew");
    let after_one = fs::metadata(&wal).unwrap().len();
    // 256 commits of four pages each: a log of about 1 000 pages without the upkeep.
    for _ in 0..16 {
        for _ in 0..16 {
            commit(&store);
        }
        store.idle().unwrap();
    }
    let after_all = fs::metadata(&wal).unwrap().len();
    assert!(
        after_all <= after_one + 16 * 4096,
        "the log grew from {after_one} to {after_all} bytes across idle checkpoints"
    );
    // Every commit is there, whatever the checkpoints moved.
    assert_eq!(store.list(None, None).unwrap().len(), 272);
}

#[test]
fn an_empty_file_becomes_a_store() {
    let dir = TempDir::new();
    fs::write(dir.file(), b"").unwrap();
    let store = SqliteStore::open(dir.file()).unwrap();
    store.apply(&[Write::Put(rec(1, 0, "{}"))]).unwrap();
    assert_eq!(store.running().unwrap().len(), 1);
}

#[test]
fn a_file_that_is_not_sqlite_is_not_a_store() {
    let dir = TempDir::new();
    fs::write(dir.file(), "order,amount\n1,20\n2,30\n".repeat(100)).unwrap();
    let err = refused(&dir.file(), |e| matches!(e, StoreError::NotAStore { .. }));
    let text = err.to_string();
    assert!(
        text.contains("store.db") && text.contains("not a thresh store"),
        "{text}"
    );
}

#[test]
fn another_programs_sqlite_database_is_not_a_store() {
    let dir = TempDir::new();
    {
        let raw = rusqlite::Connection::open(dir.file()).unwrap();
        raw.execute_batch("CREATE TABLE t (x); INSERT INTO t VALUES (1);")
            .unwrap();
    }
    refused(&dir.file(), |e| matches!(e, StoreError::NotAStore { .. }));
    // Even one that happens to use thresh's application id (but has no thresh meta).
    {
        let raw = rusqlite::Connection::open(dir.file()).unwrap();
        raw.pragma_update(None, "application_id", 0x7468_7273)
            .unwrap();
    }
    refused(&dir.file(), |e| matches!(e, StoreError::NotAStore { .. }));
}

#[test]
fn a_store_from_a_newer_schema_is_refused() {
    let dir = TempDir::new();
    drop(SqliteStore::open(dir.file()).unwrap());
    {
        let raw = rusqlite::Connection::open(dir.file()).unwrap();
        raw.execute(
            "UPDATE meta SET value = 99 WHERE key = 'schema_version'",
            [],
        )
        .unwrap();
    }
    let err = refused(
        &dir.file(),
        |e| matches!(e, StoreError::NewerSchema { found: 99, supported, .. } if *supported == SCHEMA_VERSION),
    );
    assert!(err.to_string().contains("newer thresh"), "{err}");
}

#[test]
fn a_corrupted_file_is_refused() {
    let dir = TempDir::new();
    {
        let store = SqliteStore::open(dir.file()).unwrap();
        let batch: Vec<Write> = (0..2_000)
            .map(|i| Write::Put(rec(i, 0, &big_state(i, 200))))
            .collect();
        store.apply(&batch).unwrap();
    }
    let mut bytes = fs::read(dir.file()).unwrap();
    assert!(bytes.len() > 40 * 4096, "{} bytes", bytes.len());
    // Scribble over a few pages in the middle of the instances table.
    for b in &mut bytes[20 * 4096..24 * 4096] {
        *b = 0x5a;
    }
    fs::write(dir.file(), &bytes).unwrap();
    let err = refused(&dir.file(), |e| matches!(e, StoreError::Corrupt { .. }));
    assert!(err.to_string().contains("backup"), "{err}");

    // A file cut short is corrupt too.
    let len = bytes.len() / 2;
    fs::write(dir.file(), &bytes[..len]).unwrap();
    refused(&dir.file(), |e| matches!(e, StoreError::Corrupt { .. }));
    // And so is a header cut short.
    fs::write(dir.file(), &bytes[..50]).unwrap();
    refused(&dir.file(), |e| matches!(e, StoreError::Corrupt { .. }));
}

#[test]
fn a_second_store_on_the_same_file_is_locked_out() {
    let dir = TempDir::new();
    let first = SqliteStore::open(dir.file()).unwrap();
    first.apply(&[Write::Put(rec(1, 0, "{}"))]).unwrap();
    let err = SqliteStore::open(dir.file()).unwrap_err();
    assert!(matches!(err, StoreError::Locked { .. }), "{err:?}");
    assert!(err.to_string().contains("another running engine"), "{err}");
    // The first one is unaffected.
    first.apply(&[Write::Put(rec(1, 1, "{}"))]).unwrap();
    drop(first);
    let again = SqliteStore::open(dir.file()).unwrap();
    assert_eq!(again.instance(1).unwrap().unwrap().seq, 1);
}

#[test]
fn a_full_disk_fails_the_whole_batch_and_the_next_one_works() {
    let dir = TempDir::new();
    let store = SqliteStore::open(dir.file()).unwrap();
    store.apply(&[Write::Put(rec(0, 0, "{}"))]).unwrap();
    let before = snapshot(&store);
    store.limit_pages(store.page_count() + 4);
    let big: Vec<Write> = (1..200)
        .map(|i| Write::Put(rec(i, 0, &big_state(i, 2_000))))
        .chain([Write::Buffer(msg(1, 0))])
        .collect();
    let err = store.apply(&big).unwrap_err();
    assert!(matches!(err, StoreError::DiskFull { .. }), "{err:?}");
    assert!(err.to_string().contains("free space"), "{err}");
    assert_eq!(snapshot(&store), before);
    // A small write still fits; once there is room, the big one goes through.
    store.apply(&[Write::Put(rec(0, 1, "{}"))]).unwrap();
    store.limit_pages(1 << 30);
    store.apply(&big).unwrap();
    assert_eq!(store.running().unwrap().len(), 200);
}

#[tokio::test]
async fn the_writer_reports_a_full_disk_and_goes_on() {
    let dir = TempDir::new();
    let store = Arc::new(SqliteStore::open(dir.file()).unwrap());
    let writer = Writer::spawn(store.clone()).unwrap();
    writer
        .submit(vec![Write::Put(rec(0, 0, "{}"))])
        .await
        .unwrap();
    store.limit_pages(store.page_count() + 2);
    let big: Vec<Write> = (1..100)
        .map(|i| Write::Put(rec(i, 0, &big_state(i, 2_000))))
        .collect();
    let err = writer.submit(big.clone()).await.unwrap_err();
    assert!(matches!(err, StoreError::DiskFull { .. }), "{err:?}");
    writer
        .submit(vec![Write::Put(rec(0, 1, "{}"))])
        .await
        .unwrap();
    store.limit_pages(1 << 30);
    writer.submit(big).await.unwrap();
    writer.shutdown().unwrap();
    assert_eq!(store.running().unwrap().len(), 100);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn four_submitters_on_sqlite() {
    let dir = TempDir::new();
    let store = Arc::new(SqliteStore::open(dir.file()).unwrap());
    four_submitters(store.clone(), 200).await;
    let before = snapshot(&*store);
    drop(store);
    assert_eq!(snapshot(&SqliteStore::open(dir.file()).unwrap()), before);
}

// ---------------------------------------------------------------------------------
// Child processes: the test binary itself, with THRESH_STORE_CHILD naming the role.
// ---------------------------------------------------------------------------------

const ROLE: &str = "THRESH_STORE_CHILD";
const PATH: &str = "THRESH_STORE_PATH";

fn spawn_child(role: &str, path: &Path) -> Child {
    Command::new(std::env::current_exe().unwrap())
        .args([
            "store::tests::sqlite::child",
            "--exact",
            "--nocapture",
            "--test-threads=1",
            "-q",
        ])
        .env(ROLE, role)
        .env(PATH, path)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap()
}

/// Not a test of its own: the body of the child processes the tests below spawn
/// (without the variable set it returns at once).
#[test]
fn child() {
    let (Ok(role), Ok(path)) = (std::env::var(ROLE), std::env::var(PATH)) else {
        return;
    };
    match role.as_str() {
        // Hold the store open until the parent closes our stdin (or kills us).
        "hold" => {
            let _store = SqliteStore::open(&path).unwrap();
            println!("open");
            let _ = std::io::stdin().read_to_end(&mut Vec::new());
        }
        // Write in a loop until killed: four submitters; each write of submitter k
        // checkpoints instance k at seq n, buffers message k + 4n and consumes the
        // message of its previous write; print a line once its receipt resolved.
        "crash" => tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap()
            .block_on(async {
                let store = Arc::new(SqliteStore::open(&path).unwrap());
                let writer = Writer::spawn(store.clone()).unwrap();
                let deadline = Instant::now() + Duration::from_secs(60);
                let mut tasks = Vec::new();
                for k in 0..4u64 {
                    let start = store.instance(k).unwrap().map_or(0, |r| r.seq + 1);
                    let writer = writer.clone();
                    tasks.push(tokio::spawn(async move {
                        let mut n = start;
                        while Instant::now() < deadline {
                            let mut writes = vec![
                                Write::Put(rec(k, n, &big_state(n, 100 + 50 * k as usize))),
                                Write::Buffer(msg(k + 4 * n, i64::MAX)),
                            ];
                            if n > 0 {
                                writes.push(Write::Consume {
                                    message: k + 4 * (n - 1),
                                });
                            }
                            writer.submit(writes).await.unwrap();
                            println!("ack {k} {n}");
                            n += 1;
                        }
                    }));
                }
                for t in tasks {
                    t.await.unwrap();
                }
            }),
        other => panic!("unknown child role {other}"),
    }
}

#[test]
fn a_store_held_by_another_process_is_locked_out() {
    let dir = TempDir::new();
    drop(SqliteStore::open(dir.file()).unwrap());
    let mut holder = spawn_child("hold", &dir.file());
    let mut lines = BufReader::new(holder.stdout.take().unwrap()).lines();
    // (libtest prints its own lines around the child's.)
    assert!(
        lines.any(|l| l.unwrap() == "open"),
        "the holder did not open the store"
    );
    let before = fs::read(dir.file()).unwrap();
    let err = SqliteStore::open(dir.file()).unwrap_err();
    assert!(matches!(err, StoreError::Locked { .. }), "{err:?}");
    assert!(
        fs::read(dir.file()).unwrap() == before,
        "a refused open changed the file"
    );
    // Once the holder is gone (here: killed), the store opens.
    holder.kill().unwrap();
    holder.wait().unwrap();
    SqliteStore::open(dir.file()).unwrap();
}

/// SIGKILL a child writing in a loop, many times at random moments; after each kill
/// every write whose receipt the child saw is in the store, and each transaction is
/// all there or not at all (instance k at seq n has exactly message k + 4n buffered).
#[test]
fn acknowledged_writes_survive_sigkill() {
    let dir = TempDir::new();
    let mut seed = SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .unwrap()
        .subsec_nanos() as u64
        | 1;
    eprintln!("sigkill test seed {seed}");
    let mut acked: [Option<u64>; 4] = [None; 4];
    for round in 0..12 {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        let kill_after = 1 + seed % 250;
        let mut child = spawn_child("crash", &dir.file());
        let mut seen = 0;
        for line in BufReader::new(child.stdout.take().unwrap()).lines() {
            let line = line.unwrap();
            let Some(rest) = line.strip_prefix("ack ") else {
                continue;
            };
            let (k, n) = rest.split_once(' ').unwrap();
            let (k, n): (usize, u64) = (k.parse().unwrap(), n.parse().unwrap());
            assert!(acked[k].is_none_or(|a| a < n));
            acked[k] = Some(n);
            seen += 1;
            if seen == kill_after {
                child.kill().unwrap();
            }
            // Lines already in the pipe were acknowledged too: read on to the end.
        }
        let status = child.wait().unwrap();
        assert!(
            seen >= kill_after,
            "round {round}: the child stopped early ({status})"
        );
        let store = SqliteStore::open(dir.file()).unwrap();
        let ahead: Vec<i64> = (0..4)
            .map(|k| match (store.instance(k).unwrap(), acked[k as usize]) {
                (Some(r), Some(a)) => r.seq as i64 - a as i64,
                _ => -1,
            })
            .collect();
        eprintln!("round {round}: killed after {kill_after} acks, {seen} seen; stored seq - acked seq per instance: {ahead:?}");
        for (k, acked) in acked.iter().enumerate() {
            let k = k as u64;
            let r = store.instance(k).unwrap();
            let Some(acked) = acked else { continue };
            let r = r.unwrap_or_else(|| panic!("round {round}: instance {k} lost"));
            assert!(
                r.seq >= *acked,
                "round {round}: instance {k} at {} < acked {acked}",
                r.seq
            );
            assert_eq!(r.state, big_state(r.seq, 100 + 50 * k as usize));
            let buffered: Vec<u64> = store
                .messages()
                .unwrap()
                .into_iter()
                .map(|m| m.id)
                .filter(|id| id % 4 == k)
                .collect();
            assert_eq!(buffered, [k + 4 * r.seq], "round {round}: instance {k}");
        }
    }
}
