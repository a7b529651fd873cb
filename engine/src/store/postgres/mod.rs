//! [`PostgresStore`]: the store in a PostgreSQL schema (feature `postgres`).
//!
//! (Its documentation is on [`PostgresStore`].)

mod apply;
mod bulk;
mod cluster;
mod commit;
mod messages;
mod read;
mod schema;
mod takeover;
mod tasks;
mod wake;

use schema::prepare;

#[cfg(test)]
pub(crate) use cluster::Listener;
pub(crate) use messages::Candidate;
pub use takeover::{Handover, Leased};

use std::collections::HashMap;
use std::path::PathBuf;
use std::str::FromStr;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{SystemTime, UNIX_EPOCH};

use postgres::config::Host;
use postgres::error::SqlState;
use postgres::{Client, Config, NoTls, Statement};
use tracing::{debug, info, warn};

use super::StoreError;

/// `meta.magic` of a thresh store.
const MAGIC: &str = "thresh-store";
/// The migrations: `MIGRATIONS[v]` takes a schema from version `v` to `v + 1` (version
/// 0 is an empty schema). Append only; never edit a released one.
const MIGRATIONS: &[&str] = &[
    include_str!("../postgres_v1.sql"),
    include_str!("../postgres_v2.sql"),
    include_str!("../postgres_v3.sql"),
    include_str!("../postgres_v4.sql"),
    include_str!("../postgres_v5.sql"),
    include_str!("../postgres_v6.sql"),
    include_str!("../postgres_v7.sql"),
    include_str!("../postgres_v8.sql"),
];
/// The newest PostgreSQL schema version this build reads and writes.
///
/// Needs the `postgres` feature.
#[cfg_attr(docsrs, doc(cfg(feature = "postgres")))]
pub const PG_SCHEMA_VERSION: u32 = MIGRATIONS.len() as u32;
/// The schema [`PostgresStore::connect`] uses.
///
/// Needs the `postgres` feature.
#[cfg_attr(docsrs, doc(cfg(feature = "postgres")))]
pub const DEFAULT_SCHEMA: &str = "thresh";

/// The store in one schema of a PostgreSQL database.
///
/// ## Where
/// Every table lives in one schema ([`DEFAULT_SCHEMA`], or the one given to
/// [`PostgresStore::connect_schema`]), created if missing, so a store can share a
/// database with the application's own tables, and tests each use a schema of their
/// own. The connection's `search_path` is that schema alone.
///
/// ## Transactions
/// [`Store::apply`](super::Store::apply) is one transaction (`READ COMMITTED`); each
/// write is one statement whose row count tells a refusal apart (a stale or ended
/// checkpoint, a message gone, a duplicate), and the id high-water marks are raised in
/// the same transaction. Any refusal or error rolls the whole batch back. A commit
/// returns once PostgreSQL has made it durable (with the server's
/// `synchronous_commit`, on by default).
///
/// ## One connection
/// The store holds one blocking `postgres::Client` behind a mutex: calls are
/// serialised, reads see every committed write. The client runs a small tokio runtime
/// of its own, which cannot block on an async worker (it panics: "Cannot start a
/// runtime from within a runtime"); so a call made in a tokio context (an async
/// worker, or `spawn_blocking`: the two cannot be told apart) runs on a short-lived
/// scoped thread, and a store dropped in one closes its connection on such a thread.
/// From the [`Writer`](super::Writer)'s thread calls go straight through. Call it
/// from the writer or `spawn_blocking` anyway: every call waits on the network.
///
/// ## Checks at connect (each leaves the schema untouched)
/// Under a transaction-scoped advisory lock on the schema's name (two engines
/// connecting at once migrate it once): a schema with tables but no `meta` table
/// holding thresh's magic is [`StoreError::NotAStore`]; a newer `schema_version` is
/// [`StoreError::NewerSchema`]. Only then are migrations applied, in that transaction.
///
/// ## Lost connections
/// A connection the server closed (restarted, or the backend terminated) is opened
/// again at the next call, retrying for [`RECONNECT_FOR`]; a call that failed because
/// the connection went away before its commit was sent runs again on the new
/// connection (a transaction the server never committed is safe to run again). A
/// connection lost while the commit was on its way is not taken for a failure: every
/// writing transaction first sets its connection's row of `commit_marks` to a number
/// of its own, and the store reads that row on the new connection to learn whether
/// it committed (a session still running it is terminated first, so the answer is
/// final). Committed: the call succeeds, as if the answer had come. Not committed:
/// it runs again. Only if the server cannot be asked within [`RECONNECT_FOR`] does
/// the call fail, with [`StoreError::CommitUnknown`]: the writes may be stored or
/// not. (Not the transaction id and `txid_status`: a crash that loses a commit lets
/// the server give its id to a later transaction, whose outcome it then reports.)
///
/// ## Nodes
/// [`PostgresStore::connect_node`] opens the store as one node of several engines
/// sharing it (`cluster.rs`): each running instance is owned by one node through a
/// lease, and every checkpoint and end the node writes is conditional on the fence it
/// holds the instance with; a write that finds another owner or fence is
/// [`StoreError::Fenced`] and changes nothing.
///
/// ## Schema (version 1)
/// ```sql
#[doc = include_str!("../postgres_v1.sql")]
/// ```
/// ## Schema (version 2: nodes, leases, fences, message claims)
/// ```sql
#[doc = include_str!("../postgres_v2.sql")]
/// ```
/// ## Schema (version 3: the order messages were stored in, running instances by key)
/// ```sql
#[doc = include_str!("../postgres_v3.sql")]
/// ```
/// ## Schema (version 4: commit marks, to learn a lost commit's outcome)
/// ```sql
#[doc = include_str!("../postgres_v4.sql")]
/// ```
/// ## Schema (version 5: instance queries — business key, start and end times, open incidents, waits)
/// ```sql
#[doc = include_str!("../postgres_v5.sql")]
/// ```
/// ## Schema (version 6: the task list)
/// ```sql
#[doc = include_str!("../postgres_v6.sql")]
/// ```
/// ## Schema (version 7: tasks' business keys)
/// ```sql
#[doc = include_str!("../postgres_v7.sql")]
/// ```
/// ## Schema (version 8: the wake index)
/// ```sql
#[doc = include_str!("../postgres_v8.sql")]
/// ```
/// Documents are `json`: PostgreSQL checks they are JSON and keeps their text as
/// written (`jsonb` would re-format it: the records would not read back byte for
/// byte). A fingerprint is the `bigint` with the same 64 bits. PostgreSQL's `text`
/// cannot hold a NUL character: a write with one in a name or key is
/// [`StoreError::Invalid`] here (the other stores take it).
///
/// Needs the `postgres` feature.
#[cfg_attr(docsrs, doc(cfg(feature = "postgres")))]
pub struct PostgresStore {
    /// `postgres://user@host:port/db schema NAME` (no password), for errors and logs.
    location: PathBuf,
    /// How to connect again after the server closed the connection.
    config: Config,
    schema: String,
    inner: Mutex<Option<Inner>>,
    /// Set for a node of several engines: its id and fences.
    node: Option<Arc<cluster::NodeFences>>,
    /// Faults to make at the next commits, in order (tests only).
    faults: Mutex<Vec<CommitFault>>,
}

/// How long a call keeps trying to connect again after the server closed its
/// connection (a restart), before it fails.
///
/// Needs the `postgres` feature.
#[cfg_attr(docsrs, doc(cfg(feature = "postgres")))]
pub const RECONNECT_FOR: std::time::Duration = std::time::Duration::from_secs(30);

/// The connection and its prepared statements.
struct Inner {
    client: Client,
    statements: HashMap<&'static str, Statement>,
    /// The server process of the connection: ended if it still runs a transaction
    /// whose commit answer was lost, so that its outcome becomes known.
    pid: i32,
    /// This connection's row of `commit_marks` (random: unique among connections).
    writer: i64,
    /// The number the last writing transaction set its mark to.
    mark: i64,
}

impl Inner {
    fn new(mut client: Client, location: &std::path::Path) -> Result<Inner, StoreError> {
        let pid = client
            .query_one("SELECT pg_backend_pid()", &[])
            .and_then(|row| row.try_get(0))
            .map_err(|e| pg_error(location, "reading the backend pid", e))?;
        // The marks of connections gone a day ago (a process killed leaves its own).
        if let Err(e) = client.execute(
            "DELETE FROM commit_marks WHERE at < now() - interval '1 day'",
            &[],
        ) {
            debug!(error = %e, "clearing old commit marks failed");
        }
        Ok(Inner {
            client,
            statements: HashMap::new(),
            pid,
            writer: commit::writer_id(pid),
            mark: 0,
        })
    }
}

/// A fault [`PostgresStore::inject_commit_fault`] makes at a commit (for tests).
#[doc(hidden)]
#[derive(Clone, Copy, Debug)]
pub enum CommitFault {
    /// The server commits, then the connection dies before the client reads the
    /// answer: the commit's outcome is lost to the client.
    AnswerLost,
    /// The connection dies before the COMMIT reaches the server: nothing is stored.
    Lost,
    /// The connection is cut before the COMMIT is sent, and the server does not
    /// notice: it still holds the transaction open when the store asks about it.
    Stalled,
    /// The test's `fn` runs right before the COMMIT is sent (say, a crash restart of
    /// the server: the transaction is lost with it).
    Before(fn()),
}

/// What the server says of a transaction whose commit answer was lost.
enum Outcome {
    Committed,
    Aborted,
    Unknown(String),
}

impl std::fmt::Debug for PostgresStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PostgresStore")
            .field("location", &self.location)
            .finish_non_exhaustive()
    }
}

impl PostgresStore {
    /// Connect to the database at `url` (a `postgres://` URL or a `key=value`
    /// connection string; no TLS) and open the store in the schema
    /// [`DEFAULT_SCHEMA`], creating it (and its tables) if missing.
    pub fn connect(url: &str) -> Result<PostgresStore, StoreError> {
        PostgresStore::connect_schema(url, DEFAULT_SCHEMA)
    }

    /// Connect to the database at `url` and open the store in the schema `schema`,
    /// creating it (and its tables) if missing.
    pub fn connect_schema(url: &str, schema: &str) -> Result<PostgresStore, StoreError> {
        let config = Config::from_str(url).map_err(|e| StoreError::Postgres {
            path: PathBuf::from("(unparsable PostgreSQL URL)"),
            doing: "parsing the connection URL",
            source: Arc::new(e),
        })?;
        let location = location(&config, schema);
        let fail = |doing, e| pg_error(&location, doing, e);
        let client = off_runtime(|| config.connect(NoTls))?.map_err(|e| fail("connecting", e))?;
        // (A client that fails here is dropped off the runtime too.)
        let mut inner = off_runtime(|| Inner::new(client, &location))??;
        let created = off_runtime(|| prepare(&mut inner.client, &location, schema, true));
        let created = match created {
            Ok(Ok(created)) => created,
            Ok(Err(e)) | Err(e) => {
                close_off_runtime(inner);
                return Err(e);
            }
        };
        if created {
            info!(location = %location.display(), "created a thresh store");
        } else {
            debug!(location = %location.display(), "opened a thresh store");
        }
        Ok(PostgresStore {
            location,
            config,
            schema: schema.to_string(),
            inner: Mutex::new(Some(inner)),
            node: None,
            faults: Mutex::new(Vec::new()),
        })
    }

    /// Make `fault` happen at the next commit of this store (after those injected
    /// before): the deterministic form of a connection lost while committing.
    #[doc(hidden)]
    pub fn inject_commit_fault(&self, fault: CommitFault) {
        self.faults
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(fault);
    }

    /// How many injected faults have not happened yet.
    #[doc(hidden)]
    pub fn pending_commit_faults(&self) -> usize {
        self.faults.lock().unwrap_or_else(|p| p.into_inner()).len()
    }

    /// Where the store is: `postgres://user@host:port/database schema NAME` (never
    /// the password).
    pub fn location(&self) -> &std::path::Path {
        &self.location
    }

    /// The server process of the store's connection (to kill it in a test).
    #[cfg(test)]
    pub(crate) fn backend_pid(&self) -> i32 {
        self.with(|inner| {
            inner
                .client
                .query_one("SELECT pg_backend_pid()", &[])
                .map(|row| row.get(0))
                .map_err(|e| self.fail("reading the backend pid", e))
        })
        .expect("read the backend pid")
    }

    fn lock(&self) -> MutexGuard<'_, Option<Inner>> {
        // Every transaction rolls back when dropped, so a panic while holding the
        // lock leaves the connection usable.
        self.inner
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Run `f` on the connection, off any tokio runtime's context.
    fn with<T: Send>(
        &self,
        f: impl FnMut(&mut Inner) -> Result<T, StoreError> + Send,
    ) -> Result<T, StoreError> {
        let mut guard = self.lock();
        let Some(inner) = guard.as_mut() else {
            // Only `drop` takes the connection away.
            return Err(StoreError::Io {
                path: self.location.clone(),
                source: Arc::new(std::io::Error::new(
                    std::io::ErrorKind::NotConnected,
                    "the store's connection is closed",
                )),
            });
        };
        off_runtime(|| self.run(inner, f))?
    }

    /// Run `f` on `inner`, connecting again first if the server closed the
    /// connection, and once more if `f` failed on a connection lost before any commit
    /// was sent.
    fn run<T>(
        &self,
        inner: &mut Inner,
        mut f: impl FnMut(&mut Inner) -> Result<T, StoreError>,
    ) -> Result<T, StoreError> {
        let mut retries = 0;
        loop {
            if inner.client.is_closed() {
                self.reconnect(inner)?;
            }
            match f(inner) {
                // Not committed (the commit was not sent, or the server says it did
                // not commit): safe to run again.
                Err(StoreError::Postgres { doing, source, .. })
                    if retries < RETRIES
                        && doing != COMMITTING
                        && (doing == COMMIT_LOST
                            || inner.client.is_closed()
                            || connection_lost(&source)) =>
                {
                    retries += 1;
                    if doing != COMMIT_LOST {
                        // (A lost commit's outcome was read on a new connection.)
                        self.reconnect(inner)?;
                    }
                }
                other => return other,
            }
        }
    }

    /// Open a new connection in place of a closed one, retrying for
    /// [`RECONNECT_FOR`] (a server restarting refuses connections for a while).
    fn reconnect(&self, inner: &mut Inner) -> Result<(), StoreError> {
        let start = std::time::Instant::now();
        let mut pause = std::time::Duration::from_millis(20);
        loop {
            let attempt = self
                .config
                .connect(NoTls)
                .map_err(|e| self.fail("connecting again", e));
            let attempt = attempt.and_then(|mut client| {
                prepare(&mut client, &self.location, &self.schema, false)?;
                Inner::new(client, &self.location)
            });
            match attempt {
                Ok(new) => {
                    info!(location = %self.location.display(), "connected to PostgreSQL again");
                    *inner = new;
                    return Ok(());
                }
                Err(e) if start.elapsed() >= RECONNECT_FOR => return Err(e),
                Err(e) => {
                    debug!(error = %e, "connecting to PostgreSQL again failed; retrying");
                    std::thread::sleep(pause);
                    pause = (pause * 2).min(std::time::Duration::from_millis(500));
                }
            }
        }
    }

    fn fail(&self, doing: &'static str, e: postgres::Error) -> StoreError {
        pg_error(&self.location, doing, e)
    }

    fn corrupt(&self, detail: String) -> StoreError {
        StoreError::Corrupt {
            path: self.location.clone(),
            detail,
        }
    }
}

impl Inner {
    fn statement(
        &mut self,
        sql: &'static str,
        location: &std::path::Path,
    ) -> Result<Statement, StoreError> {
        cached(&mut self.statements, &mut self.client, sql, location)
    }
}

/// The statement for `sql`, prepared once per connection.
fn cached(
    statements: &mut HashMap<&'static str, Statement>,
    client: &mut impl postgres::GenericClient,
    sql: &'static str,
    location: &std::path::Path,
) -> Result<Statement, StoreError> {
    if let Some(statement) = statements.get(sql) {
        return Ok(statement.clone());
    }
    let statement = client
        .prepare(sql)
        .map_err(|e| pg_error(location, "preparing a statement", e))?;
    statements.insert(sql, statement.clone());
    Ok(statement)
}

impl Drop for PostgresStore {
    fn drop(&mut self) {
        let inner = self
            .inner
            .get_mut()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .take();
        if let Some(inner) = inner {
            close_off_runtime(inner);
        }
    }
}

/// Whether `e` says the connection is gone: closed, or the server ended the
/// session (shut down, restarting, the backend terminated).
fn connection_lost(e: &postgres::Error) -> bool {
    if e.is_closed() {
        return true;
    }
    let Some(code) = e.code() else {
        // An I/O error on the socket.
        return e.as_db_error().is_none()
            && std::error::Error::source(e).is_some_and(|s| s.is::<std::io::Error>());
    };
    let code = code.code();
    // Class 57P: operator intervention (admin/crash shutdown, cannot connect now);
    // class 08: connection exceptions.
    code.starts_with("57P") || code.starts_with("08")
}

/// `doing` of a commit the server refused: not stored, and not run again (the
/// refusal would be the same).
pub(super) const COMMITTING: &str = "committing";
/// `doing` of a commit whose answer was lost and that the server says it did not
/// commit: nothing was stored, so it runs again.
const COMMIT_LOST: &str = "committing (the connection was lost; the server did not commit)";
/// How many times a call that stored nothing runs again after a lost connection.
const RETRIES: u32 = 3;

/// Run `f` here, or on a scoped thread if this thread is in a tokio runtime's context
/// (where the client's own runtime cannot block).
fn off_runtime<T: Send>(f: impl FnOnce() -> T + Send) -> Result<T, StoreError> {
    if tokio::runtime::Handle::try_current().is_err() {
        return Ok(f());
    }
    std::thread::scope(|scope| {
        let thread = std::thread::Builder::new()
            .name("thresh-postgres".into())
            .spawn_scoped(scope, f)
            .map_err(|e| StoreError::Io {
                path: PathBuf::new(),
                source: Arc::new(e),
            })?;
        match thread.join() {
            Ok(value) => Ok(value),
            Err(panic) => std::panic::resume_unwind(panic),
        }
    })
}

/// Close a connection (its runtime cannot be dropped in a tokio context either).
fn close_off_runtime(mut inner: Inner) {
    let close = move || {
        // Its commit mark is not needed once it is closed.
        let removed = inner.client.execute(
            "DELETE FROM commit_marks WHERE writer = $1",
            &[&inner.writer],
        );
        if let Err(e) = removed {
            debug!(error = %e, "removing the commit mark failed");
        }
        if let Err(e) = inner.client.close() {
            debug!(error = %e, "closing the PostgreSQL connection failed");
        }
    };
    if let Err(e) = off_runtime(close) {
        debug!(error = %e, "could not close the PostgreSQL connection");
    }
}

/// `postgres://user@host:port/database schema NAME`, without the password.
fn location(config: &Config, schema: &str) -> PathBuf {
    let host = match config.get_hosts().first() {
        Some(Host::Tcp(name)) => name.clone(),
        Some(Host::Unix(dir)) => dir.display().to_string(),
        None => "localhost".into(),
    };
    let port = config.get_ports().first().copied().unwrap_or(5432);
    let user = config.get_user().unwrap_or("");
    let db = config.get_dbname().unwrap_or(user);
    PathBuf::from(format!(
        "postgres://{user}@{host}:{port}/{db} schema {schema}"
    ))
}

/// `name` as a quoted SQL identifier.
fn quote_ident(name: &str) -> String {
    format!("\"{}\"", name.replace('"', "\"\""))
}

/// A PostgreSQL error as a store error, by its cause.
fn pg_error(location: &std::path::Path, doing: &'static str, e: postgres::Error) -> StoreError {
    let path = location.to_path_buf();
    if e.code() == Some(&SqlState::DISK_FULL) {
        return StoreError::DiskFull { path };
    }
    StoreError::Postgres {
        path,
        doing,
        source: Arc::new(e),
    }
}

/// An id or seq that [`check`](super::check) has bounded to `i64`.
fn to_i64(n: u64) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

use crate::query::now_ms;
