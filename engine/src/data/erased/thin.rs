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
    /// Box `value`.
    #[inline]
    pub fn new<D: Data>(value: D) -> Self {
        let slot = Box::into_raw(Box::new(Slot {
            header: std::ptr::null_mut::<D>() as Header,
            value,
        }));
        // SAFETY: `slot` is a live allocation from `Box::into_raw`: the header is
        // written to point at its value, which never moves (the allocation is
        // freed, not moved, by `drop`).
        unsafe {
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
    /// Free the allocation, its value already moved out (`Erased::place_at`).
    ///
    /// SAFETY: the value was moved out bitwise and is not used through this box
    /// again: it is not dropped here.
    pub(super) unsafe fn free_moved(self) {
        let this = std::mem::ManuallyDrop::new(self);
        // SAFETY: as `drop`'s, less the value's drop (moved out, by the caller).
        unsafe {
            let layout = slot_layout(&**this.0.as_ptr());
            std::alloc::dealloc(this.0.as_ptr().cast::<u8>(), layout);
        }
    }
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
    use crate::data::{ChangedFields, ProcessData};
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

    impl ProcessData for Wide {
        const FIELDS: &'static [&'static str] = &[];
        fn diff(&self, _: &Self) -> ChangedFields {
            ChangedFields::default()
        }
        fn merge(&mut self, _: &Self, _: Self) -> ChangedFields {
            ChangedFields::default()
        }
    }

    #[derive(Clone, Debug, Default)]
    struct Empty;

    impl ProcessData for Empty {
        const FIELDS: &'static [&'static str] = &[];
        fn diff(&self, _: &Self) -> ChangedFields {
            ChangedFields::default()
        }
        fn merge(&mut self, _: &Self, _: Self) -> ChangedFields {
            ChangedFields::default()
        }
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
