//! A task's or user task's completion and its interrupting message boundary race:
//! the publisher's answer says which won. The completion wins only by closing the
//! boundaries' choice in the broker before the message is served; a message served
//! first interrupts the activity when it comes, and the completion is void. So
//! `Delivered` always means the boundary fired, `Buffered` that the activity
//! completed and the message waits in the broker for another waiter.

use super::*;
use tokio::sync::Notify;

/// Per run (by the job's id): what lets `settle`'s handler finish.
fn gate(id: &str) -> Arc<Notify> {
    static GATES: OnceLock<Mutex<HashMap<String, Arc<Notify>>>> = OnceLock::new();
    let mut gates = GATES.get_or_init(Mutex::default).lock().unwrap();
    gates.entry(id.to_string()).or_default().clone()
}

/// Finishes when its run's gate opens.
async fn settle(j: &mut Job) -> Result<(), TaskError> {
    gate(&j.id).notified().await;
    j.worked = true;
    Ok(())
}

process! {
    /// A task that finishes when told, with an interrupting recall message.
    RECALLED_TASK: Job {
        start    s;
        task     charge = settle;
        boundary recall on charge: message("recall", key = |j| j.id.clone(), apply = |j, r: &String| j.reason = r.clone());
        end      charged;
        end      recalled;
        s -> charge -> charged;
        recall -> recalled;
    }
}

/// The task's handler is let finish and a recall is published at once, from another
/// thread.
async fn a_task_and_its_message_boundary_race(i: usize) {
    let engine = Engine::new();
    let id = format!("t{i}");
    let handle = engine.start(&RECALLED_TASK, job(&id));
    let (publisher, key) = (engine.clone(), id.clone());
    let published = tokio::task::spawn_blocking(move || {
        gate(&key).notify_one();
        // A few microseconds more or less, so either side is sometimes first.
        for _ in 0..random() % 100_000 {
            std::hint::spin_loop();
        }
        publisher.publish_message("recall", key, "changed my mind".to_string())
    })
    .await
    .expect("the publisher");
    let (outcome, history) = finish_strict(&handle).await;
    let data = completed(outcome, &history);
    let stats = engine.broker_stats();
    let said = format!("run {i}: published {published:?}, {stats:?}\n{history}");
    match published {
        Published::Delivered => {
            assert_eq!(count(&history, "recalled", &Happening::Ended), 1, "{said}");
            assert_eq!(
                count(&history, "charge", &interrupted("recall")),
                1,
                "{said}"
            );
            // The handler ran, but its writes went with its void completion.
            assert!(!data.worked, "{said}");
            assert_eq!(data.reason, "changed my mind", "{said}");
            assert_eq!((stats.delivered, stats.buffered), (1, 0), "{said}");
        }
        Published::Buffered => {
            assert_eq!(count(&history, "charged", &Happening::Ended), 1, "{said}");
            assert!(data.worked, "{said}");
            assert_eq!(data.reason, "", "{said}");
            assert_eq!((stats.delivered, stats.buffered), (0, 1), "{said}");
        }
        other => panic!("{other:?}: {said}"),
    }
}

multi_thread!(500 => a_task_and_its_message_boundary_race);

process! {
    /// A user task with an interrupting recall message.
    RECALLED_REVIEW: Job {
        start    s;
        user     review;
        boundary recall on review: message("recall", key = |j| j.id.clone(), apply = |j, r: &String| j.reason = r.clone());
        end      reviewed;
        end      recalled;
        s -> review -> reviewed;
        recall -> recalled;
    }
}

/// The user task is completed through its handle while a recall is published from
/// another thread: the caller of `complete` and the publisher hear the same story.
async fn a_user_task_completion_and_its_message_boundary_race(i: usize) {
    let engine = Engine::new();
    let id = format!("u{i}");
    let handle = engine.start(&RECALLED_REVIEW, job(&id));
    expect_open_work(&handle, "review").await;
    let (publisher, key) = (engine.clone(), id.clone());
    let publish = tokio::task::spawn_blocking(move || {
        publisher.publish_message("recall", key, "withdrawn".to_string())
    });
    let reviewer = handle.clone();
    let complete = tokio::spawn(async move {
        yield_jitter().await;
        reviewer
            .complete("review", |j: &mut Job| j.worked = true)
            .await
    });
    let published = publish.await.expect("the publisher");
    let completion = complete.await.expect("the reviewer");
    let (outcome, history) = finish_strict(&handle).await;
    let data = completed(outcome, &history);
    let stats = engine.broker_stats();
    let said = format!(
        "run {i}: published {published:?}, completion {completion:?}, {stats:?}\n{history}"
    );
    match published {
        Published::Delivered => {
            assert_eq!(count(&history, "recalled", &Happening::Ended), 1, "{said}");
            assert!(!data.worked, "{said}");
            assert!(
                matches!(
                    completion,
                    Err(WorkError::Interrupted { .. }
                        | WorkError::NoOpenWork { .. }
                        | WorkError::InstanceEnded)
                ),
                "{said}"
            );
            assert_eq!((stats.delivered, stats.buffered), (1, 0), "{said}");
        }
        Published::Buffered => {
            assert_eq!(count(&history, "reviewed", &Happening::Ended), 1, "{said}");
            assert!(data.worked, "{said}");
            assert_eq!(completion, Ok(()), "{said}");
            assert_eq!((stats.delivered, stats.buffered), (0, 1), "{said}");
        }
        other => panic!("{other:?}: {said}"),
    }
}

multi_thread!(500 => a_user_task_completion_and_its_message_boundary_race);
