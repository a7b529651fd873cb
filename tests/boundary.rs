//! Boundary events, errors and escalations at run time (ADR-006 §2.2, §2.3, §2.6).
//!
//! - errors: caught by the error boundary with the exact code, else by one without a
//!   code (the exact one preferred, whatever the declaration order); the error reaches
//!   the boundary's `apply`; the failed handler's writes are dropped; a plain failure
//!   is no BPMN error; uncaught, the instance fails with `UncaughtError`; an error end
//!   event fails it too;
//! - escalations: a non-interrupting boundary starts a token and the task completes;
//!   an interrupting one stops the task; uncaught, the task completes (no error);
//!   escalation throw and end events;
//! - timers, on the paused clock: an interrupting timer stops a task whose handler
//!   never finishes (the handler is dropped) while a non-interrupting cycle fires
//!   every period until then; cycles with and without `times`; a one-off
//!   non-interrupting timer; a timer boundary on a user task fires, or is gone once
//!   the task is done; a timer and the task's end due at the same instant: exactly
//!   one wins;
//! - a late report: a handler that cannot be stopped finishes after its activity was
//!   interrupted; its report is ignored and its writes never land;
//! - message and signal boundaries, interrupting and non-interrupting, on a receive
//!   task and on a user task; they live exactly as long as the activity (afterwards a
//!   signal reaches no catcher and a message is buffered); a non-interrupting message
//!   boundary racing the activity's end loses no message;
//! - a message boundary correlates on the current data (a stale key's message is
//!   dropped and counted, the boundary subscribes again under the new key);
//! - a retry loop: an error boundary links back to its task, armed anew each time;
//! - a token started by a non-interrupting boundary outlives a later interruption;
//! - cancel, terminate and shutdown while boundaries are armed leave no subscription,
//!   also with a storm of boundary signals racing the cancel.
//!
//! One ignored test pins an engine bug: a `times = 0` cycle fires once.
//!
//! Concurrent scenarios run on a four-worker multi-thread runtime, 200 times each;
//! scenarios with signals use an engine per run (a signal reaches every instance of
//! its engine).

// `i.is_multiple_of(n)` needs Rust 1.87; the workspace's MSRV is 1.85.
#![allow(clippy::manual_is_multiple_of)]

#[macro_use]
mod common;

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use common::*;
use thresh::events::{BpmnError, Escalation};
use thresh::{
    process, BrokerStats, Engine, Happening, InstanceError, Outcome, ProcessData, Published,
    TaskError, WorkError,
};
use tokio::time::Instant;

#[derive(Clone, Debug, Default, PartialEq, ProcessData)]
struct Job {
    id: String,
    /// What `charge` and `work` end with: "" is `Ok`, "PLAIN" a plain failure, any
    /// other code a BPMN error (`charge`) or an escalation (`work`).
    code: String,
    /// `charge` and `work` yield a few times first.
    slow: bool,
    /// Written by `charge` and `work` before they end.
    worked: bool,
    /// Which boundary caught what, written by the boundaries' `apply`.
    caught: String,
    message: String,
    notified: u32,
    amount: u64,
    reason: String,
    rounds: u32,
    secs: u64,
    /// The correlation key of `REKEYED`'s message boundary.
    key: String,
    /// How many attempts `RETRY`'s `charge` fails before it succeeds.
    limit: u32,
}

fn job(id: impl Into<String>) -> Job {
    Job {
        id: id.into(),
        ..Job::default()
    }
}

fn job_with(id: impl Into<String>, code: &str, slow: bool) -> Job {
    Job {
        code: code.into(),
        slow,
        ..job(id)
    }
}

async fn charge(j: &mut Job) -> Result<(), TaskError> {
    if j.slow {
        yield_jitter().await;
        tokio::task::yield_now().await;
    }
    j.worked = true;
    match j.code.as_str() {
        "" => Ok(()),
        "PLAIN" => Err(TaskError::new("plain failure")),
        code => Err(TaskError::bpmn(code, format!("{} refused", j.id))),
    }
}

async fn work(j: &mut Job) -> Result<(), TaskError> {
    if j.slow {
        yield_jitter().await;
        tokio::task::yield_now().await;
    }
    j.worked = true;
    if j.code.is_empty() {
        Ok(())
    } else {
        Err(TaskError::escalate(j.code.clone()))
    }
}

/// Counts the drops of `SLOW`'s never-ending handler.
static SLOW_DROPS: AtomicUsize = AtomicUsize::new(0);

struct CountDrop;

impl Drop for CountDrop {
    fn drop(&mut self) {
        SLOW_DROPS.fetch_add(1, Ordering::SeqCst);
    }
}

/// A gate a `BLOCKING` handler waits at, blocking its thread, so that no abort can
/// stop it: it finishes when the test opens the gate.
#[derive(Default)]
struct Gate {
    entered: AtomicBool,
    open: AtomicBool,
    finished: AtomicBool,
}

fn gates() -> &'static Mutex<HashMap<String, Arc<Gate>>> {
    static GATES: OnceLock<Mutex<HashMap<String, Arc<Gate>>>> = OnceLock::new();
    GATES.get_or_init(Default::default)
}

fn gate(id: &str) -> Arc<Gate> {
    gates()
        .lock()
        .unwrap()
        .entry(id.to_string())
        .or_default()
        .clone()
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

    /// A handler that never finishes, an interrupting timeout and a reminder cycle.
    SLOW: Job {
        start    s;
        task     work = |j| async move {
            let _count = CountDrop;
            std::future::pending::<()>().await;
            j.worked = true;
            Ok(())
        };
        boundary late on work: timer(Duration::from_secs(30));
        boundary tick on work: non_interrupting timer(every = Duration::from_secs(7), times = 10);
        task     ring = |j| async move {
            j.rounds += 1;
            Ok(())
        };
        end      done;
        end      rung;
        end      gave_up;
        s -> work -> done;
        late -> gave_up;
        tick -> ring -> rung;
    }

    /// A task of `secs` seconds with a cycle of three and a one-off reminder.
    CYCLE: Job {
        start    s;
        task     work = |j| async move {
            tokio::time::sleep(Duration::from_secs(j.secs)).await;
            j.worked = true;
            Ok(())
        };
        boundary tick on work: non_interrupting timer(every = Duration::from_secs(10), times = 3);
        boundary once on work: non_interrupting timer(Duration::from_secs(5));
        task     ring = |j| async move {
            j.rounds += 1;
            Ok(())
        };
        task     remind = |j| async move {
            j.notified += 1;
            Ok(())
        };
        end      done;
        end      rung;
        end      reminded;
        s -> work -> done;
        tick -> ring -> rung;
        once -> remind -> reminded;
    }

    /// A task of `secs` seconds with an endless cycle.
    ENDLESS: Job {
        start    s;
        task     work = |j| async move {
            tokio::time::sleep(Duration::from_secs(j.secs)).await;
            j.worked = true;
            Ok(())
        };
        boundary tick on work: non_interrupting timer(every = Duration::from_secs(10));
        task     ring = |j| async move {
            j.rounds += 1;
            Ok(())
        };
        end      done;
        end      rung;
        s -> work -> done;
        tick -> ring -> rung;
    }

    /// A cycle of zero times.
    NO_TIMES: Job {
        start    s;
        task     work = |j| async move {
            tokio::time::sleep(Duration::from_secs(60)).await;
            j.worked = true;
            Ok(())
        };
        boundary tick on work: non_interrupting timer(every = Duration::from_secs(10), times = 0);
        end      done;
        end      rung;
        s -> work -> done;
        tick -> rung;
    }

    /// A task that ends exactly when its timeout is due.
    TIE: Job {
        start    s;
        task     work = |j| async move {
            tokio::time::sleep(Duration::from_secs(30)).await;
            j.worked = true;
            Ok(())
        };
        boundary late on work: timer(Duration::from_secs(30));
        end      done;
        end      gave_up;
        s -> work -> done;
        late -> gave_up;
    }

    /// An error after 5 s, a timeout at 10 s; the error path waits 20 s more.
    ERROR_BEFORE_TIMEOUT: Job {
        start    s;
        task     charge = |j| async move {
            tokio::time::sleep(Duration::from_secs(5)).await;
            j.worked = true;
            Err(TaskError::bpmn("DECLINED", "declined after 5 s"))
        };
        boundary late on charge: timer(Duration::from_secs(10));
        boundary declined on charge: error("DECLINED");
        catch    cool_off: timer(Duration::from_secs(20));
        end      done;
        end      gave_up;
        end      declined_end;
        s -> charge -> done;
        late -> gave_up;
        declined -> cool_off -> declined_end;
    }

    /// A user task with an hour's deadline, then another user task.
    DEADLINE: Job {
        start    s;
        user     approve;
        boundary expire on approve: timer(Duration::from_secs(3600));
        user     next;
        end      done;
        end      expired;
        s -> approve -> next -> done;
        expire -> expired;
    }

    /// A handler that blocks its thread until the test opens its gate; a message
    /// interrupts it meanwhile.
    BLOCKING: Job {
        start    s;
        task     work = |j| async move {
            tokio::task::yield_now().await;
            let gate = gate(&j.id);
            tokio::task::block_in_place(|| {
                gate.entered.store(true, Ordering::SeqCst);
                while !gate.open.load(Ordering::SeqCst) {
                    std::thread::sleep(Duration::from_micros(200));
                }
            });
            j.worked = true;
            gate.finished.store(true, Ordering::SeqCst);
            Ok(())
        };
        boundary stop on work: message("stop", key = |j| j.id.clone(), apply = |j, why: &String| j.reason = why.clone());
        user     confirm;
        end      done;
        end      stopped;
        s -> work -> done;
        stop -> confirm -> stopped;
    }

    /// A receive task with every kind of message and signal boundary.
    RECEIVE: Job {
        start    s;
        receive  take: message("order", key = |j| j.id.clone(), apply = |j, n: &u64| j.amount = *n);
        boundary nudge on take: non_interrupting message("nudge", key = |j| j.id.clone());
        boundary poke on take: non_interrupting signal("poke");
        boundary revoke on take: message("revoke", key = |j| j.id.clone(), apply = |j, why: &String| j.reason = why.clone());
        boundary cancel on take: signal("cancel", apply = |j, why: &String| j.reason = why.clone());
        user     after;
        end      done;
        end      nudged;
        end      poked;
        s -> take -> after -> done;
        revoke -> after;
        cancel -> after;
        nudge -> nudged;
        poke -> poked;
    }

    /// A user task with every kind of message and signal boundary.
    REVIEW: Job {
        start    s;
        user     review;
        boundary nudge on review: non_interrupting message("nudge", key = |j| j.id.clone());
        boundary poke on review: non_interrupting signal("poke");
        boundary revoke on review: message("revoke", key = |j| j.id.clone(), apply = |j, why: &String| j.reason = why.clone());
        boundary cancel on review: signal("cancel", apply = |j, why: &String| j.reason = why.clone());
        user     after;
        end      done;
        end      nudged;
        end      poked;
        s -> review -> after -> done;
        revoke -> after;
        cancel -> after;
        nudge -> nudged;
        poke -> poked;
    }

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

    /// Boundaries of every kind armed on a user task and on a never-ending task;
    /// `kill` terminates.
    ARMED: Job {
        start    s;
        parallel fork;
        user     review;
        boundary ping on review: non_interrupting signal("ping");
        boundary recall on review: message("recall", key = |j| j.id.clone());
        boundary late on review: timer(Duration::from_secs(3600));
        boundary hot on review: non_interrupting condition(|j| j.rounds > 100, on = [rounds]);
        task     work = |j| async move {
            std::future::pending::<()>().await;
            j.worked = true;
            Ok(())
        };
        boundary work_ping on work: non_interrupting signal("ping");
        boundary work_recall on work: message("work_recall", key = |j| j.id.clone());
        user     kill;
        end      killed: terminate;
        end      reviewed;
        end      pinged;
        end      recalled;
        end      late_end;
        end      hot_end;
        end      worked_end;
        end      work_pinged;
        end      work_recalled;
        s -> fork -> review, work, kill;
        kill -> killed;
        review -> reviewed;
        ping -> pinged;
        recall -> recalled;
        late -> late_end;
        hot -> hot_end;
        work -> worked_end;
        work_ping -> work_pinged;
        work_recall -> work_recalled;
    }
}

// ----- errors ------------------------------------------------------------------------

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

/// An error is caught by the boundary with its exact code, even though the catch-all
/// is declared first; any other code by the catch-all; the error reaches the
/// boundary's `apply` (code and message); the failed handler's writes are dropped.
/// Handlers end at once (on the loop) or after yielding (on their track).
async fn an_error_is_caught_by_the_best_matching_boundary(i: usize) {
    let engine = Engine::new();
    let id = format!("err-{i}");
    let code = ["", "DECLINED", "FRAUD", "declined"][i % 4];
    let data = job_with(&id, code, i / 4 % 2 == 1);
    let (outcome, history) = finish_strict(&engine.start(&ERRORS, data.clone())).await;
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
    let engine = Engine::new();
    for slow in [false, true] {
        let (outcome, history) =
            finish_strict(&engine.start(&ERRORS, job_with("plain", "PLAIN", slow))).await;
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

/// An error no boundary matches fails the instance with `UncaughtError`, naming the
/// task, the code and the handler's message; an escalation boundary catches no error.
/// A matching code is caught.
async fn an_uncaught_error_fails_the_instance(i: usize) {
    let engine = Engine::new();
    let id = format!("uncaught-{i}");
    let slow = i % 2 == 1;
    let handle = engine.start(&UNCAUGHT, job_with(&id, "DECLINED", slow));
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

    let (outcome, history) =
        finish_strict(&engine.start(&UNCAUGHT, job_with(&id, "OTHER", slow))).await;
    completed(outcome, &history);
    assert_eq!(history.ended_at(), ["other_end"]);
    assert_eq!(spawns(&history, "esc"), 0);
}

multi_thread!(RUNS => an_uncaught_error_fails_the_instance);

/// An error end event fails the instance with `UncaughtError` naming the end event,
/// with an empty message; the other branch (a user task with a timer boundary) is
/// cancelled and its work withdrawn. Otherwise the instance waits for the user task.
#[tokio::test(start_paused = true)]
async fn an_error_end_event_fails_the_instance() {
    let engine = Engine::new();
    let handle = engine.start(
        &ERROR_END,
        Job {
            code: "BOOM".into(),
            ..job("boom")
        },
    );
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
    let handle = engine.start(&ERROR_END, job("fine"));
    let (outcome, history) = finish_strict_in(&handle, DAY).await;
    completed(outcome, &history);
    assert_eq!(history.ended_at(), ["fine", "late_end"]);
    assert_eq!(count(&history, "wait", &interrupted("late")), 1);
}

// ----- escalations -------------------------------------------------------------------

/// Escalations by code: `LATE` — the non-interrupting boundary starts a token and the
/// task completes too (its writes kept); `STOP` — the interrupting one stops the task
/// (its writes dropped); `OTHER` — caught by nothing: the task completes and the
/// instance with it, the history shows the escalation.
async fn escalations_by_code(i: usize) {
    let engine = Engine::new();
    let code = ["LATE", "STOP", "OTHER"][i % 3];
    let id = format!("esc-{i}");
    let data = job_with(&id, code, i / 3 % 2 == 1);
    let (outcome, history) = finish_strict(&engine.start(&ESCALATE, data.clone())).await;
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

/// A catch-all escalation boundary catches any code; the one with the exact code is
/// preferred, though declared second.
#[tokio::test(start_paused = true)]
async fn an_escalation_goes_to_the_best_matching_boundary() {
    let engine = Engine::new();
    for (code, boundary, end) in [("LATE", "late", "late_end"), ("WHATEVER", "any", "any_end")] {
        let (outcome, history) = finish_strict_in(
            &engine.start(&ESCALATE_ANY, job_with("any", code, false)),
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

/// Escalation throw and end events: uncaught, which is no error — the token goes on
/// (or ends) and the instance completes, the history showing both escalations.
#[tokio::test(start_paused = true)]
async fn escalation_events_are_no_error() {
    let engine = Engine::new();
    let (outcome, history) =
        finish_strict_in(&engine.start(&ESCALATION_EVENTS, job("events")), DAY).await;
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

// ----- timers (paused clock) ---------------------------------------------------------

/// The history of a reminder (`tick -> ring -> rung`) on track `track`.
fn ring_rows(
    track: u32,
    boundary: &'static str,
    task: &'static str,
    field: &'static str,
    end: &'static str,
) -> [Row; 5] {
    [
        (track, boundary, spawned(0)),
        (track, boundary, caught(&[])),
        (track, task, Happening::TaskStarted),
        (track, task, done(&[field])),
        (track, end, Happening::Ended),
    ]
}

/// A handler that never finishes is stopped by its 30 s timeout; meanwhile the
/// 7 s reminder cycle fired at 7, 14, 21 and 28 s — four times of its ten. The
/// handler's future is dropped, its write never lands, and the instance ends at
/// 30 s exactly.
#[tokio::test(start_paused = true)]
async fn a_timer_boundary_interrupts_a_handler_that_never_finishes() {
    let engine = Engine::new();
    let t0 = Instant::now();
    let handle = engine.start(&SLOW, job("slow"));
    let (outcome, history) = finish_strict_in(&handle, DAY).await;
    assert_eq!(t0.elapsed(), Duration::from_secs(30));
    let data = completed(outcome, &history);
    assert_eq!((data.rounds, data.worked), (4, false));
    let mut rows = vec![
        (0, "s", Happening::Started),
        (0, "work", Happening::TaskStarted),
    ];
    for k in 1..=4 {
        rows.extend(ring_rows(k, "tick", "ring", "rounds", "rung"));
    }
    rows.extend([
        (0, "work", interrupted("late")),
        (5, "late", spawned(0)),
        (5, "late", caught(&[])),
        (5, "gave_up", Happening::Ended),
    ]);
    assert_eq!(steps(&history), rows);
    assert_eq!(
        SLOW_DROPS.load(Ordering::SeqCst),
        1,
        "the handler was dropped once"
    );
    // Nothing fires later: the cycle went with the activity (and the instance).
    tokio::time::sleep(Duration::from_secs(3600)).await;
    assert_eq!(handle.history().await, history);
}

/// A non-interrupting cycle of three fires exactly min(3, whole periods) times while
/// its task runs, and a one-off non-interrupting timer once; the task then completes
/// normally, at its own time.
#[tokio::test(start_paused = true)]
async fn cycle_boundaries_fire_exactly_as_often_as_they_say() {
    let engine = Engine::new();
    for (secs, ticks, once) in [(100_u64, 3_u32, 1_u32), (25, 2, 1), (4, 0, 0), (35, 3, 1)] {
        let t0 = Instant::now();
        let data = Job {
            secs,
            ..job("cycle")
        };
        let (outcome, history) = finish_strict_in(&engine.start(&CYCLE, data), DAY).await;
        assert_eq!(t0.elapsed(), Duration::from_secs(secs));
        let data = completed(outcome, &history);
        assert_eq!(
            (data.rounds, data.notified, data.worked),
            (ticks, once, true),
            "{secs} s\n{history}"
        );
        // Firings at 5 (once), then 10, 20, 30 (tick), in time order.
        let mut rows = vec![
            (0, "s", Happening::Started),
            (0, "work", Happening::TaskStarted),
        ];
        let mut track = 1;
        if once == 1 {
            rows.extend(ring_rows(track, "once", "remind", "notified", "reminded"));
            track += 1;
        }
        for _ in 0..ticks {
            rows.extend(ring_rows(track, "tick", "ring", "rounds", "rung"));
            track += 1;
        }
        rows.extend([
            (0, "work", done(&["worked"])),
            (0, "done", Happening::Ended),
        ]);
        assert_eq!(steps(&history), rows, "{secs} s");
    }
}

/// A cycle without `times` fires every period for as long as its task runs.
#[tokio::test(start_paused = true)]
async fn an_endless_cycle_fires_every_period_while_its_task_runs() {
    let engine = Engine::new();
    for (secs, ticks) in [(55_u64, 5_u32), (101, 10), (9, 0)] {
        let t0 = Instant::now();
        let data = Job {
            secs,
            ..job("endless")
        };
        let (outcome, history) = finish_strict_in(&engine.start(&ENDLESS, data), DAY).await;
        assert_eq!(t0.elapsed(), Duration::from_secs(secs));
        assert_eq!(completed(outcome, &history).rounds, ticks);
        assert_eq!(spawns(&history, "tick"), ticks as usize);
        assert_eq!(completions(&history, "work"), 1);
    }
}

/// `times = 0`: the cycle never fires.
#[tokio::test(start_paused = true)]
async fn a_cycle_of_zero_times_never_fires() {
    let engine = Engine::new();
    let (outcome, history) = finish_strict_in(&engine.start(&NO_TIMES, job("zero")), DAY).await;
    completed(outcome, &history);
    assert_eq!(spawns(&history, "tick"), 0, "{history}");
}

/// The task ends exactly when its timeout is due: exactly one of them wins, and the
/// history and data agree on which.
#[tokio::test(start_paused = true)]
async fn a_timeout_due_as_the_task_ends_has_one_winner() {
    let engine = Engine::new();
    let runs: Vec<_> = (0..RUNS)
        .map(|i| engine.start(&TIE, job(format!("tie-{i}"))))
        .collect();
    for handle in &runs {
        let (outcome, history) = finish_strict_in(handle, DAY).await;
        let data = completed(outcome, &history);
        let rows = steps(&history);
        if data.worked {
            assert_eq!(
                rows,
                [
                    (0, "s", Happening::Started),
                    (0, "work", Happening::TaskStarted),
                    (0, "work", done(&["worked"])),
                    (0, "done", Happening::Ended),
                ]
            );
        } else {
            assert_eq!(
                rows,
                [
                    (0, "s", Happening::Started),
                    (0, "work", Happening::TaskStarted),
                    (0, "work", interrupted("late")),
                    (1, "late", spawned(0)),
                    (1, "late", caught(&[])),
                    (1, "gave_up", Happening::Ended),
                ]
            );
        }
    }
}

/// An error at 5 s is caught and the 10 s timeout goes with the activity: the
/// instance is still alive at 10 s (cooling off) and nothing fires then.
#[tokio::test(start_paused = true)]
async fn an_error_boundary_disarms_the_timer_boundary() {
    let engine = Engine::new();
    let t0 = Instant::now();
    let (outcome, history) =
        finish_strict_in(&engine.start(&ERROR_BEFORE_TIMEOUT, job("e")), DAY).await;
    assert_eq!(t0.elapsed(), Duration::from_secs(25));
    assert!(!completed(outcome, &history).worked);
    assert_eq!(
        steps(&history),
        [
            (0, "s", Happening::Started),
            (0, "charge", Happening::TaskStarted),
            (0, "charge", error_thrown("DECLINED")),
            (0, "charge", interrupted("declined")),
            (1, "declined", spawned(0)),
            (1, "declined", caught(&[])),
            (1, "cool_off", Happening::Parked),
            (1, "cool_off", caught(&[])),
            (1, "declined_end", Happening::Ended),
        ]
    );
}

/// A timer boundary on a user task: nobody approves within the hour, so it fires at
/// the hour and the work is withdrawn.
#[tokio::test(start_paused = true)]
async fn a_timer_boundary_withdraws_a_user_task() {
    let engine = Engine::new();
    let t0 = Instant::now();
    let handle = engine.start(&DEADLINE, job("late"));
    open(&handle, "approve").await;
    tokio::time::sleep(Duration::from_secs(3599)).await;
    assert_eq!(handle.open_work().await.len(), 1);
    let (outcome, history) = finish_strict_in(&handle, DAY).await;
    assert_eq!(t0.elapsed(), Duration::from_secs(3600));
    completed(outcome, &history);
    assert_eq!(
        steps(&history),
        [
            (0, "s", Happening::Started),
            (0, "approve", Happening::Parked),
            (0, "approve", interrupted("expire")),
            (1, "expire", spawned(0)),
            (1, "expire", caught(&[])),
            (1, "expired", Happening::Ended),
        ]
    );
    assert_eq!(
        handle.complete("approve", |_: &mut Job| {}).await,
        Err(WorkError::InstanceEnded)
    );
}

/// Approved in time, the deadline goes with the task: hours later, while the
/// instance waits at the next task, nothing has fired.
#[tokio::test(start_paused = true)]
async fn a_timer_boundary_is_gone_once_its_user_task_is_done() {
    let engine = Engine::new();
    let handle = engine.start(&DEADLINE, job("early"));
    open(&handle, "approve").await;
    tokio::time::sleep(Duration::from_secs(10)).await;
    handle
        .complete("approve", |j: &mut Job| j.rounds = 1)
        .await
        .expect("approve is open");
    open(&handle, "next").await;
    tokio::time::sleep(Duration::from_secs(7200)).await;
    let expected = [
        (0, "s", Happening::Started),
        (0, "approve", Happening::Parked),
        (0, "approve", done(&["rounds"])),
        (0, "next", Happening::Parked),
    ];
    assert_eq!(steps(&handle.history().await), expected);
    assert_eq!(
        handle.complete("approve", |_: &mut Job| {}).await,
        Err(WorkError::NoOpenWork {
            node: "approve".into()
        })
    );
    complete(&handle, "next", |_: &mut Job| {}).await;
    let (outcome, history) = finish_strict_in(&handle, DAY).await;
    completed(outcome, &history);
    assert_eq!(history.ended_at(), ["done"]);
    assert_eq!(spawns(&history, "expire"), 0);
}

// ----- a late report -----------------------------------------------------------------

/// A handler blocks its thread, so the interrupt cannot drop it: a message interrupts
/// the activity, then the handler finishes and reports — on a track the loop already
/// ended. The report is ignored: no `Completed` at `work`, its write never lands, and
/// the instance goes on from the boundary.
async fn a_late_report_of_an_interrupted_task_is_ignored(i: usize) {
    let engine = Engine::new();
    let id = format!("late-{i}");
    let gate = gate(&id);
    let handle = engine.start(&BLOCKING, job(&id));
    until_true("the handler blocks", || gate.entered.load(Ordering::SeqCst)).await;
    assert_eq!(
        engine.publish_message("stop", &id, String::from("enough")),
        Published::Delivered
    );
    until(&handle, "the boundary interrupted `work`", |h| {
        count(h, "work", &interrupted("stop")) == 1
    })
    .await;
    open(&handle, "confirm").await;
    gate.open.store(true, Ordering::SeqCst);
    until_true("the handler finished", || {
        gate.finished.load(Ordering::SeqCst)
    })
    .await;
    // Give the loop its report to ignore while the instance still runs.
    for _ in 0..20 {
        let _ = handle.history().await;
        tokio::task::yield_now().await;
    }
    assert!(!handle.is_finished());
    complete(&handle, "confirm", |_: &mut Job| {}).await;
    let (outcome, history) = finish_strict(&handle).await;
    let data = completed(outcome, &history);
    assert_eq!((data.worked, data.reason.as_str()), (false, "enough"));
    assert_eq!(
        steps(&history),
        [
            (0, "s", Happening::Started),
            (0, "work", Happening::TaskStarted),
            (0, "work", interrupted("stop")),
            (1, "stop", spawned(0)),
            (1, "stop", caught(&["reason"])),
            (1, "confirm", Happening::Parked),
            (1, "confirm", done(&[])),
            (1, "stopped", Happening::Ended),
        ]
    );
    gates().lock().unwrap().remove(&id);
}

multi_thread!(RUNS => a_late_report_of_an_interrupted_task_is_ignored);

// ----- message and signal boundaries -------------------------------------------------

/// How a message/signal boundary scenario ends its activity.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Ending {
    /// The activity completes: the receive task's message, the user task's completion.
    Normally,
    /// The interrupting message boundary `revoke`.
    Revoked,
    /// The interrupting signal boundary `cancel`.
    Cancelled,
}

/// Message and signal boundaries on `activity` (the receive task `take` of `RECEIVE`
/// or the user task `review` of `REVIEW`): `nudges` non-interrupting messages and
/// `pokes` non-interrupting signals each start a token at their boundary (a message
/// boundary subscribes again after each; a message for another key is not its); then
/// the activity ends as `ending` says. At the next user task, every boundary is gone:
/// signals reach no catcher, messages are buffered — including the receive task's own
/// when it was interrupted.
async fn message_and_signal_boundaries(
    process: &'static thresh::Process<Job>,
    activity: &'static str,
    i: usize,
) {
    let engine = Engine::new();
    let id = format!("mb-{i}");
    let nudges = i % 3;
    let pokes = i / 3 % 3;
    let ending = [Ending::Normally, Ending::Revoked, Ending::Cancelled][i / 9 % 3];
    let handle = engine.start(process, job(&id));
    until(&handle, "the activity waits", |h| {
        count(h, activity, &Happening::Parked) == 1
    })
    .await;
    // Another instance's key: buffered, not caught.
    assert_eq!(
        engine.publish_message("nudge", format!("{id}-other"), ()),
        Published::Buffered
    );
    for k in 0..nudges.max(pokes) {
        if k < nudges {
            let published = engine.publish_message("nudge", &id, ());
            assert_ne!(published, Published::Dropped);
        }
        if k < pokes {
            assert_eq!(engine.broadcast_signal("poke", ()), 1);
        }
    }
    until(&handle, "every nudge and poke was caught", |h| {
        spawns(h, "nudge") == nudges && spawns(h, "poke") == pokes
    })
    .await;
    match ending {
        Ending::Normally if activity == "take" => {
            assert_eq!(
                engine.publish_message("order", &id, 7_u64),
                Published::Delivered
            );
        }
        Ending::Normally => {
            handle
                .complete(activity, |j: &mut Job| j.rounds = 1)
                .await
                .expect("the user task is open");
        }
        Ending::Revoked => {
            assert_eq!(
                engine.publish_message("revoke", &id, String::from("revoked")),
                Published::Delivered
            );
        }
        Ending::Cancelled => {
            assert_eq!(
                engine.broadcast_signal("cancel", String::from("cancelled")),
                1
            );
        }
    }
    open(&handle, "after").await;
    // The activity is over: so are its boundaries.
    assert_eq!(engine.broadcast_signal("poke", ()), 0);
    assert_eq!(engine.broadcast_signal("cancel", String::new()), 0);
    assert_eq!(
        engine.publish_message("nudge", &id, ()),
        Published::Buffered
    );
    assert_eq!(
        engine.publish_message("revoke", &id, String::new()),
        Published::Buffered
    );
    let mut buffered = 3;
    if activity == "take" && ending != Ending::Normally {
        assert_eq!(
            engine.publish_message("order", &id, 9_u64),
            Published::Buffered
        );
        buffered += 1;
    }
    let delivered = nudges
        + usize::from(ending == Ending::Revoked)
        + usize::from(ending == Ending::Normally && activity == "take");
    assert_eq!(
        engine.broker_stats(),
        BrokerStats {
            delivered: delivered as u64,
            buffered,
            ..BrokerStats::default()
        }
    );
    complete(&handle, "after", |_: &mut Job| {}).await;
    let (outcome, history) = finish_strict(&handle).await;
    let data = completed(outcome, &history);
    assert_eq!(spawns(&history, "nudge"), nudges);
    assert_eq!(spawns(&history, "poke"), pokes);
    assert_eq!(count(&history, "nudged", &Happening::Ended), nudges);
    assert_eq!(count(&history, "poked", &Happening::Ended), pokes);
    let interruptions = indices(&history, activity, |h| {
        matches!(h, Happening::Interrupted { .. })
    });
    match ending {
        Ending::Normally => {
            assert!(interruptions.is_empty(), "{history}");
            assert_eq!(completions(&history, activity), 1);
            let (amount, rounds) = if activity == "take" { (7, 0) } else { (0, 1) };
            assert_eq!(
                (data.amount, data.rounds, data.reason.as_str()),
                (amount, rounds, "")
            );
        }
        Ending::Revoked | Ending::Cancelled => {
            let (by, why) = if ending == Ending::Revoked {
                ("revoke", "revoked")
            } else {
                ("cancel", "cancelled")
            };
            assert_eq!(interruptions.len(), 1, "{history}");
            assert_eq!(history.steps()[interruptions[0]].what, interrupted(by));
            assert_eq!(count(&history, by, &caught(&["reason"])), 1);
            assert_eq!(completions(&history, activity), 0);
            assert_eq!(
                (data.amount, data.rounds, data.reason.as_str()),
                (0, 0, why)
            );
        }
    }
    assert_eq!(completions(&history, "after"), 1);
}

async fn message_and_signal_boundaries_on_a_receive_task(i: usize) {
    message_and_signal_boundaries(&RECEIVE, "take", i).await;
}

async fn message_and_signal_boundaries_on_a_user_task(i: usize) {
    message_and_signal_boundaries(&REVIEW, "review", i).await;
}

multi_thread!(RUNS => message_and_signal_boundaries_on_a_receive_task,
    message_and_signal_boundaries_on_a_user_task);

/// Non-interrupting messages and signals race the activity's completion from another
/// thread: no message is lost — each is either caught by the boundary or, once the
/// activity is done, left in the broker — and no signal is caught twice.
async fn boundary_messages_racing_the_end_of_the_activity(i: usize) {
    let engine = Engine::new();
    let id = format!("race-{i}");
    let handle = engine.start(&REVIEW, job(&id));
    open(&handle, "review").await;
    const SENT: usize = 6;
    let sender = {
        let (engine, id) = (engine.clone(), id.clone());
        std::thread::spawn(move || {
            let mut reached = 0;
            for _ in 0..SENT {
                assert_ne!(engine.publish_message("nudge", &id, ()), Published::Dropped);
                reached += engine.broadcast_signal("poke", ());
                std::thread::yield_now();
            }
            reached
        })
    };
    yield_jitter().await;
    handle
        .complete("review", |_: &mut Job| {})
        .await
        .expect("review is open");
    let reached = sender.join().expect("the sender");
    open(&handle, "after").await;
    settle().await;
    let history = handle.history().await;
    let nudges = spawns(&history, "nudge");
    let pokes = spawns(&history, "poke");
    assert_eq!(
        nudges + engine.broker_stats().buffered,
        SENT,
        "caught {nudges}, buffered {:?}\n{history}",
        engine.broker_stats()
    );
    assert!(pokes <= reached && reached <= SENT, "{pokes} {reached}");
    // Every firing came before the activity completed.
    let end = index_of(&history, "review", &done(&[]));
    for node in ["nudge", "poke"] {
        for s in indices(&history, node, |h| matches!(h, Happening::Spawned { .. })) {
            assert!(s < end, "{history}");
        }
    }
    assert_eq!(engine.broadcast_signal("poke", ()), 0);
    complete(&handle, "after", |_: &mut Job| {}).await;
    let (outcome, history) = finish_strict(&handle).await;
    completed(outcome, &history);
}

multi_thread!(RUNS => boundary_messages_racing_the_end_of_the_activity);

// ----- cancel, terminate, shutdown with boundaries armed -------------------------------

/// How the `ARMED` scenario stops its instance.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Stop {
    Cancel,
    Terminate,
    Shutdown,
}

/// Cancel, terminate or shut down an instance whose user task and running task both
/// have boundaries armed (signal, message, timer, condition), after a few
/// non-interrupting pings (each reaching both activities): every live track ends
/// cancelled, and no subscription is left — a signal reaches no catcher, a message
/// is buffered.
async fn stopping_with_boundaries_armed(i: usize) {
    let engine = Engine::new();
    let id = format!("armed-{i}");
    let stop = [Stop::Cancel, Stop::Terminate, Stop::Shutdown][i % 3];
    let pings = i / 3 % 3;
    let handle = engine.start(&ARMED, job(&id));
    open(&handle, "review").await;
    open(&handle, "kill").await;
    until(&handle, "work runs", |h| {
        count(h, "work", &Happening::TaskStarted) == 1
    })
    .await;
    for _ in 0..pings {
        assert_eq!(engine.broadcast_signal("ping", ()), 2);
    }
    until(&handle, "every ping ended", |h| {
        count(h, "pinged", &Happening::Ended) == pings
            && count(h, "work_pinged", &Happening::Ended) == pings
    })
    .await;
    match stop {
        Stop::Cancel => handle.cancel(),
        Stop::Terminate => complete(&handle, "kill", |_: &mut Job| {}).await,
        Stop::Shutdown => engine
            .shutdown(Duration::from_secs(10))
            .await
            .expect("the loop stops"),
    }
    let (outcome, history) = finish_strict(&handle).await;
    let expected = match stop {
        Stop::Terminate => "terminated",
        _ => "cancelled",
    };
    assert_eq!(outcome.kind(), expected, "{history}");
    let mut ends: Vec<(u32, &str, Happening)> = steps(&history)
        .into_iter()
        .filter(|r| matches!(r.2, Happening::Cancelled | Happening::Terminated))
        .collect();
    ends.sort_by_key(|r| r.0);
    // Tracks 0, 1 and 2 are `review`, `work` and `kill`.
    let kill = match stop {
        Stop::Terminate => (2, "killed", Happening::Terminated),
        _ => (2, "kill", Happening::Cancelled),
    };
    let want = vec![
        (0, "review", Happening::Cancelled),
        (1, "work", Happening::Cancelled),
        kill,
    ];
    assert_eq!(ends, want, "{history}");
    assert_eq!(engine.broadcast_signal("ping", ()), 0);
    assert_eq!(
        engine.publish_message("recall", &id, ()),
        Published::Buffered
    );
    assert_eq!(
        engine.publish_message("work_recall", &id, ()),
        Published::Buffered
    );
    assert_eq!(engine.broker_stats().buffered, 2);
    assert_eq!(spawns(&history, "ping"), pings);
    assert_eq!(spawns(&history, "work_ping"), pings);
}

both_runtimes!(RUNS => stopping_with_boundaries_armed);

/// A cancel races a storm of non-interrupting signals from another thread: the
/// instance always ends cancelled, every track stopped, no subscription left.
async fn a_cancel_racing_boundary_signals(i: usize) {
    let engine = Engine::new();
    let id = format!("storm-{i}");
    let handle = engine.start(&ARMED, job(&id));
    open(&handle, "review").await;
    until(&handle, "work runs", |h| {
        count(h, "work", &Happening::TaskStarted) == 1
    })
    .await;
    let storm = {
        let engine = engine.clone();
        std::thread::spawn(move || {
            (0..20)
                .map(|_| {
                    let reached = engine.broadcast_signal("ping", ());
                    std::thread::yield_now();
                    reached
                })
                .sum::<usize>()
        })
    };
    yield_jitter().await;
    handle.cancel();
    let reached = storm.join().expect("the storm");
    let (outcome, history) = finish_strict(&handle).await;
    assert!(matches!(outcome, Outcome::Cancelled(_)), "{history}");
    assert!(spawns(&history, "ping") + spawns(&history, "work_ping") <= reached);
    assert_eq!(engine.broadcast_signal("ping", ()), 0);
    assert_eq!(
        engine.publish_message("recall", &id, ()),
        Published::Buffered
    );
}

multi_thread!(RUNS => a_cancel_racing_boundary_signals);

// ----- retries, correlation, independence ------------------------------------------

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
    let (outcome, history) = finish_strict(&engine.start(&RETRY, data)).await;
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

/// A message boundary correlates on the data as it is now: after `rekey` commits a
/// new key, a message for the old key reaches the stale subscription, fails the fine
/// check and is dropped (counted); the boundary subscribes again under the new key,
/// whose message fires it; the old key then has no waiter.
async fn a_message_boundary_correlates_on_the_current_key(i: usize) {
    let engine = Engine::new();
    let (old, new) = (format!("k1-{i}"), format!("k2-{i}"));
    let data = Job {
        key: old.clone(),
        ..job(format!("rekeyed-{i}"))
    };
    let handle = engine.start(&REKEYED, data);
    open(&handle, "review").await;
    let key = new.clone();
    complete(&handle, "rekey", move |j: &mut Job| j.key = key).await;
    until(&handle, "the new key is committed", |h| {
        completions(h, "rekey") == 1
    })
    .await;
    assert_eq!(
        engine.publish_message("nudge", &old, ()),
        Published::Delivered
    );
    until_true("the loop dropped the stale message", || {
        engine.broker_stats().dropped_mismatch == 1
    })
    .await;
    settle().await;
    assert_eq!(spawns(&handle.history().await, "nudge"), 0);
    assert_eq!(
        engine.publish_message("nudge", &new, ()),
        Published::Delivered
    );
    until(&handle, "the boundary fired", |h| spawns(h, "nudge") == 1).await;
    assert_eq!(
        engine.publish_message("nudge", &old, ()),
        Published::Buffered
    );
    complete(&handle, "review", |_: &mut Job| {}).await;
    let (outcome, history) = finish_strict(&handle).await;
    completed(outcome, &history);
    assert_eq!(spawns(&history, "nudge"), 1);
    assert_eq!(
        engine.broker_stats(),
        BrokerStats {
            delivered: 2,
            buffered: 1,
            dropped_mismatch: 1,
            ..BrokerStats::default()
        }
    );
}

multi_thread!(RUNS => a_message_boundary_correlates_on_the_current_key);

/// The token a non-interrupting boundary started goes on when an interrupting one
/// later stops the activity: its user task stays open and completes the instance.
async fn a_non_interrupting_token_outlives_the_interruption(i: usize) {
    let engine = Engine::new();
    let id = format!("survive-{i}");
    let handle = engine.start(&SURVIVE, job(&id));
    open(&handle, "review").await;
    assert_eq!(engine.broadcast_signal("heads_up", ()), 1);
    open(&handle, "follow_up").await;
    assert_eq!(
        engine.publish_message("recall", &id, ()),
        Published::Delivered
    );
    until(&handle, "review was interrupted", |h| {
        count(h, "recalled", &Happening::Ended) == 1
    })
    .await;
    assert_eq!(engine.broadcast_signal("heads_up", ()), 0);
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
