//! A retry loop through an error boundary, a message boundary on the current key, a
//! non-interrupting token that outlives the interruption.

use super::*;

process! {
    /// A retry loop: an error boundary catches the failed attempt and links back.
    RETRY: Job {
        start    s;
        catch    again: link("retry");
        task     charge = |j| async move {
            if j.rounds < j.limit {
                return Err(TaskError::bpmn("TRY_AGAIN", format!("attempt {}", j.rounds + 1)));
            }
            j.worked = true;
            Ok(())
        };
        boundary failed on charge: error("TRY_AGAIN", apply = |j, e: &BpmnError| {
            j.rounds += 1;
            j.message = e.message.clone();
        });
        throw    retry: link("retry");
        end      done;
        s -> charge -> done;
        again -> charge;
        failed -> retry;
    }
}

/// A retry loop through an error boundary and a link: `limit` attempts fail, each
/// caught (on a new track, the boundary's `apply` counting it) and sent back to
/// `charge`, whose boundaries are armed again; the next attempt succeeds.
async fn a_retry_loop_through_an_error_boundary(i: usize) {
    let engine = Engine::new();
    let limit = (i % 6) as u32;
    let data = Job {
        limit,
        ..job(format!("retry-{i}"))
    };
    let (outcome, history) = finish_strict(&engine.start(&RETRY, data).await.unwrap()).await;
    let data = completed(outcome, &history);
    assert_eq!((data.rounds, data.worked), (limit, true));
    let message = if limit == 0 {
        String::new()
    } else {
        format!("attempt {limit}")
    };
    assert_eq!(data.message, message);
    let mut rows = vec![(0, "s", Happening::Started)];
    for k in 0..limit {
        rows.extend([
            (k, "charge", Happening::TaskStarted),
            (k, "charge", error_thrown("TRY_AGAIN")),
            (k, "charge", interrupted("failed")),
            (k + 1, "failed", spawned(k)),
            (k + 1, "failed", caught(&["message", "rounds"])),
        ]);
    }
    rows.extend([
        (limit, "charge", Happening::TaskStarted),
        (limit, "charge", done(&["worked"])),
        (limit, "done", Happening::Ended),
    ]);
    assert_eq!(steps(&history), rows);
}

multi_thread!(RUNS => a_retry_loop_through_an_error_boundary);

process! {
    /// A message boundary whose key changes while its activity waits.
    REKEYED: Job {
        start    s;
        parallel fork;
        user     review;
        boundary nudge on review: non_interrupting message("nudge", key = |j| j.key.clone());
        user     rekey;
        end      reviewed;
        end      nudged;
        end      rekeyed;
        s -> fork -> review, rekey;
        review -> reviewed;
        nudge -> nudged;
        rekey -> rekeyed;
    }
}

/// A message boundary correlates on the data as it is now: once `rekey` commits a
/// new key, the boundary's subscription has moved to it — a message for the old key
/// finds no waiter and is buffered (not taken, not counted delivered), and a message
/// for the new key fires the boundary.
async fn a_message_boundary_correlates_on_the_current_key(i: usize) {
    let engine = Engine::new();
    let (old, new) = (format!("k1-{i}"), format!("k2-{i}"));
    let data = Job {
        key: old.clone(),
        ..job(format!("rekeyed-{i}"))
    };
    let handle = engine.start(&REKEYED, data).await.unwrap();
    expect_open_work(&handle, "review").await;
    let key = new.clone();
    complete(&handle, "rekey", move |j: &mut Job| j.key = key).await;
    expect_that(&handle, "the new key is committed", |h| {
        completions(h, "rekey") == 1
    })
    .await;
    assert_eq!(
        engine.publish_message("nudge", &old, ()).await.unwrap(),
        Published::Buffered
    );
    settle().await;
    assert_eq!(spawns(&handle.history().await, "nudge"), 0);
    assert_eq!(
        engine.publish_message("nudge", &new, ()).await.unwrap(),
        Published::Delivered
    );
    expect_that(&handle, "the boundary fired", |h| spawns(h, "nudge") == 1).await;
    // The boundary is non-interrupting: subscribed again, under the new key.
    assert_eq!(
        engine.publish_message("nudge", &old, ()).await.unwrap(),
        Published::Buffered
    );
    complete(&handle, "review", |_: &mut Job| {}).await;
    let (outcome, history) = finish_strict(&handle).await;
    completed(outcome, &history);
    assert_eq!(spawns(&history, "nudge"), 1);
    assert_eq!(
        engine.broker_stats(),
        BrokerStats {
            delivered: 1,
            buffered: 2,
            ..BrokerStats::default()
        }
    );
}

multi_thread!(RUNS => a_message_boundary_correlates_on_the_current_key);

process! {
    /// A token started by a non-interrupting boundary outlives its activity's
    /// interruption.
    SURVIVE: Job {
        start    s;
        user     review;
        boundary heads_up on review: non_interrupting signal("heads_up");
        boundary recall on review: message("recall", key = |j| j.id.clone());
        user     follow_up;
        end      reviewed;
        end      followed_up;
        end      recalled;
        s -> review -> reviewed;
        heads_up -> follow_up -> followed_up;
        recall -> recalled;
    }
}

/// The token a non-interrupting boundary started goes on when an interrupting one
/// later stops the activity: its user task stays open and completes the instance.
async fn a_non_interrupting_token_outlives_the_interruption(i: usize) {
    let engine = Engine::new();
    let id = format!("survive-{i}");
    let handle = engine.start(&SURVIVE, job(&id)).await.unwrap();
    expect_open_work(&handle, "review").await;
    assert_eq!(engine.broadcast_signal("heads_up", ()).await.unwrap(), 1);
    expect_open_work(&handle, "follow_up").await;
    assert_eq!(
        engine.publish_message("recall", &id, ()).await.unwrap(),
        Published::Delivered
    );
    expect_that(&handle, "review was interrupted", |h| {
        count(h, "recalled", &Happening::Ended) == 1
    })
    .await;
    assert_eq!(engine.broadcast_signal("heads_up", ()).await.unwrap(), 0);
    let open_work: Vec<&str> = handle.open_work().await.iter().map(|w| w.node).collect();
    assert_eq!(open_work, ["follow_up"]);
    complete(&handle, "follow_up", |j: &mut Job| j.rounds = 1).await;
    let (outcome, history) = finish_strict(&handle).await;
    assert_eq!(completed(outcome, &history).rounds, 1);
    assert_eq!(
        steps(&history),
        [
            (0, "s", Happening::Started),
            (0, "review", Happening::Parked),
            (1, "heads_up", spawned(0)),
            (1, "heads_up", caught(&[])),
            (1, "follow_up", Happening::Parked),
            (0, "review", interrupted("recall")),
            (2, "recall", spawned(0)),
            (2, "recall", caught(&[])),
            (2, "recalled", Happening::Ended),
            (1, "follow_up", done(&["rounds"])),
            (1, "followed_up", Happening::Ended),
        ]
    );
}

multi_thread!(RUNS => a_non_interrupting_token_outlives_the_interruption);
