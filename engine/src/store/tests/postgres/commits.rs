//! A commit whose answer is lost (the connection dies while the COMMIT is on its
//! way): the store asks the server on a new connection whether it committed, and
//! acknowledges what was stored — never "nothing was stored" for a batch that was,
//! nor a stale checkpoint for its own write. Deterministic: `CommitFault` ends the
//! store's server process right after the server committed (`AnswerLost`), or right
//! before the COMMIT is sent (`Lost`), or cuts the connection before the COMMIT
//! without the server noticing (`Stalled`: the store finds the transaction still
//! open, ends its session, and then learns it did not commit).

use std::time::Duration;

use super::super::dep;
use super::*;

/// Every write kind, once with each fault: `Ok`, and stored exactly once.
#[test]
fn every_write_kind_is_acknowledged_once_when_its_commit_answer_is_lost() {
    for fault in [
        CommitFault::AnswerLost,
        CommitFault::Lost,
        CommitFault::Stalled,
    ] {
        let schema = TestSchema::new();
        let store = schema.connect().unwrap();
        let apply = |batch: &[Write]| {
            store.inject_commit_fault(fault);
            store
                .apply(batch)
                .unwrap_or_else(|e| panic!("{fault:?}: {e}"));
        };
        // A start, a checkpoint, a checkpoint consuming a message, an end.
        apply(&[Write::Put(rec(1, 1, r#"{"step":1}"#))]);
        apply(&[Write::Put(rec(1, 2, r#"{"step":2}"#))]);
        apply(&[Write::Buffer(msg(7, i64::MAX)), Write::Buffer(msg(8, 10))]);
        apply(&[
            Write::Put(rec(1, 3, r#"{"step":3}"#)),
            Write::Consume { message: 7 },
        ]);
        apply(&[Write::End {
            id: 1,
            status: Status::Completed,
            outcome: Some("{}".into()),
            at_ms: 5,
        }]);
        // Deployments, a timer tick, the clean-ups.
        apply(&[Write::PutDeployment(dep(3, "{}"))]);
        apply(&[
            Write::Tick {
                deployment: dep(3, "{}"),
                start: "t".into(),
                from: None,
                to: TimerTick {
                    fired: 1,
                    due_ms: None,
                },
            },
            Write::Put(rec(2, 1, "{}")),
        ]);
        apply(&[Write::Expire { now_ms: 100 }]);
        apply(&[Write::Purge {
            ended_before_ms: i64::MAX,
        }]);
        apply(&[Write::RemoveDeployment { id: 3 }]);
        // What each wrote is there once; the fault left nothing queued.
        assert_eq!(store.instance(1).unwrap(), None, "{fault:?}: purged");
        let two = store.instance(2).unwrap().expect("the tick's instance");
        assert_eq!((two.seq, two.status), (1, Status::Running));
        assert!(store.messages().unwrap().is_empty(), "{fault:?}");
        assert!(store.deployments().unwrap().is_empty(), "{fault:?}");
        assert_eq!(store.next_ids().unwrap().instance, 3);
    }
}

/// The issue's case: a group commit of several submissions (two starts, a
/// checkpoint consuming a message, an end) whose answer is lost. Every receipt is
/// `Ok` and everything is stored — where the writer used to apply each submission
/// again and find its own writes stale.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_group_commit_whose_answer_is_lost_is_acknowledged_to_every_submitter() {
    for fault in [
        CommitFault::AnswerLost,
        CommitFault::Lost,
        CommitFault::Stalled,
    ] {
        let schema = TestSchema::new();
        let store = Arc::new(schema.connect().unwrap());
        store
            .apply(&[
                Write::Put(rec(10, 1, "{}")),
                Write::Put(rec(11, 1, "{}")),
                Write::Buffer(msg(7, i64::MAX)),
            ])
            .unwrap();
        let config = WriterConfig {
            linger: Duration::from_millis(300),
            ..WriterConfig::default()
        };
        let writer = Writer::with_config(store.clone(), config).unwrap();
        store.inject_commit_fault(fault);
        let receipts = vec![
            writer.submit(vec![Write::Put(rec(1, 1, "{}"))]),
            writer.submit(vec![Write::Put(rec(2, 1, "{}"))]),
            writer.submit(vec![
                Write::Put(rec(10, 2, r#"{"paid":true}"#)),
                Write::Consume { message: 7 },
            ]),
            writer.submit(vec![Write::End {
                id: 11,
                status: Status::Completed,
                outcome: Some("{}".into()),
                at_ms: 5,
            }]),
        ];
        for (n, receipt) in receipts.into_iter().enumerate() {
            receipt
                .await
                .unwrap_or_else(|e| panic!("{fault:?}: submission {n}: {e}"));
        }
        let stats = writer.stats();
        assert_eq!(
            (stats.batches, stats.failed_batches),
            (1, 0),
            "{fault:?}: one batch"
        );
        let read = store.clone();
        let (one, two, ten, eleven, messages) = tokio::task::spawn_blocking(move || {
            (
                read.instance(1).unwrap(),
                read.instance(2).unwrap(),
                read.instance(10).unwrap().unwrap(),
                read.instance(11).unwrap().unwrap(),
                read.messages().unwrap(),
            )
        })
        .await
        .unwrap();
        assert_eq!(one.map(|r| r.seq), Some(1));
        assert_eq!(two.map(|r| r.seq), Some(1));
        assert_eq!((ten.seq, ten.state.as_str()), (2, r#"{"paid":true}"#));
        assert_eq!(eleven.status, Status::Completed);
        assert!(messages.is_empty());
        let stop = writer.clone();
        tokio::task::spawn_blocking(move || stop.shutdown())
            .await
            .unwrap()
            .unwrap();
    }
}

/// A node's own transactions: storing a published message, claiming messages for
/// its catches and its starts, taking instances over. Each whose answer is lost
/// gives what it did, once.
#[test]
fn a_nodes_publish_claims_and_takeover_are_done_once_when_the_answer_is_lost() {
    for fault in [
        CommitFault::AnswerLost,
        CommitFault::Lost,
        CommitFault::Stalled,
    ] {
        let schema = TestSchema::new();
        let node = |name: &str, lease_ms: u64| {
            PostgresStore::connect_node(&url(), &schema.0, name, Duration::from_millis(lease_ms))
                .unwrap()
        };
        let a = node("a", 0);
        let b = node("b", 60_000);
        // A publish claimed by its node (a catch there waits), and one left unclaimed.
        b.inject_commit_fault(fault);
        assert!(b.store_message(&msg(1, i64::MAX), true, &[]).unwrap());
        b.inject_commit_fault(fault);
        assert!(!b.store_message(&msg(2, i64::MAX), false, &[]).unwrap());
        assert_eq!(b.messages().unwrap().len(), 2, "{fault:?}: stored once");
        // b claims the unclaimed one for a catch: it gets it.
        b.inject_commit_fault(fault);
        let claimed = b.claim_waited(&[2], 0).unwrap();
        assert_eq!(claimed.iter().map(|m| m.id).collect::<Vec<_>>(), [2]);
        // A start message, claimed for a start under its key's lock.
        a.apply(&[Write::Buffer(msg(3, i64::MAX))]).unwrap();
        let starts = [("paid".to_string(), "order")];
        b.inject_commit_fault(fault);
        let started = b.claim_start(3, &"k3".to_string(), &starts, 0).unwrap();
        assert_eq!(started.map(|m| m.id), Some(3), "{fault:?}");
        // a's instance (its lease over at once) is taken over by b: b gets it.
        let record = rec(5, 1, "{}");
        let process = (record.process.clone(), record.fingerprint);
        a.apply(&[Write::Put(record)]).unwrap();
        b.inject_commit_fault(fault);
        let taken = b
            .take_over(std::slice::from_ref(&process), &[], 10)
            .unwrap();
        assert_eq!(taken.len(), 1, "{fault:?}: the takeover's instance");
        assert_eq!((taken[0].record.id, taken[0].fence), (5, 2));
        assert_eq!(b.handovers().unwrap().len(), 1, "{fault:?}: one handover");
        // And b's checkpoint of it, fenced with what it got, goes through.
        b.apply(&[Write::Put(rec(5, 2, "{}"))]).unwrap();
    }
}
