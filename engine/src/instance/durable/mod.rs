//! A durable instance's side of the store (feature `durable`): the loop checkpoints
//! its state after every step that changed it, writes its end, and — after a
//! restart — starts from a checkpoint.
//!
//! Checkpoints go through the store's writer, which batches the checkpoints of all
//! instances into one transaction (group commit); the loop does not wait for the
//! disk. A write that fails comes back to the loop as an input and fails the
//! instance (`InstanceError::Checkpoint`), naming the cause.

pub(crate) mod evict;
mod loops;
pub(crate) mod migrate;
pub(crate) mod records;
mod restore;
mod retries;
mod tasks;
pub(crate) use retries::stored_incidents;
mod take;

use serde_json::json;
use tracing::warn;

use tokio::sync::oneshot;

use super::core::Instance;
use super::input::Input;
use super::outcome::{Ended, InstanceError, InstanceId};
use super::state::ids::TrackId;
use super::state::tracks::TrackState;
use super::work::WorkError;
use crate::data::ProcessData;
use crate::graph::{NodeIdx, NodeKind};
use crate::store::{InstanceRecord, Status, Write, Writer};
use records::{Checkpoint, Codec, Snapshot};

/// Where and as what a durable instance is stored.
pub(crate) struct Durable<D> {
    pub writer: Writer,
    pub codec: Codec<D>,
    /// The instance's id in the store.
    pub id: u64,
    /// The checkpoint number of the last write.
    pub seq: u64,
    pub key: Option<String>,
    /// The business key it was started with (`start_keyed`), written in every
    /// checkpoint (the writer may coalesce the first away).
    pub business_key: Option<String>,
    /// When it started (wall clock, ms), likewise.
    pub started_ms: i64,
    /// The last checkpoint written, to skip a step that changed nothing.
    last: Option<String>,
    /// Stopped by a shutdown: it stays stored as running.
    pub suspended: bool,
    /// Answers to user-task completions and durable signal broadcasts, sent once
    /// the checkpoint that records their effect is stored.
    pub acks: Vec<Ack>,
    /// Whether its checkpoints carry the history.
    pub keep_history: bool,
    /// Stored messages this instance took: consumed with the next checkpoint.
    pub taken: Vec<Write>,
    /// Checkpoint after every task (the default), or only at wait states.
    pub every_task: bool,
    /// Tracks whose task completed since the last checkpoint was written (and the
    /// tracks forked from them): a task they reach waits for the next checkpoint.
    unstored: Vec<TrackId>,
    /// Task starts waiting for the next checkpoint, by track and node.
    deferred: Vec<(TrackId, NodeIdx)>,
    /// Evict the instance once it has rested this long with its state stored
    /// (`DurableEngine::evict_idle`); `None`: never.
    pub evict_after: Option<std::time::Duration>,
    /// Evict it as soon as it rests (`Command::Evict`: a migration takes it).
    pub evict_now: bool,
    /// The last checkpoint number known to be stored (told by `Input::Stored`).
    pub stored: u64,
    /// What an evicted instance kept in memory, for its reload to take up again.
    pub kept: Option<Box<evict::Kept>>,
}

impl<D> Durable<D> {
    pub fn new(writer: Writer, codec: Codec<D>, id: u64, seq: u64, key: Option<String>) -> Self {
        Self {
            writer,
            codec,
            id,
            seq,
            key,
            business_key: None,
            started_ms: now_ms(),
            last: None,
            suspended: false,
            acks: Vec::new(),
            taken: Vec::new(),
            keep_history: false,
            every_task: true,
            unstored: Vec::new(),
            deferred: Vec::new(),
            evict_after: None,
            evict_now: false,
            stored: seq,
            kept: None,
        }
    }
}

/// Who waits for a checkpoint: a user task's completion, or a durable broadcast.
pub(crate) enum Ack {
    Work(oneshot::Sender<Result<(), WorkError>>),
    Signal(crate::events::SignalAck),
}

impl From<oneshot::Sender<Result<(), WorkError>>> for Ack {
    fn from(reply: oneshot::Sender<Result<(), WorkError>>) -> Self {
        Ack::Work(reply)
    }
}

impl From<crate::events::SignalAck> for Ack {
    fn from(ack: crate::events::SignalAck) -> Self {
        Ack::Signal(ack)
    }
}

pub(crate) use crate::query::now_ms;

impl<D: ProcessData> Instance<D> {
    /// A stored message was taken by this instance: it is consumed with the next
    /// checkpoint, the one recording its effect. (A message the broker hands over is
    /// always taken: its subscription followed the data.)
    pub(crate) fn consume_stored(&mut self, stored: Option<u64>) {
        if let (Some(id), Some(durable)) = (stored, &mut self.durable) {
            durable.taken.push(Write::Consume { message: id });
        }
    }

    /// The task on `track` completed: until a checkpoint records it, a task the
    /// token reaches waits (checkpointing at every task).
    pub(crate) fn completed_unstored(&mut self, track: TrackId) {
        if let Some(durable) = &mut self.durable {
            if durable.every_task && !durable.unstored.contains(&track) {
                durable.unstored.push(track);
            }
        }
    }

    /// `fork` was forked from `from`: it carries `from`'s unstored completion.
    pub(crate) fn inherit_unstored(&mut self, from: TrackId, fork: TrackId) {
        if let Some(durable) = &mut self.durable {
            if durable.unstored.contains(&from) {
                durable.unstored.push(fork);
            }
        }
    }

    /// Whether the task `track` reached at `node` waits for the checkpoint recording
    /// the completion before it; it is started by `start_deferred` once that is
    /// stored (a crash before: the checkpoint has the track working at `node`, and
    /// the task runs after the restart).
    pub(crate) fn defer_task(&mut self, track: TrackId, node: NodeIdx) -> bool {
        let Some(durable) = &mut self.durable else {
            return false;
        };
        if !durable.unstored.contains(&track) {
            return false;
        }
        durable.deferred.push((track, node));
        true
    }

    /// The checkpoint before these task starts is stored: run their handlers (those
    /// whose track still works at the task: an interrupt may have taken it meanwhile).
    pub(crate) fn start_deferred(&mut self, starts: Vec<(TrackId, NodeIdx)>) {
        self.step(|this, moves| {
            for (track, node) in starts {
                if !this.tracks.is_at(track, node, TrackState::Working) {
                    continue;
                }
                let NodeKind::Task(handler) = this.process.nodes[node].kind else {
                    continue;
                };
                this.run_handler(track, node, handler, 1, moves);
                if this.outcome.is_some() {
                    return;
                }
            }
        });
    }

    /// Write the state after a step, if it changed. Skipped while a delivery is on its
    /// way to a track: the track's report comes next, and its checkpoint follows.
    /// Checkpointing only at wait states, also skipped while a task works — unless an
    /// acknowledgment waits for it (a user task's completion, a durable broadcast).
    pub(crate) fn checkpoint(&mut self) {
        if self.outcome.is_some() || self.durable.is_none() || self.delivery_in_flight() {
            return;
        }
        let Some(durable) = &self.durable else {
            return;
        };
        if !durable.every_task
            && durable.acks.is_empty()
            && self.tracks.iter().any(|t| {
                // A call activity waits for its child: a wait state.
                t.state() == TrackState::Working
                    && !matches!(self.process.nodes[t.at].kind, NodeKind::Call(_))
            })
        {
            return;
        }
        let snapshot = match self.snapshot(durable.codec.encode, durable.keep_history) {
            Ok(snapshot) => snapshot,
            Err(message) => return self.fail(InstanceError::Checkpoint { message }),
        };
        let state = match serde_json::to_string(&Checkpoint::Running(snapshot)) {
            Ok(state) => state,
            Err(error) => {
                return self.fail(InstanceError::Checkpoint {
                    message: error.to_string(),
                })
            }
        };
        let process = self.process;
        let intake = self.intake_tx.made().clone();
        let (waits, incidents) = self.waits_and_incidents();
        let wake = self.wake_index();
        let waits = waits.into_iter().map(str::to_string).collect();
        let Some(durable) = &mut self.durable else {
            return;
        };
        // Everything completed so far is in this checkpoint.
        durable.unstored.clear();
        let deferred = std::mem::take(&mut durable.deferred);
        if durable.last.as_deref() == Some(state.as_str()) {
            answer(std::mem::take(&mut durable.acks), Ok(()));
            if !deferred.is_empty() {
                let _ = intake.send(Input::Checkpointed(deferred));
            }
            return;
        }
        durable.seq += 1;
        let record = InstanceRecord {
            id: durable.id,
            process: process.name.to_string(),
            fingerprint: process.fingerprint,
            status: Status::Running,
            key: durable.key.clone(),
            seq: durable.seq,
            state: state.clone(),
            outcome: None,
            updated_ms: now_ms(),
            business_key: durable.business_key.clone(),
            started_ms: durable.started_ms,
            waits,
            incidents,
            wake,
        };
        durable.last = Some(state);
        // One transaction: the state with the messages it applied (exactly once).
        let instance = durable.id;
        let mut writes = std::mem::take(&mut durable.taken);
        writes.insert(0, Write::Put(record));
        let tasks = self.tasks_write(instance);
        let Some(durable) = &mut self.durable else {
            return;
        };
        writes.extend(tasks);
        let receipt = durable.writer.submit(writes);
        let acks = std::mem::take(&mut durable.acks);
        // Told only where it may be evicted: it waits for this before it is.
        let stored = (durable.evict_after.is_some() || durable.evict_now).then_some(durable.seq);
        // The loop does not wait for the disk; a failure comes back as an input.
        tokio::spawn(async move {
            match receipt.await {
                Ok(()) => {
                    answer(acks, Ok(()));
                    if !deferred.is_empty() {
                        let _ = intake.send(Input::Checkpointed(deferred));
                    }
                    if let Some(seq) = stored {
                        let _ = intake.send(Input::Stored(seq));
                    }
                }
                Err(error) => {
                    warn!(%error, "checkpoint not stored");
                    answer(acks, Err(not_stored(&error)));
                    let _ = intake.send(Input::CheckpointFailed(Box::new(error)));
                }
            }
        });
    }

    /// A checkpoint was not stored: the instance fails — unless another node owns it
    /// now (fenced): then this node stops running it without ending it in the store
    /// (the new owner goes on), and its handle says it moved.
    pub(crate) fn checkpoint_failed(&mut self, error: crate::store::StoreError) {
        let message = error.to_string();
        if matches!(error, crate::store::StoreError::Fenced { .. }) {
            warn!(%error, "instance moved to another node: stopping it here");
            if let Some(durable) = &mut self.durable {
                durable.suspended = true;
            }
            return self.fail(InstanceError::Moved { message });
        }
        if matches!(error, crate::store::StoreError::CommitUnknown { .. }) {
            // It may be stored: going on could apply a message twice (its consume
            // may be lost) and an end would say more than is known. Stop here; a
            // resume goes on from whatever the store holds.
            warn!(%error, "checkpoint of unknown outcome: stopping the instance here");
            if let Some(durable) = &mut self.durable {
                durable.suspended = true;
            }
            return self.fail(InstanceError::Unknown { message });
        }
        self.fail(InstanceError::Checkpoint { message })
    }

    /// Store how the instance ended — unless a shutdown stopped it: then it stays
    /// stored as running, to resume at the next start. Awaited before the outcome is
    /// published: a handle sees an end only once it is stored; an end that cannot be
    /// stored becomes `InstanceError::Checkpoint` (the store still holds the instance
    /// at its last checkpoint, where a restart resumes it).
    pub(crate) async fn store_end(&mut self) {
        let Some(durable) = &mut self.durable else {
            return;
        };
        let acks = std::mem::take(&mut durable.acks);
        if durable.suspended {
            // Not stored: the completion is open again after the restart.
            return answer(acks, Err(WorkError::InstanceEnded));
        }
        let (status, error, kind) = match &self.outcome {
            Some(Ended::Completed) => (Status::Completed, None, "completed"),
            Some(Ended::Terminated) => (Status::Terminated, None, "terminated"),
            Some(Ended::Cancelled) => (Status::Cancelled, None, "cancelled"),
            Some(Ended::Failed(error)) => (Status::Failed, Some(error.to_string()), "failed"),
            None => (
                Status::Failed,
                Some(InstanceError::Lost.to_string()),
                "failed",
            ),
        };
        let data = (durable.codec.encode)(&self.data).unwrap_or(serde_json::Value::Null);
        let outcome = json!({ "outcome": kind, "error": error, "data": data });
        let mut writes = std::mem::take(&mut durable.taken);
        if durable.seq == 0 {
            // Started by a deployment and ended in its first step: never stored yet.
            let born = Checkpoint::Born {
                data: data.clone(),
                start: None,
            };
            let state = serde_json::to_string(&born).unwrap_or_else(|_| "{}".to_string());
            durable.seq = 1;
            writes.insert(
                0,
                Write::Put(InstanceRecord {
                    id: durable.id,
                    process: self.process.name.to_string(),
                    fingerprint: self.process.fingerprint,
                    status: Status::Running,
                    key: durable.key.clone(),
                    seq: 1,
                    state,
                    outcome: None,
                    updated_ms: now_ms(),
                    business_key: durable.business_key.clone(),
                    started_ms: durable.started_ms,
                    waits: Vec::new(),
                    incidents: 0,
                    wake: Default::default(),
                }),
            );
        }
        // After the record's first put, if this writes it.
        let at = usize::from(matches!(writes.first(), Some(Write::Put(_))));
        writes.insert(
            at,
            Write::End {
                id: durable.id,
                status,
                outcome: Some(outcome.to_string()),
                at_ms: now_ms(),
            },
        );
        if let Some(key) = &durable.key {
            // Started by a parallel instantiating gate: the repeats of its arms
            // stored meanwhile are stale now, on every node (with the end, so no node
            // starts an instance with one after it).
            let names = self.process.stale_arm_names();
            if !names.is_empty() {
                writes.push(Write::DropStale {
                    names,
                    key: key.clone(),
                });
            }
        }
        let result = durable.writer.submit(writes).await;
        match result {
            Ok(()) => answer(acks, Ok(())),
            Err(error) => {
                warn!(%error, "the instance's end was not stored");
                let message = error.to_string();
                if matches!(error, crate::store::StoreError::Fenced { .. }) {
                    // Another node owns it now: its end is the new owner's to store.
                    answer(acks, Err(WorkError::InstanceEnded));
                    self.outcome = Some(Ended::failed(InstanceError::Moved { message }));
                    return;
                }
                answer(acks, Err(not_stored(&error)));
                if matches!(error, crate::store::StoreError::CommitUnknown { .. }) {
                    // Stored as ended, or running at its last checkpoint: not known.
                    self.outcome = Some(Ended::failed(InstanceError::Unknown { message }));
                    return;
                }
                self.outcome = Some(Ended::failed(InstanceError::Checkpoint { message }));
            }
        }
    }

    /// Go on from a checkpoint: its state put back, its waits armed again, and the
    /// tasks that were running started again (at least once).
    pub(crate) fn resume_from(&mut self, snapshot: Snapshot) {
        let Some(durable) = &self.durable else {
            return self.fail(InstanceError::Checkpoint {
                message: "a resumed instance without a store".to_string(),
            });
        };
        let decode = durable.codec.decode;
        let rerun = match self.restore(snapshot, decode) {
            Ok(rerun) => rerun,
            Err(error) => {
                return self.fail(InstanceError::Checkpoint {
                    message: format!("cannot resume: {error}"),
                })
            }
        };
        self.step(|this, moves| {
            // The children the checkpoint recorded, by call track: each call starts
            // again on its own (and lists itself anew as it does).
            let recorded: std::collections::HashMap<TrackId, InstanceId> = this
                .calls
                .take_all()
                .into_iter()
                .map(|c| (c.track, c.child))
                .collect();
            for track in rerun {
                let Some((at, attempt)) = this.tracks.get(track).map(|t| (t.at, t.attempt)) else {
                    continue;
                };
                match this.process.nodes[at].kind {
                    NodeKind::Task(handler) => {
                        this.tracks.set_state(track, TrackState::Working);
                        this.run_handler(track, at, handler, attempt, moves);
                    }
                    NodeKind::Call(ref call) => {
                        // The call waits on the child its checkpoint recorded (one
                        // recorded no child: it starts it, at least once).
                        let child = recorded.get(&track).copied();
                        this.tracks.set_state(track, TrackState::Working);
                        this.start_call(track, at, call, child);
                    }
                    _ => {}
                }
            }
            // Conditions that became true across the restart fire now.
            this.fire_due();
        });
    }
}

/// What a completion waiting for a checkpoint that failed with `error` hears: not
/// stored, or not known to be.
fn not_stored(error: &crate::store::StoreError) -> WorkError {
    let message = error.to_string();
    match error {
        crate::store::StoreError::CommitUnknown { .. } => WorkError::Unknown { message },
        _ => WorkError::NotStored { message },
    }
}

/// Answer user-task completions and broadcasts waiting for their checkpoint.
fn answer(acks: Vec<Ack>, result: Result<(), WorkError>) {
    for ack in acks {
        match ack {
            Ack::Work(reply) => {
                let _ = reply.send(result.clone());
            }
            Ack::Signal(ack) => {
                let _ = ack.send(result.clone().map_err(|e| e.to_string()));
            }
        }
    }
}

/// Why a checkpoint could not be restored.
#[derive(Debug, thiserror::Error)]
pub(crate) enum RestoreError {
    #[error("the checkpoint names a node `{0}` the process does not have")]
    UnknownNode(String),
    #[error("the checkpoint's data does not deserialise: {0}")]
    Data(String),
    #[error("the checkpoint is inconsistent: {0}")]
    Inconsistent(&'static str),
}
