//! The end's block: a reference count and the [`Ending`], and for an end packed
//! whole (`End::Packed`) the instance's steps and data after them, in the same
//! allocation. An `Arc<Ending>` cannot hold a tail sized at run time; this is the
//! small part of one that is needed (a strong count only: nothing holds an end
//! weakly).

mod ahead;

use std::alloc::Layout;
use std::ops::Deref;
use std::ptr::NonNull;
use std::sync::atomic::{self, AtomicUsize, Ordering};

use super::{End, Ending, Packed, Publisher};
use crate::data::Erased;
use crate::instance::history::Step;
use crate::instance::outcome::Finished;

/// A counted reference to an instance's end: what its handles and its loop's
/// [`Publisher`] hold.
pub(crate) struct EndRef(NonNull<Block>);

struct Block {
    refs: AtomicUsize,
    ending: Ending,
}

// SAFETY: as `Arc<Ending>`: the block is shared read-only but for its count
// (atomic) and its cell (synchronised, `EndCell`), so `Ending: Send + Sync` makes
// a reference to it both.
unsafe impl Send for EndRef where Ending: Send + Sync {}
unsafe impl Sync for EndRef where Ending: Send + Sync {}

/// Where a packed end's steps and data go after its block: the whole layout, and
/// the steps' and the data's offsets in it.
fn packed_layout(steps: usize, data: Layout) -> (Layout, usize, usize) {
    let steps = Layout::array::<Step>(steps).expect("a history's layout");
    let (layout, steps_at) = Layout::new::<Block>()
        .extend(steps)
        .expect("an end's layout");
    let (layout, data_at) = layout.extend(data).expect("an end's layout");
    (layout.pad_to_align(), steps_at, data_at)
}

impl EndRef {
    fn new(ending: Ending) -> Self {
        let block = Box::new(Block {
            refs: AtomicUsize::new(1),
            ending,
        });
        EndRef(NonNull::from(Box::leak(block)))
    }

    /// An instance that has not ended: the loop's end (to publish) and the handles'.
    pub fn pending() -> (Publisher, Self) {
        let end = Self::new(Ending::unset());
        (Publisher(end.clone()), end)
    }

    /// An instance that ended before any handle could wait: the end is set as the
    /// block is made (no publish, no waiter to wake).
    pub fn ended(finished: Finished<Erased>) -> Self {
        Self::new(Ending::with(End::Finished(finished)))
    }

    /// As [`EndRef::ended`], with the steps and the data moved into the block,
    /// after the end (`End::Packed`): one allocation for the ended instance. The
    /// history's buffer is left empty (a lent scratch buffer given back).
    pub fn packed(finished: Finished<Erased>) -> Self {
        let Finished {
            ended,
            mut history,
            data,
            unsent,
        } = finished;
        let len = history.steps().len();
        let len32 = u32::try_from(len).expect("a packed history is short");
        let (layout, steps_at, data_at) = packed_layout(len, data.value_layout());
        // SAFETY: `layout` is not zero-sized (it begins with a `Block`).
        let memory = unsafe { std::alloc::alloc(layout) };
        let Some(memory) = NonNull::new(memory) else {
            std::alloc::handle_alloc_error(layout)
        };
        // SAFETY: `memory` has `layout`, whose parts at `steps_at` and `data_at`
        // have room for the steps and the data, aligned for them; neither moves
        // until the block is freed (`drop`), after the `Packed` end that owns them.
        unsafe {
            let steps = memory.add(steps_at).cast::<Step>();
            let owns_heap = history.move_steps_to(steps);
            let data = data.place_at(memory.add(data_at));
            let block = memory.cast::<Block>();
            block.write(Block {
                refs: AtomicUsize::new(1),
                ending: Ending::with(End::Packed(Packed {
                    ended,
                    unsent,
                    data,
                    steps,
                    len: len32,
                    owns_heap,
                })),
            });
            ahead::made(memory.as_ptr(), layout.size());
            EndRef(block)
        }
    }

    fn block(&self) -> &Block {
        // SAFETY: alive while a reference counts it (this one).
        unsafe { self.0.as_ref() }
    }
}

impl Deref for EndRef {
    type Target = Ending;

    fn deref(&self) -> &Ending {
        &self.block().ending
    }
}

impl Clone for EndRef {
    fn clone(&self) -> Self {
        // Relaxed, as `Arc::clone`: a new reference is made from an existing one,
        // which keeps the block alive meanwhile.
        let before = self.block().refs.fetch_add(1, Ordering::Relaxed);
        if before > isize::MAX as usize {
            std::process::abort();
        }
        EndRef(self.0)
    }
}

impl Drop for EndRef {
    fn drop(&mut self) {
        // The last reference, seen by an acquire load, needs no decrement: no other
        // is left to make a new one. Most ends have one handle and no publisher
        // left when dropped (every instance that ended in its first step), and a
        // locked decrement waits for the core's stores to drain.
        let refs = &self.block().refs;
        if refs.load(Ordering::Acquire) != 1 {
            // Release then acquire, as `Arc`'s drop: every use of the block through
            // another reference happens before it is freed.
            if refs.fetch_sub(1, Ordering::Release) != 1 {
                return;
            }
            atomic::fence(Ordering::Acquire);
        }
        let layout = match self.get() {
            Some(End::Packed(packed)) => packed_layout(packed.len as usize, packed.data.layout()).0,
            _ => Layout::new::<Block>(),
        };
        // SAFETY: the last reference: the block is dropped once, then its memory
        // freed with the layout it was allocated with (`Box<Block>`'s, or
        // `packed`'s, recomputed from the same lengths and data layout).
        ahead::freeing(self.0.as_ptr().cast());
        unsafe {
            std::ptr::drop_in_place(self.0.as_ptr());
            std::alloc::dealloc(self.0.as_ptr().cast::<u8>(), layout);
        }
    }
}
