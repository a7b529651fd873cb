//! A [`PostgresStore`] as one node of several engines sharing one store: leases,
//! fences, handovers, message claims and the notification channels.
//!
//! - **Ownership.** A running instance belongs to the node in its `owner` column
//!   until `lease_until` (the server's clock, so nodes need not agree on time). A
//!   node renews all its leases — and its message claims — in one statement
//!   ([`PostgresStore::renew`]).
//! - **Fences.** `fence` grows by one at every change of owner. A node writes an
//!   instance's checkpoint or end only `WHERE owner = node AND fence = the fence it
//!   holds` (1 for an instance it started; the one [`PostgresStore::take_over`]
//!   returned otherwise). A write that matches no row because another node holds the
//!   instance is [`StoreError::Fenced`]: its whole batch rolls back, so a node that
//!   lost a lease can never overwrite the new owner's checkpoint, nor consume a
//!   message for it.
//! - **Takeover** moves expired leases (and instances no node ever owned) to the
//!   calling node in one statement, `fence + 1`, a `handovers` row each, in batches
//!   (`FOR UPDATE SKIP LOCKED`: two nodes taking over at once take disjoint sets).
//! - **Messages** are claimed by one node before it delivers them (`messages.rs`)
//!   for one lease length: the receiving
//!   instance consumes it at its next checkpoint, long before; a claim of a node
//!   that died, or whose instance moved, expires and another node claims it.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use postgres::fallible_iterator::FallibleIterator;
use postgres::types::ToSql;
use postgres::{Client, NoTls, Statement};
use tracing::debug;

use super::super::{Status, StoreError, Write};
use super::{cached, off_runtime, to_i64, PostgresStore};

/// A node's identity and the fences it holds instances with (shared by the node's
/// connections).
#[derive(Debug)]
pub(crate) struct NodeFences {
    /// The node id (unique per engine process: never reused).
    pub(crate) node: String,
    /// Lease length, in milliseconds.
    pub(crate) lease_ms: i64,
    /// Instances this node took over: the fence it took each with. An instance not
    /// here is one this node started (fence 1).
    pub(super) fences: Mutex<HashMap<u64, i64>>,
    /// Held across a renewal and its pruning of `fences`, and across a takeover and
    /// its recording of them, so a renewal read before a takeover cannot prune it.
    pub(super) ownership: Mutex<()>,
}

impl NodeFences {
    pub(super) fn fence(&self, id: u64) -> i64 {
        let fences = self.fences.lock().unwrap_or_else(|p| p.into_inner());
        fences.get(&id).copied().unwrap_or(1)
    }
}

/// The store's notification channel names: derived from the schema (FNV-1a), so two
/// stores in one database do not wake each other, and short enough for a
/// PostgreSQL identifier.
pub(crate) fn channels(schema: &str) -> (String, String) {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for byte in schema.bytes() {
        hash ^= u64::from(byte);
        hash = hash.wrapping_mul(0x0100_0000_01b3);
    }
    (
        format!("thresh_messages_{hash:016x}"),
        format!("thresh_signals_{hash:016x}"),
    )
}

/// How many leases one transaction of a renewal renews ([`PostgresStore::renew`]).
const RENEWED_AT_ONCE: usize = 500;

impl PostgresStore {
    /// Connect to the store at `url`, schema `schema`, as the node `node` of several
    /// engines sharing it, holding leases for `lease`. Its checkpoints and ends are
    /// fenced (see the module's documentation in `cluster.rs`).
    pub fn connect_node(
        url: &str,
        schema: &str,
        node: &str,
        lease: Duration,
    ) -> Result<PostgresStore, StoreError> {
        let mut store = PostgresStore::connect_schema(url, schema)?;
        store.node = Some(Arc::new(NodeFences {
            node: node.to_string(),
            lease_ms: i64::try_from(lease.as_millis()).unwrap_or(i64::MAX),
            fences: Mutex::new(HashMap::new()),
            ownership: Mutex::new(()),
        }));
        Ok(store)
    }

    /// Another connection to the same store, as the same node (sharing its fences).
    pub(crate) fn connect_again(&self) -> Result<PostgresStore, StoreError> {
        let config = self.config.clone();
        let client =
            off_runtime(|| config.connect(NoTls))?.map_err(|e| self.fail("connecting", e))?;
        let mut inner = off_runtime(|| super::Inner::new(client, &self.location))??;
        off_runtime(|| super::prepare(&mut inner.client, &self.location, &self.schema, false))??;
        Ok(PostgresStore {
            location: self.location.clone(),
            config: self.config.clone(),
            schema: self.schema.clone(),
            inner: Mutex::new(Some(inner)),
            node: self.node.clone(),
            faults: Mutex::new(Vec::new()),
        })
    }

    /// The node id, for a store opened with [`PostgresStore::connect_node`].
    pub fn node(&self) -> Option<&str> {
        self.node.as_deref().map(|n| n.node.as_str())
    }

    /// The store's schema.
    pub fn schema(&self) -> &str {
        &self.schema
    }

    pub(super) fn node_fences(&self) -> Result<&NodeFences, StoreError> {
        self.node.as_deref().ok_or_else(|| StoreError::Invalid {
            kind: "node",
            reason: "this store was not opened as a node (PostgresStore::connect_node)".into(),
        })
    }

    /// Run one statement (prepared once per connection) and return its rows.
    pub(super) fn rows(
        &self,
        sql: &'static str,
        params: &[&(dyn ToSql + Sync)],
        doing: &'static str,
    ) -> Result<Vec<postgres::Row>, StoreError> {
        self.with(|inner| {
            let statement = inner.statement(sql, &self.location)?;
            inner
                .client
                .query(&statement, params)
                .map_err(|e| self.fail(doing, e))
        })
    }

    /// Run one statement (prepared once per connection) in a transaction of its own
    /// and return its rows: for a statement that must not run twice, since a lost
    /// commit answer is looked up rather than taken for a failure
    /// ([`PostgresStore::transact`]).
    pub(super) fn rows_once(
        &self,
        sql: &'static str,
        params: &[&(dyn ToSql + Sync)],
        doing: &'static str,
    ) -> Result<Vec<postgres::Row>, StoreError> {
        self.transact(|tx, statements| {
            let statement = cached(statements, tx, sql, &self.location)?;
            tx.query(&statement, params)
                .map_err(|e| self.fail(doing, e))
        })
    }

    /// Renew every lease this node holds (also one that expired but that no node
    /// took yet). Returns the ids of the running instances it still owns. It never
    /// waits for a row lock: a row a transaction holds (this node's writer storing a
    /// checkpoint — which renews the lease itself — or another node taking it over)
    /// is skipped, and counted as owned as it was before that transaction (the next
    /// renewal sees how it ended). The owned ids are read first, then renewed
    /// [`RENEWED_AT_ONCE`] to a transaction: the renewal's row locks are held for
    /// one such batch, not for all of a node's instances at once — a checkpoint of
    /// one of them waits for the batch holding its row, and ten thousand in one
    /// statement held them some hundreds of ms.
    pub(crate) fn renew(&self) -> Result<Vec<u64>, StoreError> {
        let node = self.node_fences()?;
        let _ownership = node.ownership.lock().unwrap_or_else(|p| p.into_inner());
        let rows = self.rows(
            "SELECT id FROM instances WHERE owner = $1 AND status = 'running'",
            &[&node.node],
            "reading the leases to renew",
        )?;
        let owned: Vec<i64> = rows.iter().map(|r| r.get(0)).collect();
        for batch in owned.chunks(RENEWED_AT_ONCE) {
            self.rows(
                "UPDATE instances SET lease_until = now() + $2 * interval '1 millisecond'
                 WHERE id IN (SELECT id FROM instances
                              WHERE id = ANY($3) AND owner = $1 AND status = 'running'
                              FOR UPDATE SKIP LOCKED)",
                &[&node.node, &(node.lease_ms as f64), &batch],
                "renewing leases",
            )?;
        }
        let kept = owned
            .iter()
            .map(|&id| self.unsigned("instance id", id))
            .collect::<Result<Vec<u64>, StoreError>>()?;
        // Fences of instances that ended (or moved) are not needed any more.
        let owned: std::collections::HashSet<u64> = kept.iter().copied().collect();
        let mut fences = node.fences.lock().unwrap_or_else(|p| p.into_inner());
        fences.retain(|id, _| owned.contains(id));
        Ok(kept)
    }

    /// Reserve `block` ids of each kind (instances, messages) for this node: returns
    /// the first of each block. The high-water marks move past the blocks in one
    /// transaction, so no two nodes get the same id.
    pub(crate) fn reserve_ids(&self, block: u64) -> Result<(u64, u64), StoreError> {
        let block = to_i64(block);
        let rows = self.rows(
            "UPDATE meta SET value = (value::bigint + $1)::text
             WHERE key IN ('next_instance_id', 'next_message_id')
             RETURNING key, value::bigint - $1",
            &[&block],
            "reserving ids",
        )?;
        let mut ids = (None, None);
        for row in &rows {
            let key: String = row.get(0);
            let first = self.unsigned(&key, row.get(1))?;
            match key.as_str() {
                "next_instance_id" => ids.0 = Some(first),
                _ => ids.1 = Some(first),
            }
        }
        match ids {
            (Some(i), Some(m)) => Ok((i, m)),
            _ => Err(self.corrupt("an id high-water mark is missing".into())),
        }
    }

    /// Send `payload` (a signal, as JSON) to every node listening on the store.
    pub(crate) fn notify_signal(&self, payload: &str) -> Result<(), StoreError> {
        let (_, channel) = channels(&self.schema);
        // Not run twice: a signal is not sent again because an answer was lost.
        self.rows_once(
            "SELECT pg_notify($1, $2)",
            &[&channel, &payload],
            "broadcasting a signal",
        )?;
        Ok(())
    }

    /// A connection of its own that listens on the store's channels.
    pub(crate) fn listen(&self) -> Listener {
        Listener {
            config: self.config.clone(),
            location: self.location.clone(),
            channels: channels(&self.schema),
            client: None,
        }
    }

    /// The fenced form of a node's checkpoint or end; `None` for every other write
    /// (they are the same for a node).
    pub(super) fn apply_fenced(
        &self,
        node: &NodeFences,
        tx: &mut postgres::Transaction<'_>,
        statements: &mut HashMap<&'static str, Statement>,
        write: &Write,
    ) -> Option<Result<(), StoreError>> {
        let (id, changed) = match write {
            Write::Put(r) => {
                let fence = node.fence(r.id);
                let statement = match cached(
                    statements,
                    tx,
                    "INSERT INTO instances
                       (id, process, fingerprint, status, key, seq, state, outcome, updated_ms,
                        owner, lease_until, fence, business_key, started_ms, incidents)
                     VALUES ($1, $2, $3, $4, $5, $6, $7::text::json, $8::text::json, $9,
                             $10, now() + $11 * interval '1 millisecond', 1, $13, $14, $15)
                     ON CONFLICT (id) DO UPDATE SET
                       process = excluded.process, fingerprint = excluded.fingerprint,
                       status = excluded.status, key = excluded.key, seq = excluded.seq,
                       state = excluded.state, outcome = excluded.outcome,
                       updated_ms = excluded.updated_ms,
                       lease_until = excluded.lease_until,
                       business_key = excluded.business_key,
                       started_ms = excluded.started_ms, incidents = excluded.incidents
                     WHERE instances.status = 'running' AND excluded.seq > instances.seq
                       AND instances.owner = $10 AND instances.fence = $12",
                    &self.location,
                ) {
                    Ok(s) => s,
                    Err(e) => return Some(Err(e)),
                };
                let changed = tx
                    .execute(
                        &statement,
                        &[
                            &to_i64(r.id),
                            &r.process,
                            &(r.fingerprint as i64),
                            &r.status.as_str(),
                            &r.key,
                            &to_i64(r.seq),
                            &r.state,
                            &r.outcome,
                            &r.updated_ms,
                            &node.node,
                            &(node.lease_ms as f64),
                            &fence,
                            &r.business_key,
                            &r.started_ms,
                            &(r.incidents as i32),
                        ],
                    )
                    .map_err(|e| self.fail("storing a checkpoint", e));
                (r.id, changed)
            }
            Write::End {
                id,
                status,
                outcome,
                at_ms,
            } => {
                // The end of an instance with a correlation key for which an unclaimed
                // message is stored wakes every node, with the commit: a start message
                // waiting for the key may go now (the ends of other keys wake nobody).
                let statement = match cached(
                    statements,
                    tx,
                    "WITH ended AS (
                       UPDATE instances SET status = $2, outcome = $3::text::json, updated_ms = $4
                       WHERE id = $1 AND status = 'running' AND owner = $5 AND fence = $6
                       RETURNING key)
                     SELECT (SELECT count(*) FROM (SELECT pg_notify($7, '')
                               WHERE EXISTS (SELECT 1 FROM messages m
                                             WHERE m.key = ended.key
                                               AND (m.claim_until IS NULL
                                                    OR m.claim_until < now()))) n)
                     FROM ended",
                    &self.location,
                ) {
                    Ok(s) => s,
                    Err(e) => return Some(Err(e)),
                };
                let (channel, _) = channels(&self.schema);
                let changed = tx
                    .query(
                        &statement,
                        &[
                            &to_i64(*id),
                            &status.as_str(),
                            outcome,
                            at_ms,
                            &node.node,
                            &node.fence(*id),
                            &channel,
                        ],
                    )
                    .map(|rows| rows.len() as u64)
                    .map_err(|e| self.fail("ending an instance", e));
                (*id, changed)
            }
            _ => return None,
        };
        match changed {
            Err(e) => Some(Err(e)),
            Ok(0) => Some(Err(self.refusal(node, tx, statements, write, id))),
            Ok(_) => Some(Ok(())),
        }
    }

    /// Why a fenced write matched no row.
    fn refusal(
        &self,
        node: &NodeFences,
        tx: &mut postgres::Transaction<'_>,
        statements: &mut HashMap<&'static str, Statement>,
        write: &Write,
        id: u64,
    ) -> StoreError {
        let statement = match cached(
            statements,
            tx,
            "SELECT status, seq, owner, fence FROM instances WHERE id = $1",
            &self.location,
        ) {
            Ok(s) => s,
            Err(e) => return e,
        };
        let row = match tx.query_opt(&statement, &[&to_i64(id)]) {
            Ok(row) => row,
            Err(e) => return self.fail("reading an instance", e),
        };
        let Some(row) = row else {
            return StoreError::UnknownInstance { id };
        };
        let status: String = row.get(0);
        let seq: i64 = row.get(1);
        let owner: Option<String> = row.get(2);
        let fence: i64 = row.get(3);
        match self.status(&status) {
            Ok(Status::Running) => {}
            Ok(_) => return StoreError::InstanceEnded { id },
            Err(e) => return e,
        }
        if owner.as_deref() != Some(node.node.as_str()) || fence != node.fence(id) {
            return StoreError::Fenced {
                id,
                owner,
                fence,
                held: node.fence(id),
            };
        }
        match write {
            Write::Put(r) => StoreError::StaleCheckpoint {
                id,
                stored: u64::try_from(seq).unwrap_or(0),
                given: r.seq,
            },
            _ => StoreError::InstanceEnded { id },
        }
    }
}

/// A connection LISTENing on the store's channels: messages stored for any node to
/// claim, and signals. It connects (again) on demand.
pub(crate) struct Listener {
    config: postgres::Config,
    location: std::path::PathBuf,
    channels: (String, String),
    client: Option<Client>,
}

/// What a [`Listener`] heard.
#[derive(Debug, Default)]
pub(crate) struct Heard {
    /// A message was stored or released for any node to claim.
    pub(crate) messages: bool,
    /// Signals broadcast, as their JSON.
    pub(crate) signals: Vec<String>,
    /// The connection was (re)made: notifications may have been missed meanwhile.
    pub(crate) reconnected: bool,
}

impl Listener {
    /// Wait at most `timeout` for notifications (call it off any tokio runtime).
    pub(crate) fn wait(&mut self, timeout: Duration) -> Result<Heard, StoreError> {
        let mut heard = Heard::default();
        if self.client.as_ref().is_none_or(Client::is_closed) {
            let mut client = self
                .config
                .connect(NoTls)
                .map_err(|e| super::pg_error(&self.location, "listening", e))?;
            client
                .batch_execute(&format!(
                    "LISTEN {}; LISTEN {}",
                    super::quote_ident(&self.channels.0),
                    super::quote_ident(&self.channels.1)
                ))
                .map_err(|e| super::pg_error(&self.location, "listening", e))?;
            self.client = Some(client);
            heard.reconnected = true;
        }
        let Some(client) = self.client.as_mut() else {
            return Ok(heard);
        };
        let channel = self.channels.0.clone();
        let mut record = |n: postgres::Notification| {
            if n.channel() == channel {
                heard.messages = true;
            } else {
                heard.signals.push(n.payload().to_string());
            }
        };
        let failed = 'wait: {
            let first = client.notifications().timeout_iter(timeout).next();
            match first {
                Ok(Some(n)) => record(n),
                Ok(None) => break 'wait None,
                Err(e) => break 'wait Some(e),
            }
            // Take what else is queued without waiting again.
            let mut pending = client.notifications();
            let mut rest = pending.iter();
            loop {
                match rest.next() {
                    Ok(Some(n)) => record(n),
                    Ok(None) => break 'wait None,
                    Err(e) => break 'wait Some(e),
                }
            }
        };
        if let Some(e) = failed {
            debug!(error = %e, "the listening connection failed");
            self.client = None;
            return Err(super::pg_error(&self.location, "listening", e));
        }
        Ok(heard)
    }
}
