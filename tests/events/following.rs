//! A waiting message wait follows its key (issue 13, fix 1): a commit that changes the
//! data a waiting catch's key reads moves its subscription to the new key — for a
//! receive task, an event-based gateway's arms and a message event sub-process (the
//! intermediate catch is `correlation.rs`, message boundaries are in `boundary/` and
//! `subprocess/`). A message for the old key is then buffered, not taken; one for the
//! new key is delivered, also one buffered before the commit.

use super::*;
use thresh::testing::{expect_ended, expect_open_work, expect_that, observe};

/// Wait until `node` has completed (a task or user task) `times` times.
async fn completed_at<D: Clone>(handle: &InstanceHandle<D>, node: &str, times: usize) {
    let what = format!("`{node}` completed {times} times");
    expect_that(handle, &what, |h| completions(h, node) >= times).await;
}

process! {
    /// A receive task whose key a parallel user task changes.
    RECEIVE_REKEYED: Deal {
        start    s;
        parallel fork;
        receive  take: message("order", key = |d| d.key.clone(), apply = |d, p: &u64| d.paid = *p);
        user     rekey;
        parallel join;
        end      e;
        s -> fork -> take, rekey;
        take, rekey -> join -> e;
    }
}

/// A receive task subscribed under `old`; `rekey` commits `new`: the old key's
/// message is buffered, the new key's is taken. In odd runs the new key's message
/// was buffered before the commit and the move delivers it.
async fn a_receive_task_follows_its_key(i: usize) {
    let engine = Engine::new();
    let (old, new) = (format!("r{i}-old"), format!("r{i}-new"));
    let early = i % 2 == 1;
    let h = engine
        .start(
            &RECEIVE_REKEYED,
            Deal {
                key: old.clone(),
                ..deal(format!("r{i}"))
            },
        )
        .await
        .unwrap();
    expect_open_work(&h, "rekey").await;
    thresh::testing::expect_parked(&h, "take").await;
    if early {
        assert_eq!(
            engine.publish_message("order", &new, 7_u64).await.unwrap(),
            Published::Buffered
        );
    }
    let key = new.clone();
    h.complete("rekey", move |d: &mut Deal| d.key = key)
        .await
        .expect("rekey is open");
    completed_at(&h, "rekey", 1).await;
    if !early {
        assert_eq!(
            engine.publish_message("order", &old, 1_u64).await.unwrap(),
            Published::Buffered
        );
        assert!(!h.is_finished());
        assert_eq!(
            engine.publish_message("order", &new, 7_u64).await.unwrap(),
            Published::Delivered
        );
    }
    expect_ended(&h).await;
    observe(&h)
        .await
        .assert_passed(["take", "join", "e"])
        .assert_outcome_completed()
        .assert_data("paid by the new key's message", |d| d.paid == 7);
    assert_eq!(
        engine.broker_stats(),
        BrokerStats {
            delivered: 1,
            buffered: usize::from(!early),
            ..BrokerStats::default()
        }
    );
}

both_runtimes!(50 => a_receive_task_follows_its_key);

process! {
    /// An event-based gateway with two message arms whose key a parallel user task
    /// changes.
    GATE_REKEYED: Deal {
        start       s;
        parallel    fork;
        event_based gate;
        catch       yes: message("yes", key = |d| d.key.clone(), apply = |d, p: &u64| d.paid = *p);
        catch       no: message("no", key = |d| d.key.clone(), apply = |d, n: &String| d.note = n.clone());
        user        rekey;
        end         yes_end;
        end         no_end;
        end         rekeyed;
        s -> fork -> gate, rekey;
        gate -> yes, no;
        yes -> yes_end;
        no -> no_end;
        rekey -> rekeyed;
    }
}

/// Both arms of a gateway move to the new key, and stay one choice: after the
/// commit, old-key messages for either arm are buffered; a new-key `no` wins; a
/// new-key `yes` after it is buffered too (its arm lost).
async fn a_gateways_arms_follow_their_key(i: usize) {
    let engine = Engine::new();
    let (old, new) = (format!("g{i}-old"), format!("g{i}-new"));
    let h = engine
        .start(
            &GATE_REKEYED,
            Deal {
                key: old.clone(),
                ..deal(format!("g{i}"))
            },
        )
        .await
        .unwrap();
    thresh::testing::expect_parked(&h, "gate").await;
    let key = new.clone();
    h.complete("rekey", move |d: &mut Deal| d.key = key)
        .await
        .expect("rekey is open");
    completed_at(&h, "rekey", 1).await;
    assert_eq!(
        engine.publish_message("yes", &old, 1_u64).await.unwrap(),
        Published::Buffered
    );
    assert_eq!(
        engine
            .publish_message("no", &old, "old".to_string())
            .await
            .unwrap(),
        Published::Buffered
    );
    assert_eq!(
        engine
            .publish_message("no", &new, "new".to_string())
            .await
            .unwrap(),
        Published::Delivered
    );
    expect_ended(&h).await;
    assert_eq!(
        engine.publish_message("yes", &new, 2_u64).await.unwrap(),
        Published::Buffered
    );
    observe(&h)
        .await
        .assert_passed(["gate", "no", "no_end"])
        .assert_not_passed(["yes"])
        .assert_data("the new key's `no`", |d| d.note == "new" && d.paid == 0);
    assert_eq!(
        engine.broker_stats(),
        BrokerStats {
            delivered: 1,
            buffered: 3,
            ..BrokerStats::default()
        }
    );
}

both_runtimes!(50 => a_gateways_arms_follow_their_key);

process! {
    /// A non-interrupting message event sub-process whose key a user task of the
    /// process changes.
    EVENT_SUB_REKEYED: Deal {
        start s;
        user  rekey;
        user  finish;
        end   e;
        s -> rekey -> finish -> e;
        event_subprocess on_note {
            start noted: non_interrupting message("note", key = |d| d.key.clone(), apply = |d, n: &String| d.note = n.clone());
            end   noted_end;
            noted -> noted_end;
        }
    }
}

/// A message event sub-process's start subscribes when the process scope opens;
/// after `rekey` commits a new key it listens under that one.
async fn a_message_event_sub_process_follows_its_key(i: usize) {
    let engine = Engine::new();
    let (old, new) = (format!("e{i}-old"), format!("e{i}-new"));
    let h = engine
        .start(
            &EVENT_SUB_REKEYED,
            Deal {
                key: old.clone(),
                ..deal(format!("e{i}"))
            },
        )
        .await
        .unwrap();
    expect_open_work(&h, "rekey").await;
    let key = new.clone();
    h.complete("rekey", move |d: &mut Deal| d.key = key)
        .await
        .expect("rekey is open");
    expect_open_work(&h, "finish").await;
    assert_eq!(
        engine
            .publish_message("note", &old, "old".to_string())
            .await
            .unwrap(),
        Published::Buffered
    );
    assert_eq!(
        engine
            .publish_message("note", &new, "new".to_string())
            .await
            .unwrap(),
        Published::Delivered
    );
    expect_that(&h, "the event sub-process ran", |h| {
        h.count("noted_end", |w| *w == Happening::Ended) == 1
    })
    .await;
    h.complete("finish", |_| {}).await.expect("finish is open");
    expect_ended(&h).await;
    observe(&h)
        .await
        .assert_outcome_completed()
        .assert_data("the new key's note", |d| d.note == "new");
    assert_eq!(
        engine.broker_stats(),
        BrokerStats {
            delivered: 1,
            buffered: 1,
            ..BrokerStats::default()
        }
    );
}

both_runtimes!(50 => a_message_event_sub_process_follows_its_key);

/// The commit that moves a receive task to its new key races a publish from another
/// thread, for the old key or the new one, hundreds of times. Whatever the order,
/// the answer tells what happened: a new-key message is taken once — `Delivered`
/// after the move, or `Buffered` before it and taken by the move; an old-key
/// message is `Delivered` (and taken: it matched the subscription then) only if the
/// broker served it before the move, else it stays buffered. Counted once either way.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_key_change_races_a_publish() {
    let runs: Vec<_> = (0..400)
        .map(|i| {
            tokio::spawn(async move {
                let engine = Engine::new();
                let (old, new) = (format!("x{i}-old"), format!("x{i}-new"));
                let old_key = i % 2 == 0;
                let h = engine
                    .start(
                        &RECEIVE_REKEYED,
                        Deal {
                            key: old.clone(),
                            ..deal(format!("x{i}"))
                        },
                    )
                    .await
                    .unwrap();
                expect_open_work(&h, "rekey").await;
                thresh::testing::expect_parked(&h, "take").await;
                let publisher = engine.clone();
                let key = if old_key { old.clone() } else { new.clone() };
                let publish = tokio::task::spawn_blocking(move || {
                    at_once(publisher.publish_message("order", key, 5_u64)).unwrap()
                });
                let to = new.clone();
                h.complete("rekey", move |d: &mut Deal| d.key = to)
                    .await
                    .expect("rekey is open");
                let published = publish.await.expect("the publisher");
                completed_at(&h, "rekey", 1).await;
                let stats = engine.broker_stats();
                let said = format!("run {i}: published {published:?}, {stats:?}");
                if old_key && published == Published::Buffered {
                    // After the move: the old key's message waits for someone else.
                    assert_eq!((stats.delivered, stats.buffered), (0, 1), "{said}");
                    assert_eq!(
                        engine.publish_message("order", &new, 6_u64).await.unwrap(),
                        Published::Delivered,
                        "{said}"
                    );
                } else {
                    assert_ne!(published, Published::Dropped, "{said}");
                }
                expect_ended(&h).await;
                let paid = if old_key && published == Published::Buffered {
                    6
                } else {
                    5
                };
                observe(&h)
                    .await
                    .assert_outcome_completed()
                    .assert_data("paid once, by the message taken", |d| d.paid == paid);
                let stats = engine.broker_stats();
                assert_eq!(stats.delivered, 1, "{said} then {stats:?}");
                assert_eq!(
                    stats.buffered,
                    usize::from(old_key && published == Published::Buffered),
                    "{said} then {stats:?}"
                );
            })
        })
        .collect();
    for run in runs {
        run.await.expect("a run");
    }
}

/// Evaluations of `COUNTED`'s keys.
static SEEN_KEYS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
static OPAQUE_KEYS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

fn opaque_key(d: &Deal) -> String {
    OPAQUE_KEYS.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    d.key.clone()
}

process! {
    /// Two waiting catches: one whose key closure the macro reads (`key` only), one
    /// whose key is a fn it cannot see into; a user task commits in between.
    COUNTED: Deal {
        start    s;
        parallel fork;
        catch    seen: message("seen", key = |d| {
            SEEN_KEYS.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            d.key.clone()
        });
        catch    opaque: message("opaque", key = opaque_key);
        user     edit;
        user     rekey;
        end      e1;
        end      e2;
        end      e3;
        s -> fork -> seen, opaque, edit;
        seen -> e1;
        opaque -> e2;
        edit -> rekey -> e3;
    }
}

/// A commit that changes only fields a key does not read leaves that key alone; one
/// that changes its field re-evaluates and moves it. A key the macro cannot see into
/// is evaluated after every commit that changed something.
#[tokio::test]
async fn a_key_is_evaluated_again_only_when_a_field_it_reads_changed() {
    use std::sync::atomic::Ordering::SeqCst;
    let engine = Engine::new();
    let h = engine
        .start(
            &COUNTED,
            Deal {
                key: "c-old".into(),
                ..deal("c")
            },
        )
        .await
        .unwrap();
    thresh::testing::expect_parked(&h, "seen").await;
    thresh::testing::expect_parked(&h, "opaque").await;
    let (seen, opaque) = (SEEN_KEYS.load(SeqCst), OPAQUE_KEYS.load(SeqCst));
    assert_eq!((seen, opaque), (1, 1), "each evaluated when armed");
    h.complete("edit", |d: &mut Deal| d.note = "edited".into())
        .await
        .expect("edit is open");
    completed_at(&h, "edit", 1).await;
    assert_eq!(SEEN_KEYS.load(SeqCst), 1, "`note` is not read by the key");
    assert_eq!(
        OPAQUE_KEYS.load(SeqCst),
        2,
        "an opaque key after every commit"
    );
    h.complete("rekey", |d: &mut Deal| d.key = "c-new".into())
        .await
        .expect("rekey is open");
    completed_at(&h, "rekey", 1).await;
    assert_eq!(SEEN_KEYS.load(SeqCst), 2, "`key` changed");
    assert_eq!(OPAQUE_KEYS.load(SeqCst), 3);
    assert_eq!(
        engine.publish_message("seen", "c-old", ()).await.unwrap(),
        Published::Buffered
    );
    assert_eq!(
        engine.publish_message("seen", "c-new", ()).await.unwrap(),
        Published::Delivered
    );
    assert_eq!(
        engine.publish_message("opaque", "c-new", ()).await.unwrap(),
        Published::Delivered
    );
    expect_ended(&h).await;
    observe(&h).await.assert_outcome_completed();
}
