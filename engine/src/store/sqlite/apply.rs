//! [`SqliteStore`]'s writes: one [`Write`] inside the batch's transaction.

use rusqlite::{params, OptionalExtension};

use super::super::{check, Status, StoreError, Write};
use super::{to_i64, SqliteStore};

impl SqliteStore {
    pub(super) fn apply_one(
        &self,
        tx: &rusqlite::Transaction<'_>,
        write: &Write,
    ) -> Result<(), StoreError> {
        check(write)?;
        let fail = |doing, e| self.fail(doing, e);
        match write {
            Write::Put(r) => {
                let changed = tx
                    .prepare_cached(
                        "INSERT INTO instances
                           (id, process, fingerprint, status, key, seq, state, outcome, updated_ms,
                            business_key, started_ms, incidents, due_ms, at_rest)
                         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14)
                         ON CONFLICT (id) DO UPDATE SET
                           process = excluded.process, fingerprint = excluded.fingerprint,
                           status = excluded.status, key = excluded.key, seq = excluded.seq,
                           state = excluded.state, outcome = excluded.outcome,
                           updated_ms = excluded.updated_ms,
                           business_key = excluded.business_key,
                           started_ms = excluded.started_ms, incidents = excluded.incidents,
                           due_ms = excluded.due_ms, at_rest = excluded.at_rest
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
                            r.updated_ms,
                            r.business_key,
                            r.started_ms,
                            r.incidents,
                            r.wake.due_ms.filter(|_| !r.status.is_ended()),
                            r.wake.at_rest && !r.status.is_ended()
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
                self.end_tasks(tx, *id)?;
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
            Write::DropStale { names, key } => {
                for name in names {
                    tx.prepare_cached("DELETE FROM messages WHERE name = ?1 AND key = ?2")
                        .and_then(|mut s| s.execute(params![name, key]))
                        .map_err(|e| fail("dropping stale messages", e))?;
                }
            }
            Write::Expire { now_ms } => {
                let mut statement = tx
                    .prepare_cached(
                        "DELETE FROM messages WHERE expires_ms <= ?1 RETURNING name, key",
                    )
                    .map_err(|e| fail("expiring messages", e))?;
                let expired = statement
                    .query_map([now_ms], |row| {
                        Ok((row.get::<_, String>(0)?, row.get::<_, String>(1)?))
                    })
                    .and_then(|rows| rows.collect::<Result<Vec<_>, _>>())
                    .map_err(|e| fail("expiring messages", e))?;
                for (name, key) in &expired {
                    super::super::expired_message(name, key);
                }
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
            Write::Tick { deployment: d, .. } => {
                // One writer per file: read, compare and set in this transaction.
                let stored: Option<String> = tx
                    .prepare_cached("SELECT timer_anchors FROM deployments WHERE id = ?1")
                    .and_then(|mut s| s.query_row([to_i64(d.id)], |row| row.get(0)).optional())
                    .map_err(|e| fail("reading a timer schedule", e))?;
                let anchors = super::super::tick::ticked(stored.as_deref(), write)?;
                tx.prepare_cached(
                    "INSERT INTO deployments (id, process, fingerprint, data, timer_anchors)
                     VALUES (?1, ?2, ?3, ?4, ?5)
                     ON CONFLICT (id) DO UPDATE SET timer_anchors = excluded.timer_anchors",
                )
                .and_then(|mut s| {
                    s.execute(params![
                        to_i64(d.id),
                        d.process,
                        d.fingerprint as i64,
                        d.data,
                        anchors
                    ])
                })
                .map_err(|e| fail("storing a timer tick", e))?;
            }
            Write::RemoveDeployment { id } => {
                tx.prepare_cached("DELETE FROM deployments WHERE id = ?1")
                    .and_then(|mut s| s.execute([to_i64(*id)]))
                    .map_err(|e| fail("removing a deployment", e))?;
            }
            Write::Tasks { instance, open } => self.put_tasks(tx, *instance, open)?,
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

    /// The side table of waits after a batch that applied: each instance put gets
    /// its last put's waits, each ended one none (and no open incident).
    pub(super) fn sync_waits(
        &self,
        tx: &rusqlite::Transaction<'_>,
        batch: &[Write],
    ) -> Result<(), StoreError> {
        let fail = |e| self.fail("storing an instance's waits", e);
        let mut subscribed = self.subscribed(tx, batch)?;
        for write in batch {
            match write {
                Write::Put(r) => {
                    tx.prepare_cached("DELETE FROM instance_waits WHERE instance = ?1")
                        .and_then(|mut s| s.execute([to_i64(r.id)]))
                        .map_err(fail)?;
                    self.sync_wakes(tx, r, &mut subscribed)?;
                    if r.status.is_ended() {
                        continue;
                    }
                    let mut insert = tx
                        .prepare_cached(
                            "INSERT OR IGNORE INTO instance_waits
                               (instance, process, node, started_ms) VALUES (?1, ?2, ?3, ?4)",
                        )
                        .map_err(fail)?;
                    for node in &r.waits {
                        insert
                            .execute(params![to_i64(r.id), r.process, node, r.started_ms])
                            .map_err(fail)?;
                    }
                }
                Write::End { id, .. } => {
                    tx.prepare_cached("DELETE FROM instance_waits WHERE instance = ?1")
                        .and_then(|mut s| s.execute([to_i64(*id)]))
                        .map_err(fail)?;
                    if subscribed.remove(id) {
                        tx.prepare_cached("DELETE FROM instance_wakes WHERE instance = ?1")
                            .and_then(|mut s| s.execute([to_i64(*id)]))
                            .map_err(fail)?;
                    }
                    tx.prepare_cached(
                        "UPDATE instances SET incidents = 0, due_ms = NULL, at_rest = 0
                         WHERE id = ?1 AND (incidents > 0 OR due_ms IS NOT NULL OR at_rest <> 0)",
                    )
                    .and_then(|mut s| s.execute([to_i64(*id)]))
                    .map_err(fail)?;
                }
                _ => {}
            }
        }
        Ok(())
    }

    /// Which of the instances `batch` puts or ends have rows in the wake index:
    /// one statement for the batch, so a checkpoint of an instance with no
    /// subscription, before or after, costs no statement of its own there.
    fn subscribed(
        &self,
        tx: &rusqlite::Transaction<'_>,
        batch: &[Write],
    ) -> Result<std::collections::HashSet<u64>, StoreError> {
        let ids: Vec<u64> = batch
            .iter()
            .filter_map(|w| match w {
                Write::Put(r) => Some(r.id),
                Write::End { id, .. } => Some(*id),
                _ => None,
            })
            .collect();
        if ids.is_empty() {
            return Ok(Default::default());
        }
        let ids = serde_json::to_string(&ids).unwrap_or_else(|_| "[]".into());
        let rows: Vec<i64> = tx
            .prepare_cached(
                "SELECT DISTINCT instance FROM instance_wakes
                 WHERE instance IN (SELECT value FROM json_each(?1))",
            )
            .and_then(|mut s| s.query_map([ids], |row| row.get(0))?.collect())
            .map_err(|e| self.fail("reading the wake index", e))?;
        Ok(rows.into_iter().map(|id| id as u64).collect())
    }

    /// An instance put's subscriptions in the wake index: its last put's (none
    /// once ended). Rows of a checkpoint that keeps them are left as they are.
    /// `subscribed`: the instances with rows now.
    fn sync_wakes(
        &self,
        tx: &rusqlite::Transaction<'_>,
        r: &super::super::InstanceRecord,
        subscribed: &mut std::collections::HashSet<u64>,
    ) -> Result<(), StoreError> {
        let fail = |e| self.fail("storing an instance's wake index", e);
        let ended = r.status.is_ended();
        let none = r.wake.messages.is_empty() && r.wake.signals.is_empty();
        if !subscribed.contains(&r.id) && (ended || none) {
            return Ok(());
        }
        if ended || none {
            subscribed.remove(&r.id);
        } else {
            subscribed.insert(r.id);
        }
        let wanted = |kind: &str, name: &str, key: &str| {
            !ended
                && match kind {
                    "message" => r.wake.messages.iter().any(|(n, k)| n == name && k == key),
                    _ => key.is_empty() && r.wake.signals.iter().any(|n| n == name),
                }
        };
        let stored: Vec<(String, String, String)> = tx
            .prepare_cached("SELECT kind, name, key FROM instance_wakes WHERE instance = ?1")
            .and_then(|mut s| {
                s.query_map([to_i64(r.id)], |row| {
                    Ok((row.get(0)?, row.get(1)?, row.get(2)?))
                })?
                .collect()
            })
            .map_err(fail)?;
        for (kind, name, key) in &stored {
            if !wanted(kind, name, key) {
                tx.prepare_cached(
                    "DELETE FROM instance_wakes
                     WHERE instance = ?1 AND kind = ?2 AND name = ?3 AND key = ?4",
                )
                .and_then(|mut s| s.execute(params![to_i64(r.id), kind, name, key]))
                .map_err(fail)?;
            }
        }
        if ended {
            return Ok(());
        }
        let has = |kind: &str, name: &str, key: &str| {
            stored
                .iter()
                .any(|(k, n, y)| k == kind && n == name && y == key)
        };
        let signals = r.wake.signals.iter().map(|n| ("signal", n.as_str(), ""));
        let messages = r
            .wake
            .messages
            .iter()
            .map(|(n, k)| ("message", n.as_str(), k.as_str()));
        for (kind, name, key) in messages.chain(signals) {
            if !has(kind, name, key) {
                tx.prepare_cached(
                    "INSERT OR IGNORE INTO instance_wakes (instance, kind, name, key)
                     VALUES (?1, ?2, ?3, ?4)",
                )
                .and_then(|mut s| s.execute(params![to_i64(r.id), kind, name, key]))
                .map_err(fail)?;
            }
        }
        Ok(())
    }

    pub(super) fn status_of(
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
}
