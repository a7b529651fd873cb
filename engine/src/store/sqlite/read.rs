//! [`SqliteStore`]'s reads, and its [`Store`] impl (`apply` runs the batch's writes,
//! `apply.rs`, in one transaction).

use rusqlite::{params, TransactionBehavior};

use super::super::sql::{Param, Sql};
use super::super::{
    raise_ids, DeploymentRecord, Ids, InstanceQuery, InstanceRecord, MessageRecord, Status, Store,
    StoreError, TaskRecord, Write,
};
use super::{to_i64, SqliteStore};

impl SqliteStore {
    pub(super) fn status(&self, name: &str) -> Result<Status, StoreError> {
        Status::from_name(name).ok_or_else(|| self.corrupt(format!("unknown status {name:?}")))
    }

    pub(super) fn unsigned(&self, what: &str, n: i64) -> Result<u64, StoreError> {
        u64::try_from(n).map_err(|_| self.corrupt(format!("negative {what} {n}")))
    }

    pub(super) fn corrupt(&self, detail: String) -> StoreError {
        StoreError::Corrupt {
            path: self.path.clone(),
            detail,
        }
    }

    pub(super) fn instance_row(&self, row: &rusqlite::Row<'_>) -> rusqlite::Result<RawInstance> {
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
            business_key: row.get(9)?,
            started_ms: row.get(10)?,
            incidents: row.get(11)?,
            waits: row.get(12)?,
            due_ms: row.get(13)?,
            at_rest: row.get(14)?,
            wakes: row.get(15)?,
        })
    }

    pub(super) fn record(&self, raw: RawInstance) -> Result<InstanceRecord, StoreError> {
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
            business_key: raw.business_key,
            started_ms: raw.started_ms,
            incidents: u32::try_from(raw.incidents)
                .map_err(|_| self.corrupt(format!("incident count {}", raw.incidents)))?,
            waits: split_waits(raw.waits),
            wake: super::super::wake::joined(raw.due_ms, raw.at_rest, raw.wakes.as_deref()),
        })
    }

    pub(super) fn query_instances(
        &self,
        filter: &str,
        params: &[&dyn rusqlite::ToSql],
    ) -> Result<Vec<InstanceRecord>, StoreError> {
        let sql = format!("SELECT {COLUMNS} FROM instances i {filter} ORDER BY id");
        self.read_instances(&sql, params)
    }

    fn read_instances(
        &self,
        sql: &str,
        params: &[&dyn rusqlite::ToSql],
    ) -> Result<Vec<InstanceRecord>, StoreError> {
        let conn = self.conn();
        let raws = conn
            .prepare_cached(sql)
            .and_then(|mut s| {
                s.query_map(params, |row| self.instance_row(row))?
                    .collect::<rusqlite::Result<Vec<_>>>()
            })
            .map_err(|e| self.fail("reading instances", e))?;
        drop(conn);
        raws.into_iter().map(|raw| self.record(raw)).collect()
    }
}

/// An instance's columns, its waits as one text (`instances i`).
pub(super) const COLUMNS: &str =
    "i.id, i.process, i.fingerprint, i.status, i.key, i.seq, i.state, i.outcome,
     i.updated_ms, i.business_key, i.started_ms, i.incidents,
     (SELECT group_concat(node, char(31)) FROM instance_waits WHERE instance = i.id),
     i.due_ms, i.at_rest,
     (SELECT group_concat(kind || char(30) || name || char(30) || key, char(31))
      FROM instance_wakes WHERE instance = i.id)";

/// The waits' ids, joined by U+001F (no element id holds it), sorted.
fn split_waits(joined: Option<String>) -> Vec<String> {
    let mut waits: Vec<String> = joined
        .map(|j| j.split('\u{1f}').map(str::to_string).collect())
        .unwrap_or_default();
    waits.sort();
    waits
}

/// `?1`, `?2`, ...
fn mark(n: usize) -> String {
    format!("?{n}")
}

fn sql_params(sql: &Sql) -> Vec<&dyn rusqlite::ToSql> {
    sql.params
        .iter()
        .map(|p| match p {
            Param::Text(t) => t as &dyn rusqlite::ToSql,
            Param::Int(n) => n as &dyn rusqlite::ToSql,
        })
        .collect()
}

pub(super) struct RawInstance {
    pub(super) id: i64,
    process: String,
    fingerprint: i64,
    status: String,
    key: Option<String>,
    seq: i64,
    state: String,
    outcome: Option<String>,
    updated_ms: i64,
    business_key: Option<String>,
    started_ms: i64,
    incidents: i64,
    waits: Option<String>,
    due_ms: Option<i64>,
    at_rest: bool,
    wakes: Option<String>,
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
        self.sync_waits(&tx, batch)?;
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
        tx.commit().map_err(|e| self.fail("committing", e))?;
        self.committed();
        Ok(())
    }

    fn running(&self) -> Result<Vec<InstanceRecord>, StoreError> {
        self.query_instances("WHERE status = 'running'", &[])
    }

    fn wants_idle(&self) -> bool {
        self.checkpoint_due()
    }

    fn idle(&self) -> Result<(), StoreError> {
        self.checkpoint_idle()
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

    fn query(&self, query: &InstanceQuery) -> Result<Vec<InstanceRecord>, StoreError> {
        let sql = Sql::select(query, COLUMNS, mark);
        self.read_instances(&sql.text, &sql_params(&sql))
    }

    fn count(&self, query: &InstanceQuery) -> Result<u64, StoreError> {
        let sql = Sql::count(query, mark);
        let conn = self.conn();
        let n: i64 = conn
            .prepare_cached(&sql.text)
            .and_then(|mut s| s.query_row(sql_params(&sql).as_slice(), |r| r.get(0)))
            .map_err(|e| self.fail("counting instances", e))?;
        self.unsigned("count", n)
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

    fn tasks(&self, query: &crate::tasklist::TaskQuery) -> Result<Vec<TaskRecord>, StoreError> {
        self.query_tasks(query)
    }

    fn claim_task(
        &self,
        instance: u64,
        number: u32,
        user: Option<&str>,
    ) -> Result<Option<TaskRecord>, StoreError> {
        self.claim(instance, number, user)
    }

    fn due_after(
        &self,
        after: Option<(i64, u64)>,
        at_ms: i64,
        limit: usize,
    ) -> Result<Vec<(i64, u64)>, StoreError> {
        self.read_due(after, at_ms, limit)
    }

    fn waiting_for_message(&self, name: &str, key: &str) -> Result<Vec<u64>, StoreError> {
        self.read_waiting("message", name, key, None, usize::MAX)
    }

    fn waiting_for_signal(
        &self,
        name: &str,
        after: Option<u64>,
        limit: usize,
    ) -> Result<Vec<u64>, StoreError> {
        self.read_waiting("signal", name, "", after, limit)
    }

    fn to_load(&self, now_ms: i64) -> Result<Vec<InstanceRecord>, StoreError> {
        self.read_to_load(now_ms)
    }

    fn resting(
        &self,
        after: Option<u64>,
        limit: usize,
    ) -> Result<Vec<crate::store::Resting>, StoreError> {
        self.read_resting(after, limit)
    }
}
