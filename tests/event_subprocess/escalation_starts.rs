//! Escalation starts, interrupting and non-interrupting.

use super::*;

process! {
    /// `work` beside a user task; a non-interrupting escalation start for `LATE`, an
    /// interrupting one for `STOP`.
    ESCALATIONS: Order {
        start    begin;
        parallel fork;
        user     review;
        task     work = work;
        parallel join;
        end      done;
        begin -> fork -> review, work;
        review, work -> join -> done;
        event_subprocess on_late {
            start late: non_interrupting escalation("LATE", apply = |o, e: &Escalation| o.caught = format!("late:{}", e.code));
            task  note = note;
            end   noted;
            late -> note -> noted;
        }
        event_subprocess on_stop {
            start stop: escalation("STOP", apply = |o, e: &Escalation| o.caught = format!("stop:{}", e.code));
            end   stopped;
            stop -> stopped;
        }
    }
}

/// Run `ESCALATIONS` with `work` raising `code`.
async fn escalate_with(code: &str, review: bool) -> (Outcome<Order>, History) {
    let engine = Engine::new();
    let data = Order {
        code: code.into(),
        ..order("X-1")
    };
    let handle = engine.start(&ESCALATIONS, data).await.unwrap();
    if review {
        expect_that(&handle, "work ended", |h| {
            count(h, "work", &done(&["worked"])) == 1
        })
        .await;
        complete(&handle, "review", |_| {}).await;
    }
    outcome_of(&handle).await
}

/// A non-interrupting escalation start runs beside the raiser: the task completes
/// (its write lands) and the main path goes on.
#[tokio::test(start_paused = true)]
async fn a_non_interrupting_escalation_start_runs_beside_the_raiser() {
    let (outcome, history) = escalate_with("LATE", true).await;
    let data = completed(outcome, &history);
    assert_eq!(
        (data.caught.as_str(), data.notes, data.worked),
        ("late:LATE", 1, true)
    );
    let at = common::position(&history, "work", |w| *w == escalated("LATE"));
    assert_eq!(
        steps(&history)[at..at + 3],
        [
            (1, "work", escalated("LATE")),
            (2, "late", Happening::Started),
            (1, "work", done(&["worked"])),
        ]
    );
    assert_eq!(count(&history, "late", &caught(&["caught"])), 1);
    assert_eq!(ends(&history, "done"), 1);
}

/// An interrupting escalation start cancels the raiser (its write never lands) and
/// the waiting user task; the instance completes when it ends.
#[tokio::test(start_paused = true)]
async fn an_interrupting_escalation_start_takes_the_process_over() {
    let (outcome, history) = escalate_with("STOP", false).await;
    let data = completed(outcome, &history);
    assert_eq!((data.caught.as_str(), data.worked), ("stop:STOP", false));
    assert_eq!(
        rows(&history),
        vec![
            (0, "begin", Happening::Started),
            (0, "fork", routed(&["review", "work"])),
            (1, "fork", spawned(0)),
            (0, "review", Happening::Parked),
            (1, "work", Happening::TaskStarted),
            (1, "work", escalated("STOP")),
            (0, "review", Happening::Cancelled),
            (1, "work", Happening::Cancelled),
            (2, "stop", Happening::Started),
            (2, "stop", caught(&["caught"])),
            (2, "stopped", Happening::Ended),
        ]
    );
    // An escalation nobody catches is no error.
    let (outcome, history) = escalate_with("ELSE", true).await;
    let data = completed(outcome, &history);
    assert_eq!((data.caught.as_str(), data.worked), ("", true));
}

process! {
    /// Escalations out of a sub-process: a throw `UP` on its way in, an end `STOP` when
    /// `wait` is completed with `code = "STOP"`.
    ESCALATED_UP: Order {
        start begin;
        subprocess work {
            start     w_begin;
            throw     up: escalation("UP");
            user      wait;
            exclusive check;
            end       w_done;
            end       w_stop: escalation("STOP");
            w_begin -> up -> wait -> check;
            check -> w_stop when |o| o.code == "STOP";
            check -> w_done else;
        }
        task after = after;
        end  done;
        begin -> work -> after -> done;
        event_subprocess on_up {
            start heard: non_interrupting escalation("UP", apply = |o, e: &Escalation| o.caught = format!("up:{}", e.code));
            task  note = note;
            end   noted;
            heard -> note -> noted;
        }
        event_subprocess on_stop {
            start stop: escalation("STOP", apply = |o, e: &Escalation| o.caught.push_str(&format!("+stop:{}", e.code)));
            end   stopped;
            stop -> stopped;
        }
    }
}

/// Escalations out of a sub-process reach the process's starts: a throw on the way
/// in runs the non-interrupting one beside (the sub-process goes on); an escalation
/// end, later, the interrupting one, which cancels the sub-process's token.
#[tokio::test(start_paused = true)]
async fn escalations_from_a_sub_process_reach_the_process_starts() {
    let engine = Engine::new();
    let handle = engine.start(&ESCALATED_UP, order("X-2")).await.unwrap();
    complete(&handle, "wait", |_| {}).await;
    let (outcome, history) = outcome_of(&handle).await;
    let data = completed(outcome, &history);
    assert_eq!(
        (data.caught.as_str(), data.notes, data.after),
        ("up:UP", 1, 1)
    );
    assert_eq!(runs(&history, "stop"), 0);

    let handle = engine.start(&ESCALATED_UP, order("X-3")).await.unwrap();
    complete(&handle, "wait", |o| o.code = "STOP".into()).await;
    let (outcome, history) = outcome_of(&handle).await;
    let data = completed(outcome, &history);
    assert_eq!(
        (data.caught.as_str(), data.notes, data.after),
        ("up:UP+stop:STOP", 1, 0)
    );
    assert_eq!(count(&history, "w_stop", &escalated("STOP")), 1);
    assert_eq!(count(&history, "work", &Happening::Cancelled), 1);
    assert_eq!(count(&history, "w_stop", &Happening::Cancelled), 1);
}
