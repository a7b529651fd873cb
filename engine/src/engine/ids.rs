//! Instance ids: unique within an engine, taken by each thread from a block of its
//! own.
//!
//! One shared counter added to by every start was where two workers starting
//! instances met: its cache line moved between their cores at each start, a miss
//! on every start whenever instances start on more than one worker. A thread now
//! takes [`BLOCK`] ids at once and hands them out itself. On one thread ids still count
//! up from 0 one by one; across threads they are unique but not in start order.
//!
//! A durable engine's ids come from its store's reservations (the counter is set
//! past every id the store has seen, or to a block a cluster node reserved), so it
//! takes them from the counter one at a time, as before: a thread's block could
//! run past the reserved range.

use std::cell::Cell;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use super::OwnLine;

/// Ids a thread takes from the counter at once.
const BLOCK: u64 = 64;

/// Tells engines apart in a thread's block (0: no engine).
static ENGINES: AtomicU64 = AtomicU64::new(1);

/// A thread's ids: those of `engine` from `next` up to `end` (excluded).
#[derive(Clone, Copy)]
struct Block {
    engine: u64,
    next: u64,
    end: u64,
}

thread_local! {
    static TAKEN: Cell<Block> = const { Cell::new(Block { engine: 0, next: 0, end: 0 }) };
}

pub(crate) struct InstanceIds {
    /// The first id no thread has taken. On a cache line of its own: the fields
    /// every start reads stay clean in each worker's cache.
    next: OwnLine<AtomicU64>,
    /// This engine, in the threads' blocks.
    engine: u64,
    /// Ids come from a store's reservations: one at a time from `next`.
    from_store: AtomicBool,
}

impl InstanceIds {
    pub(crate) fn new() -> Self {
        Self {
            next: OwnLine(AtomicU64::new(0)),
            engine: ENGINES.fetch_add(1, Ordering::Relaxed),
            from_store: AtomicBool::new(false),
        }
    }

    /// A new id.
    pub(crate) fn next(&self) -> u64 {
        if !self.from_store.load(Ordering::Relaxed) {
            if let Ok(id) = TAKEN.try_with(|taken| self.take_from_block(taken)) {
                return id;
            }
        }
        self.next.fetch_add(1, Ordering::Relaxed)
    }

    fn take_from_block(&self, taken: &Cell<Block>) -> u64 {
        let mut block = taken.get();
        if block.engine != self.engine || block.next == block.end {
            let first = self.next.fetch_add(BLOCK, Ordering::Relaxed);
            block = Block {
                engine: self.engine,
                next: first,
                end: first + BLOCK,
            };
        }
        let id = block.next;
        block.next += 1;
        taken.set(block);
        id
    }

    /// Go on from `next`, one id at a time from now on: the ids are the store's.
    #[cfg(any(feature = "durable", test))]
    pub(crate) fn continue_from(&self, next: u64) {
        self.from_store.store(true, Ordering::Relaxed);
        self.next.store(next, Ordering::Relaxed);
    }

    /// The next id to be handed out (from the store's reservation).
    #[cfg(any(feature = "postgres", test))]
    pub(crate) fn peek(&self) -> u64 {
        self.next.load(Ordering::Relaxed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_thread_counts_up_from_zero_and_engines_do_not_share_a_block() {
        std::thread::spawn(|| {
            let (a, b) = (InstanceIds::new(), InstanceIds::new());
            let mut from_a: Vec<u64> = (0..3).map(|_| a.next()).collect();
            // Another engine on the same thread takes a block of its own ...
            assert_eq!(b.next(), 0);
            // ... and the first takes a new one when it comes back.
            from_a.extend((0..2).map(|_| a.next()));
            assert_eq!(from_a, [0, 1, 2, BLOCK, BLOCK + 1]);
        })
        .join()
        .unwrap();
    }

    #[test]
    fn ids_are_unique_across_threads_and_blocks() {
        let ids = std::sync::Arc::new(InstanceIds::new());
        let threads: Vec<_> = (0..4)
            .map(|_| {
                let ids = ids.clone();
                std::thread::spawn(move || (0..3 * BLOCK).map(|_| ids.next()).collect::<Vec<_>>())
            })
            .collect();
        let mut all: Vec<u64> = threads
            .into_iter()
            .flat_map(|t| t.join().unwrap())
            .collect();
        all.sort_unstable();
        let n = all.len();
        all.dedup();
        assert_eq!(all.len(), n, "an id was handed out twice");
        assert_eq!(n as u64, 4 * 3 * BLOCK);
    }

    #[test]
    fn ids_from_a_store_come_one_at_a_time_from_where_it_said() {
        std::thread::spawn(|| {
            let ids = InstanceIds::new();
            assert_eq!(ids.next(), 0);
            ids.continue_from(1000);
            assert_eq!((ids.next(), ids.next(), ids.peek()), (1000, 1001, 1002));
        })
        .join()
        .unwrap();
    }
}
