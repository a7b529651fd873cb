//! What an instance has armed: each entry is a set of triggers and whose they are —
//! a track parked for its event, the boundary events of a working activity, or the
//! event sub-process starts of an open scope.
//!
//! An entry is recorded before any of its subscriptions exists (park before
//! register), and the first trigger that fires takes the whole entry out (flip on
//! dispatch): a later delivery for it finds nothing and is dropped. That makes an
//! event-based gateway's deferred choice atomic, whatever its triggers.

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
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
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
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
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

/// The armed entries, in arming order.
#[derive(Default)]
pub(crate) struct Armed {
    entries: Vec<ArmedEntry>,
}

impl Armed {
    /// Add an entry whose waits are armed next (into [`last_mut`](Self::last_mut)).
    pub fn push(&mut self, holder: Holder, at: NodeIdx, waits: usize) {
        // Most instances hold a few entries at a time: grow one entry at a time.
        self.entries.reserve_exact(1);
        self.entries.push(ArmedEntry {
            holder,
            at,
            waits: Vec::with_capacity(waits),
            choice: None,
        });
    }

    pub fn last_mut(&mut self) -> Option<&mut ArmedEntry> {
        self.entries.last_mut()
    }

    /// The entry and wait that `source` resolves.
    #[inline]
    pub fn find(&self, source: EventSource) -> Option<(usize, usize)> {
        self.entries.iter().enumerate().find_map(|(e, entry)| {
            entry
                .waits
                .iter()
                .position(|w| w.source == source)
                .map(|w| (e, w))
        })
    }

    /// Take `holder`'s entry out.
    #[inline]
    pub fn take(&mut self, holder: Holder) -> Option<ArmedEntry> {
        if self.entries.is_empty() {
            return None;
        }
        let e = self.entries.iter().position(|e| e.holder == holder)?;
        Some(self.entries.remove(e))
    }

    /// Take entry number `e` out, keeping the others in arming order.
    pub fn remove(&mut self, e: usize) -> ArmedEntry {
        self.entries.remove(e)
    }

    pub fn take_all(&mut self) -> Vec<ArmedEntry> {
        std::mem::take(&mut self.entries)
    }

    /// The message waits: (entry, wait, subscription, node).
    pub fn message_waits(&self) -> Vec<(usize, usize, SubId, NodeIdx)> {
        let mut found = Vec::new();
        for (e, entry) in self.entries.iter().enumerate() {
            for (w, wait) in entry.waits.iter().enumerate() {
                if let (EventSource::Hub(sub), Some(_)) = (wait.source, &wait.key) {
                    found.push((e, w, sub, wait.arm));
                }
            }
        }
        found
    }

    pub fn iter(&self) -> impl Iterator<Item = &ArmedEntry> {
        self.entries.iter()
    }

    pub fn entry(&self, e: usize) -> &ArmedEntry {
        &self.entries[e]
    }

    pub fn wait_mut(&mut self, e: usize, w: usize) -> &mut Wait {
        &mut self.entries[e].waits[w]
    }
}
