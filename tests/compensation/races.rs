//! Two branches throw compensation for one scope at once: each completion is undone
//! exactly once, by whichever throw took it.

use super::*;

static UNDONE: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

process! {
    TWO_THROWS: Trip {
        start    begin;
        task     charge = |t| async move { yield_jitter().await; t.charged = true; Ok(()) };
        task     reserve = |t| async move { yield_jitter().await; t.reserved = true; Ok(()) };
        boundary undo_charge on charge: compensation -> refund;
        boundary undo_reserve on reserve: compensation -> release;
        task     refund = |t| async move {
            yield_jitter().await;
            UNDONE.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            t.refunded += 1;
            Ok(())
        }: compensation;
        task     release = |t| async move {
            yield_jitter().await;
            UNDONE.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            t.released = true;
            Ok(())
        }: compensation;
        parallel fork;
        task     a = |_| async move { yield_jitter().await; Ok(()) };
        task     b = |_| async move { yield_jitter().await; Ok(()) };
        throw    undo_a: compensation;
        throw    undo_b: compensation;
        parallel join;
        end      done;
        begin -> charge -> reserve -> fork -> a, b;
        a -> undo_a -> join;
        b -> undo_b -> join;
        join -> done;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn two_throws_at_once_undo_each_completion_once() {
    common::repeat(200, |engine, _| async move {
        let handle = engine.start(&TWO_THROWS, Trip::default()).await.unwrap();
        let (outcome, history) = finish_trip(&handle).await;
        let trip = completed_trip(outcome, &history);
        let tasks = history.completed_tasks();
        let count = |n: &str| tasks.iter().filter(|t| **t == n).count();
        assert_eq!((count("refund"), count("release")), (1, 1), "{history}");
        // Latest first, whichever throw ran them.
        let at = |n: &str| tasks.iter().position(|t| *t == n);
        assert!(at("release") < at("refund"), "{history}");
        assert!(trip.refunded == 1 && trip.released);
        // One throw undid both, the other found nothing.
        let mut thrown: Vec<usize> = history
            .steps()
            .iter()
            .filter_map(|s| match s.what {
                Happening::Thrown { catchers } => Some(catchers),
                _ => None,
            })
            .collect();
        thrown.sort_unstable();
        assert_eq!(thrown, [0, 2]);
    })
    .await;
    assert_eq!(UNDONE.load(std::sync::atomic::Ordering::Relaxed), 400);
}

static FLIGHTS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

process! {
    /// In a transaction, `flight` races the branch that cancels it: when `flight`
    /// completed first it is undone, else it is cancelled and not undone — never
    /// both, never neither; the token always leaves through the cancel boundary.
    CANCEL_RACE: Trip {
        start    begin;
        transaction booking {
            start    bs;
            parallel fork;
            task     flight = |t| async move { yield_jitter().await; t.charged = true; Ok(()) };
            boundary undo_flight on flight: compensation -> cancel_flight;
            task     cancel_flight = |t| async move {
                yield_jitter().await;
                FLIGHTS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                t.charged = false;
                t.refunded += 1;
                Ok(())
            }: compensation;
            task     check = |_| async move { yield_jitter().await; Ok(()) };
            end      flown;
            end      no: cancel;
            bs -> fork -> flight, check;
            flight -> flown;
            check -> no;
        }
        boundary cancelled on booking: cancel;
        end      done;
        end      given_up;
        begin -> booking -> done;
        cancelled -> given_up;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_cancel_end_racing_an_activity_undoes_it_only_if_it_completed() {
    let undone = std::sync::Arc::new(std::sync::atomic::AtomicU64::new(0));
    let counted = undone.clone();
    common::repeat(300, move |engine, _| {
        let undone = counted.clone();
        async move {
            let handle = engine.start(&CANCEL_RACE, Trip::default()).await.unwrap();
            let (outcome, history) = finish_trip(&handle).await;
            let trip = completed_trip(outcome, &history);
            let tasks = history.completed_tasks();
            let flew = tasks.contains(&"flight");
            let undid = tasks.contains(&"cancel_flight");
            assert_eq!(flew, undid, "{history}");
            assert_eq!(trip.refunded, u32::from(undid) as u64);
            assert!(!trip.charged, "{trip:?}");
            assert_eq!(history.ended_at().last(), Some(&"given_up"), "{history}");
            if undid {
                undone.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            }
        }
    })
    .await;
    assert_eq!(
        FLIGHTS.load(std::sync::atomic::Ordering::Relaxed),
        undone.load(std::sync::atomic::Ordering::Relaxed)
    );
}
