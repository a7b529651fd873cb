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
    #[test]
    fn forgotten_elements_are_not_dropped_and_the_buffer_stays() {
        let counted = std::sync::Arc::new(());
        let mut vec = vec![std::sync::Arc::clone(&counted); 3];
        let capacity = vec.capacity();
        super::forget_elements(&mut vec);
        assert!(vec.is_empty() && vec.capacity() == capacity);
        assert_eq!(
            std::sync::Arc::strong_count(&counted),
            4,
            "forgotten, not dropped"
        );
        vec.push(std::sync::Arc::clone(&counted));
        drop(vec);
        assert_eq!(std::sync::Arc::strong_count(&counted), 4);
    }
}
