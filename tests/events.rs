//! Events at run time (SRD-027; DESIGN §4 invariants 3–6, §5): catch events, receive
//! and user tasks, throws and throwing ends, the broker's bounded buffer and its
//! time-to-live, timers on the paused clock, what a message, a signal and a timer
//! each serve, and how bad payloads and panicking mappings fail an instance.
//!
//! SRD-027's scenarios, adapted to thresh:
//! - T-1 (a waiting track is parked, not spinning): `t1_*`;
//! - T-3 (an event fired in the subscribe/park window is not lost): `t3_*`;
//! - T-4 (a signal reaches every catcher; no catcher is a no-op): `t4_*`;
//! - T-5 (cancel and shutdown end parked instances promptly): `t5_*`;
//! - T-6 (correlation: a mismatch keeps the receiver waiting; the fine check runs on
//!   the current data): `t6_*`;
//! - T-2 and T-8 (the event-based gateway's deferred choice) are in `event_gate.rs`;
//! - T-9 (the complex/OR-join stress) is `complex.rs` and `or_join.rs`.
//!
//! Concurrent scenarios run on a four-worker multi-thread runtime (and, where no real
//! timer is involved, on a paused current-thread runtime too), many times each.
//! Timers only ever run on the paused clock: no assertion depends on wall-clock time.

// `i.is_multiple_of(n)` needs Rust 1.87; the workspace's MSRV is 1.85.
#![allow(clippy::manual_is_multiple_of)]

#[macro_use]
mod common;

use std::future::Future;
use std::sync::mpsc::RecvTimeoutError;
use std::time::{Duration, SystemTime};

use common::*;
use thresh::{
    process, BrokerConfig, BrokerStats, Engine, Happening, History, InstanceError, InstanceHandle,
    OpenWork, Outcome, ProcessData, Published, TrackId, WorkError,
};
use tokio::time::Instant;

#[derive(Clone, Debug, Default, PartialEq, ProcessData)]
struct Deal {
    id: String,
    /// The correlation key of `KEYED`'s catch (the other processes correlate on `id`).
    key: String,
    amount: u64,
    paid: u64,
    note: String,
    approved: bool,
    /// How many times `prep` yields before it returns (0: it is ready at once).
    spins: u32,
    ticks: u32,
}

fn deal(id: impl Into<String>) -> Deal {
    Deal {
        id: id.into(),
        ..Deal::default()
    }
}

/// A payload type no catch maps.
#[derive(Debug)]
struct Payment {
    amount: u64,
}

process! {
    /// Wait for a payment, after a task that yields `spins` times.
    PAY: Deal {
        start placed;
        task  prep = |d| async move {
            for _ in 0..d.spins {
                tokio::task::yield_now().await;
            }
            Ok(())
        };
        catch paid: message("payment", key = |d| d.id.clone(), apply = |d, p: &u64| d.paid = *p);
        end   done;
        placed -> prep -> paid -> done;
    }

    /// Wait for a payment or two hours, whichever comes first.
    PAY_OR_GIVE_UP: Deal {
        start       placed;
        event_based gate;
        catch       paid: message("payment", key = |d| d.id.clone(), apply = |d, p: &u64| d.paid = *p);
        catch       gave_up: timer(Duration::from_secs(7200));
        end         done;
        end         expired;
        placed -> gate -> paid, gave_up;
        paid -> done;
        gave_up -> expired;
    }

    /// Listen for `ping`.
    LISTENER: Deal {
        start s;
        catch heard: signal("ping", apply = |d, n: &u64| d.paid = *n);
        end   e;
        s -> heard -> e;
    }

    /// Two branches of one instance listen for the same signal.
    TWO_LISTENERS: Deal {
        start    s;
        parallel fork;
        catch    left: signal("ping", apply = |d, n: &u64| d.paid = *n);
        catch    right: signal("ping", apply = |d, n: &u64| d.amount = *n);
        parallel join;
        end      e;
        s -> fork -> left, right;
        left, right -> join -> e;
    }

    /// The fine correlation check: `rekey` changes the catch's key while it waits.
    KEYED: Deal {
        start    s;
        parallel fork;
        catch    paid: message("payment", key = |d| d.key.clone(), apply = |d, p: &u64| d.paid = *p);
        task     rekey = |d| async move {
            d.key = format!("{}-new", d.id);
            Ok(())
        };
        parallel join;
        end      e;
        s -> fork -> paid, rekey;
        paid, rekey -> join -> e;
    }

    /// A receive task.
    RECEIVER: Deal {
        start   s;
        receive take: message("order", key = |d| d.id.clone(), apply = |d, n: &u64| d.amount = *n);
        end     e;
        s -> take -> e;
    }

    /// A user task.
    APPROVAL: Deal {
        start s;
        user  approve;
        end   e;
        s -> approve -> e;
    }

    /// Two user tasks in parallel.
    TWO_APPROVALS: Deal {
        start    s;
        parallel fork;
        user     legal;
        user     finance;
        parallel join;
        end      e;
        s -> fork -> legal, finance;
        legal, finance -> join -> e;
    }

    /// A message catch reached before two user tasks.
    MESSAGE_THEN_APPROVALS: Deal {
        start    s;
        parallel fork;
        catch    ack: message("ack", key = |d| d.id.clone());
        user     legal;
        user     finance;
        parallel join;
        end      e;
        s -> fork -> ack, legal, finance;
        ack, legal, finance -> join -> e;
    }

    /// One branch throws what the other catches: a signal, then a message.
    TALK_TO_SELF: Deal {
        start    s;
        parallel fork;
        catch    heard: signal("self", apply = |d, n: &u64| d.paid = *n);
        receive  take: message("self", key = |d| d.id.clone(), apply = |d, n: &String| d.note = n.clone());
        task     prep = |d| async move {
            d.amount = 5;
            Ok(())
        };
        throw    shout: signal("self", payload = |d| d.amount);
        throw    write: message("self", key = |d| d.id.clone(), payload = |d| format!("{} to self", d.id));
        parallel join;
        end      e;
        s -> fork -> heard, take, prep;
        prep -> shout -> write;
        heard, take, write -> join -> e;
    }

    /// Wait two hours.
    NAP: Deal {
        start s;
        catch nap: timer(Duration::from_secs(7200));
        end   e;
        s -> nap -> e;
    }

    /// A signal throw in mid-flow.
    PINGER: Deal {
        start s;
        throw ping: signal("ping", payload = |d| d.amount);
        end   e;
        s -> ping -> e;
    }

    /// A message throw in mid-flow, correlated by `id`.
    SENDER: Deal {
        start s;
        throw send: message("order", key = |d| d.id.clone(), payload = |d| d.amount);
        end   e;
        s -> send -> e;
    }

    /// A throwing end: a signal.
    END_SIGNAL: Deal {
        start s;
        end   finished: signal("ping", payload = |d| d.amount);
        s -> finished;
    }

    /// A throwing end: a message.
    END_MESSAGE: Deal {
        start s;
        end   sent: message("order", key = |d| d.id.clone(), payload = |d| d.amount);
        s -> sent;
    }

    /// A catch whose mapping expects a `Payment`.
    WANTS_PAYMENT: Deal {
        start s;
        catch paid: message("payment", key = |d| d.id.clone(), apply = |d, p: &Payment| d.paid = p.amount);
        end   e;
        s -> paid -> e;
    }

    /// A signal catch whose mapping expects a `String`.
    WANTS_TEXT: Deal {
        start s;
        catch heard: signal("ping", apply = |d, text: &String| d.note = text.clone());
        end   e;
        s -> heard -> e;
    }

    /// A mapping that panics on a zero payment.
    FRAGILE: Deal {
        start s;
        catch paid: message("payment", key = |d| d.id.clone(), apply = |d, p: &u64| {
            assert!(*p != 0, "a zero payment");
            d.paid = *p;
        });
        end   e;
        s -> paid -> e;
    }

    /// A correlation key that panics on an empty id.
    BAD_KEY: Deal {
        start s;
        catch paid: message("payment", key = |d| {
            assert!(!d.id.is_empty(), "no id to correlate on");
            d.id.clone()
        }, apply = |d, p: &u64| d.paid = *p);
        end   e;
        s -> paid -> e;
    }

    /// A throw whose payload panics.
    BAD_PAYLOAD: Deal {
        start s;
        throw ping: signal("ping", payload = |d| {
            assert!(d.amount != 0, "nothing to announce");
            d.amount
        });
        end   e;
        s -> ping -> e;
    }

    /// Timers of every kind.
    AFTER: Deal {
        start s;
        catch wait: timer(Duration::from_secs(5));
        end   e;
        s -> wait -> e;
    }
    AT_PAST: Deal {
        start s;
        catch wait: timer(at = SystemTime::UNIX_EPOCH);
        end   e;
        s -> wait -> e;
    }
    AT_FUTURE: Deal {
        start s;
        catch wait: timer(at = SystemTime::now() + Duration::from_secs(15));
        end   e;
        s -> wait -> e;
    }
    EVERY: Deal {
        start s;
        catch wait: timer(every = Duration::from_secs(3), times = 4);
        end   e;
        s -> wait -> e;
    }
    EVERY_ENDLESS: Deal {
        start s;
        catch wait: timer(every = Duration::from_millis(250));
        end   e;
        s -> wait -> e;
    }

    /// A timer catch on a cycle: armed afresh on every round.
    TICKS: Deal {
        start     s;
        exclusive again;
        catch     tick: timer(Duration::from_secs(1));
        task      count = |d| async move {
            d.ticks += 1;
            Ok(())
        };
        exclusive more;
        end       e;
        s -> again -> tick -> count -> more;
        more -> again when |d| d.ticks < 3;
        more -> e else;
    }

    /// Three timers in three branches: each fires on its own registration.
    THREE_TIMERS: Deal {
        start    s;
        parallel fork;
        catch    one: timer(Duration::from_secs(1));
        catch    two: timer(Duration::from_secs(2));
        catch    also_one: timer(Duration::from_secs(1));
        parallel join;
        end      e;
        s -> fork -> one, two, also_one;
        one, two, also_one -> join -> e;
    }

    /// A timer a hundred years away.
    CENTURY: Deal {
        start s;
        catch wait: timer(Duration::from_secs(100 * 365 * 86_400));
        end   e;
        s -> wait -> e;
    }

    /// A timer that can never be represented as a deadline.
    NEVER: Deal {
        start s;
        catch wait: timer(Duration::MAX);
        end   e;
        s -> wait -> e;
    }
}

// ----- helpers ---------------------------------------------------------------------

/// Each scenario as two tests: on a paused current-thread runtime and on a four-worker
/// multi-thread runtime, `$runs` times concurrently (see `common::repeat`).
macro_rules! on_both_runtimes {
    ($runs:literal => $($scenario:ident),+ $(,)?) => {$(
        mod $scenario {
            #[tokio::test(start_paused = true)]
            async fn current_thread() {
                crate::common::repeat($runs, super::$scenario).await;
            }

            #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
            async fn multi_thread() {
                crate::common::repeat($runs, super::$scenario).await;
            }
        }
    )+};
}

/// Poll `what` (yielding in between) until it holds.
async fn until(what: &str, mut holds: impl FnMut() -> bool) {
    for _ in 0..200_000 {
        if holds() {
            return;
        }
        tokio::task::yield_now().await;
    }
    panic!("never happened: {what}");
}

fn routed(to: &[&'static str]) -> Happening {
    Happening::Routed { to: to.to_vec() }
}

fn thrown(catchers: usize) -> Happening {
    Happening::Thrown { catchers }
}

/// The history of `PAY` up to its park.
fn pay_parked() -> Vec<(u32, &'static str, Happening)> {
    vec![
        (0, "placed", Happening::Started),
        (0, "prep", Happening::TaskStarted),
        (0, "prep", done(&[])),
        (0, "paid", Happening::Parked),
    ]
}

/// The whole history of a `PAY` that was paid.
fn pay_completed() -> Vec<(u32, &'static str, Happening)> {
    let mut all = pay_parked();
    all.push((0, "paid", caught(&["paid"])));
    all.push((0, "done", Happening::Ended));
    all
}

/// Let a paused clock run an hour: every task goes idle, every due timer fires.
async fn an_hour_later() {
    tokio::time::sleep(Duration::from_secs(3600)).await;
}

/// Run `body` on a current-thread runtime with the paused clock, on a thread of its
/// own, and fail — instead of hanging — if it has not finished after a minute of real
/// time. The paused clock only moves when every task is idle; a task that spun (or
/// kept waking itself) would freeze it, and every sleep of `body` with it.
fn on_paused_runtime(body: impl Future<Output = ()> + Send + 'static) {
    let (done_tx, done_rx) = std::sync::mpsc::channel();
    let worker = std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .start_paused(true)
            .build()
            .expect("a runtime");
        runtime.block_on(body);
        let _ = done_tx.send(());
    });
    match done_rx.recv_timeout(Duration::from_secs(60)) {
        Ok(()) => worker.join().expect("the runtime's thread"),
        Err(RecvTimeoutError::Disconnected) => {
            if let Err(panic) = worker.join() {
                std::panic::resume_unwind(panic);
            }
        }
        Err(RecvTimeoutError::Timeout) => panic!(
            "the paused clock never moved: something kept the runtime busy while every instance waited"
        ),
    }
}

// ----- T-1: parked, not spinning ----------------------------------------------------

/// T-1 (FR-1, NFR-3). A hundred instances wait for a message and one waits at a
/// gateway for a message or a two-hour timer. With all of them waiting, the paused
/// clock jumps an hour ahead at once — which tokio does only when no task is ready,
/// so no waiting track (nor its loop) polls or spins. They are all still waiting, with
/// nothing new in their histories; the far timer has not fired. Then each message
/// completes its instance, with no time passing.
#[test]
fn t1_waiting_instances_are_parked_and_let_the_clock_jump() {
    on_paused_runtime(async {
        let engine = Engine::new();
        let waiting: Vec<_> = (0..100)
            .map(|i| engine.start(&PAY, deal(format!("t1-{i}"))))
            .collect();
        let gated = engine.start(&PAY_OR_GIVE_UP, deal("t1-gate"));
        for h in &waiting {
            parked_at(h, "paid", 1).await;
        }
        parked_at(&gated, "gate", 1).await;

        let t0 = Instant::now();
        an_hour_later().await;
        assert_eq!(t0.elapsed(), Duration::from_secs(3600));
        // A timeout on the outcome elapses too: they still wait.
        let still = tokio::time::timeout(Duration::from_secs(1800), waiting[0].outcome()).await;
        assert!(still.is_err(), "{:?}", still);
        assert_eq!(t0.elapsed(), Duration::from_secs(5400));
        for h in &waiting {
            assert!(!h.is_finished());
            assert_eq!(steps(&h.history().await), pay_parked());
        }
        assert_eq!(
            steps(&gated.history().await),
            [
                (0, "placed", Happening::Started),
                (0, "gate", Happening::Parked)
            ]
        );

        for i in 0..waiting.len() {
            let published = engine.publish_message("payment", format!("t1-{i}"), i as u64 + 1);
            assert_eq!(published, Published::Delivered);
        }
        assert_eq!(
            engine.publish_message("payment", "t1-gate", 7_u64),
            Published::Delivered
        );
        for (i, h) in waiting.iter().enumerate() {
            let (outcome, history) = finish(h).await;
            assert_eq!(completed(outcome, &history).paid, i as u64 + 1);
            assert_eq!(steps(&history), pay_completed());
        }
        let (outcome, history) = finish(&gated).await;
        assert_eq!(completed(outcome, &history).paid, 7);
        assert_eq!(
            steps(&history),
            [
                (0, "placed", Happening::Started),
                (0, "gate", Happening::Parked),
                (0, "gate", routed(&["paid"])),
                (0, "paid", caught(&["paid"])),
                (0, "done", Happening::Ended),
            ]
        );
        // Delivering and running them took no time at all.
        assert_eq!(t0.elapsed(), Duration::from_secs(5400));
        assert_eq!(
            engine.broker_stats(),
            BrokerStats {
                delivered: 101,
                ..BrokerStats::default()
            }
        );
        engine.shutdown(HANG).await.expect("every loop stops");
        assert_eq!(engine.running_instances(), 0);
    });
}

/// T-1, measured: while 200 instances wait on a real-clock runtime, its one worker is
/// idle — busy for a small part of the time at most (a spinning track would keep it
/// busy throughout). The bound is loose on purpose; what it asserts is "parked".
#[test]
fn t1_waiting_instances_keep_the_worker_idle() {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .expect("a runtime");
    runtime.block_on(async {
        let engine = Engine::new();
        let waiting: Vec<_> = (0..200)
            .map(|i| engine.start(&PAY, deal(format!("idle-{i}"))))
            .collect();
        for h in &waiting {
            parked_at(h, "paid", 1).await;
        }
        let metrics = tokio::runtime::Handle::current().metrics();
        let before = metrics.worker_total_busy_duration(0);
        let window = Duration::from_millis(300);
        tokio::time::sleep(window).await;
        let busy = metrics.worker_total_busy_duration(0) - before;
        assert!(
            busy < window / 3,
            "the worker was busy {busy:?} of {window:?} while every instance waited"
        );
        for (i, h) in waiting.iter().enumerate() {
            assert!(!h.is_finished());
            engine.publish_message("payment", format!("idle-{i}"), 1_u64);
        }
        for h in &waiting {
            let (outcome, history) = finish(h).await;
            completed(outcome, &history);
            assert_eq!(steps(&history), pay_completed());
        }
    });
}

// ----- T-3: nothing lost in the park window ----------------------------------------

/// T-3 (FR-5). The message is published before the start (buffered), right after it
/// (the loop may not have run yet), after a random pause, from another thread while
/// the loop runs, or once the instance is parked; `prep` is ready at once or yields
/// 1–3 times first, so the park itself moves around. The instance always completes
/// with that message's payload, and the broker delivered it exactly once.
async fn t3_a_message_in_the_park_window_is_not_lost(_: Engine, i: usize) {
    let engine = Engine::new();
    let id = format!("t3-{i}");
    let amount = 1_000 + i as u64;
    let data = Deal {
        spins: (i / 5 % 4) as u32,
        ..deal(&id)
    };
    let (handle, published) = match i % 5 {
        0 => {
            let published = engine.publish_message("payment", &id, amount);
            assert_eq!(published, Published::Buffered);
            (engine.start(&PAY, data), published)
        }
        1 => {
            let handle = engine.start(&PAY, data);
            (handle, engine.publish_message("payment", &id, amount))
        }
        2 => {
            let handle = engine.start(&PAY, data);
            jitter().await;
            (handle, engine.publish_message("payment", &id, amount))
        }
        3 => {
            let handle = engine.start(&PAY, data);
            let publisher = engine.clone();
            let key = id.clone();
            let published = std::thread::spawn(move || {
                std::thread::yield_now();
                publisher.publish_message("payment", key, amount)
            })
            .join()
            .expect("publisher thread");
            (handle, published)
        }
        _ => {
            let handle = engine.start(&PAY, data);
            parked_at(&handle, "paid", 1).await;
            let published = engine.publish_message("payment", &id, amount);
            assert_eq!(published, Published::Delivered);
            (handle, published)
        }
    };
    assert_ne!(published, Published::Dropped);
    let (outcome, history) = finish(&handle).await;
    assert_eq!(completed(outcome, &history).paid, amount);
    assert_eq!(steps(&history), pay_completed());
    assert_eq!(
        engine.broker_stats(),
        BrokerStats {
            delivered: 1,
            ..BrokerStats::default()
        },
        "run {i}: published {published:?}"
    );
    engine.shutdown(HANG).await.expect("the loop stops");
}

on_both_runtimes!(500 => t3_a_message_in_the_park_window_is_not_lost);

/// A message published before any catch waits is buffered and delivered when the
/// catch subscribes.
#[tokio::test(start_paused = true)]
async fn a_message_buffered_before_subscribe_is_delivered() {
    let engine = Engine::new();
    assert_eq!(
        engine.publish_message("payment", "early", 42_u64),
        Published::Buffered
    );
    assert_eq!(
        engine.broker_stats(),
        BrokerStats {
            buffered: 1,
            ..BrokerStats::default()
        }
    );
    let (outcome, history) = run(&engine, &PAY, deal("early")).await;
    assert_eq!(completed(outcome, &history).paid, 42);
    assert_eq!(steps(&history), pay_completed());
    assert_eq!(
        engine.broker_stats(),
        BrokerStats {
            delivered: 1,
            ..BrokerStats::default()
        }
    );
}

// ----- the broker's bound and time-to-live -------------------------------------------

/// With room for two messages, a third with no waiter is dropped and counted; the two
/// buffered ones are delivered on subscribe; the dropped one is gone (its waiter waits
/// until it is published again).
#[tokio::test(start_paused = true)]
async fn the_buffer_is_bounded() {
    let engine = Engine::with_broker(BrokerConfig {
        capacity: 2,
        ttl: Duration::from_secs(60),
    });
    assert_eq!(
        engine.publish_message("payment", "a", 1_u64),
        Published::Buffered
    );
    assert_eq!(
        engine.publish_message("payment", "b", 2_u64),
        Published::Buffered
    );
    assert_eq!(
        engine.publish_message("payment", "c", 3_u64),
        Published::Dropped
    );
    assert_eq!(
        engine.broker_stats(),
        BrokerStats {
            buffered: 2,
            dropped_full: 1,
            ..BrokerStats::default()
        }
    );
    for (id, paid) in [("a", 1), ("b", 2)] {
        let (outcome, history) = run(&engine, &PAY, deal(id)).await;
        assert_eq!(completed(outcome, &history).paid, paid);
    }
    let c = engine.start(&PAY, deal("c"));
    parked_at(&c, "paid", 1).await;
    an_hour_later().await;
    assert!(!c.is_finished());
    assert_eq!(steps(&c.history().await), pay_parked());
    // The buffer has room again.
    assert_eq!(
        engine.publish_message("payment", "d", 4_u64),
        Published::Buffered
    );
    assert_eq!(
        engine.publish_message("payment", "c", 3_u64),
        Published::Delivered
    );
    let (outcome, history) = finish(&c).await;
    assert_eq!(completed(outcome, &history).paid, 3);
    assert_eq!(
        engine.broker_stats(),
        BrokerStats {
            delivered: 3,
            buffered: 1,
            dropped_full: 1,
            ..BrokerStats::default()
        }
    );
}

/// A buffered message expires after its time-to-live: a catch subscribing later gets
/// nothing (and the expiry is counted); one subscribing in time gets it.
#[tokio::test(start_paused = true)]
async fn a_buffered_message_expires() {
    let ttl = Duration::from_secs(5);
    let engine = Engine::with_broker(BrokerConfig { capacity: 10, ttl });
    assert_eq!(
        engine.publish_message("payment", "late", 1_u64),
        Published::Buffered
    );
    tokio::time::sleep(ttl - Duration::from_millis(1)).await;
    assert_eq!(
        engine.publish_message("payment", "fresh", 2_u64),
        Published::Buffered
    );
    tokio::time::sleep(Duration::from_millis(2)).await;
    // `late` is past its time-to-live, `fresh` is not.
    let late = engine.start(&PAY, deal("late"));
    parked_at(&late, "paid", 1).await;
    assert_eq!(
        engine.broker_stats(),
        BrokerStats {
            buffered: 1,
            expired: 1,
            ..BrokerStats::default()
        }
    );
    let (outcome, history) = run(&engine, &PAY, deal("fresh")).await;
    assert_eq!(completed(outcome, &history).paid, 2);
    an_hour_later().await;
    assert!(!late.is_finished());
    assert_eq!(steps(&late.history().await), pay_parked());
    assert_eq!(
        engine.publish_message("payment", "late", 3_u64),
        Published::Delivered
    );
    let (outcome, history) = finish(&late).await;
    assert_eq!(completed(outcome, &history).paid, 3);
    assert_eq!(
        engine.broker_stats(),
        BrokerStats {
            delivered: 2,
            expired: 1,
            ..BrokerStats::default()
        }
    );
}

/// A full buffer first purges what has expired: the new message fits.
#[tokio::test(start_paused = true)]
async fn a_full_buffer_purges_expired_messages() {
    let engine = Engine::with_broker(BrokerConfig {
        capacity: 1,
        ttl: Duration::from_secs(5),
    });
    assert_eq!(
        engine.publish_message("payment", "a", 1_u64),
        Published::Buffered
    );
    assert_eq!(
        engine.publish_message("payment", "b", 2_u64),
        Published::Dropped
    );
    tokio::time::sleep(Duration::from_secs(6)).await;
    assert_eq!(
        engine.publish_message("payment", "c", 3_u64),
        Published::Buffered
    );
    assert_eq!(
        engine.broker_stats(),
        BrokerStats {
            buffered: 1,
            dropped_full: 1,
            expired: 1,
            ..BrokerStats::default()
        }
    );
    let (outcome, history) = run(&engine, &PAY, deal("c")).await;
    assert_eq!(completed(outcome, &history).paid, 3);
}

// ----- multiplicity: a message one waiter, a signal every waiter, a timer its own ---

/// Two instances wait for the same message name and key: one publish advances
/// exactly one (the one that subscribed first), a second publish the other.
#[tokio::test(start_paused = true)]
async fn a_message_serves_exactly_one_correlated_waiter() {
    let engine = Engine::new();
    let first = engine.start(&PAY, deal("same"));
    parked_at(&first, "paid", 1).await;
    let second = engine.start(&PAY, deal("same"));
    parked_at(&second, "paid", 1).await;

    assert_eq!(
        engine.publish_message("payment", "same", 1_u64),
        Published::Delivered
    );
    let (outcome, history) = finish(&first).await;
    assert_eq!(completed(outcome, &history).paid, 1);
    an_hour_later().await;
    assert!(!second.is_finished());
    assert_eq!(steps(&second.history().await), pay_parked());

    assert_eq!(
        engine.publish_message("payment", "same", 2_u64),
        Published::Delivered
    );
    let (outcome, history) = finish(&second).await;
    assert_eq!(completed(outcome, &history).paid, 2);
    assert_eq!(steps(&history), pay_completed());
    assert_eq!(
        engine.broker_stats(),
        BrokerStats {
            delivered: 2,
            ..BrokerStats::default()
        }
    );
}

/// The same, raced: two instances wait (or are about to) on one key and two messages
/// are published at once from two threads. Each instance takes exactly one, and the
/// two take different ones.
async fn two_messages_two_waiters(_: Engine, i: usize) {
    let engine = Engine::new();
    let key = format!("pair-{i}");
    let a = engine.start(&PAY, deal(&key));
    let b = engine.start(&PAY, deal(&key));
    if i % 2 == 0 {
        parked_at(&a, "paid", 1).await;
        parked_at(&b, "paid", 1).await;
    }
    let publishers: Vec<_> = [1_u64, 2]
        .into_iter()
        .map(|amount| {
            let (engine, key) = (engine.clone(), key.clone());
            std::thread::spawn(move || engine.publish_message("payment", key, amount))
        })
        .collect();
    for publisher in publishers {
        assert_ne!(publisher.join().expect("publisher"), Published::Dropped);
    }
    let mut paid = Vec::new();
    for h in [&a, &b] {
        let (outcome, history) = finish(h).await;
        paid.push(completed(outcome, &history).paid);
        assert_eq!(steps(&history), pay_completed());
    }
    paid.sort_unstable();
    assert_eq!(paid, [1, 2]);
    assert_eq!(
        engine.broker_stats(),
        BrokerStats {
            delivered: 2,
            ..BrokerStats::default()
        }
    );
    engine.shutdown(HANG).await.expect("loops stop");
}

flavors!(two_messages_two_waiters);

/// One broadcast reaches every waiting catcher: two in one instance's parallel
/// branches and one in another instance.
#[tokio::test(start_paused = true)]
async fn a_signal_serves_every_waiter() {
    let engine = Engine::new();
    let both = engine.start(&TWO_LISTENERS, deal("both"));
    let one = engine.start(&LISTENER, deal("one"));
    parked_at(&both, "left", 1).await;
    parked_at(&both, "right", 1).await;
    parked_at(&one, "heard", 1).await;
    assert_eq!(engine.broadcast_signal("ping", 9_u64), 3);
    let (outcome, history) = finish(&both).await;
    let data = completed(outcome, &history);
    assert_eq!((data.paid, data.amount), (9, 9));
    assert_eq!(history.count("left", |w| *w == caught(&["paid"])), 1);
    assert_eq!(history.count("right", |w| *w == caught(&["amount"])), 1);
    assert_eq!(history.fired("join"), 1);
    let (outcome, history) = finish(&one).await;
    assert_eq!(completed(outcome, &history).paid, 9);
    // A signal is not a message: the broker saw nothing.
    assert_eq!(engine.broker_stats(), BrokerStats::default());
}

/// A signal broadcast before anyone waits is not kept for a later catcher.
#[tokio::test(start_paused = true)]
async fn a_signal_is_not_kept_for_a_later_catcher() {
    let engine = Engine::new();
    assert_eq!(engine.broadcast_signal("ping", 5_u64), 0);
    let h = engine.start(&LISTENER, deal("later"));
    parked_at(&h, "heard", 1).await;
    an_hour_later().await;
    assert!(!h.is_finished());
    assert_eq!(engine.broadcast_signal("ping", 6_u64), 1);
    let (outcome, history) = finish(&h).await;
    assert_eq!(completed(outcome, &history).paid, 6);
}

/// Three timers in three branches (1 s, 2 s, 1 s) each fire on their own
/// registration: at 1.5 s both one-second timers have fired and the two-second one
/// has not; the instance completes at exactly 2 s.
#[tokio::test(start_paused = true)]
async fn each_timer_fires_on_its_own_registration() {
    let engine = Engine::new();
    let t0 = Instant::now();
    let h = engine.start(&THREE_TIMERS, deal("timers"));
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let history = h.history().await;
    assert_eq!(history.count("one", |w| *w == caught(&[])), 1, "{history}");
    assert_eq!(
        history.count("also_one", |w| *w == caught(&[])),
        1,
        "{history}"
    );
    assert_eq!(
        history.count("two", |w| *w == Happening::Parked),
        1,
        "{history}"
    );
    assert_eq!(history.count("two", |w| *w == caught(&[])), 0, "{history}");
    let (outcome, history) = finish(&h).await;
    completed(outcome, &history);
    assert_eq!(t0.elapsed(), Duration::from_secs(2));
    for node in ["one", "two", "also_one"] {
        assert_eq!(history.count(node, |w| *w == caught(&[])), 1, "{history}");
    }
    assert_eq!(history.fired("join"), 1);
}

// ----- T-4: a signal reaches every catcher -------------------------------------------

/// T-4 (FR-6). Two hundred instances wait for `ping`; a bystander waits for a message.
/// A broadcast nobody catches reaches 0 and changes nothing. `ping`, broadcast from
/// another thread, reaches exactly the 200 and each completes with its payload; the
/// bystander is untouched; a second `ping` reaches nobody. Five rounds, each on a
/// fresh engine.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn t4_a_signal_reaches_every_catcher_across_instances() {
    for round in 0..5_u64 {
        let engine = Engine::new();
        let listeners: Vec<_> = (0..200)
            .map(|i| engine.start(&LISTENER, deal(format!("l{i}"))))
            .collect();
        let bystander = engine.start(&PAY, deal("bystander"));
        for h in &listeners {
            parked_at(h, "heard", 1).await;
        }
        parked_at(&bystander, "paid", 1).await;

        assert_eq!(engine.broadcast_signal("nobody-listens", 1_u64), 0);
        for _ in 0..100 {
            tokio::task::yield_now().await;
        }
        for h in &listeners {
            assert!(!h.is_finished());
            assert_eq!(
                steps(&h.history().await),
                [
                    (0, "s", Happening::Started),
                    (0, "heard", Happening::Parked)
                ]
            );
        }

        let payload = 1_000 + round;
        let broadcaster = engine.clone();
        let reached =
            tokio::task::spawn_blocking(move || broadcaster.broadcast_signal("ping", payload))
                .await
                .expect("broadcaster");
        assert_eq!(reached, 200);
        for h in &listeners {
            let (outcome, history) = finish(h).await;
            assert_eq!(completed(outcome, &history).paid, payload);
            assert_eq!(
                steps(&history),
                [
                    (0, "s", Happening::Started),
                    (0, "heard", Happening::Parked),
                    (0, "heard", caught(&["paid"])),
                    (0, "e", Happening::Ended),
                ]
            );
        }
        assert_eq!(engine.broadcast_signal("ping", 0_u64), 0);
        assert!(!bystander.is_finished());
        assert_eq!(steps(&bystander.history().await), pay_parked());
        assert_eq!(engine.broker_stats(), BrokerStats::default());
        engine.shutdown(HANG).await.expect("every loop stops");
        assert_eq!(engine.running_instances(), 0);
        assert!(matches!(bystander.outcome().await, Outcome::Cancelled(_)));
    }
}

// ----- T-5: cancel and shutdown end parked instances promptly -------------------------

/// What a parked instance of each kind waits at.
const PARKED_KINDS: usize = 6;

fn start_parked_kind(
    engine: &Engine,
    kind: usize,
    id: &str,
) -> (InstanceHandle<Deal>, &'static str) {
    match kind % PARKED_KINDS {
        0 => (engine.start(&PAY, deal(id)), "paid"),
        1 => (engine.start(&RECEIVER, deal(id)), "take"),
        2 => (engine.start(&APPROVAL, deal(id)), "approve"),
        3 => (engine.start(&PAY_OR_GIVE_UP, deal(id)), "gate"),
        4 => (engine.start(&NAP, deal(id)), "nap"),
        _ => (engine.start(&LISTENER, deal(id)), "heard"),
    }
}

/// T-5 (FR-7). An instance parked at a message catch, a receive task, a user task, an
/// event-based gateway, a timer or a signal catch is cancelled: its outcome is
/// `Cancelled` with its data, the history ends with `Cancelled` where it waited, it
/// took no time on the paused clock, and its subscriptions are gone (a broadcast
/// reaches nobody, a message for it is buffered, it has no open work).
async fn t5_cancel_a_parked_instance(_: Engine, i: usize) {
    let engine = Engine::new();
    let id = format!("t5-{i}");
    let (h, at) = start_parked_kind(&engine, i, &id);
    let before = steps(&parked_at(&h, at, 1).await);
    assert_eq!(before.last(), Some(&(0, at, Happening::Parked)));
    let t0 = Instant::now();
    h.cancel();
    let (outcome, history) = finish(&h).await;
    assert!(t0.elapsed() < Duration::from_secs(1));
    match outcome {
        Outcome::Cancelled(data) => assert_eq!(data, deal(&id)),
        other => panic!("expected a cancelled instance, got {other:?}\n{history}"),
    }
    let mut expected = before;
    expected.push((0, at, Happening::Cancelled));
    assert_eq!(steps(&history), expected);

    assert_eq!(engine.broadcast_signal("ping", 1_u64), 0);
    assert_eq!(
        engine.publish_message("payment", &id, 1_u64),
        Published::Buffered
    );
    assert_eq!(
        engine.publish_message("order", &id, 1_u64),
        Published::Buffered
    );
    assert_eq!(h.open_work().await, []);
    assert_eq!(
        h.complete("approve", |d| d.approved = true).await,
        Err(WorkError::InstanceEnded)
    );
    engine.shutdown(HANG).await.expect("the loop stops");
    assert_eq!(engine.running_instances(), 0);
}

on_both_runtimes!(300 => t5_cancel_a_parked_instance);

/// T-5, engine-wide: 120 instances parked in every way; `shutdown` returns `Ok` well
/// within its deadline (on the paused clock: without the clock moving), every outcome
/// is `Cancelled` with the history ending where the instance waited, no instance loop
/// is left, and an instance started afterwards is cancelled at once.
async fn t5_shutdown_with_parked_instances() {
    let engine = Engine::new();
    let mut parked = Vec::new();
    for i in 0..120 {
        let (h, at) = start_parked_kind(&engine, i, &format!("s{i}"));
        parked.push((h, at));
    }
    for (h, at) in &parked {
        parked_at(h, at, 1).await;
    }
    assert_eq!(engine.running_instances(), 120);
    let t0 = Instant::now();
    engine
        .shutdown(Duration::from_secs(5))
        .await
        .expect("shutdown within its deadline");
    assert!(t0.elapsed() < Duration::from_secs(5));
    assert_eq!(engine.running_instances(), 0);
    for (h, at) in &parked {
        assert!(h.is_finished());
        let (outcome, history) = finish(h).await;
        assert!(matches!(outcome, Outcome::Cancelled(_)), "{outcome:?}");
        assert_eq!(
            history.steps().last().map(|s| (s.node, s.what.clone())),
            Some((*at, Happening::Cancelled)),
            "{history}"
        );
    }
    assert_eq!(engine.broadcast_signal("ping", 1_u64), 0);
    assert_eq!(
        engine.publish_message("payment", "s0", 1_u64),
        Published::Buffered
    );
    let late = engine.start(&PAY, deal("after"));
    let (outcome, history) = finish(&late).await;
    assert!(
        matches!(outcome, Outcome::Cancelled(_)),
        "{outcome:?}\n{history}"
    );
}

#[tokio::test(start_paused = true)]
async fn t5_shutdown_with_parked_instances_current_thread() {
    t5_shutdown_with_parked_instances().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn t5_shutdown_with_parked_instances_multi_thread() {
    t5_shutdown_with_parked_instances().await;
}

/// T-5 and the broker: a message on its way to an instance that is being cancelled is
/// not lost. The cancel is sent first, then the message — which the hub hands to the
/// instance, whose catch is still subscribed (`Delivered`). The loop handles the
/// cancel first and ends; the message, which no track took, goes back to the broker:
/// it is buffered, and the next instance with that key gets it.
#[tokio::test(start_paused = true)]
async fn t5_a_message_racing_a_cancel_goes_back_to_the_broker() {
    for kind in [0, 3] {
        let engine = Engine::new();
        let (h, at) = start_parked_kind(&engine, kind, "racy");
        parked_at(&h, at, 1).await;
        h.cancel();
        assert_eq!(
            engine.publish_message("payment", "racy", 4_u64),
            Published::Delivered
        );
        let (outcome, history) = finish(&h).await;
        assert!(
            matches!(outcome, Outcome::Cancelled(_)),
            "{outcome:?}\n{history}"
        );
        assert_eq!(history.count(at, |w| *w == Happening::Cancelled), 1);
        assert_eq!(
            engine.broker_stats().buffered,
            1,
            "the message went down with the cancelled instance: {:?}",
            engine.broker_stats()
        );
        let (outcome, history) = run(&engine, &PAY, deal("racy")).await;
        assert_eq!(completed(outcome, &history).paid, 4);
    }
}

/// The same race with the cancel and the message sent at once from two threads (in
/// odd runs before the instance even parked). Either the instance caught the message
/// and completed — the buffer is then empty — or it was cancelled without catching
/// anything, and the message is back in the buffer at most once. (It may also have
/// been handed to the track just before the cancel stopped it: that is not
/// observable, so this race does not insist on the buffer; the deterministic test
/// above does.)
async fn t5_cancel_and_message_race(_: Engine, i: usize) {
    let engine = Engine::new();
    let id = format!("cr{i}");
    let h = engine.start(&PAY, deal(&id));
    if i % 2 == 0 {
        parked_at(&h, "paid", 1).await;
    }
    let barrier = std::sync::Arc::new(std::sync::Barrier::new(2));
    let (b1, b2) = (barrier.clone(), barrier);
    let canceller = h.clone();
    let cancel = std::thread::spawn(move || {
        b1.wait();
        canceller.cancel();
    });
    let (publisher, key) = (engine.clone(), id.clone());
    let publish = std::thread::spawn(move || {
        b2.wait();
        publisher.publish_message("payment", key, 6_u64)
    });
    cancel.join().expect("canceller");
    let published = publish.join().expect("publisher");
    let (outcome, history) = finish(&h).await;
    let buffered = engine.broker_stats().buffered;
    match outcome {
        Outcome::Completed(data) => {
            assert_eq!(data.paid, 6);
            assert_eq!(steps(&history), pay_completed());
            assert_eq!(buffered, 0, "published {published:?}");
        }
        Outcome::Cancelled(_) => {
            assert_eq!(
                history.count("paid", |w| matches!(w, Happening::Caught { .. })),
                0
            );
            assert!(
                buffered <= 1,
                "published {published:?}, {buffered} buffered"
            );
        }
        other => panic!("{other:?}\n{history}"),
    }
    engine.shutdown(HANG).await.expect("the loop stops");
}

flavors!(t5_cancel_and_message_race);

// ----- T-6: correlation -----------------------------------------------------------------

/// T-6 (FR-8), coarse: a message with another key does not reach the waiter (it is
/// buffered for its own key, the history shows no catch); one with its key does.
#[tokio::test(start_paused = true)]
async fn t6_a_mismatching_key_leaves_the_receiver_waiting() {
    let engine = Engine::new();
    let h = engine.start(&PAY, deal("A"));
    parked_at(&h, "paid", 1).await;
    assert_eq!(
        engine.publish_message("payment", "B", 1_u64),
        Published::Buffered
    );
    assert_eq!(
        engine.publish_message("pay", "A", 1_u64),
        Published::Buffered
    );
    an_hour_later().await;
    assert!(!h.is_finished());
    assert_eq!(steps(&h.history().await), pay_parked());
    assert_eq!(
        engine.broker_stats(),
        BrokerStats {
            buffered: 2,
            ..BrokerStats::default()
        }
    );
    assert_eq!(
        engine.publish_message("payment", "A", 2_u64),
        Published::Delivered
    );
    let (outcome, history) = finish(&h).await;
    assert_eq!(completed(outcome, &history).paid, 2);
    assert_eq!(steps(&history), pay_completed());
    assert_eq!(
        engine.broker_stats(),
        BrokerStats {
            delivered: 1,
            buffered: 2,
            ..BrokerStats::default()
        }
    );
}

/// The history of `KEYED` up to the point where `paid` waits and `rekey` is done.
fn keyed_waiting() -> Vec<(u32, &'static str, Happening)> {
    vec![
        (0, "s", Happening::Started),
        (0, "fork", routed(&["paid", "rekey"])),
        (1, "fork", Happening::Spawned { from: TrackId(0) }),
        (0, "paid", Happening::Parked),
        (1, "rekey", Happening::TaskStarted),
        (1, "rekey", done(&["key"])),
        (1, "join", Happening::Waiting),
    ]
}

/// Wait until the history has at least as many steps as `expected`, then assert that
/// it is exactly `expected`.
async fn history_becomes<D: Clone>(
    handle: &InstanceHandle<D>,
    expected: &[(u32, &'static str, Happening)],
) {
    for _ in 0..200_000 {
        let history = handle.history().await;
        if history.steps().len() >= expected.len() {
            assert_eq!(steps(&history), expected, "\n{history}");
            return;
        }
        tokio::task::yield_now().await;
    }
    panic!("instance {} never got that far", handle.id());
}

/// T-6 (FR-8), fine: `paid` subscribes under `<id>-old`, then the parallel `rekey`
/// changes the key to `<id>-new` while `paid` waits. A message for the old key still
/// reaches the instance (the hub matched the subscription), but the loop's check on
/// the current data fails: it is dropped and counted in `dropped_mismatch`, and the
/// track stays parked — now under its new key, which a message for `<id>-new`
/// reaches (`Delivered`, not buffered). In odd runs the `<id>-new` message was
/// buffered before the start, and the re-subscription picks it up.
async fn t6_the_fine_check_uses_the_current_key(_: Engine, i: usize) {
    let engine = Engine::new();
    let id = format!("k{i}");
    let (old, new) = (format!("{id}-old"), format!("{id}-new"));
    let early = i % 2 == 1;
    if early {
        assert_eq!(
            engine.publish_message("payment", &new, 2_u64),
            Published::Buffered
        );
    }
    let h = engine.start(
        &KEYED,
        Deal {
            key: old.clone(),
            ..deal(&id)
        },
    );
    history_becomes(&h, &keyed_waiting()).await;
    assert_eq!(
        engine.publish_message("payment", &old, 1_u64),
        Published::Delivered
    );
    until("the mismatch is counted", || {
        engine.broker_stats().dropped_mismatch == 1
    })
    .await;
    if !early {
        for _ in 0..50 {
            tokio::task::yield_now().await;
        }
        assert!(!h.is_finished());
        assert_eq!(steps(&h.history().await), keyed_waiting());
        assert_eq!(
            engine.broker_stats(),
            BrokerStats {
                delivered: 1,
                dropped_mismatch: 1,
                ..BrokerStats::default()
            }
        );
        assert_eq!(
            engine.publish_message("payment", &new, 2_u64),
            Published::Delivered
        );
    }
    let (outcome, history) = finish(&h).await;
    let data = completed(outcome, &history);
    assert_eq!((data.paid, data.key.as_str()), (2, new.as_str()));
    let mut expected = keyed_waiting();
    expected.extend([
        (0, "paid", caught(&["paid"])),
        (1, "join", Happening::Merged),
        (0, "join", Happening::Fired),
        (0, "join", routed(&["e"])),
        (0, "e", Happening::Ended),
    ]);
    assert_eq!(steps(&history), expected, "\n{history}");
    assert_eq!(
        engine.broker_stats(),
        BrokerStats {
            delivered: 2,
            dropped_mismatch: 1,
            ..BrokerStats::default()
        }
    );
    engine.shutdown(HANG).await.expect("the loop stops");
}

flavors!(t6_the_fine_check_uses_the_current_key);

// ----- receive and user tasks ---------------------------------------------------------

/// A receive task waits for its correlated message like a catch; being a task, it
/// records `Completed` when the message came.
#[tokio::test(start_paused = true)]
async fn a_receive_task_waits_for_its_message() {
    let engine = Engine::new();
    let h = engine.start(&RECEIVER, deal("r1"));
    parked_at(&h, "take", 1).await;
    assert_eq!(
        engine.publish_message("order", "r2", 5_u64),
        Published::Buffered
    );
    an_hour_later().await;
    assert!(!h.is_finished());
    assert_eq!(
        engine.publish_message("order", "r1", 7_u64),
        Published::Delivered
    );
    let (outcome, history) = finish(&h).await;
    assert_eq!(completed(outcome, &history).amount, 7);
    assert_eq!(
        steps(&history),
        [
            (0, "s", Happening::Started),
            (0, "take", Happening::Parked),
            (0, "take", done(&["amount"])),
            (0, "e", Happening::Ended),
        ]
    );
}

/// A user task: listed by `open_work`; completing another node is `NoOpenWork`;
/// completing it applies the update and the instance goes on; afterwards there is no
/// open work and completing again is `InstanceEnded`.
#[tokio::test(start_paused = true)]
async fn a_user_task_is_completed_through_the_handle() {
    let engine = Engine::new();
    let h = engine.start(&APPROVAL, deal("u1"));
    parked_at(&h, "approve", 1).await;
    assert_eq!(
        h.open_work().await,
        [OpenWork {
            node: "approve",
            track: TrackId(0)
        }]
    );
    assert_eq!(
        h.complete("approved", |d| d.approved = true).await,
        Err(WorkError::NoOpenWork {
            node: "approved".into()
        })
    );
    assert_eq!(
        h.fail_work("e", "no").await,
        Err(WorkError::NoOpenWork { node: "e".into() })
    );
    an_hour_later().await;
    assert!(!h.is_finished());
    assert_eq!(
        h.complete("approve", |d| {
            d.approved = true;
            d.note = "ok".into();
        })
        .await,
        Ok(())
    );
    let (outcome, history) = finish(&h).await;
    let data = completed(outcome, &history);
    assert!(data.approved);
    assert_eq!(data.note, "ok");
    assert_eq!(
        steps(&history),
        [
            (0, "s", Happening::Started),
            (0, "approve", Happening::Parked),
            (0, "approve", done(&["note", "approved"])),
            (0, "e", Happening::Ended),
        ]
    );
    assert_eq!(h.open_work().await, []);
    assert_eq!(
        h.complete("approve", |d| d.approved = false).await,
        Err(WorkError::InstanceEnded)
    );
}

/// Two user tasks in parallel: both open, in the order reached; completed in the
/// other order, each update lands.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn parallel_user_tasks_are_completed_in_any_order() {
    let engine = Engine::new();
    for i in 0..200 {
        let h = engine.start(&TWO_APPROVALS, deal(format!("p{i}")));
        parked_at(&h, "legal", 1).await;
        parked_at(&h, "finance", 1).await;
        assert_eq!(
            h.open_work().await,
            [
                OpenWork {
                    node: "legal",
                    track: TrackId(0)
                },
                OpenWork {
                    node: "finance",
                    track: TrackId(1)
                },
            ]
        );
        let (first, second) = if i % 2 == 0 {
            ("finance", "legal")
        } else {
            ("legal", "finance")
        };
        let (h1, h2) = (h.clone(), h.clone());
        let a = tokio::spawn(async move { h1.complete(first, |d| d.note = "noted".into()).await });
        let b = tokio::spawn(async move { h2.complete(second, |d| d.approved = true).await });
        assert_eq!(a.await.expect("task"), Ok(()));
        assert_eq!(b.await.expect("task"), Ok(()));
        let (outcome, history) = finish(&h).await;
        let data = completed(outcome, &history);
        assert!(data.approved);
        assert_eq!(data.note, "noted");
        assert_eq!(
            history.count(first, |w| *w == done(&["note"])),
            1,
            "{history}"
        );
        assert_eq!(
            history.count(second, |w| *w == done(&["approved"])),
            1,
            "{history}"
        );
        assert_eq!(history.fired("join"), 1);
    }
    engine.shutdown(HANG).await.expect("loops stop");
}

/// Failing a user task fails the instance with `TaskFailed` naming it.
#[tokio::test(start_paused = true)]
async fn failing_a_user_task_fails_the_instance() {
    let engine = Engine::new();
    let h = engine.start(&APPROVAL, deal("u2"));
    parked_at(&h, "approve", 1).await;
    assert_eq!(h.fail_work("approve", "rejected by Bob").await, Ok(()));
    let (outcome, history) = finish(&h).await;
    assert_eq!(
        failed(outcome, &history),
        InstanceError::TaskFailed {
            node: "approve",
            message: "rejected by Bob".into()
        }
    );
    assert_eq!(
        steps(&history),
        [
            (0, "s", Happening::Started),
            (0, "approve", Happening::Parked),
            (
                0,
                "approve",
                Happening::Failed {
                    message: "rejected by Bob".into()
                }
            ),
            (0, "approve", Happening::Cancelled),
        ]
    );
    assert_eq!(h.data().await, Some(deal("u2")));
}

/// Wait until the history shows a `Caught` at `node`.
async fn caught_at<D: Clone>(handle: &InstanceHandle<D>, node: &str) {
    for _ in 0..200_000 {
        let history = handle.history().await;
        if history.count(node, |w| matches!(w, Happening::Caught { .. })) > 0 {
            return;
        }
        tokio::task::yield_now().await;
    }
    panic!("nothing caught at `{node}`");
}

/// `open_work` lists the user tasks in the order they were reached — also after an
/// event took a token that parked before them (`ack`, a catch without `apply`).
///
/// Today the parked set is kept with `swap_remove`, so when `ack` (parked first)
/// flips, the last entry (`finance`) takes its place and `open_work` lists
/// `[finance, legal]`.
#[tokio::test(start_paused = true)]
async fn open_work_keeps_the_order_reached_after_an_event() {
    let engine = Engine::new();
    let h = engine.start(&MESSAGE_THEN_APPROVALS, deal("ow"));
    parked_at(&h, "finance", 1).await;
    let legal = OpenWork {
        node: "legal",
        track: TrackId(1),
    };
    let finance = OpenWork {
        node: "finance",
        track: TrackId(2),
    };
    assert_eq!(h.open_work().await, [legal.clone(), finance.clone()]);
    assert_eq!(
        engine.publish_message("ack", "ow", ()),
        Published::Delivered
    );
    caught_at(&h, "ack").await;
    assert_eq!(h.open_work().await, [legal, finance]);
    h.complete("legal", |_| {}).await.expect("legal is open");
    h.complete("finance", |_| {})
        .await
        .expect("finance is open");
    let (outcome, history) = finish(&h).await;
    completed(outcome, &history);
}

// ----- throws ----------------------------------------------------------------------------

/// An intermediate signal throw reaches every waiting catch in other instances (and
/// says how many); with none waiting it reaches 0 and goes on all the same.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_signal_throw_reaches_other_instances() {
    for round in 0..50_u64 {
        let engine = Engine::new();
        let listeners: Vec<_> = (0..3)
            .map(|i| engine.start(&LISTENER, deal(format!("l{i}"))))
            .collect();
        for h in &listeners {
            parked_at(h, "heard", 1).await;
        }
        let thrower = Deal {
            amount: 70 + round,
            ..deal("pinger")
        };
        let (outcome, history) = run(&engine, &PINGER, thrower.clone()).await;
        assert_eq!(completed(outcome, &history), thrower);
        assert_eq!(
            steps(&history),
            [
                (0, "s", Happening::Started),
                (0, "ping", thrown(3)),
                (0, "e", Happening::Ended),
            ]
        );
        for h in &listeners {
            let (outcome, history) = finish(h).await;
            assert_eq!(completed(outcome, &history).paid, 70 + round);
        }
        let (outcome, history) = run(&engine, &PINGER, thrower).await;
        completed(outcome, &history);
        assert_eq!(history.count("ping", |w| *w == thrown(0)), 1);
    }
}

/// A message throw goes to the one receive task correlated by its key: delivered to a
/// waiting one (`Thrown { catchers: 1 }`), buffered for a later one (`0`).
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_message_throw_reaches_the_correlated_receiver() {
    let engine = Engine::new();
    for i in 0..100_u64 {
        let waiting = engine.start(&RECEIVER, deal(format!("o{i}")));
        let other = engine.start(&RECEIVER, deal(format!("x{i}")));
        parked_at(&waiting, "take", 1).await;
        parked_at(&other, "take", 1).await;
        let sender = Deal {
            amount: i + 1,
            ..deal(format!("o{i}"))
        };
        let (outcome, history) = run(&engine, &SENDER, sender).await;
        completed(outcome, &history);
        assert_eq!(
            steps(&history),
            [
                (0, "s", Happening::Started),
                (0, "send", thrown(1)),
                (0, "e", Happening::Ended),
            ]
        );
        let (outcome, history) = finish(&waiting).await;
        assert_eq!(completed(outcome, &history).amount, i + 1);
        assert!(!other.is_finished());
        other.cancel();
        assert!(matches!(other.outcome().await, Outcome::Cancelled(_)));

        // Nobody waits for `later{i}` yet: the message is buffered.
        let sender = Deal {
            amount: 500 + i,
            ..deal(format!("later{i}"))
        };
        let (outcome, history) = run(&engine, &SENDER, sender).await;
        completed(outcome, &history);
        assert_eq!(history.count("send", |w| *w == thrown(0)), 1);
        let (outcome, history) = run(&engine, &RECEIVER, deal(format!("later{i}"))).await;
        assert_eq!(completed(outcome, &history).amount, 500 + i);
    }
    assert_eq!(
        engine.broker_stats(),
        BrokerStats {
            delivered: 200,
            ..BrokerStats::default()
        }
    );
    engine.shutdown(HANG).await.expect("loops stop");
}

/// Throwing ends: a signal end and a message end send as they end.
#[tokio::test(start_paused = true)]
async fn throwing_ends_send_as_they_end() {
    let engine = Engine::new();
    let listener = engine.start(&LISTENER, deal("l"));
    let receiver = engine.start(&RECEIVER, deal("r"));
    parked_at(&listener, "heard", 1).await;
    parked_at(&receiver, "take", 1).await;

    let (outcome, history) = run(
        &engine,
        &END_SIGNAL,
        Deal {
            amount: 11,
            ..deal("x")
        },
    )
    .await;
    completed(outcome, &history);
    assert_eq!(
        steps(&history),
        [
            (0, "s", Happening::Started),
            (0, "finished", thrown(1)),
            (0, "finished", Happening::Ended),
        ]
    );
    let (outcome, history) = finish(&listener).await;
    assert_eq!(completed(outcome, &history).paid, 11);

    let (outcome, history) = run(
        &engine,
        &END_MESSAGE,
        Deal {
            amount: 12,
            ..deal("r")
        },
    )
    .await;
    completed(outcome, &history);
    assert_eq!(
        steps(&history),
        [
            (0, "s", Happening::Started),
            (0, "sent", thrown(1)),
            (0, "sent", Happening::Ended),
        ]
    );
    let (outcome, history) = finish(&receiver).await;
    assert_eq!(completed(outcome, &history).amount, 12);
}

/// A throw reaches a catch of its own instance: one branch signals and then messages
/// what the other two branches wait for.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn an_instance_reaches_its_own_catches() {
    let engine = Engine::new();
    for i in 0..200 {
        let id = format!("me{i}");
        let (outcome, history) = run(&engine, &TALK_TO_SELF, deal(&id)).await;
        let data = completed(outcome, &history);
        assert_eq!((data.paid, data.note), (5, format!("{id} to self")));
        assert_eq!(history.count("shout", |w| *w == thrown(1)), 1, "{history}");
        assert_eq!(history.count("write", |w| *w == thrown(1)), 1, "{history}");
        assert_eq!(history.count("heard", |w| *w == caught(&["paid"])), 1);
        assert_eq!(history.count("take", |w| *w == done(&["note"])), 1);
    }
    assert_eq!(
        engine.broker_stats(),
        BrokerStats {
            delivered: 200,
            ..BrokerStats::default()
        }
    );
}

// ----- bad payloads and panics -----------------------------------------------------------

/// A message whose payload is not the type the catch maps fails the instance with
/// `TaskFailed` naming the catch and the type it expected.
#[tokio::test(start_paused = true)]
async fn a_payload_of_the_wrong_type_fails_the_catch() {
    let engine = Engine::new();
    let h = engine.start(&WANTS_PAYMENT, deal("w"));
    parked_at(&h, "paid", 1).await;
    assert_eq!(
        engine.publish_message("payment", "w", 5_u64),
        Published::Delivered
    );
    let (outcome, history) = finish(&h).await;
    let InstanceError::TaskFailed { node, message } = failed(outcome, &history) else {
        panic!("expected TaskFailed\n{history}");
    };
    assert_eq!(node, "paid");
    assert!(
        message.contains(std::any::type_name::<Payment>()),
        "the message names the expected type: {message}"
    );
    assert_eq!(
        steps(&history),
        [
            (0, "s", Happening::Started),
            (0, "paid", Happening::Parked),
            (0, "paid", Happening::Failed { message }),
            (0, "paid", Happening::Cancelled),
        ]
    );
    assert_eq!(h.data().await, Some(deal("w")));

    // The right type is caught.
    let h = engine.start(&WANTS_PAYMENT, deal("ok"));
    engine.publish_message("payment", "ok", Payment { amount: 8 });
    let (outcome, history) = finish(&h).await;
    assert_eq!(completed(outcome, &history).paid, 8);

    // A signal too.
    let h = engine.start(&WANTS_TEXT, deal("t"));
    parked_at(&h, "heard", 1).await;
    assert_eq!(engine.broadcast_signal("ping", 3_u64), 1);
    let (outcome, history) = finish(&h).await;
    let InstanceError::TaskFailed { node, message } = failed(outcome, &history) else {
        panic!("expected TaskFailed\n{history}");
    };
    assert_eq!(node, "heard");
    assert!(
        message.contains(std::any::type_name::<String>()),
        "{message}"
    );
}

/// A mapping that panics fails the instance with `TaskPanicked` naming the catch.
#[tokio::test(start_paused = true)]
async fn a_panicking_mapping_fails_the_catch() {
    let engine = Engine::new();
    let h = engine.start(&FRAGILE, deal("f"));
    parked_at(&h, "paid", 1).await;
    engine.publish_message("payment", "f", 0_u64);
    let (outcome, history) = finish(&h).await;
    assert_eq!(
        failed(outcome, &history),
        InstanceError::TaskPanicked {
            node: "paid",
            message: "a zero payment".into()
        }
    );
    assert_eq!(
        steps(&history),
        [
            (0, "s", Happening::Started),
            (0, "paid", Happening::Parked),
            (
                0,
                "paid",
                Happening::Failed {
                    message: "a zero payment".into()
                }
            ),
            (0, "paid", Happening::Cancelled),
        ]
    );
}

/// A correlation key that panics when the catch arms, and a throw payload that panics,
/// fail the instance with `TaskPanicked` naming the node.
#[tokio::test(start_paused = true)]
async fn panicking_keys_and_payloads_fail_their_node() {
    let engine = Engine::new();
    let (outcome, history) = run(&engine, &BAD_KEY, deal("")).await;
    assert_eq!(
        failed(outcome, &history),
        InstanceError::TaskPanicked {
            node: "paid",
            message: "no id to correlate on".into()
        }
    );
    assert_eq!(engine.broker_stats(), BrokerStats::default());

    let (outcome, history) = run(&engine, &BAD_PAYLOAD, deal("p")).await;
    assert_eq!(
        failed(outcome, &history),
        InstanceError::TaskPanicked {
            node: "ping",
            message: "nothing to announce".into()
        }
    );
}

// ----- timers (paused clock) -------------------------------------------------------------

/// Start `process` and return its outcome's history and how long it took on the
/// paused clock.
async fn timed(engine: &Engine, process: &'static thresh::Process<Deal>) -> (History, Duration) {
    let t0 = Instant::now();
    let (outcome, history) = run(engine, process, deal("timer")).await;
    let took = t0.elapsed();
    completed(outcome, &history);
    assert_eq!(
        steps(&history),
        [
            (0, "s", Happening::Started),
            (0, "wait", Happening::Parked),
            (0, "wait", caught(&[])),
            (0, "e", Happening::Ended),
        ]
    );
    (history, took)
}

#[tokio::test(start_paused = true)]
async fn a_duration_timer_fires_after_its_duration() {
    let engine = Engine::new();
    let (_, took) = timed(&engine, &AFTER).await;
    assert_eq!(took, Duration::from_secs(5));
}

#[tokio::test(start_paused = true)]
async fn a_date_timer_in_the_past_fires_at_once() {
    let engine = Engine::new();
    let (_, took) = timed(&engine, &AT_PAST).await;
    assert_eq!(took, Duration::ZERO);
}

#[tokio::test(start_paused = true)]
async fn a_date_timer_fires_at_its_date() {
    let engine = Engine::new();
    let (_, took) = timed(&engine, &AT_FUTURE).await;
    // The date is 15 s after the (wall-clock) moment the timer was armed; the paused
    // clock gets there, give or take the instants between the two clock readings.
    assert!(
        took > Duration::from_secs(14) && took <= Duration::from_secs(15),
        "{took:?}"
    );
}

#[tokio::test(start_paused = true)]
async fn a_cycle_timer_catch_waits_for_the_first_occurrence() {
    let engine = Engine::new();
    let (_, took) = timed(&engine, &EVERY).await;
    assert_eq!(took, Duration::from_secs(3));
    let (_, took) = timed(&engine, &EVERY_ENDLESS).await;
    assert_eq!(took, Duration::from_millis(250));
}

/// A timer catch on a cycle is armed afresh on each visit: three rounds, three
/// seconds.
#[tokio::test(start_paused = true)]
async fn a_timer_on_a_cycle_is_armed_on_every_visit() {
    let engine = Engine::new();
    let t0 = Instant::now();
    let (outcome, history) = run(&engine, &TICKS, deal("ticks")).await;
    assert_eq!(completed(outcome, &history).ticks, 3);
    assert_eq!(t0.elapsed(), Duration::from_secs(3));
    assert_eq!(history.count("tick", |w| *w == Happening::Parked), 3);
    assert_eq!(history.count("tick", |w| *w == caught(&[])), 3);
}

/// A timer a hundred years away just waits (an hour later, nothing happened), and a
/// cancel ends it.
#[tokio::test(start_paused = true)]
async fn a_far_timer_just_waits() {
    let engine = Engine::new();
    let h = engine.start(&CENTURY, deal("far"));
    parked_at(&h, "wait", 1).await;
    an_hour_later().await;
    assert!(!h.is_finished());
    assert_eq!(
        steps(&h.history().await),
        [(0, "s", Happening::Started), (0, "wait", Happening::Parked)]
    );
    h.cancel();
    let (outcome, history) = finish(&h).await;
    assert!(
        matches!(outcome, Outcome::Cancelled(_)),
        "{outcome:?}\n{history}"
    );
}

/// A timer whose deadline cannot be represented (`Duration::MAX` from now) must not
/// take the instance's loop down: either it waits (it never fires) or the instance
/// fails with an error naming the timer. What the engine does today: computing the
/// deadline (`Instant + Duration`, outside the code that guards user expressions)
/// panics on the loop's task, the loop dies, the history is lost and the outcome is
/// `Failed(Lost)` — "a bug in thresh".
#[tokio::test(start_paused = true)]
async fn an_unrepresentable_timer_does_not_kill_the_loop() {
    let engine = Engine::new();
    let h = engine.start(&NEVER, deal("never"));
    an_hour_later().await;
    match tokio::time::timeout(Duration::from_secs(1), h.outcome()).await {
        Ok(outcome) => {
            let history = h.history().await;
            match failed(outcome, &history) {
                InstanceError::TaskFailed { node, .. }
                | InstanceError::TaskPanicked { node, .. } => {
                    assert_eq!(node, "wait")
                }
                other => panic!("expected a failure naming `wait`, got {other:?}\n{history}"),
            }
            check_history(&history, &h.outcome().await);
            assert_eq!(
                steps(&history)[..2],
                [(0, "s", Happening::Started), (0, "wait", Happening::Parked)]
            );
        }
        Err(_) => {
            assert_eq!(
                steps(&h.history().await),
                [(0, "s", Happening::Started), (0, "wait", Happening::Parked)]
            );
            h.cancel();
            let (outcome, history) = finish(&h).await;
            assert!(
                matches!(outcome, Outcome::Cancelled(_)),
                "{outcome:?}\n{history}"
            );
        }
    }
}
