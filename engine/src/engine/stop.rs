//! The engine's stop: a flag every start reads, the token every instance loop
//! watches, and the admissions a shutdown waits out.
//!
//! Starts touch nothing here that another worker writes: `CancellationToken`'s
//! `is_cancelled`, clone and drop take the token's mutex, and a `TaskTracker` token
//! adds to one shared count and clones an `Arc`; with instances started on every
//! worker those were where the workers met: each start moved their cache lines from
//! one core to the other. So a start reads a flag only shutdown writes and counts
//! itself in its thread's own slot, and the token is cloned only for an instance that
//! gets a loop, which must wake on it.

use std::cell::Cell;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

/// Slots of the admission count: threads share one only when there are more of them.
const SLOTS: usize = 16;

/// Begun once, by `Engine::shutdown`.
///
/// The flag and the slots are read and written `SeqCst`: a start counts itself then
/// reads the flag, a shutdown sets the flag then reads the counts, so one of them sees
/// the other — the start is refused, or the shutdown waits for it.
pub(crate) struct Stop {
    stopping: AtomicBool,
    token: CancellationToken,
    admitting: [Slot; SLOTS],
    /// Told when the last admission under way ends after the stop began.
    drained: Notify,
}

/// One thread's count of admissions under way.
type Slot = OwnLine<AtomicUsize>;

/// A value on a cache line of its own (two, as adjacent lines are fetched in pairs):
/// one core writing it does not evict what the others read beside it.
#[repr(align(128))]
#[derive(Default)]
pub(crate) struct OwnLine<T>(pub T);

impl<T> std::ops::Deref for OwnLine<T> {
    type Target = T;

    fn deref(&self) -> &T {
        &self.0
    }
}

/// An instance being admitted: until it is dropped — once the instance has ended or
/// is in the engine's `loops` — a shutdown waits for it.
#[must_use]
pub(crate) struct Admission<'a> {
    slot: &'a Slot,
    stop: &'a Stop,
}

impl Stop {
    pub(crate) fn new() -> Self {
        Self {
            stopping: AtomicBool::new(false),
            token: CancellationToken::new(),
            admitting: Default::default(),
            drained: Notify::new(),
        }
    }

    /// Admit an instance, or refuse it (`None`) once the stop has begun.
    pub(crate) fn admit(&self) -> Option<Admission<'_>> {
        let slot = &self.admitting[this_threads_slot()];
        slot.fetch_add(1, Ordering::SeqCst);
        let admission = Admission { slot, stop: self };
        // Dropped when refused: a shutdown waiting already is told.
        (!self.is_stopping()).then_some(admission)
    }

    /// Begin the stop: the flag first (no admission after it), then the token's
    /// waiters.
    pub(crate) fn begin(&self) {
        self.stopping.store(true, Ordering::SeqCst);
        self.token.cancel();
    }

    /// Whether shutdown has begun.
    pub(crate) fn is_stopping(&self) -> bool {
        self.stopping.load(Ordering::SeqCst)
    }

    /// The token an instance loop (or a deployment's listener) waits on.
    pub(crate) fn token(&self) -> &CancellationToken {
        &self.token
    }

    /// Wait until no admission is under way; after [`Stop::begin`], none starts.
    pub(crate) async fn admissions_done(&self) {
        loop {
            let drained = self.drained.notified();
            tokio::pin!(drained);
            // Registered before the counts are read: a drop between the two wakes it.
            drained.as_mut().enable();
            let under_way = self
                .admitting
                .iter()
                .any(|slot| slot.load(Ordering::SeqCst) != 0);
            if !under_way {
                return;
            }
            drained.await;
        }
    }
}

impl Drop for Admission<'_> {
    fn drop(&mut self) {
        self.slot.fetch_sub(1, Ordering::SeqCst);
        if self.stop.is_stopping() {
            self.stop.drained.notify_waiters();
        }
    }
}

/// The slot of the calling thread: threads take the slots in turn as they first
/// admit.
fn this_threads_slot() -> usize {
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    thread_local! {
        static SLOT: Cell<Option<usize>> = const { Cell::new(None) };
    }
    SLOT.with(|slot| {
        slot.get().unwrap_or_else(|| {
            let taken = NEXT.fetch_add(1, Ordering::Relaxed) % SLOTS;
            slot.set(Some(taken));
            taken
        })
    })
}
