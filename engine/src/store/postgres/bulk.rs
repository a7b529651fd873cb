//! Runs of checkpoints or ends in one statement each (`unnest` of arrays): a group
//! commit of many instances costs a few round trips, not one per write.
//!
//! A run is consecutive `Put`s (or consecutive `End`s) of distinct instances, so the
//! batch's order is kept. It runs under a savepoint; if it changed fewer rows than
//! it holds (a stale or fenced checkpoint, an ended instance, ...) or failed, the
//! savepoint is rolled back and the run's writes are applied one by one, which names
//! the write at fault exactly as a lone write would.

use std::collections::{HashMap, HashSet};

use postgres::Statement;

use super::super::{check, StoreError, Write};
use super::{cached, to_i64, PostgresStore};

/// Below this, a run is applied write by write.
const MIN_RUN: usize = 2;

impl PostgresStore {
    /// Apply `batch` in `tx`: runs in bulk, everything else one by one.
    pub(super) fn apply_batch(
        &self,
        tx: &mut postgres::Transaction<'_>,
        statements: &mut HashMap<&'static str, Statement>,
        batch: &[Write],
    ) -> Result<(), StoreError> {
        let mut at = 0;
        while at < batch.len() {
            let run = run_length(&batch[at..]);
            if run >= MIN_RUN {
                let writes = &batch[at..at + run];
                if !self.try_bulk(tx, statements, writes)? {
                    for write in writes {
                        self.apply_one(tx, statements, write)?;
                    }
                }
                at += run;
            } else {
                self.apply_one(tx, statements, &batch[at])?;
                at += 1;
            }
        }
        Ok(())
    }

    /// Apply `writes` (one run) in one statement under a savepoint: `false` (rolled
    /// back) if it did not apply every write.
    fn try_bulk(
        &self,
        tx: &mut postgres::Transaction<'_>,
        statements: &mut HashMap<&'static str, Statement>,
        writes: &[Write],
    ) -> Result<bool, StoreError> {
        if writes.iter().any(|w| check(w).is_err()) {
            return Ok(false);
        }
        tx.batch_execute("SAVEPOINT thresh_bulk")
            .map_err(|e| self.fail("opening a savepoint", e))?;
        let applied = match &writes[0] {
            Write::Put(_) => self.bulk_put(tx, statements, writes),
            _ => self.bulk_end(tx, statements, writes),
        };
        match applied {
            Ok(n) if n == writes.len() as u64 => {
                tx.batch_execute("RELEASE SAVEPOINT thresh_bulk")
                    .map_err(|e| self.fail("releasing a savepoint", e))?;
                Ok(true)
            }
            // A refusal or an error (bad JSON, a NUL): the writes one by one say which.
            Ok(_) | Err(StoreError::Postgres { .. }) => {
                tx.batch_execute("ROLLBACK TO SAVEPOINT thresh_bulk")
                    .map_err(|e| self.fail("rolling back a savepoint", e))?;
                Ok(false)
            }
            Err(e) => Err(e),
        }
    }

    fn bulk_put(
        &self,
        tx: &mut postgres::Transaction<'_>,
        statements: &mut HashMap<&'static str, Statement>,
        writes: &[Write],
    ) -> Result<u64, StoreError> {
        let records: Vec<_> = writes
            .iter()
            .filter_map(|w| match w {
                Write::Put(r) => Some(r),
                _ => None,
            })
            .collect();
        let ids: Vec<i64> = records.iter().map(|r| to_i64(r.id)).collect();
        let processes: Vec<&str> = records.iter().map(|r| r.process.as_str()).collect();
        let prints: Vec<i64> = records.iter().map(|r| r.fingerprint as i64).collect();
        let statuses: Vec<&str> = records.iter().map(|r| r.status.as_str()).collect();
        let keys: Vec<Option<&str>> = records.iter().map(|r| r.key.as_deref()).collect();
        let seqs: Vec<i64> = records.iter().map(|r| to_i64(r.seq)).collect();
        let states: Vec<&str> = records.iter().map(|r| r.state.as_str()).collect();
        let outcomes: Vec<Option<&str>> = records.iter().map(|r| r.outcome.as_deref()).collect();
        let updated: Vec<i64> = records.iter().map(|r| r.updated_ms).collect();
        let business: Vec<Option<&str>> =
            records.iter().map(|r| r.business_key.as_deref()).collect();
        let started: Vec<i64> = records.iter().map(|r| r.started_ms).collect();
        let incidents: Vec<i32> = records.iter().map(|r| r.incidents as i32).collect();
        let Some(node) = &self.node else {
            let statement = cached(
                statements,
                tx,
                "INSERT INTO instances
                   (id, process, fingerprint, status, key, seq, state, outcome, updated_ms,
                    business_key, started_ms, incidents)
                 SELECT id, process, fingerprint, status, key, seq, state::json, outcome::json,
                        updated_ms, business_key, started_ms, incidents
                 FROM unnest($1::bigint[], $2::text[], $3::bigint[], $4::text[], $5::text[],
                             $6::bigint[], $7::text[], $8::text[], $9::bigint[],
                             $10::text[], $11::bigint[], $12::int[])
                   AS t(id, process, fingerprint, status, key, seq, state, outcome, updated_ms,
                        business_key, started_ms, incidents)
                 ON CONFLICT (id) DO UPDATE SET
                   process = excluded.process, fingerprint = excluded.fingerprint,
                   status = excluded.status, key = excluded.key, seq = excluded.seq,
                   state = excluded.state, outcome = excluded.outcome,
                   updated_ms = excluded.updated_ms, business_key = excluded.business_key,
                   started_ms = excluded.started_ms, incidents = excluded.incidents
                 WHERE instances.status = 'running' AND excluded.seq > instances.seq",
                &self.location,
            )?;
            return tx
                .execute(
                    &statement,
                    &[
                        &ids, &processes, &prints, &statuses, &keys, &seqs, &states, &outcomes,
                        &updated, &business, &started, &incidents,
                    ],
                )
                .map_err(|e| self.fail("storing checkpoints", e));
        };
        let fences: Vec<i64> = records.iter().map(|r| node.fence(r.id)).collect();
        let statement = cached(
            statements,
            tx,
            "INSERT INTO instances
               (id, process, fingerprint, status, key, seq, state, outcome, updated_ms,
                owner, lease_until, fence, business_key, started_ms, incidents)
             SELECT id, process, fingerprint, status, key, seq, state::json, outcome::json,
                    updated_ms, $10, now() + $11 * interval '1 millisecond', fence,
                    business_key, started_ms, incidents
             FROM unnest($1::bigint[], $2::text[], $3::bigint[], $4::text[], $5::text[],
                         $6::bigint[], $7::text[], $8::text[], $9::bigint[], $12::bigint[],
                         $13::text[], $14::bigint[], $15::int[])
               AS t(id, process, fingerprint, status, key, seq, state, outcome, updated_ms,
                    fence, business_key, started_ms, incidents)
             ON CONFLICT (id) DO UPDATE SET
               process = excluded.process, fingerprint = excluded.fingerprint,
               status = excluded.status, key = excluded.key, seq = excluded.seq,
               state = excluded.state, outcome = excluded.outcome,
               updated_ms = excluded.updated_ms, lease_until = excluded.lease_until,
               business_key = excluded.business_key, started_ms = excluded.started_ms,
               incidents = excluded.incidents
             WHERE instances.status = 'running' AND excluded.seq > instances.seq
               AND instances.owner = $10 AND instances.fence = excluded.fence",
            &self.location,
        )?;
        // A new instance's row gets the fence held for it (1: it started here).
        tx.execute(
            &statement,
            &[
                &ids,
                &processes,
                &prints,
                &statuses,
                &keys,
                &seqs,
                &states,
                &outcomes,
                &updated,
                &node.node,
                &(node.lease_ms as f64),
                &fences,
                &business,
                &started,
                &incidents,
            ],
        )
        .map_err(|e| self.fail("storing checkpoints", e))
    }

    /// The conditions besides `i.id = t.id` are wrapped in `IS TRUE` so that no index
    /// but the primary key can serve them: with the statistics of a table that just
    /// grew (an estimate of one running row) the planner otherwise scans the
    /// running-by-owner index for every element of the array.
    fn bulk_end(
        &self,
        tx: &mut postgres::Transaction<'_>,
        statements: &mut HashMap<&'static str, Statement>,
        writes: &[Write],
    ) -> Result<u64, StoreError> {
        let mut ids = Vec::new();
        let mut statuses = Vec::new();
        let mut outcomes = Vec::new();
        let mut ats = Vec::new();
        for write in writes {
            if let Write::End {
                id,
                status,
                outcome,
                at_ms,
            } = write
            {
                ids.push(to_i64(*id));
                statuses.push(status.as_str());
                outcomes.push(outcome.as_deref());
                ats.push(*at_ms);
            }
        }
        // Their open tasks leave the task list, as a lone end's do (`apply_one`):
        // under the run's savepoint, so a refused run puts them back.
        let statement = cached(
            statements,
            tx,
            "DELETE FROM user_tasks WHERE instance = ANY($1::bigint[])",
            &self.location,
        )?;
        tx.execute(&statement, &[&ids])
            .map_err(|e| self.fail("ending instances' tasks", e))?;
        let Some(node) = &self.node else {
            let statement = cached(
                statements,
                tx,
                "UPDATE instances i SET status = t.status, outcome = t.outcome::json,
                                        updated_ms = t.at
                 FROM unnest($1::bigint[], $2::text[], $3::text[], $4::bigint[])
                   AS t(id, status, outcome, at)
                 WHERE i.id = t.id AND (i.status = 'running') IS TRUE",
                &self.location,
            )?;
            return tx
                .execute(&statement, &[&ids, &statuses, &outcomes, &ats])
                .map_err(|e| self.fail("ending instances", e));
        };
        let fences: Vec<i64> = ids.iter().map(|id| node.fence(*id as u64)).collect();
        // As a lone end: one with a correlation key an unclaimed message is stored
        // for wakes every node (`cluster.rs`).
        let statement = cached(
            statements,
            tx,
            "WITH ended AS (
               UPDATE instances i SET status = t.status, outcome = t.outcome::json,
                                      updated_ms = t.at
               FROM unnest($1::bigint[], $2::text[], $3::text[], $4::bigint[], $6::bigint[])
                 AS t(id, status, outcome, at, fence)
               WHERE i.id = t.id
                 AND (i.status = 'running' AND i.owner = $5 AND i.fence = t.fence) IS TRUE
               RETURNING i.key)
             SELECT (SELECT count(*) FROM ended),
                    (SELECT count(*) FROM (SELECT pg_notify($7, '')
                       WHERE EXISTS (SELECT 1 FROM ended e JOIN messages m ON m.key = e.key
                                     WHERE m.claim_until IS NULL
                                        OR m.claim_until < now())) n)",
            &self.location,
        )?;
        let (channel, _) = super::cluster::channels(&self.schema);
        let row = tx
            .query_one(
                &statement,
                &[
                    &ids, &statuses, &outcomes, &ats, &node.node, &fences, &channel,
                ],
            )
            .map_err(|e| self.fail("ending instances", e))?;
        Ok(u64::try_from(row.get::<_, i64>(0)).unwrap_or(0))
    }
}

/// How many writes from the start of `writes` form one run: `Put`s (or `End`s) of
/// distinct instances, no NUL in their text (PostgreSQL refuses it: the lone path
/// says so).
fn run_length(writes: &[Write]) -> usize {
    let mut seen = HashSet::new();
    let kind = std::mem::discriminant(&writes[0]);
    writes
        .iter()
        .take_while(|w| {
            std::mem::discriminant(*w) == kind
                && match w {
                    Write::Put(r) => seen.insert(r.id),
                    Write::End { id, .. } => seen.insert(*id),
                    _ => false,
                }
        })
        .count()
}
