//! The synchronising joins' arrival state (their pure rules — the OR-join's
//! reachability test, complex activation — are `join_rules`). ARCHITECTURE.md,
//! "Joins".
//!
//! A join counts tokens per incoming flow, so a parallel join on a loop fires once
//! per wave, and each firing consumes exactly one token per flow it synchronises (the
//! earliest on each). Only the loop touches this state, so an arrival is atomic
//! without a lock.

use std::cell::Cell;

use crate::graph::NodeIdx;
use crate::instance::state::ids::ScopeId;
use crate::instance::state::ids::TrackId;

/// A token waiting at a join.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Arrival {
    pub track: TrackId,
}

/// A set of a join's incoming flows (their slots, in the node's incoming order): a
/// word for up to 64 flows, with no allocation; words on the heap past that.
#[derive(Debug, Default)]
struct FlowSet {
    word: u64,
    wide: Vec<u64>,
}

impl FlowSet {
    fn new(flows: usize) -> Self {
        Self {
            word: 0,
            wide: match flows > 64 {
                true => vec![0; flows.div_ceil(64)],
                false => Vec::new(),
            },
        }
    }

    /// Add `slot`; whether it was not in the set.
    fn insert(&mut self, slot: usize) -> bool {
        let (word, bit) = match self.wide.is_empty() {
            true => (&mut self.word, slot),
            false => (&mut self.wide[slot / 64], slot % 64),
        };
        let new = *word & 1 << bit == 0;
        *word |= 1 << bit;
        new
    }

    fn clear(&mut self) {
        self.word = 0;
        self.wide.iter_mut().for_each(|w| *w = 0);
    }

    fn len(&self) -> usize {
        let wide: u32 = self.wide.iter().map(|w| w.count_ones()).sum();
        (self.word.count_ones() + wide) as usize
    }
}

/// One join's state in one scope instance: which incoming flows hold a token. Its
/// waiting tokens are in [`Joins`], with every other join's, so a join costs no
/// allocation of its own up to 64 incoming flows.
#[derive(Debug)]
pub(crate) struct JoinState {
    pub node: NodeIdx,
    /// The scope instance the join is in: a sub-process entered twice has a join
    /// state per entry.
    pub scope: ScopeId,
    incoming: usize,
    /// The flows holding at least one waiting token.
    marked: FlowSet,
    /// Incoming flows holding none.
    unmarked: usize,
    /// An arrival at this join happened since its last check; an arrival-triggered
    /// firing continues on the last arrival, a death-triggered one on the first.
    pub arrived_since_check: bool,
    /// A complex join that fired: single-pass, it consumes every later arrival.
    pub spent: bool,
}

impl JoinState {
    fn new(node: NodeIdx, scope: ScopeId, incoming: usize) -> Self {
        Self {
            node,
            scope,
            incoming,
            marked: FlowSet::new(incoming),
            unmarked: incoming,
            arrived_since_check: false,
            spent: false,
        }
    }

    /// Bit `i` set when incoming flow `i` holds at least one token. For the
    /// reachability joins only, which `process!` limits to 64 incoming flows.
    pub fn marked(&self) -> u64 {
        debug_assert!(self.incoming <= 64);
        self.marked.word
    }

    /// Whether every incoming flow holds a token.
    pub fn complete(&self) -> bool {
        self.unmarked == 0
    }

    pub fn is_empty(&self) -> bool {
        self.unmarked == self.incoming
    }

    fn holds(&self, w: &Waiting) -> bool {
        w.node == self.node && w.scope == self.scope
    }
}

/// A token waiting at the join `node` of scope instance `scope`, on incoming flow
/// number `slot`.
#[derive(Clone, Copy, Debug)]
struct Waiting {
    node: NodeIdx,
    scope: ScopeId,
    slot: u32,
    track: TrackId,
}

/// The arrival state of the joins that hold or held tokens, one per join and scope
/// instance (a sub-process entered twice has a state per entry), and their waiting
/// tokens, all in one vector in arrival order: two vectors however many joins.
/// Boxed, made on the first arrival: an instance with no join carries a pointer (a
/// parked instance's memory, in its loop's future). The box is the thread's spare
/// one when it has one, given back by an instance that ends in its first step on
/// its caller ([`Joins::return_scratch`]).
#[derive(Default)]
pub(crate) struct Joins(Option<Box<Lists>>);

impl Drop for Joins {
    #[inline]
    fn drop(&mut self) {
        super::drop_if_made(&mut self.0);
    }
}

#[derive(Default)]
struct Lists {
    states: Vec<JoinState>,
    waiting: Vec<Waiting>,
}

/// What an instance with no join reads.
static NONE: Lists = Lists {
    states: Vec::new(),
    waiting: Vec::new(),
};

thread_local! {
    /// The joins' box of this thread's last instance that ended in its first step,
    /// emptied, for the next first arrival (`Joins::return_scratch`).
    static SCRATCH: Cell<Option<Box<Lists>>> = const { Cell::new(None) };
}

impl Joins {
    fn lists(&self) -> &Lists {
        self.0.as_deref().unwrap_or(&NONE)
    }

    /// The lists, made on the first arrival: the thread's spare box if it has
    /// one (`Joins::return_scratch`), so an instance that asks for nothing pays
    /// nothing.
    fn lists_mut(&mut self) -> &mut Lists {
        self.0.get_or_insert_with(|| {
            SCRATCH
                .try_with(Cell::take)
                .ok()
                .flatten()
                .unwrap_or_default()
        })
    }

    /// The state of `node` in `scope`, made on its first arrival.
    #[inline]
    pub fn entry(&mut self, node: NodeIdx, scope: ScopeId, incoming: usize) -> usize {
        self.lists_mut().entry(node, scope, incoming)
    }

    pub fn get(&self, i: usize) -> &JoinState {
        &self.lists().states[i]
    }

    pub fn get_mut(&mut self, i: usize) -> &mut JoinState {
        &mut self.lists_mut().states[i]
    }

    pub fn len(&self) -> usize {
        self.lists().states.len()
    }

    /// A token arrives at join number `i` on incoming flow number `slot`.
    #[inline]
    pub fn arrive(&mut self, i: usize, slot: usize, arrival: Arrival) {
        self.lists_mut().arrive(i, slot, arrival)
    }

    /// Join number `i` fires: put into `taken` the earliest token of every marked
    /// flow. The first put is the survivor: the latest of them when `last_in`, else
    /// the earliest; the rest are merged. Later tokens on a flow wait for the next
    /// wave.
    pub fn fire(&mut self, i: usize, last_in: bool, taken: &mut Vec<Arrival>) {
        self.lists_mut().fire(i, last_in, taken)
    }

    /// Take every token waiting at join number `i` (the tail a spent complex join
    /// consumes), in arrival order.
    pub fn drain(&mut self, i: usize) -> Vec<Arrival> {
        self.lists_mut().drain(i)
    }

    /// Put back a join a checkpoint recorded: its waiting tokens (slot, track) in
    /// arrival order, and whether a complex join has fired. `None` for a slot the
    /// join does not have.
    #[cfg(feature = "durable")]
    pub fn restore(
        &mut self,
        node: NodeIdx,
        scope: ScopeId,
        incoming: usize,
        waiting: &[(usize, TrackId)],
        spent: bool,
    ) -> Option<()> {
        self.lists_mut()
            .restore(node, scope, incoming, waiting, spent)
    }

    #[cfg(feature = "durable")]
    pub fn iter(&self) -> impl Iterator<Item = &JoinState> {
        self.lists().states.iter()
    }

    /// The tokens waiting at `join`, in arrival order, each with its incoming flow's
    /// slot.
    #[cfg(feature = "durable")]
    pub fn waiting_at<'a>(
        &'a self,
        join: &'a JoinState,
    ) -> impl Iterator<Item = (usize, Arrival)> + 'a {
        self.lists()
            .waiting
            .iter()
            .filter(|w| join.holds(w))
            .map(|w| (w.slot as usize, Arrival { track: w.track }))
    }

    /// Forget the joins of a scope that closed or was cancelled.
    pub fn drop_scope(&mut self, scope: ScopeId) {
        if let Some(lists) = &mut self.0 {
            lists.states.retain(|j| j.scope != scope);
            lists.waiting.retain(|w| w.scope != scope);
        }
    }

    /// The joins where tokens wait.
    pub fn waiting(&self) -> impl Iterator<Item = NodeIdx> + '_ {
        let states = &self.lists().states;
        states.iter().filter(|j| !j.is_empty()).map(|j| j.node)
    }

    /// After an instance's first step on its caller (`Birth::inline_first_step`):
    /// one that `ended`, or whose joins hold nothing, gives its box back to the
    /// thread, emptied, for the next first join there; one whose joins hold state
    /// keeps it, its vectors cut to what they hold (a parked instance's memory).
    pub fn return_scratch(&mut self, ended: bool) {
        let Some(lists) = &mut self.0 else {
            return;
        };
        if ended || lists.states.is_empty() {
            lists.states.clear();
            lists.waiting.clear();
            let lists = self.0.take();
            let _ = SCRATCH.try_with(|cell| cell.set(lists));
        } else {
            lists.states.shrink_to_fit();
            lists.waiting.shrink_to_fit();
        }
    }
}

impl Lists {
    /// The state of `node` in `scope`, made on its first arrival. Inline, with the
    /// making out of line: every arrival asks, one in a join's width makes.
    #[inline]
    pub fn entry(&mut self, node: NodeIdx, scope: ScopeId, incoming: usize) -> usize {
        match self
            .states
            .iter()
            .position(|j| j.node == node && j.scope == scope)
        {
            Some(i) => i,
            None => self.make(node, scope, incoming),
        }
    }

    #[inline(never)]
    fn make(&mut self, node: NodeIdx, scope: ScopeId, incoming: usize) -> usize {
        self.states.push(JoinState::new(node, scope, incoming));
        self.states.len() - 1
    }

    /// [`Joins::arrive`].
    #[inline]
    pub fn arrive(&mut self, i: usize, slot: usize, arrival: Arrival) {
        let join = &mut self.states[i];
        if join.marked.insert(slot) {
            join.unmarked -= 1;
        }
        join.arrived_since_check = true;
        self.waiting.push(Waiting {
            node: join.node,
            scope: join.scope,
            slot: slot as u32,
            track: arrival.track,
        });
    }

    /// [`Joins::fire`].
    pub fn fire(&mut self, i: usize, last_in: bool, taken: &mut Vec<Arrival>) {
        let join = &mut self.states[i];
        let first = taken.len();
        let marked = join.incoming - join.unmarked;
        taken.reserve(marked);
        if self.waiting.len() == marked {
            // The join holds at least a token per marked flow: these are all the
            // waiting tokens, one per flow, and all are taken (the common case).
            taken.extend(self.waiting.drain(..).map(|w| Arrival { track: w.track }));
            join.marked.clear();
            join.unmarked = join.incoming;
        } else {
            Self::take_earliest(join, &mut self.waiting, taken);
        }
        join.arrived_since_check = false;
        // `taken` is in arrival order: the survivor is its last or its first.
        if last_in && taken.len() > first {
            let last = taken.len() - 1;
            taken.swap(first, last);
        }
    }

    /// Move the earliest waiting token of each of `join`'s marked flows into
    /// `taken`, in arrival order; later ones stay, their flows marked.
    fn take_earliest(join: &mut JoinState, waiting: &mut Vec<Waiting>, taken: &mut Vec<Arrival>) {
        let mut took = FlowSet::new(join.incoming);
        let mut still = FlowSet::new(join.incoming);
        waiting.retain(|w| {
            if !join.holds(w) {
                return true;
            }
            if took.insert(w.slot as usize) {
                taken.push(Arrival { track: w.track });
                return false;
            }
            still.insert(w.slot as usize);
            true
        });
        join.unmarked = join.incoming - still.len();
        join.marked = still;
    }

    /// [`Joins::drain`].
    pub fn drain(&mut self, i: usize) -> Vec<Arrival> {
        let join = &mut self.states[i];
        join.marked.clear();
        join.unmarked = join.incoming;
        let mut tail = Vec::new();
        self.waiting.retain(|w| {
            let held = join.holds(w);
            if held {
                tail.push(Arrival { track: w.track });
            }
            !held
        });
        tail
    }

    /// [`Joins::restore`].
    #[cfg(feature = "durable")]
    pub fn restore(
        &mut self,
        node: NodeIdx,
        scope: ScopeId,
        incoming: usize,
        waiting: &[(usize, TrackId)],
        spent: bool,
    ) -> Option<()> {
        if waiting.iter().any(|&(slot, _)| slot >= incoming) {
            return None;
        }
        let i = self.make(node, scope, incoming);
        for &(slot, track) in waiting {
            self.arrive(i, slot, Arrival { track });
        }
        let join = &mut self.states[i];
        join.arrived_since_check = false;
        join.spent = spent;
        Some(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::instance::state::ids::ROOT;

    fn arrive(joins: &mut Joins, i: usize, slot: usize, track: u32) {
        joins.arrive(
            i,
            slot,
            Arrival {
                track: TrackId(track),
            },
        );
    }

    fn fire(joins: &mut Joins, i: usize, last_in: bool) -> Vec<u32> {
        let mut taken = Vec::new();
        joins.fire(i, last_in, &mut taken);
        taken.iter().map(|a| a.track.0).collect()
    }

    #[test]
    fn fire_takes_one_per_marked_flow_and_picks_the_survivor() {
        let mut joins = Joins::default();
        let j = joins.entry(7, ROOT, 3);
        arrive(&mut joins, j, 0, 1);
        arrive(&mut joins, j, 0, 2);
        arrive(&mut joins, j, 2, 3);
        assert_eq!(joins.get(j).marked(), 0b101);
        assert!(!joins.get(j).complete());
        assert_eq!(fire(&mut joins, j, true), [3, 1]);
        assert_eq!(
            joins.get(j).marked(),
            0b001,
            "the second token on flow 0 waits for the next wave"
        );
        assert!(!joins.get(j).is_empty());
        let k = joins.entry(8, ROOT, 2);
        arrive(&mut joins, k, 1, 5);
        arrive(&mut joins, k, 0, 4);
        assert!(joins.get(k).complete());
        assert_eq!(fire(&mut joins, k, false), [5, 4]);
        assert!(joins.get(k).is_empty());
        assert_eq!(joins.waiting().collect::<Vec<_>>(), [7]);
    }

    #[test]
    fn a_flow_with_two_tokens_stays_marked_until_both_fired() {
        let mut joins = Joins::default();
        let j = joins.entry(7, ROOT, 2);
        arrive(&mut joins, j, 0, 1);
        arrive(&mut joins, j, 0, 2);
        assert!(!joins.get(j).complete(), "two tokens on one flow");
        arrive(&mut joins, j, 1, 3);
        assert!(joins.get(j).complete());
        assert_eq!(fire(&mut joins, j, true), [3, 1]);
        assert!(!joins.get(j).complete());
        arrive(&mut joins, j, 1, 4);
        assert!(joins.get(j).complete(), "the second wave");
        assert_eq!(fire(&mut joins, j, false), [2, 4]);
        assert!(joins.get(j).is_empty());
    }

    #[test]
    fn joins_keep_their_own_tokens_in_the_shared_vector() {
        let mut joins = Joins::default();
        let inner = ScopeId(1);
        let a = joins.entry(7, ROOT, 2);
        let b = joins.entry(7, inner, 2);
        assert_ne!(a, b, "a join per scope instance");
        arrive(&mut joins, a, 0, 1);
        arrive(&mut joins, b, 0, 2);
        arrive(&mut joins, b, 1, 3);
        assert_eq!(fire(&mut joins, b, true), [3, 2]);
        assert!(!joins.get(a).is_empty());
        let b = joins.entry(7, inner, 2);
        arrive(&mut joins, b, 1, 4);
        joins.drop_scope(inner);
        assert_eq!(joins.len(), 1);
        arrive(&mut joins, a, 1, 5);
        assert_eq!(fire(&mut joins, a, false), [1, 5]);
        assert_eq!(joins.waiting().count(), 0);
    }

    #[test]
    fn drain_takes_only_the_joins_tokens() {
        let mut joins = Joins::default();
        let a = joins.entry(7, ROOT, 2);
        let b = joins.entry(8, ROOT, 2);
        arrive(&mut joins, a, 0, 1);
        arrive(&mut joins, b, 0, 2);
        arrive(&mut joins, a, 0, 3);
        let tail: Vec<u32> = joins.drain(a).iter().map(|a| a.track.0).collect();
        assert_eq!(tail, [1, 3]);
        assert!(joins.get(a).is_empty());
        assert_eq!(joins.waiting().collect::<Vec<_>>(), [8]);
    }

    #[test]
    fn a_join_wider_than_64_flows_fires_the_same_way() {
        let mut joins = Joins::default();
        let j = joins.entry(7, ROOT, 70);
        arrive(&mut joins, j, 65, 1);
        arrive(&mut joins, j, 0, 2);
        arrive(&mut joins, j, 65, 3);
        for slot in (1..70).filter(|&s| s != 65) {
            arrive(&mut joins, j, slot, 10 + slot as u32);
        }
        assert!(joins.get(j).complete());
        let taken = fire(&mut joins, j, true);
        assert_eq!(taken.len(), 70);
        assert_eq!(taken[0], 79, "the last arrival survives");
        assert!(!taken.contains(&3));
        assert!(
            !joins.get(j).complete(),
            "the second token on flow 65 waits"
        );
        assert_eq!(fire(&mut joins, j, false), [3]);
        assert!(joins.get(j).is_empty());
    }

    #[test]
    fn a_join_of_more_than_64_flows_fires_one_per_flow_too() {
        let mut joins = Joins::default();
        let j = joins.entry(7, ROOT, 70);
        for slot in 0..70 {
            arrive(&mut joins, j, slot, slot as u32);
        }
        arrive(&mut joins, j, 69, 100);
        assert!(joins.get(j).complete());
        let taken = fire(&mut joins, j, false);
        assert_eq!(taken.len(), 70);
        assert_eq!(taken[0], 0);
        assert!(!joins.get(j).complete());
        assert_eq!(
            joins.drain(j),
            [Arrival {
                track: TrackId(100)
            }]
        );
    }
}
