//! Escalations from a handler and from throw and end events inside a sub-process.

use super::*;

// ----- escalations -------------------------------------------------------------------

process! {
    /// `work` escalates `code` two scopes down: `LATE` to a non-interrupting
    /// boundary on `sub`, `STOP` to an interrupting one; others to nobody.
    ESCALATE: Claim {
        start s;
        subprocess sub {
            start s1;
            subprocess inner {
                start s2;
                task  work = work;
                end   e2;
                s2 -> work -> e2;
            }
            task  after_in = |c| async move { c.after += 1; Ok(()) };
            end   e1;
            s1 -> inner -> after_in -> e1;
        }
        boundary heads_up on sub: non_interrupting escalation("LATE", apply = |c, e: &Escalation| c.caught = format!("heads_up:{}", e.code));
        boundary abort on sub: escalation("STOP", apply = |c, e: &Escalation| c.caught = format!("abort:{}", e.code));
        task  notify = |c| async move { c.x += 1; Ok(()) };
        end   done;
        end   notified;
        end   aborted;
        s -> sub -> done;
        heads_up -> notify -> notified;
        abort -> aborted;
    }
}

/// An escalation raised two scopes down travels out to the boundaries on `sub`:
/// `LATE` to the non-interrupting one — its path runs beside, `work` and both
/// scopes complete and the token goes on; `STOP` to the interrupting one — `inner`
/// and `work` are cancelled (`work`'s write dropped) and the token goes on from the
/// boundary; any other code to nobody, which is no error.
async fn escalations_from_inside(i: usize) {
    let engine = Engine::new();
    let code = ["LATE", "STOP", "OTHER"][i % 3];
    let data = Claim {
        code: code.into(),
        ..claim(format!("esc-{i}"))
    };
    let (outcome, history) = finish(&engine.start(&ESCALATE, data).await.unwrap()).await;
    let data = completed(outcome, &history);
    let rows = steps(&history);
    let head = [
        (0, "s", Happening::Started),
        (0, "sub", Happening::TaskStarted),
        (1, "s1", spawned(0)),
        (1, "inner", Happening::TaskStarted),
        (2, "s2", spawned(1)),
        (2, "work", Happening::TaskStarted),
        (2, "work", escalated(code)),
    ];
    assert_eq!(rows[..head.len()], head, "{history}");
    let the_rest = [
        (2, "work", done(&["b"])),
        (2, "e2", Happening::Ended),
        (1, "inner", done(&[])),
        (1, "after_in", Happening::TaskStarted),
        (1, "after_in", done(&["after"])),
        (1, "e1", Happening::Ended),
        (0, "sub", done(&[])),
        (0, "done", Happening::Ended),
    ];
    match code {
        "LATE" => {
            assert_eq!(
                (data.b, data.after, data.x, data.caught.as_str()),
                (1, 1, 1, "heads_up:LATE")
            );
            assert_eq!(rows[head.len()], (3, "heads_up", spawned(0)), "{history}");
            // The boundary's path and the sub-process interleave; each in order.
            let main: Vec<Row> = rows[head.len() + 1..]
                .iter()
                .filter(|r| r.0 != 3)
                .cloned()
                .collect();
            assert_eq!(main, the_rest, "{history}");
            let side: Vec<Row> = rows[head.len() + 1..]
                .iter()
                .filter(|r| r.0 == 3)
                .cloned()
                .collect();
            assert_eq!(
                side,
                [
                    (3, "heads_up", caught(&["caught"])),
                    (3, "notify", Happening::TaskStarted),
                    (3, "notify", done(&["x"])),
                    (3, "notified", Happening::Ended),
                ],
                "{history}"
            );
            assert_eq!(cancelled(&history), []);
        }
        "STOP" => {
            assert_eq!(
                (data.b, data.after, data.x, data.caught.as_str()),
                (0, 0, 0, "abort:STOP")
            );
            let mut cancels = rows[head.len()..head.len() + 2].to_vec();
            cancels.sort_by_key(|r| r.0);
            assert_eq!(
                cancels,
                [
                    (1, "inner", Happening::Cancelled),
                    (2, "work", Happening::Cancelled)
                ],
                "{history}"
            );
            assert_eq!(
                rows[head.len() + 2..],
                [
                    (0, "sub", interrupted("abort")),
                    (3, "abort", spawned(0)),
                    (3, "abort", caught(&["caught"])),
                    (3, "aborted", Happening::Ended),
                ],
                "{history}"
            );
        }
        _ => {
            assert_eq!(
                (data.b, data.after, data.x, data.caught.as_str()),
                (1, 1, 0, "")
            );
            assert_eq!(rows[head.len()..], the_rest, "{history}");
        }
    }
}

multi_thread!(common::RUNS => escalations_from_inside);

process! {
    /// Escalation throw and end events inside a sub-process: `up` raises `LATE` to
    /// the non-interrupting boundary, then (with `want_x`) the end event `stop_end`
    /// raises `STOP` to the interrupting one.
    ESCALATION_EVENTS: Claim {
        start s;
        subprocess sub {
            start     s1;
            throw     up: escalation("LATE");
            task      after_in = |c| async move { c.after += 1; Ok(()) };
            exclusive which;
            end       e1;
            end       stop_end: escalation("STOP");
            s1 -> up -> after_in -> which;
            which -> stop_end when |c| c.want_x;
            which -> e1 else;
        }
        boundary heads_up on sub: non_interrupting escalation("LATE", apply = |c, e: &Escalation| c.caught = e.code.clone());
        boundary abort on sub: escalation("STOP", apply = |c, e: &Escalation| c.reason = e.code.clone());
        end   done;
        end   notified;
        end   aborted;
        s -> sub -> done;
        heads_up -> notified;
        abort -> aborted;
    }
}

/// Escalation throw and end events inside a sub-process travel out like a
/// handler's: the throw's `LATE` starts a token at the non-interrupting boundary
/// and the inside goes on; the end event's `STOP` interrupts the sub-process.
#[tokio::test(start_paused = true)]
async fn escalation_events_inside_reach_the_boundaries_on_the_sub_process() {
    let engine = Engine::new();
    for want_x in [false, true] {
        let data = Claim {
            want_x,
            ..claim("esc-events")
        };
        let (outcome, history) =
            finish(&engine.start(&ESCALATION_EVENTS, data).await.unwrap()).await;
        let data = completed(outcome, &history);
        let stop = if want_x { "STOP" } else { "" };
        assert_eq!(
            (data.after, data.caught.as_str(), data.reason.as_str()),
            (1, "LATE", stop)
        );
        let rows = steps(&history);
        let by_track = |t: u32| -> Vec<Row> { rows.iter().filter(|r| r.0 == t).cloned().collect() };
        assert_eq!(
            by_track(2),
            [
                (2, "heads_up", spawned(0)),
                (2, "heads_up", caught(&["caught"])),
                (2, "notified", Happening::Ended),
            ],
            "{history}"
        );
        let mut inside = vec![
            (1, "s1", spawned(0)),
            (1, "up", escalated("LATE")),
            (1, "after_in", Happening::TaskStarted),
            (1, "after_in", done(&["after"])),
        ];
        if want_x {
            inside.extend([
                (1, "which", routed(&["stop_end"])),
                (1, "stop_end", escalated("STOP")),
                (1, "stop_end", Happening::Cancelled),
            ]);
            assert_eq!(by_track(1), inside, "{history}");
            assert_eq!(
                by_track(0),
                [
                    (0, "s", Happening::Started),
                    (0, "sub", Happening::TaskStarted),
                    (0, "sub", interrupted("abort")),
                ],
                "{history}"
            );
            assert_eq!(
                by_track(3),
                [
                    (3, "abort", spawned(0)),
                    (3, "abort", caught(&["reason"])),
                    (3, "aborted", Happening::Ended),
                ],
                "{history}"
            );
        } else {
            inside.extend([(1, "which", routed(&["e1"])), (1, "e1", Happening::Ended)]);
            assert_eq!(by_track(1), inside, "{history}");
            assert_eq!(
                by_track(0),
                [
                    (0, "s", Happening::Started),
                    (0, "sub", Happening::TaskStarted),
                    (0, "sub", done(&[])),
                    (0, "done", Happening::Ended),
                ],
                "{history}"
            );
            assert_eq!(history.tracks(), 3);
        }
    }
}
