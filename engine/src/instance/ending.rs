//! Where an instance's end is left for its handles: set once by the loop, read and
//! awaited by any number of handles. Lighter than a `watch` channel (a parked
//! instance carries one for its whole life): a once-cell and a `Notify`, in one
//! reference-counted block (`EndRef`). The end lives in the cell itself, read by
//! reference: publishing allocates nothing (a box or an `Arc` for it cost ~5 % of
//! `--bench core -- single`'s instructions).
//!
//! The cell is our own (`EndCell`), not a `OnceLock`: it has one writer, the
//! `Publisher`, so setting it is a write and a release store — no `Once` state
//! machine, whose two atomic read-modify-writes made a cell born set
//! (`EndRef::ended`, every instance whose work was ready) cost ~125 instructions
//! and ~4 % of `single`'s time.
//!
//! An instance that ended in its first step, on its caller, is kept whole in its
//! end's block: the end, then its steps, then its data (`End::Packed`) — one
//! allocation where a history buffer, a data box and the end's block were three.
//! A service holding many ended instances frees them in bursts, past glibc's
//! per-thread cache: three blocks of three sizes, two of them small enough for its
//! fast bins, were merged back one by one (`malloc_consolidate`), a quarter of
//! `single`'s time.

mod block;
mod held;

use std::cell::UnsafeCell;
use std::mem::MaybeUninit;
use std::ptr::NonNull;
use std::sync::atomic::{AtomicBool, Ordering};

use tokio::sync::Notify;

pub(crate) use block::EndRef;
pub(crate) use held::Held;

use super::history::{History, Step};
use super::outcome::{Ended, Finished, Outcome};
use crate::data::{Erased, ErasedRef, Placed};

/// How an instance's loop left it.
pub(crate) enum End {
    /// The loop published the instance's end (or it ended before any loop ran).
    Finished(Finished<Erased>),
    /// The instance ended in its first step: its steps and data follow the end in
    /// its block (`EndRef::packed`).
    Packed(Packed),
    /// The loop was dropped without publishing (e.g. by a runtime shutting down).
    Lost,
}

impl End {
    pub fn finished(&self) -> Option<FinishedRef<'_>> {
        match self {
            End::Finished(f) => Some(FinishedRef {
                ended: &f.ended,
                history: HistoryRef::Whole(&f.history),
                data: f.data.as_ref(),
                unsent: f.unsent.as_deref().map_or(&[], Vec::as_slice),
            }),
            End::Packed(p) => Some(FinishedRef {
                ended: &p.ended,
                history: HistoryRef::Steps(p.steps()),
                data: p.data.get(),
                unsent: p.unsent.as_deref().map_or(&[], Vec::as_slice),
            }),
            End::Lost => None,
        }
    }
}

/// An ended instance, as its handles read it.
pub(crate) struct FinishedRef<'a> {
    pub ended: &'a Ended,
    history: HistoryRef<'a>,
    /// The data at the end.
    pub data: ErasedRef<'a>,
    /// A resumed child's escalations for its call to raise (`Finished::unsent`).
    pub unsent: &'a [String],
}

enum HistoryRef<'a> {
    Whole(&'a History),
    Steps(&'a [Step]),
    Held(&'a Held),
}

impl<'a> FinishedRef<'a> {
    /// The outcome, with `copy` a copy of the data at the end.
    pub fn outcome<C>(&self, copy: impl FnOnce(ErasedRef<'a>) -> C) -> Outcome<C> {
        self.ended.outcome(|| copy(self.data))
    }

    /// A copy of the history.
    pub fn history(&self) -> History {
        match self.history {
            HistoryRef::Whole(history) => history.clone(),
            HistoryRef::Steps(steps) => History::of_steps(steps),
            HistoryRef::Held(held) => held.history(),
        }
    }
}

/// An end kept whole in its block: how it ended, and the steps and data that
/// follow it there. Owns those (drops them), not their memory (the block's).
pub(crate) struct Packed {
    ended: Ended,
    // As `Finished::unsent`: one pointer where a `Vec` is three.
    #[allow(clippy::box_collection)]
    unsent: Option<Box<Vec<String>>>,
    data: Placed,
    steps: NonNull<Step>,
    len: u32,
    /// Some step owns heap memory: only then are the steps dropped one by one
    /// (as `History` does).
    owns_heap: bool,
}

// SAFETY: a `Packed` owns its steps as a `Vec<Step>` would and its data as a
// `Placed` does; both are `Send + Sync`.
unsafe impl Send for Packed {}
unsafe impl Sync for Packed {}

impl Packed {
    fn steps(&self) -> &[Step] {
        // SAFETY: `len` steps were moved to `steps` (`EndRef::packed`), alive until
        // this is dropped.
        unsafe { std::slice::from_raw_parts(self.steps.as_ptr(), self.len as usize) }
    }
}

impl Drop for Packed {
    fn drop(&mut self) {
        // SAFETY: the data and the steps are owned by this end and dropped once,
        // here; the block's memory is freed after (`EndRef`'s drop).
        unsafe {
            self.data.drop_value();
            if self.owns_heap {
                std::ptr::drop_in_place(std::ptr::slice_from_raw_parts_mut(
                    self.steps.as_ptr(),
                    self.len as usize,
                ));
            }
        }
    }
}

/// The shared end of an instance.
pub(crate) struct Ending {
    end: EndCell,
    notify: Notify,
}

/// A cell set at most once, by its one writer (the `Publisher`), and read by any
/// number of handles once set.
struct EndCell {
    /// The end is written; released after the write, acquired before a read.
    set: AtomicBool,
    end: UnsafeCell<MaybeUninit<End>>,
}

// SAFETY: as `OnceLock<End>`: a shared cell hands out `&End` on any thread (so
// `End: Sync`) and its end may be written on one thread and dropped on another (so
// `End: Send`). The one write happens before any read (`set`'s release store,
// `get`'s acquire load) and never after one.
unsafe impl Sync for EndCell where End: Send + Sync {}
unsafe impl Send for EndCell where End: Send {}

impl EndCell {
    const fn unset() -> Self {
        Self {
            set: AtomicBool::new(false),
            end: UnsafeCell::new(MaybeUninit::uninit()),
        }
    }

    /// A cell born set: no atomic operation at all.
    const fn with(end: End) -> Self {
        Self {
            set: AtomicBool::new(true),
            end: UnsafeCell::new(MaybeUninit::new(end)),
        }
    }

    fn get(&self) -> Option<&End> {
        if self.set.load(Ordering::Acquire) {
            // SAFETY: `set` is true only after the end was written (release in
            // `set`, acquired here), and it is never written again.
            Some(unsafe { (*self.end.get()).assume_init_ref() })
        } else {
            None
        }
    }

    /// Write the end if it was not yet written.
    ///
    /// SAFETY: only the cell's one writer may call this (the `Publisher`, which is
    /// neither `Clone` nor shared): no other write can race this one, and no read
    /// sees the end before the release store below.
    unsafe fn set(&self, end: End) {
        if self.set.load(Ordering::Relaxed) {
            return;
        }
        // SAFETY: unset, so no reader holds a reference into the cell (`get`
        // returns none before `set` is true), and this is the only writer.
        unsafe { (*self.end.get()).write(end) };
        self.set.store(true, Ordering::Release);
    }
}

impl Drop for EndCell {
    fn drop(&mut self) {
        if *self.set.get_mut() {
            // SAFETY: set means written; `&mut self` means no reference remains.
            unsafe { self.end.get_mut().assume_init_drop() }
        }
    }
}

impl Ending {
    fn unset() -> Self {
        Ending {
            end: EndCell::unset(),
            notify: Notify::new(),
        }
    }

    fn with(end: End) -> Self {
        Ending {
            end: EndCell::with(end),
            notify: Notify::new(),
        }
    }

    /// The end, if the instance has ended.
    pub fn get(&self) -> Option<&End> {
        self.end.get()
    }

    /// Wait for the end.
    pub async fn wait(&self) -> &End {
        if let Some(end) = self.end.get() {
            return end;
        }
        loop {
            let notified = self.notify.notified();
            tokio::pin!(notified);
            // Registered before the look, so a publish between the two is not missed.
            notified.as_mut().enable();
            if let Some(end) = self.end.get() {
                return end;
            }
            notified.await;
        }
    }
}

/// The loop's end of an [`Ending`]. Dropped without publishing, it marks the loop
/// lost, so no handle waits for ever.
pub(crate) struct Publisher(EndRef);

impl Publisher {
    pub fn publish(&self, finished: Finished<Erased>) {
        self.set(End::Finished(finished));
    }

    fn set(&self, end: End) {
        // Only the first set counts: publishing then dropping leaves the outcome.
        // SAFETY: a publisher is its cell's one writer (made once per `Ending`, in
        // `EndRef::pending`; not `Clone`).
        unsafe { self.0.end.set(end) };
        self.0.notify.notify_waiters();
    }
}

impl Drop for Publisher {
    fn drop(&mut self) {
        if self.0.end.get().is_none() {
            self.set(End::Lost);
        }
    }
}

#[cfg(test)]
mod tests;
