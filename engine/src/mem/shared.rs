//! A counted block whose value may be followed, in the same allocation, by a slice
//! moved into it: what an instance that ended in its first step is kept in (its
//! end, then its steps).
//!
//! One allocation where a history buffer and the end's block would be two: a
//! service holding many ended instances frees them in bursts, and blocks of several
//! sizes are merged back by the allocator one by one. Like triomphe's `ThinArc`, it
//! has a strong count only: nothing holds an end weakly.
//!
//! # Safety
//! The block owns its head and its tail's elements; they are dropped once, by the
//! last reference, before the block is freed with the layout it was allocated with
//! (a function of the tail's length: `Block::layout`). The tail never moves: it is reached through a pointer into
//! the block, which lives while any reference does, and only shared.

use std::alloc::Layout;
use std::marker::PhantomData;
use std::ops::Deref;
use std::ptr::NonNull;
use std::sync::atomic::{self, AtomicUsize, Ordering};

/// A counted reference to a block: its head `H`, and maybe a tail of `[S]` after it.
pub(crate) struct Shared<H, S> {
    block: NonNull<Block<H, S>>,
    /// Owns the block's contents, for the auto traits and drop check.
    _owns: PhantomData<(H, Box<[S]>)>,
}

struct Block<H, S> {
    refs: AtomicUsize,
    /// The tail's elements, in the block's own allocation (empty: none). Its length
    /// gives the layout the block was allocated with (`Block::layout`).
    tail: NonNull<[S]>,
    head: H,
}

impl<H, S> Block<H, S> {
    /// The layout of a block with a tail of `len` elements, and the tail's offset:
    /// a `Box<Block>`'s for none (`Shared::new`; `with_tail` makes no empty tail).
    fn layout(len: usize) -> (Layout, usize) {
        if len == 0 {
            return (Layout::new::<Self>(), 0);
        }
        let tail = Layout::array::<S>(len).expect("a tail's layout");
        let (layout, at) = Layout::new::<Self>()
            .extend(tail)
            .expect("a block's layout");
        (layout.pad_to_align(), at)
    }
}

// SAFETY: as `Arc<(H, Box<[S]>)>`: the block is shared read-only but for its count
// (atomic), and dropped on whichever thread drops the last reference.
unsafe impl<H: Send + Sync, S: Send + Sync> Send for Shared<H, S> {}
// SAFETY: as above.
unsafe impl<H: Send + Sync, S: Send + Sync> Sync for Shared<H, S> {}

impl<H, S> Shared<H, S> {
    /// A block of `head` alone.
    pub fn new(head: H) -> Self {
        let block = Box::new(Block {
            refs: AtomicUsize::new(1),
            tail: NonNull::slice_from_raw_parts(NonNull::dangling(), 0),
            head,
        });
        Shared {
            block: NonNull::from(Box::leak(block)),
            _owns: PhantomData,
        }
    }

    /// A block of `head`, followed by the elements of `slice`, moved out: the vector
    /// is left empty, its capacity kept.
    pub fn with_tail(head: H, slice: &mut Vec<S>) -> Self {
        let len = slice.len();
        if len == 0 {
            return Self::new(head);
        }
        let (layout, slice_at) = Block::<H, S>::layout(len);
        // SAFETY: `layout` is not zero-sized (it begins with a `Block`).
        let memory = unsafe { std::alloc::alloc(layout) };
        let Some(memory) = NonNull::new(memory) else {
            std::alloc::handle_alloc_error(layout)
        };
        // SAFETY: `memory` has `layout`, whose part at `slice_at` has room for the
        // slice's elements, aligned for them (the layout was extended with theirs).
        // The elements are moved bitwise and the vector forgets them; nothing here
        // can panic between the move and the block's write.
        unsafe {
            let tail = memory.add(slice_at).cast::<S>();
            std::ptr::copy_nonoverlapping(slice.as_ptr(), tail.as_ptr(), len);
            slice.set_len(0);
            let block = memory.cast::<Block<H, S>>();
            block.write(Block {
                refs: AtomicUsize::new(1),
                tail: NonNull::slice_from_raw_parts(tail, len),
                head,
            });
            Shared {
                block,
                _owns: PhantomData,
            }
        }
    }

    fn block(&self) -> &Block<H, S> {
        // SAFETY: alive while a reference counts it (this one).
        unsafe { self.block.as_ref() }
    }

    /// Whether this is the block's only reference: then none can be made but from
    /// it (an evicted instance whose handles are all gone drops its end's block).
    #[cfg(feature = "durable")]
    pub fn is_unique(&self) -> bool {
        // Acquire, as `Arc::get_mut`'s look: drops on other threads came before.
        self.block().refs.load(Ordering::Acquire) == 1
    }

    /// The tail's elements (empty for a block made without one).
    pub fn tail(&self) -> &[S] {
        // SAFETY: the tail's elements are owned by the block and alive while it is
        // (module doc); shared, as the block is. A block without a tail has an
        // empty, dangling, aligned one.
        unsafe { self.block().tail.as_ref() }
    }
}

impl<H, S> Deref for Shared<H, S> {
    type Target = H;

    fn deref(&self) -> &H {
        &self.block().head
    }
}

impl<H, S> Clone for Shared<H, S> {
    fn clone(&self) -> Self {
        // Relaxed, as `Arc::clone`: a new reference is made from an existing one,
        // which keeps the block alive meanwhile.
        let before = self.block().refs.fetch_add(1, Ordering::Relaxed);
        if before > isize::MAX as usize {
            std::process::abort();
        }
        Shared {
            block: self.block,
            _owns: PhantomData,
        }
    }
}

impl<H, S> Drop for Shared<H, S> {
    fn drop(&mut self) {
        // The last reference, seen by an acquire load, needs no decrement: no other
        // is left to make a new one (most ends have one handle left when dropped,
        // and a locked decrement waits for the core's stores to drain).
        let refs = &self.block().refs;
        if refs.load(Ordering::Acquire) != 1 {
            // Release then acquire, as `Arc`'s drop: every use of the block through
            // another reference happens before it is freed.
            if refs.fetch_sub(1, Ordering::Release) != 1 {
                return;
            }
            atomic::fence(Ordering::Acquire);
        }
        let block = self.block.as_ptr();
        // SAFETY: the last reference: the block's contents are dropped once (a
        // guard frees the memory even if a drop panics), then the memory is freed
        // with the layout it was allocated with (the tail's length gives it).
        unsafe {
            let _free = Free(
                block.cast::<u8>(),
                Block::<H, S>::layout((*block).tail.len()).0,
            );
            let _tail = DropTail((*block).tail);
            std::ptr::drop_in_place(block);
        }
    }
}

/// Frees a block's memory when dropped (after its contents, on any path).
struct Free(*mut u8, Layout);

impl Drop for Free {
    fn drop(&mut self) {
        // SAFETY: made by `Shared`'s drop for its block's memory and layout, once.
        unsafe { std::alloc::dealloc(self.0, self.1) }
    }
}

/// Drops a block's tail in place when dropped (after the head, on any path).
struct DropTail<S>(NonNull<[S]>);

impl<S> Drop for DropTail<S> {
    fn drop(&mut self) {
        // SAFETY: made by `Shared`'s drop for its block's tail, once.
        unsafe { std::ptr::drop_in_place(self.0.as_ptr()) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    /// Over-aligned, so the tail's offset is not the head's end.
    #[derive(Debug, PartialEq)]
    #[repr(align(64))]
    struct Wide(u8, Arc<()>);

    #[test]
    fn a_block_keeps_its_head_and_tail_and_drops_each_once() {
        let counted = Arc::new(());
        let mut steps: Vec<Wide> = (0..5).map(|i| Wide(i, Arc::clone(&counted))).collect();
        let capacity = steps.capacity();
        let block = Shared::with_tail(String::from("head"), &mut steps);
        assert!(
            steps.is_empty() && steps.capacity() == capacity,
            "emptied, kept"
        );
        assert_eq!(Arc::strong_count(&counted), 6);
        let clone = block.clone();
        drop(block);
        assert_eq!((clone.tail().len(), &**clone), (5, "head"));
        assert_eq!(clone.tail()[3].0, 3);
        drop(clone);
        assert_eq!(Arc::strong_count(&counted), 1);
    }

    #[test]
    fn blocks_without_a_tail_or_with_an_empty_one() {
        let plain: Shared<u64, Wide> = Shared::new(3);
        assert!(plain.tail().is_empty());
        let block = Shared::<(), u32>::with_tail((), &mut Vec::new());
        assert!(block.tail().is_empty());
        let block = Shared::<(), u32>::with_tail((), &mut vec![1, 2]);
        assert_eq!(block.tail(), [1, 2]);
    }

    #[test]
    fn a_head_whose_drop_panics_still_drops_the_tail_and_frees_the_block() {
        struct Bomb;
        impl Drop for Bomb {
            fn drop(&mut self) {
                panic!("bomb");
            }
        }
        let counted = Arc::new(());
        let block = Shared::with_tail(Bomb, &mut vec![Arc::clone(&counted)]);
        let dropped = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| drop(block)));
        assert!(dropped.is_err());
        assert_eq!(Arc::strong_count(&counted), 1, "the tail was dropped");
    }

    #[test]
    fn references_dropped_on_many_threads_free_once() {
        for _ in 0..50 {
            let counted = Arc::new(());
            let block = Shared::with_tail(Arc::clone(&counted), &mut vec![Arc::clone(&counted)]);
            let threads: Vec<_> = (0..4)
                .map(|_| {
                    let block = block.clone();
                    std::thread::spawn(move || drop(block))
                })
                .collect();
            drop(block);
            threads.into_iter().for_each(|t| t.join().unwrap());
            assert_eq!(Arc::strong_count(&counted), 1);
        }
    }
}
