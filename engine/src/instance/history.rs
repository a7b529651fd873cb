//! The ordered record of what ran in an instance.
//!
//! The loop is the single writer, so the order it records is the order things took
//! effect: a task's `Completed` comes when the loop committed its data.

use std::borrow::Cow;
use std::fmt;

pub use super::state::ids::TrackId;

/// One thing that happened at a node.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Happening {
    /// The token left a start event: the process's (track 0), or an event
    /// sub-process's when its trigger came (a new track).
    Started,
    /// The track was created by a fork at this node, from track `from`.
    Spawned {
        /// The track that forked.
        from: TrackId,
    },
    /// A task's handler began on the track — or the token entered a sub-process,
    /// whose inner start then runs on a track spawned from this one.
    TaskStarted,
    /// A task's handler returned `Ok` and the loop committed its data — or a
    /// sub-process completed (nothing ran in it any more) and the token goes on.
    Completed {
        /// The fields the commit changed, in declaration order: borrowed from the
        /// data type's field list when they are neighbours in it, as a commit of one
        /// field's are (nothing allocated), owned otherwise.
        changed: Cow<'static, [&'static str]>,
    },
    /// A task's handler returned an error or panicked.
    Failed {
        /// What went wrong.
        message: String,
    },
    /// A task's attempt failed (an `Err`, a panic, a timeout) and its token waits
    /// here for the next one (module [`retry`](crate::retry)).
    AttemptFailed {
        /// The attempt that failed (from 1).
        attempt: u32,
        /// What went wrong.
        message: String,
    },
    /// An incident opened here: the token waits for a retry (module
    /// [`retry`](crate::retry)).
    Incident {
        /// What failed.
        error: String,
        /// The attempts made (0 at a gateway).
        attempts: u32,
    },
    /// The incident here was retried, after a change of the data (`changed`, as
    /// `Completed`'s; empty when retried as the data was).
    Retried {
        /// The fields the change committed.
        changed: Cow<'static, [&'static str]>,
    },
    /// A gateway passed the token on; `to` are the targets it took, in flow order.
    Routed {
        /// Target node ids of the flows taken: borrowed from the process when the
        /// gateway took one flow or all (nothing allocated), owned otherwise.
        to: Cow<'static, [&'static str]>,
    },
    /// The token arrived at a synchronising join and waits there.
    Waiting,
    /// The token waits for an event here (a catch event, a receive or user task, an
    /// event-based gateway); its track is parked on its channel.
    Parked,
    /// The awaited event came to a catch event (an event-based gateway's winning
    /// catch arm included; a receive task records `Completed`), with the fields the
    /// caught payload changed.
    Caught {
        /// The fields the commit changed, in declaration order (borrowed or owned, as
        /// `Completed`'s).
        changed: Cow<'static, [&'static str]>,
    },
    /// A boundary event stopped the activity here (an interrupting boundary fired);
    /// the token goes on from `by` on a new track.
    Interrupted {
        /// The boundary event.
        by: &'static str,
    },
    /// A BPMN error was thrown here (an error end event, or a task's handler).
    ErrorThrown {
        /// The error code.
        code: String,
    },
    /// An escalation was raised here (a throw or end event, or a task's handler).
    Escalated {
        /// The escalation code.
        code: String,
    },
    /// A throw event sent its signal (reaching `catchers`) or message.
    Thrown {
        /// For a signal, how many catchers it reached; for a message, 1 if a
        /// waiter got it, 0 if it was buffered or dropped; for a compensation throw
        /// or a cancel end, how many completions it compensates (sub-processes
        /// counted as one).
        catchers: usize,
    },
    /// The join fired; this track carries the merged token on.
    Fired,
    /// The token was absorbed by a join that fired on another track.
    Merged,
    /// The token reached a complex join after it fired and ended there (a tail
    /// token: a complex join is single-pass).
    Consumed,
    /// The track reached an end event.
    Ended,
    /// A terminate end event ended the instance.
    Terminated,
    /// The track was stopped by a cancel, a terminate, a failure or a shutdown.
    Cancelled,
    /// A call activity started its child instance `child` (after `TaskStarted`;
    /// the call then records `Completed` when the child's output is committed).
    Called {
        /// The child instance's id.
        child: super::state::ids::InstanceId,
    },
    /// The track is instance `index` of a multi-instance activity (from 0, the
    /// item's index), or run `index` of a loop (from 0: the runs before it); it was
    /// spawned from the token waiting at the activity.
    Instance {
        /// The instance's index, or the loop run's number.
        index: u32,
    },
}

/// A step not kept (recording is off): traced if `TRACE`, then dropped.
#[cold]
#[inline(never)]
fn forget_step<const TRACE: bool>(track: TrackId, node: &'static str, what: Happening) {
    if TRACE && tracing::level_enabled!(tracing::Level::TRACE) {
        trace_step(&Step { track, node, what });
    }
}

/// A step as a trace event (`History::record`).
#[cold]
#[inline(never)]
fn trace_step(step: &Step) {
    tracing::trace!(track = %step.track, node = step.node, what = ?step.what, "step");
}

impl Happening {
    /// Whether dropping it frees heap memory. Exhaustive on purpose: a new variant
    /// must say, or its memory would leak with a history that forgets its steps.
    #[inline]
    pub(crate) fn owns_heap(&self) -> bool {
        match self {
            Happening::Completed { changed }
            | Happening::Caught { changed }
            | Happening::Retried { changed } => {
                matches!(changed, Cow::Owned(changed) if changed.capacity() > 0)
            }
            Happening::Routed { to } => matches!(to, Cow::Owned(to) if to.capacity() > 0),
            Happening::Failed { message: text }
            | Happening::AttemptFailed { message: text, .. }
            | Happening::Incident { error: text, .. }
            | Happening::ErrorThrown { code: text }
            | Happening::Escalated { code: text } => text.capacity() > 0,
            Happening::Started
            | Happening::Spawned { .. }
            | Happening::TaskStarted
            | Happening::Waiting
            | Happening::Parked
            | Happening::Interrupted { .. }
            | Happening::Thrown { .. }
            | Happening::Fired
            | Happening::Merged
            | Happening::Consumed
            | Happening::Ended
            | Happening::Terminated
            | Happening::Cancelled
            | Happening::Called { .. }
            | Happening::Instance { .. } => false,
        }
    }
}

/// One entry of the history: on which track, at which node, what happened.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Step {
    /// The track.
    pub track: TrackId,
    /// The node's identifier.
    pub node: &'static str,
    /// What happened.
    pub what: Happening,
}

/// The ordered history of an instance. Empty when the engine records none
/// ([`EngineConfig::history`](crate::EngineConfig::history)).
#[derive(Debug, Default)]
pub struct History {
    steps: Vec<Step>,
    /// Recording is off: pushes are dropped.
    off: bool,
    /// Some step owns heap memory (a field list, a message, a code): only then are
    /// the steps dropped one by one. Most histories own none (an empty `changed`
    /// allocates nothing), and walking them to drop nothing would read every step
    /// again, from memory long out of the cache for a finished instance.
    owns_heap: bool,
    /// How many steps to make room for when the history first outgrows its start
    /// (about what a run through the process records), so a longer instance grows
    /// once or twice rather than doubling from two.
    first_growth: u32,
    /// The buffer is this thread's scratch buffer, lent (`lend_scratch`) until
    /// the steps are taken out of it (`return_scratch`, `move_steps_to`).
    scratch: bool,
}

/// A copy records as the original does; it holds no scratch buffer.
impl Clone for History {
    fn clone(&self) -> Self {
        Self {
            steps: self.steps.clone(),
            off: self.off,
            owns_heap: self.owns_heap,
            first_growth: self.first_growth,
            scratch: false,
        }
    }
}

/// Two histories are equal when they recorded the same steps (and both record).
impl PartialEq for History {
    fn eq(&self, other: &Self) -> bool {
        self.steps == other.steps && self.off == other.off
    }
}

impl Eq for History {}

impl Drop for History {
    fn drop(&mut self) {
        if !self.owns_heap {
            // None owns heap memory (`owns_heap` is set by `push` for any step that
            // does): forgetting them leaks nothing and saves a loop over them.
            crate::mem::vec::forget_elements(&mut self.steps);
        }
    }
}

/// Room a history makes when its first step comes ([`History::lazy`]).
const FIRST_ROOM: usize = 2;

/// Room a thread's scratch history is made with.
const SCRATCH_ROOM: usize = 64;

/// The most steps copied out of the scratch history; a longer history keeps it.
/// Low: past a few steps the copy (56 bytes a step, into memory not yet in the
/// cache) costs more than the next birth's new buffer, made at the kept length
/// (`SCRATCH_NEXT_ROOM`) so that it need not grow or be cut either.
const SCRATCH_COPY: usize = 16;

/// The most steps moved into the block of an instance that ended in its first step
/// (`EndRef::packed`), where a longer history keeps the scratch buffer. The block
/// saves the history's own allocation, worth the copy for a short history and not
/// for a long one (the figures are in the commit that set it).
const PACKED_MOST: usize = 64;

/// The most room a new scratch history is made with after a long first step.
const SCRATCH_MOST_ROOM: usize = 4096;

thread_local! {
    /// A thread's history buffer for an instance's first step taken by its caller
    /// (`History::lend_scratch`): the steps are copied out once, exactly, after it.
    static SCRATCH: std::cell::Cell<Vec<Step>> = const { std::cell::Cell::new(Vec::new()) };
    /// How many steps the last first step that kept its buffer recorded: the room the
    /// next new buffer is made with, so a run of long first steps (instances of one
    /// long process) each allocate theirs once, at its length, rather than growing
    /// it from [`SCRATCH_ROOM`] by doubling (two copies for a hundred-task chain).
    static SCRATCH_NEXT_ROOM: std::cell::Cell<usize> = const { std::cell::Cell::new(SCRATCH_ROOM) };
}

impl History {
    /// An empty history that makes room for two steps when the first comes (the
    /// start, then a wait or a task: what an instance parked at its first catch
    /// keeps), and for `first_growth` more when it outgrows them.
    pub(crate) fn lazy(first_growth: usize) -> Self {
        Self {
            steps: Vec::new(),
            off: false,
            owns_heap: false,
            first_growth: u32::try_from(first_growth).unwrap_or(u32::MAX).max(1),
            scratch: false,
        }
    }

    /// A copy of `steps`, recorded (an ended instance's kept in its end's block).
    pub(crate) fn of_steps(steps: &[Step]) -> Self {
        Self::from_steps(steps.to_vec())
    }

    /// `steps`, recorded.
    pub(crate) fn from_steps(steps: Vec<Step>) -> Self {
        Self {
            owns_heap: steps.iter().any(|step| step.what.owns_heap()),
            steps,
            ..Self::default()
        }
    }

    /// A history that records nothing.
    pub(crate) fn off() -> Self {
        Self {
            steps: Vec::new(),
            off: true,
            owns_heap: false,
            first_growth: 0,
            scratch: false,
        }
    }

    /// Append a step (inline: a node step records two, and the step is built in
    /// place; growing is out of line).
    #[inline]
    pub(crate) fn push(&mut self, track: TrackId, node: &'static str, what: Happening) {
        let owns_heap = what.owns_heap();
        self.put::<false>(track, node, what, owns_heap);
    }

    /// Append a step the loop took, as a trace event too (`Instance::record`);
    /// `owns_heap` is `what.owns_heap()`, which a caller that built the step knows.
    #[inline(always)]
    pub(crate) fn record(
        &mut self,
        track: TrackId,
        node: &'static str,
        what: Happening,
        owns_heap: bool,
    ) {
        self.put::<true>(track, node, what, owns_heap);
    }

    /// Append a step, as a trace event too if `TRACE`. The step is not read before
    /// it is written where it goes — not matched on, not lent to the trace (which
    /// reads it from the history) and not dropped here: each would keep it in
    /// memory, built on the stack by narrow stores and read back by wider loads
    /// than those, a store-forwarding stall.
    #[inline(always)]
    fn put<const TRACE: bool>(
        &mut self,
        track: TrackId,
        node: &'static str,
        what: Happening,
        owns_heap: bool,
    ) {
        if self.off {
            return forget_step::<TRACE>(track, node, what);
        }
        // Checked in release too: a wrong flag would leak what a step owns.
        let owns_heap = owns_heap || what.owns_heap();
        self.owns_heap |= owns_heap;
        if self.steps.len() == self.steps.capacity() {
            self.push_growing(Step { track, node, what });
        } else {
            self.steps.push(Step { track, node, what });
        }
        if TRACE && tracing::level_enabled!(tracing::Level::TRACE) {
            if let Some(step) = self.steps.last() {
                trace_step(step);
            }
        }
    }

    /// Append a step to a full history: the first growths make the room
    /// [`History::grow`] says, later ones double.
    #[cold]
    #[inline(never)]
    fn push_growing(&mut self, step: Step) {
        if self.first_growth > 0 {
            self.grow();
        }
        self.steps.push(step);
    }

    #[cold]
    fn grow(&mut self) {
        let room = match self.steps.capacity() {
            0 => FIRST_ROOM,
            _ => {
                let room = (self.first_growth as usize).max(self.steps.len());
                self.first_growth = 0;
                room
            }
        };
        self.steps.reserve_exact(room);
    }

    /// Record into this thread's scratch buffer until [`History::return_scratch`]
    /// (or [`History::move_steps_to`]): for an instance's first step on its
    /// caller, so that the history the step leaves is allocated once, at its
    /// length, not grown step by step. Nothing is lent when the history records
    /// nothing or has steps already.
    pub(crate) fn lend_scratch(&mut self) {
        if self.off || self.steps.capacity() > 0 {
            return;
        }
        self.steps = SCRATCH.try_with(std::cell::Cell::take).unwrap_or_default();
        if self.steps.capacity() == 0 {
            let room = SCRATCH_NEXT_ROOM.try_with(std::cell::Cell::get);
            self.steps.reserve_exact(room.unwrap_or(SCRATCH_ROOM));
        }
        self.scratch = true;
    }

    /// Whether the steps are few enough to be copied out of the scratch buffer
    /// (a longer history keeps it: `return_scratch`).
    fn is_short(&self) -> bool {
        self.steps.len() <= SCRATCH_COPY
    }

    /// Whether the steps are few enough to be moved into an ended instance's block
    /// ([`PACKED_MOST`]).
    pub(crate) fn fits_packed(&self) -> bool {
        self.steps.len() <= PACKED_MOST
    }

    /// Take the steps out of a lent scratch buffer: a short history is copied out
    /// at its length and the buffer given back; a longer one keeps the buffer,
    /// cut to its length (a copy would cost more than the next birth's new
    /// buffer). Nothing to do if none is lent.
    pub(crate) fn return_scratch(&mut self) {
        if !self.scratch {
            return;
        }
        if !self.is_short() {
            self.scratch = false;
            let _ = SCRATCH_NEXT_ROOM
                .try_with(|room| room.set(self.steps.len().min(SCRATCH_MOST_ROOM)));
            self.steps.shrink_to_fit();
            return;
        }
        let mut scratch = std::mem::take(&mut self.steps);
        self.steps = Vec::with_capacity(scratch.len());
        self.steps.append(&mut scratch);
        self.give_back(scratch);
    }

    /// Hand the steps to `take` (which moves them out: `EndRef::packed`), then
    /// give a lent scratch buffer back, empty.
    pub(crate) fn take_steps<R>(&mut self, take: impl FnOnce(&mut Vec<Step>) -> R) -> R {
        let taken = take(&mut self.steps);
        debug_assert!(self.steps.is_empty(), "the steps were moved out");
        self.owns_heap = false;
        if self.scratch {
            let scratch = std::mem::take(&mut self.steps);
            self.give_back(scratch);
        }
        taken
    }

    /// Give the scratch buffer back to this thread, empty.
    fn give_back(&mut self, scratch: Vec<Step>) {
        debug_assert!(scratch.is_empty());
        self.scratch = false;
        // A nested birth on this thread (a handler that started an instance) may have
        // given one back meanwhile: the larger stays.
        let _ = SCRATCH.try_with(|cell| {
            let other = cell.take();
            cell.set(if other.capacity() > scratch.capacity() {
                other
            } else {
                scratch
            });
        });
    }

    /// Every step, in the order the loop recorded it.
    pub fn steps(&self) -> &[Step] {
        &self.steps
    }

    /// Tasks that completed, in completion order (a task that ran twice is listed
    /// twice).
    pub fn completed_tasks(&self) -> Vec<&'static str> {
        self.nodes_where(|h| matches!(h, Happening::Completed { .. }))
    }

    /// End events reached (none and terminate), in order.
    pub fn ended_at(&self) -> Vec<&'static str> {
        self.nodes_where(|h| matches!(h, Happening::Ended | Happening::Terminated))
    }

    /// How many times a step at `node` matched `what`.
    pub fn count(&self, node: &str, what: impl Fn(&Happening) -> bool) -> usize {
        self.steps
            .iter()
            .filter(|s| s.node == node && what(&s.what))
            .count()
    }

    /// How many times the join `node` fired.
    pub fn fired(&self, node: &str) -> usize {
        self.count(node, |h| matches!(h, Happening::Fired))
    }

    /// Distinct tracks that appear in the history.
    pub fn tracks(&self) -> usize {
        let mut ids: Vec<TrackId> = self.steps.iter().map(|s| s.track).collect();
        ids.sort_unstable();
        ids.dedup();
        ids.len()
    }

    fn nodes_where(&self, pick: impl Fn(&Happening) -> bool) -> Vec<&'static str> {
        self.steps
            .iter()
            .filter(|s| pick(&s.what))
            .map(|s| s.node)
            .collect()
    }
}

impl fmt::Display for History {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for s in &self.steps {
            writeln!(f, "{:>4}  {:<20} {:?}", s.track, s.node, s.what)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests;
