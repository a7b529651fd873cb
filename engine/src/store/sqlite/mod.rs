//! [`SqliteStore`]: the store in one SQLite file (feature `sqlite`).
//!
//! (Its documentation is on [`SqliteStore`].)

mod apply;
mod read;
mod tasks;
mod wake;

use std::fs::File;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use rusqlite::{Connection, ErrorCode, OpenFlags, OptionalExtension, TransactionBehavior};
use tracing::{debug, info, warn};

use super::StoreError;

/// `PRAGMA application_id` of a thresh store: "thrs".
const APPLICATION_ID: i32 = 0x7468_7273;
/// `meta.magic` of a thresh store.
const MAGIC: &str = "thresh-store";
/// The migrations: `MIGRATIONS[v]` takes a store from schema `v` to `v + 1` (schema
/// 0 is an empty database). Append only; never edit a released one.
const MIGRATIONS: &[&str] = &[
    include_str!("../schema_v1.sql"),
    include_str!("../schema_v2.sql"),
    include_str!("../schema_v3.sql"),
    include_str!("../schema_v4.sql"),
    include_str!("../schema_v5.sql"),
];
/// The newest schema version this build reads and writes.
///
/// Needs the `sqlite` feature.
#[cfg_attr(docsrs, doc(cfg(feature = "sqlite")))]
pub const SCHEMA_VERSION: u32 = MIGRATIONS.len() as u32;
/// How long open waits for a lock another opener holds for a moment (two engines
/// racing to open the same file; one of them then gets `Locked`).
const OPEN_BUSY_TIMEOUT: Duration = Duration::from_millis(100);

/// How a [`SqliteStore`] opens its file.
///
/// Needs the `sqlite` feature.
#[derive(Clone, Debug)]
#[cfg_attr(docsrs, doc(cfg(feature = "sqlite")))]
pub struct SqliteOptions {
    /// Run `PRAGMA quick_check` at open and refuse a damaged file with
    /// [`StoreError::Corrupt`]. Default on; it reads the whole file, so opening a
    /// large store takes longer with it.
    pub quick_check: bool,
}

impl Default for SqliteOptions {
    fn default() -> SqliteOptions {
        SqliteOptions { quick_check: true }
    }
}

/// The store in one SQLite file.
///
/// ## Durability
/// WAL journal with `synchronous=FULL`: every commit syncs the WAL, so a transaction
/// whose `apply` returned `Ok` survives a crash of the process *and* a power loss.
/// (`NORMAL` in WAL mode syncs only at checkpoints: a power loss may roll back the
/// last commits, which would lose writes the engine has acknowledged — so not that.)
/// One commit is one fsync, which is why the [`Writer`](super::Writer) groups writes.
/// The write-ahead log is checkpointed into the file by the writer when it is idle
/// ([`Store::idle`](super::Store::idle)), after 16 commits or more; under a load that
/// never leaves it idle, SQLite's own checkpoint at 1 000 pages runs inside a commit.
///
/// ## One engine per file
/// The store opens its one connection in `locking_mode=EXCLUSIVE` and writes at open,
/// so it holds the file's lock until it is dropped: a second `SqliteStore` on the same
/// file, in this process or another, gets [`StoreError::Locked`]. Exclusive mode also
/// keeps the WAL index in heap memory (no `-shm` file). A side effect: no other
/// connection can read the file while the store is open — stop the engine to inspect
/// it with `sqlite3`. Reads go through the same connection as writes (behind a
/// mutex); a read waits for a commit in progress and sees every write whose receipt
/// resolved.
///
/// ## Checks at open (each leaves the file untouched)
/// The file's header is read before SQLite opens it: not SQLite's magic, or not
/// thresh's `application_id`, is [`StoreError::NotAStore`]. Then, in a write
/// transaction that is rolled back on any error: the `meta` table's magic, the schema
/// version ([`StoreError::NewerSchema`]) and `PRAGMA quick_check`
/// ([`StoreError::Corrupt`], skipped with [`SqliteOptions::quick_check`] off). Only
/// then are migrations applied (in that transaction), WAL mode set and the lock taken.
///
/// ## Schema (version 5: version 1, then its migrations — 2 instance queries, 3 the
/// task list, 4 tasks' business keys, 5 the wake index)
/// ```sql
#[doc = include_str!("../schema_v1.sql")]
#[doc = include_str!("../schema_v2.sql")]
#[doc = include_str!("../schema_v3.sql")]
#[doc = include_str!("../schema_v4.sql")]
#[doc = include_str!("../schema_v5.sql")]
/// ```
/// Documents are `TEXT` holding JSON (`CHECK (json_valid(...))`); a fingerprint is
/// stored as the `INTEGER` with the same 64 bits (`printf('%016x', fingerprint)`
/// shows it as hex).
///
/// Needs the `sqlite` feature.
#[cfg_attr(docsrs, doc(cfg(feature = "sqlite")))]
pub struct SqliteStore {
    path: PathBuf,
    conn: Mutex<Connection>,
    /// Commits since the write-ahead log was last checkpointed off the commits'
    /// path ([`Store::idle`](super::Store::idle)).
    unchecked: std::sync::atomic::AtomicU32,
}

impl std::fmt::Debug for SqliteStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SqliteStore")
            .field("path", &self.path)
            .finish_non_exhaustive()
    }
}

/// Commits after which an idle writer checkpoints the write-ahead log: small
/// commits (an instance's step, some pages each) reach SQLite's own threshold after
/// about a hundred, so well before that.
const IDLE_CHECKPOINT_AFTER: u32 = 16;

/// What the file's header says before SQLite opens it.
enum Probe {
    /// No file, or an empty one: create the store.
    New,
    /// A SQLite database with thresh's application id.
    Thresh,
}

impl SqliteStore {
    /// Open the store at `path`, creating it if there is no file (or an empty one).
    pub fn open(path: impl AsRef<Path>) -> Result<SqliteStore, StoreError> {
        SqliteStore::open_with(path, &SqliteOptions::default())
    }

    /// Open the store at `path` with `options`.
    pub fn open_with(
        path: impl AsRef<Path>,
        options: &SqliteOptions,
    ) -> Result<SqliteStore, StoreError> {
        let path = path.as_ref().to_path_buf();
        let probe = probe(&path)?;
        let mut flags = OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX;
        if matches!(probe, Probe::New) {
            flags |= OpenFlags::SQLITE_OPEN_CREATE;
        }
        let fail = |doing, e| sqlite_error(&path, doing, e);
        let mut conn = Connection::open_with_flags(&path, flags).map_err(|e| fail("opening", e))?;
        conn.busy_timeout(OPEN_BUSY_TIMEOUT)
            .map_err(|e| fail("setting the busy timeout", e))?;
        let mode: String = conn
            .pragma_update_and_check(None, "locking_mode", "EXCLUSIVE", |row| row.get(0))
            .map_err(|e| fail("setting the locking mode", e))?;
        if !mode.eq_ignore_ascii_case("exclusive") {
            warn!(mode, "SQLite refused exclusive locking mode");
        }
        let created = prepare(&mut conn, &path, options)?;
        let journal: String = conn
            .pragma_update_and_check(None, "journal_mode", "WAL", |row| row.get(0))
            .map_err(|e| fail("setting WAL mode", e))?;
        if !journal.eq_ignore_ascii_case("wal") {
            return Err(StoreError::Sqlite {
                path: path.clone(),
                doing: "setting WAL mode",
                source: Arc::new(rusqlite::Error::InvalidParameterName(format!(
                    "journal_mode is {journal}, not wal"
                ))),
            });
        }
        // FULL: see the module docs (NORMAL could lose acknowledged commits at a power
        // loss). A page cache of up to 32 MiB (default 2 MiB), allocated as used: a
        // group commit of many instances touches more pages than the default cache
        // holds.
        conn.execute_batch("PRAGMA synchronous = FULL; PRAGMA cache_size = -32768;")
            .map_err(|e| fail("setting synchronous=FULL", e))?;
        // A write in WAL mode takes the exclusive lock, held until the store is dropped.
        conn.execute(
            "INSERT INTO meta (key, value) VALUES ('opened_ms', ?1)
             ON CONFLICT (key) DO UPDATE SET value = excluded.value",
            [now_ms()],
        )
        .map_err(|e| fail("taking the lock", e))?;
        if created {
            info!(path = %path.display(), "created a thresh store");
        } else {
            debug!(path = %path.display(), "opened a thresh store");
        }
        Ok(SqliteStore {
            path,
            conn: Mutex::new(conn),
            unchecked: std::sync::atomic::AtomicU32::new(0),
        })
    }

    /// The file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    fn conn(&self) -> MutexGuard<'_, Connection> {
        // Every transaction rolls back when dropped, so a panic while holding the
        // lock leaves the connection usable.
        self.conn
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Checkpoint the write-ahead log if enough commits went into it since the
    /// last time: the writer calls it when idle ([`Store::idle`](super::Store::idle)).
    /// SQLite's own checkpoint (`wal_autocheckpoint`, 1 000 pages) runs inside the
    /// commit that crosses it, adding the copy into the database file and its fsync
    /// to that commit — one in a hundred or so of small commits, the tail of their
    /// latency. Done here first, it stays off their path; under a load that never
    /// leaves the writer idle, SQLite's goes on as before. Passive: it copies what
    /// it can without waiting for anything.
    pub(super) fn checkpoint_idle(&self) -> Result<(), StoreError> {
        use std::sync::atomic::Ordering;
        if self.unchecked.load(Ordering::Relaxed) < IDLE_CHECKPOINT_AFTER {
            return Ok(());
        }
        let conn = self.conn();
        self.unchecked.store(0, Ordering::Relaxed);
        conn.query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |_| Ok(()))
            .map_err(|e| self.fail("checkpointing the write-ahead log", e))
    }

    pub(super) fn committed(&self) {
        self.unchecked
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    }

    pub(super) fn checkpoint_due(&self) -> bool {
        self.unchecked.load(std::sync::atomic::Ordering::Relaxed) >= IDLE_CHECKPOINT_AFTER
    }

    fn fail(&self, doing: &'static str, e: rusqlite::Error) -> StoreError {
        sqlite_error(&self.path, doing, e)
    }

    /// Cap the file at `pages` pages (so a write beyond it fails as a full disk).
    #[cfg(test)]
    pub(crate) fn limit_pages(&self, pages: u64) {
        let conn = self.conn();
        let _: i64 = conn
            .pragma_update_and_check(None, "max_page_count", pages, |row| row.get(0))
            .expect("set max_page_count");
    }

    /// The file's size in pages.
    #[cfg(test)]
    pub(crate) fn page_count(&self) -> u64 {
        self.conn()
            .query_row("PRAGMA page_count", [], |row| row.get(0))
            .expect("read page_count")
    }
}

/// Read the file's header without SQLite: is it a thresh store, or nothing yet?
fn probe(path: &Path) -> Result<Probe, StoreError> {
    let mut file = match File::open(path) {
        Ok(file) => file,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Probe::New),
        Err(e) => {
            return Err(StoreError::Io {
                path: path.to_path_buf(),
                source: Arc::new(e),
            })
        }
    };
    let mut header = Vec::with_capacity(100);
    (&mut file)
        .take(100)
        .read_to_end(&mut header)
        .map_err(|e| StoreError::Io {
            path: path.to_path_buf(),
            source: Arc::new(e),
        })?;
    if header.is_empty() {
        return Ok(Probe::New);
    }
    if !header.starts_with(b"SQLite format 3\0") {
        return Err(StoreError::NotAStore {
            path: path.to_path_buf(),
        });
    }
    let Some(app_id) = header.get(68..72) else {
        return Err(StoreError::Corrupt {
            path: path.to_path_buf(),
            detail: format!("the header is cut short at {} bytes", header.len()),
        });
    };
    if app_id != APPLICATION_ID.to_be_bytes() {
        return Err(StoreError::NotAStore {
            path: path.to_path_buf(),
        });
    }
    Ok(Probe::Thresh)
}

/// In one write transaction: create the store, or check it (magic, schema version,
/// quick check) and migrate it. Any error rolls back: the file is untouched. Returns
/// whether the store was created.
fn prepare(
    conn: &mut Connection,
    path: &Path,
    options: &SqliteOptions,
) -> Result<bool, StoreError> {
    let fail = |doing, e| sqlite_error(path, doing, e);
    let tx = conn
        .transaction_with_behavior(TransactionBehavior::Immediate)
        .map_err(|e| fail("locking the file", e))?;
    let tables: i64 = tx
        .query_row("SELECT count(*) FROM sqlite_schema", [], |r| r.get(0))
        .map_err(|e| fail("reading the schema", e))?;
    let created = tables == 0;
    let from = if created {
        tx.pragma_update(None, "application_id", APPLICATION_ID)
            .map_err(|e| fail("setting the application id", e))?;
        0
    } else {
        let app_id: i32 = tx
            .query_row("PRAGMA application_id", [], |r| r.get(0))
            .map_err(|e| fail("reading the application id", e))?;
        let has_meta: bool = tx
            .query_row(
                "SELECT count(*) > 0 FROM sqlite_schema WHERE type = 'table' AND name = 'meta'",
                [],
                |r| r.get(0),
            )
            .map_err(|e| fail("reading the schema", e))?;
        let magic: Option<String> = if has_meta {
            tx.query_row("SELECT value FROM meta WHERE key = 'magic'", [], |r| {
                r.get(0)
            })
            .optional()
            .map_err(|e| fail("reading the store's magic", e))?
        } else {
            None
        };
        if app_id != APPLICATION_ID || magic.as_deref() != Some(MAGIC) {
            return Err(StoreError::NotAStore {
                path: path.to_path_buf(),
            });
        }
        let version: i64 = tx
            .query_row(
                "SELECT value FROM meta WHERE key = 'schema_version'",
                [],
                |r| r.get(0),
            )
            .optional()
            .map_err(|e| fail("reading the schema version", e))?
            .ok_or_else(|| StoreError::Corrupt {
                path: path.to_path_buf(),
                detail: "the schema version is missing".into(),
            })?;
        let version = u32::try_from(version).map_err(|_| StoreError::Corrupt {
            path: path.to_path_buf(),
            detail: format!("schema version {version}"),
        })?;
        if version > SCHEMA_VERSION {
            return Err(StoreError::NewerSchema {
                path: path.to_path_buf(),
                found: version,
                supported: SCHEMA_VERSION,
            });
        }
        if options.quick_check {
            quick_check(&tx, path)?;
        }
        version
    };
    for (v, sql) in MIGRATIONS.iter().enumerate().skip(from as usize) {
        tx.execute_batch(sql)
            .map_err(|e| fail("migrating the schema", e))?;
        tx.execute(
            "UPDATE meta SET value = ?1 WHERE key = 'schema_version'",
            [v as i64 + 1],
        )
        .map_err(|e| fail("recording the schema version", e))?;
        if !created {
            info!(path = %path.display(), from = v, to = v + 1, "migrated the thresh store");
        }
    }
    if created {
        tx.execute(
            "INSERT INTO meta (key, value) VALUES ('created_ms', ?1)",
            [now_ms()],
        )
        .map_err(|e| fail("initialising the store", e))?;
    }
    if created || (from as usize) < MIGRATIONS.len() {
        tx.commit().map_err(|e| fail("committing the schema", e))?;
    } else {
        tx.rollback().map_err(|e| fail("ending the checks", e))?;
    }
    Ok(created)
}

fn quick_check(tx: &rusqlite::Transaction<'_>, path: &Path) -> Result<(), StoreError> {
    let lines: Vec<String> = tx
        .prepare("PRAGMA quick_check(5)")
        .and_then(|mut s| s.query_map([], |r| r.get(0))?.collect())
        .map_err(|e| sqlite_error(path, "checking the file", e))?;
    if lines.len() == 1 && lines[0] == "ok" {
        Ok(())
    } else {
        Err(StoreError::Corrupt {
            path: path.to_path_buf(),
            detail: lines.join("; "),
        })
    }
}

/// A SQLite error as a store error, by its cause.
fn sqlite_error(path: &Path, doing: &'static str, e: rusqlite::Error) -> StoreError {
    let path = path.to_path_buf();
    match e.sqlite_error_code() {
        Some(ErrorCode::DiskFull) => StoreError::DiskFull { path },
        Some(ErrorCode::DatabaseCorrupt | ErrorCode::NotADatabase) => StoreError::Corrupt {
            path,
            detail: format!("{e} while {doing}"),
        },
        Some(ErrorCode::DatabaseBusy | ErrorCode::DatabaseLocked) => StoreError::Locked { path },
        _ => StoreError::Sqlite {
            path,
            doing,
            source: Arc::new(e),
        },
    }
}

/// An id or seq that [`check`](super::check) has bounded to `i64`.
fn to_i64(n: u64) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

use crate::query::now_ms;
