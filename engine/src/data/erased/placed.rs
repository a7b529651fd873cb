//! Process data moved out of its box into memory another owner manages: an
//! instance that ended in its first step keeps its data in its end's one block
//! (`instance::ending`), beside its steps, rather than in a box of its own.

use std::alloc::Layout;
use std::ptr::NonNull;

use super::{Data, Erased, ErasedRef};

/// A value moved to a place its owner manages ([`Erased::place_at`]): it is
/// dropped by [`Placed::drop_value`], and its memory freed by that owner.
pub(crate) struct Placed(NonNull<dyn Data>);

// SAFETY: a `Placed` owns its value as a `Box<dyn Data>` would (not its memory),
// and `Data` is `Send + Sync`.
unsafe impl Send for Placed {}
unsafe impl Sync for Placed {}

impl Erased {
    /// The layout of the value, without its box.
    pub(crate) fn value_layout(&self) -> Layout {
        Layout::for_value(self.0.get())
    }

    /// Move the value to `place` and free its box.
    ///
    /// # Safety
    /// `place` is valid for writes of [`Erased::value_layout`] and aligned to it,
    /// and stays so (not moved, not freed) while the `Placed` is used; the value
    /// is dropped once, by [`Placed::drop_value`], before the memory is freed.
    pub(crate) unsafe fn place_at(self, place: NonNull<u8>) -> Placed {
        let value = self.0.get();
        let at = value.placer()(place.as_ptr());
        let size = std::mem::size_of_val(value);
        // SAFETY: the value's bytes are moved to `place` (valid for them, by the
        // caller), then its box is freed without dropping it: from here the value
        // is the one at `place`, as a pointer of its own type says.
        unsafe {
            std::ptr::copy_nonoverlapping(
                (value as *const dyn Data).cast::<u8>(),
                place.as_ptr(),
                size,
            );
            self.0.free_moved();
            Placed(NonNull::new_unchecked(at))
        }
    }
}

impl Placed {
    /// The value.
    pub(crate) fn get(&self) -> ErasedRef<'_> {
        // SAFETY: alive until `drop_value`, after which the owner uses it no more
        // (`place_at`'s contract).
        ErasedRef(unsafe { self.0.as_ref() })
    }

    /// The value's layout.
    pub(crate) fn layout(&self) -> Layout {
        Layout::for_value(self.get().0)
    }

    /// Drop the value in its place.
    ///
    /// # Safety
    /// Once, and the value is not used after.
    pub(crate) unsafe fn drop_value(&mut self) {
        // SAFETY: by the caller.
        unsafe { std::ptr::drop_in_place(self.0.as_ptr()) }
    }
}
