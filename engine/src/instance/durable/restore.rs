//! Restoring a checkpoint: a new loop's state put back from the records of
//! `snapshot.rs`, and what it waits for armed again.

use std::collections::HashMap;

use super::super::commit::Committed;
use super::super::core::Instance;
use super::super::state::armed::{EventSource, Holder, Wait};
use super::super::state::compensation::{Completion, Current, Run, Then};
use super::super::state::ids::{ScopeId, TrackId};
use super::super::state::scopes::ScopeSlot;
use super::super::state::tracks::TrackState;
use super::records::*;
use super::RestoreError;
use crate::data::ProcessData;
use crate::graph::{Graph, NodeIdx, NodeKind, Trigger};
use crate::mem::cell::Base;

impl<D: ProcessData> Instance<D> {
    /// Put back the compensation logs and runs a checkpoint recorded.
    fn restore_compensation(
        &mut self,
        record: CompensationRecord,
        node: &impl Fn(&str) -> Result<NodeIdx, RestoreError>,
        decode: fn(serde_json::Value) -> Result<D, String>,
    ) -> Result<(), RestoreError> {
        fn completions<D>(
            list: Vec<CompletionRecord>,
            node: &impl Fn(&str) -> Result<NodeIdx, RestoreError>,
            decode: fn(serde_json::Value) -> Result<D, String>,
        ) -> Result<Vec<Completion<D>>, RestoreError> {
            let mut out = Vec::with_capacity(list.len());
            for c in list {
                let activity = node(&c.activity)?;
                let inner = completions(c.inner, node, decode)?;
                // An older checkpoint's completion of a whole loop or multi-instance
                // activation: its inner log holds the runs, completions of the same
                // activity (no activity holds itself). Each run is undone on its own.
                if inner.iter().any(|run| run.activity == activity) {
                    out.extend(inner);
                    continue;
                }
                out.push(Completion {
                    activity,
                    snapshot: Base::new(decode(c.data).map_err(RestoreError::Data)?),
                    inner,
                    iteration: c.iteration,
                });
            }
            Ok(out)
        }
        let logs = record
            .logs
            .into_iter()
            .map(|l| Ok((ScopeId(l.scope), completions(l.completions, node, decode)?)))
            .collect::<Result<_, RestoreError>>()?;
        let runs = record
            .runs
            .into_iter()
            .map(|r| {
                Ok(Run {
                    thrower: TrackId(r.thrower),
                    queue: completions(r.queue, node, decode)?,
                    current: match r.current {
                        CurrentRecord::Idle => Current::Idle,
                        CurrentRecord::Handler {
                            track,
                            data,
                            iteration,
                        } => Current::Handler {
                            track: TrackId(track),
                            snapshot: Base::new(decode(data).map_err(RestoreError::Data)?),
                            iteration,
                        },
                        CurrentRecord::EventSub { scope, iteration } => Current::EventSub {
                            scope: ScopeId(scope),
                            iteration,
                        },
                    },
                    then: match r.then {
                        ThenRecord::Continue => Then::Continue,
                        ThenRecord::End => Then::End,
                        ThenRecord::Cancel => Then::Cancel,
                    },
                })
            })
            .collect::<Result<_, RestoreError>>()?;
        self.compensation.restore(logs, runs);
        Ok(())
    }

    /// Put a checkpoint's state into this (new, empty) instance and re-arm what it
    /// waits for. Returns the tracks whose task must run again.
    pub(crate) fn restore(
        &mut self,
        snapshot: Snapshot,
        decode: fn(serde_json::Value) -> Result<D, String>,
    ) -> Result<Vec<TrackId>, RestoreError> {
        let process: &'static Graph<D> = self.process;
        let index: HashMap<&str, NodeIdx> = process
            .nodes
            .iter()
            .enumerate()
            .map(|(i, n)| (n.id, i))
            .collect();
        let node = |id: &str| {
            index
                .get(id)
                .copied()
                .ok_or_else(|| RestoreError::UnknownNode(id.to_string()))
        };
        self.data = Committed::new(decode(snapshot.data).map_err(RestoreError::Data)?);
        if let Some(steps) = snapshot.history {
            let node_id = |id: &str| index.get(id).map(|&i| process.nodes[i].id);
            let fields = self.data.fields();
            let field = |f: &str| fields.iter().copied().find(|known| *known == f);
            for step in steps {
                let at = node_id(&step.node).ok_or(RestoreError::UnknownNode(step.node))?;
                let what =
                    step.what
                        .happening(&node_id, &field)
                        .ok_or(RestoreError::Inconsistent(
                            "a history step names an unknown node or field",
                        ))?;
                self.history.push(TrackId(step.track), at, what);
            }
        }
        let mut rerun = Vec::new();
        for t in snapshot.tracks {
            let at = node(&t.at)?;
            let (state, attempt) = match t.state {
                TrackStateRecord::Working => {
                    if !matches!(
                        process.nodes[at].kind,
                        NodeKind::Task(_) | NodeKind::Call(_)
                    ) {
                        return Err(RestoreError::Inconsistent(
                            "a working track not at a task or call activity",
                        ));
                    }
                    rerun.push(TrackId(t.id));
                    // It runs again: one more attempt.
                    (TrackState::Moving, t.attempt.saturating_add(1))
                }
                TrackStateRecord::Parked => (TrackState::Parked, t.attempt),
                TrackStateRecord::AtJoin => (TrackState::AtJoin, t.attempt),
                TrackStateRecord::InScope => (TrackState::InScope, t.attempt),
                TrackStateRecord::Compensating => (TrackState::Compensating, t.attempt),
                TrackStateRecord::Held => (TrackState::Held, t.attempt),
            };
            self.tracks
                .restore(TrackId(t.id), at, ScopeId(t.scope), state, attempt);
        }
        // The calls' children: a call's track waits on its recorded child again.
        for c in snapshot.calls {
            let track = TrackId(c.track);
            let Some(node) = self.tracks.get(track).map(|t| t.at) else {
                return Err(RestoreError::Inconsistent("a call's track is not live"));
            };
            self.calls.push(crate::instance::core::Call {
                track,
                node,
                child: crate::instance::InstanceId(c.child),
                handle: None,
            });
        }
        let mut nested = Vec::new();
        for s in snapshot.scopes.nested {
            nested.push(ScopeSlot {
                id: ScopeId(s.id),
                node: s.node.as_deref().map(node).transpose()?,
                parent: s.parent.map(ScopeId),
                owner: s.owner.map(TrackId),
                interrupted: s.interrupted,
            });
        }
        self.scopes.restore(
            nested,
            snapshot.scopes.last,
            snapshot.scopes.root_interrupted,
        );
        // Before the reruns: a compensation handler runs again from its snapshot.
        self.restore_compensation(snapshot.compensation, &node, decode)?;
        for j in snapshot.joins {
            let at = node(&j.node)?;
            let waiting: Vec<(usize, TrackId)> =
                j.waiting.iter().map(|&(s, t)| (s, TrackId(t))).collect();
            self.joins
                .restore(
                    at,
                    ScopeId(j.scope),
                    process.nodes[at].incoming.len(),
                    &waiting,
                    j.spent,
                )
                .ok_or(RestoreError::Inconsistent(
                    "a join arrival on a flow it does not have",
                ))?;
        }
        for e in snapshot.armed {
            let holder = match e.holder {
                HolderRecord::Track(t) => Holder::Track(TrackId(t)),
                HolderRecord::Guard(t) => Holder::Guard(TrackId(t)),
                HolderRecord::Scope(s) => Holder::Scope(ScopeId(s)),
            };
            let at = node(&e.at)?;
            match self.kept_choice() {
                // An evicted instance's entry keeps its choice in the hub.
                Some(choice) => self.armed.push(holder, at, e.waits.len(), choice),
                None => self.begin_entry(holder, at, e.waits.len()),
            }
            for w in e.waits {
                let arm = node(&w.arm)?;
                // Taken for every wait, in order (`None` but for an evicted
                // instance's hub waits).
                let kept = self.kept_sub();
                let (source, key) = self.rearm_restored(arm, &w.source, kept).map_err(|_| {
                    RestoreError::Inconsistent("a wait whose trigger cannot be armed")
                })?;
                self.armed.push_wait(Wait {
                    arm,
                    source,
                    fired: w.fired,
                    key,
                });
            }
        }
        self.restore_activations(snapshot.activations, decode, &node)?;
        self.restore_retries(snapshot.retries, &node)?;
        self.restore_tasks(snapshot.tasks, &node)?;
        // A parked track's task waits on its channel again.
        let parked: Vec<TrackId> = self
            .tracks
            .iter()
            .filter(|t| t.state() == TrackState::Parked)
            .map(|t| t.id)
            .collect();
        for track in parked {
            if self.park_sender(track).is_none() {
                return Err(RestoreError::Inconsistent("a parked track is not live"));
            }
        }
        Ok(rerun)
    }

    /// Arm again the trigger of `arm` as a checkpoint recorded it: a subscription
    /// anew (a message with the key the data gives now), a timer at its recorded
    /// deadline, a condition with its last value.
    fn rearm_restored(
        &mut self,
        arm: NodeIdx,
        source: &SourceRecord,
        kept: Option<crate::events::SubId>,
    ) -> Result<(EventSource, Option<std::sync::Arc<str>>), crate::instance::InstanceError> {
        let node = &self.process.nodes[arm];
        match (source, node.kind.trigger()) {
            (SourceRecord::Timer { deadline_ms }, Some(Trigger::Timer(_))) => {
                let id = self.timers.new_id();
                if let Some(ms) = deadline_ms {
                    self.timers.schedule(id, from_wall(*ms));
                }
                Ok((EventSource::Timer(id), None))
            }
            (SourceRecord::Condition { last }, Some(Trigger::Condition { condition, on })) => {
                let now = self.user_code(node.id, || condition(&self.data))?;
                let id = self.conditions.rearm(arm, *condition, on, *last, now);
                Ok((EventSource::Condition(id), None))
            }
            (SourceRecord::UserTask, _) => Ok((EventSource::UserTask, None)),
            // An evicted instance's subscription, kept in the hub: taken up again,
            // with the key the data gives (the data it was made with).
            (_, Some(Trigger::Message { key, .. })) if kept.is_some() => {
                let key: std::sync::Arc<str> = self.user_code(node.id, || key(&self.data))?.into();
                Ok((EventSource::Hub(kept.unwrap_or_default()), Some(key)))
            }
            (_, Some(Trigger::Signal { .. })) if kept.is_some() => {
                Ok((EventSource::Hub(kept.unwrap_or_default()), None))
            }
            // A message or signal subscription: as when it was first armed.
            _ => self.arm(arm),
        }
    }
}
