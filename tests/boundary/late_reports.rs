//! A late report: a handler that reports after its activity was interrupted is ignored.

use super::*;
use tokio::sync::Notify;

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
    let handle = engine.start(&BLOCKING, job(&id)).await.unwrap();
    until_true("the handler blocks", || gate.entered.load(Ordering::SeqCst)).await;
    assert_eq!(
        engine
            .publish_message("stop", &id, String::from("enough"))
            .await
            .unwrap(),
        Published::Delivered
    );
    expect_that(&handle, "the boundary interrupted `work`", |h| {
        count(h, "work", &interrupted("stop")) == 1
    })
    .await;
    expect_open_work(&handle, "confirm").await;
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

// Each test below pinned a bug of the instance loop (it failed before its fix).

static GO: std::sync::OnceLock<Arc<Notify>> = std::sync::OnceLock::new();

async fn panics_later(_: &mut D) -> Result<(), TaskError> {
    GO.get().unwrap().notified().await;
    panic!("late panic");
}

process! {
    INTERRUPTED_PANIC: D {
        start s;
        task t = panics_later;
        boundary stop on t: signal("probe-stop");
        end e;
        end stopped;
        s -> t -> e;
        stop -> stopped;
    }
}

#[tokio::test]
async fn a_panic_after_an_interrupt_is_ignored() {
    let go = GO.get_or_init(|| Arc::new(Notify::new())).clone();
    let engine = Engine::new();
    let h = engine
        .start(&INTERRUPTED_PANIC, D::default())
        .await
        .unwrap();
    // wait until the task runs on its track
    for _ in 0..1000 {
        if h.history()
            .await
            .count("t", |w| *w == thresh::Happening::TaskStarted)
            > 0
        {
            break;
        }
        tokio::task::yield_now().await;
    }
    for _ in 0..10 {
        tokio::task::yield_now().await;
    }
    // the handler wakes first (scheduled before the loop), panics, reports;
    // the signal delivery is already in the loop's intake before the report.
    go.notify_one();
    engine.broadcast_signal("probe-stop", ()).await.unwrap();
    let outcome = tokio::time::timeout(Duration::from_secs(5), h.outcome())
        .await
        .expect("outcome");
    let history = h.history().await;
    assert!(
        matches!(outcome, Outcome::Completed(_)),
        "the boundary interrupted `t`, yet: {outcome:?}\n{history}"
    );
}
