//! A late report: a handler that reports after its activity was interrupted is ignored.

use super::*;

process! {
    /// A handler that blocks its thread until the test opens its gate; a message
    /// interrupts it meanwhile.
    BLOCKING: Job {
        start    s;
        task     work = |j| async move {
            tokio::task::yield_now().await;
            let gate = gate(&j.id);
            tokio::task::block_in_place(|| {
                gate.entered.store(true, Ordering::SeqCst);
                while !gate.open.load(Ordering::SeqCst) {
                    std::thread::sleep(Duration::from_micros(200));
                }
            });
            j.worked = true;
            gate.finished.store(true, Ordering::SeqCst);
            Ok(())
        };
        boundary stop on work: message("stop", key = |j| j.id.clone(), apply = |j, why: &String| j.reason = why.clone());
        user     confirm;
        end      done;
        end      stopped;
        s -> work -> done;
        stop -> confirm -> stopped;
    }
}

/// A handler blocks its thread, so the interrupt cannot drop it: a message interrupts
/// the activity, then the handler finishes and reports — on a track the loop already
/// ended. The report is ignored: no `Completed` at `work`, its write never lands, and
/// the instance goes on from the boundary.
async fn a_late_report_of_an_interrupted_task_is_ignored(i: usize) {
    let engine = Engine::new();
    let id = format!("late-{i}");
    let gate = gate(&id);
    let handle = engine.start(&BLOCKING, job(&id));
    until_true("the handler blocks", || gate.entered.load(Ordering::SeqCst)).await;
    assert_eq!(
        engine.publish_message("stop", &id, String::from("enough")),
        Published::Delivered
    );
    until(&handle, "the boundary interrupted `work`", |h| {
        count(h, "work", &interrupted("stop")) == 1
    })
    .await;
    open(&handle, "confirm").await;
    gate.open.store(true, Ordering::SeqCst);
    until_true("the handler finished", || {
        gate.finished.load(Ordering::SeqCst)
    })
    .await;
    // Give the loop its report to ignore while the instance still runs.
    for _ in 0..20 {
        let _ = handle.history().await;
        tokio::task::yield_now().await;
    }
    assert!(!handle.is_finished());
    complete(&handle, "confirm", |_: &mut Job| {}).await;
    let (outcome, history) = finish_strict(&handle).await;
    let data = completed(outcome, &history);
    assert_eq!((data.worked, data.reason.as_str()), (false, "enough"));
    assert_eq!(
        steps(&history),
        [
            (0, "s", Happening::Started),
            (0, "work", Happening::TaskStarted),
            (0, "work", interrupted("stop")),
            (1, "stop", spawned(0)),
            (1, "stop", caught(&["reason"])),
            (1, "confirm", Happening::Parked),
            (1, "confirm", done(&[])),
            (1, "stopped", Happening::Ended),
        ]
    );
    gates().lock().unwrap().remove(&id);
}

multi_thread!(RUNS => a_late_report_of_an_interrupted_task_is_ignored);
