//! [`MemoryStore`]: the store's reference semantics, in memory.

use std::collections::BTreeMap;
use std::sync::{Mutex, MutexGuard};

use super::{
    check, raise_ids, DeploymentRecord, Ids, InstanceRecord, MessageRecord, Status, Store,
    StoreError, TaskRecord, Write,
};

/// A store in memory: the reference semantics every store follows, and the store for
/// tests. Nothing survives the process.
#[derive(Debug, Default)]
pub struct MemoryStore {
    inner: Mutex<Tables>,
}

#[derive(Debug, Default)]
struct Tables {
    instances: BTreeMap<u64, InstanceRecord>,
    messages: BTreeMap<u64, MessageRecord>,
    deployments: BTreeMap<u64, DeploymentRecord>,
    /// Open user tasks, by instance and number.
    tasks: BTreeMap<u64, BTreeMap<u32, TaskRecord>>,
    next: Ids,
}

/// What a write replaced, to roll a failed batch back.
enum Undo {
    Instance(u64, Option<InstanceRecord>),
    Message(u64, Option<MessageRecord>),
    Deployment(u64, Option<DeploymentRecord>),
    Tasks(u64, Option<BTreeMap<u32, TaskRecord>>),
}

impl MemoryStore {
    /// An empty store.
    pub fn new() -> MemoryStore {
        MemoryStore::default()
    }

    fn tables(&self) -> MutexGuard<'_, Tables> {
        // A panic while holding the lock cannot leave a half-applied batch (apply
        // rolls back before it returns), so a poisoned lock is safe to take.
        self.inner
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

impl Tables {
    fn apply_one(&mut self, write: &Write, undo: &mut Vec<Undo>) -> Result<(), StoreError> {
        check(write)?;
        match write {
            Write::Put(record) => {
                if let Some(old) = self.instances.get(&record.id) {
                    if old.status.is_ended() {
                        return Err(StoreError::InstanceEnded { id: record.id });
                    }
                    if record.seq <= old.seq {
                        return Err(StoreError::StaleCheckpoint {
                            id: record.id,
                            stored: old.seq,
                            given: record.seq,
                        });
                    }
                }
                let mut record = record.clone();
                if record.status.is_ended() {
                    // Nothing wakes an ended instance.
                    record.wake = Default::default();
                }
                let id = record.id;
                let old = self.instances.insert(id, record);
                undo.push(Undo::Instance(id, old));
            }
            Write::Consume { message } => match self.messages.remove(message) {
                Some(old) => undo.push(Undo::Message(*message, Some(old))),
                None => return Err(StoreError::MessageGone { id: *message }),
            },
            Write::End {
                id,
                status,
                outcome,
                at_ms,
            } => {
                let Some(record) = self.instances.get_mut(id) else {
                    return Err(StoreError::UnknownInstance { id: *id });
                };
                if record.status.is_ended() {
                    return Err(StoreError::InstanceEnded { id: *id });
                }
                let old = record.clone();
                record.status = *status;
                record.outcome.clone_from(outcome);
                record.updated_ms = *at_ms;
                // An ended instance waits nowhere and has no open incident.
                record.waits.clear();
                record.incidents = 0;
                record.wake = Default::default();
                undo.push(Undo::Instance(*id, Some(old)));
                let tasks = self.tasks.remove(id);
                undo.push(Undo::Tasks(*id, tasks));
            }
            Write::Buffer(message) => {
                if self.messages.contains_key(&message.id) {
                    return Err(StoreError::DuplicateMessage { id: message.id });
                }
                self.messages.insert(message.id, message.clone());
                undo.push(Undo::Message(message.id, None));
            }
            Write::DropMessage { id } => {
                if let Some(old) = self.messages.remove(id) {
                    undo.push(Undo::Message(*id, Some(old)));
                }
            }
            Write::DropStale { names, key } => {
                let stale: Vec<u64> = self
                    .messages
                    .values()
                    .filter(|m| m.key == *key && names.contains(&m.name))
                    .map(|m| m.id)
                    .collect();
                for id in stale {
                    let old = self.messages.remove(&id);
                    undo.push(Undo::Message(id, old));
                }
            }
            Write::Expire { now_ms } => {
                let expired: Vec<u64> = self
                    .messages
                    .values()
                    .filter(|m| m.expires_ms <= *now_ms)
                    .map(|m| m.id)
                    .collect();
                for id in expired {
                    let old = self.messages.remove(&id);
                    if let Some(m) = &old {
                        super::expired_message(&m.name, &m.key);
                    }
                    undo.push(Undo::Message(id, old));
                }
            }
            Write::PutDeployment(deployment) => {
                let old = self.deployments.insert(deployment.id, deployment.clone());
                undo.push(Undo::Deployment(deployment.id, old));
            }
            Write::Tick { deployment, .. } => {
                let stored = self.deployments.get(&deployment.id);
                let anchors = super::tick::ticked(stored.map(|d| d.timer_anchors.as_str()), write)?;
                let record = match stored {
                    Some(d) => DeploymentRecord {
                        timer_anchors: anchors,
                        ..d.clone()
                    },
                    None => DeploymentRecord {
                        timer_anchors: anchors,
                        ..deployment.clone()
                    },
                };
                let old = self.deployments.insert(deployment.id, record);
                undo.push(Undo::Deployment(deployment.id, old));
            }
            Write::RemoveDeployment { id } => {
                if let Some(old) = self.deployments.remove(id) {
                    undo.push(Undo::Deployment(*id, Some(old)));
                }
            }
            Write::Tasks { instance, open } => {
                let old = self.tasks.remove(instance);
                let mut kept = old.clone().unwrap_or_default();
                kept.retain(|number, _| open.iter().any(|t| t.number == *number));
                for task in open {
                    kept.entry(task.number).or_insert_with(|| task.clone());
                }
                if !kept.is_empty() {
                    self.tasks.insert(*instance, kept);
                }
                undo.push(Undo::Tasks(*instance, old));
            }
            Write::Purge { ended_before_ms } => {
                let purged: Vec<u64> = self
                    .instances
                    .values()
                    .filter(|r| r.status.is_ended() && r.updated_ms < *ended_before_ms)
                    .map(|r| r.id)
                    .collect();
                for id in purged {
                    let old = self.instances.remove(&id);
                    undo.push(Undo::Instance(id, old));
                }
            }
        }
        raise_ids(&mut self.next, write);
        Ok(())
    }

    fn roll_back(&mut self, undo: Vec<Undo>, next: Ids) {
        for step in undo.into_iter().rev() {
            match step {
                Undo::Instance(id, old) => restore(&mut self.instances, id, old),
                Undo::Message(id, old) => restore(&mut self.messages, id, old),
                Undo::Deployment(id, old) => restore(&mut self.deployments, id, old),
                Undo::Tasks(id, old) => restore(&mut self.tasks, id, old),
            }
        }
        self.next = next;
    }
}

fn restore<T>(map: &mut BTreeMap<u64, T>, id: u64, old: Option<T>) {
    match old {
        Some(old) => {
            map.insert(id, old);
        }
        None => {
            map.remove(&id);
        }
    }
}

impl Store for MemoryStore {
    fn apply(&self, batch: &[Write]) -> Result<(), StoreError> {
        let mut tables = self.tables();
        let next = tables.next;
        let mut undo = Vec::new();
        for write in batch {
            if let Err(e) = tables.apply_one(write, &mut undo) {
                tables.roll_back(undo, next);
                return Err(e);
            }
        }
        Ok(())
    }

    fn instance(&self, id: u64) -> Result<Option<InstanceRecord>, StoreError> {
        Ok(self.tables().instances.get(&id).cloned())
    }

    fn list(
        &self,
        process: Option<&str>,
        status: Option<Status>,
    ) -> Result<Vec<InstanceRecord>, StoreError> {
        Ok(self
            .tables()
            .instances
            .values()
            .filter(|r| process.is_none_or(|p| r.process == p))
            .filter(|r| status.is_none_or(|s| r.status == s))
            .cloned()
            .collect())
    }

    fn messages(&self) -> Result<Vec<MessageRecord>, StoreError> {
        Ok(self.tables().messages.values().cloned().collect())
    }

    fn deployments(&self) -> Result<Vec<DeploymentRecord>, StoreError> {
        Ok(self.tables().deployments.values().cloned().collect())
    }

    fn next_ids(&self) -> Result<Ids, StoreError> {
        Ok(self.tables().next)
    }

    fn tasks(&self, query: &crate::tasklist::TaskQuery) -> Result<Vec<TaskRecord>, StoreError> {
        let tables = self.tables();
        Ok(super::select_tasks(
            tables.tasks.values().flat_map(|open| open.values()),
            query,
        ))
    }

    // The wake index's reads without a copy of every record: the one timer of
    // the evicted instances reads `due_after` at each due time, a resume reads
    // `resting` a page at a time.
    fn due_after(
        &self,
        after: Option<(i64, u64)>,
        at_ms: i64,
        limit: usize,
    ) -> Result<Vec<(i64, u64)>, StoreError> {
        let tables = self.tables();
        Ok(super::wake::due(
            tables.instances.values(),
            after,
            at_ms,
            limit,
        ))
    }

    fn resting(&self, after: Option<u64>, limit: usize) -> Result<Vec<super::Resting>, StoreError> {
        let tables = self.tables();
        let from = after.map_or(std::ops::Bound::Unbounded, std::ops::Bound::Excluded);
        let records = tables
            .instances
            .range((from, std::ops::Bound::Unbounded))
            .map(|(_, r)| r);
        Ok(super::wake::resting(records, None, limit))
    }

    fn claim_task(
        &self,
        instance: u64,
        number: u32,
        user: Option<&str>,
    ) -> Result<Option<TaskRecord>, StoreError> {
        let mut tables = self.tables();
        let Some(task) = tables
            .tasks
            .get_mut(&instance)
            .and_then(|open| open.get_mut(&number))
        else {
            return Ok(None);
        };
        let free = match (&task.claimed_by, user) {
            (Some(by), Some(user)) => by == user,
            _ => true,
        };
        if free {
            task.claimed_by = user.map(str::to_string);
        }
        Ok(Some(task.clone()))
    }
}
