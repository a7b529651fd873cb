//! The instance: the one struct its loop owns, made of the state types
//! (`state::*`, each keeping its own invariant), the committed data
//! (`mem::cell::DataCell`), the history and the links out (intake, hub, engine,
//! parent, children). The loop's rules (the sibling modules) are `impl` blocks on
//! it; only the loop touches it (ARCHITECTURE.md, "The instance loop").

use std::sync::Arc;

use tokio::task::JoinSet;

use super::call_link::ParentLink;
use super::commit::Committed;
use super::history::{Happening, History};
use super::input::Input;
use super::outcome::{Ended, InstanceId};
use super::state::armed::Armed;
use super::state::compensation::Compensation;
use super::state::conditions::Conditions;
use super::state::ids::{self, TrackId};
use super::state::joins::Joins;
use super::state::retries::Retries;
use super::state::scopes::Scopes;
use super::state::timers::Timers;
use super::state::tracks::Tracks;
use super::state::{drop_if_made, loops};
use crate::data::ProcessData;
use crate::events::{Hub, Mailbox};
use crate::graph::{FlowIdx, Graph, NodeIdx};
use crate::mem::intake::Intake;

/// A working call activity's child: the call's track and node, the child's id and
/// handle.
pub(crate) struct Call {
    pub track: TrackId,
    pub node: NodeIdx,
    pub child: InstanceId,
    pub handle: Option<super::call_link::ChildHandle>,
}

/// The children of an instance's working call activities. Boxed on first call:
/// most instances call nothing, and the loop's future (a parked instance's memory)
/// carries this field whole.
#[derive(Default)]
// The box keeps the field at 8 bytes, not a `Vec`'s 24, for an instance that calls nothing.
#[allow(clippy::box_collection)]
pub(crate) struct Calls(Option<Box<Vec<Call>>>);

impl Calls {
    /// Add a call as it was recorded (a restore).
    #[cfg(feature = "durable")]
    pub fn push(&mut self, call: Call) {
        self.0.get_or_insert_with(Box::default).push(call);
    }

    pub fn iter(&self) -> std::slice::Iter<'_, Call> {
        self.0.as_deref().map_or(&[][..], |v| &v[..]).iter()
    }

    #[cfg(feature = "durable")]
    pub fn iter_mut(&mut self) -> std::slice::IterMut<'_, Call> {
        match &mut self.0 {
            Some(calls) => calls.iter_mut(),
            None => [].iter_mut(),
        }
    }

    /// Add a call. The list is read as each track's last call whose track still
    /// `works` at it (`Instance::live_calls`); the others are dropped only when the
    /// list is full, which then keeps at least as much room again as it holds — so
    /// starting n calls (a parallel multi-instance call of 10 000) costs O(n).
    pub fn push_pruned(&mut self, call: Call, works: impl Fn(&Call) -> bool) {
        let calls = self.0.get_or_insert_with(Box::default);
        if calls.len() == calls.capacity() {
            let mut seen = std::collections::HashSet::new();
            let mut live: Vec<Call> = std::mem::take(&mut **calls)
                .into_iter()
                .rev()
                .filter(|c| seen.insert(c.track) && works(c))
                .collect();
            live.reverse();
            live.reserve(live.len() + 1);
            **calls = live;
        }
        calls.push(call);
    }

    /// Take every call out.
    #[cfg(feature = "durable")]
    pub fn take_all(&mut self) -> Vec<Call> {
        self.0.take().map(|calls| *calls).unwrap_or_default()
    }
}

/// The tracks' tasks, in a `JoinSet` made when the first track needs a task: an
/// instance whose work is all ready (one that ends in `Engine::start`) makes none.
#[derive(Default)]
pub(crate) struct Workers(Option<JoinSet<()>>);

impl Drop for Workers {
    #[inline]
    fn drop(&mut self) {
        drop_if_made(&mut self.0);
    }
}

impl Workers {
    /// Spawn a track's task on the current runtime.
    pub fn spawn(
        &mut self,
        task: impl std::future::Future<Output = ()> + Send + 'static,
    ) -> tokio::task::AbortHandle {
        self.0.get_or_insert_with(JoinSet::new).spawn(task)
    }

    pub fn is_empty(&self) -> bool {
        self.0.as_ref().is_none_or(JoinSet::is_empty)
    }

    /// Reap a task that ended, if any.
    pub fn try_join_next(&mut self) -> Option<()> {
        self.0.as_mut()?.try_join_next().map(|_| ())
    }

    pub fn abort_all(&mut self) {
        if let Some(set) = &mut self.0 {
            set.abort_all();
        }
    }

    /// Abort every task and wait until they all stopped.
    pub async fn shutdown(&mut self) {
        if let Some(set) = &mut self.0 {
            set.shutdown().await;
        }
    }
}

/// A token to move: on the track, across the flow.
pub(crate) type Move = (TrackId, FlowIdx);

/// How many task runs the loop starts inline per input before it hands ready work
/// to tracks anyway, so a process that loops through always-ready handlers still
/// lets the loop hear a cancel.
pub(crate) const INLINE_BUDGET: u32 = 128;

/// The state of one instance, owned by its loop.
pub(crate) struct Instance<D: ProcessData> {
    /// When its loop began here (feature `metrics`: its duration).
    #[cfg(feature = "metrics")]
    pub(super) born: std::time::Instant,
    pub(super) id: InstanceId,
    pub(super) process: &'static Graph<D>,
    /// The committed process data and its spare copy; a task works on its own copy
    /// of a snapshot (`commit::Committed`).
    pub(super) data: Committed<D>,
    pub(super) tracks: Tracks<D>,
    pub(super) joins: Joins,
    pub(super) scopes: Scopes,
    /// Running loop and multi-instance activations (`loops.rs`).
    pub(super) loops: loops::Loops<D>,
    /// Parked tracks' triggers, working activities' boundary events, open scopes'
    /// event sub-process starts.
    pub(super) armed: Armed,
    pub(super) timers: Timers,
    /// Tokens held where they failed: for a backoff, or at an open incident.
    pub(super) retries: Retries,
    /// Open user tasks as the task list shows them.
    pub(super) user_tasks: super::state::user_tasks::UserTasks,
    pub(super) conditions: Conditions<D>,
    /// Completed activities that can be compensated, per scope, and the
    /// compensations under way.
    pub(super) compensation: Compensation<D>,
    pub(super) history: History,
    /// How the instance ended, once it has: a marker, the outcome with its data
    /// built at close (`Ended`). Small: the loop's future (a parked instance's
    /// memory) carries the field from start to end.
    pub(super) outcome: Option<Ended>,

    /// The loop's own intake; cloned for every track task and handle. Its queue is
    /// made on first need (`Intake::made`): an instance that ends in its first step
    /// with no one to send to it makes none.
    pub(super) intake_tx: Intake<Input<D>>,
    /// The tracks' tasks; dropping or shutting it down stops them all.
    pub(super) workers: Workers,
    /// The engine's event hub, and this instance's mailbox there (made on first need).
    pub(super) hub: std::sync::Arc<Hub>,
    pub(super) mailbox: Option<Arc<dyn Mailbox>>,

    /// Task runs the loop may still start inline while handling the current input.
    pub(super) inline_budget: u32,
    /// The engine the instance runs in, for call activities' children; `None` only
    /// for an instance that is not running (ended at birth).
    pub(super) engine: Option<super::engine_link::EngineRef>,
    /// The calling instance, when this one is a call activity's child.
    pub(super) parent: Option<Box<ParentLink>>,
    /// The children of this instance's working call activities (pruned as calls end).
    pub(super) calls: Calls,
    /// Whether it has an entry in the engine's listing (`listing.rs`): from a
    /// keyed start or its first rest.
    pub(super) listed: bool,
    /// Whether it counts in the `thresh_instances_parked` gauge (every token waits).
    #[cfg(feature = "metrics")]
    pub(super) parked: bool,
    /// Where a durable instance checkpoints; `None` in memory.
    #[cfg(feature = "durable")]
    pub(super) durable: Option<Box<crate::instance::durable::Durable<D>>>,
    /// Task handlers a test replaced for this instance's engine (feature `testing`);
    /// `None` when there are none, so a task's run costs one check.
    #[cfg(feature = "testing")]
    pub(super) overrides: Option<Arc<crate::testing::HandlerTable<D>>>,
}

impl<D: ProcessData> Instance<D> {
    pub fn new(
        id: InstanceId,
        process: &'static Graph<D>,
        data: D,
        history: bool,
        intake_tx: Intake<Input<D>>,
        hub: std::sync::Arc<Hub>,
    ) -> Self {
        Self {
            #[cfg(feature = "metrics")]
            born: std::time::Instant::now(),
            id,
            process,
            data: Committed::new(data),
            // Room for the first track; the history makes room for the first two
            // steps (start, then a wait or a task) at its first: what an instance
            // parked at its first catch keeps. A history that outgrows that makes room
            // for two steps per node (8 to 64): fewer regrowths for a short run, little
            // idle room for an instance that waits deeper in (ARCHITECTURE.md, "Hot path and memory":
            // the history's first growth). A first step taken by `Engine::start`
            // records into the thread's scratch history and keeps its steps exactly
            // (`History::lend_scratch`), on the thread's track slots
            // (`Tracks::lend_scratch`); other births make room for one track.
            tracks: Tracks::with_capacity(0),
            joins: Joins::default(),
            scopes: Scopes::default(),
            loops: loops::Loops::default(),
            armed: Armed::default(),
            timers: Timers::default(),
            retries: Retries::default(),
            user_tasks: Default::default(),
            conditions: Conditions::default(),
            compensation: Compensation::default(),
            history: if history {
                History::lazy((2 * process.nodes.len()).clamp(8, 64))
            } else {
                History::off()
            },
            outcome: None,
            intake_tx,
            workers: Workers::default(),
            hub,
            mailbox: None,
            inline_budget: INLINE_BUDGET,
            engine: None,
            parent: None,
            calls: Calls::default(),
            listed: false,
            #[cfg(feature = "metrics")]
            parked: false,
            #[cfg(feature = "durable")]
            durable: None,
            #[cfg(feature = "testing")]
            overrides: None,
        }
    }

    /// A new track at `at` in `scope`.
    pub fn new_track(&mut self, at: NodeIdx, scope: ids::ScopeId) -> TrackId {
        self.tracks.add(at, scope)
    }

    /// The scope `track` runs in; the process's for a track that is gone.
    #[inline]
    pub fn scope_of(&self, track: TrackId) -> ids::ScopeId {
        self.tracks.get(track).map_or(ids::ROOT, |t| t.scope)
    }

    /// Append to the history; every step is also a trace event carrying the node id
    /// (out of line, so that a step recorded with tracing off costs a level check).
    /// Inline: called out of line, it read the step its caller had just built on
    /// the stack in wider loads than the stores that built it, which the store
    /// buffer cannot serve (half of `record`'s time in `parallel10`, perf; a join's
    /// `Waiting`, `Merged` and `Fired` are a tag byte read back in 32).
    #[inline(always)]
    pub fn record(&mut self, track: TrackId, node: NodeIdx, what: Happening) {
        self.record_inline(track, node, what);
    }

    /// [`Instance::record`], inlined: for the two steps every task records (its
    /// start and its completion).
    #[inline(always)]
    pub fn record_inline(&mut self, track: TrackId, node: NodeIdx, what: Happening) {
        self.record_id(track, self.process.nodes[node].id, what);
    }

    /// [`Instance::record_inline`] at the node whose id the caller has at hand.
    #[inline(always)]
    pub fn record_id(&mut self, track: TrackId, node: &'static str, what: Happening) {
        let owns_heap = what.owns_heap();
        self.history.record(track, node, what, owns_heap);
    }

    /// [`Instance::record_id`] of a step whose caller knows whether it owns heap
    /// memory (`History::record`).
    #[inline(always)]
    pub fn record_known(
        &mut self,
        track: TrackId,
        node: &'static str,
        what: Happening,
        owns_heap: bool,
    ) {
        self.history.record(track, node, what, owns_heap);
    }
}
