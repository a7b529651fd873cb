//! [`PostgresStore`]'s writes: one [`Write`] inside the batch's transaction, one
//! statement each.

use std::collections::HashMap;

use postgres::types::ToSql;
use postgres::Statement;

use super::super::{check, Status, StoreError, Write};
use super::{cached, to_i64, PostgresStore};

impl PostgresStore {
    pub(super) fn apply_one(
        &self,
        tx: &mut postgres::Transaction<'_>,
        statements: &mut HashMap<&'static str, Statement>,
        write: &Write,
    ) -> Result<(), StoreError> {
        check(write)?;
        no_nul(write)?;
        // Before the end itself (fenced or not): a failed end rolls this back too.
        if let Write::End { id, .. } = write {
            self.end_tasks(tx, statements, *id)?;
        }
        if let Some(node) = &self.node {
            // A node's checkpoints and ends are fenced (`cluster.rs`).
            if let Some(done) = self.apply_fenced(node, tx, statements, write) {
                return done;
            }
        }
        let mut run = |sql: &'static str,
                       params: &[&(dyn ToSql + Sync)],
                       doing: &'static str|
         -> Result<u64, StoreError> {
            let statement = cached(statements, tx, sql, &self.location)?;
            tx.execute(&statement, params)
                .map_err(|e| self.fail(doing, e))
        };
        match write {
            Write::Put(r) => {
                let changed = run(
                    "INSERT INTO instances
                       (id, process, fingerprint, status, key, seq, state, outcome, updated_ms,
                        business_key, started_ms, incidents)
                     VALUES ($1, $2, $3, $4, $5, $6, $7::text::json, $8::text::json, $9,
                             $10, $11, $12)
                     ON CONFLICT (id) DO UPDATE SET
                       process = excluded.process, fingerprint = excluded.fingerprint,
                       status = excluded.status, key = excluded.key, seq = excluded.seq,
                       state = excluded.state, outcome = excluded.outcome,
                       updated_ms = excluded.updated_ms, business_key = excluded.business_key,
                       started_ms = excluded.started_ms, incidents = excluded.incidents
                     WHERE instances.status = 'running' AND excluded.seq > instances.seq",
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
                        &r.business_key,
                        &r.started_ms,
                        &(r.incidents as i32),
                    ],
                    "storing a checkpoint",
                )?;
                if changed == 0 {
                    let (status, seq) = self
                        .status_of(tx, statements, r.id)?
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
                let gone = run(
                    "DELETE FROM messages WHERE id = $1",
                    &[&to_i64(*message)],
                    "consuming a message",
                )?;
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
                let changed = run(
                    "UPDATE instances SET status = $2, outcome = $3::text::json, updated_ms = $4
                     WHERE id = $1 AND status = 'running'",
                    &[&to_i64(*id), &status.as_str(), outcome, at_ms],
                    "ending an instance",
                )?;
                if changed == 0 {
                    return Err(match self.status_of(tx, statements, *id)? {
                        None => StoreError::UnknownInstance { id: *id },
                        Some(_) => StoreError::InstanceEnded { id: *id },
                    });
                }
            }
            Write::Buffer(m) => {
                let added = run(
                    "INSERT INTO messages (id, name, key, payload, expires_ms)
                     VALUES ($1, $2, $3, $4::text::json, $5) ON CONFLICT (id) DO NOTHING",
                    &[&to_i64(m.id), &m.name, &m.key, &m.payload, &m.expires_ms],
                    "buffering a message",
                )?;
                if added == 0 {
                    return Err(StoreError::DuplicateMessage { id: m.id });
                }
            }
            Write::DropMessage { id } => {
                run(
                    "DELETE FROM messages WHERE id = $1",
                    &[&to_i64(*id)],
                    "dropping a message",
                )?;
            }
            Write::DropStale { names, key } => {
                run(
                    "DELETE FROM messages WHERE key = $1 AND name = ANY($2::text[])
                       AND (claim_until IS NULL OR claim_until < now())",
                    &[key, names],
                    "dropping stale messages",
                )?;
            }
            Write::Expire { now_ms } => {
                let statement = cached(
                    statements,
                    tx,
                    "DELETE FROM messages WHERE expires_ms <= $1 RETURNING name, key",
                    &self.location,
                )?;
                let expired = tx
                    .query(&statement, &[now_ms])
                    .map_err(|e| self.fail("expiring messages", e))?;
                for row in &expired {
                    super::super::expired_message(row.get(0), row.get(1));
                }
            }
            Write::PutDeployment(d) => {
                run(
                    "INSERT INTO deployments (id, process, fingerprint, data, timer_anchors)
                     VALUES ($1, $2, $3, $4::text::json, $5::text::json)
                     ON CONFLICT (id) DO UPDATE SET
                       process = excluded.process, fingerprint = excluded.fingerprint,
                       data = excluded.data, timer_anchors = excluded.timer_anchors",
                    &[
                        &to_i64(d.id),
                        &d.process,
                        &(d.fingerprint as i64),
                        &d.data,
                        &d.timer_anchors,
                    ],
                    "storing a deployment",
                )?;
            }
            Write::Tick { deployment: d, .. } => {
                // Created if missing, then locked: of nodes ticking one schedule at
                // once, each compares with what the one before it committed.
                run(
                    "INSERT INTO deployments (id, process, fingerprint, data, timer_anchors)
                     VALUES ($1, $2, $3, $4::text::json, '{}') ON CONFLICT (id) DO NOTHING",
                    &[&to_i64(d.id), &d.process, &(d.fingerprint as i64), &d.data],
                    "storing a deployment",
                )?;
                let statement = cached(
                    statements,
                    tx,
                    "SELECT timer_anchors::text FROM deployments WHERE id = $1 FOR UPDATE",
                    &self.location,
                )?;
                let stored: String = tx
                    .query_one(&statement, &[&to_i64(d.id)])
                    .and_then(|row| row.try_get(0))
                    .map_err(|e| self.fail("reading a timer schedule", e))?;
                let anchors = super::super::tick::ticked(Some(&stored), write)?;
                let statement = cached(
                    statements,
                    tx,
                    "UPDATE deployments SET timer_anchors = $2::text::json WHERE id = $1",
                    &self.location,
                )?;
                tx.execute(&statement, &[&to_i64(d.id), &anchors])
                    .map_err(|e| self.fail("storing a timer tick", e))?;
            }
            Write::RemoveDeployment { id } => {
                run(
                    "DELETE FROM deployments WHERE id = $1",
                    &[&to_i64(*id)],
                    "removing a deployment",
                )?;
            }
            Write::Tasks { instance, open } => {
                self.put_tasks(tx, statements, *instance, open)?;
            }
            Write::Purge { ended_before_ms } => {
                run(
                    "DELETE FROM instances WHERE status <> 'running' AND updated_ms < $1",
                    &[ended_before_ms],
                    "purging ended instances",
                )?;
            }
        }
        Ok(())
    }

    pub(super) fn status_of(
        &self,
        tx: &mut postgres::Transaction<'_>,
        statements: &mut HashMap<&'static str, Statement>,
        id: u64,
    ) -> Result<Option<(Status, u64)>, StoreError> {
        let statement = cached(
            statements,
            tx,
            "SELECT status, seq FROM instances WHERE id = $1",
            &self.location,
        )?;
        let row = tx
            .query_opt(&statement, &[&to_i64(id)])
            .map_err(|e| self.fail("reading an instance", e))?;
        let Some(row) = row else {
            return Ok(None);
        };
        let get = |e| self.fail("reading an instance", e);
        let status: String = row.try_get(0).map_err(get)?;
        let seq: i64 = row.try_get(1).map_err(get)?;
        Ok(Some((self.status(&status)?, self.unsigned("seq", seq)?)))
    }
}

/// PostgreSQL's `text` holds no NUL character: refuse it as an invalid write.
fn no_nul(write: &Write) -> Result<(), StoreError> {
    let fields: Vec<(&str, &str)> = match write {
        Write::Put(r) => {
            let mut v = vec![("process", r.process.as_str()), ("state", r.state.as_str())];
            v.extend(r.key.as_deref().map(|k| ("key", k)));
            v.extend(r.outcome.as_deref().map(|o| ("outcome", o)));
            v
        }
        Write::End {
            outcome: Some(o), ..
        } => vec![("outcome", o.as_str())],
        Write::DropStale { names, key } => {
            let mut v: Vec<(&str, &str)> = names.iter().map(|n| ("name", n.as_str())).collect();
            v.push(("key", key.as_str()));
            v
        }
        Write::Buffer(m) => vec![
            ("name", m.name.as_str()),
            ("key", m.key.as_str()),
            ("payload", m.payload.as_str()),
        ],
        Write::PutDeployment(d) => vec![
            ("process", d.process.as_str()),
            ("data", d.data.as_str()),
            ("timer anchors", d.timer_anchors.as_str()),
        ],
        Write::Tick {
            deployment: d,
            start,
            ..
        } => vec![
            ("process", d.process.as_str()),
            ("data", d.data.as_str()),
            ("timer start", start.as_str()),
        ],
        _ => vec![],
    };
    match fields.iter().find(|(_, text)| text.contains('\0')) {
        Some((what, _)) => Err(StoreError::invalid(
            write,
            format!("{what} holds a NUL character, which PostgreSQL text cannot store"),
        )),
        None => Ok(()),
    }
}

impl PostgresStore {
    /// The side table of waits after a batch's writes: each instance put gets its
    /// last put's waits, each ended one none (and no open incident). Three
    /// statements for the whole batch, whatever its size.
    pub(super) fn sync_waits(
        &self,
        tx: &mut postgres::Transaction<'_>,
        statements: &mut HashMap<&'static str, Statement>,
        batch: &[Write],
    ) -> Result<(), StoreError> {
        let mut last: HashMap<u64, Option<&super::super::InstanceRecord>> = HashMap::new();
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
        let touched: Vec<i64> = last.keys().map(|id| to_i64(*id)).collect();
        let ended: Vec<i64> = last
            .iter()
            .filter(|(_, r)| r.is_none())
            .map(|(id, _)| to_i64(*id))
            .collect();
        let (mut ids, mut processes, mut nodes, mut started) = (vec![], vec![], vec![], vec![]);
        for r in last.values().flatten() {
            for node in &r.waits {
                ids.push(to_i64(r.id));
                processes.push(r.process.as_str());
                nodes.push(node.as_str());
                started.push(r.started_ms);
            }
        }
        let fail = |e| self.fail("storing instances' waits", e);
        let delete = cached(
            statements,
            tx,
            "DELETE FROM instance_waits WHERE instance = ANY($1)",
            &self.location,
        )?;
        tx.execute(&delete, &[&touched]).map_err(fail)?;
        if !ids.is_empty() {
            let insert = cached(
                statements,
                tx,
                "INSERT INTO instance_waits (instance, process, node, started_ms)
                 SELECT * FROM unnest($1::bigint[], $2::text[], $3::text[], $4::bigint[])
                 ON CONFLICT DO NOTHING",
                &self.location,
            )?;
            tx.execute(&insert, &[&ids, &processes, &nodes, &started])
                .map_err(fail)?;
        }
        if !ended.is_empty() {
            let clear = cached(
                statements,
                tx,
                "UPDATE instances SET incidents = 0 WHERE id = ANY($1) AND incidents > 0",
                &self.location,
            )?;
            tx.execute(&clear, &[&ended]).map_err(fail)?;
        }
        Ok(())
    }
}
