//! [`PostgresStore`]'s wake index (schema 8: `instances.due_ms`,
//! `instances.at_rest`, `instance_wakes`): written after a batch's puts and ends,
//! in its transaction, and read for timers, messages, signals and resume.

use std::collections::{HashMap, HashSet};

use postgres::Statement;

use super::super::{InstanceRecord, Resting, StoreError, Write};
use super::{cached, to_i64, PostgresStore};

impl PostgresStore {
    /// Each instance put gets its last put's wake index, each ended one none. Three
    /// statements for the whole batch; an instance's columns are rewritten only
    /// when they change.
    pub(super) fn sync_wakes(
        &self,
        tx: &mut postgres::Transaction<'_>,
        statements: &mut HashMap<&'static str, Statement>,
        batch: &[Write],
    ) -> Result<(), StoreError> {
        let mut last: HashMap<u64, Option<&InstanceRecord>> = HashMap::new();
        for write in batch {
            match write {
                Write::Put(r) => {
                    last.insert(r.id, (!r.status.is_ended()).then_some(r));
                }
                Write::End { id, .. } => {
                    last.insert(*id, None);
                }
                _ => {}
            }
        }
        if last.is_empty() {
            return Ok(());
        }
        let (mut ids, mut dues, mut rests) = (vec![], vec![], vec![]);
        let (mut subs, mut kinds, mut names, mut keys) = (vec![], vec![], vec![], vec![]);
        for (id, r) in &last {
            ids.push(to_i64(*id));
            dues.push(r.and_then(|r| r.wake.due_ms));
            rests.push(r.is_some_and(|r| r.wake.at_rest));
            let Some(r) = r else { continue };
            for (name, key) in &r.wake.messages {
                subs.push(to_i64(*id));
                kinds.push("message");
                names.push(name.as_str());
                keys.push(key.as_str());
            }
            for name in &r.wake.signals {
                subs.push(to_i64(*id));
                kinds.push("signal");
                names.push(name.as_str());
                keys.push("");
            }
        }
        let fail = |e| self.fail("storing instances' wake index", e);
        let update = cached(
            statements,
            tx,
            "UPDATE instances i SET due_ms = t.due, at_rest = t.rest
             FROM unnest($1::bigint[], $2::bigint[], $3::boolean[]) AS t(id, due, rest)
             WHERE i.id = t.id AND (i.due_ms IS DISTINCT FROM t.due OR i.at_rest <> t.rest)",
            &self.location,
        )?;
        tx.execute(&update, &[&ids, &dues, &rests]).map_err(fail)?;
        let delete = cached(
            statements,
            tx,
            "DELETE FROM instance_wakes WHERE instance = ANY($1)",
            &self.location,
        )?;
        tx.execute(&delete, &[&ids]).map_err(fail)?;
        if !subs.is_empty() {
            let insert = cached(
                statements,
                tx,
                "INSERT INTO instance_wakes (instance, kind, name, key)
                 SELECT * FROM unnest($1::bigint[], $2::text[], $3::text[], $4::text[])
                 ON CONFLICT DO NOTHING",
                &self.location,
            )?;
            tx.execute(&insert, &[&subs, &kinds, &names, &keys])
                .map_err(fail)?;
        }
        Ok(())
    }

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
        let (after_ms, after_id) = after.map_or((i64::MIN, -1), |(at, id)| (at, to_i64(id)));
        let rows = self.with(|inner| {
            let statement = inner.statement(
                "SELECT due_ms, id FROM instances
                 WHERE due_ms IS NOT NULL AND (due_ms, id) > ($1, $2) AND due_ms <= $3
                   AND status = 'running'
                 ORDER BY due_ms, id LIMIT $4",
                &self.location,
            )?;
            inner
                .client
                .query(&statement, &[&after_ms, &after_id, &at_ms, &limit])
                .map_err(|e| self.fail("reading due timers", e))
        })?;
        rows.iter()
            .map(|row| {
                let at: i64 = row
                    .try_get(0)
                    .map_err(|e| self.fail("reading due timers", e))?;
                let id: i64 = row
                    .try_get(1)
                    .map_err(|e| self.fail("reading due timers", e))?;
                Ok((at, self.unsigned("instance id", id)?))
            })
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
        let rows = self.with(|inner| {
            let statement = inner.statement(
                "SELECT instance FROM instance_wakes
                 WHERE kind = $1 AND name = $2 AND key = $3 AND instance > $4
                 ORDER BY instance LIMIT $5",
                &self.location,
            )?;
            inner
                .client
                .query(&statement, &[&kind, &name, &key, &after, &limit])
                .map_err(|e| self.fail("reading subscriptions", e))
        })?;
        rows.iter()
            .map(|row| {
                let id: i64 = row
                    .try_get(0)
                    .map_err(|e| self.fail("reading subscriptions", e))?;
                self.unsigned("instance id", id)
            })
            .collect()
    }

    /// What a resume loads: `load` is the statement of the records with work now.
    pub(super) fn read_to_load(
        &self,
        load: &'static str,
        now_ms: i64,
    ) -> Result<Vec<InstanceRecord>, StoreError> {
        let loaded = self.with(|inner| {
            let statement = inner.statement(load, &self.location)?;
            inner
                .client
                .query(&statement, &[&now_ms])
                .map_err(|e| self.fail("reading what to resume", e))
        })?;
        loaded.iter().map(|row| self.record(row)).collect()
    }

    /// `Store::resting`: a page of the instances at rest, and the subscriptions
    /// of the same range of ids (their primary key's range).
    pub(super) fn read_resting(
        &self,
        after: Option<u64>,
        limit: usize,
    ) -> Result<Vec<Resting>, StoreError> {
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        let after = after.map_or(-1, to_i64);
        let fail = |e| self.fail("reading the instances at rest", e);
        let (resting, subscribed) = self.with(|inner| {
            let statement = inner.statement(
                "SELECT id, process, fingerprint, key, due_ms FROM instances
                 WHERE status = 'running' AND at_rest AND id > $1 ORDER BY id LIMIT $2",
                &self.location,
            )?;
            let resting = inner
                .client
                .query(&statement, &[&after, &limit])
                .map_err(fail)?;
            let Some(last) = resting.last() else {
                return Ok((resting, Vec::new()));
            };
            let last: i64 = last.try_get(0).map_err(fail)?;
            let statement = inner.statement(
                "SELECT DISTINCT instance, kind FROM instance_wakes
                 WHERE instance > $1 AND instance <= $2",
                &self.location,
            )?;
            let subscribed = inner
                .client
                .query(&statement, &[&after, &last])
                .map_err(fail)?;
            Ok((resting, subscribed))
        })?;
        let subscribed: HashSet<(i64, String)> = subscribed
            .iter()
            .map(|row| Ok((row.try_get(0)?, row.try_get(1)?)))
            .collect::<Result<_, postgres::Error>>()
            .map_err(fail)?;
        let has = |id: i64, kind: &str| subscribed.contains(&(id, kind.to_string()));
        resting
            .iter()
            .map(|row| {
                let id: i64 = row.try_get(0).map_err(fail)?;
                Ok(Resting {
                    id: self.unsigned("instance id", id)?,
                    process: row.try_get(1).map_err(fail)?,
                    fingerprint: row.try_get::<_, i64>(2).map_err(fail)? as u64,
                    key: row.try_get(3).map_err(fail)?,
                    due_ms: row.try_get(4).map_err(fail)?,
                    messages: has(id, "message"),
                    signals: has(id, "signal"),
                })
            })
            .collect()
    }
}
