//! Coalescing and the writer.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use super::super::writer::coalesce;
use super::*;

// ---------------------------------------------------------------------------------
// Coalescing.
// ---------------------------------------------------------------------------------

#[test]
fn coalescing_keeps_the_latest_put_and_every_other_write() {
    let put = |id, seq| Write::Put(rec(id, seq, "{}"));
    let batch = [
        put(1, 1),
        Write::Consume { message: 5 },
        put(2, 1),
        put(1, 2),
        Write::Buffer(msg(6, 0)),
        put(1, 3),
        put(2, 2),
        Write::Consume { message: 7 },
    ];
    assert_eq!(
        coalesce(&batch),
        [false, true, false, false, true, true, true, true]
    );
    // An End or a Purge between two puts of an instance keeps both (the later one
    // then fails, as it would without coalescing).
    let end = Write::End {
        id: 1,
        status: Status::Completed,
        outcome: None,
        at_ms: 0,
    };
    assert_eq!(coalesce(&[put(1, 1), end.clone(), put(1, 2)]), [true; 3]);
    assert_eq!(
        coalesce(&[put(1, 1), Write::Purge { ended_before_ms: 0 }, put(1, 2)]),
        [true; 3]
    );
    // An End of another instance is no barrier.
    assert_eq!(coalesce(&[put(2, 1), end, put(2, 2)]), [false, true, true]);
    // A later put with a smaller seq supersedes nothing (and fails as stale).
    assert_eq!(
        coalesce(&[put(1, 1), put(1, 3), put(1, 2)]),
        [false, true, true]
    );
    assert_eq!(coalesce(&[put(1, 5), put(1, 2)]), [true, true]);
}

// ---------------------------------------------------------------------------------
// The writer.
// ---------------------------------------------------------------------------------

/// A store that records every batch it applied and can hold the writer inside
/// `apply` until the test lets it go (to make submissions pile up into one batch).
#[derive(Default)]
struct Recording {
    inner: MemoryStore,
    gate: Mutex<()>,
    entered: AtomicUsize,
    batches: Mutex<Vec<Vec<Write>>>,
    panic_on_seq: Option<u64>,
    /// It has upkeep after each batch (`Store::wants_idle`).
    upkeep: bool,
    /// Batches since its last upkeep, and how many times the writer did it.
    since_idle: AtomicUsize,
    idles: AtomicUsize,
    /// A batch with a put of this seq is stored, and its outcome reported unknown.
    unknown_on_seq: Option<u64>,
}

impl Store for Recording {
    fn apply(&self, batch: &[Write]) -> Result<(), StoreError> {
        self.entered.fetch_add(1, Ordering::SeqCst);
        drop(self.gate.lock().unwrap_or_else(|p| p.into_inner()));
        if let Some(seq) = self.panic_on_seq {
            if batch
                .iter()
                .any(|w| matches!(w, Write::Put(r) if r.seq == seq))
            {
                panic!("injected panic");
            }
        }
        self.inner.apply(batch)?;
        self.batches.lock().unwrap().push(batch.to_vec());
        self.since_idle.fetch_add(1, Ordering::SeqCst);
        if let Some(seq) = self.unknown_on_seq {
            if batch
                .iter()
                .any(|w| matches!(w, Write::Put(r) if r.seq == seq))
            {
                return Err(StoreError::CommitUnknown {
                    path: "test".into(),
                    reason: "injected".into(),
                });
            }
        }
        Ok(())
    }
    fn instance(&self, id: u64) -> Result<Option<InstanceRecord>, StoreError> {
        self.inner.instance(id)
    }
    fn wants_idle(&self) -> bool {
        self.upkeep && self.since_idle.load(Ordering::SeqCst) > 0
    }
    fn idle(&self) -> Result<(), StoreError> {
        self.since_idle.store(0, Ordering::SeqCst);
        self.idles.fetch_add(1, Ordering::SeqCst);
        Ok(())
    }
    fn list(&self, p: Option<&str>, s: Option<Status>) -> Result<Vec<InstanceRecord>, StoreError> {
        self.inner.list(p, s)
    }
    fn messages(&self) -> Result<Vec<MessageRecord>, StoreError> {
        self.inner.messages()
    }
    fn deployments(&self) -> Result<Vec<DeploymentRecord>, StoreError> {
        self.inner.deployments()
    }
    fn next_ids(&self) -> Result<Ids, StoreError> {
        self.inner.next_ids()
    }
    fn tasks(
        &self,
        query: &crate::tasklist::TaskQuery,
    ) -> Result<Vec<super::super::TaskRecord>, StoreError> {
        self.inner.tasks(query)
    }
    fn claim_task(
        &self,
        instance: u64,
        number: u32,
        user: Option<&str>,
    ) -> Result<Option<super::super::TaskRecord>, StoreError> {
        self.inner.claim_task(instance, number, user)
    }
}

impl Recording {
    /// Wait until the writer has entered `apply` `n` times.
    fn wait_entered(&self, n: usize) {
        for _ in 0..10_000 {
            if self.entered.load(Ordering::SeqCst) >= n {
                return;
            }
            std::thread::sleep(Duration::from_millis(1));
        }
        panic!("the writer never entered apply");
    }
}

/// Hold the writer in its first batch, queue `queued`, let go: `queued` forms one batch.
fn one_batch(store: &Recording, writer: &Writer, queued: Vec<Vec<Write>>) -> Vec<Receipt> {
    let gate = store.gate.lock().unwrap();
    let first = writer.submit(vec![Write::Put(rec(1_000, 0, "{}"))]);
    store.wait_entered(1);
    let mut receipts = vec![first];
    receipts.extend(queued.into_iter().map(|w| writer.submit(w)));
    drop(gate);
    receipts
}

#[tokio::test]
async fn the_writer_coalesces_puts_but_keeps_every_consume() {
    let store = Arc::new(Recording::default());
    let writer = Writer::spawn(store.clone()).unwrap();
    store
        .inner
        .apply(&[
            Write::Buffer(msg(1, 0)),
            Write::Buffer(msg(2, 0)),
            Write::Buffer(msg(3, 0)),
        ])
        .unwrap();
    let put = |seq| Write::Put(rec(5, seq, &format!(r#"{{"seq":{seq}}}"#)));
    let receipts = one_batch(
        &store,
        &writer,
        vec![
            vec![put(0)],
            vec![put(1), Write::Consume { message: 1 }],
            vec![Write::Put(rec(6, 0, "{}"))],
            vec![put(2), Write::Consume { message: 2 }],
            vec![put(3)],
            vec![Write::Consume { message: 3 }, put(4)],
        ],
    );
    for r in receipts {
        r.await.unwrap();
    }
    let batches = store.batches.lock().unwrap().clone();
    assert_eq!(batches.len(), 2, "{batches:#?}");
    assert_eq!(
        batches[1],
        vec![
            Write::Consume { message: 1 },
            Write::Put(rec(6, 0, "{}")),
            Write::Consume { message: 2 },
            Write::Consume { message: 3 },
            put(4),
        ]
    );
    assert_eq!(store.instance(5).unwrap(), Some(rec(5, 4, r#"{"seq":4}"#)));
    assert!(store.messages().unwrap().is_empty());
    let stats = writer.stats();
    assert_eq!(
        (stats.coalesced, stats.batches, stats.largest_batch),
        (4, 2, 6)
    );
    writer.shutdown().unwrap();
}

/// A group commit whose outcome is unknown (it may be stored) is not applied again
/// submission by submission — that would find its own writes and call them stale —:
/// every submitter hears that the outcome is unknown.
#[tokio::test]
async fn a_group_commit_of_unknown_outcome_is_not_applied_again() {
    let store = Arc::new(Recording {
        unknown_on_seq: Some(7),
        ..Recording::default()
    });
    let writer = Writer::spawn(store.clone()).unwrap();
    let receipts = one_batch(
        &store,
        &writer,
        vec![
            vec![Write::Put(rec(1, 7, "{}"))],
            vec![Write::Put(rec(2, 1, "{}"))],
        ],
    );
    let results: Vec<_> = futures_util::future::join_all(receipts).await;
    assert!(results[0].is_ok());
    for result in &results[1..] {
        assert!(
            matches!(result, Err(StoreError::CommitUnknown { .. })),
            "{result:?}"
        );
    }
    assert_eq!(store.batches.lock().unwrap().len(), 2, "applied once");
    assert_eq!(writer.stats().failed_submissions, 2);
    writer.shutdown().unwrap();
}

#[tokio::test]
async fn a_bad_submission_in_a_group_fails_alone_and_the_writer_goes_on() {
    let store = Arc::new(Recording::default());
    let writer = Writer::spawn(store.clone()).unwrap();
    let receipts = one_batch(
        &store,
        &writer,
        vec![
            vec![Write::Put(rec(1, 0, "{}"))],
            vec![Write::Put(rec(2, 0, "{}")), Write::Consume { message: 404 }],
            vec![Write::Put(rec(1, 1, "{}"))],
            vec![Write::Put(rec(3, 0, "{}"))],
        ],
    );
    let results: Vec<_> = futures_util::future::join_all(receipts).await;
    assert!(results[0].is_ok() && results[1].is_ok() && results[3].is_ok() && results[4].is_ok());
    assert!(
        matches!(results[2], Err(StoreError::MessageGone { id: 404 })),
        "{:?}",
        results[2]
    );
    let ids: Vec<u64> = store
        .list(None, None)
        .unwrap()
        .iter()
        .map(|r| r.id)
        .collect();
    assert_eq!(ids, [1, 3, 1_000]);
    assert_eq!(store.instance(1).unwrap().unwrap().seq, 1);
    assert_eq!(store.instance(2).unwrap(), None);
    // Alone, a failing write fails its receipt; the next one works.
    let err = writer
        .submit(vec![Write::Put(rec(3, 0, "{}"))])
        .await
        .unwrap_err();
    assert!(
        matches!(err, StoreError::StaleCheckpoint { id: 3, .. }),
        "{err}"
    );
    writer
        .submit(vec![Write::Put(rec(3, 1, "{}"))])
        .await
        .unwrap();
    let stats = writer.stats();
    assert_eq!((stats.failed_batches, stats.failed_submissions), (2, 2));
    writer.shutdown().unwrap();
}

#[tokio::test]
async fn a_panicking_store_fails_the_receipt_not_the_writer() {
    let store = Arc::new(Recording {
        panic_on_seq: Some(13),
        ..Recording::default()
    });
    let writer = Writer::spawn(store.clone()).unwrap();
    let err = writer
        .submit(vec![Write::Put(rec(1, 13, "{}"))])
        .await
        .unwrap_err();
    assert!(
        matches!(&err, StoreError::Panicked { reason } if reason == "injected panic"),
        "{err}"
    );
    writer
        .submit(vec![Write::Put(rec(1, 14, "{}"))])
        .await
        .unwrap();
    assert_eq!(store.instance(1).unwrap().unwrap().seq, 14);
    writer.shutdown().unwrap();
}

#[tokio::test]
async fn shutdown_flushes_the_queue_and_later_writes_are_refused() {
    let store = Arc::new(MemoryStore::new());
    let writer = Writer::spawn(store.clone()).unwrap();
    for seq in 0..1_000 {
        writer.send(vec![Write::Put(rec(seq % 7, seq, "{}"))]);
    }
    let flushed = writer.submit(vec![]);
    let clone = writer.clone();
    writer.shutdown().unwrap();
    flushed.await.unwrap();
    assert_eq!(store.list(None, None).unwrap().len(), 7);
    assert_eq!(store.instance(6).unwrap().unwrap().seq, 993);
    assert_eq!(store.instance(4).unwrap().unwrap().seq, 998);
    let refused = clone.submit(vec![Write::Put(rec(1, 5_000, "{}"))]).await;
    assert!(
        matches!(refused, Err(StoreError::WriterStopped)),
        "{refused:?}"
    );
    clone.send(vec![Write::Put(rec(1, 5_001, "{}"))]); // logged, not stored
    clone.shutdown().unwrap(); // a second shutdown returns at once
    assert_eq!(store.instance(1).unwrap().unwrap().seq, 995);
    assert_eq!(writer.stats().writes, 1_000);
}

#[tokio::test]
async fn an_idle_writer_commits_a_single_write_at_once() {
    let store = Arc::new(Recording::default());
    let writer = Writer::spawn(store.clone()).unwrap();
    for seq in 0..5 {
        writer
            .submit(vec![Write::Put(rec(1, seq, "{}"))])
            .await
            .unwrap();
    }
    assert_eq!(store.batches.lock().unwrap().len(), 5);
    writer.shutdown().unwrap();
}

#[tokio::test]
async fn batches_respect_max_batch_and_linger() {
    // max_batch: eight queued single-write submissions form batches of at most two.
    let store = Arc::new(Recording::default());
    let config = WriterConfig {
        max_batch: 2,
        ..WriterConfig::default()
    };
    let writer = Writer::with_config(store.clone(), config).unwrap();
    let queued = (0..8).map(|i| vec![Write::Put(rec(i, 0, "{}"))]).collect();
    for r in one_batch(&store, &writer, queued) {
        r.await.unwrap();
    }
    let sizes: Vec<usize> = store.batches.lock().unwrap().iter().map(Vec::len).collect();
    assert_eq!(sizes, [1, 2, 2, 2, 2]);
    writer.shutdown().unwrap();

    // linger: writes sent a little apart still share a batch.
    let store = Arc::new(Recording::default());
    let config = WriterConfig {
        linger: Duration::from_millis(300),
        ..WriterConfig::default()
    };
    let writer = Writer::with_config(store.clone(), config).unwrap();
    let first = writer.submit(vec![Write::Put(rec(1, 0, "{}"))]);
    std::thread::sleep(Duration::from_millis(30));
    let second = writer.submit(vec![Write::Put(rec(2, 0, "{}"))]);
    first.await.unwrap();
    second.await.unwrap();
    assert_eq!(store.batches.lock().unwrap().len(), 1);
    writer.shutdown().unwrap();
}

/// The store's upkeep runs on the writer's thread once nothing came for
/// `WriterConfig::idle`, never between the writes of a busy stream, once per quiet
/// spell, and not at all for a store that has none.
#[tokio::test]
async fn the_stores_upkeep_waits_for_a_quiet_moment() {
    let store = Arc::new(Recording {
        upkeep: true,
        ..Recording::default()
    });
    let config = WriterConfig {
        idle: Duration::from_millis(400),
        ..WriterConfig::default()
    };
    let writer = Writer::with_config(store.clone(), config).unwrap();
    // Back to back, each awaited: never a quiet spell of 400 ms.
    for i in 0..20 {
        writer
            .submit(vec![Write::Put(rec(i, 0, "{}"))])
            .await
            .unwrap();
    }
    assert_eq!(
        store.idles.load(Ordering::SeqCst),
        0,
        "upkeep inside a stream"
    );
    let quiet = |n| {
        let store = Arc::clone(&store);
        async move {
            let deadline = std::time::Instant::now() + Duration::from_secs(20);
            while store.idles.load(Ordering::SeqCst) < n && std::time::Instant::now() < deadline {
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        }
    };
    quiet(1).await;
    assert_eq!(
        store.idles.load(Ordering::SeqCst),
        1,
        "upkeep after the stream"
    );
    // Nothing written since: no upkeep however long the quiet lasts.
    tokio::time::sleep(Duration::from_millis(1_000)).await;
    assert_eq!(
        store.idles.load(Ordering::SeqCst),
        1,
        "upkeep with nothing to do"
    );
    writer
        .submit(vec![Write::Put(rec(99, 0, "{}"))])
        .await
        .unwrap();
    quiet(2).await;
    assert_eq!(store.idles.load(Ordering::SeqCst), 2);
    writer.shutdown().unwrap();

    let store = Arc::new(Recording::default());
    let writer = Writer::with_config(store.clone(), WriterConfig::default()).unwrap();
    writer
        .submit(vec![Write::Put(rec(1, 0, "{}"))])
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(
        store.idles.load(Ordering::SeqCst),
        0,
        "a store without upkeep"
    );
    writer.shutdown().unwrap();
}

/// Four submitters at once: every receipt resolves, nothing is lost, each submitter's
/// writes are applied in its order (a consume of its previous message must find it).
pub(super) async fn four_submitters(store: Arc<dyn Store>, rounds: u64) {
    let writer = Writer::spawn(store.clone()).unwrap();
    let mut tasks = Vec::new();
    for k in 0..4u64 {
        let writer = writer.clone();
        tasks.push(tokio::spawn(async move {
            let mut receipts = Vec::new();
            for n in 0..rounds {
                let message = 1_000 * k + n;
                let mut writes = vec![
                    Write::Put(rec(k, n, &format!(r#"{{"n":{n}}}"#))),
                    Write::Buffer(msg(message, i64::MAX)),
                ];
                if n > 0 {
                    writes.push(Write::Consume {
                        message: message - 1,
                    });
                }
                let receipt = writer.submit(writes);
                // Submitters 0 and 1 wait for each write; 2 and 3 keep many in flight.
                if k < 2 {
                    receipt.await.unwrap();
                } else {
                    receipts.push(receipt);
                }
                if n % 16 == 0 {
                    tokio::task::yield_now().await;
                }
            }
            for r in receipts {
                r.await.unwrap();
            }
        }));
    }
    for t in tasks {
        t.await.unwrap();
    }
    let stats = writer.stats();
    writer.shutdown().unwrap();
    assert_eq!(stats.submissions, 4 * rounds);
    assert_eq!(stats.failed_submissions, 0);
    for k in 0..4 {
        let r = store.instance(k).unwrap().unwrap();
        assert_eq!(
            (r.seq, r.state),
            (rounds - 1, format!(r#"{{"n":{}}}"#, rounds - 1))
        );
    }
    let left: Vec<u64> = store.messages().unwrap().iter().map(|m| m.id).collect();
    assert_eq!(
        left,
        (0..4).map(|k| 1_000 * k + rounds - 1).collect::<Vec<_>>()
    );
    assert_eq!(store.next_ids().unwrap().message, 3_000 + rounds);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn four_submitters_on_memory() {
    four_submitters(Arc::new(MemoryStore::new()), 500).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn four_submitters_in_order_as_recorded() {
    let store = Arc::new(Recording::default());
    four_submitters(store.clone(), 300).await;
    // Per instance, the applied puts have increasing seqs.
    let mut last: [Option<u64>; 4] = [None; 4];
    for write in store.batches.lock().unwrap().iter().flatten() {
        if let Write::Put(r) = write {
            let slot = &mut last[r.id as usize];
            assert!(slot.is_none_or(|s| s < r.seq), "{write:?} after {slot:?}");
            *slot = Some(r.seq);
        }
    }
}
