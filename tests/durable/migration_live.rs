//! Migrating the instances a running engine holds (README, "Migration plans"):
//! each live loop leaves memory once it rests, evicted ones are taken as they are,
//! and both are moved and loaded on the new version — with what was sent to them
//! meanwhile, their handles still answering (or told they migrated when the data
//! type changed), an open incident resolved by the corrected task.

use super::*;
use thresh::{migrate, InstanceError, Migration, Query};

#[derive(Clone, Debug, Default, PartialEq, ProcessData, Serialize, Deserialize)]
pub struct Parcel {
    pub id: String,
    pub paid: u64,
    pub shipped: bool,
}

process! {
    PARCEL_V1: Parcel = "parcel" version 1 {
        start   s;
        user    approve;
        receive pay: message("parcel-paid", key = |p| p.id.clone(), apply = |p, amount: &u64| p.paid += *amount);
        end     e;
        s -> approve -> pay -> e;
    }

    PARCEL_V2: Parcel = "parcel" version 2 {
        start   s;
        user    review;
        receive pay: message("parcel-paid", key = |p| p.id.clone(), apply = |p, amount: &u64| p.paid += *amount);
        task    ship = |p| async move { p.shipped = true; Ok(()) };
        end     e;
        s -> review -> pay -> ship -> e;
    }
}

static PARCEL_PLAN: Migration<Parcel, Parcel> =
    migrate!(PARCEL_V1 => PARCEL_V2 { approve => review });

/// Wait until `engine` has evicted `n` instances.
async fn until_evicted(engine: &DurableEngine, n: usize) {
    tokio::time::timeout(HANG, async {
        while engine.evicted_instances() < n {
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
    })
    .await
    .expect("evicted");
}

/// Rounds of: instances of version 1 at a user task or at a message catch, on an
/// engine that keeps them in memory (even rounds) or evicts them at once (odd
/// ones), migrated while their payments are published. Each payment is applied
/// exactly once — by version 1 if it came first (that instance ended there and is
/// skipped), else by version 2, which ships. Those at the user task all move, and
/// their old handles complete version 2's task and see version 2's outcome.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn instances_a_running_engine_holds_migrate_while_messages_race() {
    const N: usize = 12;
    for round in 0..6 {
        let store = test_store();
        let engine = store.engine().expect("open");
        let evicting = round % 2 == 1;
        if evicting {
            engine.evict_idle(Some(Duration::ZERO));
        }
        let mut handles = Vec::new();
        for i in 0..N {
            let id = format!("P-{round}-{i}");
            let parcel = Parcel {
                id: id.clone(),
                ..Parcel::default()
            };
            let handle = engine.start(&PARCEL_V1, parcel).await.expect("started");
            until_open(&handle, "approve").await;
            // Every other one waits at the payment.
            if i % 2 == 0 {
                handle
                    .complete("approve", |_: &mut Parcel| {})
                    .await
                    .expect("approved");
            }
            handles.push((id, handle));
        }
        if evicting {
            until_evicted(&engine, N).await;
        }
        let paying = engine.clone();
        let keys: Vec<String> = handles.iter().step_by(2).map(|(k, _)| k.clone()).collect();
        let payments = tokio::spawn(async move {
            for key in keys {
                paying
                    .publish_message("parcel-paid", &key, 5_u64)
                    .await
                    .expect("published");
                tokio::task::yield_now().await;
            }
        });
        let report = engine
            .migrate(&PARCEL_PLAN, &Query::of(&PARCEL_V1))
            .await
            .expect("migrate");
        payments.await.expect("payments published");
        for (i, (key, handle)) in handles.iter().enumerate() {
            let migrated = report.migrated.contains(&handle.id());
            if i % 2 == 1 {
                assert!(
                    migrated,
                    "round {round}: {key} at the user task moves: {report:?}"
                );
                handle
                    .complete("review", |_: &mut Parcel| {})
                    .await
                    .expect("reviewed through the old handle");
                engine
                    .publish_message("parcel-paid", key, 5_u64)
                    .await
                    .expect("published");
            } else if let Some((_, why)) = report.skipped.iter().find(|(id, _)| *id == handle.id())
            {
                // Not in the report at all: it ended before the migration looked.
                assert!(why.contains("ended"), "round {round}: {key}: {why}");
            }
            let done = tokio::time::timeout(HANG, handle.outcome())
                .await
                .unwrap_or_else(|_| panic!("round {round}: {key} ended"))
                .completed()
                .expect("completed");
            assert_eq!(done.paid, 5, "round {round}: {key}: paid once");
            assert_eq!(
                done.shipped, migrated,
                "round {round}: {key}: the version it ended on"
            );
        }
        engine.shutdown(HANG).await.expect("shutdown");
    }
}

process! {
    TAG_V1: Parcel = "tag" version 1 {
        start   s;
        receive scan: message("tag-scanned", key = |p| p.id.clone(), apply = |p, n: &u64| p.paid = *n);
        end     e;
        s -> scan -> e;
    }

    TAG_V2: Parcel = "tag" version 2 {
        start   s;
        receive scan: message("tag-scanned", key = |p| format!("v2-{}", p.id), apply = |p, n: &u64| p.paid = *n);
        task    ship = |p| async move { p.shipped = true; Ok(()) };
        end     e;
        s -> scan -> ship -> e;
    }
}

static TAG_PLAN: Migration<Parcel, Parcel> = migrate!(TAG_V1 => TAG_V2 {});

/// A waiting catch's subscription is made again with version 2's key, whether its
/// instance was live or evicted: a message under the new key reaches it, one
/// under the old key stays in the broker.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_waiting_catch_is_subscribed_again_with_the_new_versions_key() {
    for evicting in [false, true] {
        let store = test_store();
        let engine = store.engine().expect("open");
        if evicting {
            engine.evict_idle(Some(Duration::ZERO));
        }
        let tag = Parcel {
            id: "T".into(),
            ..Parcel::default()
        };
        let handle = engine.start(&TAG_V1, tag).await.expect("started");
        if evicting {
            until_evicted(&engine, 1).await;
        }
        let report = engine
            .migrate(&TAG_PLAN, &Query::of(&TAG_V1))
            .await
            .expect("migrate");
        assert_eq!(report.migrated, [handle.id()], "{report:?}");
        engine
            .publish_message("tag-scanned", "T", 1_u64)
            .await
            .expect("published");
        engine
            .publish_message("tag-scanned", "v2-T", 2_u64)
            .await
            .expect("published");
        let done = tokio::time::timeout(HANG, handle.outcome())
            .await
            .expect("ended")
            .completed()
            .expect("completed");
        assert_eq!((done.paid, done.shipped), (2, true), "evicting: {evicting}");
        engine.shutdown(HANG).await.expect("shutdown");
    }
}

#[derive(Clone, Debug, Default, PartialEq, ProcessData, Serialize, Deserialize)]
pub struct Priced {
    pub id: String,
    pub cents: u64,
    pub shipped: bool,
}

process! {
    PRICE_V1: Parcel = "price" version 1 {
        start   s;
        receive pay: message("price-paid", key = |p| p.id.clone(), apply = |p, n: &u64| p.paid = *n);
        end     e;
        s -> pay -> e;
    }

    PRICE_V2: Priced = "price" version 2 {
        start   s;
        receive pay: message("price-paid", key = |p| p.id.clone(), apply = |p, n: &u64| p.cents = *n * 100);
        task    ship = |p| async move { p.shipped = true; Ok(()) };
        end     e;
        s -> pay -> ship -> e;
    }
}

fn priced(parcel: Parcel) -> Priced {
    Priced {
        id: parcel.id,
        cents: parcel.paid * 100,
        shipped: parcel.shipped,
    }
}

static PRICE_PLAN: Migration<Parcel, Priced> = migrate!(PRICE_V1 => PRICE_V2 { data = priced });

/// A plan that converts the data: the old handle, typed with version 1's data,
/// hears `Migrated`; the instance goes on on version 2, read from the store.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn old_handles_hear_the_migration_when_the_data_type_changes() {
    for evicting in [false, true] {
        let store = test_store();
        let engine = store.engine().expect("open");
        if evicting {
            engine.evict_idle(Some(Duration::ZERO));
        }
        let parcel = Parcel {
            id: "C".into(),
            ..Parcel::default()
        };
        let handle = engine.start(&PRICE_V1, parcel).await.expect("started");
        if evicting {
            until_evicted(&engine, 1).await;
        }
        let report = engine
            .migrate(&PRICE_PLAN, &Query::of(&PRICE_V1))
            .await
            .expect("migrate");
        assert_eq!(report.migrated, [handle.id()], "{report:?}");
        let old = tokio::time::timeout(HANG, handle.outcome())
            .await
            .expect("told");
        assert!(
            matches!(old, Outcome::Failed(InstanceError::Migrated { version: 2 })),
            "{old:?}"
        );
        assert_eq!(handle.data().await, None);
        engine
            .publish_message("price-paid", "C", 3_u64)
            .await
            .expect("published");
        let watched = engine.watch(&PRICE_V2, handle.id());
        let done = tokio::time::timeout(HANG, watched.outcome())
            .await
            .expect("ended")
            .expect("read");
        assert_eq!(done.status, Status::Completed);
        assert_eq!((done.data.cents, done.data.shipped), (300, true));
        engine.shutdown(HANG).await.expect("shutdown");
    }
}

process! {
    FIX_V1: Parcel = "fix" version 1 {
        start s;
        task  charge = |_| async move { Err(thresh::TaskError::permanent("the old code divides by zero")) };
        end   e;
        s -> charge -> e;
    }

    FIX_V2: Parcel = "fix" version 2 {
        start s;
        task  charge_fixed = |p| async move { p.paid = 42; Ok(()) };
        end   e;
        s -> charge_fixed -> e;
    }
}

static FIX_PLAN: Migration<Parcel, Parcel> = migrate!(FIX_V1 => FIX_V2 { charge => charge_fixed });

/// The classic fix on a running engine: the instance held at its failing task
/// (in memory, or evicted) moves with its incident to the corrected task, the
/// engine's board names the new task, and the retry runs the corrected handler.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_open_incident_of_a_running_engine_is_resolved_by_the_plan() {
    for evicting in [false, true] {
        let store = test_store();
        let engine = store.engine().expect("open");
        if evicting {
            engine.evict_idle(Some(Duration::ZERO));
        }
        let handle = engine
            .start(&FIX_V1, Parcel::default())
            .await
            .expect("started");
        tokio::time::timeout(HANG, async {
            while engine.incidents().await.expect("read").is_empty() {
                tokio::time::sleep(Duration::from_millis(1)).await;
            }
        })
        .await
        .expect("an incident opened");
        if evicting {
            until_evicted(&engine, 1).await;
        }
        let report = engine
            .migrate(&FIX_PLAN, &Query::of(&FIX_V1))
            .await
            .expect("migrate");
        assert_eq!(report.migrated, [handle.id()], "{report:?}");
        // Loaded on version 2, it lists its incident again at the new task.
        let incident = tokio::time::timeout(HANG, async {
            loop {
                let incidents = engine.incidents().await.expect("read");
                if let [incident] = &incidents[..] {
                    if incident.node == "charge_fixed" {
                        return incident.clone();
                    }
                }
                tokio::time::sleep(Duration::from_millis(1)).await;
            }
        })
        .await
        .expect("the incident at the corrected task");
        engine.retry(incident.id).await.expect("retried");
        let done = tokio::time::timeout(HANG, handle.outcome())
            .await
            .expect("ended")
            .completed()
            .expect("completed by the corrected handler");
        assert_eq!(done.paid, 42);
        engine.shutdown(HANG).await.expect("shutdown");
    }
}

/// Many instances whose handles are gone, in memory: every one moves.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn many_instances_without_handles_migrate() {
    let store = test_store();
    let engine = store.engine().expect("open");
    for i in 0..700 {
        let parcel = Parcel {
            id: format!("M-{i}"),
            ..Parcel::default()
        };
        engine.start(&PARCEL_V1, parcel).await.expect("started");
    }
    tokio::time::sleep(Duration::from_millis(200)).await;
    let report = engine
        .migrate(&PARCEL_PLAN, &Query::of(&PARCEL_V1))
        .await
        .expect("migrate");
    assert!(report.skipped.is_empty(), "{:?}", &report.skipped[..1]);
    assert_eq!(report.migrated.len(), 700);
    engine.shutdown(HANG).await.expect("shutdown");
}

process! {
    PACKING: Parcel = "packing" {
        start s;
        user  pack;
        end   e;
        s -> pack -> e;
    }

    CALLER_V1: Parcel = "caller" version 1 {
        start s;
        call  packed = PACKING(input = |p| p.clone(), output = |p, c| p.paid = c.paid + 1);
        end   e;
        s -> packed -> e;
    }

    CALLER_V2: Parcel = "caller" version 2 {
        start s;
        call  packed = PACKING(input = |p| p.clone(), output = |p, c| p.paid = c.paid + 1);
        task  ship = |p| async move { p.shipped = true; Ok(()) };
        end   e;
        s -> packed -> ship -> e;
    }
}

static CALLER_PLAN: Migration<Parcel, Parcel> = migrate!(CALLER_V1 => CALLER_V2 {});

/// A call activity's parent is never evicted (its child is linked to its loop):
/// the migration gives up waiting for it to rest, skips it with the reason, and
/// it goes on on version 1, untouched.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_instance_that_never_rests_is_skipped_and_goes_on() {
    let store = test_store();
    let engine = store.engine().expect("open");
    engine.register(&PACKING).expect("registered");
    let caller = engine
        .start(&CALLER_V1, Parcel::default())
        .await
        .expect("started");
    let task = tokio::time::timeout(HANG, async {
        loop {
            let tasks = engine.tasks(&thresh::TaskQuery::new()).await.expect("list");
            if let Some(task) = tasks.into_iter().next() {
                return task;
            }
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
    })
    .await
    .expect("the child's task opened");
    let report = engine
        .migrate(&CALLER_PLAN, &Query::of(&CALLER_V1))
        .await
        .expect("migrate");
    assert!(report.migrated.is_empty(), "{report:?}");
    assert_eq!(report.skipped.len(), 1, "{report:?}");
    assert_eq!(report.skipped[0].0, caller.id());
    assert!(
        report.skipped[0].1.contains("did not come to rest"),
        "{report:?}"
    );
    engine
        .complete_task(&PACKING, task.id, |p: &mut Parcel| p.paid = 1)
        .await
        .expect("packed");
    let done = tokio::time::timeout(HANG, caller.outcome())
        .await
        .expect("ended")
        .completed()
        .expect("completed");
    assert_eq!((done.paid, done.shipped), (2, false), "on version 1");
    engine.shutdown(HANG).await.expect("shutdown");
}
