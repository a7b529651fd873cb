//! A task run's box, kept for the next run: a run that ended gives its allocation
//! back (`recycle`), and the next run of a future of the same size and alignment is
//! written into it (`boxed`) instead of a new one. A ready-at-once task so costs no
//! allocation, however many steps an instance takes (the chain bench: one
//! `malloc` and one `free` per node step, ~170 instructions, before).
//!
//! One spare per thread — the loop runs a ready task and commits it on the same
//! thread — so a parked instance carries nothing for it, and a thread keeps at most
//! one box of at most `MAX_SPARE` bytes.
//!
//! The safe form (a new box per run) cannot reuse memory across types; this is the
//! engine's only use of raw allocation outside the intake.

use std::alloc::Layout;
use std::cell::Cell;
use std::future::Future;
use std::pin::Pin;
use std::ptr::NonNull;

/// The largest future whose box is kept: a thread holds at most this much idle.
const MAX_SPARE: usize = 16 * 1024;

/// Memory a dropped run's box held: allocated by the global allocator with `layout`,
/// holding no value.
struct Spare {
    ptr: NonNull<u8>,
    layout: Layout,
}

impl Drop for Spare {
    fn drop(&mut self) {
        // SAFETY: `ptr` was allocated by the global allocator with `layout` (a
        // `Box`'s allocation, `recycle`), holds no value, and is owned by this
        // `Spare` alone: it is freed once, here.
        unsafe { std::alloc::dealloc(self.ptr.as_ptr(), self.layout) }
    }
}

thread_local! {
    static SPARE: Cell<Option<Spare>> = const { Cell::new(None) };
}

/// Box the future `make` makes as a pinned `dyn Future`, in this thread's spare box
/// when it has the future's layout.
///
/// Made where it is written, not made on the stack and copied in: a future just
/// made is its captures and a one-byte state, and a copy's wider loads over that
/// byte's store stall (store forwarding), on every task run.
#[inline(always)]
pub(crate) fn boxed<T, F>(make: impl FnOnce() -> F) -> Pin<Box<dyn Future<Output = T> + Send>>
where
    F: Future<Output = T> + Send + 'static,
{
    let layout = Layout::new::<F>();
    if layout.size() == 0 || layout.size() > MAX_SPARE {
        return Box::pin(make());
    }
    let Some(spare) = SPARE.try_with(Cell::take).ok().flatten() else {
        return Box::pin(make());
    };
    if spare.layout != layout {
        // Kept for a run of its own size; this one gets a box of its own.
        let _ = SPARE.try_with(|cell| cell.set(Some(spare)));
        return Box::pin(make());
    }
    let ptr = spare.ptr.as_ptr().cast::<F>();
    std::mem::forget(spare);
    // SAFETY: `ptr` was allocated by the global allocator with `layout`, which is
    // `Layout::new::<F>()` (checked above), and holds no value: writing an `F` into
    // it makes it what `Box::<F>::from_raw` requires — memory from the global
    // allocator, with `F`'s layout, holding a valid `F`. Ownership passes from the
    // forgotten `Spare` to the box, which frees it (or gives it back) once.
    unsafe {
        ptr.write(make());
        Box::into_pin(Box::from_raw(ptr))
    }
}

/// Drop a run, keeping its box as this thread's spare (replacing the one it had).
#[inline]
pub(crate) fn recycle<T>(run: Pin<Box<dyn Future<Output = T> + Send>>) {
    let layout = Layout::for_value(&*run);
    if layout.size() == 0 || layout.size() > MAX_SPARE {
        return drop(run);
    }
    // SAFETY: the future is dropped in place before its memory is used for anything
    // else, which is all `Pin` asks of pinned memory; it is not touched as a future
    // again (the box is gone).
    let raw = Box::into_raw(unsafe { Pin::into_inner_unchecked(run) });
    // SAFETY: `raw` came from `Box::into_raw` just above: valid, and dropped once.
    // Were the drop to panic, the memory leaks (no `Spare` owns it yet): no double
    // free.
    unsafe { std::ptr::drop_in_place(raw) };
    // A box's pointer is never null; `layout` is the one the box was allocated with
    // (a non-zero-sized `Box<F>` allocates `Layout::new::<F>()` from the global
    // allocator, and `for_value` on the `dyn` reads `F`'s size and alignment).
    if let Some(ptr) = NonNull::new(raw.cast::<u8>()) {
        // Without a thread-local (the thread is ending) the spare is freed at once.
        let _ = SPARE.try_with(|cell| cell.set(Some(Spare { ptr, layout })));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;

    struct Counted(Arc<AtomicUsize>);
    impl Drop for Counted {
        fn drop(&mut self) {
            self.0.fetch_add(1, Ordering::Relaxed);
        }
    }

    fn poll<T>(run: &mut Pin<Box<dyn Future<Output = T> + Send>>) -> T {
        let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
        match run.as_mut().poll(&mut cx) {
            std::task::Poll::Ready(v) => v,
            std::task::Poll::Pending => panic!("pending"),
        }
    }

    /// One future type, so two runs of it have one layout.
    async fn holding(held: Counted, value: u64) -> u64 {
        let _held = held;
        value
    }

    #[test]
    fn a_recycled_box_is_reused_for_a_future_of_its_layout_and_values_are_dropped() {
        let drops = Arc::new(AtomicUsize::new(0));
        let held = Counted(drops.clone());
        let mut first = boxed(|| holding(held, 1));
        assert_eq!(poll(&mut first), 1);
        let at = &*first as *const _ as *const u8;
        recycle(first);
        assert_eq!(drops.load(Ordering::Relaxed), 1, "the value was dropped");
        let held = Counted(drops.clone());
        let mut second = boxed(|| holding(held, 2));
        assert_eq!(at, &*second as *const _ as *const u8, "the same box");
        assert_eq!(poll(&mut second), 2);
        // A future of another layout gets its own box; the spare stays.
        let big = [7u8; 100];
        let mut other = boxed(move || async move { big[99] as u64 });
        assert_ne!(at, &*other as *const _ as *const u8);
        assert_eq!(poll(&mut other), 7);
        drop(other);
        // A pending future dropped through `recycle` drops what it holds.
        let held = Counted(drops.clone());
        let pending = boxed(move || async move {
            let _held = held;
            std::future::pending::<()>().await;
            3u64
        });
        recycle(pending);
        recycle(second);
        assert_eq!(drops.load(Ordering::Relaxed), 3);
        // Zero-sized futures are not kept.
        recycle(boxed(|| std::future::ready(())));
    }
}
