//! A cell set at most once and read by reference from any thread: where an
//! instance's end is left for its handles.
//!
//! Lighter than `OnceLock` for the two ways an end is made: a cell born set (an
//! instance that ended before any handle could wait) takes no atomic operation at
//! all, and setting one takes a single compare-and-swap, where `Once`'s state
//! machine takes two read-modify-writes and a possible wait.

use std::cell::UnsafeCell;
use std::marker::PhantomData;
use std::mem::MaybeUninit;
use std::sync::atomic::{AtomicU8, Ordering};

const UNSET: u8 = 0;
/// A setter claimed the cell and is writing; readers see it unset meanwhile.
const WRITING: u8 = 1;
const SET: u8 = 2;

/// A value set at most once.
pub(crate) struct SetOnce<T> {
    state: AtomicU8,
    value: UnsafeCell<MaybeUninit<T>>,
    /// Owns a `T` (for the auto traits and drop check).
    _owns: PhantomData<T>,
}

// SAFETY: as `OnceLock<T>`: a shared cell hands out `&T` on any thread (so
// `T: Sync`) and its value may be written on one thread and dropped on another (so
// `T: Send`). The one write is claimed by a compare-and-swap (no two writers) and
// happens before any read (the release store of `SET`, acquired by `get`).
unsafe impl<T: Send + Sync> Sync for SetOnce<T> {}
// SAFETY: the cell owns its `T`.
unsafe impl<T: Send> Send for SetOnce<T> {}

impl<T> SetOnce<T> {
    pub const fn unset() -> Self {
        Self {
            state: AtomicU8::new(UNSET),
            value: UnsafeCell::new(MaybeUninit::uninit()),
            _owns: PhantomData,
        }
    }

    /// A cell born set: no atomic operation at all.
    pub const fn with(value: T) -> Self {
        Self {
            state: AtomicU8::new(SET),
            value: UnsafeCell::new(MaybeUninit::new(value)),
            _owns: PhantomData,
        }
    }

    /// The value, once set.
    #[inline]
    pub fn get(&self) -> Option<&T> {
        if self.state.load(Ordering::Acquire) == SET {
            // SAFETY: `SET` is stored (release) only after the value was written,
            // acquired here, and the value is never written again.
            Some(unsafe { (*self.value.get()).assume_init_ref() })
        } else {
            None
        }
    }

    /// Set the value, if it was not set: `Err(value)` if it was (or another set
    /// is under way).
    pub fn set(&self, value: T) -> Result<(), T> {
        if self
            .state
            .compare_exchange(UNSET, WRITING, Ordering::Acquire, Ordering::Relaxed)
            .is_err()
        {
            return Err(value);
        }
        // SAFETY: the compare-and-swap made this call the one writer; no reader
        // holds a reference into the cell (`get` returns none until `SET`).
        unsafe { (*self.value.get()).write(value) };
        self.state.store(SET, Ordering::Release);
        Ok(())
    }
}

impl<T> Drop for SetOnce<T> {
    fn drop(&mut self) {
        if *self.state.get_mut() == SET {
            // SAFETY: set means written; `&mut self` means no reference remains.
            unsafe { self.value.get_mut().assume_init_drop() }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[test]
    fn a_cell_is_set_once_and_drops_its_value_once() {
        let counted = Arc::new(());
        let cell = SetOnce::unset();
        assert!(cell.get().is_none());
        assert!(cell.set(Arc::clone(&counted)).is_ok());
        let refused = cell.set(Arc::clone(&counted));
        assert!(refused.is_err());
        drop(refused);
        assert!(Arc::ptr_eq(cell.get().unwrap(), &counted));
        assert_eq!(Arc::strong_count(&counted), 2);
        drop(cell);
        assert_eq!(Arc::strong_count(&counted), 1);
        let born = SetOnce::with(Arc::clone(&counted));
        assert!(born.get().is_some());
        drop(born);
        let never: SetOnce<Arc<()>> = SetOnce::unset();
        drop(never);
        assert_eq!(Arc::strong_count(&counted), 1);
    }

    #[test]
    fn racing_setters_leave_one_value_that_every_reader_sees() {
        for _ in 0..200 {
            let cell = Arc::new(SetOnce::unset());
            let setters: Vec<_> = (0..3)
                .map(|i| {
                    let cell = Arc::clone(&cell);
                    std::thread::spawn(move || cell.set(vec![i; 4]).is_ok())
                })
                .collect();
            let won = setters
                .into_iter()
                .map(|s| s.join().unwrap())
                .filter(|won| *won)
                .count();
            assert_eq!(won, 1);
            let value = cell.get().unwrap();
            assert!(value.iter().all(|v| *v == value[0]));
        }
    }
}
