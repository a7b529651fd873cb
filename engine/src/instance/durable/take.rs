//! Taking a checkpoint: the loop's state after a step as the records of
//! `snapshot.rs`.

use super::super::core::Instance;
use super::super::state::armed::{EventSource, Holder};
use super::super::state::compensation::{Completion, Current, Then};
use super::super::state::tracks::TrackState;
use super::records::*;
use crate::data::ProcessData;
use crate::graph::{Graph, NodeIdx, NodeKind};

impl<D: ProcessData> Instance<D> {
    /// Whether a delivery is on its way to a track (a flipped event whose effect is
    /// not committed yet): a checkpoint now could not say what to redo, so the loop
    /// waits for the track's report, which comes next.
    pub(crate) fn delivery_in_flight(&self) -> bool {
        self.tracks.iter().any(|t| {
            t.state() == TrackState::Working
                && !matches!(
                    self.process.nodes[t.at].kind,
                    NodeKind::Task(_) | NodeKind::Call(_)
                )
        })
    }

    /// The instance's state now, with the data encoded by `encode`.
    pub(crate) fn snapshot(
        &self,
        encode: fn(&D) -> Result<serde_json::Value, String>,
        with_history: bool,
    ) -> Result<Snapshot, String> {
        let id = |n: NodeIdx| self.process.nodes[n].id.to_string();
        let tracks = self
            .tracks
            .iter()
            .map(|t| TrackRecord {
                id: t.id.0,
                at: id(t.at),
                scope: t.scope.0,
                attempt: t.attempt,
                state: match t.state() {
                    TrackState::Parked => TrackStateRecord::Parked,
                    TrackState::AtJoin => TrackStateRecord::AtJoin,
                    TrackState::InScope => TrackStateRecord::InScope,
                    TrackState::Compensating => TrackStateRecord::Compensating,
                    TrackState::Held => TrackStateRecord::Held,
                    TrackState::Working | TrackState::Moving => TrackStateRecord::Working,
                },
            })
            .collect();
        let joins = self
            .joins
            .iter()
            .map(|j| JoinRecord {
                node: id(j.node),
                scope: j.scope.0,
                waiting: self
                    .joins
                    .waiting_at(j)
                    .map(|(s, a)| (s, a.track.0))
                    .collect(),
                spent: j.spent,
            })
            .collect();
        let (last, root_interrupted) = self.scopes.counters();
        let scopes = ScopesRecord {
            nested: self
                .scopes
                .nested()
                .map(|s| ScopeRecord {
                    id: s.id.0,
                    node: s.node.map(id),
                    parent: s.parent.map(|p| p.0),
                    owner: s.owner.map(|o| o.0),
                    interrupted: s.interrupted,
                })
                .collect(),
            last,
            root_interrupted,
        };
        let armed = self
            .armed
            .iter()
            .map(|e| ArmedRecord {
                holder: match e.holder {
                    Holder::Track(t) => HolderRecord::Track(t.0),
                    Holder::Guard(t) => HolderRecord::Guard(t.0),
                    Holder::Scope(s) => HolderRecord::Scope(s.0),
                },
                at: id(e.at),
                waits: e
                    .waits
                    .iter()
                    .map(|w| WaitRecord {
                        arm: id(w.arm),
                        fired: w.fired,
                        source: match w.source {
                            EventSource::Hub(_) => SourceRecord::Hub,
                            EventSource::Timer(t) => SourceRecord::Timer {
                                deadline_ms: self.timers.deadline_of(t).map(to_wall),
                            },
                            EventSource::UserTask => SourceRecord::UserTask,
                            EventSource::Condition(c) => SourceRecord::Condition {
                                last: self.conditions.last_of(c).unwrap_or(false),
                            },
                        },
                    })
                    .collect(),
            })
            .collect();
        let history = with_history.then(|| {
            self.history
                .steps()
                .iter()
                .map(|step| StepRecord {
                    track: step.track.0,
                    node: step.node.to_string(),
                    what: HappeningRecord::of(&step.what),
                })
                .collect()
        });
        let calls = self
            .live_calls()
            .into_iter()
            .map(|c| CallRecord {
                track: c.track.0,
                child: c.child.0,
            })
            .collect();
        let parent = self.parent.as_ref().map(|link| ParentRecord {
            id: link.parent.0,
            depth: link.depth,
        });
        Ok(Snapshot {
            data: encode(&self.data)?,
            tracks,
            joins,
            scopes,
            armed,
            activations: self.activations_record(encode)?,
            history,
            calls,
            parent,
            compensation: self.compensation_record(encode)?,
            retries: self.retries_record(),
            tasks: self.tasks_record(),
        })
    }

    /// The compensation logs and runs as records, snapshots encoded by `encode`.
    fn compensation_record(
        &self,
        encode: fn(&D) -> Result<serde_json::Value, String>,
    ) -> Result<CompensationRecord, String> {
        if self.compensation.is_empty() {
            return Ok(CompensationRecord::default());
        }
        fn completions<D>(
            process: &Graph<D>,
            list: &[Completion<D>],
            encode: fn(&D) -> Result<serde_json::Value, String>,
        ) -> Result<Vec<CompletionRecord>, String> {
            list.iter()
                .map(|c| {
                    Ok(CompletionRecord {
                        activity: process.nodes[c.activity].id.to_string(),
                        data: encode(&c.snapshot)?,
                        inner: completions(process, &c.inner, encode)?,
                        iteration: c.iteration,
                    })
                })
                .collect()
        }
        let process = self.process;
        let logs = self
            .compensation
            .logs()
            .iter()
            .map(|(scope, list)| {
                Ok(LogRecord {
                    scope: scope.0,
                    completions: completions(process, list, encode)?,
                })
            })
            .collect::<Result<_, String>>()?;
        let runs = self
            .compensation
            .runs_under_way()
            .iter()
            .map(|run| {
                Ok(RunRecord {
                    thrower: run.thrower.0,
                    queue: completions(process, &run.queue, encode)?,
                    current: match &run.current {
                        Current::Idle => CurrentRecord::Idle,
                        Current::Handler {
                            track,
                            snapshot,
                            iteration,
                        } => CurrentRecord::Handler {
                            track: track.0,
                            data: encode(snapshot)?,
                            iteration: *iteration,
                        },
                        Current::EventSub { scope, iteration } => CurrentRecord::EventSub {
                            scope: scope.0,
                            iteration: *iteration,
                        },
                    },
                    then: match run.then {
                        Then::Continue => ThenRecord::Continue,
                        Then::End => ThenRecord::End,
                        Then::Cancel => ThenRecord::Cancel,
                    },
                })
            })
            .collect::<Result<_, String>>()?;
        Ok(CompensationRecord { logs, runs })
    }
}
