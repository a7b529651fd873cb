//! Asking ahead for the memory a burst of ends touches next: a stride prefetcher
//! in software, over the packed ends' blocks as they are made (`EndRef::packed`)
//! and over every end's block as it is freed (`EndRef`'s drop).
//!
//! A service that starts many instances and then awaits them (a burst) makes one
//! block per instance, one after another, and frees them in the same order. An
//! allocator hands such a burst out of fresh memory in address order (glibc from
//! its top chunk, a size-class allocator from its page), so consecutive blocks lie
//! a fixed stride apart: the next block's memory, and the allocator's header in
//! front of the one after it, are known before they are asked for. Unasked, each
//! is a cache miss the core waits on — at the allocator's lock, whose locked
//! instruction waits for every pending store, or when the next end is read. Those
//! waits were a fifth of `--bench core -- single`'s time and more of
//! `parallel10`'s (ARCHITECTURE.md, "Asking ahead").
//!
//! Each thread follows its own two trails, of blocks made and of blocks freed: a
//! trail whose last two steps had the same stride is taken to go on, and the lines
//! a few strides on are prefetched. A prefetch is a hint: wrong, it costs a few
//! instructions and a line of cache, never a fault (an address past the heap is
//! not read) and never a changed result.

use std::cell::Cell;

/// Blocks ahead on a trail of made blocks whose lines are asked for: far enough
/// that the lines arrive before the block is made (an instance's first step takes
/// a few hundred nanoseconds, a line from memory about a hundred).
const MADE_AHEAD: usize = 2;

/// Blocks ahead on a trail of freed blocks whose first lines (the end a handle
/// reads) are asked for.
const FREED_AHEAD: usize = 2;

/// Blocks ahead on a trail of freed blocks whose allocator's header word is asked
/// for: freeing a block, glibc reads the header of the block two on (to know
/// whether the next one is free), and that read was the longest wait of a burst
/// of frees — asked for two frees early it was still half of it, eight early
/// (ten blocks on) it is not (`--bench core -- single` CPU per run -4 %).
const FREED_HEADER_AHEAD: usize = 10;

/// The most lines of one block asked for ahead of its making: a packed end is at
/// most `history::PACKED_MOST` steps (about 4 KiB).
const MOST_LINES: usize = 64;

/// A stride past which blocks are not taken to be a burst's.
const LONGEST_STRIDE: usize = 1 << 16;

const LINE: usize = 64;

/// The word in front of a block where an allocator keeps its size (glibc's).
const HEADER: usize = 8;

/// Where a thread's last block on a trail was, and the stride that led to it.
#[derive(Clone, Copy)]
struct Trail {
    last: usize,
    stride: usize,
}

impl Trail {
    const NONE: Trail = Trail { last: 0, stride: 0 };

    /// Steps to `at`: the stride when it is the one that led to the last block
    /// (a steady trail), else `None`. Strides go either way (wrapping).
    fn step(trail: &'static std::thread::LocalKey<Cell<Trail>>, at: usize) -> Option<usize> {
        // `try_with`: an end dropped as its thread ends asks nothing ahead.
        trail
            .try_with(|cell| {
                let before = cell.get();
                let stride = at.wrapping_sub(before.last);
                cell.set(Trail { last: at, stride });
                let steady = stride == before.stride
                    && (stride <= LONGEST_STRIDE || stride.wrapping_neg() <= LONGEST_STRIDE);
                steady.then_some(stride)
            })
            .ok()
            .flatten()
    }
}

thread_local! {
    static MADE: Cell<Trail> = const { Cell::new(Trail::NONE) };
    static FREED: Cell<Trail> = const { Cell::new(Trail::NONE) };
}

/// A block of `size` bytes was made at `at`: on a steady trail, ask for the lines
/// of the block `MADE_AHEAD` strides on (which the instance that makes it writes),
/// from the allocator's header word in front of it, and for the header word of the
/// block after that (which the allocator writes when it makes that block).
#[inline]
pub(super) fn made(at: *const u8, size: usize) {
    let at = at as usize;
    let Some(stride) = Trail::step(&MADE, at) else {
        return;
    };
    let header = at
        .wrapping_add(stride.wrapping_mul(MADE_AHEAD))
        .wrapping_sub(HEADER);
    for line in 0..(size + HEADER).div_ceil(LINE).min(MOST_LINES) {
        prefetch(header.wrapping_add(line * LINE));
    }
    prefetch(header.wrapping_add(stride));
}

/// The block at `at` is about to be freed: on a steady trail, ask for the first
/// two lines of the block `FREED_AHEAD` strides on (its end, which its handle
/// reads), and for the header word of the block `FREED_HEADER_AHEAD` strides on
/// (which the allocator reads, to merge, when it frees the block two before it).
#[inline]
pub(super) fn freeing(at: *const u8) {
    let at = at as usize;
    let Some(stride) = Trail::step(&FREED, at) else {
        return;
    };
    let ahead = at.wrapping_add(stride.wrapping_mul(FREED_AHEAD));
    prefetch(ahead);
    prefetch(ahead.wrapping_add(LINE));
    prefetch(
        at.wrapping_add(stride.wrapping_mul(FREED_HEADER_AHEAD))
            .wrapping_sub(HEADER),
    );
}

/// Ask for the line holding `at` to be brought into the cache. A read prefetch,
/// for lines about to be written too: a line no other core holds comes in
/// exclusive, and the write that follows needs no further fetch (`prefetchw`
/// measured no better, and needs a feature the baseline target lacks).
#[inline(always)]
fn prefetch(at: usize) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: every x86_64 core has SSE; a prefetch reads nothing and never faults,
    // whatever the address.
    unsafe {
        std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(at as *const i8)
    };
    #[cfg(not(target_arch = "x86_64"))]
    let _ = at;
}

#[cfg(test)]
mod tests {
    use super::*;

    thread_local! {
        static TEST: Cell<Trail> = const { Cell::new(Trail::NONE) };
    }

    #[test]
    fn a_trail_is_steady_after_two_equal_strides_either_way() {
        assert_eq!(Trail::step(&TEST, 1000), None);
        assert_eq!(Trail::step(&TEST, 1352), None, "one stride is not a trail");
        assert_eq!(Trail::step(&TEST, 1704), Some(352));
        assert_eq!(Trail::step(&TEST, 2056), Some(352));
        assert_eq!(Trail::step(&TEST, 9000), None, "a jump breaks it");
        assert_eq!(Trail::step(&TEST, 8648), None);
        assert_eq!(Trail::step(&TEST, 8296), Some(352usize.wrapping_neg()));
        // Blocks a long way apart are not a burst's.
        let far = LONGEST_STRIDE + 16;
        Trail::step(&TEST, 1 << 30);
        Trail::step(&TEST, (1 << 30) + far);
        assert_eq!(Trail::step(&TEST, (1 << 30) + 2 * far), None);
    }

    #[test]
    fn asking_ahead_of_any_address_is_harmless() {
        // Prefetches of addresses nothing is mapped at, or at the top of the
        // address space, neither fault nor change anything.
        for at in [0usize, 64, 1 << 47, usize::MAX - 63, usize::MAX] {
            for _ in 0..3 {
                made(at as *const u8, 4096);
                freeing(at as *const u8);
            }
        }
        for step in 0..4usize {
            made((usize::MAX - step * 352) as *const u8, 352);
            freeing((usize::MAX - step * 352) as *const u8);
        }
    }
}
