//! The timers of asleep instances (evicted, nothing in memory can send to them):
//! their due times are the store's, and the evicted instances' one timer reads
//! them from its due-time index. One falling asleep with a timer due earlier than
//! the one the timer sleeps until wakes it.

use super::*;

#[derive(Clone, Debug, Default, PartialEq, ProcessData, Serialize, Deserialize)]
pub struct Nap {
    pub woke: bool,
}

process! {
    LONG_NAP: Nap {
        start s;
        catch later: timer(Duration::from_secs(3600));
        task  wake = |n| async move { n.woke = true; Ok(()) };
        end   e;
        s -> later -> wake -> e;
    }
}

process! {
    SHORT_NAP: Nap {
        start s;
        catch later: timer(Duration::from_secs(60));
        task  wake = |n| async move { n.woke = true; Ok(()) };
        end   e;
        s -> later -> wake -> e;
    }
}

process! {
    UNKNOWN_NAP: Nap {
        start s;
        catch later: timer(Duration::from_secs(60));
        end   e;
        s -> later -> e;
    }
}

/// An instance asleep with a timer an hour away, then one with a timer a minute
/// away: the second wakes the one timer, which loads it at its minute and the
/// first at its hour, each once (paused clock).
#[tokio::test]
async fn an_earlier_timer_falling_asleep_wakes_the_one_timer() {
    let store = test_store();
    let engine = store.engine().expect("open");
    engine.evict_idle(Some(Duration::ZERO));
    // Their handles dropped: asleep, nothing of them in memory but their id.
    let long = engine
        .start(&LONG_NAP, Nap::default())
        .await
        .expect("stored")
        .id();
    until("the long nap asleep", || engine.evicted_instances() == 1).await;
    let began = tokio::time::Instant::now();
    let short = engine
        .start(&SHORT_NAP, Nap::default())
        .await
        .expect("stored")
        .id();
    until("both asleep", || engine.evicted_instances() == 2).await;
    tokio::time::pause();
    tokio::time::sleep_until(began + Duration::from_secs(2 * 60)).await;
    assert_eq!(ended(&engine, short).await.0, Status::Completed);
    assert_eq!(engine.evicted_loads(), 1, "the long nap still asleep");
    assert_eq!(engine.evicted_instances(), 1);
    tokio::time::sleep_until(began + Duration::from_secs(61 * 60)).await;
    assert_eq!(ended(&engine, long).await.0, Status::Completed);
    assert_eq!(engine.evicted_loads(), 2, "each loaded once");
    // On real time again: the loops' last receipts come from the writer thread.
    tokio::time::resume();
    engine.shutdown(HANG).await.expect("shutdown");
}

/// After a restart that does not register one process, its instance's timer
/// stays in the store's due-time index among the others': the one timer passes
/// over it (no engine here runs it) and loads the asleep ones due with it and
/// after it, each once (paused clock).
#[tokio::test]
async fn a_due_time_of_an_instance_not_run_here_is_passed_over() {
    let store = test_store();
    let engine = store.engine().expect("open");
    engine.evict_idle(Some(Duration::ZERO));
    let began = tokio::time::Instant::now();
    let unknown = engine
        .start(&UNKNOWN_NAP, Nap::default())
        .await
        .expect("stored")
        .id();
    let short = engine
        .start(&SHORT_NAP, Nap::default())
        .await
        .expect("stored")
        .id();
    let long = engine
        .start(&LONG_NAP, Nap::default())
        .await
        .expect("stored")
        .id();
    until("all asleep", || engine.evicted_instances() == 3).await;
    let restarted = thresh::testing::restart(engine, &store, |engine| {
        engine.evict_idle(Some(Duration::ZERO));
        engine.register(&SHORT_NAP)?;
        engine.register(&LONG_NAP)
    })
    .await
    .expect("restarted");
    let engine = restarted.engine;
    assert_eq!(restarted.report.asleep, 2);
    assert_eq!(
        restarted
            .report
            .skipped
            .iter()
            .map(|s| s.id)
            .collect::<Vec<_>>(),
        [unknown]
    );
    tokio::time::pause();
    tokio::time::sleep_until(began + Duration::from_secs(2 * 60)).await;
    assert_eq!(ended(&engine, short).await.0, Status::Completed);
    assert_eq!(engine.evicted_loads(), 1);
    let stored = engine.instance(unknown).await.expect("read");
    assert_eq!(stored.map(|(status, _)| status), Some(Status::Running));
    tokio::time::sleep_until(began + Duration::from_secs(61 * 60)).await;
    assert_eq!(ended(&engine, long).await.0, Status::Completed);
    assert_eq!(engine.evicted_loads(), 2, "each loaded once");
    // On real time again: the loops' last receipts come from the writer thread.
    tokio::time::resume();
    engine.shutdown(HANG).await.expect("shutdown");
}
