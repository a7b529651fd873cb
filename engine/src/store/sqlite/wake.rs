//! [`SqliteStore`]'s reads of the wake index (schema 5: `instances.due_ms`,
//! `instances.at_rest`, `instance_wakes`).

use std::collections::HashSet;

use rusqlite::params;

use super::super::{InstanceRecord, Resting, StoreError};
use super::read::COLUMNS;
use super::SqliteStore;

impl SqliteStore {
    /// `Store::due_after`: a range of the index on `(due_ms, id)`, a row value
    /// its lower bound.
    pub(super) fn read_due(
        &self,
        after: Option<(i64, u64)>,
        at_ms: i64,
        limit: usize,
    ) -> Result<Vec<(i64, u64)>, StoreError> {
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        // Before every row: ids are at least 0.
        let (after_ms, after_id) = after.map_or((i64::MIN, -1), |(at, id)| {
            (at, i64::try_from(id).unwrap_or(i64::MAX))
        });
        let conn = self.conn();
        let rows: Vec<(i64, i64)> = conn
            .prepare_cached(
                // Named: without statistics the planner takes the status index
                // and sorts every running instance.
                "SELECT due_ms, id FROM instances INDEXED BY instances_by_due
                 WHERE due_ms IS NOT NULL AND (due_ms, id) > (?1, ?2) AND due_ms <= ?3
                   AND status = 'running'
                 ORDER BY due_ms, id LIMIT ?4",
            )
            .and_then(|mut s| {
                s.query_map(params![after_ms, after_id, at_ms, limit], |r| {
                    Ok((r.get(0)?, r.get(1)?))
                })?
                .collect()
            })
            .map_err(|e| self.fail("reading due timers", e))?;
        drop(conn);
        rows.into_iter()
            .map(|(at, id)| Ok((at, self.unsigned("instance id", id)?)))
            .collect()
    }

    pub(super) fn read_waiting(
        &self,
        kind: &str,
        name: &str,
        key: &str,
        after: Option<u64>,
        limit: usize,
    ) -> Result<Vec<u64>, StoreError> {
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        let after = after.map_or(-1, |a| i64::try_from(a).unwrap_or(i64::MAX));
        let conn = self.conn();
        let rows: Vec<i64> = conn
            .prepare_cached(
                "SELECT instance FROM instance_wakes
                 WHERE kind = ?1 AND name = ?2 AND key = ?3 AND instance > ?4
                 ORDER BY instance LIMIT ?5",
            )
            .and_then(|mut s| {
                s.query_map(params![kind, name, key, after, limit], |r| r.get(0))?
                    .collect()
            })
            .map_err(|e| self.fail("reading subscriptions", e))?;
        drop(conn);
        rows.into_iter()
            .map(|id| self.unsigned("instance id", id))
            .collect()
    }

    pub(super) fn read_to_load(&self, now_ms: i64) -> Result<Vec<InstanceRecord>, StoreError> {
        let conn = self.conn();
        let load = format!(
            "SELECT {COLUMNS} FROM instances i WHERE i.status = 'running' AND i.id IN (
               SELECT id FROM instances WHERE at_rest = 0 AND status = 'running'
               UNION SELECT id FROM instances
                 WHERE due_ms IS NOT NULL AND due_ms <= ?1 AND status = 'running'
               UNION SELECT w.instance FROM messages m JOIN instance_wakes w
                 ON w.kind = 'message' AND w.name = m.name AND w.key = m.key)
             ORDER BY i.id"
        );
        let raws = conn
            .prepare_cached(&load)
            .and_then(|mut s| {
                s.query_map([now_ms], |row| self.instance_row(row))?
                    .collect::<rusqlite::Result<Vec<_>>>()
            })
            .map_err(|e| self.fail("reading what to resume", e))?;
        drop(conn);
        raws.into_iter().map(|raw| self.record(raw)).collect()
    }

    /// `Store::resting`: a page of the index of the instances at rest, and the
    /// subscriptions of the same range of ids (their primary key's range).
    pub(super) fn read_resting(
        &self,
        after: Option<u64>,
        limit: usize,
    ) -> Result<Vec<Resting>, StoreError> {
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        let after = after.map_or(-1, |a| i64::try_from(a).unwrap_or(i64::MAX));
        let conn = self.conn();
        let fail = |e| self.fail("reading the instances at rest", e);
        type Row = (i64, String, i64, Option<String>, Option<i64>);
        let rows: Vec<Row> = conn
            .prepare_cached(
                // Named, as above: the covering index of the instances at rest.
                "SELECT id, process, fingerprint, key, due_ms
                 FROM instances INDEXED BY instances_at_rest
                 WHERE status = 'running' AND at_rest = 1 AND id > ?1 ORDER BY id LIMIT ?2",
            )
            .and_then(|mut s| {
                s.query_map(params![after, limit], |r| {
                    Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?))
                })?
                .collect()
            })
            .map_err(fail)?;
        let Some(&(last, ..)) = rows.last() else {
            return Ok(Vec::new());
        };
        let subscribed: HashSet<(i64, String)> = conn
            .prepare_cached(
                "SELECT DISTINCT instance, kind FROM instance_wakes
                 WHERE instance > ?1 AND instance <= ?2",
            )
            .and_then(|mut s| {
                s.query_map(params![after, last], |r| Ok((r.get(0)?, r.get(1)?)))?
                    .collect()
            })
            .map_err(fail)?;
        drop(conn);
        let has = |id: i64, kind: &str| subscribed.contains(&(id, kind.to_string()));
        rows.into_iter()
            .map(|(id, process, fingerprint, key, due_ms)| {
                Ok(Resting {
                    id: self.unsigned("instance id", id)?,
                    process,
                    fingerprint: fingerprint as u64,
                    key,
                    due_ms,
                    messages: has(id, "message"),
                    signals: has(id, "signal"),
                })
            })
            .collect()
    }
}
