//! Transactions: a cancel end cancels, compensates and leaves through the cancel
//! boundary; an error inside does not compensate.

use super::*;

process! {
    /// Book flight and hotel or neither: when `hotel` finds no room, the transaction
    /// is cancelled — the open `confirm` user task is withdrawn, `flight` undone, and
    /// the token leaves through `cancelled`.
    BOOK: Trip {
        start    begin;
        transaction booking {
            start     bs;
            parallel  fork;
            user      confirm;
            task      flight = |t| async move { yield_jitter().await; t.charged = true; Ok(()) };
            task      hotel = |t| async move { yield_jitter().await; t.reserved = t.run % 2 == 1; Ok(()) };
            boundary  undo_flight on flight: compensation -> cancel_flight;
            boundary  undo_hotel on hotel: compensation -> cancel_hotel;
            task      cancel_flight = |t| async move { yield_jitter().await; t.charged = false; t.refunded = 1; Ok(()) }: compensation;
            task      cancel_hotel = |t| async move { t.reserved = false; Ok(()) }: compensation;
            exclusive room;
            end       no_room: cancel;
            end       booked;
            end       confirmed;
            bs -> fork -> confirm, flight;
            confirm -> confirmed;
            flight -> hotel -> room;
            room -> booked when |t| t.reserved;
            room -> no_room else;
        }
        boundary cancelled on booking: cancel;
        task     sorry = |t| async move { t.after = !t.charged && t.refunded == 1; Ok(()) };
        end      done;
        end      given_up;
        begin -> booking -> done;
        cancelled -> sorry -> given_up;
    }
}

async fn book(engine: Engine, i: usize) {
    let run = i as u64;
    let handle = engine
        .start(
            &BOOK,
            Trip {
                run,
                ..Trip::default()
            },
        )
        .await
        .unwrap();
    if run % 2 == 1 {
        // Booked: the transaction completes once `confirm` is done.
        common::expect_open_work(&handle, "confirm").await;
        handle
            .complete("confirm", |_| {})
            .await
            .expect("confirm is open");
    }
    let (outcome, history) = finish_trip(&handle).await;
    let trip = completed_trip(outcome, &history);
    if run % 2 == 1 {
        assert!(trip.charged && trip.reserved && !trip.after);
        let mut ended = history.ended_at();
        ended.sort_unstable();
        assert_eq!(ended, ["booked", "confirmed", "done"], "{history}");
    } else {
        assert!(trip.after && !trip.charged, "{trip:?}\n{history}");
        // `hotel` completed too (without a room): it is undone first.
        assert_eq!(
            history.completed_tasks(),
            ["flight", "hotel", "cancel_hotel", "cancel_flight", "sorry"],
            "{history}"
        );
        let cancelled: Vec<&str> = history
            .steps()
            .iter()
            .filter(|s| s.what == Happening::Cancelled)
            .map(|s| s.node)
            .collect();
        assert_eq!(cancelled, ["confirm"], "{history}");
        assert!(history
            .steps()
            .iter()
            .any(|s| s.node == "booking" && s.what == Happening::Interrupted { by: "cancelled" }));
        assert_eq!(
            history.ended_at(),
            ["cancel_hotel", "cancel_flight", "no_room", "given_up"]
        );
    }
}

process! {
    /// An error inside a transaction is no cancel: nothing is undone automatically;
    /// the error boundary takes the token.
    ERROR_INSIDE: Trip {
        start    begin;
        transaction booking {
            start    bs;
            task     flight = |t| async move { t.charged = true; Ok(()) };
            boundary undo_flight on flight: compensation -> cancel_flight;
            task     cancel_flight = |t| async move { t.charged = false; Ok(()) }: compensation;
            task     hotel = |_| async move { Err(TaskError::bpmn("FULL", "no room")) };
            end      be;
            bs -> flight -> hotel -> be;
        }
        boundary full on booking: error("FULL");
        end      done;
        end      failed;
        begin -> booking -> done;
        full -> failed;
    }
}

async fn error_inside(engine: Engine, _: usize) {
    let handle = engine.start(&ERROR_INSIDE, Trip::default()).await.unwrap();
    let (outcome, history) = finish_trip(&handle).await;
    let trip = completed_trip(outcome, &history);
    assert_eq!(history.completed_tasks(), ["flight"], "{history}");
    assert!(trip.charged);
    assert_eq!(history.ended_at(), ["failed"]);
}

process! {
    /// A transaction that completed is undone from its parent like a sub-process.
    LATER: Trip {
        start    begin;
        transaction booking {
            start    bs;
            task     flight = |t| async move { t.charged = true; Ok(()) };
            boundary undo_flight on flight: compensation -> cancel_flight;
            task     cancel_flight = |t| async move { t.charged = false; t.refunded = 2; Ok(()) }: compensation;
            exclusive ok;
            end      no: cancel;
            end      be;
            bs -> flight -> ok;
            ok -> be when |t| t.charged;
            ok -> no else;
        }
        boundary cancelled on booking: cancel;
        end      given_up;
        end      undone: compensation;
        begin -> booking -> undone;
        cancelled -> given_up;
    }
}

async fn later(engine: Engine, _: usize) {
    let handle = engine.start(&LATER, Trip::default()).await.unwrap();
    let (outcome, history) = finish_trip(&handle).await;
    let trip = completed_trip(outcome, &history);
    assert_eq!(
        history.completed_tasks(),
        ["flight", "booking", "cancel_flight"]
    );
    assert!(!trip.charged && trip.refunded == 2);
    assert_eq!(history.ended_at(), ["be", "cancel_flight", "undone"]);
}

flavors!(book, error_inside, later);
