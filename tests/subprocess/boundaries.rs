//! Message, signal and condition boundaries on a sub-process.

use super::*;

// ----- message and signal boundaries ---------------------------------------------------

/// How the `GUARDED` scenario ends its sub-process.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Ending {
    /// `review` is completed: the sub-process completes.
    Normally,
    /// The interrupting message boundary `stop`.
    Stopped,
    /// The interrupting signal boundary `halt`.
    Halted,
}

process! {
    /// Message and signal boundaries, interrupting and not, on a sub-process that
    /// waits at a user task.
    GUARDED: Claim {
        start s;
        subprocess sub {
            start s1;
            user  review;
            end   e1;
            s1 -> review -> e1;
        }
        boundary stop on sub: message("stop", key = |c| c.id.clone(), apply = |c, why: &String| c.reason = why.clone());
        boundary nudge on sub: non_interrupting message("nudge", key = |c| c.id.clone());
        boundary halt on sub: signal("halt", apply = |c, why: &String| c.reason = why.clone());
        boundary poke on sub: non_interrupting signal("poke");
        user  after;
        end   done;
        end   nudged;
        end   poked;
        s -> sub -> after -> done;
        stop -> after;
        halt -> after;
        nudge -> nudged;
        poke -> poked;
    }
}

/// Message and signal boundaries on a sub-process work like on any activity: a
/// message for another key is not its own (buffered); `nudges` non-interrupting
/// messages and `pokes` non-interrupting signals each start a token beside it;
/// then it completes, or an interrupting message or signal withdraws the user task
/// inside and the token goes on from the boundary with the payload applied. Once
/// the sub-process is over, so are its boundaries: signals reach no catcher,
/// messages are buffered.
async fn message_and_signal_boundaries_on_a_sub_process(i: usize) {
    let engine = Engine::new();
    let id = format!("guarded-{i}");
    let nudges = i % 3;
    let pokes = i / 3 % 3;
    let ending = [Ending::Normally, Ending::Stopped, Ending::Halted][i / 9 % 3];
    let handle = engine.start(&GUARDED, claim(&id)).await.unwrap();
    expect_open_work(&handle, "review").await;
    assert_eq!(
        engine
            .publish_message("nudge", format!("{id}-other"), ())
            .await
            .unwrap(),
        Published::Buffered
    );
    for k in 0..nudges.max(pokes) {
        if k < nudges {
            assert_ne!(
                engine.publish_message("nudge", &id, ()).await.unwrap(),
                Published::Dropped
            );
        }
        if k < pokes {
            assert_eq!(engine.broadcast_signal("poke", ()).await.unwrap(), 1);
        }
    }
    expect_that(&handle, "every nudge and poke was caught", |h| {
        spawns(h, "nudge") == nudges && spawns(h, "poke") == pokes
    })
    .await;
    assert_eq!(open_work(&handle).await, ["review"]);
    match ending {
        Ending::Normally => complete(&handle, "review", |c: &mut Claim| c.a = 1).await,
        Ending::Stopped => assert_eq!(
            engine
                .publish_message("stop", &id, String::from("stopped"))
                .await
                .unwrap(),
            Published::Delivered
        ),
        Ending::Halted => assert_eq!(
            engine
                .broadcast_signal("halt", String::from("halted"))
                .await
                .unwrap(),
            1
        ),
    }
    expect_open_work(&handle, "after").await;
    // The user task inside is done or withdrawn; the boundaries are gone.
    assert_eq!(open_work(&handle).await, ["after"]);
    assert_eq!(engine.broadcast_signal("poke", ()).await.unwrap(), 0);
    assert_eq!(
        engine
            .broadcast_signal("halt", String::new())
            .await
            .unwrap(),
        0
    );
    assert_eq!(
        engine.publish_message("nudge", &id, ()).await.unwrap(),
        Published::Buffered
    );
    assert_eq!(
        engine
            .publish_message("stop", &id, String::new())
            .await
            .unwrap(),
        Published::Buffered
    );
    assert_eq!(
        engine.broker_stats(),
        BrokerStats {
            delivered: (nudges + usize::from(ending == Ending::Stopped)) as u64,
            buffered: 3,
            ..BrokerStats::default()
        }
    );
    complete(&handle, "after", |_: &mut Claim| {}).await;
    let (outcome, history) = finish(&handle).await;
    let data = completed(outcome, &history);
    assert_eq!(count(&history, "nudged", &Happening::Ended), nudges);
    assert_eq!(count(&history, "poked", &Happening::Ended), pokes);
    for k in common::indices(&history, "nudge", |h| {
        matches!(h, Happening::Spawned { .. })
    })
    .into_iter()
    .chain(common::indices(&history, "poke", |h| {
        matches!(h, Happening::Spawned { .. })
    })) {
        assert_eq!(history.steps()[k].what, spawned(0), "{history}");
    }
    let review_track = history.steps()[at(&history, "review", &Happening::Parked)]
        .track
        .0;
    match ending {
        Ending::Normally => {
            assert_eq!((data.a, data.reason.as_str()), (1, ""));
            assert_eq!(count(&history, "sub", &done(&[])), 1);
            assert_eq!(cancelled(&history), []);
        }
        Ending::Stopped | Ending::Halted => {
            let (by, why) = if ending == Ending::Stopped {
                ("stop", "stopped")
            } else {
                ("halt", "halted")
            };
            assert_eq!((data.a, data.reason.as_str()), (0, why));
            assert_eq!(count(&history, "sub", &done(&[])), 0);
            assert_eq!(cancelled(&history), [(review_track, "review")]);
            let interrupted_at = at(&history, "sub", &interrupted(by));
            // Tracks 2.. are the nudges' and pokes'; the interrupting boundary's next.
            let track = 2 + (nudges + pokes) as u32;
            let rows = steps(&history);
            assert_eq!(
                rows[interrupted_at - 1..interrupted_at + 2],
                [
                    (review_track, "review", Happening::Cancelled),
                    (0, "sub", interrupted(by)),
                    (track, by, spawned(0)),
                ],
                "{history}"
            );
            let path: Vec<Row> = rows.into_iter().filter(|r| r.0 == track).collect();
            assert_eq!(
                path,
                [
                    (track, by, spawned(0)),
                    (track, by, caught(&["reason"])),
                    (track, "after", Happening::Parked),
                    (track, "after", done(&[])),
                    (track, "done", Happening::Ended),
                ],
                "{history}"
            );
        }
    }
}

multi_thread!(common::RUNS => message_and_signal_boundaries_on_a_sub_process);

process! {
    /// A message boundary on a sub-process whose key a user task inside changes.
    REKEYED: Claim {
        start s;
        subprocess sub {
            start s1;
            user  rekey;
            user  review;
            end   e1;
            s1 -> rekey -> review -> e1;
        }
        boundary nudge on sub: non_interrupting message("nudge", key = |c| c.key.clone());
        end   done;
        end   nudged;
        s -> sub -> done;
        nudge -> nudged;
    }
}

/// A message boundary on a sub-process correlates on the data as it is now, like
/// any boundary: after a user task inside commits a new key, the boundary's
/// subscription has moved to it — a message for the old key is buffered, not
/// taken — and the new key's message fires it; the old key then has no waiter.
async fn a_message_boundary_on_a_sub_process_correlates_on_the_current_key(i: usize) {
    let engine = Engine::new();
    let (old, new) = (format!("k1-{i}"), format!("k2-{i}"));
    let data = Claim {
        key: old.clone(),
        ..claim(format!("rekeyed-{i}"))
    };
    let handle = engine.start(&REKEYED, data).await.unwrap();
    let key = new.clone();
    complete(&handle, "rekey", move |c: &mut Claim| c.key = key).await;
    expect_open_work(&handle, "review").await;
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
    assert_eq!(
        engine.publish_message("nudge", &old, ()).await.unwrap(),
        Published::Buffered
    );
    complete(&handle, "review", |_: &mut Claim| {}).await;
    let (outcome, history) = finish(&handle).await;
    assert_eq!(completed(outcome, &history).key, new);
    assert_eq!(spawns(&history, "nudge"), 1);
    assert_eq!(
        engine.broker_stats(),
        BrokerStats {
            delivered: 1,
            buffered: 2,
            ..BrokerStats::default()
        }
    );
    // The new key's subscription went with the sub-process.
    assert_eq!(
        engine.publish_message("nudge", &new, ()).await.unwrap(),
        Published::Buffered
    );
}

multi_thread!(common::RUNS => a_message_boundary_on_a_sub_process_correlates_on_the_current_key);

process! {
    /// Conditional boundaries on a sub-process, re-evaluated on commits inside it:
    /// `note` (non-interrupting) when `a > 0`, `hot` (interrupting) when `b > 0`.
    CONDITIONS: Claim {
        start s;
        subprocess sub {
            start s1;
            task  bump = |c| async move { c.a += 1; Ok(()) };
            user  wait_in;
            end   e1;
            s1 -> bump -> wait_in -> e1;
        }
        boundary note on sub: non_interrupting condition(|c| c.a > 0);
        boundary hot on sub: condition(|c| c.b > 0);
        end   done;
        end   noted;
        end   hot_end;
        s -> sub -> done;
        note -> noted;
        hot -> hot_end;
    }
}

/// Conditional boundaries on a sub-process are re-evaluated on commits inside it:
/// `bump`'s commit makes `a > 0` and the non-interrupting `note` starts a token
/// beside; completing `wait_in` with `b = 1` makes `hot` true while the sub-process
/// still runs, and it interrupts it (the commit stays).
#[tokio::test(start_paused = true)]
async fn condition_boundaries_on_a_sub_process_see_commits_inside() {
    let engine = Engine::new();
    let handle = engine
        .start(&CONDITIONS, claim("conditions"))
        .await
        .unwrap();
    expect_open_work(&handle, "wait_in").await;
    expect_that(&handle, "note fired", |h| {
        count(h, "noted", &Happening::Ended) == 1
    })
    .await;
    complete(&handle, "wait_in", |c: &mut Claim| c.b = 1).await;
    let (outcome, history) = finish(&handle).await;
    let data = completed(outcome, &history);
    assert_eq!((data.a, data.b), (1, 1));
    assert_eq!(
        steps(&history),
        [
            (0, "s", Happening::Started),
            (0, "sub", Happening::TaskStarted),
            (1, "s1", spawned(0)),
            (1, "bump", Happening::TaskStarted),
            (1, "bump", done(&["a"])),
            (2, "note", spawned(0)),
            (1, "wait_in", Happening::Parked),
            (2, "note", caught(&[])),
            (2, "noted", Happening::Ended),
            (1, "wait_in", done(&["b"])),
            (1, "wait_in", Happening::Cancelled),
            (0, "sub", interrupted("hot")),
            (3, "hot", spawned(0)),
            (3, "hot", caught(&[])),
            (3, "hot_end", Happening::Ended),
        ]
    );
}
