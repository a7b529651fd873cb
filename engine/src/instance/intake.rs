//! The loop's intake: many senders (its tracks, its handles, the hub), one receiver
//! (the loop). Reports, commands and deliveries all arrive here, in the order they
//! were sent by each sender.
//!
//! Why not tokio's `mpsc`: its unbounded channel allocates a channel head and a
//! first block of 32 slots up front — about 1 KiB that every parked instance would
//! carry for its whole life (most of them waiting for one message). This queue is a
//! lock-free stack of boxed entries: a sender pushes its entry with one
//! compare-and-swap, the receiver takes the whole stack with one swap and reverses it
//! into arrival order. Empty, it is one pointer and an `AtomicWaker`; the loop waits
//! on it through `poll_recv`, so its waiting adds nothing to the loop's future.
//!
//! Safety argument, in short: an entry is allocated by its sender and published by
//! the successful compare-and-swap (release); from then on only the receiver touches
//! it, after taking the stack with a swap (acquire). The receiver never removes single
//! entries with a compare-and-swap, so there is no ABA. `CLOSED` is a sentinel that
//! is never an entry's address: once the receiver closes, a send hands its value back.

use std::ptr::{self, NonNull};
use std::sync::atomic::{AtomicPtr, Ordering};
use std::sync::Arc;

use std::future::poll_fn;
use std::task::{Context, Poll};

use futures_util::task::AtomicWaker;

/// A sender: cheap to clone; sending never blocks.
pub(crate) struct Intake<T> {
    queue: Arc<Queue<T>>,
}

/// The loop's end.
pub(crate) struct IntakeReceiver<T> {
    queue: Arc<Queue<T>>,
    /// Taken entries, newest first: `pop` yields the oldest. Emptied before the
    /// next take, so taken stacks never interleave.
    ready: Vec<T>,
    closed: bool,
}

struct Queue<T> {
    /// Null when empty, [`closed`] once the receiver closed it, else the newest entry.
    head: AtomicPtr<Entry<T>>,
    /// Wakes the receiver when it waits for an entry.
    arrived: AtomicWaker,
}

struct Entry<T> {
    value: T,
    /// The entry pushed before this one.
    next: *mut Entry<T>,
}

/// The sentinel of a closed queue: a well-aligned address no allocation has.
fn closed<T>() -> *mut Entry<T> {
    NonNull::dangling().as_ptr()
}

/// A new intake: its first sender and its receiver.
pub(crate) fn channel<T>() -> (Intake<T>, IntakeReceiver<T>) {
    let queue = Arc::new(Queue {
        head: AtomicPtr::new(ptr::null_mut()),
        arrived: AtomicWaker::new(),
    });
    let receiver = IntakeReceiver {
        queue: Arc::clone(&queue),
        ready: Vec::new(),
        closed: false,
    };
    (Intake { queue }, receiver)
}

impl<T> Clone for Intake<T> {
    fn clone(&self) -> Self {
        Self {
            queue: Arc::clone(&self.queue),
        }
    }
}

impl<T> Intake<T> {
    /// Send `value`; `Err(value)` if the receiver has closed the intake.
    pub fn send(&self, value: T) -> Result<(), T> {
        let entry = Box::into_raw(Box::new(Entry {
            value,
            next: ptr::null_mut(),
        }));
        let mut head = self.queue.head.load(Ordering::Acquire);
        loop {
            if head == closed() {
                // SAFETY: `entry` came from `Box::into_raw` above and was never
                // published, so this sender still owns it alone.
                let entry = unsafe { Box::from_raw(entry) };
                return Err(entry.value);
            }
            // SAFETY: as above — not published yet, owned by this sender.
            unsafe { (*entry).next = head };
            match self.queue.head.compare_exchange_weak(
                head,
                entry,
                Ordering::AcqRel,
                Ordering::Acquire,
            ) {
                Ok(_) => break,
                Err(now) => head = now,
            }
        }
        self.queue.arrived.wake();
        Ok(())
    }
}

impl<T> IntakeReceiver<T> {
    /// The next entry, waiting for one if there is none; `None` once closed and
    /// drained.
    pub async fn recv(&mut self) -> Option<T> {
        poll_fn(|cx| self.poll_recv(cx)).await
    }

    fn poll_recv(&mut self, cx: &mut Context<'_>) -> Poll<Option<T>> {
        if let Some(value) = self.try_recv() {
            return Poll::Ready(Some(value));
        }
        if self.closed {
            return Poll::Ready(None);
        }
        // Registered before the second look, so a send in between is not missed.
        self.queue.arrived.register(cx.waker());
        match self.try_recv() {
            Some(value) => Poll::Ready(Some(value)),
            None => Poll::Pending,
        }
    }

    /// The next entry if one is there.
    pub fn try_recv(&mut self) -> Option<T> {
        if self.ready.is_empty() && !self.closed {
            let taken = self.queue.head.swap(ptr::null_mut(), Ordering::AcqRel);
            self.take(taken);
        }
        self.ready.pop()
    }

    /// Whether something already sent satisfies `matches`, without receiving it: what
    /// is queued stays queued, in order.
    pub fn any_queued(&mut self, matches: impl Fn(&T) -> bool) -> bool {
        if !self.closed {
            // Taken stacks go under what is ready (older first out), as in `close`.
            let older = std::mem::take(&mut self.ready);
            let taken = self.queue.head.swap(ptr::null_mut(), Ordering::AcqRel);
            self.take(taken);
            self.ready.extend(older);
        }
        self.ready.iter().any(matches)
    }

    /// Close the intake: later sends hand their value back. What was sent before
    /// stays to be received (`try_recv`).
    pub fn close(&mut self) {
        if !self.closed {
            let taken = self.queue.head.swap(closed(), Ordering::AcqRel);
            self.closed = true;
            // What is in `ready` already is older than what was just taken, so it
            // goes to the end (popped first).
            let older = std::mem::take(&mut self.ready);
            self.take(taken);
            self.ready.extend(older);
        }
    }

    /// Push a taken stack onto `ready`. The stack runs newest first, and `ready` pops
    /// from its end, so the oldest entry comes out first.
    fn take(&mut self, mut entry: *mut Entry<T>) {
        while !entry.is_null() && entry != closed() {
            // SAFETY: the swap that took the stack made the receiver its only owner;
            // every entry in it came from `Box::into_raw` in `send`.
            let boxed = unsafe { Box::from_raw(entry) };
            entry = boxed.next;
            self.ready.push(boxed.value);
        }
    }
}

/// A receiver dropped without closing (its loop was dropped: a runtime shut down)
/// closes the intake now: later sends fail at once — a handle's request gets its
/// answer "ended", the hub keeps its message — and what was queued is dropped.
impl<T> Drop for IntakeReceiver<T> {
    fn drop(&mut self) {
        self.close();
    }
}

impl<T> Drop for Queue<T> {
    fn drop(&mut self) {
        let mut entry = *self.head.get_mut();
        while !entry.is_null() && entry != closed() {
            // SAFETY: the last owner of the queue owns every entry still in it.
            let boxed = unsafe { Box::from_raw(entry) };
            entry = boxed.next;
        }
    }
}

// SAFETY: entries are handed from sender to receiver through the atomic head with
// release/acquire ordering; a `T` crosses threads exactly as it would through a
// channel, so `Send` values make a `Send + Sync` queue.
unsafe impl<T: Send> Send for Queue<T> {}
unsafe impl<T: Send> Sync for Queue<T> {}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
    async fn every_value_arrives_once_in_each_senders_order() {
        for _ in 0..50 {
            let (tx, mut rx) = channel::<(usize, usize)>();
            let senders: Vec<_> = (0..4)
                .map(|s| {
                    let tx = tx.clone();
                    tokio::spawn(async move {
                        for i in 0..500 {
                            tx.send((s, i)).unwrap();
                            if i % 50 == 0 {
                                tokio::task::yield_now().await;
                            }
                        }
                    })
                })
                .collect();
            let mut next = [0usize; 4];
            for _ in 0..2000 {
                let (s, i) = rx.recv().await.unwrap();
                assert_eq!(i, next[s], "sender {s} out of order");
                next[s] += 1;
            }
            for sender in senders {
                sender.await.unwrap();
            }
            assert_eq!(rx.try_recv(), None);
        }
    }

    #[test]
    fn looking_at_what_is_queued_keeps_it_queued_in_order() {
        let (tx, mut rx) = channel::<usize>();
        tx.send(1).unwrap();
        assert_eq!(rx.try_recv(), Some(1));
        tx.send(2).unwrap();
        tx.send(3).unwrap();
        assert!(rx.any_queued(|v| *v == 3));
        tx.send(4).unwrap();
        assert!(rx.any_queued(|v| *v == 4));
        assert!(!rx.any_queued(|v| *v == 1));
        let got: Vec<_> = std::iter::from_fn(|| rx.try_recv()).collect();
        assert_eq!(got, [2, 3, 4]);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
    async fn a_value_sent_while_closing_is_received_or_handed_back() {
        for _ in 0..200 {
            let (tx, mut rx) = channel::<usize>();
            let senders: Vec<_> = (0..3)
                .map(|s| {
                    let tx = tx.clone();
                    tokio::spawn(async move {
                        let mut back = Vec::new();
                        for i in 0..200 {
                            if let Err(v) = tx.send(s * 1000 + i) {
                                back.push(v);
                            }
                        }
                        back
                    })
                })
                .collect();
            let mut got = Vec::new();
            while got.len() < 50 {
                got.extend(rx.recv().await);
            }
            rx.close();
            while let Some(v) = rx.try_recv() {
                got.push(v);
            }
            for sender in senders {
                got.extend(sender.await.unwrap());
            }
            got.sort_unstable();
            let all: Vec<usize> = (0..3)
                .flat_map(|s| (0..200).map(move |i| s * 1000 + i))
                .collect();
            assert_eq!(got, all, "a value was lost or doubled");
            assert_eq!(rx.recv().await, None);
        }
    }

    #[test]
    fn what_is_left_is_freed_with_the_queue() {
        let (tx, rx) = channel::<Box<u64>>();
        for i in 0..10 {
            tx.send(Box::new(i)).unwrap();
        }
        drop(rx);
        drop(tx);
    }
}
