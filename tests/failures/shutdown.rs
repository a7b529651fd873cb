//! Shutting the engine down.

use super::*;

/// `shutdown` cancels every running instance, waits for their loops and returns
/// `Ok`; instances that had ended keep their outcome; a start afterwards is refused.
async fn shutdown_cancels_running_instances(_: Engine, i: usize) {
    let engine = Engine::new();
    let mut waiting = Vec::new();
    for k in 0..4 {
        let mut job = Job::new();
        job.spin = (i + k).is_multiple_of(2) && can_spin();
        waiting.push((job.id, engine.start(&WAITS, job).await.unwrap()));
    }
    let quick = engine.start(&QUICK, Job::new()).await.unwrap();
    assert_eq!(finish(&quick).await.0.kind(), "completed");
    for (id, handle) in &waiting {
        started(handle, &["wait", "spin"]).await;
        entered(*id, "forever").await;
        entered(*id, "long").await;
    }
    assert_eq!(
        tokio::time::timeout(HANG, engine.shutdown(Duration::from_secs(10)))
            .await
            .expect("shutdown hung"),
        Ok(())
    );
    assert_eq!(engine.running_instances(), 0);
    for (id, handle) in &waiting {
        assert!(handle.is_finished());
        let (outcome, h) = finish(handle).await;
        let Outcome::Cancelled(data) = outcome else {
            panic!("expected cancelled, got {outcome:?}\n{h}");
        };
        assert!(data.prepared);
        assert_eq!(h.count("wait", |w| *w == Happening::Cancelled), 1, "{h}");
        assert_eq!(h.count("spin", |w| *w == Happening::Cancelled), 1, "{h}");
        assert!(noted(&DROPPED, *id, "forever") && noted(&DROPPED, *id, "long"));
        assert_stopped(*id, "forever");
        assert_stopped(*id, "long");
    }
    assert_eq!(finish(&quick).await.0.kind(), "completed");
    let late = engine.start(&WAITS, Job::new()).await;
    assert!(matches!(late, Err(EngineError::ShuttingDown)), "{late:?}");
}

flavors!(shutdown_cancels_running_instances);

/// A handler that blocks its thread (no await) cannot be dropped: `shutdown` reports
/// the instance still running at its deadline, and the instance ends cancelled once
/// the handler returns.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn shutdown_reports_instances_past_the_deadline() {
    process! {
        BLOCKING: Job {
            start s;
            task block = |j| async move {
                // Wait once first: a handler runs on its instance's loop until it
                // first waits, and this one must block a track's thread, not the loop.
                tokio::task::yield_now().await;
                let probe = Probe::enter(j.id, "block");
                std::thread::sleep(Duration::from_millis(500));
                probe.finish();
                Ok(())
            };
            end done;
            s -> block -> done;
        }
    }
    let engine = Engine::new();
    let job = Job::new();
    let id = job.id;
    let handle = engine.start(&BLOCKING, job).await.unwrap();
    // Shut down only once the handler blocks its thread: a track's task aborted
    // before its first poll stops at once.
    entered(id, "block").await;
    let result = engine.shutdown(Duration::from_millis(20)).await;
    assert_eq!(
        result,
        Err(thresh::ShutdownError { still_running: 1 }),
        "{:?}",
        handle.history().await
    );
    let (outcome, h) = finish(&handle).await;
    assert_eq!(outcome.kind(), "cancelled", "{h}");
    assert_eq!(h.count("block", |w| *w == Happening::Cancelled), 1);
    assert_eq!(completions(&h, "block"), 0);
    assert!(
        noted(&FINISHED, id, "block"),
        "the blocking handler ran to its end"
    );
    assert_eq!(engine.shutdown(Duration::from_secs(5)).await, Ok(()));
}
