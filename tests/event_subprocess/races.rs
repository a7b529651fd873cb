//! Races on a multi-thread runtime: an interrupting message start against the end of
//! the path; a signal storm while the instance ends.

use super::*;

process! {
    /// `quick` races an interrupting message start.
    RACE_TASK: Order {
        start begin;
        task  quick = quick;
        end   done;
        begin -> quick -> done;
        event_subprocess on_cancel {
            start cancel: message("cancel", key = |o| o.id.clone(), apply = |o, p: &String| o.reason = p.clone());
            task  undo = undo;
            end   cancelled;
            cancel -> undo -> cancelled;
        }
    }
}

process! {
    /// A user task's completion races an interrupting message start.
    RACE_USER: Order {
        start begin;
        user  hold;
        end   done;
        begin -> hold -> done;
        event_subprocess on_cancel {
            start cancel: message("cancel", key = |o| o.id.clone(), apply = |o, p: &String| o.reason = p.clone());
            task  undo = undo;
            end   cancelled;
            cancel -> undo -> cancelled;
        }
    }
}

/// An interrupting message start races the end of the main path (a task that varies
/// the interleaving, or a user task completed from another task): exactly one of
/// them wins — the main path ends at `done`, or the event sub-process at
/// `cancelled` with the main path's work cancelled, never both — and a message that
/// came too late is not lost but waits in the buffer.
async fn an_interrupting_message_racing_the_end_of_the_main_path(_: Engine, i: usize) {
    let engine = Engine::new();
    let id = format!("race-{i}");
    let user = i % 2 == 1;
    let (process, main) = if user {
        (&RACE_USER, "hold")
    } else {
        (&RACE_TASK, "quick")
    };
    let handle = engine.start(process, order(&id)).await.unwrap();
    let completer = if user {
        expect_open_work(&handle, "hold").await;
        let handle = handle.clone();
        Some(tokio::spawn(async move {
            jitter().await;
            handle.complete("hold", |o| o.worked = true).await
        }))
    } else {
        None
    };
    jitter().await;
    let published = engine
        .publish_message("cancel", &id, "late".to_string())
        .await
        .unwrap();
    let (outcome, history) = outcome_of(&handle).await;
    let completion = match completer {
        Some(task) => Some(task.await.expect("the completer")),
        None => None,
    };
    let data = completed(outcome, &history);
    let (by_main, by_event) = (ends(&history, "done"), ends(&history, "cancelled"));
    assert_eq!(by_main + by_event, 1, "{history}");
    assert_eq!(runs(&history, "cancel"), by_event, "{history}");
    let stats = engine.broker_stats();
    if by_event == 1 {
        assert_eq!(
            (data.reason.as_str(), data.undone, data.worked),
            ("late", 1, false),
            "{history}"
        );
        assert_eq!(count(&history, main, &Happening::Cancelled), 1, "{history}");
        // Delivered, or buffered until the start subscribed.
        assert_ne!(published, Published::Dropped);
        assert_eq!(stats.buffered, 0);
    } else {
        assert_eq!(
            (data.reason.as_str(), data.undone, data.worked),
            ("", 0, true),
            "{history}"
        );
        assert!(matches!(completion, None | Some(Ok(()))), "{completion:?}");
        assert_eq!(count(&history, "cancel", &Happening::Cancelled), 0);
        assert_eq!(stats.buffered, 1, "{published:?} {stats:?}\n{history}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn an_interrupting_message_racing_the_end_of_the_main_path_multi_thread() {
    repeat(
        RUNS,
        an_interrupting_message_racing_the_end_of_the_main_path,
    )
    .await;
}

process! {
    /// `quick` in a sub-process races the sub-process's interrupting message start;
    /// `after` follows the sub-process either way.
    RACE_SCOPED: Order {
        start begin;
        subprocess work {
            start w_begin;
            task  quick = quick;
            end   w_done;
            w_begin -> quick -> w_done;
            event_subprocess on_abort {
                start abort: message("abort", key = |o| o.id.clone(), apply = |o, p: &String| o.reason = p.clone());
                task  undo = undo;
                end   aborted;
                abort -> undo -> aborted;
            }
        }
        task after = after;
        end  done;
        begin -> work -> after -> done;
    }
}

/// The same race inside a sub-process: its interrupting message start against its
/// task's end. Either way the sub-process completes once and the token goes on to
/// `after`; the sub-process's start is disarmed when it completes, so a message that
/// came too late waits in the buffer.
async fn an_interrupting_message_racing_the_end_of_a_sub_process(_: Engine, i: usize) {
    let engine = Engine::new();
    let id = format!("scoped-race-{i}");
    let handle = engine.start(&RACE_SCOPED, order(&id)).await.unwrap();
    jitter().await;
    let published = engine
        .publish_message("abort", &id, "late".to_string())
        .await
        .unwrap();
    let (outcome, history) = outcome_of(&handle).await;
    let data = completed(outcome, &history);
    let (by_main, by_event) = (ends(&history, "w_done"), ends(&history, "aborted"));
    assert_eq!(by_main + by_event, 1, "{history}");
    assert_eq!(count(&history, "work", &done(&[])), 1, "{history}");
    assert_eq!((data.after, ends(&history, "done")), (1, 1), "{history}");
    let stats = engine.broker_stats();
    if by_event == 1 {
        assert_eq!(
            (data.reason.as_str(), data.undone, data.worked),
            ("late", 1, false)
        );
        // Delivered, or buffered until the start subscribed.
        assert_ne!(published, Published::Dropped);
        assert_eq!(stats.buffered, 0);
    } else {
        assert_eq!(
            (data.reason.as_str(), data.undone, data.worked),
            ("", 0, true)
        );
        assert_eq!(stats.buffered, 1, "{published:?} {stats:?}\n{history}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn an_interrupting_message_racing_the_end_of_a_sub_process_multi_thread() {
    repeat(
        RUNS,
        an_interrupting_message_racing_the_end_of_a_sub_process,
    )
    .await;
}

process! {
    /// A user task; a non-interrupting signal start.
    STORM: Order {
        start begin;
        user  review;
        end   done;
        begin -> review -> done;
        event_subprocess on_ping {
            start ping: non_interrupting signal("ping");
            task  note = note;
            end   noted;
            ping -> note -> noted;
        }
    }
}

/// A storm of signals for a non-interrupting start, from another thread, while the
/// main path's user task is completed: the instance completes; every run that
/// started ran to its end (the instance waits for them; meanwhile the start stays
/// armed), no more runs than signals that reached it, and afterwards nothing is
/// subscribed.
async fn a_signal_storm_while_the_instance_ends(_: Engine, i: usize) {
    let engine = Engine::new();
    let handle = engine
        .start(&STORM, order(&format!("storm-{i}")))
        .await
        .unwrap();
    expect_open_work(&handle, "review").await;
    let storm = storm(&engine, "ping");
    jitter().await;
    complete(&handle, "review", |_| {}).await;
    let (outcome, history) = outcome_of(&handle).await;
    let reached = storm.join().expect("the storm");
    let data = completed(outcome, &history);
    let started = runs(&history, "ping");
    assert!(
        started <= reached,
        "{started} runs, {reached} reached\n{history}"
    );
    assert_eq!(ends(&history, "noted"), started, "{history}");
    assert_eq!(completions(&history, "note"), started);
    // Runs side by side each count on their own copy of the data: the commits merge
    // field by field, the later write wins, so some increments may be overwritten.
    assert!(started == 0 || (1..=started).contains(&(data.notes as usize)));
    assert_eq!(ends(&history, "done"), 1);
    assert_eq!(engine.broadcast_signal("ping", ()).await.unwrap(), 0);
}

/// One instance at a time, 100 times: with 200 at once on a small machine every
/// storm was over before its main path ended (the instance cannot end while a run
/// is under way, so a storm under way keeps it going); one at a time, the end falls
/// inside the storm, and signals that reached the instance after its last run are
/// dropped with it.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_signal_storm_while_the_instance_ends_multi_thread() {
    for i in 0..100 {
        a_signal_storm_while_the_instance_ends(Engine::new(), i).await;
    }
}
