//! Applying a migration plan to stored instances (README, "Migration plans"):
//! after a restart and before `resume`, `migrate` moves the selected instances of
//! the old version to the new one — tokens where the plan puts them, a join's
//! partial arrivals, a timer's deadline, the data converted — and `resume` runs
//! them on the new version to the outcome its model gives.

use super::*;
use thresh::{migrate, Migration, Query};
use tokio::time::Instant;

#[derive(Clone, Debug, Default, PartialEq, ProcessData, Serialize, Deserialize)]
pub struct Trip {
    pub id: String,
    pub price: u64,
    pub paid: u64,
    pub shipped: bool,
}

#[derive(Clone, Debug, Default, PartialEq, ProcessData, Serialize, Deserialize)]
pub struct TripCents {
    pub id: String,
    pub cents: u64,
    pub paid: u64,
    pub shipped: bool,
}

process! {
    TRIP_V1: Trip = "trip" version 1 {
        start    received;
        task     price = |t| async move { t.price = 10; Ok(()) };
        parallel fork;
        user     approve;
        receive  payment: message("trip-paid", key = |t| t.id.clone(), apply = |t, p: &u64| t.paid = *p);
        parallel join;
        end      done;
        received -> price -> fork;
        fork -> approve, payment;
        approve, payment -> join -> done;
    }

    TRIP_V2: TripCents = "trip" version 2 {
        start    received;
        task     price = |t| async move { t.cents = 1_000; Ok(()) };
        parallel fork;
        user     review;
        receive  payment: message("trip-paid", key = |t| t.id.clone(), apply = |t, p: &u64| t.paid = *p);
        parallel join;
        task     ship = |t| async move { t.shipped = true; Ok(()) };
        end      done;
        received -> price -> fork;
        fork -> review, payment;
        review, payment -> join -> ship -> done;
    }
}

fn to_cents(trip: Trip) -> TripCents {
    TripCents {
        id: trip.id,
        cents: trip.price * 100,
        paid: trip.paid,
        shipped: trip.shipped,
    }
}

static TRIP_PLAN: Migration<Trip, TripCents> =
    migrate!(TRIP_V1 => TRIP_V2 { approve => review, data = to_cents });

fn trips(engine: &DurableEngine) -> Result<(), thresh::EngineError> {
    engine.register(&TRIP_V1)?;
    engine.register(&TRIP_V2)
}

/// An instance whose approval arrived at the join while its payment still waits
/// moves to version 2: the arrival is kept, the payment's catch waits again under
/// version 2's key, and version 2's shipping runs after the join. An instance the
/// query does not select stays on version 1 and finishes there.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_parked_instance_moves_with_its_join_arrival_and_finishes_on_the_new_version() {
    let store = test_store();
    let engine = store.engine().expect("open");
    trips(&engine).expect("registered");
    let moving = engine
        .start_keyed(
            &TRIP_V1,
            "move",
            Trip {
                id: "T-1".into(),
                ..Trip::default()
            },
        )
        .await
        .expect("started");
    let staying = engine
        .start_keyed(
            &TRIP_V1,
            "stay",
            Trip {
                id: "T-2".into(),
                ..Trip::default()
            },
        )
        .await
        .expect("started");
    for handle in [&moving, &staying] {
        until_open(handle, "approve").await;
        handle
            .complete("approve", |_: &mut Trip| {})
            .await
            .expect("approved");
    }
    let (moving, staying) = (moving.id(), staying.id());

    engine.shutdown(HANG).await.expect("shutdown");
    drop(engine);
    let engine = store.engine().expect("reopen");
    trips(&engine).expect("registered");
    let report = engine
        .migrate(&TRIP_PLAN, &Query::of(&TRIP_V1).key("move"))
        .await
        .expect("migrated");
    assert_eq!(report.migrated, [moving]);
    assert!(report.skipped.is_empty(), "{:?}", report.skipped);
    let resumed = engine.resume().await.expect("resumed");
    assert!(resumed.skipped.is_empty(), "{:?}", resumed.skipped);
    let moved = engine.handle(&TRIP_V2, moving).expect("on version 2");
    let stayed = engine.handle(&TRIP_V1, staying).expect("on version 1");
    for key in ["T-1", "T-2"] {
        engine
            .publish_message("trip-paid", key, 7_u64)
            .await
            .expect("published");
    }
    let moved = tokio::time::timeout(HANG, moved.outcome())
        .await
        .expect("ended")
        .completed()
        .expect("completed");
    assert_eq!(
        moved,
        TripCents {
            id: "T-1".into(),
            cents: 1_000,
            paid: 7,
            shipped: true
        }
    );
    let stayed = tokio::time::timeout(HANG, stayed.outcome())
        .await
        .expect("ended")
        .completed()
        .expect("completed");
    assert_eq!((stayed.price, stayed.paid), (10, 7));
    engine.shutdown(HANG).await.expect("shutdown");
}

process! {
    NAP_V1: Trip = "nap" version 1 {
        start s;
        catch wait: timer(Duration::from_secs(3600));
        end   e;
        s -> wait -> e;
    }

    NAP_V2: Trip = "nap" version 2 {
        start s;
        catch wait: timer(Duration::from_secs(3 * 3600));
        task  ship = |t| async move { t.shipped = true; Ok(()) };
        end   e;
        s -> wait -> ship -> e;
    }
}

static NAP_PLAN: Migration<Trip, Trip> = migrate!(NAP_V1 => NAP_V2 {});

/// Await `work` without letting the paused clock run (see `timer_starts::busy`).
async fn busy<F: std::future::Future>(work: F) -> F::Output {
    tokio::pin!(work);
    loop {
        tokio::select! {
            biased;
            out = &mut work => return out,
            _ = tokio::task::yield_now() => {}
        }
    }
}

/// A waiting timer keeps its deadline: the instance moved to a version whose
/// timer is three hours fires at version 1's one hour, then runs version 2.
#[tokio::test(start_paused = true)]
async fn a_timer_keeps_its_deadline_across_a_migration() {
    let store = test_store();
    let engine = store.engine().expect("open");
    let t0 = Instant::now();
    let nap = busy(engine.start(&NAP_V1, Trip::default()))
        .await
        .expect("started");
    let id = nap.id();
    tokio::time::sleep(Duration::from_secs(1800)).await;
    busy(engine.shutdown(HANG)).await.expect("shutdown");

    let engine = store.engine().expect("reopen");
    let report = busy(engine.migrate(&NAP_PLAN, &Query::of(&NAP_V1)))
        .await
        .expect("migrated");
    assert_eq!(report.migrated, [id]);
    busy(engine.resume()).await.expect("resumed");
    let nap = engine.handle(&NAP_V2, id).expect("on version 2");
    let done = nap.outcome().await.completed().expect("completed");
    assert!(done.shipped, "version 2 ran");
    assert_eq!(
        t0.elapsed(),
        Duration::from_secs(3600),
        "at version 1's deadline"
    );
    busy(engine.shutdown(HANG)).await.expect("shutdown");
}

process! {
    CHARGE_V1: Trip = "charge" version 1 {
        start s;
        task  charge = |_| async move { Err(thresh::TaskError::permanent("the old code divides by zero")) };
        end   e;
        s -> charge -> e;
    }

    CHARGE_V2: Trip = "charge" version 2 {
        start s;
        task  charge_fixed = |t| async move { t.paid = 42; Ok(()) };
        end   e;
        s -> charge_fixed -> e;
    }
}

static CHARGE_FIX: Migration<Trip, Trip> =
    migrate!(CHARGE_V1 => CHARGE_V2 { charge => charge_fixed });

/// The classic fix of an incident: deploy a corrected model, migrate, retry. The
/// token held at the failing task moves to the corrected one with its incident,
/// and the retry runs the corrected handler.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_incident_is_resolved_by_mapping_its_task_to_a_corrected_one() {
    let store = test_store();
    let engine = store.engine().expect("open");
    let charge = engine
        .start(&CHARGE_V1, Trip::default())
        .await
        .expect("started");
    let id = charge.id();
    tokio::time::timeout(HANG, async {
        while engine.incidents().await.expect("read").is_empty() {
            tokio::task::yield_now().await;
        }
    })
    .await
    .expect("an incident opened");
    engine.shutdown(HANG).await.expect("shutdown");
    drop(engine);

    let engine = store.engine().expect("reopen");
    let report = engine
        .migrate(&CHARGE_FIX, &Query::of(&CHARGE_V1))
        .await
        .expect("migrated");
    assert_eq!(report.migrated, [id]);
    engine.resume().await.expect("resumed");
    let incidents = engine.incidents().await.expect("read");
    assert_eq!(incidents.len(), 1, "{incidents:?}");
    assert_eq!(incidents[0].node, "charge_fixed");
    let charge = engine.handle(&CHARGE_V2, id).expect("on version 2");
    // Its loop has put the incident back on the engine's board once it answers.
    assert_eq!(charge.incidents().await, incidents);
    engine.retry(incidents[0].id).await.expect("retried");
    let done = tokio::time::timeout(HANG, charge.outcome())
        .await
        .expect("ended")
        .completed()
        .expect("completed by the corrected handler");
    assert_eq!(done.paid, 42);
    engine.shutdown(HANG).await.expect("shutdown");
}

/// An open user task moves with its instance: the task list's stored row names
/// the new element before the instance resumes, and it is completed there after.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_open_user_task_moves_in_the_task_list() {
    let store = test_store();
    let engine = store.engine().expect("open");
    let trip = engine
        .start(
            &TRIP_V1,
            Trip {
                id: "T-5".into(),
                ..Trip::default()
            },
        )
        .await
        .expect("started");
    until_open(&trip, "approve").await;
    let id = trip.id();
    engine.shutdown(HANG).await.expect("shutdown");
    drop(engine);

    let engine = store.engine().expect("reopen");
    let report = engine
        .migrate(&TRIP_PLAN, &Query::of(&TRIP_V1))
        .await
        .expect("migrated");
    assert_eq!(report.migrated, [id]);
    let listed = engine
        .tasks(&thresh::TaskQuery::new().instance(id))
        .await
        .expect("listed");
    let elements: Vec<_> = listed
        .iter()
        .map(|t| (t.process.as_str(), t.element.as_str()))
        .collect();
    assert_eq!(elements, [("trip", "review")]);
    engine.resume().await.expect("resumed");
    let trip = engine.handle(&TRIP_V2, id).expect("on version 2");
    until_open(&trip, "review").await;
    trip.complete("review", |_: &mut TripCents| {})
        .await
        .expect("reviewed");
    engine
        .publish_message("trip-paid", "T-5", 1_u64)
        .await
        .expect("published");
    let done = tokio::time::timeout(HANG, trip.outcome())
        .await
        .expect("ended")
        .completed()
        .expect("completed");
    assert!(done.shipped);
    engine.shutdown(HANG).await.expect("shutdown");
}

/// The child's part of the SIGKILL test: migrate the file's trips, saying when it
/// begins and when it is done; the parent kills it in between.
#[test]
#[ignore = "run by the SIGKILL test as its child process"]
fn migrate_child() {
    let Ok(path) = std::env::var("THRESH_MIGRATE_STORE") else {
        return;
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    runtime.block_on(async {
        let engine = thresh::Engine::open(&path).await.expect("open");
        println!("migrating");
        let report = engine
            .migrate(&TRIP_PLAN, &Query::of(&TRIP_V1))
            .await
            .expect("migrated");
        println!("migrated {}", report.migrated.len());
    });
}

/// 1 000 parked trips, migrated by a process killed with SIGKILL at several
/// moments of the migration, then migrated to the end: every instance is wholly of
/// one version (each resumes, none is skipped) and finishes as its version's model
/// says.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_migration_killed_midway_leaves_each_instance_whole() {
    use std::io::{BufRead, BufReader};
    const TRIPS: u64 = 1_000;
    let file = thresh::testing::TempFile::new("migrate-kill", "db");
    let path = file.path().to_path_buf();
    let engine = thresh::Engine::open(&path).await.expect("open");
    for i in 0..TRIPS {
        engine
            .start(
                &TRIP_V1,
                Trip {
                    id: format!("K-{i}"),
                    ..Trip::default()
                },
            )
            .await
            .expect("stored");
    }
    let parked = Query::of(&TRIP_V1).waiting_at("approve");
    tokio::time::timeout(HANG, async {
        while engine.count(&parked).await.expect("count") < TRIPS {
            tokio::task::yield_now().await;
        }
    })
    .await
    .expect("all parked");
    engine.shutdown(HANG).await.expect("shutdown");
    drop(engine);

    let mut finished = false;
    for delay_ms in [0, 3, 8, 20, 60, 200] {
        let mut child = std::process::Command::new(std::env::current_exe().expect("exe"))
            .args([
                "--ignored",
                "--exact",
                "migration::migrate_child",
                "--nocapture",
                "--test-threads=1",
            ])
            .env("THRESH_MIGRATE_STORE", &path)
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::null())
            .spawn()
            .expect("child");
        let stdout = child.stdout.take().expect("stdout");
        let (began_tx, began_rx) = std::sync::mpsc::channel();
        let reader = std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                let line = line.rsplit("... ").next().unwrap_or_default().to_string();
                if line.starts_with("migrating") {
                    let _ = began_tx.send(());
                }
                if line.starts_with("migrated") {
                    return true;
                }
            }
            false
        });
        let began = tokio::task::spawn_blocking(move || began_rx.recv().is_ok())
            .await
            .expect("began");
        assert!(began, "the child began migrating");
        std::thread::sleep(Duration::from_millis(delay_ms));
        child.kill().expect("SIGKILL");
        let _ = child.wait();
        if reader.join().expect("reader") {
            finished = true;
            break;
        }
    }
    let engine = thresh::Engine::open(&path).await.expect("reopen");
    trips(&engine).expect("registered");
    if !finished {
        let report = engine
            .migrate(&TRIP_PLAN, &Query::of(&TRIP_V1))
            .await
            .expect("migrated the rest");
        assert!(report.skipped.is_empty(), "{:?}", report.skipped);
    }
    let report = engine.resume().await.expect("resume");
    assert!(report.skipped.is_empty(), "{:?}", &report.skipped[..1]);
    assert_eq!(report.resumed.len() as u64, TRIPS);
    for (id, _) in &report.resumed {
        let trip = engine
            .handle(&TRIP_V2, *id)
            .expect("every one on version 2");
        until_open(&trip, "review").await;
        trip.complete("review", |_: &mut TripCents| {})
            .await
            .expect("reviewed");
    }
    for i in 0..TRIPS {
        engine
            .publish_message("trip-paid", format!("K-{i}"), 1_u64)
            .await
            .expect("published");
    }
    for (id, _) in &report.resumed {
        let trip = engine.handle(&TRIP_V2, *id).expect("on version 2");
        let done = tokio::time::timeout(HANG, trip.outcome())
            .await
            .expect("ended")
            .completed()
            .expect("completed");
        assert_eq!((done.cents, done.paid, done.shipped), (1_000, 1, true));
    }
    engine.shutdown(HANG).await.expect("shutdown");
}

process! {
    DESK_V1: Trip = "desk" version 1 {
        start    s;
        parallel fork;
        user     approve;
        user     check;
        receive  payment: message("desk-paid", key = |t| t.id.clone(), apply = |t, p: &u64| t.paid = *p);
        parallel join;
        end      e;
        s -> fork -> approve, check, payment;
        approve, check, payment -> join -> e;
    }

    DESK_V2: Trip = "desk" version 2 {
        start    s;
        parallel fork;
        user     review;
        user     check;
        receive  payment: message("desk-paid", key = |t| t.id.clone(), apply = |t, p: &u64| t.paid = *p);
        parallel join;
        task     ship = |t| async move { t.shipped = true; Ok(()) };
        end      e;
        s -> fork -> check, payment, review;
        payment, review, check -> join -> ship -> e;
    }
}

static DESK_PLAN: Migration<Trip, Trip> = migrate!(DESK_V1 => DESK_V2 { approve => review });

/// Every resting state of a three-way join — each subset of its branches arrived,
/// short of all three — migrated to a version whose join lists its flows in another order and whose
/// user task is renamed: each instance resumes on the new version, waits for
/// exactly the branches that had not arrived, and finishes as the new model says.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_arrival_state_of_a_join_migrates_and_finishes() {
    let store = test_store();
    let engine = store.engine().expect("open");
    let mut ids = Vec::new();
    // Every subset short of all three (then the join fires and the instance ends).
    for arrived in 0..7_u8 {
        let key = format!("D-{arrived}");
        let desk = engine
            .start_keyed(
                &DESK_V1,
                key.clone(),
                Trip {
                    id: key.clone(),
                    ..Trip::default()
                },
            )
            .await
            .expect("started");
        until_open(&desk, "approve").await;
        until_open(&desk, "check").await;
        if arrived & 1 != 0 {
            desk.complete("approve", |_: &mut Trip| {})
                .await
                .expect("approved");
        }
        if arrived & 2 != 0 {
            desk.complete("check", |_: &mut Trip| {})
                .await
                .expect("checked");
        }
        if arrived & 4 != 0 {
            engine
                .publish_message("desk-paid", format!("D-{arrived}"), u64::from(arrived))
                .await
                .expect("paid");
            // Stored once no token of it waits at the receive task any more.
            let waiting = Query::of(&DESK_V1).key(key.as_str()).waiting_at("payment");
            tokio::time::timeout(HANG, async {
                while engine.count(&waiting).await.expect("count") > 0 {
                    tokio::task::yield_now().await;
                }
            })
            .await
            .expect("the payment arrived at the join");
        }
        ids.push((arrived, desk.id()));
    }
    engine.shutdown(HANG).await.expect("shutdown");
    drop(engine);

    let engine = store.engine().expect("reopen");
    let report = engine
        .migrate(&DESK_PLAN, &Query::of(&DESK_V1))
        .await
        .expect("migrated");
    assert_eq!(report.migrated.len(), 7, "{:?}", report.skipped);
    let resumed = engine.resume().await.expect("resumed");
    assert!(resumed.skipped.is_empty(), "{:?}", resumed.skipped);
    for (arrived, id) in ids {
        let desk = engine.handle(&DESK_V2, id).expect("on version 2");
        let mut open: Vec<String> = Vec::new();
        tokio::time::timeout(HANG, async {
            loop {
                open = desk
                    .open_work()
                    .await
                    .into_iter()
                    .map(|w| w.node.to_string())
                    .collect();
                open.sort();
                let expected = (arrived & 1 == 0) as usize + (arrived & 2 == 0) as usize;
                if open.len() == expected {
                    break;
                }
                tokio::task::yield_now().await;
            }
        })
        .await
        .expect("its open tasks restored");
        let mut expected: Vec<String> = Vec::new();
        if arrived & 2 == 0 {
            expected.push("check".into());
        }
        if arrived & 1 == 0 {
            expected.push("review".into());
        }
        assert_eq!(open, expected, "arrived {arrived:03b}");
        for node in &expected {
            desk.complete(node.as_str(), |_: &mut Trip| {})
                .await
                .expect("completed");
        }
        if arrived & 4 == 0 {
            engine
                .publish_message("desk-paid", format!("D-{arrived}"), 100_u64)
                .await
                .expect("paid");
        }
        let done = tokio::time::timeout(HANG, desk.outcome())
            .await
            .expect("ended")
            .completed()
            .expect("completed");
        let paid = if arrived & 4 == 0 {
            100
        } else {
            u64::from(arrived)
        };
        assert_eq!(
            (done.paid, done.shipped),
            (paid, true),
            "arrived {arrived:03b}"
        );
    }
    engine.shutdown(HANG).await.expect("shutdown");
}
