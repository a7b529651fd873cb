//! The engine's shared parts as its instances hold them: lent to an instance's first
//! step, kept by an instance that goes on.
//!
//! An instance started by `Engine::start` takes its first step on the starter's
//! stack, which borrows the engine throughout (`Birth::inline_first_step`). Holding
//! the hub and the engine by reference count there cost two increments and two
//! decrements per instance on counts every worker shares — with instances started on
//! every worker, those cache lines went back and forth between the cores for each
//! instance. So the step holds them *lent*: a pointer, no count. An instance that
//! gets a loop keeps them (a strong count on the hub, a weak one on the engine)
//! before the loop is spawned; a clone is always kept.

use std::mem::ManuallyDrop;
use std::ops::Deref;
use std::ptr::NonNull;
use std::sync::{Arc, Weak};

/// The value of an `Arc<T>`, lent or kept with a strong count.
pub(crate) struct LentArc<T> {
    value: NonNull<T>,
    kept: bool,
}

/// The value of an `Arc<T>`, lent or kept with a weak count.
pub(crate) struct LentWeak<T> {
    value: NonNull<T>,
    kept: bool,
}

// As `Arc<T>` and `Weak<T>`: a shared reference to `T` crosses threads.
unsafe impl<T: Send + Sync> Send for LentArc<T> {}
unsafe impl<T: Send + Sync> Sync for LentArc<T> {}
unsafe impl<T: Send + Sync> Send for LentWeak<T> {}
unsafe impl<T: Send + Sync> Sync for LentWeak<T> {}

impl<T> LentArc<T> {
    /// `value`, lent.
    ///
    /// # Safety
    /// `value` is the value of an `Arc<T>` that stays alive while this is lent: until
    /// [`LentArc::keep`], or until it is dropped.
    pub(crate) unsafe fn lend(value: &T) -> Self {
        Self {
            value: NonNull::from(value),
            kept: false,
        }
    }

    /// Take a count of its own (once).
    pub(crate) fn keep(&mut self) {
        if !self.kept {
            // Safety: lent, so the `Arc` is alive (`lend`).
            unsafe { Arc::increment_strong_count(self.value.as_ptr()) };
            self.kept = true;
        }
    }
}

impl<T> Deref for LentArc<T> {
    type Target = T;

    fn deref(&self) -> &T {
        // Safety: lent (alive by `lend`'s contract) or kept (alive by our count).
        unsafe { self.value.as_ref() }
    }
}

impl<T> Clone for LentArc<T> {
    fn clone(&self) -> Self {
        let mut clone = Self {
            value: self.value,
            kept: false,
        };
        clone.keep();
        clone
    }
}

impl<T> Drop for LentArc<T> {
    fn drop(&mut self) {
        if self.kept {
            // Safety: our count, taken by `keep`.
            unsafe { Arc::decrement_strong_count(self.value.as_ptr()) };
        }
    }
}

impl<T> LentWeak<T> {
    /// `value`, lent.
    ///
    /// # Safety
    /// As [`LentArc::lend`]: `value` is the value of an `Arc<T>` that stays alive
    /// while this is lent.
    pub(crate) unsafe fn lend(value: &T) -> Self {
        Self {
            value: NonNull::from(value),
            kept: false,
        }
    }

    /// Take a weak count of its own (once).
    pub(crate) fn keep(&mut self) {
        if !self.kept {
            // Safety: lent, so the `Arc` is alive; the `Weak` made from it is
            // released into our pointer (the same address as the value's).
            let arc = ManuallyDrop::new(unsafe { Arc::from_raw(self.value.as_ptr()) });
            let weak = Arc::downgrade(&arc);
            let _ = Weak::into_raw(weak);
            self.kept = true;
        }
    }

    /// The value, if it is still alive.
    pub(crate) fn upgrade(&self) -> Option<Arc<T>> {
        let value = self.value.as_ptr();
        if self.kept {
            // Safety: our weak count, taken by `keep`, not given up here.
            ManuallyDrop::new(unsafe { Weak::from_raw(value) }).upgrade()
        } else {
            // Safety: lent, so the `Arc` is alive; the count is the new `Arc`'s.
            unsafe {
                Arc::increment_strong_count(value);
                Some(Arc::from_raw(value))
            }
        }
    }
}

impl<T> Clone for LentWeak<T> {
    fn clone(&self) -> Self {
        let mut clone = Self {
            value: self.value,
            kept: false,
        };
        if self.kept {
            // Safety: our weak count keeps the allocation; the clone's is its own.
            let weak = ManuallyDrop::new(unsafe { Weak::from_raw(self.value.as_ptr()) });
            let _ = Weak::into_raw(Weak::clone(&weak));
            clone.kept = true;
        } else {
            clone.keep();
        }
        clone
    }
}

impl<T> Drop for LentWeak<T> {
    fn drop(&mut self) {
        if self.kept {
            // Safety: our weak count, taken by `keep` or `clone`.
            drop(unsafe { Weak::from_raw(self.value.as_ptr()) });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lent_values_touch_no_count_and_kept_ones_hold_theirs() {
        let arc = Arc::new(7_u32);
        let mut lent = unsafe { LentArc::lend(&*arc) };
        assert_eq!((*lent, Arc::strong_count(&arc)), (7, 1));
        let clone = lent.clone();
        assert_eq!(Arc::strong_count(&arc), 2);
        lent.keep();
        lent.keep();
        assert_eq!(Arc::strong_count(&arc), 3);
        drop((lent, clone));
        assert_eq!(Arc::strong_count(&arc), 1);
    }

    #[test]
    fn a_kept_weak_lets_its_value_go_and_says_so() {
        let arc = Arc::new(String::from("engine"));
        let mut weak = unsafe { LentWeak::lend(&*arc) };
        assert_eq!(
            weak.upgrade().as_deref().map(String::as_str),
            Some("engine")
        );
        assert_eq!((Arc::strong_count(&arc), Arc::weak_count(&arc)), (1, 0));
        weak.keep();
        let clone = weak.clone();
        assert_eq!((Arc::strong_count(&arc), Arc::weak_count(&arc)), (1, 2));
        drop(arc);
        assert!(weak.upgrade().is_none());
        assert!(clone.upgrade().is_none());
        let lent_clone = {
            let arc = Arc::new(String::new());
            let lent = unsafe { LentWeak::lend(&*arc) };
            let clone = lent.clone();
            assert_eq!(Arc::weak_count(&arc), 1);
            clone
        };
        assert!(lent_clone.upgrade().is_none());
    }
}
