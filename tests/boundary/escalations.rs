//! Escalation boundaries, by code and catch-all; escalation events are no error.

use super::*;

process! {
    /// Escalation boundaries: non-interrupting `LATE`, interrupting `STOP`.
    ESCALATE: Job {
        start    s;
        task     work = work;
        boundary heads_up on work: non_interrupting escalation("LATE", apply = |j, e: &Escalation| j.caught = format!("heads_up:{}", e.code));
        boundary abort on work: escalation("STOP", apply = |j, e: &Escalation| j.caught = format!("abort:{}", e.code));
        task     notify = |j| async move {
            j.notified += 1;
            Ok(())
        };
        end      ok;
        end      notified_end;
        end      aborted;
        s -> work -> ok;
        heads_up -> notify -> notified_end;
        abort -> aborted;
    }
}

/// Escalations by code: `LATE` — the non-interrupting boundary starts a token and the
/// task completes too (its writes kept); `STOP` — the interrupting one stops the task
/// (its writes dropped); `OTHER` — caught by nothing: the task completes and the
/// instance with it, the history shows the escalation.
async fn escalations_by_code(i: usize) {
    let engine = Engine::new();
    let code = ["LATE", "STOP", "OTHER"][i % 3];
    let id = format!("esc-{i}");
    let data = job_with(&id, code, i / 3 % 2 == 1);
    let (outcome, history) =
        finish_strict(&engine.start(&ESCALATE, data.clone()).await.unwrap()).await;
    let data_out = completed(outcome, &history);
    let rows = steps(&history);
    let start = [
        (0, "s", Happening::Started),
        (0, "work", Happening::TaskStarted),
        (0, "work", escalated(code)),
    ];
    match code {
        "LATE" => {
            assert_eq!(
                data_out,
                Job {
                    worked: true,
                    caught: "heads_up:LATE".into(),
                    notified: 1,
                    ..data
                }
            );
            let mut expected = start.to_vec();
            expected.extend([
                (1, "heads_up", spawned(0)),
                (0, "work", done(&["worked"])),
                (0, "ok", Happening::Ended),
                (1, "heads_up", caught(&["caught"])),
                (1, "notify", Happening::TaskStarted),
                (1, "notify", done(&["notified"])),
                (1, "notified_end", Happening::Ended),
            ]);
            assert_eq!(rows, expected);
        }
        "STOP" => {
            assert_eq!(
                data_out,
                Job {
                    caught: "abort:STOP".into(),
                    ..data
                }
            );
            let mut expected = start.to_vec();
            expected.extend([
                (0, "work", interrupted("abort")),
                (1, "abort", spawned(0)),
                (1, "abort", caught(&["caught"])),
                (1, "aborted", Happening::Ended),
            ]);
            assert_eq!(rows, expected);
        }
        _ => {
            assert_eq!(
                data_out,
                Job {
                    worked: true,
                    ..data
                }
            );
            let mut expected = start.to_vec();
            expected.extend([(0, "work", done(&["worked"])), (0, "ok", Happening::Ended)]);
            assert_eq!(rows, expected);
        }
    }
}

multi_thread!(RUNS => escalations_by_code);

process! {
    /// A catch-all escalation boundary (declared first) and one for `LATE`.
    ESCALATE_ANY: Job {
        start    s;
        task     work = work;
        boundary any on work: non_interrupting escalation(apply = |j, e: &Escalation| j.caught = format!("any:{}", e.code));
        boundary late on work: non_interrupting escalation("LATE", apply = |j, e: &Escalation| j.caught = format!("late:{}", e.code));
        end      ok;
        end      any_end;
        end      late_end;
        s -> work -> ok;
        any -> any_end;
        late -> late_end;
    }
}

/// A catch-all escalation boundary catches any code; the one with the exact code is
/// preferred, though declared second.
#[tokio::test(start_paused = true)]
async fn an_escalation_goes_to_the_best_matching_boundary() {
    let engine = Engine::new();
    for (code, boundary, end) in [("LATE", "late", "late_end"), ("WHATEVER", "any", "any_end")] {
        let (outcome, history) = finish_strict_in(
            &engine
                .start(&ESCALATE_ANY, job_with("any", code, false))
                .await
                .unwrap(),
            DAY,
        )
        .await;
        let data = completed(outcome, &history);
        assert_eq!(data.caught, format!("{boundary}:{code}"));
        assert!(data.worked);
        assert_eq!(
            steps(&history),
            [
                (0, "s", Happening::Started),
                (0, "work", Happening::TaskStarted),
                (0, "work", escalated(code)),
                (1, boundary, spawned(0)),
                (0, "work", done(&["worked"])),
                (0, "ok", Happening::Ended),
                (1, boundary, caught(&["caught"])),
                (1, end, Happening::Ended),
            ]
        );
    }
}

process! {
    /// Escalation throw and end events: caught by nothing, so no error.
    ESCALATION_EVENTS: Job {
        start s;
        throw up: escalation("MID");
        task  after = |j| async move {
            j.notified += 1;
            Ok(())
        };
        end   top: escalation("TOP");
        s -> up -> after -> top;
    }
}

/// Escalation throw and end events: uncaught, which is no error — the token goes on
/// (or ends) and the instance completes, the history showing both escalations.
#[tokio::test(start_paused = true)]
async fn escalation_events_are_no_error() {
    let engine = Engine::new();
    let (outcome, history) = finish_strict_in(
        &engine
            .start(&ESCALATION_EVENTS, job("events"))
            .await
            .unwrap(),
        DAY,
    )
    .await;
    assert_eq!(completed(outcome, &history).notified, 1);
    assert_eq!(
        steps(&history),
        [
            (0, "s", Happening::Started),
            (0, "up", escalated("MID")),
            (0, "after", Happening::TaskStarted),
            (0, "after", done(&["notified"])),
            (0, "top", escalated("TOP")),
            (0, "top", Happening::Ended),
        ]
    );
}
