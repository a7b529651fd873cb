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
//! entries with a compare-and-swap, so there is no ABA on the queue's contents. The
//! closed sentinel is the address of a static, which no entry (a heap allocation)
//! can ever have: once the receiver closes, a send hands its value back.
//!
//! Provenance: a sender links its entry to the head it last loaded. That head may have
//! been taken and freed since, and a new entry allocated at the same address — the
//! compare-and-swap then succeeds (the addresses match), but the loaded pointer's
//! provenance is the freed allocation's. So an entry keeps the *address* of the next
//! one (`next: usize`), every entry's provenance is exposed when it is published, and
//! the receiver rebuilds the pointer from the exposed provenance
//! (`ptr::with_exposed_provenance_mut`), which is that of the live entry at that
//! address. The model is checked with loom (`--cfg thresh_loom`, see `.ci/run`); Miri
//! needs a nightly toolchain, which this project's machines do not have.

use std::ptr;
use std::sync::Arc;

#[cfg(thresh_loom)]
use loom::sync::atomic::{AtomicPtr, Ordering};
#[cfg(not(thresh_loom))]
use std::sync::atomic::{AtomicPtr, Ordering};

use std::future::poll_fn;
use std::task::{Context, Poll};

use futures_util::task::AtomicWaker;

/// A sender: cheap to clone; sending never blocks.
///
/// One with no queue (`Intake::none`) hands every value back, as a closed one does.
/// The loop's own sender starts so and makes its queue on first need
/// ([`Intake::made`]): an instance that ends in its first step with no one to send
/// to it (no track task, handle, mailbox or child) never allocates one.
pub(crate) struct Intake<T> {
    queue: Option<Arc<Queue<T>>>,
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
    head: AtomicPtr<Cell<T>>,
    /// Wakes the receiver when it waits for an entry.
    arrived: AtomicWaker,
}

struct Cell<T> {
    value: T,
    /// The address of the cell pushed before this one (0: none, or the closed
    /// sentinel's); its provenance is exposed (see the module doc).
    next: usize,
}

/// Whose address marks a closed queue: a static is never a heap cell.
static CLOSED: u8 = 0;

/// The sentinel of a closed queue. Never dereferenced, only compared.
fn closed<T>() -> *mut Cell<T> {
    ptr::addr_of!(CLOSED).cast_mut().cast()
}

/// The pointer to the cell at `addr`, with the provenance exposed when it was
/// published.
fn cell_at<T>(addr: usize) -> *mut Cell<T> {
    ptr::with_exposed_provenance_mut(addr)
}

/// A new intake: its first sender and its receiver.
#[cfg(test)]
pub(crate) fn channel<T>() -> (Intake<T>, IntakeReceiver<T>) {
    let mut sender = Intake::none();
    let receiver = IntakeReceiver::of(&mut sender);
    (sender, receiver)
}

fn new_queue<T>() -> Arc<Queue<T>> {
    Arc::new(Queue {
        head: AtomicPtr::new(ptr::null_mut()),
        arrived: AtomicWaker::new(),
    })
}

impl<T> IntakeReceiver<T> {
    /// The receiver of `sender`'s queue (made now if it had none). The intake's one
    /// receiver: called once per queue (by the loop's spawn, `event_loop.rs`).
    pub fn of(sender: &mut Intake<T>) -> Self {
        IntakeReceiver {
            queue: Arc::clone(sender.queue()),
            ready: Vec::new(),
            closed: false,
        }
    }
}

impl<T> Clone for Intake<T> {
    fn clone(&self) -> Self {
        Self {
            queue: self.queue.clone(),
        }
    }
}

impl<T> Intake<T> {
    /// A sender with no queue: every send hands its value back.
    pub fn none() -> Self {
        Self { queue: None }
    }

    /// Whether this sender has its queue.
    pub fn is_made(&self) -> bool {
        self.queue.is_some()
    }

    /// This sender, with its queue made if it had none.
    pub fn made(&mut self) -> &Self {
        self.queue();
        self
    }

    fn queue(&mut self) -> &Arc<Queue<T>> {
        self.queue.get_or_insert_with(new_queue)
    }

    /// Whether the receiver has closed the intake (its loop ended, however it
    /// ended), or there is no queue: a send would be refused.
    pub fn is_closed(&self) -> bool {
        self.queue
            .as_ref()
            .is_none_or(|queue| queue.head.load(Ordering::Acquire) == closed())
    }

    /// Which queue this sender sends to (0: none): the same for every sender of
    /// one queue while it lives (a durable signal to woken instances picks their
    /// subscriptions by it, feature `durable`).
    #[cfg(feature = "durable")]
    pub fn queue_id(&self) -> usize {
        self.queue.as_ref().map_or(0, |q| Arc::as_ptr(q) as usize)
    }

    /// Send `value`; `Err(value)` if the receiver has closed the intake (or there is
    /// no queue).
    pub fn send(&self, value: T) -> Result<(), T> {
        let Some(queue) = &self.queue else {
            return Err(value);
        };
        let cell = Box::into_raw(Box::new(Cell { value, next: 0 }));
        // Exposed before it is published, so the receiver can rebuild a pointer to
        // it from the address alone.
        let _ = cell.expose_provenance();
        let mut head = queue.head.load(Ordering::Acquire);
        loop {
            if head == closed() {
                // SAFETY: `cell` came from `Box::into_raw` above and was never
                // published, so this sender still owns it alone.
                let cell = unsafe { Box::from_raw(cell) };
                return Err(cell.value);
            }
            // SAFETY: as above — not published yet, owned by this sender.
            unsafe { (*cell).next = head.addr() };
            match queue
                .head
                .compare_exchange_weak(head, cell, Ordering::AcqRel, Ordering::Acquire)
            {
                Ok(_) => break,
                Err(now) => head = now,
            }
        }
        queue.arrived.wake();
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

    /// A sender on this receiver's queue: a loop that goes on from an evicted
    /// one's intake sends to itself through it (feature `durable`).
    #[cfg(feature = "durable")]
    pub fn sender(&self) -> Intake<T> {
        Intake {
            queue: Some(Arc::clone(&self.queue)),
        }
    }

    /// Whether no sender is left and nothing is queued: nothing can arrive any more
    /// (a sender is made only from another, or from this receiver). An evicted
    /// instance nothing can reach is then kept without its intake (feature
    /// `durable`).
    #[cfg(feature = "durable")]
    pub fn is_unreachable(&mut self) -> bool {
        // Acquire, as `Arc::get_mut`'s look: senders dropped on other threads, and
        // what they sent, came before.
        if Arc::strong_count(&self.queue) != 1 {
            return false;
        }
        std::sync::atomic::fence(Ordering::Acquire);
        !self.any_queued(|_| true)
    }

    /// Wait until something is queued (or the intake is closed), receiving nothing:
    /// what an evicted instance's intake is watched with (feature `durable`).
    #[cfg(feature = "durable")]
    pub async fn ready(&mut self) {
        poll_fn(|cx| {
            if self.closed || self.any_queued(|_| true) {
                return Poll::Ready(());
            }
            // Registered before the second look, so a send in between is not missed.
            self.queue.arrived.register(cx.waker());
            match self.any_queued(|_| true) {
                true => Poll::Ready(()),
                false => Poll::Pending,
            }
        })
        .await
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
    fn take(&mut self, head: *mut Cell<T>) {
        let mut cell = head;
        while !cell.is_null() && cell != closed() {
            // SAFETY: the swap that took the stack made the receiver its only owner;
            // every cell in it came from `Box::into_raw` in `send`, and the links
            // are rebuilt from exposed provenance (module doc).
            let boxed = unsafe { Box::from_raw(cell) };
            cell = cell_at(boxed.next);
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
        let mut cell = self.head.load(Ordering::Acquire);
        while !cell.is_null() && cell != closed() {
            // SAFETY: the last owner of the queue owns every cell still in it.
            let boxed = unsafe { Box::from_raw(cell) };
            cell = cell_at(boxed.next);
        }
    }
}

// SAFETY: entries are handed from sender to receiver through the atomic head with
// release/acquire ordering; a `T` crosses threads exactly as it would through a
// channel, so `Send` values make a `Send + Sync` queue.
unsafe impl<T: Send> Send for Queue<T> {}
// SAFETY: as above.
unsafe impl<T: Send> Sync for Queue<T> {}

#[cfg(test)]
mod tests {
    use super::*;

    /// `ready` (an evicted instance's watch) wakes on a send from another thread and
    /// leaves what was sent queued, in order; a sender made from the receiver feeds
    /// the same queue.
    #[cfg(feature = "durable")]
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn ready_wakes_on_a_send_and_takes_nothing() {
        for round in 0..200 {
            let (tx, mut rx) = channel::<usize>();
            let sender = std::thread::spawn(move || {
                tx.send(round).unwrap();
                tx.send(round + 1).unwrap();
            });
            rx.ready().await;
            sender.join().unwrap();
            rx.sender().send(round + 2).unwrap();
            assert_eq!(rx.try_recv(), Some(round));
            assert_eq!(rx.try_recv(), Some(round + 1));
            assert_eq!(rx.try_recv(), Some(round + 2));
            assert_eq!(rx.try_recv(), None);
        }
    }

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
        let counted = Arc::new(());
        let (tx, rx) = channel::<Arc<()>>();
        for _ in 0..10 {
            tx.send(Arc::clone(&counted)).unwrap();
        }
        assert_eq!(Arc::strong_count(&counted), 11);
        drop(rx);
        assert!(
            tx.send(Arc::clone(&counted)).is_err(),
            "closed by its receiver"
        );
        drop(tx);
        assert_eq!(
            Arc::strong_count(&counted),
            1,
            "every queued value dropped once"
        );
    }
}

/// The intake's model under loom, which explores every interleaving of two senders
/// and a receiver that takes, closes and drains. Run with
/// `RUSTFLAGS="--cfg thresh_loom" cargo test -p thresh --lib loom_model --release`
/// (`.ci/run` does).
#[cfg(all(test, thresh_loom))]
mod loom_model {
    use super::*;

    #[test]
    fn every_value_is_received_or_handed_back_once() {
        loom::model(|| {
            let (tx, mut rx) = channel::<usize>();
            let tx2 = tx.clone();
            let a = loom::thread::spawn(move || {
                (0..2).filter_map(|v| tx.send(v).err()).collect::<Vec<_>>()
            });
            let b = loom::thread::spawn(move || tx2.send(10).err());
            let mut got: Vec<usize> = rx.try_recv().into_iter().collect();
            rx.close();
            got.extend(std::iter::from_fn(|| rx.try_recv()));
            got.extend(a.join().unwrap());
            got.extend(b.join().unwrap());
            got.sort_unstable();
            assert_eq!(got, [0, 1, 10]);
        });
    }

    #[test]
    fn a_queue_dropped_with_cells_frees_them() {
        loom::model(|| {
            let (tx, rx) = channel::<Box<usize>>();
            let sender = loom::thread::spawn(move || {
                let _ = tx.send(Box::new(1));
                let _ = tx.send(Box::new(2));
            });
            drop(rx);
            sender.join().unwrap();
        });
    }
}
