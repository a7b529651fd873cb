//! [`SqliteStore`]: the store in one SQLite file (feature `sqlite`).
//!
//! (Its documentation is on [`SqliteStore`].)

use std::fs::File;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use rusqlite::{params, Connection, ErrorCode, OpenFlags, OptionalExtension, TransactionBehavior};
use tracing::{debug, info, warn};

use super::{
    check, raise_ids, DeploymentRecord, Ids, InstanceRecord, MessageRecord, Status, Store,
    StoreError, Write,
};

/// `PRAGMA application_id` of a thresh store: "thrs".
const APPLICATION_ID: i32 = 0x7468_7273;
/// `meta.magic` of a thresh store.
const MAGIC: &str = "thresh-store";
/// The migrations: `MIGRATIONS[v]` takes a store from schema `v` to `v + 1` (schema
/// 0 is an empty database). Append only; never edit a released one.
const MIGRATIONS: &[&str] = &[include_str!("schema_v1.sql")];
/// The newest schema version this build reads and writes.
pub const SCHEMA_VERSION: u32 = MIGRATIONS.len() as u32;
/// How long open waits for a lock another opener holds for a moment (two engines
/// racing to open the same file; one of them then gets `Locked`).
const OPEN_BUSY_TIMEOUT: Duration = Duration::from_millis(100);

/// How a [`SqliteStore`] opens its file.
#[derive(Clone, Debug)]
pub struct SqliteOptions {
    /// Run `PRAGMA quick_check` at open and refuse a damaged file with
    /// [`StoreError::Corrupt`]. Default on; it reads the whole file (see the README's
    /// store bench for its cost).
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
/// ## Schema (version 1)
/// ```sql
#[doc = include_str!("schema_v1.sql")]
/// ```
/// Documents are `TEXT` holding JSON (`CHECK (json_valid(...))`); a fingerprint is
/// stored as the `INTEGER` with the same 64 bits (`printf('%016x', fingerprint)`
/// shows it as hex).
pub struct SqliteStore {
    path: PathBuf,
    conn: Mutex<Connection>,
}

impl std::fmt::Debug for SqliteStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SqliteStore")
            .field("path", &self.path)
            .finish_non_exhaustive()
    }
}

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
        // group commit of many instances touches many pages (about 1.3x faster
        // checkpoint updates on 100k instances).
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

    fn apply_one(&self, tx: &rusqlite::Transaction<'_>, write: &Write) -> Result<(), StoreError> {
        check(write)?;
        let fail = |doing, e| self.fail(doing, e);
        match write {
            Write::Put(r) => {
                let changed = tx
                    .prepare_cached(
                        "INSERT INTO instances
                           (id, process, fingerprint, status, key, seq, state, outcome, updated_ms)
                         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)
                         ON CONFLICT (id) DO UPDATE SET
                           process = excluded.process, fingerprint = excluded.fingerprint,
                           status = excluded.status, key = excluded.key, seq = excluded.seq,
                           state = excluded.state, outcome = excluded.outcome,
                           updated_ms = excluded.updated_ms
                         WHERE instances.status = 'running' AND excluded.seq > instances.seq",
                    )
                    .and_then(|mut s| {
                        s.execute(params![
                            to_i64(r.id),
                            r.process,
                            r.fingerprint as i64,
                            r.status.as_str(),
                            r.key,
                            to_i64(r.seq),
                            r.state,
                            r.outcome,
                            r.updated_ms
                        ])
                    })
                    .map_err(|e| fail("storing a checkpoint", e))?;
                if changed == 0 {
                    let (status, seq) = self
                        .status_of(tx, r.id)?
                        .ok_or(StoreError::UnknownInstance { id: r.id })?;
                    return Err(if status.is_ended() {
                        StoreError::InstanceEnded { id: r.id }
                    } else {
                        StoreError::StaleCheckpoint {
                            id: r.id,
                            stored: seq,
                            given: r.seq,
                        }
                    });
                }
            }
            Write::Consume { message } => {
                let gone = tx
                    .prepare_cached("DELETE FROM messages WHERE id = ?1")
                    .and_then(|mut s| s.execute([to_i64(*message)]))
                    .map_err(|e| fail("consuming a message", e))?;
                if gone == 0 {
                    return Err(StoreError::MessageGone { id: *message });
                }
            }
            Write::End {
                id,
                status,
                outcome,
                at_ms,
            } => {
                let changed = tx
                    .prepare_cached(
                        "UPDATE instances SET status = ?2, outcome = ?3, updated_ms = ?4
                         WHERE id = ?1 AND status = 'running'",
                    )
                    .and_then(|mut s| {
                        s.execute(params![to_i64(*id), status.as_str(), outcome, at_ms])
                    })
                    .map_err(|e| fail("ending an instance", e))?;
                if changed == 0 {
                    return Err(match self.status_of(tx, *id)? {
                        None => StoreError::UnknownInstance { id: *id },
                        Some(_) => StoreError::InstanceEnded { id: *id },
                    });
                }
            }
            Write::Buffer(m) => {
                let added = tx
                    .prepare_cached(
                        "INSERT INTO messages (id, name, key, payload, expires_ms)
                         VALUES (?1, ?2, ?3, ?4, ?5) ON CONFLICT (id) DO NOTHING",
                    )
                    .and_then(|mut s| {
                        s.execute(params![
                            to_i64(m.id),
                            m.name,
                            m.key,
                            m.payload,
                            m.expires_ms
                        ])
                    })
                    .map_err(|e| fail("buffering a message", e))?;
                if added == 0 {
                    return Err(StoreError::DuplicateMessage { id: m.id });
                }
            }
            Write::DropMessage { id } => {
                tx.prepare_cached("DELETE FROM messages WHERE id = ?1")
                    .and_then(|mut s| s.execute([to_i64(*id)]))
                    .map_err(|e| fail("dropping a message", e))?;
            }
            Write::Expire { now_ms } => {
                tx.prepare_cached("DELETE FROM messages WHERE expires_ms <= ?1")
                    .and_then(|mut s| s.execute([now_ms]))
                    .map_err(|e| fail("expiring messages", e))?;
            }
            Write::PutDeployment(d) => {
                tx.prepare_cached(
                    "INSERT INTO deployments (id, process, fingerprint, data, timer_anchors)
                     VALUES (?1, ?2, ?3, ?4, ?5)
                     ON CONFLICT (id) DO UPDATE SET
                       process = excluded.process, fingerprint = excluded.fingerprint,
                       data = excluded.data, timer_anchors = excluded.timer_anchors",
                )
                .and_then(|mut s| {
                    s.execute(params![
                        to_i64(d.id),
                        d.process,
                        d.fingerprint as i64,
                        d.data,
                        d.timer_anchors
                    ])
                })
                .map_err(|e| fail("storing a deployment", e))?;
            }
            Write::RemoveDeployment { id } => {
                tx.prepare_cached("DELETE FROM deployments WHERE id = ?1")
                    .and_then(|mut s| s.execute([to_i64(*id)]))
                    .map_err(|e| fail("removing a deployment", e))?;
            }
            Write::Purge { ended_before_ms } => {
                tx.prepare_cached(
                    "DELETE FROM instances WHERE status <> 'running' AND updated_ms < ?1",
                )
                .and_then(|mut s| s.execute([ended_before_ms]))
                .map_err(|e| fail("purging ended instances", e))?;
            }
        }
        Ok(())
    }

    fn status_of(
        &self,
        tx: &rusqlite::Transaction<'_>,
        id: u64,
    ) -> Result<Option<(Status, u64)>, StoreError> {
        let row: Option<(String, i64)> = tx
            .prepare_cached("SELECT status, seq FROM instances WHERE id = ?1")
            .and_then(|mut s| {
                s.query_row([to_i64(id)], |row| Ok((row.get(0)?, row.get(1)?)))
                    .optional()
            })
            .map_err(|e| self.fail("reading an instance", e))?;
        row.map(|(status, seq)| Ok((self.status(&status)?, self.unsigned("seq", seq)?)))
            .transpose()
    }

    fn status(&self, name: &str) -> Result<Status, StoreError> {
        Status::from_name(name).ok_or_else(|| self.corrupt(format!("unknown status {name:?}")))
    }

    fn unsigned(&self, what: &str, n: i64) -> Result<u64, StoreError> {
        u64::try_from(n).map_err(|_| self.corrupt(format!("negative {what} {n}")))
    }

    fn corrupt(&self, detail: String) -> StoreError {
        StoreError::Corrupt {
            path: self.path.clone(),
            detail,
        }
    }

    fn instance_row(&self, row: &rusqlite::Row<'_>) -> rusqlite::Result<RawInstance> {
        Ok(RawInstance {
            id: row.get(0)?,
            process: row.get(1)?,
            fingerprint: row.get(2)?,
            status: row.get(3)?,
            key: row.get(4)?,
            seq: row.get(5)?,
            state: row.get(6)?,
            outcome: row.get(7)?,
            updated_ms: row.get(8)?,
        })
    }

    fn record(&self, raw: RawInstance) -> Result<InstanceRecord, StoreError> {
        Ok(InstanceRecord {
            id: self.unsigned("instance id", raw.id)?,
            process: raw.process,
            fingerprint: raw.fingerprint as u64,
            status: self.status(&raw.status)?,
            key: raw.key,
            seq: self.unsigned("seq", raw.seq)?,
            state: raw.state,
            outcome: raw.outcome,
            updated_ms: raw.updated_ms,
        })
    }

    fn query_instances(
        &self,
        filter: &str,
        params: &[&dyn rusqlite::ToSql],
    ) -> Result<Vec<InstanceRecord>, StoreError> {
        let conn = self.conn();
        let sql = format!(
            "SELECT id, process, fingerprint, status, key, seq, state, outcome, updated_ms
             FROM instances {filter} ORDER BY id"
        );
        let raws = conn
            .prepare_cached(&sql)
            .and_then(|mut s| {
                s.query_map(params, |row| self.instance_row(row))?
                    .collect::<rusqlite::Result<Vec<_>>>()
            })
            .map_err(|e| self.fail("reading instances", e))?;
        drop(conn);
        raws.into_iter().map(|raw| self.record(raw)).collect()
    }
}

struct RawInstance {
    id: i64,
    process: String,
    fingerprint: i64,
    status: String,
    key: Option<String>,
    seq: i64,
    state: String,
    outcome: Option<String>,
    updated_ms: i64,
}

impl Store for SqliteStore {
    fn apply(&self, batch: &[Write]) -> Result<(), StoreError> {
        if batch.is_empty() {
            return Ok(());
        }
        let mut conn = self.conn();
        let tx = conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(|e| self.fail("beginning a transaction", e))?;
        let mut next = Ids::default();
        for write in batch {
            // An error drops `tx`, which rolls the whole batch back.
            self.apply_one(&tx, write)?;
            raise_ids(&mut next, write);
        }
        for (key, id) in [
            ("next_instance_id", next.instance),
            ("next_message_id", next.message),
            ("next_deployment_id", next.deployment),
        ] {
            if id > 0 {
                tx.prepare_cached("UPDATE meta SET value = max(value, ?2) WHERE key = ?1")
                    .and_then(|mut s| s.execute(params![key, to_i64(id)]))
                    .map_err(|e| self.fail("raising the id high-water mark", e))?;
            }
        }
        tx.commit().map_err(|e| self.fail("committing", e))
    }

    fn running(&self) -> Result<Vec<InstanceRecord>, StoreError> {
        self.query_instances("WHERE status = 'running'", &[])
    }

    fn instance(&self, id: u64) -> Result<Option<InstanceRecord>, StoreError> {
        let Ok(id) = i64::try_from(id) else {
            return Ok(None);
        };
        Ok(self.query_instances("WHERE id = ?1", &[&id])?.pop())
    }

    fn list(
        &self,
        process: Option<&str>,
        status: Option<Status>,
    ) -> Result<Vec<InstanceRecord>, StoreError> {
        let status = status.map(Status::as_str);
        match (process, status) {
            (None, None) => self.query_instances("", &[]),
            (Some(p), None) => self.query_instances("WHERE process = ?1", &[&p]),
            (None, Some(s)) => self.query_instances("WHERE status = ?1", &[&s]),
            (Some(p), Some(s)) => {
                self.query_instances("WHERE status = ?2 AND process = ?1", &[&p, &s])
            }
        }
    }

    fn messages(&self) -> Result<Vec<MessageRecord>, StoreError> {
        let conn = self.conn();
        let raws: Vec<(i64, String, String, String, i64)> = conn
            .prepare_cached("SELECT id, name, key, payload, expires_ms FROM messages ORDER BY id")
            .and_then(|mut s| {
                s.query_map([], |r| {
                    Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?))
                })?
                .collect()
            })
            .map_err(|e| self.fail("reading messages", e))?;
        drop(conn);
        raws.into_iter()
            .map(|(id, name, key, payload, expires_ms)| {
                Ok(MessageRecord {
                    id: self.unsigned("message id", id)?,
                    name,
                    key,
                    payload,
                    expires_ms,
                })
            })
            .collect()
    }

    fn deployments(&self) -> Result<Vec<DeploymentRecord>, StoreError> {
        let conn = self.conn();
        let raws: Vec<(i64, String, i64, String, String)> = conn
            .prepare_cached(
                "SELECT id, process, fingerprint, data, timer_anchors FROM deployments ORDER BY id",
            )
            .and_then(|mut s| {
                s.query_map([], |r| {
                    Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?))
                })?
                .collect()
            })
            .map_err(|e| self.fail("reading deployments", e))?;
        drop(conn);
        raws.into_iter()
            .map(|(id, process, fingerprint, data, timer_anchors)| {
                Ok(DeploymentRecord {
                    id: self.unsigned("deployment id", id)?,
                    process,
                    fingerprint: fingerprint as u64,
                    data,
                    timer_anchors,
                })
            })
            .collect()
    }

    fn next_ids(&self) -> Result<Ids, StoreError> {
        let conn = self.conn();
        let get = |key: &str| -> Result<u64, StoreError> {
            let value: i64 = conn
                .prepare_cached("SELECT value FROM meta WHERE key = ?1")
                .and_then(|mut s| s.query_row([key], |r| r.get(0)))
                .map_err(|e| self.fail("reading the id high-water mark", e))?;
            self.unsigned(key, value)
        };
        Ok(Ids {
            instance: get("next_instance_id")?,
            message: get("next_message_id")?,
            deployment: get("next_deployment_id")?,
        })
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

/// An id or seq that [`check`] has bounded to `i64`.
fn to_i64(n: u64) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
        .unwrap_or(0)
}
