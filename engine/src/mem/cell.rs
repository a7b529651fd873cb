//! The instance's data cell: the committed data, shared with the snapshots tasks
//! take of it, changed in place when no snapshot is left.
//!
//! `Arc::get_mut` would do, but it locks the weak count with a read-modify-write
//! (a locked instruction that waits for the core's stores to drain) at every commit
//! that changes a field. A cell of which no `Weak` can exist needs only a load of
//! the strong count. [`DataCell`] and [`Base`] own their `Arc` and never hand it
//! out, so no `Weak` of it can be made: that is the invariant, kept by the types.

use std::ops::Deref;
use std::sync::atomic::{fence, Ordering};
use std::sync::Arc;

/// The committed value, shared with its [`Base`]s.
#[derive(Debug)]
pub(crate) struct DataCell<T>(Arc<T>);

/// A [`DataCell`]'s value as it was when taken: what a task or a compensation
/// handler starts from, and the base of its commit's three-way merge. Cheap to
/// clone (a count).
#[derive(Debug)]
pub(crate) struct Base<T>(Arc<T>);

impl<T> DataCell<T> {
    pub fn new(value: T) -> Self {
        DataCell(Arc::new(value))
    }

    /// The value as it is now, kept apart from later changes.
    #[inline]
    pub fn snapshot(&self) -> Base<T> {
        Base(Arc::clone(&self.0))
    }

    /// Whether `snapshot` is of the value as it is now (nothing was committed since).
    #[inline]
    pub fn is_now(&self, snapshot: &Base<T>) -> bool {
        Arc::ptr_eq(&self.0, &snapshot.0)
    }

    /// The value, to change, if no snapshot shares it.
    #[inline]
    pub fn unique_mut(&mut self) -> Option<&mut T> {
        if Arc::strong_count(&self.0) != 1 {
            return None;
        }
        // As `Arc`'s drop: the last other reference's uses (before its release
        // decrement, read above) happen before ours.
        fence(Ordering::Acquire);
        // SAFETY: one strong reference (ours, borrowed mutably) and no weak one (no
        // `Weak` of a cell can be made: the `Arc` never leaves this module), so
        // nothing else can reach the value while the borrow lasts.
        Some(unsafe { &mut *Arc::as_ptr(&self.0).cast_mut() })
    }

    /// Put `value` in the cell: in place if no snapshot shares the old one (then
    /// returned), else in a new cell (the old value stays with its snapshots).
    #[inline]
    pub fn replace(&mut self, value: T) -> Option<T> {
        match self.unique_mut() {
            Some(old) => Some(std::mem::replace(old, value)),
            None => {
                self.0 = Arc::new(value);
                None
            }
        }
    }

    /// The value, to change: copied first if a snapshot shares it.
    pub fn make_mut(&mut self) -> &mut T
    where
        T: Clone,
    {
        if self.unique_mut().is_none() {
            self.0 = Arc::new(T::clone(&self.0));
        }
        self.unique_mut().expect("a new cell is not shared")
    }

    /// The value, moved out if no snapshot shares it, else copied.
    pub fn into_inner(self) -> T
    where
        T: Clone,
    {
        Arc::try_unwrap(self.0).unwrap_or_else(|shared| T::clone(&shared))
    }
}

impl<T> Deref for DataCell<T> {
    type Target = T;

    #[inline]
    fn deref(&self) -> &T {
        &self.0
    }
}

impl<T> Base<T> {
    /// A snapshot of a value no cell holds (one restored from a checkpoint).
    #[cfg_attr(not(feature = "durable"), allow(dead_code))]
    pub fn new(value: T) -> Self {
        Base(Arc::new(value))
    }
}

impl<T> Clone for Base<T> {
    #[inline]
    fn clone(&self) -> Self {
        Base(Arc::clone(&self.0))
    }
}

impl<T> Deref for Base<T> {
    type Target = T;

    #[inline]
    fn deref(&self) -> &T {
        &self.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cell_changes_in_place_only_when_no_snapshot_shares_it() {
        let mut cell = DataCell::new(String::from("a"));
        let at = &*cell as *const String;
        assert_eq!(cell.replace("b".into()).as_deref(), Some("a"));
        assert_eq!(&*cell as *const String, at, "in place");
        let snapshot = cell.snapshot();
        assert!(cell.is_now(&snapshot));
        assert!(cell.unique_mut().is_none());
        assert_eq!(cell.replace("c".into()), None, "a new cell");
        assert!(!cell.is_now(&snapshot));
        assert_eq!(
            (&*snapshot[..].to_string(), &*cell[..].to_string()),
            ("b", "c")
        );
        cell.make_mut().push('d');
        assert_eq!(&*cell, "cd");
        let held = cell.snapshot();
        cell.make_mut().push('e');
        assert_eq!((&*held, &*cell), (&"cd".to_string(), &"cde".to_string()));
        drop(held);
        assert_eq!(cell.into_inner(), "cde");
    }

    #[test]
    fn a_snapshot_dropped_on_another_thread_leaves_the_cell_unique() {
        for _ in 0..100 {
            let mut cell = DataCell::new(vec![1u64]);
            let snapshot = cell.snapshot();
            let reader = std::thread::spawn(move || snapshot.iter().sum::<u64>());
            assert_eq!(reader.join().unwrap(), 1);
            cell.unique_mut().expect("the snapshot is gone").push(2);
            assert_eq!(*cell, [1, 2]);
        }
    }
}
