//! [`SqliteStore`]'s reads of the wake index (schema 5: `instances.due_ms`,
//! `instances.at_rest`, `instance_wakes`).

use std::collections::HashSet;

use rusqlite::params;

use super::super::{Resting, StoreError, ToResume};
use super::read::COLUMNS;
use super::SqliteStore;

impl SqliteStore {
    pub(super) fn read_due(&self, at_ms: i64, limit: usize) -> Result<Vec<(i64, u64)>, StoreError> {
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        let conn = self.conn();
        let rows: Vec<(i64, i64)> = conn
            .prepare_cached(
                "SELECT due_ms, id FROM instances
                 WHERE due_ms IS NOT NULL AND due_ms <= ?1 AND status = 'running'
                 ORDER BY due_ms, id LIMIT ?2",
            )
            .and_then(|mut s| {
                s.query_map(params![at_ms, limit], |r| Ok((r.get(0)?, r.get(1)?)))?
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

    pub(super) fn read_to_resume(&self, now_ms: i64) -> Result<ToResume, StoreError> {
        let conn = self.conn();
        let fail = |e| self.fail("reading what to resume", e);
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
            .map_err(fail)?;
        let subscribed = |kind: &str| -> Result<HashSet<i64>, StoreError> {
            conn.prepare_cached("SELECT DISTINCT instance FROM instance_wakes WHERE kind = ?1")
                .and_then(|mut s| s.query_map([kind], |r| r.get(0))?.collect())
                .map_err(fail)
        };
        let (messages, signals) = (subscribed("message")?, subscribed("signal")?);
        let loaded: HashSet<i64> = raws.iter().map(|r| r.id).collect();
        let mut resting = Vec::new();
        {
            let mut statement = conn
                .prepare_cached(
                    "SELECT id, process, fingerprint, key, due_ms FROM instances
                     WHERE status = 'running' AND at_rest = 1 ORDER BY id",
                )
                .map_err(fail)?;
            let mut rows = statement.query([]).map_err(fail)?;
            while let Some(row) = rows.next().map_err(fail)? {
                let id: i64 = row.get(0).map_err(fail)?;
                if loaded.contains(&id) {
                    continue;
                }
                resting.push(Resting {
                    id: self.unsigned("instance id", id)?,
                    process: row.get(1).map_err(fail)?,
                    fingerprint: row.get::<_, i64>(2).map_err(fail)? as u64,
                    key: row.get(3).map_err(fail)?,
                    due_ms: row.get(4).map_err(fail)?,
                    messages: messages.contains(&id),
                    signals: signals.contains(&id),
                });
            }
        }
        drop(conn);
        let load = raws
            .into_iter()
            .map(|raw| self.record(raw))
            .collect::<Result<_, _>>()?;
        Ok(ToResume { load, resting })
    }
}
