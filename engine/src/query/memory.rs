//! The in-memory engine's listing of its instances: what `Engine::instances`
//! answers from. An instance's loop — the single writer of its state — puts its
//! entry here when it rests (every token waits: where a durable instance
//! checkpoints) and takes it out when it ends; the listing keeps the summaries of
//! the last `EngineConfig::keep_ended` ended instances (none by default).

use std::any::Any;
use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

use super::{InstanceQuery, Row, Status};

/// One instance as it last rested (or ended).
pub(crate) struct Entry {
    pub id: u64,
    pub process: &'static str,
    pub fingerprint: u64,
    pub status: Status,
    pub business_key: Option<Box<str>>,
    pub started_ms: i64,
    pub ended_ms: Option<i64>,
    pub waits: Vec<&'static str>,
    pub incidents: u32,
    /// The loop's data (`Erased`), as it was then.
    pub data: Box<dyn Any + Send + Sync>,
}

impl Row for &Entry {
    fn id(&self) -> u64 {
        self.id
    }
    fn process(&self) -> &str {
        self.process
    }
    fn status(&self) -> Status {
        self.status
    }
    fn waits_at(&self, node: &str) -> bool {
        self.waits.contains(&node)
    }
    fn business_key(&self) -> Option<&str> {
        self.business_key.as_deref()
    }
    fn key(&self) -> Option<&str> {
        // In memory, correlation lives in the instance's waits, not on it.
        None
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
    live: HashMap<u64, Entry>,
    /// Oldest first, at most `keep_ended`.
    ended: VecDeque<Entry>,
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

    /// A running instance rested: its entry is renewed in place by `renew` (its
    /// data cloned into the box it has, its waits into its vector: nothing
    /// allocated), or made by `make` the first time.
    pub fn rested(&self, id: u64, renew: impl FnOnce(&mut Entry), make: impl FnOnce() -> Entry) {
        let mut state = self.state();
        match state.live.get_mut(&id) {
            Some(entry) => renew(entry),
            None => {
                state.live.insert(id, make());
            }
        }
    }

    /// Instance `id` ended: its live entry goes, and `ended` is kept if any is.
    pub fn ended(&self, id: u64, ended: Option<Entry>) {
        let keep = self.keep_ended();
        let mut state = self.state();
        let old = state.live.remove(&id);
        let mut evicted = None;
        if let Some(entry) = ended.filter(|_| keep > 0) {
            state.ended.push_back(entry);
            if state.ended.len() > keep {
                evicted = state.ended.pop_front();
            }
        }
        drop(state);
        drop((old, evicted));
    }

    /// The entries `filter` selects, in its order, each read by `read` under the
    /// lock (a clone of its data).
    pub fn select<T>(&self, filter: &InstanceQuery, mut read: impl FnMut(&Entry) -> T) -> Vec<T> {
        let state = self.state();
        let rows = state.live.values().chain(state.ended.iter());
        filter.select(rows).into_iter().map(&mut read).collect()
    }

    /// How many entries `filter` selects.
    pub fn count(&self, filter: &InstanceQuery) -> u64 {
        let state = self.state();
        state
            .live
            .values()
            .chain(state.ended.iter())
            .filter(|e| filter.matches(e))
            .count() as u64
    }
}
