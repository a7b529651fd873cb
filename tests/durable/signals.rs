//! Durable signals: `DurableEngine::broadcast_signal` answers once every instance it
//! reached has stored the signal's effect — a catch's, and a signal start's new
//! instance — so the store holds it the moment the broadcast returns; a signal with
//! no catcher is dropped (nothing stored, nothing buffered).

use super::*;

#[derive(Clone, Debug, Default, PartialEq, ProcessData, Serialize, Deserialize)]
pub struct Alarm {
    pub level: u32,
    pub seen: bool,
}

process! {
    ALARMED: Alarm {
        start s;
        catch raised: signal("alarm", apply = |a, level: &u32| a.level = *level);
        user  acknowledge;
        end   done;
        s -> raised -> acknowledge -> done;
    }
}

process! {
    ON_ALARM: Alarm {
        start raised: signal("alarm", apply = |a, level: &u32| a.level = *level);
        user  acknowledge;
        end   done;
        raised -> acknowledge -> done;
    }
}

/// Wait until `handle`'s token parked at `node`.
async fn until_parked(handle: &InstanceHandle<Alarm>, node: &str) {
    tokio::time::timeout(HANG, async {
        while handle
            .history()
            .await
            .count(node, |h| *h == thresh::Happening::Parked)
            == 0
        {
            tokio::task::yield_now().await;
        }
    })
    .await
    .expect("parked");
}

/// The stored data of instance `id`.
fn stored_level(store: &TestStore, id: u64) -> serde_json::Value {
    let record = store.instance(id).expect("read").expect("stored");
    let state: serde_json::Value = serde_json::from_str(&record.state).expect("JSON");
    state["running"]["data"]["level"].clone()
}

/// When the broadcast returns, every catcher it reached has its effect stored and a
/// signal start's instance is stored: a restart then finds each past the signal.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn an_acknowledged_broadcast_is_stored_in_every_instance_it_reached() {
    for round in 0..20 {
        let store = test_store();
        let engine = store.engine().expect("open");
        let mut started = engine
            .deploy(&ON_ALARM, Alarm::default())
            .expect("deployed");
        let mut handles = Vec::new();
        for _ in 0..3 {
            let handle = engine
                .start(&ALARMED, Alarm::default())
                .await
                .expect("stored");
            until_parked(&handle, "raised").await;
            handles.push(handle);
        }
        let reached = engine
            .broadcast_signal("alarm", 3_u32)
            .await
            .expect("stored");
        assert_eq!(reached, 4, "round {round}: three catches and one start");
        // Read at once: acknowledged means stored.
        for handle in &handles {
            assert_eq!(stored_level(&store, handle.id().0), 3, "round {round}");
        }
        let start = started.next().await.expect("a signal start");
        assert_eq!(stored_level(&store, start.id().0), 3, "round {round}");

        // Nobody catches `silence`: nothing happens, nothing is kept.
        assert_eq!(
            engine.broadcast_signal("silence", 1_u32).await.expect("ok"),
            0
        );
        assert!(store.messages().expect("read").is_empty());
        engine.shutdown(HANG).await.expect("shutdown");

        let engine = store.engine().expect("reopen");
        engine.register(&ALARMED).expect("register");
        engine.register(&ON_ALARM).expect("register");
        let report = engine.resume().await.expect("resume");
        assert_eq!(report.resumed.len(), 4, "round {round}");
        for (id, process) in &report.resumed {
            let handle = match *process {
                "ALARMED" => engine.handle(&ALARMED, *id),
                _ => engine.handle(&ON_ALARM, *id),
            }
            .expect("resumed");
            until_open(&handle, "acknowledge").await;
            handle
                .complete("acknowledge", |a: &mut Alarm| a.seen = true)
                .await
                .expect("stored");
            let alarm = tokio::time::timeout(HANG, handle.outcome())
                .await
                .expect("ended")
                .completed()
                .expect("completed");
            assert_eq!((alarm.level, alarm.seen), (3, true), "round {round}");
        }
        engine.shutdown(HANG).await.expect("shutdown");
    }
}
