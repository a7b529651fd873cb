//! Process data small enough to be held in place, in the struct that owns it: an
//! instance that ended in its first step keeps its data in its handle
//! (`instance::ending::Held`), with no allocation of its own.

use std::alloc::Layout;
use std::mem::MaybeUninit;

use super::{Data, Erased, ErasedRef, Placer};

/// Room for a held value: three words (a `String`, a `Vec`, a few numbers).
const WORDS: usize = 3;

/// A value of some [`Data`] type of at most three words, aligned to at most one,
/// held in place. Moves with its owner, as any Rust value does: what points at it
/// is made afresh from its place at each use (its type's [`Placer`]).
pub(crate) struct HeldData {
    value: [MaybeUninit<usize>; WORDS],
    placer: Placer,
}

impl HeldData {
    /// Whether a value of `layout` fits.
    fn fits(layout: Layout) -> bool {
        layout.size() <= std::mem::size_of::<[usize; WORDS]>()
            && layout.align() <= std::mem::align_of::<usize>()
    }

    /// Whether `data`'s value fits (`hold` would take it).
    pub(crate) fn would_hold(data: &Erased) -> bool {
        Self::fits(data.value_layout())
    }

    /// `data`'s value, moved out of its box (given back as it was if it does not
    /// fit). The box's allocation is kept for the thread's next box
    /// (`ThinBox::free_moved`).
    #[inline(always)]
    pub(crate) fn hold(data: Erased) -> Result<Self, Erased> {
        if !Self::would_hold(&data) {
            return Err(data);
        }
        let placer = data.0.get().placer();
        let mut value = [MaybeUninit::uninit(); WORDS];
        // SAFETY: `value` has room for the value and is aligned for it (`fits`);
        // the `Placed` it returns is not kept (the bytes move with `value`, and
        // `placer` finds them again), and the value is dropped once, by the
        // `HeldData` made of them — only once they are written.
        let _ = unsafe { data.place_at(std::ptr::NonNull::from(&mut value).cast()) };
        Ok(HeldData { value, placer })
    }

    fn at(&self) -> *mut dyn Data {
        (self.placer)(self.value.as_ptr().cast_mut().cast())
    }

    /// The value.
    pub(crate) fn get(&self) -> ErasedRef<'_> {
        // SAFETY: the value lives in `value` (written by `hold` or `clone`) until
        // `drop`; `&self` lends it shared.
        ErasedRef(unsafe { &*self.at() })
    }
}

impl Clone for HeldData {
    fn clone(&self) -> Self {
        let mut value = [MaybeUninit::uninit(); WORDS];
        // SAFETY: `value` has the same room and alignment as `self.value`, which
        // holds a value of the type `placer` makes pointers to. A clone that
        // panics leaves no `HeldData` over the unwritten bytes to drop them.
        unsafe { self.get().0.clone_to(value.as_mut_ptr().cast()) };
        HeldData {
            value,
            placer: self.placer,
        }
    }
}

impl Drop for HeldData {
    fn drop(&mut self) {
        // SAFETY: the value is alive (written by `hold` or `clone`) and dropped
        // once, here.
        unsafe { std::ptr::drop_in_place(self.at()) }
    }
}

// SAFETY: a `HeldData` owns its value as a `Box<dyn Data>` would, and `Data` is
// `Send + Sync`.
unsafe impl Send for HeldData {}
unsafe impl Sync for HeldData {}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Clone, Debug, Default, PartialEq)]
    struct Small {
        name: String,
    }

    #[derive(Clone, Debug, Default)]
    struct Large {
        a: String,
        b: String,
    }

    /// Data whose clone panics, and whose drop checks it drops a value it made.
    #[derive(Debug)]
    struct Brittle {
        made: u64,
    }

    const MADE: u64 = 0x7e1d_da7a;

    impl Clone for Brittle {
        fn clone(&self) -> Self {
            panic!("no copies")
        }
    }

    impl Drop for Brittle {
        fn drop(&mut self) {
            assert_eq!(self.made, MADE, "dropped what was never made");
            self.made = 0;
        }
    }

    crate::data::fieldless_process_data!(Small, Large, Brittle);

    #[test]
    fn a_small_value_is_held_moved_cloned_and_dropped_once() {
        let held = HeldData::hold(Erased::new(Small { name: "ada".into() }))
            .ok()
            .unwrap();
        let moved = vec![held]; // moved: found again from its new place
        let copy = moved[0].clone();
        drop(moved);
        assert_eq!(copy.get().clone_data::<Small>().name, "ada");
    }

    #[test]
    fn a_clone_that_panics_drops_nothing_it_did_not_make() {
        let held = HeldData::hold(Erased::new(Brittle { made: MADE }))
            .ok()
            .unwrap();
        let copy = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| held.clone()));
        assert!(copy.is_err());
        drop(held); // the one value made, dropped once
    }

    #[test]
    fn a_large_value_is_given_back_whole() {
        let data = Erased::new(Large {
            a: "a".into(),
            b: "b".into(),
        });
        let back = HeldData::hold(data).err().unwrap();
        let back = back.typed::<Large>();
        assert_eq!((back.a.as_str(), back.b.as_str()), ("a", "b"));
    }
}
