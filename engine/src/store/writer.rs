//! The [`Writer`]: one thread per store that batches everyone's writes (group commit).
//!
//! Submitters (instance loops, the broker, the engine) hand it writes and may keep a
//! [`Receipt`] that resolves once those writes are durable. The thread takes
//! everything queued, coalesces, applies it as ONE transaction with
//! [`Store::apply`], and resolves every receipt of the batch. Idle, a single write
//! goes at once; under load a batch holds many instances' writes and costs one
//! commit (one fsync for SQLite).
//!
//! **Coalescing.** Within a batch, a `Put` of an instance is dropped when a later
//! `Put` of the same instance with a greater `seq` follows it and no `End` of that
//! instance nor any `Purge` lies between them: the later checkpoint contains
//! everything the earlier one did. Only `Put`s are ever dropped — a `Consume`, a
//! buffered message or any other write that rode with an earlier put stays, in its
//! place, so a message is still consumed in the same transaction as a checkpoint that
//! includes its effect (the later one). A dropped put is not checked (it is never
//! read by anyone); a later put with a smaller `seq` is kept, and fails as stale.
//!
//! **Failures.** If the batch fails and held several submissions, the writer applies
//! them again one submission per transaction, in order, so a bad submission fails
//! alone and the others are stored; each receipt gets its own result. A failed batch
//! stored nothing — the store finds out itself whether a commit whose answer was lost
//! went through — except [`StoreError::CommitUnknown`]: the batch may be stored, so
//! it is not applied again and every receipt gets that error. A failure
//! caused by the disk (full, I/O) fails them all with the error naming the cause. The
//! writer never panics (a panicking store is caught and reported as
//! [`StoreError::Panicked`]) and goes on with the next batch.

use std::collections::HashMap;
use std::future::Future;
use std::ops::Range;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{self, RecvTimeoutError, TryRecvError};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use tokio::sync::oneshot;
use tracing::{debug, trace, warn};

use super::{Store, StoreError, Write};

/// How the [`Writer`] forms batches.
#[derive(Clone, Debug)]
pub struct WriterConfig {
    /// At most this many writes (before coalescing) in one batch; what is left stays
    /// queued for the next. Default 16 384. A submission is never split, so a batch
    /// may exceed this by the size of its last submission.
    pub max_batch: usize,
    /// How long the writer waits after the first write of a batch for more to come.
    /// Default zero: no delay, a write goes as soon as the thread is free, and batches
    /// form only from what queued up while the previous batch committed.
    pub linger: Duration,
    /// How long nothing must be submitted before the writer does the store's upkeep
    /// ([`Store::idle`]: SQLite checkpoints its write-ahead log there rather than in
    /// a commit). Default 5 ms: longer than the gap between the writes of one
    /// step of an instance and the next (a publish, then the checkpoint of the
    /// instance it woke), so the upkeep runs between bursts, not inside one.
    pub idle: Duration,
}

impl Default for WriterConfig {
    fn default() -> WriterConfig {
        WriterConfig {
            max_batch: 16_384,
            linger: Duration::ZERO,
            idle: Duration::from_millis(5),
        }
    }
}

/// Counters of a [`Writer`] since it started.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct WriterStats {
    /// Batches applied (or tried).
    pub batches: u64,
    /// Submissions received.
    pub submissions: u64,
    /// Writes received.
    pub writes: u64,
    /// Puts dropped because a later put of the same instance superseded them.
    pub coalesced: u64,
    /// Batches that failed as a whole (one of several submissions is then retried
    /// one submission per transaction).
    pub failed_batches: u64,
    /// Submissions whose receipt resolved with an error.
    pub failed_submissions: u64,
    /// The most submissions seen in one batch.
    pub largest_batch: u64,
}

#[derive(Default)]
struct Counters {
    batches: AtomicU64,
    submissions: AtomicU64,
    writes: AtomicU64,
    coalesced: AtomicU64,
    failed_batches: AtomicU64,
    failed_submissions: AtomicU64,
    largest_batch: AtomicU64,
}

type Reply = oneshot::Sender<Result<(), StoreError>>;

struct Submission {
    writes: Vec<Write>,
    reply: Option<Reply>,
}

enum Msg {
    Submit(Submission),
    Shutdown,
}

struct Shared {
    tx: mpsc::Sender<Msg>,
    thread: Mutex<Option<JoinHandle<()>>>,
    counters: Arc<Counters>,
    store: Arc<dyn Store>,
}

/// The one writer of a store: a dedicated thread that applies everyone's writes in
/// group commits. Cheap to clone; clones share the thread. Dropping every clone
/// without [`Writer::shutdown`] still applies what was queued, then ends the thread.
///
/// Writes of one submitter are applied in the order it submitted them (the queue is
/// FIFO and batches are applied one after another).
#[derive(Clone)]
pub struct Writer {
    shared: Arc<Shared>,
}

impl Writer {
    /// Start the writer thread of `store` with the default [`WriterConfig`].
    pub fn spawn(store: Arc<dyn Store>) -> Result<Writer, StoreError> {
        Writer::with_config(store, WriterConfig::default())
    }

    /// Start the writer thread of `store`.
    pub fn with_config(store: Arc<dyn Store>, config: WriterConfig) -> Result<Writer, StoreError> {
        let (tx, rx) = mpsc::channel();
        let counters = Arc::new(Counters::default());
        let thread = std::thread::Builder::new()
            .name("thresh-store-writer".into())
            .spawn({
                let store = Arc::clone(&store);
                let counters = Arc::clone(&counters);
                move || run(&*store, &rx, &config, &counters)
            })
            .map_err(|e| StoreError::Io {
                path: Default::default(),
                source: Arc::new(e),
            })?;
        Ok(Writer {
            shared: Arc::new(Shared {
                tx,
                thread: Mutex::new(Some(thread)),
                counters,
                store,
            }),
        })
    }

    /// Queue `writes` (applied together, in one transaction) and get a receipt that
    /// resolves once they are durable, or with the error that kept them out. An empty
    /// `writes` is a flush: its receipt resolves once everything queued before it is
    /// durable.
    pub fn submit(&self, writes: Vec<Write>) -> Receipt {
        let (reply, rx) = oneshot::channel();
        match self.queue(writes, Some(reply)) {
            Ok(()) => Receipt {
                inner: ReceiptInner::Pending(rx),
            },
            Err(e) => Receipt {
                inner: ReceiptInner::Ready(Some(e)),
            },
        }
    }

    /// Queue `writes` without a receipt (a checkpoint nobody waits for). After
    /// [`Writer::shutdown`] they are refused, with a warning in the log.
    pub fn send(&self, writes: Vec<Write>) {
        if self.queue(writes, None).is_err() {
            warn!("store writer stopped: writes refused");
        }
    }

    fn queue(&self, writes: Vec<Write>, reply: Option<Reply>) -> Result<(), StoreError> {
        self.shared
            .tx
            .send(Msg::Submit(Submission { writes, reply }))
            .map_err(|_| StoreError::WriterStopped)
    }

    /// The store this writer writes to (for reads).
    pub fn store(&self) -> &Arc<dyn Store> {
        &self.shared.store
    }

    /// The writer's counters.
    pub fn stats(&self) -> WriterStats {
        let c = &self.shared.counters;
        let get = |a: &AtomicU64| a.load(Ordering::Relaxed);
        WriterStats {
            batches: get(&c.batches),
            submissions: get(&c.submissions),
            writes: get(&c.writes),
            coalesced: get(&c.coalesced),
            failed_batches: get(&c.failed_batches),
            failed_submissions: get(&c.failed_submissions),
            largest_batch: get(&c.largest_batch),
        }
    }

    /// Apply everything queued, then stop the thread and wait for it (this blocks:
    /// from async code call it in `spawn_blocking`). Later submissions are refused
    /// with [`StoreError::WriterStopped`]. A second call returns at once.
    pub fn shutdown(&self) -> Result<(), StoreError> {
        let thread = self
            .shared
            .thread
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .take();
        let Some(thread) = thread else {
            return Ok(());
        };
        // The thread only ends after Shutdown or when every sender is gone; we hold a
        // sender, so a failed send means it ended already.
        let _ = self.shared.tx.send(Msg::Shutdown);
        thread.join().map_err(|panic| StoreError::Panicked {
            reason: panic_message(&*panic),
        })
    }
}

/// Resolves once a submission's writes are durable (`Ok`), or with the error that
/// kept them out of the store. Dropping it does not cancel the writes.
#[must_use = "await the receipt to know the writes are durable, or use Writer::send"]
pub struct Receipt {
    inner: ReceiptInner,
}

enum ReceiptInner {
    Pending(oneshot::Receiver<Result<(), StoreError>>),
    Ready(Option<StoreError>),
}

impl Future for Receipt {
    type Output = Result<(), StoreError>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        match &mut self.get_mut().inner {
            ReceiptInner::Pending(rx) => Pin::new(rx)
                .poll(cx)
                .map(|r| r.unwrap_or(Err(StoreError::WriterStopped))),
            ReceiptInner::Ready(e) => {
                Poll::Ready(Err(e.take().unwrap_or(StoreError::WriterStopped)))
            }
        }
    }
}

/// The writer thread: batch, apply, resolve, until shut down or every sender is gone.
fn run(store: &dyn Store, rx: &mpsc::Receiver<Msg>, config: &WriterConfig, counters: &Counters) {
    debug!("store writer started");
    let mut closing = false;
    loop {
        let mut batch = Vec::new();
        let mut writes = 0usize;
        let mut take = |msg: Msg, batch: &mut Vec<Submission>, closing: &mut bool| match msg {
            Msg::Submit(s) => {
                writes += s.writes.len();
                batch.push(s);
                writes
            }
            Msg::Shutdown => {
                *closing = true;
                writes
            }
        };
        // The first message: wait for it, unless shutting down (then only drain);
        // if the store has upkeep, do it once nothing came for a moment.
        let first = if closing {
            rx.try_recv().ok()
        } else if store.wants_idle() {
            match rx.recv_timeout(config.idle) {
                Ok(msg) => Some(msg),
                Err(RecvTimeoutError::Disconnected) => None,
                Err(RecvTimeoutError::Timeout) => {
                    if let Err(error) = store.idle() {
                        warn!(%error, "the store's upkeep failed");
                    }
                    rx.recv().ok()
                }
            }
        } else {
            rx.recv().ok()
        };
        let Some(first) = first else {
            break;
        };
        let mut queued = take(first, &mut batch, &mut closing);
        let deadline = Instant::now() + config.linger;
        while queued < config.max_batch {
            let next = match rx.try_recv() {
                Ok(msg) => msg,
                Err(TryRecvError::Disconnected) => break,
                Err(TryRecvError::Empty) => {
                    let left = deadline.saturating_duration_since(Instant::now());
                    if closing || left.is_zero() || batch.is_empty() {
                        break;
                    }
                    match rx.recv_timeout(left) {
                        Ok(msg) => msg,
                        Err(RecvTimeoutError::Timeout | RecvTimeoutError::Disconnected) => break,
                    }
                }
            };
            queued = take(next, &mut batch, &mut closing);
        }
        if !batch.is_empty() {
            commit(store, batch, counters);
        }
    }
    debug!("store writer stopped");
}

/// Apply one batch and resolve its receipts.
fn commit(store: &dyn Store, batch: Vec<Submission>, counters: &Counters) {
    let started = Instant::now();
    let mut all = Vec::new();
    let mut ranges: Vec<Range<usize>> = Vec::with_capacity(batch.len());
    let mut replies = Vec::with_capacity(batch.len());
    for submission in batch {
        let start = all.len();
        all.extend(submission.writes);
        ranges.push(start..all.len());
        replies.push(submission.reply);
    }
    counters.batches.fetch_add(1, Ordering::Relaxed);
    counters
        .submissions
        .fetch_add(ranges.len() as u64, Ordering::Relaxed);
    counters
        .writes
        .fetch_add(all.len() as u64, Ordering::Relaxed);
    counters
        .largest_batch
        .fetch_max(ranges.len() as u64, Ordering::Relaxed);

    let keep = coalesce(&all);
    let dropped = keep.iter().filter(|k| !**k).count();
    counters
        .coalesced
        .fetch_add(dropped as u64, Ordering::Relaxed);
    let result = if all.is_empty() {
        Ok(())
    } else if dropped == 0 {
        guarded(store, &all)
    } else {
        let mut kept = Vec::with_capacity(all.len() - dropped);
        let mut gone = Vec::with_capacity(dropped);
        for (write, keep) in all.drain(..).zip(&keep) {
            if *keep {
                kept.push(write)
            } else {
                gone.push(write)
            }
        }
        let result = guarded(store, &kept);
        if result.is_err() {
            // Put the batch back in its order for the one-by-one retry.
            let (mut kept, mut gone) = (kept.into_iter(), gone.into_iter());
            all = keep
                .iter()
                .filter_map(|k| if *k { kept.next() } else { gone.next() })
                .collect();
        }
        result
    };
    #[cfg(feature = "metrics")]
    crate::metrics::store_batch(ranges.len(), started.elapsed(), result.is_ok());
    let results: Vec<Result<(), StoreError>> = match result {
        Ok(()) => {
            trace!(
                submissions = ranges.len(),
                writes = keep.len(),
                coalesced = dropped,
                took_us = started.elapsed().as_micros() as u64,
                "store batch committed"
            );
            vec![Ok(()); ranges.len()]
        }
        // The batch may be stored: applying its submissions again would find their
        // own writes (stale checkpoints, consumed messages) and call them refused.
        Err(e) if ranges.len() == 1 || matches!(e, StoreError::CommitUnknown { .. }) => {
            counters.failed_batches.fetch_add(1, Ordering::Relaxed);
            warn!(error = %e, "store batch failed");
            vec![Err(e); ranges.len()]
        }
        Err(e) => {
            counters.failed_batches.fetch_add(1, Ordering::Relaxed);
            warn!(error = %e, submissions = ranges.len(), "store batch failed; applying its submissions one by one");
            ranges
                .iter()
                .map(|range| {
                    let result = guarded(store, &all[range.clone()]);
                    if let Err(e) = &result {
                        warn!(error = %e, "store submission failed");
                    }
                    result
                })
                .collect()
        }
    };
    for (reply, result) in replies.into_iter().zip(results) {
        if result.is_err() {
            counters.failed_submissions.fetch_add(1, Ordering::Relaxed);
        }
        if let Some(reply) = reply {
            // The submitter may have dropped its receipt: nothing to tell then.
            let _ = reply.send(result);
        }
    }
}

/// [`Store::apply`], with a panic turned into an error.
fn guarded(store: &dyn Store, writes: &[Write]) -> Result<(), StoreError> {
    catch_unwind(AssertUnwindSafe(|| store.apply(writes))).unwrap_or_else(|panic| {
        Err(StoreError::Panicked {
            reason: panic_message(&*panic),
        })
    })
}

fn panic_message(panic: &(dyn std::any::Any + Send)) -> String {
    if let Some(s) = panic.downcast_ref::<&str>() {
        (*s).to_owned()
    } else if let Some(s) = panic.downcast_ref::<String>() {
        s.clone()
    } else {
        "a panic without a message".to_owned()
    }
}

/// Which writes of a batch to keep: `false` for a `Put` superseded by a later `Put`
/// of the same instance with a greater `seq`, with no `End` of that instance nor a
/// `Purge` between them. Every other write is kept.
pub(crate) fn coalesce(writes: &[Write]) -> Vec<bool> {
    let mut keep = vec![true; writes.len()];
    // Instance id -> seq of its next put further on (with no barrier in between).
    let mut later: HashMap<u64, u64> = HashMap::new();
    for (i, write) in writes.iter().enumerate().rev() {
        match write {
            Write::Put(record) => {
                if later.get(&record.id).is_some_and(|&seq| seq > record.seq) {
                    keep[i] = false;
                } else {
                    later.insert(record.id, record.seq);
                }
            }
            Write::End { id, .. } => {
                later.remove(id);
            }
            Write::Purge { .. } => later.clear(),
            _ => {}
        }
    }
    keep
}
