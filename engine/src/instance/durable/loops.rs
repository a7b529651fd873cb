//! Loop and multi-instance activations in checkpoints (feature `durable`).
//!
//! Stored: per activation its scope, activity, waiting token, and state — for a
//! multi-instance activation the data its items were computed from (the items are
//! computed again from it on restore, so they need no codec of their own), each
//! instance's state and the counts; for a loop its runs. The instance tracks are
//! ordinary tracks, stored and restored with the others.
//!
//! What cannot be stored is an output not merged yet (its type is the user's, the
//! store has the data's codec only): an instance whose output was taken but not
//! merged — it completed after an unfinished earlier instance, or it is a
//! sub-process instance whose `#[item(output)]` task completed — runs again from
//! its start after a restart, as a task that was running does (at least once).

use serde::{Deserialize, Serialize};

use super::super::core::Instance;
use super::super::state::ids::{ScopeId, TrackId};
use super::super::state::loops::{Activation, LoopRun, MultiRun, Running, Slot};
use super::RestoreError;
use crate::data::ProcessData;
use crate::graph::NodeIdx;
use crate::loops::{Counts, LoopKind};
use crate::mem::cell::Base;

#[derive(Debug, Serialize, Deserialize)]
pub(crate) struct ActivationRecord {
    pub scope: u32,
    pub node: String,
    pub owner: u32,
    pub state: ActivationStateRecord,
}

#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum ActivationStateRecord {
    Multi {
        /// The data the items were computed from.
        source: serde_json::Value,
        slots: Vec<SlotRecord>,
        /// instances, active, completed, terminated.
        counts: [u32; 4],
        merged: usize,
        next: usize,
        done: bool,
    },
    Loop {
        runs: u32,
        current: Option<u32>,
    },
}

#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum SlotRecord {
    Pending,
    Running { track: u32, output_taken: bool },
    Completed { output: bool },
    Settled,
}

impl<D: ProcessData> Instance<D> {
    /// The running activations, for a checkpoint.
    pub(crate) fn activations_record(
        &self,
        encode: fn(&D) -> Result<serde_json::Value, String>,
    ) -> Result<Vec<ActivationRecord>, String> {
        let mut records = Vec::new();
        for (scope, running) in self.loops.iter() {
            let state = match &running.state {
                Activation::Multi(m) => ActivationStateRecord::Multi {
                    source: encode(&m.source)?,
                    slots: m
                        .slots
                        .iter()
                        .map(|slot| match slot {
                            Slot::Pending => SlotRecord::Pending,
                            Slot::Running { track, ready, .. } => SlotRecord::Running {
                                track: track.0,
                                output_taken: ready.is_some(),
                            },
                            Slot::Completed(output) => SlotRecord::Completed {
                                output: output.is_some(),
                            },
                            Slot::Settled => SlotRecord::Settled,
                        })
                        .collect(),
                    counts: [
                        m.counts.instances,
                        m.counts.active,
                        m.counts.completed,
                        m.counts.terminated,
                    ],
                    merged: m.merged,
                    next: m.next,
                    done: m.done,
                },
                Activation::Loop(l) => ActivationStateRecord::Loop {
                    runs: l.runs,
                    current: l.current.map(|t| t.0),
                },
            };
            records.push(ActivationRecord {
                scope: scope.0,
                node: self.process.nodes[running.node].id.to_string(),
                owner: running.owner.0,
                state,
            });
        }
        // One order for one state: the map's is arbitrary.
        records.sort_by_key(|r| r.scope);
        Ok(records)
    }

    /// Put the activations of a checkpoint back, after its tracks, scopes and
    /// waits; instances whose output was lost are run again.
    pub(crate) fn restore_activations(
        &mut self,
        records: Vec<ActivationRecord>,
        decode: fn(serde_json::Value) -> Result<D, String>,
        node: &dyn Fn(&str) -> Result<NodeIdx, RestoreError>,
    ) -> Result<(), RestoreError> {
        for record in records {
            let at = node(&record.node)?;
            let scope = ScopeId(record.scope);
            let spec = self.process.loop_of(at).ok_or(RestoreError::Inconsistent(
                "an activation of an activity with no loop marker",
            ))?;
            let mut again = Vec::new();
            let mut restart = Vec::new();
            let state = match (record.state, &spec.kind) {
                (
                    ActivationStateRecord::Multi {
                        source,
                        slots,
                        counts,
                        merged,
                        next,
                        done,
                    },
                    LoopKind::Multi(multi),
                ) => {
                    let source = Base::new(decode(source).map_err(RestoreError::Data)?);
                    let id = self.process.nodes[at].id;
                    let items = self
                        .user_code(id, || (multi.items)(&source))
                        .map_err(|_| RestoreError::Inconsistent("the items panicked on restore"))?;
                    if items.len() != slots.len() {
                        return Err(RestoreError::Inconsistent(
                            "the items computed again are not as many as were stored",
                        ));
                    }
                    let [instances, active, completed, terminated] = counts;
                    let mut counts = Counts {
                        instances,
                        active,
                        completed,
                        terminated,
                    };
                    let slots = slots
                        .into_iter()
                        .enumerate()
                        .map(|(index, slot)| match slot {
                            SlotRecord::Pending => Slot::Pending,
                            SlotRecord::Running {
                                track,
                                output_taken,
                            } => {
                                self.loops.bind(TrackId(track), scope, index as u32);
                                if output_taken {
                                    restart.push((TrackId(track), index));
                                }
                                Slot::Running {
                                    track: TrackId(track),
                                    output: None,
                                    ready: None,
                                }
                            }
                            SlotRecord::Completed { output: true } => {
                                counts.completed = counts.completed.saturating_sub(1);
                                again.push(index);
                                Slot::Pending
                            }
                            SlotRecord::Completed { output: false } => Slot::Completed(None),
                            SlotRecord::Settled => Slot::Settled,
                        })
                        .collect();
                    Activation::Multi(MultiRun {
                        items,
                        source,
                        slots,
                        counts,
                        merged,
                        next,
                        done,
                    })
                }
                (ActivationStateRecord::Loop { runs, current }, LoopKind::Standard(_)) => {
                    if let Some(track) = current {
                        self.loops.bind(TrackId(track), scope, runs);
                    }
                    Activation::Loop(LoopRun {
                        runs,
                        current: current.map(TrackId),
                    })
                }
                _ => {
                    return Err(RestoreError::Inconsistent(
                        "an activation of another kind than its activity's marker",
                    ))
                }
            };
            self.loops.open(
                scope,
                Running {
                    node: at,
                    owner: TrackId(record.owner),
                    state,
                },
            );
            // A sub-process instance whose output is lost starts over: what runs
            // inside it is dropped.
            for (track, index) in restart {
                if let Some(inner) = self.scopes.owned_by(track) {
                    self.cancel_inside(inner);
                    self.close_scope(inner);
                }
                self.withdraw(track);
                self.loops.unbind(track);
                self.remove_track(track);
                if let Some(Running {
                    state: Activation::Multi(m),
                    ..
                }) = self.loops.get_mut(scope)
                {
                    m.counts.active = m.counts.active.saturating_sub(1);
                    m.slots[index] = Slot::Pending;
                }
                again.push(index);
            }
            for index in again {
                self.spawn_instance_at(scope, Some(index));
            }
        }
        Ok(())
    }
}
