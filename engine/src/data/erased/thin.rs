//! The box behind [`Erased`](super::Erased): one pointer wide, where a
//! `Box<dyn Data>` is two.
//!
//! The value's `dyn Data` pointer (address and vtable) is kept in its allocation,
//! before the value. An instance's data moves at every task run — into the run's
//! future, out as its output, into the commit — and a two-word value moved by
//! the compiler is sometimes written as two 8-byte stores and read back as one
//! 16-byte load: a store-forwarding stall, paid on every task run. One word is
//! written and read whole. It also makes a finished instance's end, which holds
//! the data, a word smaller.

use std::alloc::Layout;
use std::cell::Cell;
use std::ptr::NonNull;

use super::Data;

/// An owned value of some [`Data`] type, behind one pointer.
pub(super) struct ThinBox(NonNull<Header>);

/// What the allocation begins with: where its value is, as a `dyn Data`.
type Header = *mut dyn Data;

/// The allocation: the header, then the value (`repr(C)`: in that order, so the
/// layout is the header's extended by the value's — what `drop` recomputes).
#[repr(C)]
struct Slot<D> {
    header: Header,
    value: D,
}

// SAFETY: a `ThinBox` owns its value as a `Box<dyn Data>` would, and `Data` is
// `Send + Sync`; the header only points into the allocation the box owns.
unsafe impl Send for ThinBox {}
unsafe impl Sync for ThinBox {}

impl ThinBox {
    /// Box `value` (in this thread's stashed allocation if it has the slot's layout).
    #[inline]
    pub fn new<D: Data>(value: D) -> Self {
        let layout = Layout::new::<Slot<D>>();
        let memory = match STASHED.try_with(Cell::take).ok().flatten() {
            Some(stashed) if stashed.layout == layout => stashed.into_memory(),
            other => {
                drop(other);
                // SAFETY: a slot's layout is not zero-sized (it has a header).
                let memory = unsafe { std::alloc::alloc(layout) };
                NonNull::new(memory).unwrap_or_else(|| std::alloc::handle_alloc_error(layout))
            }
        };
        let slot = memory.cast::<Slot<D>>().as_ptr();
        // SAFETY: `slot` is a live allocation of `Slot<D>`'s layout (new, or
        // stashed empty by `free_moved`), the global allocator's as a
        // `Box<Slot<D>>`'s would be: the slot is written, then its header to point
        // at its value, which never moves (the allocation is freed, not moved).
        unsafe {
            slot.write(Slot {
                header: std::ptr::null_mut::<D>() as Header,
                value,
            });
            (*slot).header = &raw mut (*slot).value as Header;
            ThinBox(NonNull::new_unchecked(slot.cast::<Header>()))
        }
    }

    /// The value.
    #[inline]
    pub fn get(&self) -> &dyn Data {
        // SAFETY: the header points at the value this box owns, alive while the
        // box is; `&self` lends it shared.
        unsafe { &**self.0.as_ptr() }
    }

    /// The value, to change.
    #[inline]
    pub fn get_mut(&mut self) -> &mut dyn Data {
        // SAFETY: as `get`; `&mut self` lends it exclusively.
        unsafe { &mut **self.0.as_ptr() }
    }

    /// The value, if it is a `D`, taken out of its box.
    pub fn take<D: 'static>(self) -> Result<D, Self> {
        if !(self.get() as &dyn std::any::Any).is::<D>() {
            return Err(self);
        }
        let slot = self.0.as_ptr().cast::<Slot<D>>();
        std::mem::forget(self);
        // SAFETY: the value is a `D`, so the allocation is a `Slot<D>` made by
        // `new::<D>` through a `Box`: the box is remade and its value moved out,
        // then the allocation is freed once, by the box (`self` is forgotten).
        let slot = unsafe { Box::from_raw(slot) };
        Ok(slot.value)
    }
}

impl ThinBox {
    /// Give up the allocation, its value already moved out (`Erased::place_at`).
    /// It is stashed for this thread's next box of its layout: an instance that
    /// ended in its first step moved its data out (into its end's block), and the
    /// next instance born on the thread boxes its data — most often of the same
    /// type — into it, with no call to the allocator.
    ///
    /// # Safety
    /// The value was moved out bitwise and is not used through this box again: it
    /// is not dropped here.
    pub(super) unsafe fn free_moved(self) {
        let this = std::mem::ManuallyDrop::new(self);
        // SAFETY: the header is initialised by `new` and never changed; the value
        // it points at was moved out, not dropped, but its type (the vtable) and
        // so the slot's layout are read as `drop` reads them.
        let layout = slot_layout(unsafe { &**this.0.as_ptr() });
        let stashed = Stashed {
            memory: this.0.cast::<u8>(),
            layout,
        };
        // Another stashed allocation (of another layout) is freed; with the
        // thread's storage gone, this one is (the closure is dropped uncalled).
        let _ = STASHED.try_with(move |cell| cell.set(Some(stashed)));
    }
}

/// An empty allocation of a slot's layout, kept by its thread (`STASHED`); freed
/// when dropped.
struct Stashed {
    memory: NonNull<u8>,
    layout: Layout,
}

impl Stashed {
    /// The memory, no longer freed by this.
    fn into_memory(self) -> NonNull<u8> {
        std::mem::ManuallyDrop::new(self).memory
    }
}

impl Drop for Stashed {
    fn drop(&mut self) {
        // SAFETY: `memory` is an allocation of `layout` from the global allocator
        // that nothing else owns (its box gave it up in `free_moved`).
        unsafe { std::alloc::dealloc(self.memory.as_ptr(), self.layout) }
    }
}

thread_local! {
    /// The last allocation a box gave up with its value moved out (`free_moved`).
    static STASHED: Cell<Option<Stashed>> = const { Cell::new(None) };
}

/// The layout of the slot that holds `value`: `repr(C)`, the header's extended by
/// the value's and padded, which is the `Box<Slot<D>>`'s layout it was allocated
/// with.
fn slot_layout(value: &dyn Data) -> Layout {
    Layout::new::<Header>()
        .extend(Layout::for_value(value))
        .expect("a slot's layout is a valid layout")
        .0
        .pad_to_align()
}

impl Drop for ThinBox {
    fn drop(&mut self) {
        // SAFETY: the header is initialised by `new` and never changed.
        let value = unsafe { *self.0.as_ptr().cast_const() };
        // SAFETY: the header points at the value, alive until dropped here. The
        // allocation is a `Slot<D>` for the value's type (its layout read off the
        // value before it is dropped); it is freed once, here.
        unsafe {
            let layout = slot_layout(&*value);
            std::ptr::drop_in_place(value);
            std::alloc::dealloc(self.0.as_ptr().cast::<u8>(), layout);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    static DROPS: AtomicUsize = AtomicUsize::new(0);

    /// Counts its drops; over-aligned, so a slot's layout is not the header's.
    #[derive(Clone, Debug, Default)]
    #[repr(align(64))]
    struct Wide(u8);

    impl Drop for Wide {
        fn drop(&mut self) {
            DROPS.fetch_add(1, Ordering::Relaxed);
        }
    }

    #[derive(Clone, Debug, Default)]
    struct Empty;

    #[derive(Clone, Debug, Default)]
    struct Word(u64);

    crate::data::fieldless_process_data!(Wide, Empty, Word);

    /// The layout of this thread's stashed allocation, if it has one.
    fn stashed_layout() -> Option<Layout> {
        STASHED.with(|cell| {
            let stashed = cell.take();
            let layout = stashed.as_ref().map(|s| s.layout);
            cell.set(stashed);
            layout
        })
    }

    /// Move the value out as `Erased::place_at` does, then give the box up.
    fn move_out(boxed: ThinBox) -> Word {
        let value = unsafe { std::ptr::read((boxed.get() as *const dyn Data).cast::<Word>()) };
        unsafe { boxed.free_moved() };
        value
    }

    #[test]
    fn a_box_given_up_with_its_value_moved_out_is_the_next_of_its_layout() {
        // On a thread of its own: the stash is the thread's.
        std::thread::spawn(|| {
            let word = Layout::new::<Slot<Word>>();
            let first = ThinBox::new(Word(1));
            let at = first.0.as_ptr() as usize;
            assert_eq!(move_out(first).0, 1);
            assert_eq!(stashed_layout(), Some(word));
            let second = ThinBox::new(Word(2));
            assert_eq!(second.0.as_ptr() as usize, at, "the stashed allocation");
            assert_eq!(stashed_layout(), None, "taken");
            let read = (second.get() as &dyn std::any::Any).downcast_ref::<Word>();
            assert_eq!(read.map(|w| w.0), Some(2));
            assert_eq!(move_out(second).0, 2);
            // A box of another layout frees the stashed allocation and makes its own.
            let other = ThinBox::new(Empty);
            assert_eq!(stashed_layout(), None);
            assert!(other.take::<Empty>().is_ok());
            // Given up twice in a row: the later one is kept, the earlier freed.
            let (a, b) = (ThinBox::new(Word(3)), ThinBox::new(Word(4)));
            let b_at = b.0.as_ptr() as usize;
            assert_eq!((move_out(a).0, move_out(b).0), (3, 4));
            assert_eq!(ThinBox::new(Word(5)).0.as_ptr() as usize, b_at);
        })
        .join()
        .unwrap();
    }

    #[test]
    fn a_thin_box_is_one_word_and_owns_its_value_once() {
        assert_eq!(std::mem::size_of::<ThinBox>(), std::mem::size_of::<usize>());
        assert_eq!(
            std::mem::size_of::<Option<ThinBox>>(),
            std::mem::size_of::<usize>()
        );
        let before = DROPS.load(Ordering::Relaxed);
        let mut wide = ThinBox::new(Wide(7));
        let at = (wide.get() as &dyn std::any::Any)
            .downcast_ref::<Wide>()
            .unwrap() as *const Wide;
        assert_eq!(at as usize % 64, 0, "the value keeps its alignment");
        (wide.get_mut() as &mut dyn std::any::Any)
            .downcast_mut::<Wide>()
            .unwrap()
            .0 = 9;
        // A take of another type gives the box back untouched.
        let Err(wide) = wide.take::<Empty>() else {
            panic!("not an `Empty`")
        };
        assert_eq!(DROPS.load(Ordering::Relaxed), before);
        let taken = wide.take::<Wide>().ok().expect("a `Wide`");
        assert_eq!(taken.0, 9);
        assert_eq!(DROPS.load(Ordering::Relaxed), before, "taken, not dropped");
        drop(taken);
        drop(ThinBox::new(Wide(1)));
        assert_eq!(DROPS.load(Ordering::Relaxed), before + 2);
        // A zero-sized value still has its header's allocation.
        let empty = ThinBox::new(Empty);
        assert_eq!(empty.get().type_name(), std::any::type_name::<Empty>());
        assert!(empty.take::<Empty>().is_ok());
    }
}
