//! [`StoreError`]: what a store refuses or fails with, each naming its cause and
//! what to do.

use std::path::PathBuf;
use std::sync::Arc;

use super::Write;

/// What went wrong in a store. Each message says what is wrong and what to do.
#[derive(Clone, Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StoreError {
    /// The file is not a SQLite database, or is one that is not a thresh store (for
    /// PostgreSQL: the schema has tables, and no thresh `meta`).
    #[error(
        "{} is not a thresh store (not a SQLite database, or a database or schema \
         another program made); \
         it was left untouched: open a new path, or the store you meant",
        .path.display()
    )]
    NotAStore {
        /// The file.
        path: PathBuf,
    },
    /// The store was written by a newer thresh.
    #[error(
        "{} has store schema {found}, newer than the {supported} this thresh supports; \
         it was left untouched: run a newer thresh on it (or restore an older backup)",
        .path.display()
    )]
    NewerSchema {
        /// The file.
        path: PathBuf,
        /// The schema version found in it.
        found: u32,
        /// The newest this build supports.
        supported: u32,
    },
    /// Another running engine holds the store.
    #[error(
        "{} is held by another running engine (in this or another process); \
         it was left untouched: stop that engine first, or open another file",
        .path.display()
    )]
    Locked {
        /// The file.
        path: PathBuf,
    },
    /// The file is damaged.
    #[error(
        "{} is corrupted ({detail}); it was left untouched: restore it from a backup \
         (`sqlite3 FILE .recover` may save part of it)",
        .path.display()
    )]
    Corrupt {
        /// The file.
        path: PathBuf,
        /// What SQLite found.
        detail: String,
    },
    /// The disk (or the store's size limit) is full; the failed writes were not stored.
    #[error(
        "the disk holding {} is full (or the store reached its size limit); \
         the writes were not stored: free space and retry",
        .path.display()
    )]
    DiskFull {
        /// The file.
        path: PathBuf,
    },
    /// An I/O error outside SQLite (reading the file's header, creating a thread).
    #[error("I/O error on {}: {source}; check the disk and the file's permissions", .path.display())]
    Io {
        /// The file (empty for a thread that could not start).
        path: PathBuf,
        /// The error.
        #[source]
        source: Arc<std::io::Error>,
    },
    /// Any other SQLite error.
    ///
    /// Needs the `sqlite` feature.
    #[cfg(feature = "sqlite")]
    #[error("SQLite failed on {} while {doing}: {source}", .path.display())]
    #[cfg_attr(docsrs, doc(cfg(feature = "sqlite")))]
    Sqlite {
        /// The file.
        path: PathBuf,
        /// What the store was doing.
        doing: &'static str,
        /// The error.
        #[source]
        source: Arc<rusqlite::Error>,
    },
    /// Any PostgreSQL error (connecting, a lost connection, a failed statement).
    ///
    /// Needs the `postgres` feature.
    #[cfg(feature = "postgres")]
    #[error(
        "PostgreSQL failed on {} while {doing}: {source}; check that the server runs and \
         the URL (host, port, user, database) is right",
        .path.display()
    )]
    #[cfg_attr(docsrs, doc(cfg(feature = "postgres")))]
    Postgres {
        /// Where: `postgres://user@host:port/database schema NAME` (no password).
        path: PathBuf,
        /// What the store was doing.
        doing: &'static str,
        /// The error.
        #[source]
        source: Arc<::postgres::Error>,
    },
    /// A write that no store accepts (not JSON, an id beyond `i64`, ...).
    #[error("invalid {kind} write: {reason}; nothing of its batch was stored")]
    Invalid {
        /// The write's kind ([`Write::kind`]).
        kind: &'static str,
        /// What is wrong with it.
        reason: String,
    },
    /// A checkpoint not newer than the stored one.
    #[error(
        "stale checkpoint of instance {id}: seq {given} is not greater than the stored \
         {stored}; nothing of its batch was stored"
    )]
    StaleCheckpoint {
        /// The instance.
        id: u64,
        /// The stored seq.
        stored: u64,
        /// The rejected seq.
        given: u64,
    },
    /// A write for an instance the store does not have.
    #[error("instance {id} is not in the store; nothing of its batch was stored")]
    UnknownInstance {
        /// The instance.
        id: u64,
    },
    /// A checkpoint or an end for an instance that has ended.
    #[error("instance {id} has ended and takes no more writes; nothing of its batch was stored")]
    InstanceEnded {
        /// The instance.
        id: u64,
    },
    /// A consume of a message that is not buffered (consumed, dropped or expired).
    #[error(
        "message {id} is not buffered (consumed already, dropped or expired), so it cannot \
         be consumed; nothing of its batch was stored"
    )]
    MessageGone {
        /// The message.
        id: u64,
    },
    /// A buffered message with this id exists.
    #[error("message {id} is buffered already; nothing of its batch was stored")]
    DuplicateMessage {
        /// The message.
        id: u64,
    },
    /// A timer tick computed from a schedule that is not the stored one any more:
    /// another engine node sharing the store fired that tick first.
    #[error(
        "the timer start `{start}` of deployment {deployment} was advanced by another \
         engine first; nothing of its batch was stored: read the stored schedule and go \
         on from it"
    )]
    TickTaken {
        /// The deployment.
        deployment: u64,
        /// The timer start event's id.
        start: String,
    },
    /// The connection to the server was lost while a batch's commit was on its way,
    /// and the server could not be asked whether it committed (it did not answer
    /// again within `RECONNECT_FOR`, 30 s): the batch may be
    /// stored, or not. Read back what it wrote (an instance by its id, with
    /// `DurableEngine::instance` or `watch`) before doing it again.
    #[error(
        "the connection to {} was lost while a batch was committing, and whether it was \
         stored could not be learned ({reason}): its writes may be stored or not; read \
         them back (an instance by its id) before doing them again",
        .path.display()
    )]
    CommitUnknown {
        /// Where: `postgres://user@host:port/database schema NAME` (no password).
        path: PathBuf,
        /// Why the outcome could not be learned.
        reason: String,
    },
    /// The writer stopped before it applied the write.
    #[error("the store writer has stopped, so the write was not stored")]
    WriterStopped,
    /// The store implementation panicked (a bug); the batch's outcome is unknown.
    #[error("the store panicked while applying a batch ({reason}); the batch may not be stored")]
    Panicked {
        /// The panic's message.
        reason: String,
    },
    /// A node's checkpoint or end of an instance another node owns now (its lease
    /// expired and it was taken over): nothing of its batch was stored, and this node
    /// must stop running the instance — the new owner goes on with it.
    #[error(
        "instance {id} moved to another node (owner {}, fence {fence}; this node held \
         fence {held}): this node's write was refused and it stops running the instance, \
         the new owner goes on with it",
        .owner.as_deref().unwrap_or("none")
    )]
    Fenced {
        /// The instance.
        id: u64,
        /// Its owner now.
        owner: Option<String>,
        /// The fence the owner holds it with.
        fence: i64,
        /// The fence this node held it with.
        held: i64,
    },
}

impl StoreError {
    pub(crate) fn invalid(write: &Write, reason: impl Into<String>) -> StoreError {
        StoreError::Invalid {
            kind: write.kind(),
            reason: reason.into(),
        }
    }
}
