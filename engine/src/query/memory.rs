//! The in-memory engine's listing of its instances: what `Engine::instances`
//! answers from. An instance's loop — the single writer of its state — puts its
//! entry here when it rests (every token waits: where a durable instance
//! checkpoints) and takes it out when it ends; the listing keeps the summaries of
//! the last `EngineConfig::keep_ended` ended instances (none by default).

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

use super::{InstanceQuery, Row, Status};
use crate::data::Erased;
use crate::graph::Graph;
use crate::mem::cell::Base;

/// One instance as it last rested (or ended). Compact: the listing holds one per
/// waiting instance (a parked instance's memory, `--bench events -- park-memory`).
pub(crate) struct Entry {
    pub graph: &'static Graph<Erased>,
    pub business_key: Option<Box<str>>,
    pub started_ms: i64,
    /// When it ended; `i64::MIN` while it runs.
    pub ended_ms: i64,
    pub waits: Waits,
    /// The loop's committed data as it was then: a count on it, not a copy (the
    /// loop's next commit makes a new cell rather than change this one).
    pub data: Base<Erased>,
    pub incidents: u32,
    pub status: Status,
}

/// The ids of the elements an instance waits at, sorted: most wait at one, which
/// needs no allocation.
#[derive(Clone, PartialEq)]
pub(crate) enum Waits {
    One(&'static str),
    Many(Box<[&'static str]>),
}

impl Waits {
    pub fn of(waits: &[&'static str]) -> Waits {
        match waits {
            [one] => Waits::One(one),
            many => Waits::Many(many.into()),
        }
    }

    pub fn as_slice(&self) -> &[&'static str] {
        match self {
            Waits::One(one) => std::slice::from_ref(one),
            Waits::Many(many) => many,
        }
    }
}

/// An entry with its instance's id, as a query reads it.
pub(crate) type Listed<'a> = (u64, &'a Entry);

impl Row for Listed<'_> {
    fn id(&self) -> u64 {
        self.0
    }
    fn process(&self) -> &str {
        self.1.graph.name
    }
    fn status(&self) -> Status {
        self.1.status
    }
    fn waits_at(&self, node: &str) -> bool {
        self.1.waits.as_slice().contains(&node)
    }
    fn business_key(&self) -> Option<&str> {
        self.1.business_key.as_deref()
    }
    fn key(&self) -> Option<&str> {
        // In memory, correlation lives in the instance's waits, not on it.
        None
    }
    fn incidents(&self) -> u32 {
        self.1.incidents
    }
    fn started_ms(&self) -> i64 {
        self.1.started_ms
    }
    fn ended_ms(&self) -> Option<i64> {
        (self.1.ended_ms != i64::MIN).then_some(self.1.ended_ms)
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
    live: HashMap<u64, Entry>,
    /// Oldest first, at most `keep_ended`.
    ended: VecDeque<(u64, Entry)>,
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

    /// A running instance rested (or was started with a business key): its
    /// entry is renewed in place by `renew`, or made by `make` the first time.
    pub fn rested(&self, id: u64, renew: impl FnOnce(&mut Entry), make: impl FnOnce() -> Entry) {
        let mut state = self.state();
        match state.live.get_mut(&id) {
            Some(entry) => renew(entry),
            None => {
                state.live.insert(id, make());
            }
        }
    }

    /// Instance `id` ended: its live entry goes — kept as ended (by `end`) if the
    /// engine keeps ended ones, or made by `make` for one never listed.
    pub fn ended(
        &self,
        id: u64,
        end: impl FnOnce(&mut Entry),
        make: impl FnOnce() -> Option<Entry>,
    ) {
        let keep = self.keep_ended();
        let mut state = self.state();
        let mut gone = state.live.remove(&id);
        let mut evicted = None;
        if keep > 0 {
            let kept = match gone.take() {
                Some(mut entry) => {
                    end(&mut entry);
                    Some(entry)
                }
                None => make(),
            };
            if let Some(entry) = kept {
                state.ended.push_back((id, entry));
                if state.ended.len() > keep {
                    evicted = state.ended.pop_front();
                }
            }
        }
        drop(state);
        // The data they hold drops outside the lock (the user's `Drop`).
        drop((gone, evicted));
    }

    /// The entries `filter` selects, in its order, each read by `read` under the
    /// lock (a clone of its data).
    pub fn select<T>(
        &self,
        filter: &InstanceQuery,
        mut read: impl FnMut(Listed<'_>) -> T,
    ) -> Vec<T> {
        let state = self.state();
        let live = state.live.iter().map(|(id, e)| (*id, e));
        let rows = live.chain(state.ended.iter().map(|(id, e)| (*id, e)));
        filter.select(rows).into_iter().map(&mut read).collect()
    }

    /// How many entries `filter` selects.
    pub fn count(&self, filter: &InstanceQuery) -> u64 {
        let state = self.state();
        let live = state.live.iter().map(|(id, e)| (*id, e));
        live.chain(state.ended.iter().map(|(id, e)| (*id, e)))
            .filter(|row| filter.matches(row))
            .count() as u64
    }
}
