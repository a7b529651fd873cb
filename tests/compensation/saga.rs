//! The saga: charge, reserve, ship; ship fails, the completed steps are undone.

use super::*;

async fn charge(t: &mut Trip) -> Result<(), TaskError> {
    yield_jitter().await;
    t.charge_id = 100 + t.run;
    t.charged = true;
    Ok(())
}

async fn reserve(t: &mut Trip) -> Result<(), TaskError> {
    yield_jitter().await;
    t.reserved = true;
    Ok(())
}

async fn ship(t: &mut Trip) -> Result<(), TaskError> {
    yield_jitter().await;
    if t.run.is_multiple_of(2) {
        return Err(TaskError::bpmn("NO_COURIER", "no courier today"));
    }
    t.shipped = true;
    Ok(())
}

/// Works from the snapshot `charge` left: the charge id it made.
async fn refund(t: &mut Trip) -> Result<(), TaskError> {
    yield_jitter().await;
    assert!(
        t.charged && !t.reserved,
        "refund sees the data charge left: {t:?}"
    );
    t.refunded = t.charge_id;
    t.charged = false;
    Ok(())
}

async fn release(t: &mut Trip) -> Result<(), TaskError> {
    yield_jitter().await;
    assert!(t.reserved, "release sees the data reserve left");
    t.reserved = false;
    t.released = true;
    Ok(())
}

process! {
    SAGA: Trip {
        start    begin;
        task     charge = charge;
        task     reserve = reserve;
        task     ship = ship;
        boundary undo_charge on charge: compensation -> refund;
        boundary undo_reserve on reserve: compensation -> release;
        task     refund = refund: compensation;
        task     release = release: compensation;
        boundary failed on ship: error("NO_COURIER");
        throw    undo: compensation;
        task     after = |t| async move { t.after = t.released && t.refunded != 0; Ok(()) };
        end      shipped;
        end      rolled_back;
        begin -> charge -> reserve -> ship -> shipped;
        failed -> undo -> after -> rolled_back;
    }
}

async fn saga(engine: Engine, i: usize) {
    let run = i as u64;
    let handle = engine
        .start(
            &SAGA,
            Trip {
                run,
                ..Trip::default()
            },
        )
        .await
        .unwrap();
    let (outcome, history) = finish_trip(&handle).await;
    let trip = completed_trip(outcome, &history);
    if run.is_multiple_of(2) {
        assert_eq!(
            history.completed_tasks(),
            ["charge", "reserve", "release", "refund", "after"],
            "{history}"
        );
        assert!(!trip.charged && !trip.reserved && trip.released && trip.after);
        assert_eq!(trip.refunded, 100 + run);
        assert_eq!(history.ended_at(), ["release", "refund", "rolled_back"]);
        // Each handler's track begins at its compensation boundary, spawned by the throw.
        let thrower = history
            .steps()
            .iter()
            .find(|s| s.node == "undo")
            .map(|s| s.track)
            .expect("the throw ran");
        for boundary in ["undo_reserve", "undo_charge"] {
            assert!(
                history
                    .steps()
                    .iter()
                    .any(|s| s.node == boundary && s.what == Happening::Spawned { from: thrower }),
                "{history}"
            );
        }
    } else {
        assert_eq!(history.completed_tasks(), ["charge", "reserve", "ship"]);
        assert!(trip.charged && trip.reserved && trip.shipped && trip.refunded == 0);
    }
}

flavors!(saga);

process! {
    /// Only `charge` is undone; `reserve` stays.
    UNDO_CHARGE: Trip {
        start    begin;
        task     charge = charge;
        task     reserve = reserve;
        boundary undo_charge on charge: compensation -> refund;
        boundary undo_reserve on reserve: compensation -> release;
        task     refund = |t| async move { t.refunded = t.charge_id; Ok(()) }: compensation;
        task     release = release: compensation;
        throw    undo: compensation(charge);
        throw    again: compensation(charge);
        end      done;
        begin -> charge -> reserve -> undo -> again -> done;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_named_activity_is_undone_alone_and_only_once() {
    let engine = Engine::new();
    let handle = engine
        .start(
            &UNDO_CHARGE,
            Trip {
                run: 7,
                ..Trip::default()
            },
        )
        .await
        .unwrap();
    let (outcome, history) = finish_trip(&handle).await;
    let trip = completed_trip(outcome, &history);
    assert_eq!(history.completed_tasks(), ["charge", "reserve", "refund"]);
    assert!(trip.reserved && !trip.released && trip.refunded == 107);
    // The first throw undid one completion, the second found none left.
    let thrown: Vec<usize> = history
        .steps()
        .iter()
        .filter_map(|s| match s.what {
            Happening::Thrown { catchers } => Some(catchers),
            _ => None,
        })
        .collect();
    assert_eq!(thrown, [1, 0]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn the_saga_example_undoes_what_completed() {
    use super::example::{Order, SAGA};
    let coverage = thresh::testing::Coverage::new();
    let engine = Engine::new();
    for (id, in_stock, courier, ran) in [
        ("A", true, true, &["charge", "reserve", "ship", "done"][..]),
        (
            "B",
            true,
            false,
            &["charge", "reserve", "release", "refund", "mark"][..],
        ),
        ("C", false, true, &["charge", "refund", "mark"][..]),
    ] {
        let order = Order {
            id: id.into(),
            in_stock,
            courier,
            ..Order::default()
        };
        let handle = engine.start(&SAGA, order).await.unwrap();
        let Outcome::Completed(o) = handle.outcome().await else {
            panic!("order {id} did not complete");
        };
        assert_eq!(handle.history().await.completed_tasks(), ran, "order {id}");
        coverage.add(&SAGA, &handle).await;
        let undone = id != "A";
        assert_eq!(o.refunded == format!("ch_{id}"), undone, "{o:?}");
        assert_eq!(o.released, id == "B");
        assert!(!o.reserved || id == "A");
    }
    // Every element was taken, the compensation boundaries too (a handler's track
    // begins at its boundary).
    coverage.assert_at_least(&SAGA, 100.0);
}
