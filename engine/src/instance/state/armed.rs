//! What an instance has armed: each entry is a set of triggers and whose they are —
//! a track parked for its event, the boundary events of a working activity, or the
//! event sub-process starts of an open scope.
//!
//! An entry is recorded before any of its subscriptions exists (park before
//! register), and the first trigger that fires takes the whole entry out (flip on
//! dispatch): a later delivery for it finds nothing and is dropped. That makes an
//! event-based gateway's deferred choice atomic, whatever its triggers.
//!
//! Most instances hold one or two entries: a short `Vec`, scanned. Past
//! [`MANY`] entries (a wide multi-instance user or receive task, 10 000 waits in one
//! instance) the set moves into an index — entries by arming number, waits by event
//! source, entries by holder, open user work by node and track — so every lookup
//! costs O(log n) and completing them one by one stays linear; it moves back when
//! few are left. The index costs a parked instance nothing: `Armed` is one `Vec`'s
//! size either way (the index is boxed, in the `Vec`'s niche).

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Arc;

use crate::events::{ChoiceId, SubId};
use crate::graph::NodeIdx;
use crate::instance::state::conditions::ConditionId;
use crate::instance::state::ids::ScopeId;
use crate::instance::state::ids::TrackId;
use crate::instance::state::timers::TimerId;

/// One armed entry.
pub(crate) struct ArmedEntry {
    pub holder: Holder,
    /// Where it waits: the catch, receive or user task, or the event-based gateway;
    /// for a guard, the activity; for a scope, its sub-process (for the process's
    /// own scope, its first event sub-process start).
    pub at: NodeIdx,
    /// One wait per trigger: a single one, or one per arm of an event-based gateway,
    /// or one per subscribing boundary event or event sub-process start.
    pub waits: Vec<Wait>,
    /// The hub's choice the entry's subscriptions belong to, for a track parked at
    /// an event-based gateway: one arm is served, and a loop-side trigger (a timer,
    /// a condition) wins only by closing it first.
    pub choice: Option<ChoiceId>,
}

/// Whose triggers an [`ArmedEntry`] holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) enum Holder {
    /// A parked track: the first trigger to fire flips it out and moves it on.
    Track(TrackId),
    /// The boundary events armed while the track's activity works (the track is not
    /// parked; the entry lives exactly as long as the activity).
    Guard(TrackId),
    /// The event sub-process starts of an open scope, armed while it is open.
    Scope(ScopeId),
}

/// One armed trigger.
pub(crate) struct Wait {
    /// The node whose trigger this is (the catch itself, a gateway's arm, a boundary).
    pub arm: NodeIdx,
    pub source: EventSource,
    /// How often it fired (a non-interrupting boundary's timer cycle re-arms).
    pub fired: u32,
    /// For a message: the key it is subscribed under, so a commit that changes
    /// what the key reads moves the subscription (`Instance::follow_keys`).
    pub key: Option<Arc<str>>,
}

/// Where the event that resolves a wait comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) enum EventSource {
    /// A hub subscription: a message or a signal.
    Hub(SubId),
    /// A loop-owned timer.
    Timer(TimerId),
    /// A user task's completion through the handle.
    UserTask,
    /// A loop-owned conditional event.
    Condition(ConditionId),
}

/// Entries the set holds as a scanned `Vec`; one more moves it into the index.
pub(crate) const MANY: usize = 16;

/// The armed entries, in arming order.
///
/// An entry is named by a key that [`find`](Self::find), [`find_work`](Self::find_work)
/// and the message-wait lists return: valid until the next removal (a scanned set's
/// keys are positions, which a removal shifts; a removal may also move the set back
/// from the index to the scanned `Vec`).
#[derive(Default)]
pub(crate) struct Armed {
    store: Store,
}

impl Drop for Armed {
    #[inline]
    fn drop(&mut self) {
        // A few entries' vector that never grew owns nothing.
        if !matches!(&self.store, Store::Few(entries) if entries.capacity() == 0) {
            super::drop_made(std::mem::take(&mut self.store));
        }
    }
}

enum Store {
    /// Up to [`MANY`] entries, scanned; the key is the position.
    Few(Vec<ArmedEntry>),
    /// More: indexed; the key is the entry's arming number.
    Many(Box<Indexed>),
}

impl Default for Store {
    fn default() -> Self {
        Store::Few(Vec::new())
    }
}

/// A large set's entries and the indexes over them.
struct Indexed {
    /// By arming number: iteration in arming order.
    entries: BTreeMap<usize, ArmedEntry>,
    /// The next entry's arming number.
    next: usize,
    /// Every wait but open work (which no event source names): its entry and wait.
    by_source: HashMap<EventSource, (usize, usize)>,
    /// Each holder has at most one entry.
    by_holder: HashMap<Holder, usize>,
    /// Parked tracks with open work, by user task and track: the earliest first.
    work: BTreeMap<(NodeIdx, TrackId), usize>,
    /// Message waits by catch and the key they are subscribed under: a commit
    /// looks at each catch once, and moves only the waits whose key it changed.
    messages: HashMap<NodeIdx, HashMap<Arc<str>, WaitKeys>>,
}

/// Waits by (entry, wait), in order.
type WaitKeys = BTreeSet<(usize, usize)>;

impl Indexed {
    /// The index over `entries`, numbered in their order.
    fn of(entries: Vec<ArmedEntry>) -> Box<Self> {
        let mut index = Box::new(Indexed {
            entries: BTreeMap::new(),
            next: 0,
            by_source: HashMap::new(),
            by_holder: HashMap::new(),
            work: BTreeMap::new(),
            messages: HashMap::new(),
        });
        for entry in entries {
            index.push(entry);
        }
        index
    }

    /// Add `entry` as the last armed.
    fn push(&mut self, entry: ArmedEntry) {
        let e = self.next;
        self.next += 1;
        self.insert(e, entry);
    }

    /// Put entry `e` in, indexing it and each of its waits.
    fn insert(&mut self, e: usize, entry: ArmedEntry) {
        self.by_holder.insert(entry.holder, e);
        for (w, wait) in entry.waits.iter().enumerate() {
            match (wait.source, entry.holder) {
                (EventSource::UserTask, Holder::Track(track)) => {
                    self.work.insert((entry.at, track), e);
                }
                (EventSource::UserTask, _) => {}
                (source, _) => {
                    self.by_source.insert(source, (e, w));
                }
            }
            if let Some(key) = &wait.key {
                self.messages
                    .entry(wait.arm)
                    .or_default()
                    .entry(key.clone())
                    .or_default()
                    .insert((e, w));
            }
        }
        self.entries.insert(e, entry);
    }

    #[cold]
    #[inline(never)]
    fn find(&self, source: EventSource) -> Option<(usize, usize)> {
        self.by_source.get(&source).copied()
    }

    /// Take entry `e` out of the set and every index.
    fn remove(&mut self, e: usize) -> Option<ArmedEntry> {
        let entry = self.entries.remove(&e)?;
        self.by_holder.remove(&entry.holder);
        for (w, wait) in entry.waits.iter().enumerate() {
            match (wait.source, entry.holder) {
                (EventSource::UserTask, Holder::Track(track)) => {
                    self.work.remove(&(entry.at, track));
                }
                (EventSource::UserTask, _) => {}
                (source, _) => {
                    self.by_source.remove(&source);
                }
            }
            let Some(key) = &wait.key else { continue };
            let Some(keys) = self.messages.get_mut(&wait.arm) else {
                continue;
            };
            if let Some(waits) = keys.get_mut(key) {
                waits.remove(&(e, w));
                if waits.is_empty() {
                    keys.remove(key);
                }
            }
            if keys.is_empty() {
                self.messages.remove(&wait.arm);
            }
        }
        Some(entry)
    }

    /// Change entry `e` by `change`, keeping the indexes true (O(log n + waits)).
    fn update(&mut self, e: usize, change: impl FnOnce(&mut ArmedEntry)) {
        if let Some(mut entry) = self.remove(e) {
            change(&mut entry);
            self.insert(e, entry);
        }
    }
}

/// Whether the scanned `entry` is a parked track with open work at `node`.
fn open_work_at(entry: &ArmedEntry, node: NodeIdx) -> Option<TrackId> {
    match entry.holder {
        Holder::Track(track)
            if entry.at == node
                && entry
                    .waits
                    .iter()
                    .any(|w| w.source == EventSource::UserTask) =>
        {
            Some(track)
        }
        _ => None,
    }
}

impl Armed {
    /// Add an entry of `choice`'s (if any) whose `waits` waits are armed next (by
    /// [`push_wait`](Self::push_wait)).
    pub fn push(&mut self, holder: Holder, at: NodeIdx, waits: usize, choice: Option<ChoiceId>) {
        let entry = ArmedEntry {
            holder,
            at,
            waits: Vec::with_capacity(waits),
            choice,
        };
        match &mut self.store {
            Store::Few(entries) if entries.len() < MANY => {
                // Most instances hold a few entries at a time: grow one at a time.
                entries.reserve_exact(1);
                entries.push(entry);
            }
            _ => self.push_indexed(entry),
        }
    }

    /// Past [`MANY`] entries: into the index (made now if need be).
    #[cold]
    #[inline(never)]
    fn push_indexed(&mut self, entry: ArmedEntry) {
        match &mut self.store {
            Store::Few(entries) => {
                let mut index = Indexed::of(std::mem::take(entries));
                index.push(entry);
                self.store = Store::Many(index);
            }
            Store::Many(index) => index.push(entry),
        }
    }

    /// Add a wait to the entry pushed last (gone already if its arming failed).
    pub fn push_wait(&mut self, wait: Wait) {
        match &mut self.store {
            Store::Few(entries) => {
                if let Some(entry) = entries.last_mut() {
                    entry.waits.push(wait);
                }
            }
            Store::Many(index) => {
                let e = index.next - 1;
                index.update(e, |entry| entry.waits.push(wait));
            }
        }
    }

    /// The choice of the entry pushed last.
    pub fn last_choice(&self) -> Option<ChoiceId> {
        match &self.store {
            Store::Few(entries) => entries.last()?.choice,
            Store::Many(index) => index.entries.get(&(index.next - 1))?.choice,
        }
    }

    /// The entry and wait that `source` resolves (a hub subscription, a timer, a
    /// condition: open work is found by [`find_work`](Self::find_work)).
    #[inline]
    pub fn find(&self, source: EventSource) -> Option<(usize, usize)> {
        match &self.store {
            Store::Few(entries) => entries.iter().enumerate().find_map(|(e, entry)| {
                entry
                    .waits
                    .iter()
                    .position(|w| w.source == source)
                    .map(|w| (e, w))
            }),
            Store::Many(index) => index.find(source),
        }
    }

    /// The parked track with open work at the user task `node` that parked first
    /// (the lowest track), and its entry.
    pub fn find_work(&self, node: NodeIdx) -> Option<(usize, TrackId)> {
        match &self.store {
            Store::Few(entries) => entries
                .iter()
                .enumerate()
                .filter_map(|(e, entry)| Some((e, open_work_at(entry, node)?)))
                .min_by_key(|(_, track)| *track),
            Store::Many(index) => index
                .work
                .range((node, TrackId(0))..=(node, TrackId(u32::MAX)))
                .next()
                .map(|(&(_, track), &e)| (e, track)),
        }
    }

    /// The open work of the token on `track` at `node`.
    pub fn find_work_of(&self, node: NodeIdx, track: TrackId) -> Option<(usize, TrackId)> {
        match &self.store {
            Store::Few(entries) => entries
                .iter()
                .position(|entry| open_work_at(entry, node) == Some(track))
                .map(|e| (e, track)),
            Store::Many(index) => index.work.get(&(node, track)).map(|&e| (e, track)),
        }
    }

    /// Whether nothing is armed.
    #[inline]
    pub fn is_empty(&self) -> bool {
        matches!(&self.store, Store::Few(entries) if entries.is_empty())
    }

    /// Whether `holder` has an entry.
    pub fn holds(&self, holder: Holder) -> Option<&ArmedEntry> {
        match &self.store {
            Store::Few(entries) => entries.iter().find(|e| e.holder == holder),
            Store::Many(index) => index.entries.get(index.by_holder.get(&holder)?),
        }
    }

    /// Take `holder`'s entry out.
    #[inline]
    pub fn take(&mut self, holder: Holder) -> Option<ArmedEntry> {
        // Every task's end asks for its guard: the scanned set's path stays small
        // enough to inline, the index's is a call.
        match &mut self.store {
            Store::Few(entries) => {
                if entries.is_empty() {
                    return None;
                }
                let e = entries.iter().position(|e| e.holder == holder)?;
                Some(entries.remove(e))
            }
            Store::Many(_) => self.take_indexed(holder),
        }
    }

    #[cold]
    #[inline(never)]
    fn take_indexed(&mut self, holder: Holder) -> Option<ArmedEntry> {
        let Store::Many(index) = &self.store else {
            return None;
        };
        let e = *index.by_holder.get(&holder)?;
        self.take_entry(e)
    }

    /// Take entry `e` out, keeping the others in arming order.
    ///
    /// # Panics
    /// When there is no entry `e` (a key is valid until the next removal).
    pub fn remove(&mut self, e: usize) -> ArmedEntry {
        self.take_entry(e)
            .unwrap_or_else(|| panic!("armed entry {e} is gone"))
    }

    fn take_entry(&mut self, e: usize) -> Option<ArmedEntry> {
        match &mut self.store {
            Store::Few(entries) => (e < entries.len()).then(|| entries.remove(e)),
            Store::Many(index) => {
                let entry = index.remove(e)?;
                // Few left: back to the scanned set, in arming order.
                if index.entries.len() <= MANY / 4 {
                    let entries = std::mem::take(&mut index.entries).into_values().collect();
                    self.store = Store::Few(entries);
                }
                Some(entry)
            }
        }
    }

    /// Every entry, in arming order (every instance's end asks, most with few).
    #[inline]
    pub fn take_all(&mut self) -> Vec<ArmedEntry> {
        match &mut self.store {
            Store::Few(entries) => std::mem::take(entries),
            Store::Many(_) => self.take_all_indexed(),
        }
    }

    #[cold]
    #[inline(never)]
    fn take_all_indexed(&mut self) -> Vec<ArmedEntry> {
        match std::mem::take(&mut self.store) {
            Store::Few(entries) => entries,
            Store::Many(index) => index.entries.into_values().collect(),
        }
    }

    /// Whether a message wait with a correlation key is armed: what
    /// `message_catches` would list something for (every commit that changed a
    /// field asks, before following the keys).
    #[inline]
    pub fn any_keyed_message_wait(&self) -> bool {
        match &self.store {
            Store::Few(entries) => entries
                .iter()
                .any(|entry| entry.waits.iter().any(|wait| wait.key.is_some())),
            Store::Many(index) => !index.messages.is_empty(),
        }
    }

    /// The catches with message waits armed.
    pub fn message_catches(&self) -> Vec<NodeIdx> {
        match &self.store {
            Store::Few(entries) => {
                let mut found: Vec<NodeIdx> = Vec::new();
                for wait in entries.iter().flat_map(|entry| &entry.waits) {
                    if wait.key.is_some() && !found.contains(&wait.arm) {
                        found.push(wait.arm);
                    }
                }
                found
            }
            Store::Many(index) => index.messages.keys().copied().collect(),
        }
    }

    /// The message waits at the catch `arm` subscribed under another key than
    /// `current`: (entry, wait, subscription).
    pub fn stale_keys(&self, arm: NodeIdx, current: &str) -> Vec<(usize, usize, SubId)> {
        let sub = |entry: &ArmedEntry, w: usize| match entry.waits[w].source {
            EventSource::Hub(sub) => Some(sub),
            _ => None,
        };
        match &self.store {
            Store::Few(entries) => {
                let mut found = Vec::new();
                for (e, entry) in entries.iter().enumerate() {
                    for (w, wait) in entry.waits.iter().enumerate() {
                        let stale = wait.key.as_deref().is_some_and(|key| key != current);
                        if let (true, Some(sub)) = (stale && wait.arm == arm, sub(entry, w)) {
                            found.push((e, w, sub));
                        }
                    }
                }
                found
            }
            Store::Many(index) => index
                .messages
                .get(&arm)
                .into_iter()
                .flatten()
                .filter(|(key, _)| &***key != current)
                .flat_map(|(_, waits)| waits.iter().copied())
                .filter_map(|(e, w)| Some((e, w, sub(&index.entries[&e], w)?)))
                .collect(),
        }
    }

    /// Every entry with its key, in arming order.
    fn keyed(&self) -> impl Iterator<Item = (usize, &ArmedEntry)> {
        let (few, many) = match &self.store {
            Store::Few(entries) => (Some(entries.iter().enumerate()), None),
            Store::Many(index) => (
                None,
                Some(index.entries.iter().map(|(&e, entry)| (e, entry))),
            ),
        };
        few.into_iter().flatten().chain(many.into_iter().flatten())
    }

    /// Every entry, in arming order.
    pub fn iter(&self) -> impl Iterator<Item = &ArmedEntry> {
        self.keyed().map(|(_, entry)| entry)
    }

    /// Entry `e`.
    ///
    /// # Panics
    /// When there is no entry `e` (a key is valid until the next removal).
    pub fn entry(&self, e: usize) -> &ArmedEntry {
        match &self.store {
            Store::Few(entries) => &entries[e],
            Store::Many(index) => &index.entries[&e],
        }
    }

    /// Wait `w` of entry `e` fired once more: its count and source.
    pub fn fired(&mut self, e: usize, w: usize) -> (u32, EventSource) {
        // No index reads the count: changed in place.
        let wait = match &mut self.store {
            Store::Few(entries) => &mut entries[e].waits[w],
            Store::Many(index) => match index.entries.get_mut(&e) {
                Some(entry) => &mut entry.waits[w],
                None => panic!("armed entry {e} is gone"),
            },
        };
        wait.fired += 1;
        (wait.fired, wait.source)
    }

    /// Wait `w` of entry `e` is subscribed anew: under `source`, with `key`.
    pub fn resubscribed(&mut self, e: usize, w: usize, source: EventSource, key: Arc<str>) {
        let change = |entry: &mut ArmedEntry| {
            if let Some(wait) = entry.waits.get_mut(w) {
                wait.source = source;
                wait.key = Some(key);
            }
        };
        match &mut self.store {
            Store::Few(entries) => {
                if let Some(entry) = entries.get_mut(e) {
                    change(entry);
                }
            }
            Store::Many(index) => index.update(e, change),
        }
    }
}

#[cfg(test)]
mod tests;
