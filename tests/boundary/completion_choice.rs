//! An activity's completion and its interrupting message boundary race — a task's
//! report, a user task's `complete`, a sub-process's last inner end, a called
//! child's end, a multi-instance activity's last instance — and the publisher's
//! answer says which won. The completion wins only by closing the boundaries'
//! choice in the broker before the message is served; a message served first
//! interrupts the activity when it comes, and the completion is void. So
//! `Delivered` always means the boundary fired, `Buffered` that the activity
//! completed and the message waits in the broker for another waiter. Without the
//! choice each race but the call's failed in 2 or 3 runs of 3.

use super::*;
use tokio::sync::Semaphore;

/// Per run (by the job's id): what lets `settle`'s handlers finish, one a permit.
fn gate(id: &str) -> Arc<Semaphore> {
    static GATES: OnceLock<Mutex<HashMap<String, Arc<Semaphore>>>> = OnceLock::new();
    let mut gates = GATES.get_or_init(Mutex::default).lock().unwrap();
    let gate = gates.entry(id.to_string());
    gate.or_insert_with(|| Arc::new(Semaphore::new(0))).clone()
}

/// Finishes when its run's gate lets it.
async fn settle(j: &mut Job) -> Result<(), TaskError> {
    gate(&j.id).acquire().await.expect("never closed").forget();
    j.worked = true;
    Ok(())
}

/// Let `permits` of `id`'s handlers finish and publish `name` with `payload` from
/// another thread a few microseconds later or sooner, so either side is sometimes
/// first.
async fn open_and_publish(
    engine: &Engine,
    id: &str,
    permits: usize,
    name: &'static str,
    payload: &str,
) -> Published {
    let (publisher, key, payload) = (engine.clone(), id.to_string(), payload.to_string());
    tokio::task::spawn_blocking(move || {
        gate(&key).add_permits(permits);
        for _ in 0..random() % 100_000 {
            std::hint::spin_loop();
        }
        at_once(publisher.publish_message(name, key, payload)).unwrap()
    })
    .await
    .expect("the publisher")
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
    let handle = engine.start(&RECALLED_TASK, job(&id)).await.unwrap();
    let published = open_and_publish(&engine, &id, 1, "recall", "changed my mind").await;
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
    let handle = engine.start(&RECALLED_REVIEW, job(&id)).await.unwrap();
    expect_open_work(&handle, "review").await;
    let (publisher, key) = (engine.clone(), id.clone());
    let publish = tokio::task::spawn_blocking(move || {
        at_once(publisher.publish_message("recall", key, "withdrawn".to_string())).unwrap()
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

process! {
    /// A sub-process whose one task finishes when told, with an interrupting recall.
    RECALLED_SUB: Job {
        start    s;
        subprocess pack {
            start  s1;
            task   charge = settle;
            end    e1;
            s1 -> charge -> e1;
        }
        boundary recall on pack: message("recall", key = |j| j.id.clone(), apply = |j, r: &String| j.reason = r.clone());
        end      packed;
        end      recalled;
        s -> pack -> packed;
        recall -> recalled;
    }
}

process! {
    /// The called process: one task that finishes when told.
    SETTLING: Job {
        start s;
        task  charge = settle;
        end   e;
        s -> charge -> e;
    }
}

process! {
    /// A call activity with an interrupting recall.
    RECALLED_CALL: Job {
        start    s;
        call     settle_up = SETTLING(input = |j| job(&j.id), output = |j, c| j.worked = c.worked);
        boundary recall on settle_up: message("recall", key = |j| j.id.clone(), apply = |j, r: &String| j.reason = r.clone());
        end      settled;
        end      recalled;
        s -> settle_up -> settled;
        recall -> recalled;
    }
}

process! {
    /// A multi-instance task of two, with an interrupting recall.
    RECALLED_MULTI: Job {
        start    s;
        #[multi_instance(count = |_| 2)]
        task     charge = |j, _copy: &usize, _i| settle(j);
        boundary recall on charge: message("recall", key = |j| j.id.clone(), apply = |j, r: &String| j.reason = r.clone());
        end      charged;
        end      recalled;
        s -> charge -> charged;
        recall -> recalled;
    }
}

/// An activity whose inner tasks are let finish while a recall is published from
/// another thread: a sub-process's last inner end, a called child's end, a
/// multi-instance activity's last instance race the activity's boundary as a task's
/// report does.
async fn an_activity_and_its_message_boundary_race(
    process: &'static thresh::Process<Job>,
    id: String,
    done: &str,
    check: fn(&thresh::History, &Outcome<Job>),
) {
    let engine = Engine::new();
    let handle = engine.start(process, job(&id)).await.unwrap();
    let published = open_and_publish(&engine, &id, 2, "recall", "changed my mind").await;
    let (outcome, history) = finish_with(&handle, HANG, check).await;
    let data = completed(outcome, &history);
    let stats = engine.broker_stats();
    let said = format!("{id}: published {published:?}, {stats:?}\n{history}");
    match published {
        Published::Delivered => {
            assert_eq!(count(&history, "recalled", &Happening::Ended), 1, "{said}");
            assert_eq!(data.reason, "changed my mind", "{said}");
            assert_eq!((stats.delivered, stats.buffered), (1, 0), "{said}");
        }
        Published::Buffered => {
            assert_eq!(count(&history, done, &Happening::Ended), 1, "{said}");
            assert!(data.worked, "{said}");
            assert_eq!(data.reason, "", "{said}");
            assert_eq!((stats.delivered, stats.buffered), (0, 1), "{said}");
        }
        other => panic!("{other:?}: {said}"),
    }
}

// A recall cancels what runs inside: the histories follow the scoped rules (which
// know no multi-instance tracks: those are checked by the counts alone).
async fn a_sub_process_and_its_message_boundary_race(i: usize) {
    let id = format!("s{i}");
    an_activity_and_its_message_boundary_race(&RECALLED_SUB, id, "packed", check_scoped_history)
        .await;
}

async fn a_call_activity_and_its_message_boundary_race(i: usize) {
    let id = format!("c{i}");
    an_activity_and_its_message_boundary_race(&RECALLED_CALL, id, "settled", check_scoped_history)
        .await;
}

async fn a_multi_instance_task_and_its_message_boundary_race(i: usize) {
    let id = format!("m{i}");
    an_activity_and_its_message_boundary_race(&RECALLED_MULTI, id, "charged", |_, _| {}).await;
}

multi_thread!(500 =>
    a_sub_process_and_its_message_boundary_race,
    a_call_activity_and_its_message_boundary_race,
    a_multi_instance_task_and_its_message_boundary_race,
);

process! {
    /// A task that finishes when told, with a non-interrupting nudge message.
    NUDGED_TASK: Job {
        start    s;
        task     charge = settle;
        boundary nudge on charge: non_interrupting message("nudge", key = |j| j.id.clone(), apply = |j, r: &String| j.reason = r.clone());
        end      charged;
        end      nudged;
        s -> charge -> charged;
        nudge -> nudged;
    }
}

/// A non-interrupting boundary is in no choice: a nudge served while the task works
/// fires the boundary, even if its message comes after the task completed — the
/// publisher was told `Delivered`; one published after the completion is `Buffered`.
async fn a_task_and_its_non_interrupting_message_boundary_race(i: usize) {
    let engine = Engine::new();
    let id = format!("n{i}");
    let handle = engine.start(&NUDGED_TASK, job(&id)).await.unwrap();
    let published = open_and_publish(&engine, &id, 1, "nudge", "hurry").await;
    let (outcome, history) = finish_strict(&handle).await;
    let data = completed(outcome, &history);
    let stats = engine.broker_stats();
    let said = format!("run {i}: published {published:?}, {stats:?}\n{history}");
    assert_eq!(count(&history, "charged", &Happening::Ended), 1, "{said}");
    assert!(data.worked, "{said}");
    match published {
        Published::Delivered => {
            assert_eq!(count(&history, "nudged", &Happening::Ended), 1, "{said}");
            assert_eq!(data.reason, "hurry", "{said}");
            assert_eq!((stats.delivered, stats.buffered), (1, 0), "{said}");
        }
        Published::Buffered => {
            assert_eq!(count(&history, "nudged", &Happening::Ended), 0, "{said}");
            assert_eq!(data.reason, "", "{said}");
            assert_eq!((stats.delivered, stats.buffered), (0, 1), "{said}");
        }
        other => panic!("{other:?}: {said}"),
    }
}

multi_thread!(500 => a_task_and_its_non_interrupting_message_boundary_race);

process! {
    /// A task that never finishes, with an interrupting recall and a
    /// non-interrupting nudge.
    NUDGED_AND_RECALLED: Job {
        start    s;
        task     charge = |_j| async move { std::future::pending::<()>().await; Ok(()) };
        boundary recall on charge: message("recall", key = |j| j.id.clone());
        boundary nudge on charge: non_interrupting message("nudge", key = |j| j.id.clone(), apply = |j, r: &String| j.reason = r.clone());
        end      recalled;
        end      nudged;
        s -> charge;
        recall -> recalled;
        nudge -> nudged;
    }
}

/// A nudge and a recall published at once from two threads: a nudge the broker
/// served before the recall interrupted the task fires, though the interrupt
/// withdrew its boundary before the nudge reached the loop.
async fn an_interrupt_and_a_non_interrupting_message_boundary_race(i: usize) {
    let engine = Engine::new();
    let id = format!("r{i}");
    let handle = engine.start(&NUDGED_AND_RECALLED, job(&id)).await.unwrap();
    let (e1, e2) = (engine.clone(), engine.clone());
    let (k1, k2) = (id.clone(), id.clone());
    let nudge = tokio::task::spawn_blocking(move || {
        at_once(e1.publish_message("nudge", k1, "hurry".to_string())).unwrap()
    });
    let recall = tokio::task::spawn_blocking(move || {
        for _ in 0..random() % 20_000 {
            std::hint::spin_loop();
        }
        at_once(e2.publish_message("recall", k2, ())).unwrap()
    });
    let (nudge, recall) = (
        nudge.await.expect("nudger"),
        recall.await.expect("recaller"),
    );
    let (outcome, history) = finish_strict(&handle).await;
    let data = completed(outcome, &history);
    let stats = engine.broker_stats();
    let said = format!("run {i}: nudge {nudge:?}, recall {recall:?}, {stats:?}\n{history}");
    assert_eq!(recall, Published::Delivered, "{said}");
    assert_eq!(count(&history, "recalled", &Happening::Ended), 1, "{said}");
    match nudge {
        Published::Delivered => {
            assert_eq!(count(&history, "nudged", &Happening::Ended), 1, "{said}");
            assert_eq!(data.reason, "hurry", "{said}");
            assert_eq!((stats.delivered, stats.buffered), (2, 0), "{said}");
        }
        Published::Buffered => {
            assert_eq!(count(&history, "nudged", &Happening::Ended), 0, "{said}");
            assert_eq!((stats.delivered, stats.buffered), (1, 1), "{said}");
        }
        other => panic!("{other:?}: {said}"),
    }
}

multi_thread!(500 => an_interrupt_and_a_non_interrupting_message_boundary_race);
