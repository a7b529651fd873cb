//! Compensation in durable checkpoints: the compensation log (completed activities
//! with their snapshots, in order) and a compensation under way survive a restart.
//!
//! - a restart between the completions and the compensation throw: after it, the
//!   handlers still run latest first, each from the data its activity left (not the
//!   data changed since);
//! - a restart while a handler runs: it runs again (attempt 2) from its snapshot,
//!   the run goes on with the next handler, and the thrower goes on after it;
//! - a restart while a compensation event sub-process runs: it goes on and undoes
//!   the sub-process's inner activity from the restored inner log;
//! - a restart while a cancelled transaction is compensated: the handler runs again,
//!   then the transaction leaves through its cancel boundary.

use std::sync::Arc;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use thresh::store::{MemoryStore, Store};
use thresh::{process, DurableEngine, InstanceHandle, Outcome, ProcessData};

const HANG: Duration = Duration::from_secs(20);

#[derive(Clone, Debug, Default, PartialEq, ProcessData, Serialize, Deserialize)]
pub struct Pay {
    pub charge_id: u64,
    pub reserved: bool,
    pub refunded: u64,
    pub released: bool,
    pub declined: bool,
    pub notified: bool,
    pub after: bool,
    /// `release`'s first run never finishes (the engine stops while it runs).
    pub hang: bool,
}

process! {
    CONFIRMED: Pay {
        start    begin;
        task     charge = |p| async move { p.charge_id = 100; Ok(()) };
        task     reserve = |p| async move { p.reserved = true; Ok(()) };
        boundary undo_charge on charge: compensation -> refund;
        boundary undo_reserve on reserve: compensation -> release;
        task     refund = |p| async move {
            // From charge's snapshot: its id, and `reserved` not yet set.
            assert!(!p.reserved, "refund works from charge's snapshot");
            p.refunded = p.charge_id;
            Ok(())
        }: compensation;
        task     release = |p| async move {
            if p.hang && thresh::task::current().is_some_and(|c| c.attempt == 1) {
                std::future::pending::<()>().await;
            }
            p.released = true;
            p.reserved = false;
            Ok(())
        }: compensation;
        user     confirm;
        exclusive ok;
        throw    undo: compensation;
        task     after = |p| async move { p.after = p.refunded == 100 && p.released; Ok(()) };
        end      done;
        end      rolled_back;
        begin -> charge -> reserve -> confirm -> ok;
        ok -> undo when |p| p.declined;
        ok -> done else;
        undo -> after -> rolled_back;
    }
}

async fn until_open<D: Clone>(handle: &InstanceHandle<D>, node: &str) {
    tokio::time::timeout(HANG, async {
        while !handle.open_work().await.iter().any(|w| w.node == node) {
            tokio::task::yield_now().await;
        }
    })
    .await
    .expect("the user task opened");
}

/// Wait until the instance's stored checkpoint contains `text`.
async fn until_stored(store: &MemoryStore, id: u64, text: &str) {
    tokio::time::timeout(HANG, async {
        loop {
            let stored = store.instance(id).expect("store").map(|r| r.state);
            if stored.is_some_and(|s| s.contains(text)) {
                return;
            }
            tokio::task::yield_now().await;
        }
    })
    .await
    .unwrap_or_else(|_| panic!("the checkpoint never had {text}"));
}

async fn reopen(store: &Arc<MemoryStore>, old: DurableEngine) -> DurableEngine {
    old.shutdown(HANG).await.expect("shutdown");
    let engine = DurableEngine::with_store(store.clone()).expect("reopen");
    engine.register(&CONFIRMED).expect("register");
    engine.register(&NESTED).expect("register");
    engine.register(&BOOKING).expect("register");
    let report = engine.resume().await.expect("resume");
    assert_eq!(report.resumed.len(), 1, "{report:?}");
    engine
}

async fn outcome(handle: &InstanceHandle<Pay>) -> Pay {
    match tokio::time::timeout(HANG, handle.outcome())
        .await
        .expect("ended")
    {
        Outcome::Completed(p) => p,
        other => panic!("not completed: {other:?}\n{}", handle.history().await),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_compensation_log_survives_a_restart_between_completion_and_throw() {
    let store = Arc::new(MemoryStore::new());
    let engine = DurableEngine::with_store(store.clone()).expect("open");
    engine.register(&CONFIRMED).expect("register");
    let handle = engine
        .start(&CONFIRMED, Pay::default())
        .await
        .expect("stored");
    let id = handle.id();
    until_open(&handle, "confirm").await;
    // Both completions are logged, with their snapshots, in the checkpoint.
    until_stored(&store, id.0, "\"activity\":\"reserve\"").await;

    let engine = reopen(&store, engine).await;
    let handle = engine.handle(&CONFIRMED, id).expect("resumed");
    until_open(&handle, "confirm").await;
    // The data changes after the completions; the handlers still see theirs.
    handle
        .complete("confirm", |p: &mut Pay| {
            p.declined = true;
            p.charge_id = 999;
        })
        .await
        .expect("confirm");
    let pay = outcome(&handle).await;
    assert_eq!(pay.refunded, 100, "refund read charge's snapshot");
    assert_eq!(
        pay.charge_id, 999,
        "fields the handler did not change keep their value"
    );
    assert!(pay.released && !pay.reserved && pay.after, "{pay:?}");
    // Resumed histories start empty: the handlers after the restart, latest first.
    assert_eq!(
        handle.history().await.completed_tasks(),
        ["confirm", "release", "refund", "after"]
    );
    engine.shutdown(HANG).await.expect("shutdown");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_handler_running_at_a_restart_runs_again_from_its_snapshot() {
    let store = Arc::new(MemoryStore::new());
    let engine = DurableEngine::with_store(store.clone()).expect("open");
    engine.register(&CONFIRMED).expect("register");
    let hang = Pay {
        hang: true,
        ..Pay::default()
    };
    let handle = engine.start(&CONFIRMED, hang).await.expect("stored");
    let id = handle.id();
    until_open(&handle, "confirm").await;
    handle
        .complete("confirm", |p: &mut Pay| p.declined = true)
        .await
        .expect("confirm");
    // `release` hangs; the run waits for it, `charge`'s completion still queued.
    until_stored(&store, id.0, "\"handler\"").await;
    until_stored(&store, id.0, "\"compensating\"").await;

    let engine = reopen(&store, engine).await;
    let handle = engine.handle(&CONFIRMED, id).expect("resumed");
    let pay = outcome(&handle).await;
    assert!(
        pay.released && !pay.reserved && pay.refunded == 100 && pay.after,
        "{pay:?}"
    );
    assert_eq!(
        handle.history().await.completed_tasks(),
        ["release", "refund", "after"]
    );
    engine.shutdown(HANG).await.expect("shutdown");
}

process! {
    /// `booking` is undone by its compensation event sub-process, which waits for a
    /// user task (the restart comes then), then undoes `hotel` from the inner log.
    NESTED: Pay {
        start    begin;
        subprocess booking {
            start    bs;
            task     hotel = |p| async move { p.reserved = true; Ok(()) };
            boundary undo_hotel on hotel: compensation -> cancel_hotel;
            task     cancel_hotel = |p| async move { p.reserved = false; p.released = true; Ok(()) }: compensation;
            end      be;
            bs -> hotel -> be;
            event_subprocess undo_booking {
                start    us: compensation;
                user     tell;
                throw    inner: compensation;
                end      ue;
                us -> tell -> inner -> ue;
            }
        }
        throw    undo: compensation(booking);
        task     after = |p| async move { p.after = p.released && p.notified; Ok(()) };
        end      done;
        begin -> booking -> undo -> after -> done;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_compensation_event_sub_process_goes_on_after_a_restart() {
    let store = Arc::new(MemoryStore::new());
    let engine = DurableEngine::with_store(store.clone()).expect("open");
    engine.register(&NESTED).expect("register");
    let handle = engine.start(&NESTED, Pay::default()).await.expect("stored");
    let id = handle.id();
    until_open(&handle, "tell").await;
    until_stored(&store, id.0, "\"event_sub\"").await;

    let engine = reopen(&store, engine).await;
    let handle = engine.handle(&NESTED, id).expect("resumed");
    until_open(&handle, "tell").await;
    handle
        .complete("tell", |p: &mut Pay| p.notified = true)
        .await
        .expect("tell");
    let pay = outcome(&handle).await;
    assert!(pay.after && !pay.reserved, "{pay:?}");
    assert_eq!(
        handle.history().await.completed_tasks(),
        ["tell", "cancel_hotel", "after"]
    );
    engine.shutdown(HANG).await.expect("shutdown");
}

process! {
    /// `hotel` finds no room: the transaction is cancelled, `flight` undone — its
    /// handler's first run hangs, and the engine restarts then.
    BOOKING: Pay {
        start    begin;
        transaction booking {
            start     bs;
            task      flight = |p| async move { p.charge_id = 7; Ok(()) };
            boundary  undo_flight on flight: compensation -> cancel_flight;
            task      cancel_flight = |p| async move {
                if thresh::task::current().is_some_and(|c| c.attempt == 1) {
                    std::future::pending::<()>().await;
                }
                p.refunded = p.charge_id;
                Ok(())
            }: compensation;
            task      hotel = |p| async move { p.reserved = false; Ok(()) };
            exclusive room;
            end       booked;
            end       no_room: cancel;
            bs -> flight -> hotel -> room;
            room -> booked when |p| p.reserved;
            room -> no_room else;
        }
        boundary cancelled on booking: cancel;
        task     sorry = |p| async move { p.after = p.refunded == 7; Ok(()) };
        end      done;
        end      given_up;
        begin -> booking -> done;
        cancelled -> sorry -> given_up;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancelled_transaction_leaves_by_its_cancel_boundary_after_a_restart() {
    let store = Arc::new(MemoryStore::new());
    let engine = DurableEngine::with_store(store.clone()).expect("open");
    engine.register(&BOOKING).expect("register");
    let handle = engine
        .start(&BOOKING, Pay::default())
        .await
        .expect("stored");
    let id = handle.id();
    until_stored(&store, id.0, "\"cancel\"").await;
    until_stored(&store, id.0, "\"handler\"").await;

    let engine = reopen(&store, engine).await;
    let handle = engine.handle(&BOOKING, id).expect("resumed");
    let pay = outcome(&handle).await;
    assert!(pay.after, "{pay:?}");
    let history = handle.history().await;
    assert_eq!(history.completed_tasks(), ["cancel_flight", "sorry"]);
    assert_eq!(history.ended_at(), ["cancel_flight", "no_room", "given_up"]);
    engine.shutdown(HANG).await.expect("shutdown");
}
