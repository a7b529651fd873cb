//! The running loops and multi-instance activities of an instance: per activation,
//! its scope, its items and the state of each instance; per instance track, which
//! activation and index it is. ARCHITECTURE.md, "Loops and multi-instance".
//!
//! An activation is a scope instance owned by the activity's token (which waits at
//! the activity, holding its boundary events, as at a sub-process); each instance
//! (or loop run) is a track in that scope at the activity itself. Both lookups — by
//! scope and by track — are hash maps, so 10 000 instances cost no scan.

use std::any::Any;
use std::collections::HashMap;

use tokio::sync::oneshot;

use crate::graph::NodeIdx;
use crate::instance::state::ids::{ScopeId, TrackId};
use crate::loops::{Counts, Items};
use crate::mem::cell::Base;

/// Where one instance of a multi-instance activation is.
pub(crate) enum Slot {
    /// Not started yet (a sequential activation's later items).
    Pending,
    /// Running on a track; its output comes on `output` (tasks with one), or is
    /// `ready` already (a sub-process instance whose output task completed).
    Running {
        track: TrackId,
        output: Option<oneshot::Receiver<Box<dyn Any + Send>>>,
        ready: Option<Box<dyn Any + Send>>,
    },
    /// Completed; its output waits for the instances before it (index order).
    Completed(Option<Box<dyn Any + Send>>),
    /// Completed and merged, or cancelled: nothing left to do for it.
    Settled,
}

/// One activation of a multi-instance activity.
pub(crate) struct MultiRun<D> {
    pub items: Items,
    /// The data the items were computed from (a checkpoint stores it; a restore
    /// computes the same items again).
    #[cfg_attr(not(feature = "durable"), allow(dead_code))]
    pub source: Base<D>,
    pub slots: Vec<Slot>,
    pub counts: Counts,
    /// Outputs of instances `0..merged` are merged (or were cancelled).
    pub merged: usize,
    /// The next index a sequential activation starts.
    pub next: usize,
    /// The completion condition held: nothing more starts.
    pub done: bool,
}

/// One activation of a standard loop.
pub(crate) struct LoopRun {
    /// Runs completed so far (the loop counter).
    pub runs: u32,
    /// The track of the run in progress.
    pub current: Option<TrackId>,
}

pub(crate) enum Activation<D> {
    Multi(MultiRun<D>),
    Loop(LoopRun),
}

/// A running activation: the activity, its token, and its state.
pub(crate) struct Running<D> {
    pub node: NodeIdx,
    pub owner: TrackId,
    pub state: Activation<D>,
}

/// Every running activation, by scope; every instance track, by track. Boxed on
/// first use: most instances run no marked activity, and the loop's future (a
/// parked instance's memory) carries this field whole.
pub(crate) struct Loops<D> {
    running: Option<Box<Activations<D>>>,
}

impl<D> Drop for Loops<D> {
    #[inline]
    fn drop(&mut self) {
        super::drop_if_made(&mut self.running);
    }
}

struct Activations<D> {
    by_scope: HashMap<ScopeId, Running<D>>,
    /// An instance track: its activation's scope and its index (for a loop, the
    /// run's number from 0).
    by_track: HashMap<TrackId, (ScopeId, u32)>,
    /// Instance tracks created in this step, to start once the step's moves are
    /// done (so a sequential activation of always-ready runs does not recurse).
    to_start: Vec<TrackId>,
}

impl<D> Default for Loops<D> {
    fn default() -> Self {
        Self { running: None }
    }
}

impl<D> Loops<D> {
    fn inner(&mut self) -> &mut Activations<D> {
        self.running.get_or_insert_with(|| {
            Box::new(Activations {
                by_scope: HashMap::new(),
                by_track: HashMap::new(),
                to_start: Vec::new(),
            })
        })
    }

    pub fn open(&mut self, scope: ScopeId, running: Running<D>) {
        self.inner().by_scope.insert(scope, running);
    }

    pub fn get(&self, scope: ScopeId) -> Option<&Running<D>> {
        self.running.as_ref()?.by_scope.get(&scope)
    }

    pub fn get_mut(&mut self, scope: ScopeId) -> Option<&mut Running<D>> {
        self.running.as_mut()?.by_scope.get_mut(&scope)
    }

    /// The activation of a scope that closes, with its instance tracks forgotten.
    pub fn close(&mut self, scope: ScopeId) -> Option<Running<D>> {
        let inner = self.running.as_mut()?;
        let running = inner.by_scope.remove(&scope)?;
        match &running.state {
            Activation::Multi(m) => {
                for slot in &m.slots {
                    if let Slot::Running { track, .. } = slot {
                        inner.by_track.remove(track);
                    }
                }
            }
            Activation::Loop(l) => {
                if let Some(track) = l.current {
                    inner.by_track.remove(&track);
                }
            }
        }
        Some(running)
    }

    /// `track` is instance `index` of the activation in `scope`.
    pub fn bind(&mut self, track: TrackId, scope: ScopeId, index: u32) {
        self.inner().by_track.insert(track, (scope, index));
    }

    /// The activation and index of an instance track.
    #[inline]
    pub fn instance(&self, track: TrackId) -> Option<(ScopeId, u32)> {
        let inner = self.running.as_ref()?;
        if inner.by_track.is_empty() {
            return None;
        }
        inner.by_track.get(&track).copied()
    }

    pub fn unbind(&mut self, track: TrackId) -> Option<(ScopeId, u32)> {
        self.running.as_mut()?.by_track.remove(&track)
    }

    pub fn is_empty(&self) -> bool {
        self.running.as_ref().is_none_or(|r| r.by_scope.is_empty())
    }

    /// An instance track to start once the step's moves are done.
    pub fn start_later(&mut self, track: TrackId) {
        self.inner().to_start.push(track);
    }

    /// The instance tracks to start now (see [`start_later`](Self::start_later)).
    pub fn take_to_start(&mut self) -> Vec<TrackId> {
        match &mut self.running {
            Some(inner) => std::mem::take(&mut inner.to_start),
            None => Vec::new(),
        }
    }

    /// Every running activation (for a checkpoint).
    #[cfg(feature = "durable")]
    pub fn iter(&self) -> impl Iterator<Item = (&ScopeId, &Running<D>)> {
        self.running.iter().flat_map(|r| r.by_scope.iter())
    }
}
