//! Fingerprints and data shapes: a changed or unregistered process, or data that no
//! longer deserialises, is reported by `resume` and left stored.

use super::*;

/// A stored instance whose process changed, or is not registered, is reported and
/// left stored as running.
#[tokio::test]
async fn a_changed_or_unregistered_process_is_reported_not_resumed() {
    mod changed {
        use super::*;
        process! {
            pub APPROVAL: Order {
                start received;
                user  approve;
                end   done;
                received -> approve -> done;
            }
        }
    }
    let store = test_store();
    let engine = store.engine().expect("open");
    let handle = engine
        .start(&APPROVAL, Order::default())
        .await
        .expect("stored");
    until_open(&handle, "approve").await;
    engine.shutdown(HANG).await.expect("shutdown");

    let engine = store.engine().expect("reopen");
    let report = engine.resume().await.expect("resume");
    assert_eq!(report.skipped.len(), 1);
    assert_eq!(report.skipped[0].reason, SkipReason::NotRegistered);

    engine.register(&changed::APPROVAL).expect("register");
    let report = engine.resume().await.expect("resume");
    assert!(report.resumed.is_empty());
    assert_eq!(
        report.skipped[0].reason,
        SkipReason::ModelChanged {
            stored: APPROVAL.fingerprint(),
            registered: changed::APPROVAL.fingerprint(),
        }
    );
    engine.shutdown(HANG).await.expect("shutdown");
    assert_eq!(store.running().expect("read").len(), 1, "left stored");
}

/// The order's data after a change of shape: `total` is new and required.
#[derive(Clone, Debug, Default, PartialEq, ProcessData, Serialize, Deserialize)]
pub struct Renamed {
    pub total: Vec<u8>,
}

/// Data that no longer deserialises into the registered type is reported as
/// unreadable, not resumed and not dropped.
#[tokio::test]
async fn data_of_another_shape_is_reported_unreadable() {
    mod other {
        use super::*;
        process! {
            pub APPROVAL: Renamed {
                start received;
                task  check = |_o| async move { Ok(()) };
                user  approve;
                task  ship = |_o| async move { Ok(()) };
                end   done;
                received -> check -> approve -> ship -> done;
            }
        }
    }
    let store = test_store();
    let engine = store.engine().expect("open");
    let handle = engine
        .start(&APPROVAL, Order::default())
        .await
        .expect("stored");
    until_open(&handle, "approve").await;
    engine.shutdown(HANG).await.expect("shutdown");
    let engine = store.engine().expect("reopen");
    // A resume that evicts reads no checkpoint of an instance at rest: it would
    // find the data unreadable only as the instance loads (logged at error, the
    // instance left stored as running, its handles told it is lost).
    engine.evict_idle(None);
    engine.register(&other::APPROVAL).expect("register");
    let report = engine.resume().await.expect("resume");
    assert!(report.resumed.is_empty());
    assert!(
        matches!(&report.skipped[0].reason, SkipReason::Unreadable(why) if why.contains("total")),
        "{:?}",
        report.skipped
    );
    engine.shutdown(HANG).await.expect("shutdown");
    assert_eq!(store.running().expect("read").len(), 1);
}
