//! A node's messages on a [`PostgresStore`]: storing a published one (claimed by the
//! publishing node when it takes it itself), the claim poll, and the start-message
//! key rule across nodes.
//!
//! - **The claim poll** costs what is stored unclaimed, not what waits: a node asks
//!   for the unclaimed messages of the names its catches wait for (a page at a time,
//!   in the order they were stored), decides locally which its catches take (by
//!   key, in its hub), and claims those by id.
//! - **The key rule.** A start message for a key with a running instance of its
//!   process (or an older start message for the key, or one claimed) waits; the oldest
//!   starts the next instance once that one ended. Every decision to claim a message
//!   for a start runs under a transaction-scoped advisory lock on the key, so of two
//!   nodes deciding at once the second sees the first's claim: one instance per key
//!   at a time, cluster-wide. An instance's end with a key wakes every node
//!   (`NOTIFY`, with the end's commit), so the next start message is claimed at once.

use postgres::types::ToSql;

use super::super::{MessageRecord, StoreError, Write};
use super::cluster::channels;
use super::{cached, to_i64, PostgresStore};

/// An unclaimed stored message a node may claim.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Candidate {
    pub(crate) id: u64,
    /// Its place in the order messages were stored.
    pub(crate) seq: i64,
    pub(crate) name: String,
    pub(crate) key: String,
    /// A message start event of the node would start an instance with it now (the
    /// key rule holds as the poll read it; the claim checks it again).
    pub(crate) startable: bool,
}

impl PostgresStore {
    /// Store a published message. Claimed by this node if `waiter` (a catch here
    /// waits for it), or if a start event here starts on it — `starts`: the (name,
    /// process) of the message starts of those processes — and the key rule lets it
    /// start an instance now; else unclaimed, for any node, and the nodes are woken.
    /// Durable when this returns; `true` if claimed here.
    pub(crate) fn store_message(
        &self,
        message: &MessageRecord,
        waiter: bool,
        starts: &[(String, &str)],
    ) -> Result<bool, StoreError> {
        let node = self.node_fences()?;
        super::super::check(&Write::Buffer(message.clone()))?;
        let (channel, _) = channels(&self.schema);
        let (names, processes) = unzip(starts);
        let decide = !waiter && !starts.is_empty();
        let now = super::now_ms();
        let params: [&(dyn ToSql + Sync); 12] = [
            &to_i64(message.id),
            &message.name,
            &message.key,
            &message.expires_ms,
            &message.payload,
            &node.node,
            &(node.lease_ms as f64),
            &channel,
            &names,
            &processes,
            &waiter,
            &now,
        ];
        self.under_key_lock(decide.then_some(&message.key), |tx, statements| {
            // Claimed for a start only if no running instance of those processes
            // has the key and no live start message of theirs for it is stored (each
            // is older than this one).
            let statement = cached(
                statements,
                tx,
                "WITH starts(name, process) AS (SELECT * FROM unnest($9::text[], $10::text[])),
                 owner AS (
                   SELECT CASE WHEN $11::bool THEN $6::text
                               WHEN EXISTS (SELECT 1 FROM starts) AND NOT EXISTS (
                                      SELECT 1 FROM instances i
                                      WHERE i.status = 'running' AND i.key = $3
                                        AND i.process IN (SELECT process FROM starts))
                                    AND NOT EXISTS (
                                      SELECT 1 FROM messages o
                                      WHERE o.key = $3 AND o.expires_ms > $12
                                        AND o.name IN (SELECT name FROM starts))
                               THEN $6::text END AS node),
                 stored AS (
                   INSERT INTO messages (id, name, key, payload, expires_ms, claimed_by, claim_until)
                   SELECT $1, $2, $3, $5::text::json, $4, node,
                          CASE WHEN node IS NULL THEN NULL
                               ELSE now() + $7 * interval '1 millisecond' END
                   FROM owner
                   RETURNING claimed_by)
                 SELECT claimed_by IS NOT NULL,
                        (SELECT count(*) FROM (SELECT pg_notify($8, '')
                                               WHERE stored.claimed_by IS NULL) n)
                 FROM stored",
                &self.location,
            )?;
            let row = tx
                .query_one(&statement, &params)
                .map_err(|e| self.fail("storing a message", e))?;
            Ok(row.get::<_, bool>(0))
        })
    }

    /// Run `f` in one transaction, under the advisory lock of the start key `key`
    /// (if given) from its first statement on: each statement after it sees what
    /// every earlier decision on the key committed.
    fn under_key_lock<T: Send>(
        &self,
        key: Option<&String>,
        mut f: impl FnMut(
                &mut postgres::Transaction<'_>,
                &mut std::collections::HashMap<&'static str, postgres::Statement>,
            ) -> Result<T, StoreError>
            + Send,
    ) -> Result<T, StoreError> {
        let lock = key.map(|key| format!("thresh-start:{}:{key}", self.schema));
        self.transact(|tx, statements| {
            if let Some(lock) = &lock {
                let statement = cached(
                    statements,
                    tx,
                    "SELECT pg_advisory_xact_lock(hashtextextended($1, 0))",
                    &self.location,
                )?;
                tx.execute(&statement, &[lock])
                    .map_err(|e| self.fail("locking a start key", e))?;
            }
            f(tx, statements)
        })
    }

    /// Give up this node's claim on message `id` (it found no taker for it here): any
    /// node may claim it now; the others are woken.
    pub(crate) fn release_message(&self, id: u64) -> Result<(), StoreError> {
        let node = self.node_fences()?;
        let (channel, _) = channels(&self.schema);
        self.rows(
            "WITH released AS (
               UPDATE messages SET claimed_by = NULL, claim_until = NULL
               WHERE id = $1 AND claimed_by = $2 RETURNING id)
             SELECT pg_notify($3, '') FROM released",
            &[&to_i64(id), &node.node, &channel],
            "releasing a message",
        )?;
        Ok(())
    }

    /// At most `limit` unclaimed, unexpired stored messages after `after` (in the
    /// order they were stored) that this node may take: those named in `waits` (a
    /// catch here waits for the name: the node looks at the key itself), and those a
    /// start in `starts` (name, process) would start an instance with now.
    pub(crate) fn claim_candidates(
        &self,
        waits: &[String],
        starts: &[(String, &str)],
        now_ms: i64,
        after: i64,
        limit: usize,
    ) -> Result<Vec<Candidate>, StoreError> {
        let (names, processes) = unzip(starts);
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        let rows = self.rows(
            "WITH starts(name, process) AS (SELECT * FROM unnest($1::text[], $2::text[]))
             SELECT m.id, m.seq, m.name, m.key, s.startable
             FROM messages m, LATERAL (
               SELECT m.name IN (SELECT name FROM starts)
                 AND NOT EXISTS (
                   SELECT 1 FROM instances i JOIN starts st ON st.process = i.process
                   WHERE st.name = m.name AND i.status = 'running' AND i.key = m.key)
                 AND NOT EXISTS (
                   SELECT 1 FROM messages o
                   JOIN starts so ON so.name = o.name
                   JOIN starts sm ON sm.process = so.process AND sm.name = m.name
                   WHERE o.key = m.key AND o.id <> m.id AND o.expires_ms > $4
                     AND (o.seq < m.seq OR o.claim_until > now())) AS startable) s
             WHERE (m.claim_until IS NULL OR m.claim_until < now()) AND m.expires_ms > $4
               AND m.seq > $5 AND (m.name = ANY($3::text[]) OR s.startable)
             ORDER BY m.seq LIMIT $6",
            &[&names, &processes, &waits, &now_ms, &after, &limit],
            "reading unclaimed messages",
        )?;
        rows.iter()
            .map(|r| {
                Ok(Candidate {
                    id: self.unsigned("message id", r.get(0))?,
                    seq: r.get(1),
                    name: r.get(2),
                    key: r.get(3),
                    startable: r.get(4),
                })
            })
            .collect()
    }

    /// The running instances this node owns whose wake index waits for an
    /// unclaimed, unexpired stored message: those it holds evicted and asleep (no
    /// catch in its hub) are loaded, and their catches then claim it. By id.
    pub(crate) fn owned_waiting(&self, now_ms: i64) -> Result<Vec<u64>, StoreError> {
        let node = self.node_fences()?;
        let rows = self.rows(
            "SELECT DISTINCT w.instance FROM messages m
             JOIN instance_wakes w ON w.kind = 'message' AND w.name = m.name AND w.key = m.key
             JOIN instances i ON i.id = w.instance
             WHERE i.owner = $1 AND i.status = 'running'
               AND (m.claim_until IS NULL OR m.claim_until < now()) AND m.expires_ms > $2
             ORDER BY w.instance",
            &[&node.node, &now_ms],
            "reading the instances waiting for stored messages",
        )?;
        rows.iter()
            .map(|r| self.unsigned("instance id", r.get(0)))
            .collect()
    }

    /// Claim the messages `ids` for this node's waiting catches (those no node holds
    /// a live claim on, not expired). Returns the claimed ones, by id.
    pub(crate) fn claim_waited(
        &self,
        ids: &[u64],
        now_ms: i64,
    ) -> Result<Vec<MessageRecord>, StoreError> {
        let node = self.node_fences()?;
        let ids: Vec<i64> = ids.iter().map(|id| to_i64(*id)).collect();
        // Not run twice: a claim whose answer was lost would hold the messages
        // for a lease with nobody to deliver them.
        let rows = self.rows_once(
            "UPDATE messages SET claimed_by = $1,
                                 claim_until = now() + $2 * interval '1 millisecond'
             WHERE id IN (
               SELECT id FROM messages
               WHERE id = ANY($3::bigint[]) AND (claim_until IS NULL OR claim_until < now())
                 AND expires_ms > $4
               FOR UPDATE SKIP LOCKED)
             RETURNING id, name, key, payload::text, expires_ms",
            &[&node.node, &(node.lease_ms as f64), &ids, &now_ms],
            "claiming messages",
        )?;
        let mut claimed = self.message_rows(&rows)?;
        claimed.sort_by_key(|m| m.id);
        Ok(claimed)
    }

    /// Claim message `id` (with `key`) to start an instance with it, if the key rule
    /// lets it now — decided under the key's lock. `starts`: the (name, process) of
    /// the message starts of the processes that start on its name.
    pub(crate) fn claim_start(
        &self,
        id: u64,
        key: &String,
        starts: &[(String, &str)],
        now_ms: i64,
    ) -> Result<Option<MessageRecord>, StoreError> {
        let node = self.node_fences()?;
        let (names, processes) = unzip(starts);
        let rows = self.under_key_lock(Some(key), |tx, statements| {
            // Free: no running instance of those processes with the key, nor another
            // live start message of theirs for it that is older or claimed.
            let statement = cached(
                statements,
                tx,
                "WITH starts(name, process) AS (SELECT * FROM unnest($5::text[], $6::text[]))
                 UPDATE messages m SET claimed_by = $1,
                                       claim_until = now() + $2 * interval '1 millisecond'
                 WHERE m.id = $3 AND (m.claim_until IS NULL OR m.claim_until < now())
                   AND m.expires_ms > $4
                   AND NOT EXISTS (
                     SELECT 1 FROM instances i
                     WHERE i.status = 'running' AND i.key = m.key
                       AND i.process IN (SELECT process FROM starts))
                   AND NOT EXISTS (
                     SELECT 1 FROM messages o
                     WHERE o.key = m.key AND o.id <> m.id AND o.expires_ms > $4
                       AND o.name IN (SELECT name FROM starts)
                       AND (o.seq < m.seq OR o.claim_until > now()))
                 RETURNING m.id, m.name, m.key, m.payload::text, m.expires_ms",
                &self.location,
            )?;
            tx.query(
                &statement,
                &[
                    &node.node,
                    &(node.lease_ms as f64),
                    &to_i64(id),
                    &now_ms,
                    &names,
                    &processes,
                ],
            )
            .map_err(|e| self.fail("claiming a start message", e))
        })?;
        Ok(self.message_rows(&rows)?.pop())
    }

    fn message_rows(&self, rows: &[postgres::Row]) -> Result<Vec<MessageRecord>, StoreError> {
        rows.iter()
            .map(|r| {
                Ok(MessageRecord {
                    id: self.unsigned("message id", r.get(0))?,
                    name: r.get(1),
                    key: r.get(2),
                    payload: r.get(3),
                    expires_ms: r.get(4),
                })
            })
            .collect()
    }
}

/// The names and the processes of `starts`, as two arrays.
fn unzip<'a>(starts: &'a [(String, &'a str)]) -> (Vec<&'a str>, Vec<&'a str>) {
    starts.iter().map(|(n, p)| (n.as_str(), *p)).unzip()
}
