//! What the engine does with a `Vec` beyond its safe API.

/// Empty `vec` without running its elements' drop glue: they are forgotten, as
/// `mem::forget` would. For elements known to own nothing (a history whose steps
/// hold no heap memory), it saves a loop over them; for any other it leaks what
/// they own, which is never unsound.
#[inline]
pub(crate) fn forget_elements<T>(vec: &mut Vec<T>) {
    // SAFETY: length 0 is within the capacity and exposes no element; the
    // elements are not read or dropped again (forgotten).
    unsafe { vec.set_len(0) }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};

    static DROPS: AtomicUsize = AtomicUsize::new(0);

    /// Counts its drops; owns nothing, so forgetting it leaks nothing.
    struct Counted;

    impl Drop for Counted {
        fn drop(&mut self) {
            DROPS.fetch_add(1, Ordering::Relaxed);
        }
    }

    #[test]
    fn forgotten_elements_are_not_dropped_and_the_buffer_stays() {
        let mut vec = vec![Counted, Counted, Counted];
        let capacity = vec.capacity();
        super::forget_elements(&mut vec);
        assert!(vec.is_empty() && vec.capacity() == capacity);
        assert_eq!(DROPS.load(Ordering::Relaxed), 0, "forgotten, not dropped");
        vec.push(Counted);
        drop(vec);
        assert_eq!(DROPS.load(Ordering::Relaxed), 1);
    }
}
