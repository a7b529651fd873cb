//! A node taking over instances whose leases ran out, and what it can tell of
//! instances it cannot take yet: the leases other nodes hold, the processes not
//! registered here.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use postgres::types::ToSql;

use super::super::{InstanceRecord, StoreError};
use super::{to_i64, PostgresStore};

/// One change of an instance's owner, as `handovers` records it.
///
/// Needs the `postgres` feature.
#[derive(Clone, Debug, PartialEq, Eq)]
#[cfg_attr(docsrs, doc(cfg(feature = "postgres")))]
pub struct Handover {
    /// The instance.
    pub instance: u64,
    /// The fence the new owner holds it with.
    pub fence: i64,
    /// The node that had it (`None`: no node had owned it).
    pub from: Option<String>,
    /// The node that took it.
    pub to: String,
}

/// A running instance a node took over, with the fence it now holds it with.
#[derive(Clone, Debug)]
pub(crate) struct TakenOver {
    pub(crate) record: InstanceRecord,
    pub(crate) fence: i64,
    pub(crate) from: Option<String>,
}

/// Running instances another node holds by a lease that has not run out: a live
/// node's, or one that died and whose leases run out by `free_at`.
///
/// Needs the `postgres` feature.
#[derive(Clone, Debug, PartialEq, Eq)]
#[cfg_attr(docsrs, doc(cfg(feature = "postgres")))]
pub struct Leased {
    /// The node holding them.
    pub node: String,
    /// How many.
    pub instances: usize,
    /// When the last of their leases runs out, unless renewed (a live node renews
    /// them: this moves on).
    pub free_at: SystemTime,
}

impl PostgresStore {
    /// Take over at most `limit` running instances of the given processes (name and
    /// fingerprint: instances this node can resume) whose lease expired or that no
    /// node owns: owner = this node, a new lease, `fence + 1`, a `handovers` row each.
    /// Never its own, nor those in `not` (instances this node lost whose loops have
    /// not stopped yet here): a node id is never reused, so an instance of this
    /// node's previous life has another owner's name.
    pub(crate) fn take_over(
        &self,
        processes: &[(String, u64)],
        not: &[u64],
        limit: usize,
    ) -> Result<Vec<TakenOver>, StoreError> {
        let node = self.node_fences()?;
        let names: Vec<&str> = processes.iter().map(|(n, _)| n.as_str()).collect();
        let prints: Vec<i64> = processes.iter().map(|(_, f)| *f as i64).collect();
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        let _ownership = node.ownership.lock().unwrap_or_else(|p| p.into_inner());
        let rows = self.rows_once(
            "WITH expired AS (
               SELECT id, owner FROM instances
               WHERE status = 'running' AND (lease_until IS NULL OR lease_until < now())
                 AND owner IS DISTINCT FROM $1 AND NOT (id = ANY($6::bigint[]))
                 AND (process, fingerprint) IN (SELECT * FROM unnest($3::text[], $4::bigint[]))
               ORDER BY id LIMIT $5 FOR UPDATE SKIP LOCKED),
             moved AS (
               UPDATE instances i
               SET owner = $1, lease_until = now() + $2 * interval '1 millisecond',
                   fence = i.fence + 1
               FROM expired WHERE i.id = expired.id
               RETURNING i.id, i.process, i.fingerprint, i.status, i.key, i.seq,
                         i.state::text, i.outcome::text, i.updated_ms, i.business_key,
                         i.started_ms, i.incidents,
                         array(SELECT node FROM instance_waits
                               WHERE instance = i.id ORDER BY node) AS waits,
                         i.due_ms, i.at_rest,
                         (SELECT string_agg(kind || chr(30) || name || chr(30) || key, chr(31))
                          FROM instance_wakes WHERE instance = i.id) AS wakes,
                         i.fence, expired.owner AS from_owner),
             logged AS (
               INSERT INTO handovers (instance, fence, from_owner, to_owner)
               SELECT id, fence, from_owner, $1 FROM moved)
             SELECT * FROM moved ORDER BY id",
            // Not run twice: a takeover whose answer was lost would leave the
            // instances it took owned here and run nowhere.
            &[
                &node.node,
                &(node.lease_ms as f64),
                &names,
                &prints,
                &limit,
                &not.iter().map(|id| to_i64(*id)).collect::<Vec<i64>>(),
            ],
            "taking over instances",
        )?;
        let mut taken = Vec::with_capacity(rows.len());
        for row in &rows {
            let record = self.record(row)?;
            let fence: i64 = row.get(16);
            let from: Option<String> = row.get(17);
            taken.push(TakenOver {
                record,
                fence,
                from,
            });
        }
        let mut fences = node.fences.lock().unwrap_or_else(|p| p.into_inner());
        for t in &taken {
            fences.insert(t.record.id, t.fence);
        }
        Ok(taken)
    }

    /// Which of `ids` another node owns now (running, with another owner).
    pub(crate) fn moved(&self, ids: &[u64]) -> Result<Vec<u64>, StoreError> {
        let node = self.node_fences()?;
        let ids: Vec<i64> = ids.iter().map(|id| to_i64(*id)).collect();
        let rows = self.rows(
            "SELECT id FROM instances
             WHERE id = ANY($1::bigint[]) AND status = 'running' AND owner IS DISTINCT FROM $2",
            &[&ids, &node.node],
            "reading owners",
        )?;
        rows.iter()
            .map(|r| self.unsigned("instance id", r.get(0)))
            .collect()
    }

    /// Every change of owner recorded, by instance and fence.
    pub fn handovers(&self) -> Result<Vec<Handover>, StoreError> {
        let rows = self.rows(
            "SELECT instance, fence, from_owner, to_owner FROM handovers ORDER BY instance, fence",
            &[],
            "reading handovers",
        )?;
        rows.iter()
            .map(|r| {
                Ok(Handover {
                    instance: self.unsigned("instance id", r.get(0))?,
                    fence: r.get(1),
                    from: r.get(2),
                    to: r.get(3),
                })
            })
            .collect()
    }

    /// Who owns instance `id`, with which fence (`None`: not stored).
    pub fn owner(&self, id: u64) -> Result<Option<(Option<String>, i64)>, StoreError> {
        let rows = self.rows(
            "SELECT owner, fence FROM instances WHERE id = $1",
            &[&to_i64(id)],
            "reading an owner",
        )?;
        Ok(rows.first().map(|r| (r.get(0), r.get(1))))
    }

    /// The running instances of `processes` (name and fingerprint) that other nodes
    /// hold by leases not run out yet, by node.
    pub(crate) fn leased_elsewhere(
        &self,
        processes: &[(String, u64)],
    ) -> Result<Vec<Leased>, StoreError> {
        let node = self.node_fences()?;
        let names: Vec<&str> = processes.iter().map(|(n, _)| n.as_str()).collect();
        let prints: Vec<i64> = processes.iter().map(|(_, f)| *f as i64).collect();
        let params: [&(dyn ToSql + Sync); 3] = [&node.node, &names, &prints];
        let rows = self.rows(
            "SELECT owner, count(*),
                    (extract(epoch FROM max(lease_until)) * 1000)::bigint
             FROM instances
             WHERE status = 'running' AND owner IS DISTINCT FROM $1
               AND lease_until >= now()
               AND (process, fingerprint) IN (SELECT * FROM unnest($2::text[], $3::bigint[]))
             GROUP BY owner ORDER BY owner",
            &params,
            "reading the leases of other nodes",
        )?;
        Ok(rows
            .iter()
            .map(|r| Leased {
                node: r.get::<_, Option<String>>(0).unwrap_or_default(),
                instances: r.get::<_, i64>(1).max(0) as usize,
                free_at: UNIX_EPOCH + Duration::from_millis(r.get::<_, i64>(2).max(0) as u64),
            })
            .collect())
    }

    /// The running instances whose process is none of `names` (not registered on
    /// this node) and that no node holds by a live lease: nobody runs them, and this
    /// node cannot take them. As (id, process).
    pub(crate) fn running_elsewhere(
        &self,
        names: &[&str],
    ) -> Result<Vec<(u64, String)>, StoreError> {
        let rows = self.rows(
            "SELECT id, process FROM instances
             WHERE status = 'running' AND process <> ALL($1::text[])
               AND (lease_until IS NULL OR lease_until < now())
             ORDER BY id",
            &[&names],
            "reading instances of processes not registered",
        )?;
        rows.iter()
            .map(|r| Ok((self.unsigned("instance id", r.get(0))?, r.get(1))))
            .collect()
    }
}
