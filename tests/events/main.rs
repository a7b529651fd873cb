//! Events at run time (ARCHITECTURE.md, "The instance loop"): catch events, receive
//! and user tasks, throws and throwing ends, the broker's bounded buffer and its
//! time-to-live, timers on the paused clock, what a message, a signal and a timer
//! each serve, and how bad payloads and panicking mappings fail an instance.
//!
//! The channel-park delivery scenarios (T-1..T-9 in the design notes), adapted to thresh:
//! - T-1 (a waiting track is parked, not spinning): `t1_*`;
//! - T-3 (an event fired in the subscribe/park window is not lost): `t3_*`;
//! - T-4 (a signal reaches every catcher; no catcher is a no-op): `t4_*`;
//! - T-5 (cancel and shutdown end parked instances promptly): `t5_*`;
//! - T-6 (correlation: a mismatch keeps the receiver waiting; the subscription follows
//!   the current data): `t6_*`;
//! - T-2 and T-8 (the event-based gateway's deferred choice) are in `event_gate.rs`;
//! - T-9 (the complex/OR-join stress) is `complex/` and `or_join.rs`.
//!
//! Concurrent scenarios run on a four-worker multi-thread runtime (and, where no real
//! timer is involved, on a paused current-thread runtime too), many times each.
//! Timers only ever run on the paused clock: no assertion depends on wall-clock time.

#[macro_use]
#[path = "../common/mod.rs"]
mod common;

use std::future::Future;
use std::sync::mpsc::RecvTimeoutError;
use std::time::{Duration, SystemTime};

use common::*;
use thresh::{
    process, BrokerConfig, BrokerStats, Engine, EngineError, Happening, History, InstanceError,
    InstanceHandle, OpenWork, Outcome, ProcessData, Published, TrackId, WorkError,
};
use tokio::time::Instant;

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

mod bad_payloads;
mod broker;
mod cancel;
mod correlation;
mod data_timers;
mod following;
mod multiplicity;
mod parking;
mod receive_and_user_tasks;
mod throws;
mod timers;

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

// ----- helpers ---------------------------------------------------------------------

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

// ----- processes used by several modules --------------------------------------

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
}

process! {
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
}

process! {
    /// Listen for `ping`.
    LISTENER: Deal {
        start s;
        catch heard: signal("ping", apply = |d, n: &u64| d.paid = *n);
        end   e;
        s -> heard -> e;
    }
}

process! {
    /// A receive task.
    RECEIVER: Deal {
        start   s;
        receive take: message("order", key = |d| d.id.clone(), apply = |d, n: &u64| d.amount = *n);
        end     e;
        s -> take -> e;
    }
}

process! {
    /// A user task.
    APPROVAL: Deal {
        start s;
        user  approve;
        end   e;
        s -> approve -> e;
    }
}
