//! The storage layer durable engines write through (feature `durable`; the SQLite
//! file store needs feature `sqlite`, the PostgreSQL store feature `postgres`).
//!
//! The store knows nothing of an instance's types: it keeps **records** — a few
//! columns recovery and queries need (ids, process name and fingerprint, status,
//! correlation and business key, checkpoint number, timestamps, open incidents, the
//! elements its tokens wait at) beside opaque JSON documents (the instance's state,
//! its outcome, a message's payload, a deployment's data). The engine serialises; the
//! store only checks that a document is JSON, so a person can read a store with
//! `sqlite3` and no record holds text the engine cannot parse back.
//!
//! - [`Store`] — one synchronous trait: [`Store::apply`] runs a batch of [`Write`]s as
//!   ONE transaction (all or nothing), and a few reads for recovery and queries.
//!   [`MemoryStore`] is the reference semantics (and the store for tests);
//!   `SqliteStore` (feature `sqlite`) keeps them in one SQLite file,
//!   `PostgresStore` (feature `postgres`) in one schema of a PostgreSQL database.
//! - [`Writer`] — one per store: a dedicated thread that takes everything queued,
//!   coalesces the checkpoints of one instance, applies it as one transaction (group
//!   commit) and resolves each submitter's [`Receipt`] once its writes are durable.
//!
//! ## The rules every store follows
//! - `Put` creates or replaces an instance's record. A replacement must have a
//!   greater `seq` than the stored one ([`StoreError::StaleCheckpoint`]) and the stored
//!   instance must still be running ([`StoreError::InstanceEnded`]); so an old snapshot
//!   can never overwrite a newer one.
//! - `Consume` deletes a buffered message and fails with [`StoreError::MessageGone`] if
//!   it is not buffered: put it in the same batch as the checkpoint that records the
//!   message's effect, and the message is applied exactly once — either both are
//!   stored or neither is (then the message is still buffered and is redelivered).
//! - An ended instance keeps its last checkpointed `state` (its data stays queryable)
//!   and gets its `outcome` (JSON) in the record's own column: the state is the loop's
//!   snapshot, the outcome is what the instance's handle reports. Its `updated_ms` is
//!   the time it ended; [`Write::Purge`] removes ended instances older than a retention.
//! - Ids are never reused: every store keeps a high-water mark of the instance,
//!   message and deployment ids it has seen ([`Store::next_ids`]), raised in the same
//!   transaction as the write that uses an id and kept when the record is purged.
//! - Ids and `seq` must fit in an `i64` (SQLite's integer); a fingerprint is any `u64`.
//! - Reads return records ordered by id; [`Store::query`] in the query's order.
//! - A record's `waits` are its last put's; an end clears them and its `incidents`.
//!   Its `business_key` and `started_ms` are what every put carries (the engine
//!   writes the same in each).

mod error;
mod memory;
#[cfg(feature = "postgres")]
mod postgres;
#[cfg(any(feature = "sqlite", feature = "postgres"))]
mod sql;
#[cfg(feature = "sqlite")]
mod sqlite;
mod tasks;
mod tick;
mod wake;
mod writer;

#[cfg(test)]
mod tests;

use serde::{Deserialize, Serialize};

pub use crate::query::{After, InstanceQuery, SortBy, Status};
pub use error::StoreError;
pub use memory::MemoryStore;
#[cfg(feature = "postgres")]
pub(crate) use postgres::Candidate;
#[cfg(feature = "postgres")]
pub use postgres::{
    CommitFault, Handover, Leased, PostgresStore, DEFAULT_SCHEMA, PG_SCHEMA_VERSION, RECONNECT_FOR,
};
#[cfg(feature = "sqlite")]
pub use sqlite::{SqliteOptions, SqliteStore, SCHEMA_VERSION};
pub use tasks::TaskRecord;
// The SQL stores' due bound (sql.rs), unused on `durable` alone.
#[cfg(any(feature = "sqlite", feature = "postgres"))]
pub(crate) use tasks::due_before_ms;
pub(crate) use tasks::select as select_tasks;
pub use tick::{parse_anchors, stored_tick, TimerAnchors, TimerTick};
pub use writer::{Receipt, Writer, WriterConfig, WriterStats};

/// One instance's checkpoint: what recovery needs to find and resume it, and its
/// state as an opaque JSON document.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct InstanceRecord {
    /// The instance id (unique for the store's lifetime).
    pub id: u64,
    /// The process's name.
    pub process: String,
    /// The model fingerprint the instance was started under.
    pub fingerprint: u64,
    /// Running, or how it ended.
    pub status: Status,
    /// The instance's correlation key, if it has one.
    pub key: Option<String>,
    /// Checkpoint number: greater at every checkpoint of the instance.
    pub seq: u64,
    /// JSON of the instance's state (data, tracks, joins, waits, ...), opaque here.
    pub state: String,
    /// JSON of the outcome, for an ended instance (`None` while running).
    pub outcome: Option<String>,
    /// When this record was written (for an ended instance: when it ended), in
    /// milliseconds since the Unix epoch.
    pub updated_ms: i64,
    /// The business key it was started with (`start_keyed`), if any: the caller's
    /// name for it (an order number), not a correlation key.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub business_key: Option<String>,
    /// When it started, in milliseconds since the Unix epoch (the same in every
    /// checkpoint of an instance).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub started_ms: i64,
    /// The ids of the elements its tokens wait at in this checkpoint (catches,
    /// receive and user tasks, joins, call activities, tokens held at an incident or
    /// a backoff), each once, sorted; the stores keep them in an indexed side table.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub waits: Vec<String>,
    /// How many incidents are open in this checkpoint.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub incidents: u32,
    /// What can wake it while it is not in memory (a running instance's; an end
    /// clears it). The stores index it: [`Store::due_after`],
    /// [`Store::waiting_for_message`], [`Store::waiting_for_signal`],
    /// [`Store::to_load`], [`Store::resting`].
    #[serde(default, skip_serializing_if = "is_zero")]
    pub wake: WakeIndex,
}

/// What can wake a running instance that is not in memory, as its last checkpoint
/// says: written in the checkpoint's transaction, indexed by the stores.
/// The default (`at_rest: false`) says it has work now: a resume loads it.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct WakeIndex {
    /// Its armed message subscriptions: (message name, correlation key), sorted,
    /// each once.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub messages: Vec<(String, String)>,
    /// Its armed signal subscriptions' names, sorted, each once.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub signals: Vec<String>,
    /// Its earliest timer's due time (a catch, a boundary, a backoff), in
    /// milliseconds since the Unix epoch.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub due_ms: Option<i64>,
    /// Every token waits — for what this index names, a user task, a join, an
    /// incident —, no task runs or is due to start, and it is no call activity's
    /// parent or child: nothing to do until something wakes it. `false` (a birth
    /// record, a task under way, a record of before the index): a resume loads it.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub at_rest: bool,
}

/// A running instance as [`Store::resting`] lists one that is at rest: what an
/// engine keeps of it without reading its checkpoint.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Resting {
    /// The instance id.
    pub id: u64,
    /// The process's name.
    pub process: String,
    /// The model fingerprint it runs under.
    pub fingerprint: u64,
    /// Its correlation key, if it has one.
    pub key: Option<String>,
    /// Its earliest timer's due time, in milliseconds since the Unix epoch.
    pub due_ms: Option<i64>,
    /// Whether it has a message subscription.
    pub messages: bool,
    /// Whether it has a signal subscription.
    pub signals: bool,
}

fn is_zero<N: Default + PartialEq>(n: &N) -> bool {
    *n == N::default()
}

impl InstanceRecord {
    /// When it ended (its `updated_ms`), if it did.
    pub fn ended_ms(&self) -> Option<i64> {
        self.status.is_ended().then_some(self.updated_ms)
    }
}

impl crate::query::Row for InstanceRecord {
    fn id(&self) -> u64 {
        self.id
    }
    fn process(&self) -> &str {
        &self.process
    }
    fn fingerprint(&self) -> u64 {
        self.fingerprint
    }
    fn status(&self) -> Status {
        self.status
    }
    fn waits_at(&self, node: &str) -> bool {
        self.waits.iter().any(|w| w == node)
    }
    fn business_key(&self) -> Option<&str> {
        self.business_key.as_deref()
    }
    fn key(&self) -> Option<&str> {
        self.key.as_deref()
    }
    fn incidents(&self) -> u32 {
        self.incidents
    }
    fn started_ms(&self) -> i64 {
        self.started_ms
    }
    fn ended_ms(&self) -> Option<i64> {
        InstanceRecord::ended_ms(self)
    }
}

/// A message the broker buffered for a catch that is not armed yet.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct MessageRecord {
    /// The message id (unique for the store's lifetime).
    pub id: u64,
    /// The message name.
    pub name: String,
    /// Its correlation key.
    pub key: String,
    /// JSON of the payload.
    pub payload: String,
    /// When it expires, in milliseconds since the Unix epoch.
    pub expires_ms: i64,
}

/// A deployment: a process whose start events (message, signal, timer starts) the
/// engine keeps armed.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct DeploymentRecord {
    /// The deployment id (unique for the store's lifetime).
    pub id: u64,
    /// The process's name.
    pub process: String,
    /// The model fingerprint it was deployed under.
    pub fingerprint: u64,
    /// JSON of the deployment's settings (initial data and the like).
    pub data: String,
    /// JSON of the timer-start schedules' state (anchors, counts).
    pub timer_anchors: String,
}

/// The next free id of each kind: every id below it was used at some point (maybe by
/// a record purged since) and must not be handed out again.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Ids {
    /// The next free instance id.
    pub instance: u64,
    /// The next free message id.
    pub message: u64,
    /// The next free deployment id.
    pub deployment: u64,
}

/// One change to the store. A batch of them is applied as one transaction by
/// [`Store::apply`].
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Write {
    /// Checkpoint an instance: create its record, or replace it with a greater `seq`.
    Put(InstanceRecord),
    /// A buffered message was applied: delete it. Fails if it is not buffered.
    Consume {
        /// The message id.
        message: u64,
    },
    /// End a running instance, keeping its last state.
    End {
        /// The instance id.
        id: u64,
        /// How it ended (not `Running`).
        status: Status,
        /// JSON of the outcome.
        outcome: Option<String>,
        /// When it ended, in milliseconds since the Unix epoch.
        at_ms: i64,
    },
    /// Buffer a message. Fails if one with its id is buffered.
    Buffer(MessageRecord),
    /// Drop a buffered message (no error if it is gone already).
    DropMessage {
        /// The message id.
        id: u64,
    },
    /// Drop the buffered messages named one of `names` with `key` that no engine
    /// node holds a claim on: a parallel instantiating gateway's arm repeats, stale
    /// once the instance with their key ended (written with its end).
    DropStale {
        /// The arms' message names.
        names: Vec<String>,
        /// The ended instance's correlation key.
        key: String,
    },
    /// Drop every buffered message with `expires_ms <= now_ms`.
    Expire {
        /// The current time, in milliseconds since the Unix epoch.
        now_ms: i64,
    },
    /// Create or replace a deployment.
    PutDeployment(DeploymentRecord),
    /// Advance the stored schedule of one timer start of `deployment` from `from` (as
    /// the ticker read it; `None`: not stored yet) to `to` — a compare-and-set:
    /// [`StoreError::TickTaken`] if the stored schedule is another (an engine node
    /// sharing the store fired that tick first). Creates the deployment's record from
    /// `deployment` (its `timer_anchors` ignored) if it is not stored.
    Tick {
        /// The deployment, as created if missing.
        deployment: DeploymentRecord,
        /// The timer start event's id.
        start: String,
        /// The schedule the tick was computed from.
        from: Option<TimerTick>,
        /// The schedule after the tick.
        to: TimerTick,
    },
    /// Remove a deployment (no error if it is gone already).
    RemoveDeployment {
        /// The deployment id.
        id: u64,
    },
    /// The running instance `instance`'s open user tasks are `open` (written with
    /// the checkpoint that opened or closed one): rows of others are deleted, new
    /// ones inserted, and the rest kept as they are (with their claims). An `End`
    /// deletes the instance's rows.
    Tasks {
        /// The instance id.
        instance: u64,
        /// Its open tasks (each with this instance id).
        open: Vec<TaskRecord>,
    },
    /// Remove every ended instance whose `updated_ms` is before `ended_before_ms`.
    Purge {
        /// The cut-off, in milliseconds since the Unix epoch.
        ended_before_ms: i64,
    },
}

impl Write {
    /// A short name of the write's kind, for logs.
    pub fn kind(&self) -> &'static str {
        match self {
            Write::Put(_) => "put",
            Write::Consume { .. } => "consume",
            Write::End { .. } => "end",
            Write::Buffer(_) => "buffer",
            Write::DropMessage { .. } => "drop-message",
            Write::DropStale { .. } => "drop-stale",
            Write::Expire { .. } => "expire",
            Write::PutDeployment(_) => "put-deployment",
            Write::Tick { .. } => "tick",
            Write::RemoveDeployment { .. } => "remove-deployment",
            Write::Tasks { .. } => "tasks",
            Write::Purge { .. } => "purge",
        }
    }
}

/// The store's contract. Object safe; every call is synchronous (a `SqliteStore`
/// blocks on the disk): call it from the [`Writer`]'s thread or from
/// `tokio::task::spawn_blocking`, not on an async worker.
pub trait Store: Send + Sync {
    /// Apply `batch` as ONE transaction: every write or none. An empty batch is a
    /// no-op.
    fn apply(&self, batch: &[Write]) -> Result<(), StoreError>;

    /// Every running instance, by id.
    fn running(&self) -> Result<Vec<InstanceRecord>, StoreError> {
        self.list(None, Some(Status::Running))
    }

    /// The instance `id`, if stored.
    fn instance(&self, id: u64) -> Result<Option<InstanceRecord>, StoreError>;

    /// The instances of `process` (any if `None`) with `status` (any if `None`), by id.
    fn list(
        &self,
        process: Option<&str>,
        status: Option<Status>,
    ) -> Result<Vec<InstanceRecord>, StoreError>;

    /// The instances `query` selects, in its order, at most its `limit`. The
    /// default reads every record (the reference semantics, [`MemoryStore`]'s);
    /// the SQL stores answer from their indexes.
    fn query(&self, query: &InstanceQuery) -> Result<Vec<InstanceRecord>, StoreError> {
        Ok(query.select(self.list(query.process.as_deref(), None)?))
    }

    /// How many instances `query` selects (its order, cursor, offset and limit
    /// ignored).
    fn count(&self, query: &InstanceQuery) -> Result<u64, StoreError> {
        let all = self.list(query.process.as_deref(), None)?;
        Ok(all.iter().filter(|r| query.matches(*r)).count() as u64)
    }

    /// Every buffered message, by id.
    fn messages(&self) -> Result<Vec<MessageRecord>, StoreError>;

    /// Every deployment, by id.
    fn deployments(&self) -> Result<Vec<DeploymentRecord>, StoreError>;

    /// The next free id of each kind (ids are never reused, even after a purge or a
    /// restart).
    fn next_ids(&self) -> Result<Ids, StoreError>;

    /// The open user tasks `query` selects, in its order and page (on a node of
    /// several, every node's).
    fn tasks(&self, query: &crate::tasklist::TaskQuery) -> Result<Vec<TaskRecord>, StoreError>;

    /// `user` claims the open task `number` of instance `instance` (`None`: whoever
    /// holds it lets it go) — unless another user holds it. Its row after, `None` if
    /// no such task is open: a claim refused leaves another's name in `claimed_by`.
    fn claim_task(
        &self,
        instance: u64,
        number: u32,
        user: Option<&str>,
    ) -> Result<Option<TaskRecord>, StoreError>;

    /// The running instances whose earliest timer is due at or before `at_ms`, as
    /// (due time, id), earliest first, at most `limit`.
    fn due(&self, at_ms: i64, limit: usize) -> Result<Vec<(i64, u64)>, StoreError> {
        self.due_after(None, at_ms, limit)
    }

    /// As [`due`](Store::due), only those after `after` in its order (due time,
    /// then id): a cursor, so the due are read a page at a time and each once (the
    /// durable engine's one timer for its evicted instances pages through them).
    /// The default reads every record (the reference semantics); the SQL stores
    /// answer from their index on `(due_ms, id)`.
    fn due_after(
        &self,
        after: Option<(i64, u64)>,
        at_ms: i64,
        limit: usize,
    ) -> Result<Vec<(i64, u64)>, StoreError> {
        Ok(wake::due(self.running()?.iter(), after, at_ms, limit))
    }

    /// The earliest due time of a running instance's timer.
    fn next_due(&self) -> Result<Option<i64>, StoreError> {
        Ok(self.due(i64::MAX, 1)?.first().map(|&(at, _)| at))
    }

    /// The running instances with an armed subscription to message `name` with
    /// correlation key `key`, by id.
    fn waiting_for_message(&self, name: &str, key: &str) -> Result<Vec<u64>, StoreError> {
        Ok(wake::for_message(&self.running()?, name, key))
    }

    /// The running instances with an armed subscription to signal `name` and an
    /// id greater than `after` (any, if `None`), by id, at most `limit` (a signal
    /// to many wakes them a page at a time).
    fn waiting_for_signal(
        &self,
        name: &str,
        after: Option<u64>,
        limit: usize,
    ) -> Result<Vec<u64>, StoreError> {
        Ok(wake::for_signal(&self.running()?, name, after, limit))
    }

    /// What a resume at `now_ms` loads: the running instances with work now — not
    /// at rest, a timer due, a buffered message for one of their subscriptions —,
    /// whole records, by id.
    fn to_load(&self, now_ms: i64) -> Result<Vec<InstanceRecord>, StoreError> {
        Ok(wake::to_load(self.running()?, &self.messages()?, now_ms))
    }

    /// The running instances at rest with an id greater than `after` (any, if
    /// `None`), by id, at most `limit`: what finds each again, not its checkpoint
    /// (a resume reads them a page at a time). Those [`to_load`](Store::to_load)
    /// lists are among them too.
    fn resting(&self, after: Option<u64>, limit: usize) -> Result<Vec<Resting>, StoreError> {
        Ok(wake::resting(self.running()?.iter(), after, limit))
    }

    /// Whether the store has upkeep to do when its [`Writer`] is idle (see
    /// [`idle`](Store::idle)). The default has none.
    fn wants_idle(&self) -> bool {
        false
    }

    /// Upkeep done by the [`Writer`]'s thread once nothing has been submitted for a
    /// moment (`WriterConfig::idle`), so that it stays off the commits' path: the
    /// SQLite store checkpoints its write-ahead log here (a checkpoint that a commit
    /// ran would add its copy and fsync to that commit). An error is logged; the
    /// writes go on.
    fn idle(&self) -> Result<(), StoreError> {
        Ok(())
    }
}

/// Checks every store makes of a write before applying it, so that all stores accept
/// and refuse the same writes.
pub(crate) fn check(write: &Write) -> Result<(), StoreError> {
    let id = |what: &str, n: u64| {
        if i64::try_from(n).is_ok() {
            Ok(())
        } else {
            Err(StoreError::invalid(
                write,
                format!("{what} {n} is beyond i64::MAX"),
            ))
        }
    };
    let json = |what: &str, text: &str| {
        serde_json::from_str::<serde::de::IgnoredAny>(text)
            .map(|_| ())
            .map_err(|e| StoreError::invalid(write, format!("{what} is not JSON: {e}")))
    };
    match write {
        Write::Put(r) => {
            id("instance id", r.id)?;
            id("seq", r.seq)?;
            json("state", &r.state)?;
            match (&r.outcome, r.status) {
                (Some(_), Status::Running) => {
                    return Err(StoreError::invalid(
                        write,
                        "a running instance has no outcome",
                    ))
                }
                (Some(o), _) => json("outcome", o)?,
                (None, _) => {}
            }
        }
        Write::Consume { message } => id("message id", *message)?,
        Write::End {
            id: i,
            status,
            outcome,
            ..
        } => {
            id("instance id", *i)?;
            if *status == Status::Running {
                return Err(StoreError::invalid(write, "an end needs an ended status"));
            }
            if let Some(o) = outcome {
                json("outcome", o)?;
            }
        }
        Write::Buffer(m) => {
            id("message id", m.id)?;
            json("payload", &m.payload)?;
        }
        Write::DropMessage { id: i } => id("message id", *i)?,
        Write::PutDeployment(d) => {
            id("deployment id", d.id)?;
            json("data", &d.data)?;
            json("timer anchors", &d.timer_anchors)?;
        }
        Write::Tick { deployment, .. } => {
            id("deployment id", deployment.id)?;
            json("data", &deployment.data)?;
        }
        Write::RemoveDeployment { id: i } => id("deployment id", *i)?,
        Write::Tasks { instance, open } => {
            id("instance id", *instance)?;
            if open.iter().any(|t| t.instance != *instance) {
                return Err(StoreError::invalid(
                    write,
                    "a task of another instance among the instance's tasks",
                ));
            }
        }
        Write::DropStale { .. } | Write::Expire { .. } | Write::Purge { .. } => {}
    }
    Ok(())
}

/// Raise `next` past the ids `write` uses.
pub(crate) fn raise_ids(next: &mut Ids, write: &Write) {
    let raise = |slot: &mut u64, id: u64| *slot = (*slot).max(id.saturating_add(1));
    match write {
        Write::Put(r) => raise(&mut next.instance, r.id),
        Write::Buffer(m) => raise(&mut next.message, m.id),
        Write::PutDeployment(d) | Write::Tick { deployment: d, .. } => {
            raise(&mut next.deployment, d.id)
        }
        _ => {}
    }
}

/// A stored message's time-to-live ran out before any catch took it: it leaves the
/// store, said at warn (the business may have lost an event: a misspelt name or
/// key, or a catch that came too late — the broker's time-to-live is settable).
pub(crate) fn expired_message(name: &str, key: &str) {
    tracing::warn!(
        message = name,
        key,
        "a stored message expired untaken: removed"
    );
}
