//! BPMN errors thrown inside a sub-process: which catcher wins, plain failures,
//! uncaught errors, error end events.

use super::*;

// ----- errors ------------------------------------------------------------------------

/// `ERRORS` up to the moment `pay` (on track 3, after a second) ends: `review` waits
/// in `handle` on track 1, `sign` in `inner` on track 4.
fn errors_prefix() -> Vec<Row> {
    vec![
        (0, "begin", Happening::Started),
        (0, "handle", Happening::TaskStarted),
        (1, "hs", spawned(0)),
        (1, "hfork", routed(&["review", "inner"])),
        (2, "hfork", spawned(1)),
        (1, "review", Happening::Parked),
        (2, "inner", Happening::TaskStarted),
        (3, "is", spawned(2)),
        (3, "ifork", routed(&["pay", "sign"])),
        (4, "ifork", spawned(3)),
        (3, "pay", Happening::TaskStarted),
        (4, "sign", Happening::Parked),
    ]
}

process! {
    /// `pay` throws (after `secs`) two scopes down, while user tasks wait in both
    /// scopes. `pay` catches `RETRY` itself, `inner` catches `DUP`; `handle` has an
    /// error event sub-process for `LIMIT`, a catch-all error boundary (declared
    /// first), one for `FRAUD` and one for `DUP`.
    ERRORS: Claim {
        start begin;
        subprocess handle {
            start    hs;
            parallel hfork;
            user     review;
            subprocess inner {
                start    is;
                parallel ifork;
                task     pay = pay;
                boundary retry on pay: error("RETRY", apply = |c, e: &BpmnError| {
                    c.caught = format!("retry:{}", e.code);
                    c.message = e.message.clone();
                });
                exclusive paid;
                user     sign;
                parallel ijoin;
                end      ie;
                is -> ifork -> pay, sign;
                pay -> paid;
                retry -> paid;
                paid, sign -> ijoin -> ie;
            }
            boundary dup_inner on inner: error("DUP", apply = |c, e: &BpmnError| {
                c.caught = format!("dup_inner:{}", e.code);
                c.message = e.message.clone();
            });
            event_subprocess on_limit {
                start ls: error("LIMIT", apply = |c, e: &BpmnError| {
                    c.caught = format!("on_limit:{}", e.code);
                    c.message = e.message.clone();
                });
                task  note = |c| async move { c.x += 1; Ok(()) };
                end   le;
                ls -> note -> le;
            }
            end      reviewed;
            end      signed;
            end      dup_handled;
            hs -> hfork -> review, inner;
            review -> reviewed;
            inner -> signed;
            dup_inner -> dup_handled;
        }
        boundary any on handle: error(apply = |c, e: &BpmnError| {
            c.caught = format!("any:{}", e.code);
            c.message = e.message.clone();
        });
        boundary fraud on handle: error("FRAUD", apply = |c, e: &BpmnError| {
            c.caught = format!("fraud:{}", e.code);
            c.message = e.message.clone();
        });
        boundary dup on handle: error("DUP", apply = |c, e: &BpmnError| {
            c.caught = format!("dup:{}", e.code);
            c.message = e.message.clone();
        });
        task  investigate = |c| async move { c.after += 1; Ok(()) };
        end   done;
        end   flagged;
        end   other;
        end   dup_end;
        begin -> handle -> done;
        any -> other;
        fraud -> investigate -> flagged;
        dup -> dup_end;
    }
}

/// Start `ERRORS` with `pay` ending in `code` after a second, once both user tasks
/// wait; the history then.
async fn start_errors(engine: &Engine, code: &str) -> (InstanceHandle<Claim>, History) {
    let handle = engine
        .start(
            &ERRORS,
            Claim {
                code: code.into(),
                secs: 1,
                ..claim(format!("err-{code}"))
            },
        )
        .await
        .unwrap();
    expect_open_work(&handle, "review").await;
    expect_open_work(&handle, "sign").await;
    let history = handle.history().await;
    assert_eq!(steps(&history), errors_prefix(), "{history}");
    (handle, history)
}

/// An error thrown by a task two scopes down (`pay` in `inner` in `handle`), with no
/// catcher in `inner`, is caught by the boundary on `handle`: the remaining tracks of
/// both scopes are cancelled (the user tasks withdrawn), the boundary's `apply` sees
/// the `BpmnError`, the failed handler's write is dropped and the token goes on from
/// the boundary. The code-specific boundary wins over the catch-all declared before
/// it; another code goes to the catch-all.
#[tokio::test(start_paused = true)]
async fn an_error_two_scopes_down_is_caught_by_the_outer_boundary() {
    let engine = Engine::new();
    for (code, boundary, tail) in [
        (
            "FRAUD",
            "fraud",
            vec![
                (5, "fraud", caught(&["caught", "message"])),
                (5, "investigate", Happening::TaskStarted),
                (5, "investigate", done(&["after"])),
                (5, "flagged", Happening::Ended),
            ],
        ),
        (
            "OTHER",
            "any",
            vec![
                (5, "any", caught(&["caught", "message"])),
                (5, "other", Happening::Ended),
            ],
        ),
    ] {
        let (handle, _) = start_errors(&engine, code).await;
        let (outcome, history) = finish(&handle).await;
        let data = completed(outcome, &history);
        assert_eq!(data.caught, format!("{boundary}:{code}"));
        assert_eq!(data.message, format!("err-{code} refused"));
        assert_eq!(data.a, 0, "the failed handler's write is dropped");
        assert_eq!(data.after, u32::from(code == "FRAUD"));
        let rows = steps(&history);
        let mut head = errors_prefix();
        head.push((3, "pay", error_thrown(code)));
        assert_eq!(rows[..head.len()], head[..], "{history}");
        // Then both scopes' remaining tracks are cancelled, in some order...
        let mut cancels = rows[head.len()..head.len() + 4].to_vec();
        cancels.sort_by_key(|r| r.0);
        assert_eq!(
            cancels,
            [
                (1, "review", Happening::Cancelled),
                (2, "inner", Happening::Cancelled),
                (3, "pay", Happening::Cancelled),
                (4, "sign", Happening::Cancelled),
            ],
            "{history}"
        );
        // ...and the token goes on from the boundary.
        let mut rest = vec![
            (0, "handle", interrupted(boundary)),
            (5, boundary, spawned(0)),
        ];
        rest.extend(tail);
        assert_eq!(rows[head.len() + 4..], rest[..], "{history}");
        assert!(handle.open_work().await.is_empty());
    }
}

/// The most specific catcher wins: `DUP` is caught by the boundary on `inner`, not
/// by the one on `handle`. Only `inner`'s tracks are cancelled; `handle` goes on —
/// its user task still waits, and completing it completes `handle`.
#[tokio::test(start_paused = true)]
async fn the_innermost_boundary_catches_first() {
    let engine = Engine::new();
    let (handle, _) = start_errors(&engine, "DUP").await;
    let history = until_slept(&handle, "the error was caught", |h| {
        count(h, "dup_handled", &Happening::Ended) == 1
    })
    .await;
    settle().await;
    assert!(!handle.is_finished());
    assert_eq!(open_work(&handle).await, ["review"]);
    let rows = steps(&history);
    let mut head = errors_prefix();
    head.push((3, "pay", error_thrown("DUP")));
    assert_eq!(rows[..head.len()], head[..], "{history}");
    let mut cancels = rows[head.len()..head.len() + 2].to_vec();
    cancels.sort_by_key(|r| r.0);
    assert_eq!(
        cancels,
        [
            (3, "pay", Happening::Cancelled),
            (4, "sign", Happening::Cancelled)
        ],
        "{history}"
    );
    assert_eq!(
        rows[head.len() + 2..],
        [
            (2, "inner", interrupted("dup_inner")),
            (5, "dup_inner", spawned(2)),
            (5, "dup_inner", caught(&["caught", "message"])),
            (5, "dup_handled", Happening::Ended),
        ],
        "{history}"
    );
    complete(&handle, "review", |c: &mut Claim| c.b = 1).await;
    let (outcome, history) = finish(&handle).await;
    let data = completed(outcome, &history);
    assert_eq!(
        (data.caught.as_str(), data.message.as_str(), data.a, data.b),
        ("dup_inner:DUP", "err-DUP refused", 0, 1)
    );
    assert_eq!(
        steps(&history)[rows.len()..],
        [
            (1, "review", done(&["b"])),
            (1, "reviewed", Happening::Ended),
            (0, "handle", done(&[])),
            (0, "done", Happening::Ended),
        ]
    );
    assert_eq!(spawns(&history, "dup"), 0);
    assert_eq!(spawns(&history, "any"), 0);
}

/// An error event sub-process of the scope the error passes through catches it
/// before the boundaries on that scope's sub-process: `LIMIT` from `pay` takes
/// `handle` over (its other work cancelled), the event sub-process runs with the
/// error, and `handle` then completes normally.
#[tokio::test(start_paused = true)]
async fn an_error_event_sub_process_catches_before_the_boundary() {
    let engine = Engine::new();
    let (handle, _) = start_errors(&engine, "LIMIT").await;
    let (outcome, history) = finish(&handle).await;
    let data = completed(outcome, &history);
    assert_eq!(
        (data.caught.as_str(), data.message.as_str(), data.a, data.x),
        ("on_limit:LIMIT", "err-LIMIT refused", 0, 1)
    );
    let rows = steps(&history);
    let mut head = errors_prefix();
    head.push((3, "pay", error_thrown("LIMIT")));
    assert_eq!(rows[..head.len()], head[..], "{history}");
    let mut cancels = rows[head.len()..head.len() + 4].to_vec();
    cancels.sort_by_key(|r| r.0);
    assert_eq!(
        cancels,
        [
            (1, "review", Happening::Cancelled),
            (2, "inner", Happening::Cancelled),
            (3, "pay", Happening::Cancelled),
            (4, "sign", Happening::Cancelled),
        ],
        "{history}"
    );
    assert_eq!(
        rows[head.len() + 4..],
        [
            (5, "ls", Happening::Started),
            (5, "ls", caught(&["caught", "message"])),
            (5, "note", Happening::TaskStarted),
            (5, "note", done(&["x"])),
            (5, "le", Happening::Ended),
            (0, "handle", done(&[])),
            (0, "done", Happening::Ended),
        ],
        "{history}"
    );
    for boundary in ["any", "fraud", "dup", "dup_inner"] {
        assert_eq!(spawns(&history, boundary), 0);
    }
}

/// No error: both user tasks are completed, the join in `inner` fires, both scopes
/// complete and no boundary fires.
#[tokio::test(start_paused = true)]
async fn without_an_error_both_scopes_complete() {
    let engine = Engine::new();
    let (handle, _) = start_errors(&engine, "").await;
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert_eq!(count(&handle.history().await, "pay", &done(&["a"])), 1);
    complete(&handle, "sign", |c: &mut Claim| c.y = 1).await;
    expect_that(&handle, "inner completed", |h| {
        count(h, "inner", &done(&[])) == 1
    })
    .await;
    assert!(!handle.is_finished());
    complete(&handle, "review", |c: &mut Claim| c.b = 1).await;
    let (outcome, history) = finish(&handle).await;
    let data = completed(outcome, &history);
    assert_eq!(
        (data.a, data.b, data.y, data.caught.as_str()),
        (1, 1, 1, "")
    );
    assert_eq!(history.ended_at(), ["ie", "signed", "reviewed", "done"]);
    assert_eq!(history.fired("ijoin"), 1);
    for boundary in ["any", "fraud", "dup", "dup_inner"] {
        assert_eq!(spawns(&history, boundary), 0);
    }
}

/// A plain failure inside (a user task failed through the handle) is no BPMN error:
/// the catch-all error boundary on `handle` lets it through and the instance fails
/// with `TaskFailed`, everything else cancelled.
#[tokio::test(start_paused = true)]
async fn a_plain_failure_inside_is_not_caught_by_an_error_boundary() {
    let engine = Engine::new();
    let (handle, _) = start_errors(&engine, "").await;
    handle
        .fail_work("sign", "no signature")
        .await
        .expect("sign is open");
    let (outcome, history) = finish(&handle).await;
    assert_eq!(
        common::failed(outcome, &history),
        InstanceError::TaskFailed {
            node: "sign",
            message: "no signature".into()
        }
    );
    assert_eq!(spawns(&history, "any"), 0);
    assert_eq!(
        cancelled(&history),
        [
            (0, "handle"),
            (1, "review"),
            (2, "inner"),
            (3, "pay"),
            (4, "sign")
        ],
        "{history}"
    );
    assert_eq!(
        steps(&history)[errors_prefix().len()],
        (
            4,
            "sign",
            Happening::Failed {
                message: "no signature".into()
            }
        )
    );
}

process! {
    /// Errors nobody catches: from `pay` two scopes down, or from the error end event
    /// `bang`; a `FRAUD` boundary and a catch-all escalation boundary do not match.
    UNCAUGHT: Claim {
        start begin;
        subprocess handle {
            start    hs;
            parallel hfork;
            user     review;
            subprocess inner {
                start     is;
                task      pay = pay;
                exclusive ix;
                end       bang: error("BANG");
                end       ie;
                is -> pay -> ix;
                ix -> bang when |c| c.want_x;
                ix -> ie else;
            }
            end      reviewed;
            end      paid;
            hs -> hfork -> review, inner;
            review -> reviewed;
            inner -> paid;
        }
        boundary fraud on handle: error("FRAUD");
        boundary esc on handle: escalation;
        end   done;
        end   fraud_end;
        end   esc_end;
        begin -> handle -> done;
        fraud -> fraud_end;
        esc -> esc_end;
    }
}

/// An error nobody catches fails the instance with `UncaughtError` naming the node
/// that threw it — the task two scopes down, with its message; or an error end event
/// inside, with none — and every track is cancelled, the user task withdrawn. The
/// `FRAUD` error boundary and the catch-all escalation boundary do not catch it.
#[tokio::test(start_paused = true)]
async fn an_uncaught_error_from_inside_fails_the_instance() {
    let engine = Engine::new();
    for (code, want_x, error) in [
        (
            "NOPE",
            false,
            InstanceError::UncaughtError {
                node: "pay",
                code: "NOPE".into(),
                message: "uncaught refused".into(),
            },
        ),
        (
            "",
            true,
            InstanceError::UncaughtError {
                node: "bang",
                code: "BANG".into(),
                message: String::new(),
            },
        ),
    ] {
        let handle = engine
            .start(
                &UNCAUGHT,
                Claim {
                    code: code.into(),
                    secs: 1,
                    want_x,
                    ..claim("uncaught")
                },
            )
            .await
            .unwrap();
        expect_open_work(&handle, "review").await;
        let (outcome, history) = finish(&handle).await;
        assert_eq!(common::failed(outcome, &history), error);
        let thrower = match &error {
            InstanceError::UncaughtError { node, .. } => *node,
            _ => unreachable!(),
        };
        let thrown = at(
            &history,
            thrower,
            &error_thrown(if want_x { "BANG" } else { code }),
        );
        // After the throw, only cancellations: the waiting tracks of every scope,
        // and the thrower's.
        let mut after: Vec<_> = steps(&history)[thrown + 1..].to_vec();
        after.sort_by_key(|r| r.0);
        assert_eq!(
            after,
            [
                (0, "handle", Happening::Cancelled),
                (1, "review", Happening::Cancelled),
                (2, "inner", Happening::Cancelled),
                (3, thrower, Happening::Cancelled),
            ],
            "{history}"
        );
        assert!(handle.open_work().await.is_empty());
        assert_eq!(spawns(&history, "fraud") + spawns(&history, "esc"), 0);
        // The error end event came after `pay` committed.
        assert_eq!(handle.data().await.expect("data").a, u32::from(want_x));
    }
}

process! {
    /// An error end event inside a sub-process, caught by a boundary on it.
    ERROR_END: Claim {
        start s;
        subprocess sub {
            start     s1;
            task      check = |c| async move { c.a += 1; Ok(()) };
            exclusive which;
            end       boom: error("BOOM");
            end       e1;
            s1 -> check -> which;
            which -> boom when |c| c.want_x;
            which -> e1 else;
        }
        boundary boomed on sub: error("BOOM", apply = |c, e: &BpmnError| {
            c.caught = format!("boomed:{}", e.code);
            c.message = e.message.clone();
        });
        end   done;
        end   boom_end;
        s -> sub -> done;
        boomed -> boom_end;
    }
}

/// An error end event inside a sub-process is caught by the error boundary on it,
/// whose `apply` sees the code and an empty message; the inside's commits stay.
/// Without the error, the sub-process completes normally.
#[tokio::test(start_paused = true)]
async fn an_error_end_event_inside_is_caught_by_the_boundary_on_the_sub_process() {
    let engine = Engine::new();
    let data = Claim {
        want_x: true,
        message: "unset".into(),
        ..claim("boom")
    };
    let (outcome, history) = finish(&engine.start(&ERROR_END, data).await.unwrap()).await;
    let data = completed(outcome, &history);
    assert_eq!(
        (data.caught.as_str(), data.message.as_str(), data.a),
        ("boomed:BOOM", "", 1)
    );
    assert_eq!(
        steps(&history),
        [
            (0, "s", Happening::Started),
            (0, "sub", Happening::TaskStarted),
            (1, "s1", spawned(0)),
            (1, "check", Happening::TaskStarted),
            (1, "check", done(&["a"])),
            (1, "which", routed(&["boom"])),
            (1, "boom", error_thrown("BOOM")),
            (1, "boom", Happening::Cancelled),
            (0, "sub", interrupted("boomed")),
            (2, "boomed", spawned(0)),
            (2, "boomed", caught(&["caught", "message"])),
            (2, "boom_end", Happening::Ended),
        ]
    );

    let (outcome, history) = finish(&engine.start(&ERROR_END, claim("fine")).await.unwrap()).await;
    assert_eq!(completed(outcome, &history).a, 1);
    assert_eq!(history.ended_at(), ["e1", "done"]);
    assert_eq!(spawns(&history, "boomed"), 0);
}

/// The most specific catcher of all is the task's own error boundary: `RETRY` from
/// `pay` is caught on `pay` itself, inside `inner`, which goes on (its join then
/// waits for `sign`) — no scope is left and no boundary on a sub-process fires.
#[tokio::test(start_paused = true)]
async fn the_task_s_own_error_boundary_catches_before_any_scope() {
    let engine = Engine::new();
    let (handle, _) = start_errors(&engine, "RETRY").await;
    let history = until_slept(&handle, "the retry reached the join", |h| {
        count(h, "ijoin", &Happening::Waiting) == 1
    })
    .await;
    let rows = steps(&history);
    let mut expected = errors_prefix();
    expected.extend([
        (3, "pay", error_thrown("RETRY")),
        (3, "pay", interrupted("retry")),
        (5, "retry", spawned(3)),
        (5, "retry", caught(&["caught", "message"])),
        (5, "paid", routed(&["ijoin"])),
        (5, "ijoin", Happening::Waiting),
    ]);
    assert_eq!(rows, expected, "{history}");
    let mut work = open_work(&handle).await;
    work.sort_unstable();
    assert_eq!(work, ["review", "sign"]);
    complete(&handle, "sign", |_: &mut Claim| {}).await;
    complete(&handle, "review", |_: &mut Claim| {}).await;
    let (outcome, history) = finish(&handle).await;
    let data = completed(outcome, &history);
    assert_eq!(
        (data.caught.as_str(), data.message.as_str(), data.a),
        ("retry:RETRY", "err-RETRY refused", 0)
    );
    assert_eq!(cancelled(&history), []);
    assert_eq!(history.ended_at(), ["ie", "signed", "reviewed", "done"]);
    for boundary in ["any", "fraud", "dup", "dup_inner"] {
        assert_eq!(spawns(&history, boundary), 0);
    }
}
