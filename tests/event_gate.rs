//! The event-based gateway's deferred choice at run time (ARCHITECTURE.md, "The instance loop"): whatever its triggers and however they race,
//! exactly one arm wins, once.
//!
//! - T-2: a message arm and a signal arm fired at the same moment from two threads,
//!   1000 times; and two message arms the same way. Exactly one arm is caught and the
//!   instance ends at that arm's end; a losing message is never served (its publisher
//!   is told `Buffered`, it is not counted delivered) and stays in the broker.
//! - T-8: a mixed-trigger gateway (message arm + timer arm) on the paused clock: a
//!   message before the deadline wins, no message lets the timer win at the deadline,
//!   a message at the deadline races it (exactly one wins), a message after it is
//!   buffered. And the same race with a zero-length timer on a multi-thread runtime.
//! - A receive-task arm, and a three-arm gateway.

// `common`'s `flavors!` is not used here: every scenario needs an engine of its own.
#[allow(unused_macros)]
mod common;

use std::sync::{Arc, Barrier};
use std::time::Duration;

use common::*;
use thresh::{process, BrokerStats, Engine, Happening, History, ProcessData, Published};
use tokio::time::Instant;

#[derive(Clone, Debug, Default, PartialEq, ProcessData)]
struct Deal {
    id: String,
    paid: u64,
    note: String,
}

fn deal(id: impl Into<String>) -> Deal {
    Deal {
        id: id.into(),
        ..Deal::default()
    }
}

/// The exact history of a gateway `gate` after `s` whose arm `arm` won, changing
/// `changed`, and ended at `end`. `Caught` for a catch event, `Completed` for a
/// receive task.
fn won(
    arm: &'static str,
    changed: &[&'static str],
    end: &'static str,
    task: bool,
) -> Vec<(u32, &'static str, Happening)> {
    let changed = changed.to_vec();
    vec![
        (0, "s", Happening::Started),
        (0, "gate", Happening::Parked),
        (
            0,
            "gate",
            Happening::Routed {
                to: vec![arm].into(),
            },
        ),
        (
            0,
            arm,
            if task {
                Happening::Completed {
                    changed: changed.into(),
                }
            } else {
                Happening::Caught {
                    changed: changed.into(),
                }
            },
        ),
        (0, end, Happening::Ended),
    ]
}

/// Which arm of `arms` was caught; asserts that exactly one was, once.
#[track_caller]
fn the_winner(history: &History, arms: &[&'static str]) -> &'static str {
    let caught: Vec<&'static str> = arms
        .iter()
        .copied()
        .filter(|arm| {
            history.count(arm, |w| {
                matches!(w, Happening::Caught { .. } | Happening::Completed { .. })
            }) > 0
        })
        .collect();
    assert_eq!(caught.len(), 1, "exactly one arm wins\n{history}");
    for arm in arms {
        assert!(history.count(arm, |_| true) <= 1, "{history}");
    }
    assert_eq!(routes(history, "gate"), [[caught[0]]], "{history}");
    caught[0]
}

/// Run `runs` copies of `scenario`, at most `at_once` at a time, on the current
/// runtime; re-raise the first failure.
async fn many<F, Fut>(runs: usize, at_once: usize, scenario: F)
where
    F: Fn(usize) -> Fut,
    Fut: std::future::Future<Output = ()> + Send + 'static,
{
    let permits = Arc::new(tokio::sync::Semaphore::new(at_once));
    let mut set = tokio::task::JoinSet::new();
    for i in 0..runs {
        let permit = permits.clone().acquire_owned().await.expect("semaphore");
        let run = scenario(i);
        set.spawn(async move {
            run.await;
            drop(permit);
        });
        while let Some(done) = set.try_join_next() {
            if let Err(error) = done {
                std::panic::resume_unwind(error.into_panic());
            }
        }
    }
    while let Some(done) = set.join_next().await {
        if let Err(error) = done {
            std::panic::resume_unwind(error.into_panic());
        }
    }
}

/// Run `a` and `b` on two blocking-pool threads released together by a barrier.
async fn at_the_same_time<A, B>(a: A, b: B) -> (A::Output, B::Output)
where
    A: FnOnce0 + Send + 'static,
    B: FnOnce0 + Send + 'static,
{
    let barrier = Arc::new(Barrier::new(2));
    let (ba, bb) = (barrier.clone(), barrier);
    let a = tokio::task::spawn_blocking(move || {
        ba.wait();
        a.call()
    });
    let b = tokio::task::spawn_blocking(move || {
        bb.wait();
        b.call()
    });
    (a.await.expect("thread a"), b.await.expect("thread b"))
}

/// A `FnOnce() -> T` whose output is `Send` (so both halves can come back).
trait FnOnce0 {
    type Output: Send + 'static;
    fn call(self) -> Self::Output;
}

impl<T: Send + 'static, F: FnOnce() -> T> FnOnce0 for F {
    type Output = T;
    fn call(self) -> T {
        self()
    }
}

// ----- T-2 -------------------------------------------------------------------------------

process! {
    /// T-2: a message arm and a signal arm.
    RACE: Deal {
        start       s;
        event_based gate;
        catch       paid: message("payment", key = |d| d.id.clone(), apply = |d, p: &u64| d.paid = *p);
        catch       called_off: signal("call_off", apply = |d, why: &String| d.note = why.clone());
        end         paid_end;
        end         off_end;
        s -> gate -> paid, called_off;
        paid -> paid_end;
        called_off -> off_end;
    }
}

/// T-2 (FR-4). A message and a signal fired at the gateway at the same moment from two
/// threads — in three runs of four once it is parked, in the fourth right after the
/// start (the message may be buffered, the signal may find nobody). Exactly one arm
/// is caught, the token is routed to it alone and ends at its end, the data has its
/// payload only. The answers tell the truth: a signal that reached nobody cannot have
/// won, and once the gateway is parked the winner's trigger alone was served (the
/// message `Delivered` and counted, or the signal reaching one catcher); a losing
/// message is not lost: it is buffered.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn t2_a_message_and_a_signal_race_exactly_one_wins() {
    many(1000, 8, |i| async move {
        // An engine per run: a signal reaches every instance of its engine.
        let engine = Engine::new();
        let id = format!("r{i}");
        let h = engine.start(&RACE, deal(&id)).await.unwrap();
        if !i.is_multiple_of(4) {
            expect_parked(&h, "gate").await;
        }
        let (publisher, broadcaster) = (engine.clone(), engine.clone());
        let key = id.clone();
        let (published, reached) = at_the_same_time(
            move || at_once(publisher.publish_message("payment", key, 5_u64)).unwrap(),
            move || at_once(broadcaster.broadcast_signal("call_off", "too slow".to_string())).unwrap(),
        )
        .await;
        let (outcome, history) = finish(&h).await;
        let data = completed(outcome, &history);
        let winner = the_winner(&history, &["paid", "called_off"]);
        assert_ne!(published, Published::Dropped);
        if winner == "paid" {
            assert_eq!(steps(&history), won("paid", &["paid"], "paid_end", false));
            assert_eq!((data.paid, data.note.as_str()), (5, ""));
        } else {
            assert_eq!(reached, 1, "a signal that reached nobody won\n{history}");
            assert_eq!(
                steps(&history),
                won("called_off", &["note"], "off_end", false)
            );
            assert_eq!((data.paid, data.note.as_str()), (0, "too slow"));
        }
        let stats = engine.broker_stats();
        let said = format!(
            "run {i}: {winner} won, published {published:?}, signal reached {reached}: {stats:?}\n{history}"
        );
        assert_eq!(stats.buffered, usize::from(winner == "called_off"), "{said}");
        assert_eq!(stats.delivered, u64::from(winner == "paid"), "{said}");
        if published == Published::Delivered {
            assert_eq!(winner, "paid", "{said}");
        }
        if winner == "called_off" {
            assert_eq!(published, Published::Buffered, "{said}");
        }
        if !i.is_multiple_of(4) {
            // Parked before both: the message was served iff it won, the signal
            // reached the gateway iff it won.
            assert_eq!(published == Published::Delivered, winner == "paid", "{said}");
            assert_eq!(reached == 1, winner == "called_off", "{said}");
        }
        engine.shutdown(HANG).await.expect("the loop stops");
    })
    .await;
}

process! {
    /// T-2: two message arms.
    ANSWER: Deal {
        start       s;
        event_based gate;
        catch       accepted: message("accept", key = |d| d.id.clone(), apply = |d, p: &u64| d.paid = *p);
        catch       rejected: message("reject", key = |d| d.id.clone(), apply = |d, why: &String| d.note = why.clone());
        end         accepted_end;
        end         rejected_end;
        s -> gate -> accepted, rejected;
        accepted -> accepted_end;
        rejected -> rejected_end;
    }
}

/// T-2 with two message arms: `accept` and `reject` published at the same moment from
/// two threads (after the park in three runs of four). Exactly one arm wins; the
/// other message is not lost — it is buffered, and a later instance with that key
/// takes it. Once parked, the winner's publisher alone is told `Delivered`, the
/// loser's `Buffered`; each message is counted delivered once, by the instance
/// that took it.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn t2_two_message_arms_race_exactly_one_wins() {
    many(1000, 8, |i| async move {
        let engine = Engine::new();
        let id = format!("m{i}");
        let h = engine.start(&ANSWER, deal(&id)).await.unwrap();
        if !i.is_multiple_of(4) {
            expect_parked(&h, "gate").await;
        }
        let (e1, e2) = (engine.clone(), engine.clone());
        let (k1, k2) = (id.clone(), id.clone());
        let (accept, reject) = at_the_same_time(
            move || at_once(e1.publish_message("accept", k1, 9_u64)).unwrap(),
            move || at_once(e2.publish_message("reject", k2, "no".to_string())).unwrap(),
        )
        .await;
        let (outcome, history) = finish(&h).await;
        let data = completed(outcome, &history);
        let winner = the_winner(&history, &["accepted", "rejected"]);
        if winner == "accepted" {
            assert_eq!(
                steps(&history),
                won("accepted", &["paid"], "accepted_end", false)
            );
            assert_eq!((data.paid, data.note.as_str()), (9, ""));
        } else {
            assert_eq!(
                steps(&history),
                won("rejected", &["note"], "rejected_end", false)
            );
            assert_eq!((data.paid, data.note.as_str()), (0, "no"));
        }
        let stats = engine.broker_stats();
        let said = format!(
            "run {i}: {winner} won, accept {accept:?}, reject {reject:?}: {stats:?}\n{history}"
        );
        assert_eq!((stats.buffered, stats.delivered), (1, 1), "{said}");
        let (win, lose) = match winner {
            "accepted" => (accept, reject),
            _ => (reject, accept),
        };
        assert_eq!(lose, Published::Buffered, "{said}");
        if !i.is_multiple_of(4) {
            assert_eq!(win, Published::Delivered, "{said}");
        }
        // The loser's message waits in the buffer for the next gateway with that key.
        let (outcome, history) = run(&engine, &ANSWER, deal(&id)).await;
        completed(outcome, &history);
        let second = the_winner(&history, &["accepted", "rejected"]);
        assert_ne!(
            second, winner,
            "the losing message went to the next instance"
        );
        assert_eq!(
            (
                engine.broker_stats().buffered,
                engine.broker_stats().delivered
            ),
            (0, 2)
        );
        engine.shutdown(HANG).await.expect("the loops stop");
    })
    .await;
}

// ----- T-8 ------------------------------------------------------------------------------

process! {
    /// T-8: a message arm and a timer arm.
    DEADLINE: Deal {
        start       s;
        event_based gate;
        catch       paid: message("payment", key = |d| d.id.clone(), apply = |d, p: &u64| d.paid = *p);
        catch       too_late: timer(Duration::from_secs(10));
        end         paid_end;
        end         late_end;
        s -> gate -> paid, too_late;
        paid -> paid_end;
        too_late -> late_end;
    }
}

/// T-8 (FR-2, FR-8): a message arm and a 10 s timer arm on the paused clock, one case
/// per run:
/// 0. the message at once (maybe before the park: buffered): the message wins at 0 s;
/// 1. the message 1 ms before the deadline: it wins then;
/// 2. a message a few seconds in: it wins then;
/// 3. no message: the timer wins at exactly 10 s; a message after that is buffered;
/// 4. the message at the deadline itself: either wins, exactly one.
async fn t8_message_or_timer(_: Engine, i: usize) {
    // An engine per run, for exact broker counts.
    let engine = Engine::new();
    let id = format!("d{i}");
    let deadline = Duration::from_secs(10);
    let t0 = Instant::now();
    let h = engine.start(&DEADLINE, deal(&id)).await.unwrap();
    let case = i % 5;
    let message_at = match case {
        0 => Some(Duration::ZERO),
        1 => Some(deadline - Duration::from_millis(1)),
        2 => Some(Duration::from_millis(1_000 + 37 * (i as u64 % 200))),
        3 => None,
        _ => Some(deadline),
    };
    let mut published = None;
    if let Some(at) = message_at {
        tokio::time::sleep(at).await;
        if case != 4 {
            assert!(!h.is_finished(), "case {case}: ended before the message");
        }
        published = Some(engine.publish_message("payment", &id, 3_u64).await.unwrap());
    }
    let (outcome, history) = finish(&h).await;
    let took = t0.elapsed();
    let data = completed(outcome, &history);
    let winner = the_winner(&history, &["paid", "too_late"]);
    match (case, winner) {
        (0..=2, "paid") => {
            assert_eq!(took, message_at.expect("a message"));
            assert_eq!(steps(&history), won("paid", &["paid"], "paid_end", false));
            assert_eq!(data.paid, 3);
            assert_eq!(
                engine.broker_stats(),
                BrokerStats {
                    delivered: 1,
                    ..BrokerStats::default()
                }
            );
        }
        (3 | 4, "too_late") => {
            assert_eq!(took, deadline);
            assert_eq!(steps(&history), won("too_late", &[], "late_end", false));
            assert_eq!(data.paid, 0);
            if case == 3 {
                // Nobody waits any more: a late message is buffered.
                assert_eq!(
                    engine.publish_message("payment", &id, 4_u64).await.unwrap(),
                    Published::Buffered
                );
            }
            // The message that lost the race (or came late) was never served: its
            // publisher was told so, and it is in the buffer.
            if case == 4 {
                assert_eq!(published, Some(Published::Buffered));
            }
            assert_eq!(
                engine.broker_stats(),
                BrokerStats {
                    buffered: 1,
                    ..BrokerStats::default()
                }
            );
        }
        (4, "paid") => {
            assert_eq!(took, deadline);
            assert_eq!(published, Some(Published::Delivered));
            assert_eq!(steps(&history), won("paid", &["paid"], "paid_end", false));
        }
        (case, winner) => panic!("case {case}: `{winner}` won\n{history}"),
    }
    engine.shutdown(HANG).await.expect("the loop stops");
}

#[tokio::test(start_paused = true)]
async fn t8_message_or_timer_on_the_paused_clock() {
    repeat(500, t8_message_or_timer).await;
}

process! {
    /// T-8 on a multi-thread runtime: a timer that is due at once, listed first.
    AT_ONCE: Deal {
        start       s;
        event_based gate;
        catch       now: timer(Duration::ZERO);
        catch       paid: message("payment", key = |d| d.id.clone(), apply = |d, p: &u64| d.paid = *p);
        end         now_end;
        end         paid_end;
        s -> gate -> now, paid;
        now -> now_end;
        paid -> paid_end;
    }
}

/// T-8 raced on a multi-thread runtime: a gateway whose first arm is a timer due at
/// once and whose second is a message published from another thread right after the
/// start. Either may win — exactly one does; a losing message was never served (its
/// publisher told `Buffered`, not counted delivered) and is in the buffer.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn t8_a_due_timer_and_a_message_race_exactly_one_wins() {
    many(1000, 8, |i| async move {
        let engine = Engine::new();
        let id = format!("z{i}");
        let h = engine.start(&AT_ONCE, deal(&id)).await.unwrap();
        let (publisher, key) = (engine.clone(), id.clone());
        let published = tokio::task::spawn_blocking(move || {
            at_once(publisher.publish_message("payment", key, 1_u64)).unwrap()
        })
        .await
        .expect("publisher");
        let (outcome, history) = finish(&h).await;
        let data = completed(outcome, &history);
        let winner = the_winner(&history, &["now", "paid"]);
        if winner == "now" {
            assert_eq!(steps(&history), won("now", &[], "now_end", false));
            assert_eq!(data.paid, 0);
            assert_eq!(published, Published::Buffered);
            assert_eq!(
                engine.broker_stats(),
                BrokerStats {
                    buffered: 1,
                    ..BrokerStats::default()
                }
            );
        } else {
            assert_eq!(steps(&history), won("paid", &["paid"], "paid_end", false));
            assert_eq!(data.paid, 1);
            assert_eq!(
                engine.broker_stats(),
                BrokerStats {
                    delivered: 1,
                    ..BrokerStats::default()
                }
            );
        }
        engine.shutdown(HANG).await.expect("the loop stops");
    })
    .await;
}

// ----- more arms --------------------------------------------------------------------------

process! {
    /// A receive task as an arm, a signal arm and a timer arm.
    THREE: Deal {
        start       s;
        event_based gate;
        receive     take: message("order", key = |d| d.id.clone(), apply = |d, p: &u64| d.paid = *p);
        catch       stop: signal("stop");
        catch       wait: timer(Duration::from_secs(15));
        end         took;
        end         stopped;
        end         waited;
        s -> gate -> take, stop, wait;
        take -> took;
        stop -> stopped;
        wait -> waited;
    }
}

/// A three-arm gateway with a receive task, a signal and a timer: each can win, and
/// the others are disarmed (a later signal reaches nobody, a later message is
/// buffered). A receive task that wins records `Completed`, being a task.
#[tokio::test(start_paused = true)]
async fn a_three_arm_gateway_with_a_receive_task() {
    for case in 0..3 {
        let engine = Engine::new();
        let t0 = Instant::now();
        let h = engine.start(&THREE, deal("three")).await.unwrap();
        expect_parked(&h, "gate").await;
        match case {
            0 => assert_eq!(
                engine
                    .publish_message("order", "three", 8_u64)
                    .await
                    .unwrap(),
                Published::Delivered
            ),
            1 => assert_eq!(engine.broadcast_signal("stop", ()).await.unwrap(), 1),
            _ => {}
        }
        let (outcome, history) = finish(&h).await;
        let data = completed(outcome, &history);
        let winner = the_winner(&history, &["take", "stop", "wait"]);
        match case {
            0 => {
                assert_eq!(steps(&history), won("take", &["paid"], "took", true));
                assert_eq!(data.paid, 8);
                assert_eq!(t0.elapsed(), Duration::ZERO);
            }
            1 => {
                assert_eq!(steps(&history), won("stop", &[], "stopped", false));
                assert_eq!(t0.elapsed(), Duration::ZERO);
            }
            _ => {
                assert_eq!(winner, "wait");
                assert_eq!(steps(&history), won("wait", &[], "waited", false));
                assert_eq!(t0.elapsed(), Duration::from_secs(15));
            }
        }
        assert_eq!(engine.broadcast_signal("stop", ()).await.unwrap(), 0);
        assert_eq!(
            engine
                .publish_message("order", "three", 9_u64)
                .await
                .unwrap(),
            Published::Buffered
        );
    }
}
