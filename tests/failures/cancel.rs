//! Cancelling an instance.

use super::*;

/// `cancel` on an instance whose tasks wait for ever (one on a pending future, one
/// spinning on yields): the outcome is `Cancelled` with the committed data, both
/// tasks are dropped. Every fourth run cancels right after the start instead.
async fn cancel_stops_waiting_tasks(engine: Engine, i: usize) {
    let mut job = Job::new();
    job.spin = can_spin();
    let id = job.id;
    let handle = engine.start(&WAITS, job.clone()).await.unwrap();
    let at_once = i.is_multiple_of(4);
    if !at_once {
        started(&handle, &["wait", "spin"]).await;
        entered(id, "forever").await;
        entered(id, "long").await;
    }
    handle.cancel();
    let observer = handle.clone();
    let (outcome, h) = finish(&handle).await;
    let Outcome::Cancelled(data) = outcome else {
        panic!("expected cancelled, got {outcome:?}\n{h}");
    };
    assert_eq!(observer.outcome().await, Outcome::Cancelled(data.clone()));
    if at_once {
        assert!(h.completed_tasks().len() <= 1, "{h}");
        return;
    }
    assert_eq!(
        data,
        Job {
            prepared: true,
            ..job
        }
    );
    assert_eq!(h.completed_tasks(), ["prep"]);
    assert_eq!(h.count("wait", |w| *w == Happening::Cancelled), 1, "{h}");
    assert_eq!(h.count("spin", |w| *w == Happening::Cancelled), 1, "{h}");
    assert_stopped(id, "forever");
    assert_stopped(id, "long");
    assert!(noted(&DROPPED, id, "forever") && noted(&DROPPED, id, "long"));
    // Cancelling an ended instance changes nothing.
    handle.cancel();
    assert_eq!(handle.outcome().await, Outcome::Cancelled(data));
    assert_eq!(handle.history().await, h);
}

flavors!(cancel_stops_waiting_tasks);

async fn cancel_after_the_end_changes_nothing(engine: Engine, _: usize) {
    let job = Job::new();
    let handle = engine.start(&QUICK, job.clone()).await.unwrap();
    let (outcome, h) = finish(&handle).await;
    let expected = Job { quick: true, ..job };
    assert_eq!(outcome, Outcome::Completed(expected.clone()));
    handle.cancel();
    assert_eq!(handle.outcome().await, Outcome::Completed(expected));
    assert_eq!(handle.history().await, h);
}

flavors!(cancel_after_the_end_changes_nothing);

process! {
    RELEASED_BY_ID: Job {
        start s;
        task gate = |j| async move {
            let probe = Probe::enter(j.id, "gate");
            while !noted(&FINISHED, j.id, "release") {
                tokio::time::sleep(Duration::from_millis(1)).await;
            }
            probe.finish();
            Ok(())
        };
        end done;
        s -> gate -> done;
    }
}

/// Dropping every handle does not stop an instance: it runs to its end.
async fn dropped_handle_leaves_the_instance_running(_: Engine, _: usize) {
    let engine = Engine::new();
    let job = Job::new();
    let id = job.id;
    drop(engine.start(&RELEASED_BY_ID, job).await.unwrap());
    entered(id, "gate").await;
    assert_eq!(engine.running_instances(), 1);
    note(&FINISHED, id, "release");
    let ended = async {
        while engine.running_instances() > 0 {
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
    };
    tokio::time::timeout(HANG, ended)
        .await
        .expect("the instance ended");
    assert!(noted(&FINISHED, id, "gate"));
    assert_eq!(engine.shutdown(Duration::from_secs(1)).await, Ok(()));
}

flavors!(dropped_handle_leaves_the_instance_running);
