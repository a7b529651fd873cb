//! Error starts: by code and catch-all, from nested sub-processes and from event
//! sub-processes; a task's own boundary first.

use super::*;

// ----- error starts ----------------------------------------------------------------

process! {
    /// `charge` beside a user task; error starts for every code (declared first) and
    /// for `DECLINED`.
    ERRORS: Order {
        start    begin;
        parallel fork;
        task     charge = charge;
        user     review;
        parallel join;
        end      done;
        begin -> fork -> charge, review;
        charge, review -> join -> done;
        event_subprocess on_any {
            start any: error(apply = |o, e: &BpmnError| o.caught = format!("any:{}:{}", e.code, e.message));
            end   any_end;
            any -> any_end;
        }
        event_subprocess on_declined {
            start declined: error("DECLINED", apply = |o, e: &BpmnError| o.caught = format!("declined:{}:{}", e.code, e.message));
            task  undo = undo;
            end   declined_end;
            declined -> undo -> declined_end;
        }
    }
}

/// Run `ERRORS` with `charge` ending with `code`.
async fn charge_with(engine: &Engine, code: &str) -> (Outcome<Order>, History) {
    let data = Order {
        code: code.into(),
        ..order("E-1")
    };
    let handle = engine.start(&ERRORS, data).await.unwrap();
    if code.is_empty() {
        complete(&handle, "review", |_| {}).await;
    }
    outcome_of(&handle).await
}

/// A task's BPMN error at the top level is caught by the error start naming its code,
/// though a catch-all is declared first: the waiting user task is cancelled, the
/// failed handler's write never lands, `apply` sees the `BpmnError`.
#[tokio::test(start_paused = true)]
async fn an_error_start_catches_a_tasks_error_preferring_its_code() {
    let engine = Engine::new();
    let (outcome, history) = charge_with(&engine, "DECLINED").await;
    let data = completed(outcome, &history);
    assert_eq!(
        (data.caught.as_str(), data.undone, data.worked),
        ("declined:DECLINED:E-1 refused", 1, false)
    );
    assert_eq!(
        rows(&history),
        vec![
            (0, "begin", Happening::Started),
            (0, "fork", routed(&["charge", "review"])),
            (1, "fork", spawned(0)),
            (0, "charge", Happening::TaskStarted),
            (1, "review", Happening::Parked),
            (0, "charge", error_thrown("DECLINED")),
            (0, "charge", Happening::Cancelled),
            (1, "review", Happening::Cancelled),
            (2, "declined", Happening::Started),
            (2, "declined", caught(&["caught"])),
            (2, "undo", Happening::TaskStarted),
            (2, "undo", done(&["undone"])),
            (2, "declined_end", Happening::Ended),
        ]
    );
}

/// Another code goes to the catch-all start; no error, no event sub-process.
#[tokio::test(start_paused = true)]
async fn a_catch_all_error_start_catches_other_codes() {
    let engine = Engine::new();
    let (outcome, history) = charge_with(&engine, "OTHER").await;
    let data = completed(outcome, &history);
    assert_eq!(
        (data.caught.as_str(), data.undone, data.worked),
        ("any:OTHER:E-1 refused", 0, false)
    );
    assert_eq!((runs(&history, "any"), runs(&history, "declined")), (1, 0));
    assert_eq!(count(&history, "review", &Happening::Cancelled), 1);

    let (outcome, history) = charge_with(&engine, "").await;
    let data = completed(outcome, &history);
    assert_eq!((data.caught.as_str(), data.worked), ("", true));
    assert_eq!((runs(&history, "any"), runs(&history, "declined")), (0, 0));
}

process! {
    /// `charge` two sub-processes deep; `OUTER` is caught in the outer sub-process,
    /// `TOP` at the top level, anything else nowhere.
    NESTED: Order {
        start begin;
        subprocess outer {
            start o_begin;
            subprocess inner {
                start i_begin;
                task  charge = charge;
                end   i_done;
                i_begin -> charge -> i_done;
            }
            end o_done;
            o_begin -> inner -> o_done;
            event_subprocess on_outer_error {
                start outer_error: error("OUTER", apply = |o, e: &BpmnError| o.caught = format!("outer:{}:{}", e.code, e.message));
                task  undo = undo;
                end   outer_mended;
                outer_error -> undo -> outer_mended;
            }
        }
        task after = after;
        end  done;
        begin -> outer -> after -> done;
        event_subprocess on_top_error {
            start top_error: error("TOP", apply = |o, e: &BpmnError| o.caught = format!("top:{}:{}", e.code, e.message));
            end   top_mended;
            top_error -> top_mended;
        }
    }
}

/// Run `NESTED` with `charge` (two sub-processes deep) ending with `code`.
async fn nested_with(code: &str) -> (Outcome<Order>, History) {
    let engine = Engine::new();
    let data = Order {
        code: code.into(),
        ..order("E-2")
    };
    outcome_of(&engine.start(&NESTED, data).await.unwrap()).await
}

/// An error from the inner sub-process travels out to the error start of the
/// enclosing sub-process: the inner one is cancelled with its token, the outer one
/// completes when its event sub-process ends, and the token goes on after it.
#[tokio::test(start_paused = true)]
async fn an_error_from_a_nested_sub_process_is_caught_by_the_enclosing_one() {
    let (outcome, history) = nested_with("OUTER").await;
    let data = completed(outcome, &history);
    assert_eq!(
        (data.caught.as_str(), data.undone, data.after, data.worked),
        ("outer:OUTER:E-2 refused", 1, 1, false)
    );
    assert_eq!(
        rows(&history),
        vec![
            (0, "begin", Happening::Started),
            (0, "outer", Happening::TaskStarted),
            (1, "o_begin", spawned(0)),
            (1, "inner", Happening::TaskStarted),
            (2, "i_begin", spawned(1)),
            (2, "charge", Happening::TaskStarted),
            (2, "charge", error_thrown("OUTER")),
            (1, "inner", Happening::Cancelled),
            (2, "charge", Happening::Cancelled),
            (3, "outer_error", Happening::Started),
            (3, "outer_error", caught(&["caught"])),
            (3, "undo", Happening::TaskStarted),
            (3, "undo", done(&["undone"])),
            (3, "outer_mended", Happening::Ended),
            (0, "outer", done(&[])),
            (0, "after", Happening::TaskStarted),
            (0, "after", done(&["after"])),
            (0, "done", Happening::Ended),
        ]
    );
}

/// An error two scopes up is caught by the process's error start: everything is
/// cancelled, the instance completes when it ends; an error nobody catches fails
/// the instance.
#[tokio::test(start_paused = true)]
async fn an_error_from_two_scopes_down_is_caught_at_the_top_or_fails_the_instance() {
    let (outcome, history) = nested_with("TOP").await;
    let data = completed(outcome, &history);
    assert_eq!(
        (data.caught.as_str(), data.undone, data.after),
        ("top:TOP:E-2 refused", 0, 0)
    );
    let mut cancelled: Vec<(u32, &str)> = steps(&history)
        .into_iter()
        .filter(|r| r.2 == Happening::Cancelled)
        .map(|r| (r.0, r.1))
        .collect();
    cancelled.sort_unstable();
    assert_eq!(cancelled, [(0, "outer"), (1, "inner"), (2, "charge")]);
    assert_eq!(ends(&history, "top_mended"), 1);
    assert_eq!(history.steps().last().unwrap().node, "top_mended");

    let (outcome, history) = nested_with("NOPE").await;
    assert_eq!(
        failed(outcome, &history),
        InstanceError::UncaughtError {
            node: "charge",
            code: "NOPE".into(),
            message: "E-2 refused".into(),
        }
    );
    assert_eq!(
        (runs(&history, "outer_error"), runs(&history, "top_error")),
        (0, 0)
    );
}

process! {
    /// An error `OOPS` thrown by an event sub-process (`on_poke`, `on_top_poke`) or on
    /// the sub-process's own path (`wait` completed with `code = "OOPS"`).
    SIBLING: Order {
        start begin;
        subprocess work {
            start     w_begin;
            user      wait;
            exclusive check;
            end       w_done;
            end       w_boom: error("OOPS");
            w_begin -> wait -> check;
            check -> w_boom when |o| o.code == "OOPS";
            check -> w_done else;
            event_subprocess on_poke {
                start poke: non_interrupting signal("poke");
                end   boom: error("OOPS");
                poke -> boom;
            }
            event_subprocess on_work_error {
                start work_error: error("OOPS", apply = |o, e: &BpmnError| o.caught = format!("work:{}", e.code));
                end   work_mended;
                work_error -> work_mended;
            }
        }
        task after = after;
        end  done;
        begin -> work -> after -> done;
        event_subprocess on_top_error {
            start top_error: error(apply = |o, e: &BpmnError| o.caught = format!("top:{}", e.code));
            end   top_mended;
            top_error -> top_mended;
        }
        event_subprocess on_top_poke {
            start top_poke: non_interrupting signal("top_poke");
            end   top_boom: error("OOPS");
            top_poke -> top_boom;
        }
    }
}

/// An error the sub-process's own path throws (an error end) is caught by its error
/// start; the same code thrown inside one of its event sub-processes is not caught
/// by that sibling but goes on up, to the process's catch-all.
#[tokio::test(start_paused = true)]
async fn an_error_from_an_event_sub_process_skips_its_siblings() {
    let engine = Engine::new();
    let handle = engine.start(&SIBLING, order("E-3")).await.unwrap();
    complete(&handle, "wait", |o| o.code = "OOPS".into()).await;
    let (outcome, history) = outcome_of(&handle).await;
    let data = completed(outcome, &history);
    assert_eq!((data.caught.as_str(), data.after), ("work:OOPS", 1));
    assert_eq!(runs(&history, "work_error"), 1);

    let handle = engine.start(&SIBLING, order("E-4")).await.unwrap();
    expect_open_work(&handle, "wait").await;
    assert_eq!(engine.broadcast_signal("poke", ()).await.unwrap(), 1);
    let (outcome, history) = outcome_of(&handle).await;
    let data = completed(outcome, &history);
    assert_eq!((data.caught.as_str(), data.after), ("top:OOPS", 0));
    assert_eq!(
        (runs(&history, "work_error"), runs(&history, "top_error")),
        (0, 1)
    );
    assert_eq!(count(&history, "wait", &Happening::Cancelled), 1);
    assert_eq!(count(&history, "boom", &error_thrown("OOPS")), 1);
}

/// At the top level an error thrown inside an event sub-process has nowhere to go
/// (its sibling catch-all does not catch it): the instance fails with it.
#[tokio::test(start_paused = true)]
async fn an_error_from_a_top_level_event_sub_process_fails_the_instance() {
    let engine = Engine::new();
    let handle = engine.start(&SIBLING, order("E-5")).await.unwrap();
    expect_open_work(&handle, "wait").await;
    assert_eq!(engine.broadcast_signal("top_poke", ()).await.unwrap(), 1);
    let (outcome, history) = outcome_of(&handle).await;
    assert_eq!(
        failed(outcome, &history),
        InstanceError::UncaughtError {
            node: "top_boom",
            code: "OOPS".into(),
            message: String::new(),
        }
    );
    assert_eq!(runs(&history, "top_error"), 0);
}

process! {
    /// `charge` has an error boundary of its own for `DECLINED`; the process has a
    /// catch-all error start.
    BOUNDARY_FIRST: Order {
        start    begin;
        task     charge = charge;
        boundary refused on charge: error("DECLINED", apply = |o, e: &BpmnError| o.caught = format!("boundary:{}", e.code));
        end      done;
        end      refused_end;
        begin -> charge -> done;
        refused -> refused_end;
        event_subprocess on_any {
            start any: error(apply = |o, e: &BpmnError| o.caught = format!("any:{}", e.code));
            end   any_end;
            any -> any_end;
        }
    }
}

/// A task's own error boundary catches before any error start; an error it does not
/// catch goes on to the process's catch-all start.
#[tokio::test(start_paused = true)]
async fn an_error_boundary_on_the_task_catches_before_an_error_start() {
    let engine = Engine::new();
    for (code, caught, end) in [
        ("DECLINED", "boundary:DECLINED", "refused_end"),
        ("OTHER", "any:OTHER", "any_end"),
    ] {
        let data = Order {
            code: code.into(),
            ..order("N-4")
        };
        let (outcome, history) =
            outcome_of(&engine.start(&BOUNDARY_FIRST, data).await.unwrap()).await;
        let data = completed(outcome, &history);
        assert_eq!(data.caught, caught);
        assert_eq!(ends(&history, end), 1, "{history}");
        assert_eq!(runs(&history, "any"), usize::from(code == "OTHER"));
    }
}
