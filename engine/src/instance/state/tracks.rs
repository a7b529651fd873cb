//! The live tracks of an instance: where each token is, what it is doing there, and
//! how many of them can still move.
//!
//! [`Tracks`] keeps the count of *active* tracks — working at an activity or parked
//! for an event — in step with their states: every state change goes through
//! [`Tracks::set_state`], every removal through [`Tracks::remove`], so the count
//! cannot drift from the slots (the loop's deadlock test reads it).

use std::cell::Cell;
use std::collections::HashMap;

use tokio::task::AbortHandle;

use crate::graph::NodeIdx;
use crate::instance::park::ParkSender;

use crate::instance::state::ids::{ScopeId, TrackId};

/// Where a live track is in its life at its node.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum TrackState {
    /// Being moved by the loop (only within one loop step).
    Moving,
    /// Running the activity at its node (inline on the loop or on its task), or
    /// applying a delivered event there.
    Working,
    /// Parked on its channel, waiting for an event (a catch, a receive or user task,
    /// an event-based gateway).
    Parked,
    /// Parked at the synchronising join at its node.
    AtJoin,
    /// At an embedded sub-process, waiting for the scope it runs to complete.
    InScope,
    /// At a compensation throw or a cancel end, waiting while compensation runs
    /// (the handlers it runs are active, not it).
    Compensating,
    /// Held where it failed: waiting for its next attempt, or at an open incident
    /// for a retry (`instance/retrying.rs`).
    Held,
}

impl TrackState {
    /// Whether a track in this state can still move without another token's help:
    /// its work will report, or an event can come for it.
    fn is_active(self) -> bool {
        matches!(
            self,
            TrackState::Working | TrackState::Parked | TrackState::Held
        )
    }
}

/// The loop's record of one live track, built only from what the loop did and what
/// the track reported (never by reading a live track).
pub(crate) struct TrackSlot<D> {
    pub id: TrackId,
    pub at: NodeIdx,
    /// The scope the track runs in.
    pub scope: ScopeId,
    state: TrackState,
    /// The loop's end of the track's park channel; `None` until its work first has
    /// to wait (a track whose work is always ready never needs a task).
    pub park: Option<ParkSender<D>>,
    /// The track's task, to stop it when an interrupting boundary drops its work.
    pub task: Option<AbortHandle>,
    /// How often the activity at `at` has been run: 1, one more for each run again
    /// after a restart.
    pub attempt: u32,
}

impl<D> TrackSlot<D> {
    #[inline]
    pub fn state(&self) -> TrackState {
        self.state
    }
}

/// The live tracks. Usually few at a time, so a vector is searched; past
/// [`INDEXED_FROM`] tracks (a wide multi-instance activity) a map from id to
/// position takes over, so a lookup stays O(1) with 10 000 tracks.
pub(crate) struct Tracks<D> {
    slots: Vec<TrackSlot<D>>,
    /// The indexes, boxed on first need (a track in a nested scope, or many
    /// tracks): most instances have neither, and the loop's future (a parked
    /// instance's memory) carries this field whole.
    indexes: Option<Box<Indexes>>,
    /// Tracks in an active state ([`TrackState::is_active`]).
    active: usize,
    next: u32,
    /// Where the last track looked up was: the loop asks for one track several
    /// times in a row (a task's start, commit, split), or for the next one in
    /// `slots` (`position`). Checked before it is used, so no change of `slots`
    /// has to keep it; in the padding after `next`.
    hint: Cell<u32>,
}

#[derive(Default)]
struct Indexes {
    /// Each track's position in `slots`, kept while there are many.
    by_id: Option<HashMap<TrackId, usize>>,
    /// Live tracks per nested scope (the process's own is not counted), so "is
    /// anything left in this scope" needs no scan.
    per_scope: HashMap<ScopeId, u32>,
    /// Nested scopes whose last track was removed since
    /// [`take_emptied`](Tracks::take_emptied).
    emptied: Vec<ScopeId>,
    /// Waiting tracks per node and working tracks, kept once asked for
    /// ([`count`](Tracks::count)): the in-memory listing reads them at every rest,
    /// which must not scan 10 000 parked tracks.
    counts: Option<Counts>,
}

/// What [`Tracks::count`] keeps: a track counts at the node it waits at from
/// the state change that parks it (or holds it, or brings it to a join) to the one
/// that moves it on; a waiting track's node does not change.
#[derive(Default)]
pub(crate) struct Counts {
    waiting: HashMap<NodeIdx, u32>,
    working: usize,
}

impl TrackState {
    /// Whether a track in this state waits at its node for something else to come.
    fn waits(self) -> bool {
        matches!(
            self,
            TrackState::Parked | TrackState::AtJoin | TrackState::Held
        )
    }
}

impl Counts {
    // Out of line: only listed instances (ones that rest) count, and the calls
    // stay small where every instance passes.
    #[cold]
    #[inline(never)]
    fn change(&mut self, at: NodeIdx, from: TrackState, to: TrackState) {
        if from.waits() {
            if let Some(n) = self.waiting.get_mut(&at) {
                *n -= 1;
                if *n == 0 {
                    self.waiting.remove(&at);
                }
            }
        }
        if to.waits() {
            *self.waiting.entry(at).or_default() += 1;
        }
        match (from == TrackState::Working, to == TrackState::Working) {
            (false, true) => self.working += 1,
            (true, false) => self.working -= 1,
            _ => {}
        }
    }
}

/// From how many live tracks on [`Tracks`] keeps its index.
const INDEXED_FROM: usize = 32;

thread_local! {
    /// A thread's slots for an instance's first step taken by its caller
    /// ([`Tracks::lend_scratch`]): an instance that ends there gives them back.
    static SCRATCH: Cell<Vec<TrackSlot<crate::data::Erased>>> = const { Cell::new(Vec::new()) };
}

impl<D> Tracks<D> {
    pub fn with_capacity(capacity: usize) -> Self {
        Self {
            slots: Vec::with_capacity(capacity),
            indexes: None,
            active: 0,
            next: 0,
            hint: Cell::new(0),
        }
    }

    /// Make room for the first track (an instance whose first step is not lent the
    /// thread's slots): exactly one, as a parked instance keeps it.
    pub fn make_room_for_first(&mut self) {
        self.slots.reserve_exact(1);
    }

    /// The position of `id` in `slots`.
    #[inline(always)]
    fn position(&self, id: TrackId) -> Option<usize> {
        let hint = self.hint.get() as usize;
        if self.slots.get(hint).is_some_and(|s| s.id == id) {
            return Some(hint);
        }
        // Then the slot after it: tracks are often taken in slot order (a split's
        // forks as they move, a join's merged tokens as they are removed).
        if self.slots.get(hint + 1).is_some_and(|s| s.id == id) {
            self.hint.set(hint as u32 + 1);
            return Some(hint + 1);
        }
        let found = self.search(id)?;
        // Positions fit: a vector of more than u32::MAX tracks is out of reach.
        self.hint.set(found as u32);
        Some(found)
    }

    #[inline(always)]
    fn search(&self, id: TrackId) -> Option<usize> {
        // Below half the threshold there is never an index: a short scan.
        if self.slots.len() <= INDEXED_FROM / 2 {
            return self.slots.iter().position(|s| s.id == id);
        }
        match self.indexes.as_ref().and_then(|i| i.by_id.as_ref()) {
            Some(by_id) => by_id.get(&id).copied(),
            None => self.slots.iter().position(|s| s.id == id),
        }
    }

    /// A slot was pushed at the end: index it, building the index when the
    /// vector grows past [`INDEXED_FROM`]; count it in its scope.
    fn pushed(&mut self) {
        let last = self.slots.len() - 1;
        let (id, scope) = (self.slots[last].id, self.slots[last].scope);
        if scope == crate::instance::state::ids::ROOT && last < INDEXED_FROM {
            if let Some(by_id) = self.indexes.as_mut().and_then(|i| i.by_id.as_mut()) {
                by_id.insert(id, last);
            }
            return;
        }
        let indexes = self.indexes.get_or_insert_with(Box::default);
        if scope != crate::instance::state::ids::ROOT {
            *indexes.per_scope.entry(scope).or_insert(0) += 1;
        }
        match &mut indexes.by_id {
            Some(by_id) => {
                by_id.insert(id, last);
            }
            None if self.slots.len() > INDEXED_FROM => {
                indexes.by_id = Some(
                    self.slots
                        .iter()
                        .enumerate()
                        .map(|(i, s)| (s.id, i))
                        .collect(),
                );
            }
            None => {}
        }
    }

    /// The nested scopes that lost their last track since the last call.
    pub fn take_emptied(&mut self) -> Vec<ScopeId> {
        match &mut self.indexes {
            Some(indexes) => std::mem::take(&mut indexes.emptied),
            None => Vec::new(),
        }
    }

    /// Whether any live track runs in the nested scope `scope`.
    #[inline]
    pub fn any_in(&self, scope: ScopeId) -> bool {
        self.indexes
            .as_ref()
            .and_then(|i| i.per_scope.get(&scope))
            .is_some_and(|&n| n > 0)
    }

    /// A new track at `at` in `scope`, being moved.
    pub fn add(&mut self, at: NodeIdx, scope: ScopeId) -> TrackId {
        let id = TrackId(self.next);
        self.next += 1;
        self.slots.push(TrackSlot {
            id,
            at,
            scope,
            state: TrackState::Moving,
            park: None,
            task: None,
            attempt: 1,
        });
        self.pushed();
        id
    }

    /// The id the next [`add`](Self::add) gives.
    #[inline]
    pub fn next_id(&self) -> TrackId {
        TrackId(self.next)
    }

    pub fn reserve(&mut self, additional: usize) {
        self.slots.reserve(additional);
    }

    #[inline(always)]
    pub fn get(&self, id: TrackId) -> Option<&TrackSlot<D>> {
        self.position(id).map(|i| &self.slots[i])
    }

    /// A track's slot, to move it or reach its channel; its state changes only
    /// through [`set_state`](Self::set_state).
    #[inline(always)]
    pub fn get_mut(&mut self, id: TrackId) -> Option<&mut TrackSlot<D>> {
        let i = self.position(id)?;
        Some(&mut self.slots[i])
    }

    /// Put a live track in `state`, keeping the active count; `false` if it is gone.
    #[inline(always)]
    pub fn set_state(&mut self, id: TrackId, state: TrackState) -> bool {
        let Some(i) = self.position(id) else {
            return false;
        };
        let slot = &mut self.slots[i];
        match (slot.state.is_active(), state.is_active()) {
            (false, true) => self.active += 1,
            (true, false) => self.active -= 1,
            _ => {}
        }
        if let Some(indexes) = &mut self.indexes {
            if let Some(counts) = &mut indexes.counts {
                counts.change(slot.at, slot.state, state);
            }
        }
        slot.state = state;
        true
    }

    /// Keep [`Counts`] from now on (a scan, once).
    pub fn count(&mut self) {
        let indexes = self.indexes.get_or_insert_with(Box::default);
        if indexes.counts.is_none() {
            let mut counts = Counts::default();
            for slot in &self.slots {
                counts.change(slot.at, TrackState::Moving, slot.state);
            }
            indexes.counts = Some(counts);
        }
    }

    /// The nodes tracks wait at (unordered) and how many tracks work, once
    /// [`count`](Self::count) was asked.
    pub fn counted(&self) -> Option<(impl Iterator<Item = NodeIdx> + '_, usize)> {
        let counts = self.indexes.as_deref()?.counts.as_ref()?;
        Some((counts.waiting.keys().copied(), counts.working))
    }

    /// Whether `id` is live, at `node`, in `state`.
    #[inline]
    pub fn is_at(&self, id: TrackId, node: NodeIdx, state: TrackState) -> bool {
        self.get(id)
            .is_some_and(|s| s.at == node && s.state == state)
    }

    /// Remove a track. Dropping its slot drops its park channel's sender: a parked
    /// track wakes to a closed channel and ends; a track still running a handler
    /// (its activity was interrupted) is aborted at the handler's next await.
    pub fn remove(&mut self, id: TrackId) -> Option<TrackSlot<D>> {
        let i = self.position(id)?;
        let slot = self.slots.swap_remove(i);
        if self.indexes.is_some() {
            self.unindex(id, i, &slot);
        }
        if slot.state.is_active() {
            self.active -= 1;
        }
        if let Some(task) = &slot.task {
            task.abort();
        }
        Some(slot)
    }

    /// Track `id`, in `scope`, was removed from position `i` (the last slot moved
    /// there): the indexes follow. Out of line: most instances have none.
    #[inline(never)]
    fn unindex(&mut self, id: TrackId, i: usize, removed: &TrackSlot<D>) {
        let Some(indexes) = &mut self.indexes else {
            return;
        };
        let scope = removed.scope;
        if let Some(counts) = &mut indexes.counts {
            counts.change(removed.at, removed.state, TrackState::Moving);
        }
        if let Some(by_id) = &mut indexes.by_id {
            by_id.remove(&id);
            if let Some(moved) = self.slots.get(i) {
                by_id.insert(moved.id, i);
            }
            if self.slots.len() <= INDEXED_FROM / 2 {
                indexes.by_id = None;
            }
        }
        if let Some(n) = indexes.per_scope.get_mut(&scope) {
            *n -= 1;
            if *n == 0 {
                indexes.per_scope.remove(&scope);
                indexes.emptied.push(scope);
            }
        }
    }

    /// Put back a track recorded in a checkpoint, in `state` (the active count
    /// follows); `next` is the id the next new track gets.
    #[cfg(feature = "durable")]
    pub fn restore(
        &mut self,
        id: TrackId,
        at: NodeIdx,
        scope: ScopeId,
        state: TrackState,
        attempt: u32,
    ) {
        self.slots.push(TrackSlot {
            id,
            at,
            scope,
            state,
            park: None,
            task: None,
            attempt,
        });
        self.pushed();
        if state.is_active() {
            self.active += 1;
        }
        if let Some(counts) = self.indexes.as_mut().and_then(|i| i.counts.as_mut()) {
            counts.change(at, TrackState::Moving, state);
        }
        self.next = self.next.max(id.0 + 1);
    }

    /// Take every track out (the instance is stopping).
    pub fn take_all(&mut self) -> Vec<TrackSlot<D>> {
        self.active = 0;
        if let Some(indexes) = &mut self.indexes {
            indexes.by_id = None;
            indexes.per_scope.clear();
            if let Some(counts) = &mut indexes.counts {
                *counts = Counts::default();
            }
        }
        std::mem::take(&mut self.slots)
    }

    /// Tracks that are working or parked for an event.
    #[inline]
    pub fn active(&self) -> usize {
        self.active
    }

    #[inline]
    pub fn is_empty(&self) -> bool {
        self.slots.is_empty()
    }

    /// How many tracks are live.
    #[inline]
    pub fn len(&self) -> usize {
        self.slots.len()
    }

    pub fn iter(&self) -> impl Iterator<Item = &TrackSlot<D>> {
        self.slots.iter()
    }
}

impl Tracks<crate::data::Erased> {
    /// Use this thread's slots for an instance's first step on its caller
    /// (`Birth::inline_first_step`), until [`Tracks::return_scratch`]: an instance
    /// whose work is ready ends there with no vector of its own made and freed.
    pub fn lend_scratch(&mut self) {
        debug_assert!(self.slots.capacity() == 0, "lent before any track");
        self.slots = SCRATCH.try_with(Cell::take).unwrap_or_default();
        if self.slots.capacity() == 0 {
            self.make_room_for_first();
        }
    }

    /// After the first step: an instance that `ended` gives the (empty) slots back
    /// to the thread; one that goes on keeps them, cut to what it holds (a parked
    /// instance's memory), and the thread makes new ones on its next birth.
    pub fn return_scratch(&mut self, ended: bool) {
        if ended && self.slots.is_empty() {
            let slots = std::mem::take(&mut self.slots);
            let _ = SCRATCH.try_with(|cell| cell.set(slots));
        } else if self.slots.capacity() > self.slots.len().max(1) {
            self.slots.shrink_to(self.slots.len().max(1));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::instance::state::ids::ROOT;

    #[test]
    fn the_active_count_follows_every_state_change_and_removal() {
        let mut tracks = Tracks::<()>::with_capacity(1);
        let a = tracks.add(0, ROOT);
        let b = tracks.add(1, ROOT);
        assert_eq!(tracks.active(), 0);
        assert!(tracks.set_state(a, TrackState::Working));
        assert!(tracks.set_state(b, TrackState::Parked));
        assert_eq!(tracks.active(), 2);
        // Working -> Parked stays active; -> AtJoin does not.
        assert!(tracks.set_state(a, TrackState::Parked));
        assert_eq!(tracks.active(), 2);
        assert!(tracks.set_state(a, TrackState::AtJoin));
        assert_eq!(tracks.active(), 1);
        assert!(tracks.remove(b).is_some());
        assert_eq!(tracks.active(), 0);
        assert!(tracks.remove(a).is_some());
        assert!(!tracks.set_state(a, TrackState::Working));
        assert_eq!(tracks.active(), 0);
        assert_eq!(tracks.next_id(), TrackId(2));
    }

    #[test]
    fn many_tracks_are_found_through_the_index_and_counted_per_scope() {
        let mut tracks = Tracks::<()>::with_capacity(1);
        let scope = ScopeId(7);
        let ids: Vec<TrackId> = (0..100).map(|_| tracks.add(0, scope)).collect();
        assert!(
            tracks.indexes.as_ref().is_some_and(|i| i.by_id.is_some())
                && tracks.any_in(scope)
                && !tracks.any_in(ROOT)
        );
        // Remove every other one: the swapped-in slots stay findable.
        for id in ids.iter().step_by(2) {
            assert!(tracks.remove(*id).is_some());
        }
        for (i, id) in ids.iter().enumerate() {
            assert_eq!(tracks.get(*id).is_some(), i % 2 == 1, "{id:?}");
        }
        for id in ids.iter().skip(1).step_by(2) {
            assert_eq!(tracks.get(*id).map(|s| s.id), Some(*id));
            assert!(tracks.remove(*id).is_some());
        }
        assert!(tracks.is_empty() && !tracks.any_in(scope));
        assert!(tracks.indexes.as_ref().is_some_and(|i| i.by_id.is_none()));
    }
}
