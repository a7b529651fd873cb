//! An in-memory instance's entry in its engine's listing (`query/memory.rs`), which
//! `Engine::instances` reads: put there by the loop when it rests — every token
//! waits, where a durable instance checkpoints — and taken out when it ends. An
//! instance that ends in its first step is never listed, so a ready-at-once start
//! pays one check (two with `EngineConfig::keep_ended` set).

use super::core::Instance;
use super::input::Input;
use super::outcome::Ended;
use super::state::armed::EventSource;
use super::state::tracks::TrackState;
use crate::data::Erased;
use crate::data::ProcessData;
use crate::graph::{Graph, NodeIdx, NodeKind};
use crate::mem::cell::Base;
use crate::mem::intake::Intake;
use crate::query::memory::{Keys, LoopIntake, Rest};
use crate::query::Status;

/// From how many tracks a listed instance counts them rather than scan them.
const COUNT_FROM: usize = 32;

/// The loop's data as the listing keeps it (the loop's `D` is `Erased`: its code
/// is compiled once), without a copy.
fn erased<D: 'static>(data: Base<D>) -> Option<Base<Erased>> {
    let mut data = Some(data);
    (&mut data as &mut dyn std::any::Any)
        .downcast_mut::<Option<Base<Erased>>>()
        .and_then(Option::take)
}

/// The loop's intake as the listing keeps it.
fn erased_intake<D: 'static>(intake: &Intake<Input<D>>) -> Option<&LoopIntake> {
    (intake as &dyn std::any::Any).downcast_ref::<LoopIntake>()
}

/// The loop's graph as the listing keeps it.
fn erased_graph<D: 'static>(graph: &'static Graph<D>) -> Option<&'static Graph<Erased>> {
    (graph as &dyn std::any::Any).downcast_ref::<Graph<Erased>>()
}

use crate::query::now_ms;

impl<D: ProcessData> Instance<D> {
    /// An in-memory instance started with a business or correlation key is
    /// listed at once, so it is found by its key before it first rests. The
    /// listing keeps its keys (`keys`): few instances have any, and the rest pay
    /// nothing for them.
    pub(crate) fn list_keyed(&mut self, keys: Keys) {
        self.intake_tx.made();
        let (Some(graph), Some(data), Some(intake)) = (
            erased_graph(self.process),
            erased(self.data.snapshot()),
            erased_intake(&self.intake_tx),
        ) else {
            return;
        };
        self.listed = true;
        let rest = Rest {
            graph,
            waits: &[],
            timers: &[],
            incidents: 0,
            data,
            intake,
            started_ms: now_ms(),
        };
        self.hub.listing.rested(self.id.0, rest, Some(keys));
    }

    /// An in-memory instance's keys, as the listing keeps them.
    pub(crate) fn keys(&self) -> Option<Keys> {
        match self.listed {
            true => self.hub.listing.keys(self.id.0),
            false => None,
        }
    }

    /// After an input: if the instance rests, its entry in the listing is renewed.
    pub(crate) fn list_at_rest(&mut self) {
        // A few tracks are scanned; past that they are counted (`Tracks::count`).
        if self.tracks.len() > COUNT_FROM {
            self.tracks.count();
        }
        #[cfg(feature = "metrics")]
        self.count_parked();
        #[cfg(feature = "durable")]
        if self.durable.is_some() {
            // A durable instance is listed by its store.
            return;
        }
        if self.outcome.is_some() || !self.rests() {
            return;
        }
        let (waits, incidents) = self.wait_nodes_and_incidents();
        let timers = self.armed_timers();
        self.intake_tx.made();
        let (Some(graph), Some(data), Some(intake)) = (
            erased_graph(self.process),
            erased(self.data.snapshot()),
            erased_intake(&self.intake_tx),
        ) else {
            return;
        };
        self.listed = true;
        let rest = Rest {
            graph,
            waits: &waits,
            timers: &timers,
            incidents,
            data,
            intake,
            // If not listed yet, its first rest: the first step ran at once, on
            // the starter's call or on its loop's first poll.
            started_ms: now_ms(),
        };
        self.hub.listing.rested(self.id.0, rest, None);
    }

    /// The instance ended: its entry leaves the listing, its summary kept if the
    /// engine keeps ended ones. Asked inline: an instance never listed, in an
    /// engine that keeps no ended ones, pays two loads.
    #[inline]
    pub(crate) fn unlist(&mut self) {
        #[cfg(feature = "metrics")]
        if std::mem::take(&mut self.parked) {
            crate::metrics::parked(self.process.name, false);
        }
        if self.listed || self.hub.listing.keep_ended() > 0 {
            self.unlist_made();
        }
    }

    #[inline(never)]
    fn unlist_made(&mut self) {
        #[cfg(feature = "durable")]
        if self.durable.is_some() {
            return;
        }
        let status = match &self.outcome {
            Some(Ended::Completed) => Status::Completed,
            Some(Ended::Terminated) => Status::Terminated,
            Some(Ended::Cancelled) => Status::Cancelled,
            Some(Ended::Failed(_)) | None => Status::Failed,
        };
        let Some(graph) = erased_graph(self.process) else {
            return;
        };
        // A count on the data only if it is kept.
        let data = (self.hub.listing.keep_ended() > 0)
            .then(|| erased(self.data.snapshot()))
            .flatten();
        self.hub
            .listing
            .ended(self.id.0, graph, status, now_ms(), data);
    }

    /// In the parked gauge while every token waits, out of it while one works.
    #[cfg(feature = "metrics")]
    fn count_parked(&mut self) {
        let parked = self.outcome.is_none() && self.rests();
        if parked != self.parked {
            self.parked = parked;
            crate::metrics::parked(self.process.name, parked);
        }
    }

    /// Whether every token waits (none works at a task; a call activity waits for
    /// its child).
    fn rests(&self) -> bool {
        if let Some((_, working)) = self.tracks.counted() {
            // Every working track is a call activity's, waiting for its child.
            return working == 0 || working == self.live_calls().len();
        }
        self.tracks.iter().all(|t| {
            t.state() != TrackState::Working
                || matches!(self.process.nodes[t.at].kind, NodeKind::Call(_))
        })
    }

    /// The ids of the elements its tokens wait at (each once, sorted) and its open
    /// incidents: what a durable checkpoint stores for queries.
    #[cfg(feature = "durable")]
    pub(crate) fn waits_and_incidents(&self) -> (Vec<&'static str>, u32) {
        let (nodes, incidents) = self.wait_nodes_and_incidents();
        let ids = nodes
            .into_iter()
            .map(|n| self.process.nodes[n].id)
            .collect();
        (ids, incidents)
    }

    /// The nodes its tokens wait at, each once, sorted by id; and its open
    /// incidents.
    /// Each armed timer's element and deadline in milliseconds since the Unix
    /// epoch (`Engine::timers_due`); nothing allocated for an instance with none.
    fn armed_timers(&self) -> Vec<(NodeIdx, i64)> {
        if !self.timers.is_armed() {
            return Vec::new();
        }
        let (now, wall) = (tokio::time::Instant::now(), now_ms());
        let to_wall = |at: tokio::time::Instant| match at.checked_duration_since(now) {
            Some(ahead) => {
                wall.saturating_add(i64::try_from(ahead.as_millis()).unwrap_or(i64::MAX))
            }
            None => wall.saturating_sub(
                i64::try_from(now.duration_since(at).as_millis()).unwrap_or(i64::MAX),
            ),
        };
        let mut timers = Vec::new();
        for entry in self.armed.iter() {
            for wait in &entry.waits {
                if let EventSource::Timer(t) = wait.source {
                    if let Some(at) = self.timers.deadline_of(t) {
                        timers.push((wait.arm, to_wall(at)));
                    }
                }
            }
        }
        timers
    }

    fn wait_nodes_and_incidents(&self) -> (Vec<NodeIdx>, u32) {
        let nodes = &self.process.nodes;
        let incidents = self
            .retries
            .iter()
            .filter(|h| matches!(h.wait, super::state::retries::HeldFor::Incident(_)))
            .count();
        let incidents = u32::try_from(incidents).unwrap_or(u32::MAX);
        let mut waits: Vec<NodeIdx> = match self.tracks.counted() {
            Some((waiting, working)) => {
                let mut waits: Vec<NodeIdx> = waiting.collect();
                if working > 0 {
                    // A call activity waits for its child while its track works.
                    waits.extend(self.live_calls().iter().map(|c| c.node));
                }
                waits
            }
            None => self
                .tracks
                .iter()
                .filter(|t| match t.state() {
                    TrackState::Parked | TrackState::AtJoin | TrackState::Held => true,
                    TrackState::Working => matches!(nodes[t.at].kind, NodeKind::Call(_)),
                    _ => false,
                })
                .map(|t| t.at)
                .collect(),
        };
        waits.sort_unstable_by_key(|&n| nodes[n].id);
        waits.dedup();
        #[cfg(debug_assertions)]
        if self.tracks.counted().is_some() {
            let mut scanned: Vec<NodeIdx> = self
                .tracks
                .iter()
                .filter(|t| match t.state() {
                    TrackState::Parked | TrackState::AtJoin | TrackState::Held => true,
                    TrackState::Working => matches!(nodes[t.at].kind, NodeKind::Call(_)),
                    _ => false,
                })
                .map(|t| t.at)
                .collect();
            scanned.sort_unstable_by_key(|&n| nodes[n].id);
            scanned.dedup();
            debug_assert_eq!(waits, scanned, "the track counts drifted");
        }
        (waits, incidents)
    }
}
