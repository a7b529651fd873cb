//! Sub-processes: undone through their inner activities, or by their compensation
//! event sub-process; an interrupted one is not undone.

use super::*;

process! {
    /// `booking` completes (`flight`, then `hotel` inside); the top-level throw
    /// undoes the sub-process through its inner activities, latest first.
    INNER: Trip {
        start    begin;
        subprocess booking {
            start    bs;
            task     flight = |t| async move { yield_jitter().await; t.charged = true; Ok(()) };
            task     hotel = |t| async move { yield_jitter().await; t.reserved = true; Ok(()) };
            boundary undo_flight on flight: compensation -> cancel_flight;
            boundary undo_hotel on hotel: compensation -> cancel_hotel;
            task     cancel_flight = |t| async move { t.charged = false; Ok(()) }: compensation;
            task     cancel_hotel = |t| async move { t.reserved = false; Ok(()) }: compensation;
            end      be;
            bs -> flight -> hotel -> be;
        }
        throw    undo: compensation;
        end      done;
        begin -> booking -> undo -> done;
    }
}

async fn inner(engine: Engine, _: usize) {
    let handle = engine.start(&INNER, Trip::default()).await.unwrap();
    let (outcome, history) = finish_trip(&handle).await;
    let trip = completed_trip(outcome, &history);
    assert_eq!(
        history.completed_tasks(),
        [
            "flight",
            "hotel",
            "booking",
            "cancel_hotel",
            "cancel_flight"
        ]
    );
    assert!(!trip.charged && !trip.reserved);
}

process! {
    /// `booking` has a compensation event sub-process: it runs instead of the inner
    /// handlers, and throws compensation itself to undo only `hotel` first.
    WITH_ESP: Trip {
        start    begin;
        subprocess booking {
            start    bs;
            task     flight = |t| async move { t.charged = true; Ok(()) };
            task     hotel = |t| async move { t.reserved = true; Ok(()) };
            boundary undo_flight on flight: compensation -> cancel_flight;
            boundary undo_hotel on hotel: compensation -> cancel_hotel;
            task     cancel_flight = |t| async move { t.charged = false; Ok(()) }: compensation;
            task     cancel_hotel = |t| async move { t.reserved = false; Ok(()) }: compensation;
            end      be;
            bs -> flight -> hotel -> be;
            event_subprocess undo_booking {
                start    us: compensation;
                task     notify = |t| async move { t.released = true; Ok(()) };
                throw    undo_hotel_only: compensation(hotel);
                task     check = |t| async move { t.after = !t.reserved && t.charged; Ok(()) };
                end      ue;
                us -> notify -> undo_hotel_only -> check -> ue;
            }
        }
        throw    undo: compensation(booking);
        end      done;
        begin -> booking -> undo -> done;
    }
}

async fn with_esp(engine: Engine, _: usize) {
    let handle = engine.start(&WITH_ESP, Trip::default()).await.unwrap();
    let (outcome, history) = finish_trip(&handle).await;
    let trip = completed_trip(outcome, &history);
    assert_eq!(
        history.completed_tasks(),
        [
            "flight",
            "hotel",
            "booking",
            "notify",
            "cancel_hotel",
            "check"
        ],
        "{history}"
    );
    // `flight` was not undone: the event sub-process chose to undo `hotel` only.
    assert!(trip.after && trip.released && trip.charged && !trip.reserved);
}

process! {
    /// `booking` is interrupted by its error boundary after `flight` completed
    /// inside: a sub-process that did not complete is not undone.
    INTERRUPTED: Trip {
        start    begin;
        task     pay = |t| async move { t.shipped = true; Ok(()) };
        boundary undo_pay on pay: compensation -> unpay;
        task     unpay = |t| async move { t.shipped = false; Ok(()) }: compensation;
        subprocess booking {
            start    bs;
            task     flight = |t| async move { t.charged = true; Ok(()) };
            boundary undo_flight on flight: compensation -> cancel_flight;
            task     cancel_flight = |t| async move { t.charged = false; Ok(()) }: compensation;
            task     hotel = |_| async move { Err(TaskError::bpmn("FULL", "no room")) };
            end      be;
            bs -> flight -> hotel -> be;
        }
        boundary full on booking: error("FULL");
        throw    undo: compensation;
        end      done;
        end      failed;
        begin -> pay -> booking -> done;
        full -> undo -> failed;
    }
}

async fn interrupted(engine: Engine, _: usize) {
    let handle = engine.start(&INTERRUPTED, Trip::default()).await.unwrap();
    let (outcome, history) = finish_trip(&handle).await;
    let trip = completed_trip(outcome, &history);
    assert_eq!(
        history.completed_tasks(),
        ["pay", "flight", "unpay"],
        "{history}"
    );
    assert!(trip.charged && !trip.shipped);
}

flavors!(inner, with_esp, interrupted);

process! {
    /// The saga's usual shape: an error event sub-process at the top level throws
    /// compensation — it undoes what the process completed.
    FROM_EVENT_SUB: Trip {
        start    begin;
        task     charge = |t| async move { t.charged = true; Ok(()) };
        boundary undo_charge on charge: compensation -> refund;
        task     refund = |t| async move { t.charged = false; t.refunded = 1; Ok(()) }: compensation;
        task     ship = |_| async move { Err(TaskError::bpmn("LOST", "parcel lost")) };
        end      done;
        begin -> charge -> ship -> done;
        event_subprocess on_error {
            start    oops: error;
            throw    undo: compensation;
            end      oe;
            oops -> undo -> oe;
        }
    }
}

async fn from_event_sub(engine: Engine, _: usize) {
    let handle = engine
        .start(&FROM_EVENT_SUB, Trip::default())
        .await
        .unwrap();
    let (outcome, history) = finish_trip(&handle).await;
    let trip = completed_trip(outcome, &history);
    assert_eq!(history.completed_tasks(), ["charge", "refund"], "{history}");
    assert!(!trip.charged && trip.refunded == 1);
}

flavors!(from_event_sub);
