//! The in-memory engine's listing of its instances: what `Engine::instances`
//! answers from. An instance's loop — the single writer of its state — puts its
//! entry here when it rests (every token waits: where a durable instance
//! checkpoints) and takes it out when it ends; the listing keeps the summaries of
//! the last `EngineConfig::keep_ended` ended instances (none by default).
//!
//! A waiting instance's entry is most of what it pays for being queryable (a
//! parked instance's memory, `--bench events -- park-memory`), so it is 32 bytes:
//! its process as an index into the listing's graphs, the first element it waits
//! at as a node index, its start, its data as a count on the committed data (no
//! copy), and a sender on its loop's intake — how `Engine::cancel_instance` reaches
//! it by id. What few instances have — more waits, a business key — is in side
//! maps.

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

use super::{InstanceQuery, Row, Status};
use crate::data::Erased;
use crate::graph::{Graph, NodeIdx};
use crate::instance::Input;
use crate::mem::cell::Base;
use crate::mem::intake::Intake;

/// A sender on an instance loop's intake.
pub(crate) type LoopIntake = Intake<Input<Erased>>;

/// A running instance as it last rested.
struct Live {
    started_ms: i64,
    /// The loop's committed data then: a count on it, not a copy (the loop's next
    /// commit makes a new cell rather than change this one).
    data: Base<Erased>,
    /// Its loop's intake.
    intake: LoopIntake,
    /// The first node it waits at (by index, sorted by id), `NONE` if none.
    wait: u32,
    graph: u16,
    incidents: u16,
}

const NONE: u32 = u32::MAX;

/// The keys an in-memory instance is found by: few have any, so they are kept
/// beside its entry, not in it.
#[derive(Clone, Debug, Default)]
pub(crate) struct Keys {
    /// Its business key (`Engine::start_keyed`).
    pub business: Option<Box<str>>,
    /// Its correlation key (a keyed message start's).
    pub correlation: Option<Box<str>>,
}

impl Keys {
    pub fn is_empty(&self) -> bool {
        self.business.is_none() && self.correlation.is_none()
    }
}

/// An ended instance, kept while `keep_ended` asks.
struct Gone {
    graph: &'static Graph<Erased>,
    keys: Keys,
    started_ms: i64,
    ended_ms: i64,
    status: Status,
    data: Base<Erased>,
}

/// One instance as a query reads it.
pub(crate) struct View<'a> {
    pub id: u64,
    pub graph: &'static Graph<Erased>,
    pub status: Status,
    pub business_key: Option<&'a str>,
    /// Its correlation key.
    pub key: Option<&'a str>,
    pub started_ms: i64,
    pub ended_ms: Option<i64>,
    /// Node indexes, sorted by id.
    pub waits: Vec<NodeIdx>,
    pub incidents: u32,
    pub data: &'a Base<Erased>,
}

impl Row for View<'_> {
    fn id(&self) -> u64 {
        self.id
    }
    fn process(&self) -> &str {
        self.graph.name
    }
    fn fingerprint(&self) -> u64 {
        self.graph.fingerprint
    }
    fn status(&self) -> Status {
        self.status
    }
    fn waits_at(&self, node: &str) -> bool {
        self.waits.iter().any(|&n| self.graph.nodes[n].id == node)
    }
    fn business_key(&self) -> Option<&str> {
        self.business_key
    }
    fn key(&self) -> Option<&str> {
        self.key
    }
    fn incidents(&self) -> u32 {
        self.incidents
    }
    fn started_ms(&self) -> i64 {
        self.started_ms
    }
    fn ended_ms(&self) -> Option<i64> {
        self.ended_ms
    }
}

/// The engine's listing (held by its hub, which every instance holds).
#[derive(Default)]
pub(crate) struct Listing {
    keep_ended: AtomicUsize,
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    graphs: Vec<&'static Graph<Erased>>,
    live: HashMap<u64, Live>,
    /// The waits after the first, of the instances that wait at several elements.
    more_waits: HashMap<u64, Box<[u32]>>,
    /// The keys of the running instances that have any.
    keys: HashMap<u64, Keys>,
    /// The armed timers (element, due in ms since the epoch) of the running
    /// instances that have any.
    timers: HashMap<u64, Box<[(u32, i64)]>>,
    /// Oldest first, at most `keep_ended`.
    ended: VecDeque<(u64, Gone)>,
}

impl State {
    fn graph_index(&mut self, graph: &'static Graph<Erased>) -> u16 {
        let at = match self.graphs.iter().position(|g| std::ptr::eq(*g, graph)) {
            Some(at) => at,
            None => {
                self.graphs.push(graph);
                self.graphs.len() - 1
            }
        };
        u16::try_from(at).unwrap_or(u16::MAX)
    }

    fn views(&self) -> impl Iterator<Item = View<'_>> {
        let live = self.live.iter().map(|(&id, l)| {
            let mut waits = Vec::new();
            if l.wait != NONE {
                waits.push(l.wait as NodeIdx);
                if let Some(more) = self.more_waits.get(&id) {
                    waits.extend(more.iter().map(|&n| n as NodeIdx));
                }
            }
            let keys = self.keys.get(&id);
            View {
                id,
                graph: self.graphs[usize::from(l.graph)],
                status: Status::Running,
                business_key: keys.and_then(|k| k.business.as_deref()),
                key: keys.and_then(|k| k.correlation.as_deref()),
                started_ms: l.started_ms,
                ended_ms: None,
                waits,
                incidents: u32::from(l.incidents),
                data: &l.data,
            }
        });
        let gone = self.ended.iter().map(|(id, g)| View {
            id: *id,
            graph: g.graph,
            status: g.status,
            business_key: g.keys.business.as_deref(),
            key: g.keys.correlation.as_deref(),
            started_ms: g.started_ms,
            ended_ms: Some(g.ended_ms),
            waits: Vec::new(),
            incidents: 0,
            data: &g.data,
        });
        live.chain(gone)
    }
}

/// What an instance tells the listing when it rests.
pub(crate) struct Rest<'a> {
    pub graph: &'static Graph<Erased>,
    /// Node indexes, sorted by id.
    pub waits: &'a [NodeIdx],
    /// Its armed timers: the element and the due time, in ms since the epoch.
    pub timers: &'a [(NodeIdx, i64)],
    pub incidents: u32,
    pub data: Base<Erased>,
    /// Its loop's intake (cloned into a new entry only).
    pub intake: &'a LoopIntake,
    /// Its start, if it is not listed yet.
    pub started_ms: i64,
}

impl Listing {
    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        // Only a query's clone of the data (the user's `Clone`) may panic under
        // the lock; the entries stay whole.
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// How many ended instances' summaries it keeps.
    pub fn keep_ended(&self) -> usize {
        self.keep_ended.load(Ordering::Relaxed)
    }

    pub fn set_keep_ended(&self, n: usize) {
        self.keep_ended.store(n, Ordering::Relaxed);
    }

    /// A running instance rested (or was started with `keys`): its entry now.
    pub fn rested(&self, id: u64, rest: Rest<'_>, keys: Option<Keys>) {
        let node = |n: NodeIdx| u32::try_from(n).unwrap_or(NONE);
        let mut state = self.state();
        let graph = state.graph_index(rest.graph);
        let incidents = u16::try_from(rest.incidents).unwrap_or(u16::MAX);
        let wait = rest.waits.first().map_or(NONE, |&n| node(n));
        let old = match state.live.get_mut(&id) {
            Some(live) => {
                live.wait = wait;
                live.incidents = incidents;
                Some(std::mem::replace(&mut live.data, rest.data))
            }
            None => {
                let live = Live {
                    started_ms: rest.started_ms,
                    data: rest.data,
                    intake: rest.intake.clone(),
                    wait,
                    graph,
                    incidents,
                };
                state.live.insert(id, live);
                None
            }
        };
        match rest.waits {
            [_, more @ ..] if !more.is_empty() => {
                let more: Box<[u32]> = more.iter().map(|&n| node(n)).collect();
                state.more_waits.insert(id, more);
            }
            _ => {
                if !state.more_waits.is_empty() {
                    state.more_waits.remove(&id);
                }
            }
        }
        if rest.timers.is_empty() {
            if !state.timers.is_empty() {
                state.timers.remove(&id);
            }
        } else {
            let timers = rest.timers.iter().map(|&(n, due)| (node(n), due)).collect();
            state.timers.insert(id, timers);
        }
        if let Some(keys) = keys {
            state.keys.insert(id, keys);
        }
        drop(state);
        // The count it replaces drops outside the lock (maybe the data, and with
        // it the user's `Drop`).
        drop(old);
    }

    /// A sender on the loop of the running instance `id` and its process's name,
    /// if it is listed (it has rested once).
    pub fn intake(&self, id: u64) -> Option<(LoopIntake, &'static str)> {
        let state = self.state();
        let live = state.live.get(&id)?;
        Some((
            live.intake.clone(),
            state.graphs[usize::from(live.graph)].name,
        ))
    }

    /// The status of instance `id` if it ended and its summary is kept.
    pub fn ended_status(&self, id: u64) -> Option<(Status, &'static str)> {
        let state = self.state();
        let (_, gone) = state.ended.iter().find(|(i, _)| *i == id)?;
        Some((gone.status, gone.graph.name))
    }

    /// The keys of the running instance `id`, if it has any.
    pub fn keys(&self, id: u64) -> Option<Keys> {
        self.state().keys.get(&id).cloned()
    }

    /// Instance `id` ended with `status` at `ended_ms`: its entry goes, and is
    /// kept (with `data`) if the engine keeps ended ones.
    pub fn ended(
        &self,
        id: u64,
        graph: &'static Graph<Erased>,
        status: Status,
        ended_ms: i64,
        data: Option<Base<Erased>>,
    ) {
        let keep = self.keep_ended();
        let mut state = self.state();
        let live = state.live.remove(&id);
        state.more_waits.remove(&id);
        state.timers.remove(&id);
        let keys = state.keys.remove(&id).unwrap_or_default();
        let mut evicted = None;
        if let (true, Some(data)) = (keep > 0, data) {
            let gone = Gone {
                graph,
                keys,
                // Ended in its first step, it started just now.
                started_ms: live.as_ref().map_or(ended_ms, |l| l.started_ms),
                ended_ms,
                status,
                data,
            };
            state.ended.push_back((id, gone));
            if state.ended.len() > keep {
                evicted = state.ended.pop_front();
            }
        }
        drop(state);
        // The data they hold drops outside the lock.
        drop((live, evicted));
    }

    /// The running instances' armed timers, earliest first (then by instance), at
    /// most `limit`: (instance, its graph, the element, due in ms since the epoch).
    pub fn timers(&self, limit: usize) -> Vec<(u64, &'static Graph<Erased>, NodeIdx, i64)> {
        let state = self.state();
        let mut all: Vec<(i64, u64, u32)> = state
            .timers
            .iter()
            .flat_map(|(&id, ts)| ts.iter().map(move |&(node, due)| (due, id, node)))
            .collect();
        let limit = limit.min(all.len());
        if limit < all.len() {
            all.select_nth_unstable(limit);
            all.truncate(limit);
        }
        all.sort_unstable();
        all.into_iter()
            .filter_map(|(due, id, node)| {
                let graph = state.graphs[usize::from(state.live.get(&id)?.graph)];
                Some((id, graph, node as NodeIdx, due))
            })
            .collect()
    }

    /// The instances `filter` selects, in its order, each read by `read` under
    /// the lock (a clone of its data).
    pub fn select<T>(&self, filter: &InstanceQuery, read: impl FnMut(View<'_>) -> T) -> Vec<T> {
        let state = self.state();
        filter.select(state.views()).into_iter().map(read).collect()
    }

    /// How many instances `filter` selects.
    pub fn count(&self, filter: &InstanceQuery) -> u64 {
        let state = self.state();
        state.views().filter(|row| filter.matches(row)).count() as u64
    }
}
