//! Error boundaries: the best-matching boundary catches, a plain failure is no BPMN
//! error, uncaught errors and error end events fail the instance.

use super::*;

/// What the error scenarios end with, by code.
fn errors_expected(code: &str, id: &str) -> (Vec<Row>, Job) {
    let start = [
        (0, "s", Happening::Started),
        (0, "charge", Happening::TaskStarted),
    ];
    let base = job(id);
    match code {
        "" => {
            let mut rows = start.to_vec();
            rows.extend([
                (0, "charge", done(&["worked"])),
                (0, "after", Happening::TaskStarted),
                (0, "after", done(&["notified"])),
                (0, "ok", Happening::Ended),
            ]);
            let data = Job {
                worked: true,
                notified: 1,
                ..base
            };
            (rows, data)
        }
        code => {
            let (boundary, end) = if code == "DECLINED" {
                ("declined", "declined_end")
            } else {
                ("any", "any_end")
            };
            let mut rows = start.to_vec();
            rows.extend([
                (0, "charge", error_thrown(code)),
                (0, "charge", interrupted(boundary)),
                (1, boundary, spawned(0)),
                (1, boundary, caught(&["caught", "message"])),
                (1, end, Happening::Ended),
            ]);
            // The handler's own write (`worked`) is dropped with the failed activity.
            let data = Job {
                caught: format!("{boundary}:{code}"),
                message: format!("{id} refused"),
                ..base
            };
            (rows, data)
        }
    }
}

process! {
    /// Error boundaries: one catches every code (declared first), one `DECLINED`.
    ERRORS: Job {
        start    s;
        task     charge = charge;
        boundary any on charge: error(apply = |j, e: &BpmnError| {
            j.caught = format!("any:{}", e.code);
            j.message = e.message.clone();
        });
        boundary declined on charge: error("DECLINED", apply = |j, e: &BpmnError| {
            j.caught = format!("declined:{}", e.code);
            j.message = e.message.clone();
        });
        task     after = |j| async move {
            j.notified += 1;
            Ok(())
        };
        end      ok;
        end      any_end;
        end      declined_end;
        s -> charge -> after -> ok;
        any -> any_end;
        declined -> declined_end;
    }
}

/// An error is caught by the boundary with its exact code, even though the catch-all
/// is declared first; any other code by the catch-all; the error reaches the
/// boundary's `apply` (code and message); the failed handler's writes are dropped.
/// Handlers end at once (on the loop) or after yielding (on their track).
async fn an_error_is_caught_by_the_best_matching_boundary(i: usize) {
    let engine = Engine::with_config(thresh::EngineConfig::fail_fast());
    let id = format!("err-{i}");
    let code = ["", "DECLINED", "FRAUD", "declined"][i % 4];
    let data = job_with(&id, code, i / 4 % 2 == 1);
    let (outcome, history) =
        finish_strict(&engine.start(&ERRORS, data.clone()).await.unwrap()).await;
    let (rows, expected) = errors_expected(code, &id);
    let data_out = completed(outcome, &history);
    assert_eq!(
        data_out,
        Job {
            code: data.code,
            slow: data.slow,
            ..expected
        }
    );
    assert_eq!(steps(&history), rows, "code {code:?}");
}

multi_thread!(RUNS => an_error_is_caught_by_the_best_matching_boundary);

/// A plain failure is no BPMN error: the catch-all error boundary lets it through and
/// the instance fails with `TaskFailed`.
#[tokio::test(start_paused = true)]
async fn a_plain_failure_is_not_caught_by_an_error_boundary() {
    let engine = Engine::with_config(thresh::EngineConfig::fail_fast());
    for slow in [false, true] {
        let (outcome, history) = finish_strict(
            &engine
                .start(&ERRORS, job_with("plain", "PLAIN", slow))
                .await
                .unwrap(),
        )
        .await;
        assert_eq!(
            failed(outcome, &history),
            InstanceError::TaskFailed {
                node: "charge",
                message: "plain failure".into()
            }
        );
        assert_eq!(
            steps(&history),
            [
                (0, "s", Happening::Started),
                (0, "charge", Happening::TaskStarted),
                (
                    0,
                    "charge",
                    Happening::Failed {
                        message: "plain failure".into()
                    }
                ),
                (0, "charge", Happening::Cancelled),
            ]
        );
    }
}

process! {
    /// An error boundary for another code and a catch-all escalation boundary: neither
    /// catches `DECLINED`.
    UNCAUGHT: Job {
        start    s;
        task     charge = charge;
        boundary other on charge: error("OTHER");
        boundary esc on charge: escalation;
        end      ok;
        end      other_end;
        end      esc_end;
        s -> charge -> ok;
        other -> other_end;
        esc -> esc_end;
    }
}

/// An error no boundary matches fails the instance with `UncaughtError`, naming the
/// task, the code and the handler's message; an escalation boundary catches no error.
/// A matching code is caught.
async fn an_uncaught_error_fails_the_instance(i: usize) {
    let engine = Engine::with_config(thresh::EngineConfig::fail_fast());
    let id = format!("uncaught-{i}");
    let slow = i % 2 == 1;
    let handle = engine
        .start(&UNCAUGHT, job_with(&id, "DECLINED", slow))
        .await
        .unwrap();
    let (outcome, history) = finish_strict(&handle).await;
    assert_eq!(
        failed(outcome, &history),
        InstanceError::UncaughtError {
            node: "charge",
            code: "DECLINED".into(),
            message: format!("{id} refused"),
        }
    );
    assert_eq!(
        steps(&history),
        [
            (0, "s", Happening::Started),
            (0, "charge", Happening::TaskStarted),
            (0, "charge", error_thrown("DECLINED")),
            (0, "charge", Happening::Cancelled),
        ]
    );
    assert!(!handle.data().await.expect("data").worked);

    let (outcome, history) = finish_strict(
        &engine
            .start(&UNCAUGHT, job_with(&id, "OTHER", slow))
            .await
            .unwrap(),
    )
    .await;
    completed(outcome, &history);
    assert_eq!(history.ended_at(), ["other_end"]);
    assert_eq!(spawns(&history, "esc"), 0);
}

multi_thread!(RUNS => an_uncaught_error_fails_the_instance);

process! {
    /// An error end event beside a user task with an armed timer boundary.
    ERROR_END: Job {
        start     s;
        parallel  fork;
        user      wait;
        boundary  late on wait: timer(Duration::from_secs(3600));
        task      prep = |j| async move {
            j.rounds += 1;
            Ok(())
        };
        exclusive check;
        end       boom: error("BOOM");
        end       fine;
        end       waited;
        end       late_end;
        s -> fork -> wait, prep;
        prep -> check;
        check -> boom when |j| j.code == "BOOM";
        check -> fine else;
        wait -> waited;
        late -> late_end;
    }
}

/// An error end event fails the instance with `UncaughtError` naming the end event,
/// with an empty message; the other branch (a user task with a timer boundary) is
/// cancelled and its work withdrawn. Otherwise the instance waits for the user task.
#[tokio::test(start_paused = true)]
async fn an_error_end_event_fails_the_instance() {
    let engine = Engine::with_config(thresh::EngineConfig::fail_fast());
    let handle = engine
        .start(
            &ERROR_END,
            Job {
                code: "BOOM".into(),
                ..job("boom")
            },
        )
        .await
        .unwrap();
    let (outcome, history) = finish_strict_in(&handle, DAY).await;
    assert_eq!(
        failed(outcome, &history),
        InstanceError::UncaughtError {
            node: "boom",
            code: "BOOM".into(),
            message: String::new(),
        }
    );
    let rows = steps(&history);
    assert_eq!(
        rows[..8],
        [
            (0, "s", Happening::Started),
            (0, "fork", routed(&["wait", "prep"])),
            (1, "fork", spawned(0)),
            (0, "wait", Happening::Parked),
            (1, "prep", Happening::TaskStarted),
            (1, "prep", done(&["rounds"])),
            (1, "check", routed(&["boom"])),
            (1, "boom", error_thrown("BOOM")),
        ]
    );
    let mut cancelled = rows[8..].to_vec();
    cancelled.sort_by_key(|r| r.0);
    assert_eq!(
        cancelled,
        [
            (0, "wait", Happening::Cancelled),
            (1, "boom", Happening::Cancelled)
        ]
    );
    assert!(handle.open_work().await.is_empty());
    assert_eq!(handle.data().await.expect("data").rounds, 1);

    // Without the error the instance waits at `wait`; the hour passes and the timer
    // boundary takes it.
    let handle = engine.start(&ERROR_END, job("fine")).await.unwrap();
    let (outcome, history) = finish_strict_in(&handle, DAY).await;
    completed(outcome, &history);
    assert_eq!(history.ended_at(), ["fine", "late_end"]);
    assert_eq!(count(&history, "wait", &interrupted("late")), 1);
}
