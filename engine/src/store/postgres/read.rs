//! [`PostgresStore`]'s reads, and its [`Store`] impl (`apply` runs the batch's writes,
//! `apply.rs`, in one transaction).

use postgres::types::ToSql;
use postgres::Row;

use super::super::sql::{Param, Sql};
use super::super::{
    raise_ids, DeploymentRecord, Ids, InstanceQuery, InstanceRecord, MessageRecord, Status, Store,
    StoreError, TaskRecord, Write,
};
use super::{cached, to_i64, PostgresStore};

/// An instance's columns, its waits as an array (`instances i`).
macro_rules! columns {
    // (also `wake.rs`'s)
    () => {
        "SELECT i.id, i.process, i.fingerprint, i.status, i.key, i.seq, i.state::text,
                i.outcome::text, i.updated_ms, i.business_key, i.started_ms, i.incidents,
                array(SELECT node FROM instance_waits WHERE instance = i.id ORDER BY node),
                i.due_ms, i.at_rest,
                (SELECT string_agg(kind || chr(30) || name || chr(30) || key, chr(31))
                 FROM instance_wakes WHERE instance = i.id)"
    };
}

impl PostgresStore {
    pub(super) fn unsigned(&self, what: &str, n: i64) -> Result<u64, StoreError> {
        u64::try_from(n).map_err(|_| self.corrupt(format!("negative {what} {n}")))
    }

    pub(super) fn status(&self, name: &str) -> Result<Status, StoreError> {
        Status::from_name(name).ok_or_else(|| self.corrupt(format!("unknown status {name:?}")))
    }

    pub(super) fn record(&self, row: &Row) -> Result<InstanceRecord, StoreError> {
        let get = |e| self.fail("reading an instance", e);
        let status: String = row.try_get(3).map_err(get)?;
        Ok(InstanceRecord {
            id: self.unsigned("instance id", row.try_get(0).map_err(get)?)?,
            process: row.try_get(1).map_err(get)?,
            fingerprint: row.try_get::<_, i64>(2).map_err(get)? as u64,
            status: self.status(&status)?,
            key: row.try_get(4).map_err(get)?,
            seq: self.unsigned("seq", row.try_get(5).map_err(get)?)?,
            state: row.try_get(6).map_err(get)?,
            outcome: row.try_get(7).map_err(get)?,
            updated_ms: row.try_get(8).map_err(get)?,
            business_key: row.try_get(9).map_err(get)?,
            started_ms: row.try_get(10).map_err(get)?,
            incidents: u32::try_from(row.try_get::<_, i32>(11).map_err(get)?).unwrap_or(0),
            waits: row.try_get(12).map_err(get)?,
            wake: super::super::wake::joined(
                row.try_get(13).map_err(get)?,
                row.try_get(14).map_err(get)?,
                row.try_get::<_, Option<&str>>(15).map_err(get)?,
            ),
        })
    }

    pub(super) fn query_instances(
        &self,
        sql: &'static str,
        params: &[&(dyn ToSql + Sync)],
    ) -> Result<Vec<InstanceRecord>, StoreError> {
        let rows = self.with(|inner| {
            let statement = inner.statement(sql, &self.location)?;
            inner
                .client
                .query(&statement, params)
                .map_err(|e| self.fail("reading instances", e))
        })?;
        rows.iter().map(|row| self.record(row)).collect()
    }
}

impl Store for PostgresStore {
    fn apply(&self, batch: &[Write]) -> Result<(), StoreError> {
        if batch.is_empty() {
            return Ok(());
        }
        self.transact(|tx, statements| {
            self.apply_batch(tx, statements, batch)?;
            self.sync_waits(tx, statements, batch)?;
            self.sync_wakes(tx, statements, batch)?;
            let mut next = Ids::default();
            for write in batch {
                raise_ids(&mut next, write);
            }
            for (key, id) in [
                ("next_instance_id", next.instance),
                ("next_message_id", next.message),
                ("next_deployment_id", next.deployment),
            ] {
                if id > 0 {
                    let statement = cached(
                        statements,
                        tx,
                        "UPDATE meta SET value = greatest(value::bigint, $2)::text WHERE key = $1",
                        &self.location,
                    )?;
                    tx.execute(&statement, &[&key, &to_i64(id)])
                        .map_err(|e| self.fail("raising the id high-water mark", e))?;
                }
            }
            Ok(())
        })
    }

    fn running(&self) -> Result<Vec<InstanceRecord>, StoreError> {
        self.list(None, Some(Status::Running))
    }

    fn instance(&self, id: u64) -> Result<Option<InstanceRecord>, StoreError> {
        let Ok(id) = i64::try_from(id) else {
            return Ok(None);
        };
        Ok(self
            .query_instances(
                concat!(columns!(), " FROM instances i WHERE id = $1"),
                &[&id],
            )?
            .pop())
    }

    fn list(
        &self,
        process: Option<&str>,
        status: Option<Status>,
    ) -> Result<Vec<InstanceRecord>, StoreError> {
        macro_rules! select {
            ($filter:literal) => {
                concat!(columns!(), " FROM instances i ", $filter, " ORDER BY id")
            };
        }
        // One statement per filter, so each gets a plan that fits it (the status index
        // for running() at recovery).
        let status = status.map(Status::as_str);
        match (process, status) {
            (None, None) => self.query_instances(select!(""), &[]),
            (Some(p), None) => self.query_instances(select!("WHERE process = $1"), &[&p]),
            (None, Some(s)) => self.query_instances(select!("WHERE status = $1"), &[&s]),
            (Some(p), Some(s)) => {
                self.query_instances(select!("WHERE status = $2 AND process = $1"), &[&p, &s])
            }
        }
    }

    fn query(&self, query: &InstanceQuery) -> Result<Vec<InstanceRecord>, StoreError> {
        let columns = columns!().trim_start_matches("SELECT ");
        let sql = Sql::select(query, columns, mark);
        let rows = self.with(|inner| {
            inner
                .client
                .query(sql.text.as_str(), &sql_params(&sql))
                .map_err(|e| self.fail("querying instances", e))
        })?;
        rows.iter().map(|row| self.record(row)).collect()
    }

    fn count(&self, query: &InstanceQuery) -> Result<u64, StoreError> {
        let sql = Sql::count(query, mark);
        let row = self.with(|inner| {
            inner
                .client
                .query_one(sql.text.as_str(), &sql_params(&sql))
                .map_err(|e| self.fail("counting instances", e))
        })?;
        let n: i64 = row
            .try_get(0)
            .map_err(|e| self.fail("counting instances", e))?;
        self.unsigned("count", n)
    }

    fn messages(&self) -> Result<Vec<MessageRecord>, StoreError> {
        let rows = self.with(|inner| {
            let statement = inner.statement(
                "SELECT id, name, key, payload::text, expires_ms FROM messages ORDER BY id",
                &self.location,
            )?;
            inner
                .client
                .query(&statement, &[])
                .map_err(|e| self.fail("reading messages", e))
        })?;
        let get = |e| self.fail("reading messages", e);
        rows.iter()
            .map(|row| {
                Ok(MessageRecord {
                    id: self.unsigned("message id", row.try_get(0).map_err(get)?)?,
                    name: row.try_get(1).map_err(get)?,
                    key: row.try_get(2).map_err(get)?,
                    payload: row.try_get(3).map_err(get)?,
                    expires_ms: row.try_get(4).map_err(get)?,
                })
            })
            .collect()
    }

    fn deployments(&self) -> Result<Vec<DeploymentRecord>, StoreError> {
        let rows = self.with(|inner| {
            let statement = inner.statement(
                "SELECT id, process, fingerprint, data::text, timer_anchors::text
                 FROM deployments ORDER BY id",
                &self.location,
            )?;
            inner
                .client
                .query(&statement, &[])
                .map_err(|e| self.fail("reading deployments", e))
        })?;
        let get = |e| self.fail("reading deployments", e);
        rows.iter()
            .map(|row| {
                Ok(DeploymentRecord {
                    id: self.unsigned("deployment id", row.try_get(0).map_err(get)?)?,
                    process: row.try_get(1).map_err(get)?,
                    fingerprint: row.try_get::<_, i64>(2).map_err(get)? as u64,
                    data: row.try_get(3).map_err(get)?,
                    timer_anchors: row.try_get(4).map_err(get)?,
                })
            })
            .collect()
    }

    fn next_ids(&self) -> Result<Ids, StoreError> {
        let rows = self.with(|inner| {
            let statement = inner.statement(
                "SELECT key, value FROM meta WHERE key IN
                   ('next_instance_id', 'next_message_id', 'next_deployment_id')",
                &self.location,
            )?;
            inner
                .client
                .query(&statement, &[])
                .map_err(|e| self.fail("reading the id high-water marks", e))
        })?;
        let get = |e| self.fail("reading the id high-water marks", e);
        let mut ids = [None; 3];
        for row in &rows {
            let key: String = row.try_get(0).map_err(get)?;
            let value: String = row.try_get(1).map_err(get)?;
            let slot = match key.as_str() {
                "next_instance_id" => 0,
                "next_message_id" => 1,
                _ => 2,
            };
            let n: i64 = value
                .parse()
                .map_err(|_| self.corrupt(format!("{key} is {value:?}")))?;
            ids[slot] = Some(self.unsigned(&key, n)?);
        }
        let [Some(instance), Some(message), Some(deployment)] = ids else {
            return Err(self.corrupt("an id high-water mark is missing".into()));
        };
        Ok(Ids {
            instance,
            message,
            deployment,
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
        const LOAD: &str = concat!(
            columns!(),
            " FROM instances i WHERE i.status = 'running' AND i.id IN (
               SELECT id FROM instances WHERE NOT at_rest AND status = 'running'
               UNION SELECT id FROM instances
                 WHERE due_ms IS NOT NULL AND due_ms <= $1 AND status = 'running'
               UNION SELECT w.instance FROM messages m JOIN instance_wakes w
                 ON w.kind = 'message' AND w.name = m.name AND w.key = m.key)
             ORDER BY i.id"
        );
        self.read_to_load(LOAD, now_ms)
    }

    fn resting(
        &self,
        after: Option<u64>,
        limit: usize,
    ) -> Result<Vec<crate::store::Resting>, StoreError> {
        self.read_resting(after, limit)
    }
}

/// `$1`, `$2`, ...
fn mark(n: usize) -> String {
    format!("${n}")
}

fn sql_params(sql: &Sql) -> Vec<&(dyn ToSql + Sync)> {
    sql.params
        .iter()
        .map(|p| match p {
            Param::Text(t) => t as &(dyn ToSql + Sync),
            Param::Int(n) => n as &(dyn ToSql + Sync),
        })
        .collect()
}
