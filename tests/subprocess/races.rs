//! Races on four workers: a boundary on a sub-process against the work inside.

use super::*;

process! {
    /// The race: `work` finishes inside while a message for the interrupting
    /// boundary `stop` arrives.
    RACE: Claim {
        start s;
        subprocess sub {
            start s1;
            task  work = |c| async move { yield_jitter().await; c.b += 1; Ok(()) };
            end   e1;
            s1 -> work -> e1;
        }
        boundary stop on sub: message("stop", key = |c| c.id.clone(), apply = |c, why: &String| c.reason = why.clone());
        task  after = |c| async move { c.after += 1; Ok(()) };
        end   done;
        end   stopped;
        s -> sub -> after -> done;
        stop -> stopped;
    }
}

/// A message for the interrupting boundary on a sub-process races the completion
/// of the work inside, 200 times on four workers: exactly one of them wins, every
/// time. Caught, the work is cancelled (its write dropped) — or it had finished and
/// the empty sub-process's completion lost to the message served first — and the
/// token goes on from the boundary (`Delivered`); too late, the sub-process completed
/// and the message is left in the broker, not lost (`Buffered`).
async fn a_message_boundary_races_the_work_inside(i: usize) {
    let engine = Engine::new();
    let id = format!("race-{i}");
    let handle = engine.start(&RACE, claim(&id)).await.unwrap();
    let publisher = {
        let (engine, id) = (engine.clone(), id.clone());
        tokio::spawn(async move {
            yield_jitter().await;
            engine
                .publish_message("stop", &id, String::from("stopped"))
                .await
                .unwrap()
        })
    };
    let (outcome, history) = finish(&handle).await;
    let published = publisher.await.expect("the publisher");
    assert_ne!(published, Published::Dropped);
    let data = completed(outcome, &history);
    let head = [
        (0, "s", Happening::Started),
        (0, "sub", Happening::TaskStarted),
        (1, "s1", spawned(0)),
        (1, "work", Happening::TaskStarted),
    ];
    let rows = steps(&history);
    assert_eq!(rows[..head.len()], head, "{history}");
    let stopped = count(&history, "stopped", &Happening::Ended);
    let done_ = count(&history, "done", &Happening::Ended);
    assert_eq!(stopped + done_, 1, "exactly one winner\n{history}");
    let said = format!("published {published:?}\n{history}");
    if stopped == 1 {
        assert_eq!(published, Published::Delivered, "{said}");
        let interrupted_at = [
            (0, "sub", interrupted("stop")),
            (2, "stop", spawned(0)),
            (2, "stop", caught(&["reason"])),
            (2, "stopped", Happening::Ended),
        ];
        // The work inside was cancelled, or it had finished and the sub-process
        // was empty when the message served first came (the sub-process's
        // completion loses to it): the work's write stands then.
        let (b, inside) = match rows[head.len()].2 {
            Happening::Cancelled => (0, vec![(1, "work", Happening::Cancelled)]),
            _ => (
                1,
                vec![(1, "work", done(&["b"])), (1, "e1", Happening::Ended)],
            ),
        };
        assert_eq!(
            (data.b, data.after, data.reason.as_str()),
            (b, 0, "stopped"),
            "{said}"
        );
        let expected: Vec<_> = inside.into_iter().chain(interrupted_at).collect();
        assert_eq!(rows[head.len()..], expected, "{said}");
        assert_eq!(
            engine.broker_stats(),
            BrokerStats {
                delivered: 1,
                ..BrokerStats::default()
            }
        );
    } else {
        assert_eq!((data.b, data.after, data.reason.as_str()), (1, 1, ""));
        assert_eq!(
            rows[head.len()..],
            [
                (1, "work", done(&["b"])),
                (1, "e1", Happening::Ended),
                (0, "sub", done(&[])),
                (0, "after", Happening::TaskStarted),
                (0, "after", done(&["after"])),
                (0, "done", Happening::Ended),
            ],
            "{history}"
        );
        assert_eq!(published, Published::Buffered, "{said}");
        assert_eq!(engine.broker_stats().buffered, 1, "the message is not lost");
    }
}

multi_thread!(common::RUNS => a_message_boundary_races_the_work_inside);

process! {
    /// The race: `pay` throws `FRAUD` inside (after a jitter) while a signal for the
    /// interrupting boundary `halt` arrives; a user task waits beside `pay`.
    ERROR_RACE: Claim {
        start s;
        subprocess sub {
            start    s1;
            parallel f1;
            task     pay = |c| async move {
                yield_jitter().await;
                c.a += 1;
                Err(TaskError::bpmn("FRAUD", "caught in the act"))
            };
            user     wait_in;
            end      e1a;
            end      e1b;
            s1 -> f1 -> pay, wait_in;
            pay -> e1a;
            wait_in -> e1b;
        }
        boundary fraud on sub: error("FRAUD", apply = |c, e: &BpmnError| c.caught = e.code.clone());
        boundary halt on sub: signal("halt", apply = |c, why: &String| c.reason = why.clone());
        end   done;
        end   flagged;
        end   halted;
        s -> sub -> done;
        fraud -> flagged;
        halt -> halted;
    }
}

/// A BPMN error inside races a signal for the interrupting boundary on the
/// sub-process, 200 times on four workers: exactly one boundary fires, both inner
/// tracks end cancelled, the failed handler's write never lands, and afterwards no
/// subscription is left.
async fn an_error_inside_races_a_signal_boundary(i: usize) {
    let engine = Engine::new();
    let handle = engine
        .start(&ERROR_RACE, claim(format!("error-race-{i}")))
        .await
        .unwrap();
    let sender = {
        let engine = engine.clone();
        tokio::spawn(async move {
            yield_jitter().await;
            engine
                .broadcast_signal("halt", String::from("halted"))
                .await
                .unwrap()
        })
    };
    let (outcome, history) = finish(&handle).await;
    let reached = sender.await.expect("the sender");
    let data = completed(outcome, &history);
    let (fraud, halt) = (spawns(&history, "fraud"), spawns(&history, "halt"));
    assert_eq!(fraud + halt, 1, "exactly one winner\n{history}");
    assert!(halt <= reached, "{history}");
    assert_eq!(data.a, 0, "the failed handler's write never lands");
    let (by, end) = if fraud == 1 {
        assert_eq!((data.caught.as_str(), data.reason.as_str()), ("FRAUD", ""));
        assert_eq!(count(&history, "pay", &error_thrown("FRAUD")), 1);
        ("fraud", "flagged")
    } else {
        assert_eq!((data.caught.as_str(), data.reason.as_str()), ("", "halted"));
        ("halt", "halted")
    };
    // Track 0 waits at `sub`; inside, `pay` runs on 1 and the fork's other token,
    // on 2, waits at `wait_in` — or is still on its way there, at the fork.
    let cancels = cancelled(&history);
    assert!(
        cancels == [(1, "pay"), (2, "wait_in")] || cancels == [(1, "pay"), (2, "f1")],
        "{history}"
    );
    let rows = steps(&history);
    let k = at(&history, "sub", &interrupted(by));
    assert_eq!(
        rows[k..],
        [
            (0, "sub", interrupted(by)),
            (3, by, spawned(0)),
            (
                3,
                by,
                caught(&[if by == "fraud" { "caught" } else { "reason" }])
            ),
            (3, end, Happening::Ended),
        ],
        "{history}"
    );
    assert!(handle.open_work().await.is_empty());
    assert_eq!(
        engine
            .broadcast_signal("halt", String::new())
            .await
            .unwrap(),
        0
    );
}

multi_thread!(common::RUNS => an_error_inside_races_a_signal_boundary);
