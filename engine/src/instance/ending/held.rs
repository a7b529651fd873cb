//! An end held in its handle: an instance that ended in its first step, on its
//! caller, with a short plain history and small data, is kept whole in the handle
//! `Engine::start` returns — no block, no allocation at all.
//!
//! Its block (`EndRef::packed`) was the one allocation such an instance made, and
//! a service that starts many and reads them later frees them in a burst, past
//! glibc's per-thread cache: its arena's lock and its chunk headers, read from
//! memory long out of the cache, were a fifth of `--bench core -- single`'s time.
//! A handle held in the caller's own collection is read in the order it was
//! written, which the hardware prefetches.
//!
//! The steps are held compact (a node's index, a track, what happened, the fields
//! a commit changed as bits) and written out as [`Step`]s when the history is
//! read. Only steps that say nothing more fit; any other end is kept in a block.

use super::{FinishedRef, HistoryRef};
use crate::data::{Erased, ErasedRef, HeldData};
use crate::graph::Graph;
use crate::instance::history::{Happening, History, Step, TrackId};
use crate::instance::outcome::{Ended, Finished};

/// The most steps held: a start, two tasks and an end.
const STEPS: usize = 6;

/// The most nodes of a process whose ends are held: a held step names its node
/// by index, found by a scan of the process's nodes (longer than the allocation
/// it saves past this).
const MOST_NODES: usize = 64;

/// The most fields of a data type whose commits a held step names (bits of a
/// `u32`).
const MOST_FIELDS: usize = 32;

/// An ended instance, held whole.
#[derive(Clone)]
pub(crate) struct Held {
    /// Whose nodes the steps name.
    process: &'static Graph<Erased>,
    steps: [HeldStep; STEPS],
    len: u8,
    ended: HeldEnded,
    data: HeldData,
}

/// A [`Step`] whose happening carries nothing but, for a commit, the fields it
/// changed.
#[derive(Clone, Copy)]
struct HeldStep {
    /// Bit `i`: field `i` of the data changed (`What::Completed`).
    changed: u32,
    node: u16,
    track: u8,
    what: What,
}

/// The happenings a held step can say.
#[derive(Clone, Copy)]
enum What {
    Started,
    TaskStarted,
    Completed,
    Ended,
    Terminated,
}

/// How a held instance ended: the endings with nothing to carry.
#[derive(Clone, Copy)]
enum HeldEnded {
    Completed,
    Terminated,
    Cancelled,
}

/// The same `Ended`s, to lend (`FinishedRef::ended`).
static COMPLETED: Ended = Ended::Completed;
static TERMINATED: Ended = Ended::Terminated;
static CANCELLED: Ended = Ended::Cancelled;

impl HeldStep {
    const NONE: HeldStep = HeldStep {
        changed: 0,
        node: 0,
        track: 0,
        what: What::Started,
    };

    /// `step` held, if it says nothing a held step cannot. Inlined: called for
    /// each step in a loop, its call was a tenth of holding an end.
    #[inline(always)]
    fn of(process: &Graph<Erased>, data: ErasedRef<'_>, step: &Step) -> Option<Self> {
        let (what, changed) = match &step.what {
            Happening::Started => (What::Started, 0),
            Happening::TaskStarted => (What::TaskStarted, 0),
            Happening::Completed { changed } if changed.is_empty() => (What::Completed, 0),
            Happening::Completed { changed } => (What::Completed, bits(data.fields(), changed)?),
            Happening::Ended => (What::Ended, 0),
            Happening::Terminated => (What::Terminated, 0),
            _ => return None,
        };
        let node = process
            .nodes
            .iter()
            .position(|node| std::ptr::eq(node.id, step.node))?;
        Some(HeldStep {
            changed,
            node: u16::try_from(node).ok()?,
            track: u8::try_from(step.track.0).ok()?,
            what,
        })
    }

    /// The step, written out.
    fn step(self, process: &Graph<Erased>, fields: &[&'static str]) -> Step {
        let what = match self.what {
            What::Started => Happening::Started,
            What::TaskStarted => Happening::TaskStarted,
            What::Completed => Happening::Completed {
                changed: (0..MOST_FIELDS.min(fields.len()))
                    .filter(|at| self.changed & (1 << at) != 0)
                    .map(|at| fields[at])
                    .collect(),
            },
            What::Ended => Happening::Ended,
            What::Terminated => Happening::Terminated,
        };
        Step {
            track: TrackId(u32::from(self.track)),
            node: process.nodes[usize::from(self.node)].id,
            what,
        }
    }
}

/// `changed` (field names, in declaration order) as bits of their indices in
/// `fields`, if every one is among the first [`MOST_FIELDS`].
#[inline(never)]
fn bits(fields: &[&'static str], changed: &[&'static str]) -> Option<u32> {
    let mut bits = 0u32;
    for name in changed {
        let at = fields.iter().position(|field| field == name)?;
        if at >= MOST_FIELDS {
            return None;
        }
        bits |= 1 << at;
    }
    Some(bits)
}

impl Held {
    /// `finished` held, or given back as it was when it does not fit: its history
    /// short and plain, its data small, nothing left to raise, and not failed
    /// (a failure's error is boxed: the block keeps it).
    #[inline(always)]
    pub fn hold(
        process: &'static Graph<Erased>,
        finished: Finished<Erased>,
    ) -> Result<Self, Finished<Erased>> {
        let ended = match finished.ended {
            Ended::Completed => HeldEnded::Completed,
            Ended::Terminated => HeldEnded::Terminated,
            Ended::Cancelled => HeldEnded::Cancelled,
            Ended::Failed(_) => return Err(finished),
        };
        let history = finished.history.steps();
        if history.len() > STEPS
            || process.nodes.len() > MOST_NODES
            || finished.unsent.is_some()
            || !HeldData::would_hold(&finished.data)
        {
            return Err(finished);
        }
        let data = finished.data.as_ref();
        let mut steps = [HeldStep::NONE; STEPS];
        for (held, step) in steps.iter_mut().zip(history) {
            match HeldStep::of(process, data, step) {
                Some(step) => *held = step,
                None => return Err(finished),
            }
        }
        let len = history.len() as u8;
        let Finished {
            ended: plain,
            mut history,
            data,
            unsent,
        } = finished;
        history.clear();
        // Neither owns anything (not failed, nothing to raise): their drop glue,
        // two calls, is not needed.
        std::mem::forget((plain, unsent));
        let Ok(data) = HeldData::hold(data) else {
            unreachable!("the data fits (`would_hold`)")
        };
        Ok(Held {
            process,
            steps,
            len,
            ended,
            data,
        })
    }

    /// The end, as a handle reads it.
    pub fn finished(&self) -> FinishedRef<'_> {
        FinishedRef {
            ended: match self.ended {
                HeldEnded::Completed => &COMPLETED,
                HeldEnded::Terminated => &TERMINATED,
                HeldEnded::Cancelled => &CANCELLED,
            },
            history: HistoryRef::Held(self),
            data: self.data.get(),
            unsent: &[],
        }
    }

    /// The history, written out.
    pub fn history(&self) -> History {
        let fields = self.data.get().fields();
        History::from_steps(
            self.steps[..usize::from(self.len)]
                .iter()
                .map(|held| held.step(self.process, fields))
                .collect(),
        )
    }
}
