//! Embedded sub-processes at run time (ADR-006 §2.2, §2.6, §2.7; ADR-023).
//!
//! - shape: the token entering a sub-process waits at it (`TaskStarted`) while a
//!   track spawned from it runs the inside; the sub-process completes when nothing
//!   runs inside and the token goes on — one level and two levels deep, exact
//!   histories;
//! - gateways: a parallel split/join and an inclusive split/OR-join inside, racing
//!   branches; an OR-join in the parent after a sub-process on a parallel branch
//!   waits for its completion (a user task, then a task two levels down), also
//!   racing; it does not wait for a sub-process that cannot reach it; reached only
//!   through a non-interrupting boundary on the sub-process, it waits while the
//!   boundary is armed; an OR-join inside ignores a parent token that could enter
//!   the sub-process later, and the tokens of another entry of the same sub-process;
//! - terminate inside ends only its scope (its user task withdrawn; the parent, and
//!   a task already running on a parallel parent branch, go on; `Completed`), also
//!   two levels down; terminate at the top level still terminates the instance;
//! - errors: from a task two scopes down caught by the boundary on the outer
//!   sub-process (both scopes' tracks cancelled, `BpmnError` in `apply`, the
//!   handler's write dropped, the token goes on from the boundary); the code-specific
//!   boundary beats the catch-all declared first; the most specific catcher wins —
//!   the task's own boundary, then the one on the inner sub-process, then an error
//!   event sub-process of the scope before the boundary on its sub-process; a plain
//!   failure is no BPMN error; uncaught (from a task or an error end event inside),
//!   the instance fails with `UncaughtError` naming the thrower; an error end event
//!   inside caught by the boundary on the sub-process;
//! - escalations from a handler two levels down, and from throw and end events
//!   inside: a non-interrupting boundary on the sub-process runs beside it (the
//!   sub-process completes too), an interrupting one stops it, uncaught is no error;
//! - timers on the paused clock: an interrupting timer on a sub-process cancels a
//!   user task waiting inside and a nested sub-process with its running task, while
//!   a non-interrupting cycle fires beside it; once the sub-process completes its
//!   timers are gone;
//! - message and signal boundaries, interrupting and not, on a sub-process: they
//!   correlate like any boundary (another key's message is buffered; a key changed
//!   inside is picked up after one stale message is dropped) and go with it;
//!   condition boundaries see the commits inside;
//! - a sub-process entered once per lap of a loop (its parallel join fires once per
//!   entry), and entered twice at once (each entry's join counts only its tokens);
//! - the user-task API inside a sub-process (`open_work` names the inner track,
//!   `complete`, `fail_work`, the errors of a wrong or finished task);
//! - cancel while work waits two sub-processes deep (user tasks, a never-ending
//!   handler, a signal catch, a receive task, boundaries and an event sub-process
//!   armed): every track cancelled, no subscription or timer left — also racing a
//!   storm of signals;
//! - races, 200 times on four workers: a message boundary on a sub-process against
//!   the work inside completing (one winner; a late message is left in the broker),
//!   an error inside against a signal boundary (one winner).
//!
//! `a_timer_cycle_keeps_its_schedule_across_a_clock_jump` pinned an engine bug (a
//! cycle re-armed from the instant it fired, not from its schedule, so a clock jump
//! dropped occurrences), now fixed.
//!
//! Every history is checked with `common::check_scoped_history`. Scenarios with
//! signals or broker counts use an engine per run.

#[macro_use]
mod common;

use std::time::Duration;

use common::{
    caught, complete, completed, count, done, error_thrown, escalated, interrupted, open, routed,
    settle, spawned, spawns, steps, until, yield_jitter, Row, DAY, HANG,
};
use thresh::events::{BpmnError, Escalation};
use thresh::{
    process, BrokerStats, Engine, Happening, History, InstanceError, InstanceHandle, OpenWork,
    Outcome, ProcessData, Published, TaskError, TrackId, WorkError,
};
use tokio::time::Instant;

#[derive(Clone, Debug, Default, PartialEq, ProcessData)]
struct Claim {
    id: String,
    /// What `pay` (a BPMN error) and `work` (an escalation) end with; "" is `Ok`.
    code: String,
    /// How long `slow` (and `pay`, when not zero) sleeps, in seconds.
    secs: u64,
    limit: u32,
    a: u32,
    b: u32,
    after: u32,
    left: u32,
    right: u32,
    x: u32,
    y: u32,
    want_x: bool,
    want_y: bool,
    caught: String,
    message: String,
    reason: String,
    /// The correlation key of `REKEYED`'s message boundary.
    key: String,
}

fn claim(id: impl Into<String>) -> Claim {
    Claim {
        id: id.into(),
        ..Claim::default()
    }
}

/// `a += 1`, after `secs` seconds when not zero; then the BPMN error `code`, if any.
async fn pay(c: &mut Claim) -> Result<(), TaskError> {
    if c.secs > 0 {
        tokio::time::sleep(Duration::from_secs(c.secs)).await;
    }
    c.a += 1;
    if c.code.is_empty() {
        Ok(())
    } else {
        Err(TaskError::bpmn(c.code.clone(), format!("{} refused", c.id)))
    }
}

/// `b += 1`, then the escalation `code`, if any.
async fn work(c: &mut Claim) -> Result<(), TaskError> {
    yield_jitter().await;
    c.b += 1;
    if c.code.is_empty() {
        Ok(())
    } else {
        Err(TaskError::escalate(c.code.clone()))
    }
}

async fn slow(c: &mut Claim) -> Result<(), TaskError> {
    tokio::time::sleep(Duration::from_secs(c.secs)).await;
    c.b += 1;
    Ok(())
}

process! {
    /// `before`, a sub-process running `one` then `two`, `after`.
    PLAIN: Claim {
        start s;
        task  before = |c| async move { c.a += 1; Ok(()) };
        subprocess sub {
            start s1;
            task  one = |c| async move { c.b += 1; Ok(()) };
            task  two = |c| async move { c.b *= 10; Ok(()) };
            end   e1;
            s1 -> one -> two -> e1;
        }
        task  after = |c| async move { c.after += 1; Ok(()) };
        end   done;
        s -> before -> sub -> after -> done;
    }

    /// The claim of the DSL's example: `pay` in `inner` in `handle`, an error
    /// boundary for `FRAUD` on `handle`.
    NESTED: Claim {
        start begin;
        subprocess handle {
            start s;
            task  assess = |c| async move { c.b += 1; Ok(()) };
            subprocess inner {
                start s2;
                task  pay = pay;
                end   e2;
                s2 -> pay -> e2;
            }
            end   e;
            s -> assess -> inner -> e;
        }
        boundary fraud on handle: error("FRAUD", apply = |c, e: &BpmnError| {
            c.caught = format!("fraud:{}", e.code);
            c.message = e.message.clone();
        });
        task  investigate = |c| async move { c.after += 1; Ok(()) };
        end   done;
        end   flagged;
        begin -> handle -> done;
        fraud -> investigate -> flagged;
    }

    /// A parallel split and join, then an inclusive split and OR-join, inside.
    GATEWAYS: Claim {
        start s;
        subprocess sub {
            start     s1;
            parallel  fork;
            task      left = |c| async move { yield_jitter().await; c.left += 1; Ok(()) };
            task      right = |c| async move { yield_jitter().await; c.right += 1; Ok(()) };
            parallel  join;
            inclusive os;
            task      x = |c| async move { yield_jitter().await; c.x += 1; Ok(()) };
            task      y = |c| async move { yield_jitter().await; c.y += 1; Ok(()) };
            inclusive oj;
            end       e1;
            s1 -> fork -> left, right;
            left, right -> join -> os;
            os -> x when |c| c.want_x;
            os -> y when |c| c.want_y;
            x, y -> oj -> e1;
        }
        task  after = |c| async move { c.after += 1; Ok(()) };
        end   done;
        s -> sub -> after -> done;
    }

    /// A sub-process (a user task, then a task of `secs` seconds one level deeper)
    /// and a quick task on the branches of a parallel split, an OR-join after both.
    BRANCH: Claim {
        start     s;
        parallel  fork;
        subprocess sub {
            start s1;
            user  approve;
            subprocess inner {
                start s2;
                task  slow = slow;
                end   e2;
                s2 -> slow -> e2;
            }
            end   e1;
            s1 -> approve -> inner -> e1;
        }
        task      quick = |c| async move { c.a += 1; Ok(()) };
        inclusive oj;
        task      after = |c| async move { c.after += 1; Ok(()) };
        end       done;
        s -> fork -> sub, quick;
        sub, quick -> oj -> after -> done;
    }

    /// A sub-process beside a parallel branch: completing `quit` reaches a terminate
    /// end event inside while `wait_in` waits; the parent's `side` is still working.
    TERMINATE_INSIDE: Claim {
        start    s;
        parallel fork;
        subprocess sub {
            start    s1;
            parallel f1;
            user     wait_in;
            user     quit;
            end      stop: terminate;
            end      e1;
            s1 -> f1 -> wait_in, quit;
            wait_in -> e1;
            quit -> stop;
        }
        task     side = slow;
        task     after = |c| async move { c.after += 1; Ok(()) };
        end      done;
        end      side_end;
        s -> fork -> sub, side;
        sub -> after -> done;
        side -> side_end;
    }

    /// A terminate end event at the top level while a sub-process waits inside.
    TERMINATE_TOP: Claim {
        start    s;
        parallel fork;
        subprocess sub {
            start s1;
            subprocess inner {
                start s2;
                user  wait_in;
                end   e2;
                s2 -> wait_in -> e2;
            }
            end   e1;
            s1 -> inner -> e1;
        }
        user     kill;
        end      done;
        end      killed: terminate;
        s -> fork -> sub, kill;
        sub -> done;
        kill -> killed;
    }

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

    /// A 30 s timeout and a 7 s reminder cycle on a sub-process whose user task and
    /// nested sub-process (a task of `secs` seconds) both must finish.
    TIMED: Claim {
        start s;
        subprocess sub {
            start    s1;
            parallel f1;
            user     wait_in;
            subprocess inner {
                start s2;
                task  slow = slow;
                end   e2;
                s2 -> slow -> e2;
            }
            parallel j1;
            end      e1;
            s1 -> f1 -> wait_in, inner;
            wait_in, inner -> j1 -> e1;
        }
        boundary late on sub: timer(Duration::from_secs(30));
        boundary tick on sub: non_interrupting timer(every = Duration::from_secs(7));
        task  ring = |c| async move { c.x += 1; Ok(()) };
        user  next;
        end   done;
        end   rung;
        end   gave_up;
        s -> sub -> next -> done;
        tick -> ring -> rung;
        late -> gave_up;
    }

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

    /// A sub-process with a parallel join inside, entered once per lap of a loop
    /// that an exclusive gateway closes before it.
    LOOP: Claim {
        start     s;
        exclusive again;
        subprocess sub {
            start    s1;
            parallel fork;
            task     left = |c| async move { yield_jitter().await; c.left += 1; Ok(()) };
            task     right = |c| async move { yield_jitter().await; c.right += 1; Ok(()) };
            parallel join;
            end      e1;
            s1 -> fork -> left, right;
            left, right -> join -> e1;
        }
        task      count = |c| async move { c.a += 1; Ok(()) };
        exclusive more;
        end       done;
        s -> again -> sub -> count -> more;
        more -> again when |c| c.a < c.limit;
        more -> done else;
    }

    /// Two tokens in the same sub-process at once: `first` enters at once, `second`
    /// after `secs` seconds. Inside, `left` is a user task and `right` takes
    /// `secs * 100` seconds in the first entry, none in the second.
    TWICE: Claim {
        start    s;
        parallel fork;
        task     first = |c| async move { c.x += 1; Ok(()) };
        task     second = |c| async move {
            tokio::time::sleep(Duration::from_secs(c.secs)).await;
            c.y += 1;
            Ok(())
        };
        subprocess sub {
            start    s1;
            parallel split;
            user     left;
            task     right = |c| async move {
                if c.y == 0 {
                    tokio::time::sleep(Duration::from_secs(c.secs * 100)).await;
                }
                Ok(())
            };
            parallel join;
            end      e1;
            s1 -> split -> left, right;
            left, right -> join -> e1;
        }
        end      done;
        s -> fork -> first, second;
        first -> sub;
        second -> sub;
        sub -> done;
    }

    /// Work waits two sub-processes deep (a user task, a handler that never
    /// finishes, a signal catch, a receive task) beside a parent user task, with
    /// boundaries on both sub-processes and an event sub-process armed.
    DEEP: Claim {
        start    s;
        parallel fork;
        subprocess outer {
            start    s1;
            parallel f1;
            user     u1;
            subprocess inner {
                start    s2;
                parallel f2;
                user     u2;
                task     forever = |c| async move {
                    std::future::pending::<()>().await;
                    c.b += 1;
                    Ok(())
                };
                catch    sig: signal("deep_sig");
                receive  msg: message("deep_msg", key = |c| c.id.clone());
                end      e2a;
                end      e2b;
                end      e2c;
                end      e2d;
                s2 -> f2 -> u2, forever, sig, msg;
                u2 -> e2a;
                forever -> e2b;
                sig -> e2c;
                msg -> e2d;
            }
            boundary inner_halt on inner: signal("inner_halt");
            boundary inner_late on inner: timer(Duration::from_secs(3600));
            event_subprocess watch {
                start ws: non_interrupting signal("watch");
                task  seen = |c| async move { c.y += 1; Ok(()) };
                end   we;
                ws -> seen -> we;
            }
            end      e1a;
            end      e1b;
            end      e1c;
            s1 -> f1 -> u1, inner;
            u1 -> e1a;
            inner -> e1b;
            inner_halt -> e1c;
            inner_late -> e1c;
        }
        boundary outer_stop on outer: message("outer_stop", key = |c| c.id.clone());
        boundary outer_poke on outer: non_interrupting signal("outer_poke");
        user     side;
        end      done;
        end      stopped;
        end      poked;
        end      side_end;
        s -> fork -> outer, side;
        outer -> done;
        outer_stop -> stopped;
        outer_poke -> poked;
        side -> side_end;
    }

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

    /// An OR-join in the parent fed by an inclusive split only, beside a sub-process
    /// that cannot reach it.
    UNREACHABLE: Claim {
        start     s;
        parallel  fork;
        subprocess sub {
            start s1;
            user  wait_in;
            end   e1;
            s1 -> wait_in -> e1;
        }
        end       sub_end;
        inclusive os;
        task      x = |c| async move { c.x += 1; Ok(()) };
        task      y = |c| async move { c.y += 1; Ok(()) };
        inclusive oj;
        end       done;
        s -> fork -> sub, os;
        sub -> sub_end;
        os -> x when |c| c.want_x;
        os -> y when |c| c.want_y;
        x, y -> oj -> done;
    }

    /// An OR-join inside a sub-process that a parent token (`later`) may enter
    /// again.
    INNER_OR: Claim {
        start     s;
        parallel  fork;
        user      later;
        subprocess sub {
            start     s1;
            inclusive os;
            task      x = |c| async move { c.x += 1; Ok(()) };
            task      y = |c| async move { c.y += 1; Ok(()) };
            inclusive oj;
            end       e1;
            s1 -> os;
            os -> x when |c| c.want_x;
            os -> y when |c| c.want_y;
            x, y -> oj -> e1;
        }
        end       done;
        s -> fork -> sub, later;
        later -> sub;
        sub -> done;
    }

    /// A terminate end event two levels down: `quit` ends `inner` only.
    TERMINATE_NESTED: Claim {
        start s;
        subprocess outer {
            start    s1;
            parallel f1;
            user     keep;
            subprocess inner {
                start    s2;
                parallel f2;
                user     wait2;
                user     quit;
                end      stop: terminate;
                end      e2;
                s2 -> f2 -> wait2, quit;
                wait2 -> e2;
                quit -> stop;
            }
            end      e1a;
            end      e1b;
            s1 -> f1 -> keep, inner;
            keep -> e1a;
            inner -> e1b;
        }
        end   done;
        s -> outer -> done;
    }

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

    /// An OR-join in the parent that the sub-process reaches only through its
    /// non-interrupting signal boundary.
    VIA_BOUNDARY: Claim {
        start     s;
        parallel  fork;
        subprocess sub {
            start s1;
            user  wait_in;
            end   e1;
            s1 -> wait_in -> e1;
        }
        boundary  poke on sub: non_interrupting signal("poke");
        end       sub_end;
        task      quick = |c| async move { c.a += 1; Ok(()) };
        inclusive oj;
        end       done;
        s -> fork -> sub, quick;
        sub -> sub_end;
        poke -> oj;
        quick -> oj;
        oj -> done;
    }

    /// Two tokens in a sub-process with an OR-join inside: `first` enters at once and
    /// (with `y == 0`) takes the 2 s task `quick`; `second` enters after a second and
    /// (with `y == 1`) waits at the user task `ux`.
    TWICE_OR: Claim {
        start    s;
        parallel fork;
        task     first = |c| async move { c.x += 1; Ok(()) };
        task     second = |c| async move {
            tokio::time::sleep(Duration::from_secs(1)).await;
            c.y += 1;
            Ok(())
        };
        subprocess sub {
            start     s1;
            inclusive os;
            user      ux;
            task      quick = |c| async move {
                tokio::time::sleep(Duration::from_secs(2)).await;
                c.a += 1;
                Ok(())
            };
            inclusive oj;
            end       e1;
            s1 -> os;
            os -> ux when |c| c.y == 1;
            os -> quick when |c| c.y == 0;
            ux, quick -> oj -> e1;
        }
        end      done;
        s -> fork -> first, second;
        first -> sub;
        second -> sub;
        sub -> done;
    }

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

// ----- helpers ---------------------------------------------------------------------

/// Wait for the outcome (failing the test if the instance hangs), read the history
/// and check its structure with [`common::check_scoped_history`].
async fn finish<D: Clone + std::fmt::Debug>(handle: &InstanceHandle<D>) -> (Outcome<D>, History) {
    finish_in(handle, HANG).await
}

/// [`finish`], for an instance that may take up to `limit` (of paused time).
async fn finish_in<D: Clone + std::fmt::Debug>(
    handle: &InstanceHandle<D>,
    limit: Duration,
) -> (Outcome<D>, History) {
    common::finish_with(handle, limit, common::check_scoped_history).await
}

/// The `(track, node)` of every `Cancelled` step, sorted by track.
fn cancelled(history: &History) -> Vec<(u32, &'static str)> {
    let mut rows: Vec<(u32, &'static str)> = history
        .steps()
        .iter()
        .filter(|s| s.what == Happening::Cancelled)
        .map(|s| (s.track.0, s.node))
        .collect();
    rows.sort_unstable();
    rows
}

/// Index of the first step at `node` that is `what`.
#[track_caller]
fn at(history: &History, node: &str, what: &Happening) -> usize {
    common::index_of(history, node, what)
}

/// Index of the first step at `node` matching `pick`.
#[track_caller]
fn first(history: &History, node: &str, pick: impl Fn(&Happening) -> bool) -> usize {
    common::position(history, node, pick)
}

/// Poll the history, sleeping a millisecond in between (so a paused clock moves on
/// once everything is idle), until `holds`; the history then. Fails if the instance
/// ends first or it never holds within `HANG`.
async fn until_slept<D: Clone>(
    handle: &InstanceHandle<D>,
    what: &str,
    holds: impl Fn(&History) -> bool,
) -> History {
    let t0 = Instant::now();
    loop {
        let history = handle.history().await;
        if holds(&history) {
            return history;
        }
        assert!(
            !handle.is_finished() && t0.elapsed() < HANG,
            "instance {}: never {what}\n{history}",
            handle.id()
        );
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
}

/// The names of the open user tasks.
async fn open_work<D: Clone>(handle: &InstanceHandle<D>) -> Vec<&'static str> {
    handle.open_work().await.iter().map(|w| w.node).collect()
}

// ----- plain and nested ------------------------------------------------------------

/// The token entering a sub-process waits at it (`TaskStarted`) while a track
/// spawned from it runs the inside from the inner start; when that ends, the
/// sub-process completes (no fields of its own) and the token goes on.
#[tokio::test(start_paused = true)]
async fn a_plain_sub_process_runs_between_its_neighbours() {
    let engine = Engine::new();
    let (outcome, history) = finish(&engine.start(&PLAIN, claim("plain"))).await;
    let data = completed(outcome, &history);
    // `two` multiplies what `one` added: they ran in order, inside.
    assert_eq!((data.a, data.b, data.after), (1, 10, 1));
    assert_eq!(
        steps(&history),
        [
            (0, "s", Happening::Started),
            (0, "before", Happening::TaskStarted),
            (0, "before", done(&["a"])),
            (0, "sub", Happening::TaskStarted),
            (1, "s1", spawned(0)),
            (1, "one", Happening::TaskStarted),
            (1, "one", done(&["b"])),
            (1, "two", Happening::TaskStarted),
            (1, "two", done(&["b"])),
            (1, "e1", Happening::Ended),
            (0, "sub", done(&[])),
            (0, "after", Happening::TaskStarted),
            (0, "after", done(&["after"])),
            (0, "done", Happening::Ended),
        ]
    );
}

/// Two levels: `handle`'s track waits while `inner`'s waits inside it; they complete
/// innermost first and the error boundary on `handle` never fires. When `pay`
/// throws, both levels are left and the token goes on from the boundary.
#[tokio::test(start_paused = true)]
async fn a_nested_sub_process_completes_innermost_first() {
    let engine = Engine::new();
    let (outcome, history) = finish(&engine.start(&NESTED, claim("nested"))).await;
    let data = completed(outcome, &history);
    assert_eq!((data.a, data.b, data.after), (1, 1, 0));
    assert_eq!(
        steps(&history),
        [
            (0, "begin", Happening::Started),
            (0, "handle", Happening::TaskStarted),
            (1, "s", spawned(0)),
            (1, "assess", Happening::TaskStarted),
            (1, "assess", done(&["b"])),
            (1, "inner", Happening::TaskStarted),
            (2, "s2", spawned(1)),
            (2, "pay", Happening::TaskStarted),
            (2, "pay", done(&["a"])),
            (2, "e2", Happening::Ended),
            (1, "inner", done(&[])),
            (1, "e", Happening::Ended),
            (0, "handle", done(&[])),
            (0, "done", Happening::Ended),
        ]
    );

    // `pay` throws `FRAUD`: `inner` and `handle` are left, the boundary takes over.
    let data = Claim {
        code: "FRAUD".into(),
        ..claim("nested")
    };
    let (outcome, history) = finish(&engine.start(&NESTED, data)).await;
    let data = completed(outcome, &history);
    assert_eq!(
        (
            data.a,
            data.b,
            data.after,
            data.caught.as_str(),
            data.message.as_str()
        ),
        (0, 1, 1, "fraud:FRAUD", "nested refused")
    );
    assert_eq!(
        steps(&history),
        [
            (0, "begin", Happening::Started),
            (0, "handle", Happening::TaskStarted),
            (1, "s", spawned(0)),
            (1, "assess", Happening::TaskStarted),
            (1, "assess", done(&["b"])),
            (1, "inner", Happening::TaskStarted),
            (2, "s2", spawned(1)),
            (2, "pay", Happening::TaskStarted),
            (2, "pay", error_thrown("FRAUD")),
            (1, "inner", Happening::Cancelled),
            (2, "pay", Happening::Cancelled),
            (0, "handle", interrupted("fraud")),
            (3, "fraud", spawned(0)),
            (3, "fraud", caught(&["caught", "message"])),
            (3, "investigate", Happening::TaskStarted),
            (3, "investigate", done(&["after"])),
            (3, "flagged", Happening::Ended),
        ]
    );
}

// ----- gateways inside and around ----------------------------------------------------

/// A parallel split and join, then an inclusive split and OR-join, all inside the
/// sub-process, with racing branches: each join fires once, before the sub-process
/// completes, and the sub-process completes once, before `after`.
async fn gateways_inside_a_sub_process(engine: Engine, i: usize) {
    let (want_x, want_y) = [(true, false), (false, true), (true, true)][i % 3];
    let data = Claim {
        want_x,
        want_y,
        ..claim(format!("gw-{i}"))
    };
    let (outcome, history) = finish(&engine.start(&GATEWAYS, data)).await;
    let data = completed(outcome, &history);
    assert_eq!(
        (data.left, data.right, data.x, data.y, data.after),
        (1, 1, u32::from(want_x), u32::from(want_y), 1)
    );
    let taken: Vec<&str> = [(want_x, "x"), (want_y, "y")]
        .into_iter()
        .filter_map(|(on, t)| on.then_some(t))
        .collect();
    assert_eq!(common::routes(&history, "os"), std::slice::from_ref(&taken));
    assert_eq!(history.fired("join"), 1, "{history}");
    assert_eq!(count(&history, "join", &Happening::Merged), 1);
    assert_eq!(history.fired("oj"), 1, "{history}");
    assert_eq!(
        count(&history, "oj", &Happening::Merged),
        taken.len() - 1,
        "{history}"
    );
    let entered = at(&history, "sub", &Happening::TaskStarted);
    let left_at = at(&history, "sub", &done(&[]));
    assert_eq!(count(&history, "sub", &done(&[])), 1);
    // Everything inside happened while the token waited at `sub`.
    for (k, step) in history.steps().iter().enumerate() {
        let inside = !["s", "sub", "after", "done"].contains(&step.node);
        assert_eq!(inside, entered < k && k < left_at, "step {k}\n{history}");
    }
    assert!(at(&history, "join", &Happening::Fired) < at(&history, "os", &routed(&taken)));
    assert!(at(&history, "oj", &Happening::Fired) < left_at);
    assert_eq!(history.ended_at(), ["e1", "done"]);
}

flavors!(gateways_inside_a_sub_process);

/// A sub-process (waiting at a user task, then two levels deep in a 5 s task) on
/// one branch of a parallel split, a quick task on the other, an OR-join after both:
/// the quick token waits at the join until the sub-process completes — the tokens
/// inside count as able to reach it. The user task inside works through the handle.
#[tokio::test(start_paused = true)]
async fn an_or_join_after_a_sub_process_waits_for_its_completion() {
    let engine = Engine::new();
    let t0 = Instant::now();
    let handle = engine.start(
        &BRANCH,
        Claim {
            secs: 5,
            ..claim("branch")
        },
    );
    open(&handle, "approve").await;
    let history = until(&handle, "quick waits at the join", |h| {
        count(h, "oj", &Happening::Waiting) == 1
    })
    .await;
    settle().await;
    let work = handle.open_work().await;
    assert_eq!(work.len(), 1);
    assert_eq!(work[0].node, "approve");
    // The user task waits on the inner track, not on the one waiting at `sub`.
    let inner_track = history.steps()[at(&history, "s1", &spawned(0))].track;
    assert_eq!(
        work[0],
        OpenWork {
            node: "approve",
            track: inner_track
        }
    );
    assert_eq!(
        handle.complete("nope", |_: &mut Claim| {}).await,
        Err(WorkError::NoOpenWork {
            node: "nope".into()
        })
    );
    // An hour later the join still waits: the sub-process has not completed.
    tokio::time::sleep(Duration::from_secs(3600)).await;
    let history = handle.history().await;
    assert_eq!(history.fired("oj"), 0, "{history}");
    assert_eq!(count(&history, "after", &Happening::TaskStarted), 0);
    let t1 = Instant::now();
    handle
        .complete("approve", |c: &mut Claim| c.want_x = true)
        .await
        .expect("approve is open");
    assert_eq!(
        handle.complete("approve", |_: &mut Claim| {}).await,
        Err(WorkError::NoOpenWork {
            node: "approve".into()
        })
    );
    // Two seconds into `slow`, still waiting.
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert_eq!(handle.history().await.fired("oj"), 0);
    let (outcome, history) = finish(&handle).await;
    assert_eq!(t1.elapsed(), Duration::from_secs(5));
    assert!(t0.elapsed() > Duration::from_secs(3600));
    let data = completed(outcome, &history);
    assert_eq!((data.a, data.b, data.after, data.want_x), (1, 1, 1, true));
    assert_eq!(history.fired("oj"), 1);
    assert_eq!(count(&history, "oj", &Happening::Merged), 1);
    assert!(at(&history, "sub", &done(&[])) < at(&history, "oj", &Happening::Fired));
    assert_eq!(history.ended_at(), ["e2", "e1", "done"]);
    assert_eq!(
        handle.complete("approve", |_: &mut Claim| {}).await,
        Err(WorkError::InstanceEnded)
    );
}

/// The same, racing: the user task is completed at once, `slow` takes no time, and
/// the quick branch races the whole sub-process to the OR-join. The join fires once,
/// always after the sub-process completed.
async fn an_or_join_after_a_sub_process_racing(i: usize) {
    let engine = Engine::new();
    let handle = engine.start(&BRANCH, claim(format!("or-{i}")));
    yield_jitter().await;
    complete(&handle, "approve", |_: &mut Claim| {}).await;
    let (outcome, history) = finish(&handle).await;
    let data = completed(outcome, &history);
    assert_eq!((data.a, data.b, data.after), (1, 1, 1));
    assert_eq!(history.fired("oj"), 1, "{history}");
    assert_eq!(count(&history, "after", &Happening::TaskStarted), 1);
    assert!(
        at(&history, "sub", &done(&[])) < at(&history, "oj", &Happening::Fired),
        "{history}"
    );
    assert!(
        first(&history, "quick", |h| matches!(
            h,
            Happening::Completed { .. }
        )) < at(&history, "oj", &Happening::Fired)
    );
}

multi_thread!(common::RUNS => an_or_join_after_a_sub_process_racing);

// ----- terminate -------------------------------------------------------------------

/// A terminate end event inside a sub-process ends only that scope: its waiting user
/// task is cancelled and withdrawn, the sub-process completes and its token goes on,
/// and the parent's other branch (a 10 s task, already running) still runs to its
/// end. The outcome is `Completed`.
#[tokio::test(start_paused = true)]
async fn terminate_inside_a_sub_process_ends_only_that_scope() {
    let engine = Engine::new();
    let t0 = Instant::now();
    let handle = engine.start(
        &TERMINATE_INSIDE,
        Claim {
            secs: 10,
            ..claim("term-in")
        },
    );
    open(&handle, "wait_in").await;
    open(&handle, "quit").await;
    until(&handle, "side runs", |h| {
        count(h, "side", &Happening::TaskStarted) == 1
    })
    .await;
    complete(&handle, "quit", |c: &mut Claim| c.a = 1).await;
    let history = until(&handle, "the parent went on", |h| {
        count(h, "done", &Happening::Ended) == 1
    })
    .await;
    assert!(!handle.is_finished(), "`side` still runs\n{history}");
    assert!(open_work(&handle).await.is_empty());
    let (outcome, history) = finish_in(&handle, DAY).await;
    assert_eq!(t0.elapsed(), Duration::from_secs(10));
    let data = completed(outcome, &history);
    assert_eq!((data.a, data.b, data.after), (1, 1, 1));
    // Track 0 waits at `sub`, 1 runs `side`; inside, 2 waits at `wait_in`, 3 at `quit`.
    let rows = steps(&history);
    assert_eq!(
        rows[..9],
        [
            (0, "s", Happening::Started),
            (0, "fork", routed(&["sub", "side"])),
            (1, "fork", spawned(0)),
            (0, "sub", Happening::TaskStarted),
            (2, "s1", spawned(0)),
            (2, "f1", routed(&["wait_in", "quit"])),
            (3, "f1", spawned(2)),
            (2, "wait_in", Happening::Parked),
            (3, "quit", Happening::Parked),
        ],
        "{history}"
    );
    assert!(rows[9..].contains(&(1, "side", Happening::TaskStarted)));
    assert_eq!(
        rows[rows.len() - 9..],
        [
            (3, "quit", done(&["a"])),
            (3, "stop", Happening::Terminated),
            (2, "wait_in", Happening::Cancelled),
            (0, "sub", done(&[])),
            (0, "after", Happening::TaskStarted),
            (0, "after", done(&["after"])),
            (0, "done", Happening::Ended),
            (1, "side", done(&["b"])),
            (1, "side_end", Happening::Ended),
        ],
        "{history}"
    );
    assert_eq!(rows.len(), 19, "{history}");
    assert_eq!(cancelled(&history), [(2, "wait_in")]);
    assert_eq!(history.ended_at(), ["stop", "done", "side_end"]);
}

/// A terminate end event at the top level still terminates the instance, with
/// everything waiting inside two levels of sub-processes cancelled.
#[tokio::test(start_paused = true)]
async fn terminate_at_the_top_level_ends_the_instance() {
    let engine = Engine::new();
    let handle = engine.start(&TERMINATE_TOP, claim("term-top"));
    open(&handle, "wait_in").await;
    open(&handle, "kill").await;
    complete(&handle, "kill", |c: &mut Claim| c.a = 7).await;
    let (outcome, history) = finish(&handle).await;
    let Outcome::Terminated(data) = outcome else {
        panic!("expected a terminated instance, got {outcome:?}\n{history}");
    };
    assert_eq!(data.a, 7);
    assert_eq!(count(&history, "killed", &Happening::Terminated), 1);
    // Track 0 waits at `sub`, 1 at `kill`; `sub` runs on 2, `inner` on 3.
    assert_eq!(
        cancelled(&history),
        [(0, "sub"), (2, "inner"), (3, "wait_in")],
        "{history}"
    );
    assert_eq!(count(&history, "sub", &done(&[])), 0);
    assert!(handle.open_work().await.is_empty());
    assert_eq!(
        handle.complete("wait_in", |_: &mut Claim| {}).await,
        Err(WorkError::InstanceEnded)
    );
}

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

/// Start `ERRORS` with `pay` ending in `code` after a second, once both user tasks
/// wait; the history then.
async fn start_errors(engine: &Engine, code: &str) -> (InstanceHandle<Claim>, History) {
    let handle = engine.start(
        &ERRORS,
        Claim {
            code: code.into(),
            secs: 1,
            ..claim(format!("err-{code}"))
        },
    );
    open(&handle, "review").await;
    open(&handle, "sign").await;
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
    until(&handle, "inner completed", |h| {
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
        let handle = engine.start(
            &UNCAUGHT,
            Claim {
                code: code.into(),
                secs: 1,
                want_x,
                ..claim("uncaught")
            },
        );
        open(&handle, "review").await;
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
    let (outcome, history) = finish(&engine.start(&ERROR_END, data)).await;
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

    let (outcome, history) = finish(&engine.start(&ERROR_END, claim("fine"))).await;
    assert_eq!(completed(outcome, &history).a, 1);
    assert_eq!(history.ended_at(), ["e1", "done"]);
    assert_eq!(spawns(&history, "boomed"), 0);
}

// ----- escalations -------------------------------------------------------------------

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
    let (outcome, history) = finish(&engine.start(&ESCALATE, data)).await;
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

// ----- timers (paused clock) -----------------------------------------------------------

/// `TIMED` until `slow` runs: `wait_in` waits in `sub` on track 1, `slow` in `inner`
/// on track 3.
fn timed_prefix() -> Vec<Row> {
    vec![
        (0, "s", Happening::Started),
        (0, "sub", Happening::TaskStarted),
        (1, "s1", spawned(0)),
        (1, "f1", routed(&["wait_in", "inner"])),
        (2, "f1", spawned(1)),
        (1, "wait_in", Happening::Parked),
        (2, "inner", Happening::TaskStarted),
        (3, "s2", spawned(2)),
        (3, "slow", Happening::TaskStarted),
    ]
}

/// One firing of the reminder cycle on `sub`, on track `track`.
fn tick_rows(track: u32) -> [Row; 5] {
    [
        (track, "tick", spawned(0)),
        (track, "tick", caught(&[])),
        (track, "ring", Happening::TaskStarted),
        (track, "ring", done(&["x"])),
        (track, "rung", Happening::Ended),
    ]
}

/// Nobody completes `wait_in` and `slow` would take 1000 s: the 30 s timer on `sub`
/// interrupts it — the user task waiting inside is withdrawn, the nested
/// sub-process and its running task cancelled (its write never lands) — and the
/// token goes on from the boundary; meanwhile the 7 s cycle fired beside the
/// sub-process at 7, 14, 21 and 28 s. Nothing fires afterwards.
#[tokio::test(start_paused = true)]
async fn a_timer_boundary_interrupts_everything_inside() {
    let engine = Engine::new();
    let t0 = Instant::now();
    let handle = engine.start(
        &TIMED,
        Claim {
            secs: 1000,
            ..claim("timed")
        },
    );
    open(&handle, "wait_in").await;
    // A sleep lets the paused clock jump from timer to timer.
    tokio::time::sleep(Duration::from_secs(29)).await;
    let history = handle.history().await;
    assert_eq!(count(&history, "rung", &Happening::Ended), 4, "{history}");
    assert_eq!(open_work(&handle).await, ["wait_in"], "{history}");
    let (outcome, history) = finish_in(&handle, DAY).await;
    assert_eq!(t0.elapsed(), Duration::from_secs(30));
    let data = completed(outcome, &history);
    assert_eq!((data.b, data.x), (0, 4));
    let mut rows = timed_prefix();
    for track in 4..=7 {
        rows.extend(tick_rows(track));
    }
    let all = steps(&history);
    assert_eq!(all[..rows.len()], rows[..], "{history}");
    let mut cancels = all[rows.len()..rows.len() + 3].to_vec();
    cancels.sort_by_key(|r| r.0);
    assert_eq!(
        cancels,
        [
            (1, "wait_in", Happening::Cancelled),
            (2, "inner", Happening::Cancelled),
            (3, "slow", Happening::Cancelled),
        ],
        "{history}"
    );
    assert_eq!(
        all[rows.len() + 3..],
        [
            (0, "sub", interrupted("late")),
            (8, "late", spawned(0)),
            (8, "late", caught(&[])),
            (8, "gave_up", Happening::Ended),
        ],
        "{history}"
    );
    tokio::time::sleep(Duration::from_secs(3600)).await;
    assert_eq!(handle.history().await, history);
}

/// The sub-process completes in time (`slow` after 3 s, `wait_in` at 10 s): the
/// reminder fired once, at 7 s, and then its timers are gone — hours later, while
/// the token waits at `next`, neither the timeout nor the cycle has fired.
#[tokio::test(start_paused = true)]
async fn a_timer_boundary_is_gone_once_its_sub_process_completes() {
    let engine = Engine::new();
    let handle = engine.start(
        &TIMED,
        Claim {
            secs: 3,
            ..claim("in-time")
        },
    );
    open(&handle, "wait_in").await;
    tokio::time::sleep(Duration::from_secs(10)).await;
    complete(&handle, "wait_in", |c: &mut Claim| c.y = 1).await;
    open(&handle, "next").await;
    tokio::time::sleep(Duration::from_secs(7200)).await;
    let history = handle.history().await;
    assert_eq!(spawns(&history, "tick"), 1, "{history}");
    assert_eq!(spawns(&history, "late"), 0, "{history}");
    assert_eq!(count(&history, "sub", &done(&[])), 1);
    assert_eq!(open_work(&handle).await, ["next"]);
    complete(&handle, "next", |_: &mut Claim| {}).await;
    let (outcome, history) = finish_in(&handle, DAY).await;
    let data = completed(outcome, &history);
    assert_eq!((data.b, data.x, data.y), (1, 1, 1));
    let mut rows = timed_prefix();
    rows.extend([
        (3, "slow", done(&["b"])),
        (3, "e2", Happening::Ended),
        (2, "inner", done(&[])),
        (2, "j1", Happening::Waiting),
    ]);
    rows.extend(tick_rows(4));
    rows.extend([
        (1, "wait_in", done(&["y"])),
        (2, "j1", Happening::Merged),
        (1, "j1", Happening::Fired),
        (1, "j1", routed(&["e1"])),
        (1, "e1", Happening::Ended),
        (0, "sub", done(&[])),
        (0, "next", Happening::Parked),
        (0, "next", done(&[])),
        (0, "done", Happening::Ended),
    ]);
    assert_eq!(steps(&history), rows, "{history}");
}

/// The reminder cycle on `sub` is a schedule — every 7 s from when the token
/// entered, so at 7, 14, 21 and 28 s before the 30 s timeout — also when the clock
/// jumps: after `advance(29 s)` the three missed occurrences are due as well.
///
/// The engine re-arms a cycle from the instant it fired (`TimerSpec::next(fired,
/// Instant::now())` in `rearm`), not from the deadline it was due at: the late
/// firing at 29 s puts the next at 36 s, after the timeout, so the cycle fires once
/// instead of four times (and under load every late firing shifts the rest).
#[tokio::test(start_paused = true)]
async fn a_timer_cycle_keeps_its_schedule_across_a_clock_jump() {
    let engine = Engine::new();
    let handle = engine.start(
        &TIMED,
        Claim {
            secs: 1000,
            ..claim("jump")
        },
    );
    open(&handle, "wait_in").await;
    tokio::time::advance(Duration::from_secs(29)).await;
    let (outcome, history) = finish_in(&handle, DAY).await;
    let data = completed(outcome, &history);
    assert_eq!(spawns(&history, "tick"), 4, "{history}");
    assert_eq!(data.x, 4);
    assert_eq!(count(&history, "sub", &interrupted("late")), 1);
}

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
    let handle = engine.start(&GUARDED, claim(&id));
    open(&handle, "review").await;
    assert_eq!(
        engine.publish_message("nudge", format!("{id}-other"), ()),
        Published::Buffered
    );
    for k in 0..nudges.max(pokes) {
        if k < nudges {
            assert_ne!(engine.publish_message("nudge", &id, ()), Published::Dropped);
        }
        if k < pokes {
            assert_eq!(engine.broadcast_signal("poke", ()), 1);
        }
    }
    until(&handle, "every nudge and poke was caught", |h| {
        spawns(h, "nudge") == nudges && spawns(h, "poke") == pokes
    })
    .await;
    assert_eq!(open_work(&handle).await, ["review"]);
    match ending {
        Ending::Normally => complete(&handle, "review", |c: &mut Claim| c.a = 1).await,
        Ending::Stopped => assert_eq!(
            engine.publish_message("stop", &id, String::from("stopped")),
            Published::Delivered
        ),
        Ending::Halted => assert_eq!(engine.broadcast_signal("halt", String::from("halted")), 1),
    }
    open(&handle, "after").await;
    // The user task inside is done or withdrawn; the boundaries are gone.
    assert_eq!(open_work(&handle).await, ["after"]);
    assert_eq!(engine.broadcast_signal("poke", ()), 0);
    assert_eq!(engine.broadcast_signal("halt", String::new()), 0);
    assert_eq!(
        engine.publish_message("nudge", &id, ()),
        Published::Buffered
    );
    assert_eq!(
        engine.publish_message("stop", &id, String::new()),
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

// ----- loops and concurrent entries ----------------------------------------------------

/// A sub-process entered once per lap of a loop closed by an exclusive gateway
/// before it: every entry runs the inside afresh — its parallel join fires once per
/// entry, with its own arrivals — and completes once; racing branches inside.
async fn a_sub_process_in_a_loop(i: usize) {
    let engine = Engine::new();
    let limit = 1 + (i % 8) as u32;
    let data = Claim {
        limit,
        ..claim(format!("loop-{i}"))
    };
    let (outcome, history) = finish(&engine.start(&LOOP, data)).await;
    let data = completed(outcome, &history);
    assert_eq!((data.a, data.left, data.right), (limit, limit, limit));
    let laps = limit as usize;
    assert_eq!(count(&history, "sub", &Happening::TaskStarted), laps);
    assert_eq!(count(&history, "sub", &done(&[])), laps);
    assert_eq!(history.fired("join"), laps, "{history}");
    assert_eq!(count(&history, "join", &Happening::Merged), laps);
    assert_eq!(count(&history, "join", &Happening::Waiting), laps);
    assert_eq!(count(&history, "e1", &Happening::Ended), laps);
    // Lap by lap: the sub-process is entered, its join fires, it completes, `count`
    // runs; never two laps at once.
    let events: Vec<&str> = history
        .steps()
        .iter()
        .filter_map(|s| match (&s.node, &s.what) {
            (&"sub", Happening::TaskStarted) => Some("enter"),
            (&"join", Happening::Fired) => Some("fire"),
            (&"sub", Happening::Completed { .. }) => Some("leave"),
            (&"count", Happening::Completed { .. }) => Some("count"),
            _ => None,
        })
        .collect();
    assert_eq!(
        events,
        ["enter", "fire", "leave", "count"].repeat(laps),
        "{history}"
    );
    let mut more = vec![routed(&["again"]); laps - 1];
    more.push(routed(&["done"]));
    let got: Vec<Happening> = history
        .steps()
        .iter()
        .filter(|s| s.node == "more")
        .map(|s| s.what.clone())
        .collect();
    assert_eq!(got, more);
    // The waiting token stays on track 0; each entry spawns one inner track and its
    // fork one more.
    assert_eq!(history.tracks(), 1 + 2 * laps);
    assert_eq!(history.ended_at().last(), Some(&"done"));
}

multi_thread!(common::RUNS => a_sub_process_in_a_loop);

/// The inner track an inner `track` descends from (following `Spawned` back to the
/// track that started at `s1`).
fn entry_of(history: &History, mut track: TrackId) -> TrackId {
    loop {
        let first = history
            .steps()
            .iter()
            .find(|s| s.track == track)
            .expect("the track has steps");
        match first.what {
            Happening::Spawned { .. } if first.node == "s1" => return track,
            Happening::Spawned { from } => track = from,
            _ => panic!("{track} is not inside `sub`\n{history}"),
        }
    }
}

/// Two tokens in the same sub-process at once: its parallel join counts only the
/// tokens of its own entry. Entry A waits at `left` (a user task) with `right`
/// taking 100 s; entry B, a second later, has `right` at the join at once. Completing
/// A's `left` must not fire the join with B's `right`: A keeps waiting for its own;
/// completing B's `left` fires B's join and completes entry B first, while A is still
/// inside; A completes at 100 s.
#[tokio::test(start_paused = true)]
async fn a_sub_process_entered_twice_at_once_keeps_its_joins_apart() {
    let engine = Engine::new();
    let t0 = Instant::now();
    let handle = engine.start(
        &TWICE,
        Claim {
            secs: 1,
            ..claim("twice")
        },
    );
    let history = until_slept(&handle, "both entries wait", |h| {
        count(h, "left", &Happening::Parked) == 2 && count(h, "join", &Happening::Waiting) == 1
    })
    .await;
    let entries: Vec<TrackId> = history
        .steps()
        .iter()
        .filter(|s| s.node == "s1")
        .map(|s| s.track)
        .collect();
    assert_eq!(entries.len(), 2, "{history}");
    let (a, b) = (entries[0], entries[1]);
    let waiting = history.steps()[at(&history, "join", &Happening::Waiting)].track;
    assert_eq!(entry_of(&history, waiting), b, "{history}");
    let work = handle.open_work().await;
    assert_eq!(work.len(), 2);
    assert_eq!(entry_of(&history, work[0].track), a);
    assert_eq!(entry_of(&history, work[1].track), b);

    // A's `left`: A's join has `left`, not `right` — it must not fire.
    handle
        .complete("left", |_: &mut Claim| {})
        .await
        .expect("left is open");
    settle().await;
    let history = handle.history().await;
    assert_eq!(history.fired("join"), 0, "{history}");
    assert_eq!(count(&history, "sub", &done(&[])), 0, "{history}");

    // B's `left`: B's join fires and entry B completes while A is inside.
    handle
        .complete("left", |_: &mut Claim| {})
        .await
        .expect("left is open");
    let history = until(&handle, "entry B completed", |h| {
        count(h, "done", &Happening::Ended) == 1
    })
    .await;
    assert_eq!(history.fired("join"), 1, "{history}");
    let fired = history.steps()[at(&history, "join", &Happening::Fired)].track;
    let merged = history.steps()[at(&history, "join", &Happening::Merged)].track;
    assert_eq!(
        (entry_of(&history, fired), entry_of(&history, merged)),
        (b, b),
        "{history}"
    );
    assert!(!handle.is_finished());

    let (outcome, history) = finish_in(&handle, DAY).await;
    assert_eq!(t0.elapsed(), Duration::from_secs(100));
    let data = completed(outcome, &history);
    assert_eq!((data.x, data.y), (1, 1));
    assert_eq!(history.fired("join"), 2);
    assert_eq!(count(&history, "join", &Happening::Merged), 2);
    assert_eq!(count(&history, "sub", &done(&[])), 2);
    assert_eq!(count(&history, "done", &Happening::Ended), 2);
    // Each firing merged two tokens of one entry.
    let mut pairs: Vec<(TrackId, TrackId)> = Vec::new();
    for pick in [Happening::Fired, Happening::Merged] {
        for k in common::indices(&history, "join", |h| *h == pick) {
            let track = history.steps()[k].track;
            pairs.push((entry_of(&history, track), track));
        }
    }
    pairs.sort_unstable();
    let per_entry: Vec<TrackId> = pairs.iter().map(|p| p.0).collect();
    assert_eq!(per_entry, [a, a, b, b], "{history}");
}

// ----- cancel --------------------------------------------------------------------------

/// The `DEEP` tracks waiting when it is cancelled: track 0 at `outer`, 1 at `side`;
/// in `outer`, 2 at `u1` and 3 at `inner`; in `inner`, 4 at `u2`, 5 running
/// `forever`, 6 at the signal catch, 7 at the receive task.
const DEEP_WAITING: [(u32, &str); 8] = [
    (0, "outer"),
    (1, "side"),
    (2, "u1"),
    (3, "inner"),
    (4, "u2"),
    (5, "forever"),
    (6, "sig"),
    (7, "msg"),
];

/// Cancel `DEEP` while work waits two sub-processes deep, after `pings` rounds of
/// the non-interrupting event sub-process and boundary signals — during a storm of
/// them from another thread when `storm`: the outcome is `Cancelled`, every waiting
/// track of every scope is cancelled, the user tasks are withdrawn, and no
/// subscription is left — signals reach no catcher, messages are buffered, and (on
/// the paused clock) the hour's timer on `inner` never fires.
async fn cancel_deep(i: usize, storm: bool, paused: bool) {
    let engine = Engine::new();
    let id = format!("deep-{i}");
    let pings = i % 3;
    let handle = engine.start(&DEEP, claim(&id));
    for user in ["u1", "u2", "side"] {
        open(&handle, user).await;
    }
    until(&handle, "everything waits", |h| {
        count(h, "forever", &Happening::TaskStarted) == 1
            && count(h, "sig", &Happening::Parked) == 1
            && count(h, "msg", &Happening::Parked) == 1
    })
    .await;
    let mut work = open_work(&handle).await;
    work.sort_unstable();
    assert_eq!(work, ["side", "u1", "u2"]);
    for _ in 0..pings {
        assert_eq!(engine.broadcast_signal("watch", ()), 1);
        assert_eq!(engine.broadcast_signal("outer_poke", ()), 1);
    }
    until(&handle, "every ping ended", |h| {
        count(h, "we", &Happening::Ended) == pings && count(h, "poked", &Happening::Ended) == pings
    })
    .await;
    let sender = storm.then(|| {
        let engine = engine.clone();
        std::thread::spawn(move || {
            (0..20)
                .map(|_| {
                    let reached = engine.broadcast_signal("watch", ())
                        + engine.broadcast_signal("outer_poke", ());
                    std::thread::yield_now();
                    reached
                })
                .sum::<usize>()
        })
    });
    yield_jitter().await;
    handle.cancel();
    let reached = sender.map_or(0, |s| s.join().expect("the storm"));
    let (outcome, history) = finish(&handle).await;
    assert!(matches!(outcome, Outcome::Cancelled(_)), "{history}");
    let fired = count(&history, "ws", &Happening::Started) + spawns(&history, "outer_poke");
    assert!(
        fired >= 2 * pings && fired <= 2 * pings + reached,
        "{history}"
    );
    let cancels = cancelled(&history);
    if storm {
        for waiting in DEEP_WAITING {
            assert!(cancels.contains(&waiting), "{waiting:?}\n{history}");
        }
    } else {
        assert_eq!(cancels, DEEP_WAITING, "{history}");
    }
    assert!(handle.open_work().await.is_empty());
    for signal in ["deep_sig", "inner_halt", "watch", "outer_poke"] {
        assert_eq!(engine.broadcast_signal(signal, ()), 0, "{signal}");
    }
    for message in ["deep_msg", "outer_stop"] {
        assert_eq!(
            engine.publish_message(message, &id, ()),
            Published::Buffered,
            "{message}"
        );
    }
    assert_eq!(
        engine.broker_stats(),
        BrokerStats {
            buffered: 2,
            ..BrokerStats::default()
        }
    );
    if paused {
        tokio::time::sleep(Duration::from_secs(7200)).await;
        assert_eq!(handle.history().await, history);
    }
}

/// [`cancel_deep`] on the paused clock, one instance at a time.
#[tokio::test(start_paused = true)]
async fn cancel_while_work_runs_in_nested_sub_processes() {
    for i in 0..3 {
        cancel_deep(i, false, true).await;
    }
}

async fn cancel_racing_signals_in_nested_sub_processes(i: usize) {
    cancel_deep(i, true, false).await;
}

multi_thread!(common::RUNS => cancel_racing_signals_in_nested_sub_processes);

// ----- races ---------------------------------------------------------------------------

/// A message for the interrupting boundary on a sub-process races the completion
/// of the work inside, 200 times on four workers: exactly one of them wins, every
/// time. Caught, the work is cancelled (its write dropped) and the token goes on from
/// the boundary; too late, the sub-process completed and the message is left in the
/// broker, not lost.
async fn a_message_boundary_races_the_work_inside(i: usize) {
    let engine = Engine::new();
    let id = format!("race-{i}");
    let handle = engine.start(&RACE, claim(&id));
    let publisher = {
        let (engine, id) = (engine.clone(), id.clone());
        tokio::spawn(async move {
            yield_jitter().await;
            engine.publish_message("stop", &id, String::from("stopped"))
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
    if stopped == 1 {
        assert_eq!(
            (data.b, data.after, data.reason.as_str()),
            (0, 0, "stopped")
        );
        assert_eq!(
            rows[head.len()..],
            [
                (1, "work", Happening::Cancelled),
                (0, "sub", interrupted("stop")),
                (2, "stop", spawned(0)),
                (2, "stop", caught(&["reason"])),
                (2, "stopped", Happening::Ended),
            ],
            "{history}"
        );
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
        assert_eq!(engine.broker_stats().buffered, 1, "the message is not lost");
    }
}

multi_thread!(common::RUNS => a_message_boundary_races_the_work_inside);

/// A BPMN error inside races a signal for the interrupting boundary on the
/// sub-process, 200 times on four workers: exactly one boundary fires, both inner
/// tracks end cancelled, the failed handler's write never lands, and afterwards no
/// subscription is left.
async fn an_error_inside_races_a_signal_boundary(i: usize) {
    let engine = Engine::new();
    let handle = engine.start(&ERROR_RACE, claim(format!("error-race-{i}")));
    let sender = {
        let engine = engine.clone();
        tokio::spawn(async move {
            yield_jitter().await;
            engine.broadcast_signal("halt", String::from("halted"))
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
    assert_eq!(engine.broadcast_signal("halt", String::new()), 0);
}

multi_thread!(common::RUNS => an_error_inside_races_a_signal_boundary);

// ----- more scoping --------------------------------------------------------------------

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

/// A terminate end event two levels down ends only the innermost sub-process: its
/// other user task is cancelled, `inner` completes, and `outer` — whose own user task
/// still waits — and the instance go on and complete.
#[tokio::test(start_paused = true)]
async fn terminate_two_levels_down_ends_only_the_innermost_scope() {
    let engine = Engine::new();
    let handle = engine.start(&TERMINATE_NESTED, claim("term-nested"));
    open(&handle, "keep").await;
    open(&handle, "wait2").await;
    complete(&handle, "quit", |_: &mut Claim| {}).await;
    until(&handle, "inner completed", |h| {
        count(h, "e1b", &Happening::Ended) == 1
    })
    .await;
    assert_eq!(open_work(&handle).await, ["keep"]);
    complete(&handle, "keep", |_: &mut Claim| {}).await;
    let (outcome, history) = finish(&handle).await;
    completed(outcome, &history);
    assert_eq!(
        steps(&history),
        [
            (0, "s", Happening::Started),
            (0, "outer", Happening::TaskStarted),
            (1, "s1", spawned(0)),
            (1, "f1", routed(&["keep", "inner"])),
            (2, "f1", spawned(1)),
            (1, "keep", Happening::Parked),
            (2, "inner", Happening::TaskStarted),
            (3, "s2", spawned(2)),
            (3, "f2", routed(&["wait2", "quit"])),
            (4, "f2", spawned(3)),
            (3, "wait2", Happening::Parked),
            (4, "quit", Happening::Parked),
            (4, "quit", done(&[])),
            (4, "stop", Happening::Terminated),
            (3, "wait2", Happening::Cancelled),
            (2, "inner", done(&[])),
            (2, "e1b", Happening::Ended),
            (1, "keep", done(&[])),
            (1, "e1a", Happening::Ended),
            (0, "outer", done(&[])),
            (0, "done", Happening::Ended),
        ]
    );
}

/// An OR-join in the parent does not wait for a sub-process that cannot reach it:
/// with one branch taken, it fires while the user task inside still waits.
#[tokio::test(start_paused = true)]
async fn an_or_join_does_not_wait_for_a_sub_process_that_cannot_reach_it() {
    let engine = Engine::new();
    let data = Claim {
        want_x: true,
        ..claim("unreachable")
    };
    let handle = engine.start(&UNREACHABLE, data);
    open(&handle, "wait_in").await;
    let history = until(&handle, "the join fired", |h| h.fired("oj") == 1).await;
    assert_eq!(count(&history, "sub", &done(&[])), 0, "{history}");
    complete(&handle, "wait_in", |_: &mut Claim| {}).await;
    let (outcome, history) = finish(&handle).await;
    assert_eq!(completed(outcome, &history).x, 1);
    assert!(at(&history, "oj", &Happening::Fired) < at(&history, "wait_in", &done(&[])));
    assert_eq!(history.ended_at(), ["done", "e1", "sub_end"]);
}

/// An OR-join inside a sub-process counts only the tokens of its own sub-process
/// instance: a parent token waiting at `later`, which could enter the sub-process
/// (and reach the join) afterwards, does not hold it. Each entry's join fires on its
/// own.
#[tokio::test(start_paused = true)]
async fn an_or_join_inside_ignores_tokens_outside_its_scope() {
    let engine = Engine::new();
    let data = Claim {
        want_x: true,
        ..claim("inner-or")
    };
    let handle = engine.start(&INNER_OR, data);
    open(&handle, "later").await;
    let history = until(&handle, "the first entry completed", |h| {
        count(h, "done", &Happening::Ended) == 1
    })
    .await;
    assert_eq!(history.fired("oj"), 1, "{history}");
    assert_eq!(open_work(&handle).await, ["later"]);
    complete(&handle, "later", |_: &mut Claim| {}).await;
    let (outcome, history) = finish(&handle).await;
    assert_eq!(completed(outcome, &history).x, 2);
    assert_eq!(history.fired("oj"), 2);
    assert_eq!(count(&history, "oj", &Happening::Merged), 0);
    assert_eq!(count(&history, "sub", &done(&[])), 2);
    assert_eq!(history.ended_at(), ["e1", "done", "e1", "done"]);
}

/// A message boundary on a sub-process correlates on the data as it is now, like
/// any boundary: after a user task inside commits a new key, a message for the old
/// key reaches the stale subscription, fails the fine check and is dropped
/// (counted); the boundary subscribes again under the new key, whose message fires
/// it; the old key then has no waiter.
async fn a_message_boundary_on_a_sub_process_correlates_on_the_current_key(i: usize) {
    let engine = Engine::new();
    let (old, new) = (format!("k1-{i}"), format!("k2-{i}"));
    let data = Claim {
        key: old.clone(),
        ..claim(format!("rekeyed-{i}"))
    };
    let handle = engine.start(&REKEYED, data);
    let key = new.clone();
    complete(&handle, "rekey", move |c: &mut Claim| c.key = key).await;
    open(&handle, "review").await;
    assert_eq!(
        engine.publish_message("nudge", &old, ()),
        Published::Delivered
    );
    common::until_true("the loop dropped the stale message", || {
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
    complete(&handle, "review", |_: &mut Claim| {}).await;
    let (outcome, history) = finish(&handle).await;
    assert_eq!(completed(outcome, &history).key, new);
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
    // The new key's subscription went with the sub-process.
    assert_eq!(
        engine.publish_message("nudge", &new, ()),
        Published::Buffered
    );
}

multi_thread!(common::RUNS => a_message_boundary_on_a_sub_process_correlates_on_the_current_key);

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
        let (outcome, history) = finish(&engine.start(&ESCALATION_EVENTS, data)).await;
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

/// Conditional boundaries on a sub-process are re-evaluated on commits inside it:
/// `bump`'s commit makes `a > 0` and the non-interrupting `note` starts a token
/// beside; completing `wait_in` with `b = 1` makes `hot` true while the sub-process
/// still runs, and it interrupts it (the commit stays).
#[tokio::test(start_paused = true)]
async fn condition_boundaries_on_a_sub_process_see_commits_inside() {
    let engine = Engine::new();
    let handle = engine.start(&CONDITIONS, claim("conditions"));
    open(&handle, "wait_in").await;
    until(&handle, "note fired", |h| {
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

/// An OR-join in the parent that the sub-process reaches only through its
/// non-interrupting boundary: with `quick` waiting there, the join waits while the
/// sub-process runs (the boundary could still fire) and fires once it has completed
/// and its boundary is gone; or, when the boundary fires, the join has every flow
/// marked and fires at once, the sub-process still running.
#[tokio::test(start_paused = true)]
async fn an_or_join_reached_through_a_boundary_waits_for_the_sub_process() {
    for poke in [false, true] {
        // A signal reaches every instance of its engine: an engine per run.
        let engine = Engine::new();
        let handle = engine.start(&VIA_BOUNDARY, claim("via-boundary"));
        open(&handle, "wait_in").await;
        until(&handle, "quick waits at the join", |h| {
            count(h, "oj", &Happening::Waiting) == 1
        })
        .await;
        if poke {
            assert_eq!(engine.broadcast_signal("poke", ()), 1);
        }
        tokio::time::sleep(Duration::from_secs(3600)).await;
        let history = handle.history().await;
        assert_eq!(spawns(&history, "poke"), usize::from(poke));
        assert_eq!(history.fired("oj"), usize::from(poke), "{history}");
        assert_eq!(count(&history, "sub", &done(&[])), 0, "{history}");
        complete(&handle, "wait_in", |_: &mut Claim| {}).await;
        let (outcome, history) = finish(&handle).await;
        completed(outcome, &history);
        assert_eq!(history.fired("oj"), 1, "{history}");
        assert_eq!(count(&history, "oj", &Happening::Merged), usize::from(poke));
        let (fired, sub_done) = (
            at(&history, "oj", &Happening::Fired),
            at(&history, "sub", &done(&[])),
        );
        assert_eq!(fired < sub_done, poke, "{history}");
        let mut ended = history.ended_at();
        ended.sort_unstable();
        assert_eq!(ended, ["done", "e1", "sub_end"], "{history}");
    }
}

/// An OR-join inside a sub-process entered twice at once counts only its own
/// entry's tokens: entry A's `quick` arrives at 2 s with `ux` unmarked, and the only
/// token that could reach `ux` is entry B's, waiting there — in another instance of
/// the scope. A's join fires at once and A completes; B's fires when `ux` is done.
#[tokio::test(start_paused = true)]
async fn an_or_join_inside_counts_only_its_own_entry() {
    let engine = Engine::new();
    let t0 = Instant::now();
    let handle = engine.start(&TWICE_OR, claim("twice-or"));
    until_slept(&handle, "ux opened", |h| {
        count(h, "ux", &Happening::Parked) == 1
    })
    .await;
    assert!(t0.elapsed() < Duration::from_secs(2));
    tokio::time::sleep_until(t0 + Duration::from_millis(2500)).await;
    let history = handle.history().await;
    assert_eq!(history.fired("oj"), 1, "{history}");
    assert_eq!(count(&history, "sub", &done(&[])), 1, "{history}");
    assert_eq!(count(&history, "done", &Happening::Ended), 1, "{history}");
    let fired = history.steps()[at(&history, "oj", &Happening::Fired)].track;
    let entries: Vec<TrackId> = history
        .steps()
        .iter()
        .filter(|s| s.node == "s1")
        .map(|s| s.track)
        .collect();
    assert_eq!(entries.len(), 2, "{history}");
    assert_eq!(entry_of(&history, fired), entries[0], "{history}");
    assert_eq!(open_work(&handle).await, ["ux"]);
    complete(&handle, "ux", |_: &mut Claim| {}).await;
    let (outcome, history) = finish(&handle).await;
    let data = completed(outcome, &history);
    assert_eq!((data.a, data.x, data.y), (1, 1, 1));
    assert_eq!(history.fired("oj"), 2);
    assert_eq!(count(&history, "oj", &Happening::Merged), 0);
    assert_eq!(count(&history, "done", &Happening::Ended), 2);
    assert_eq!(common::routes(&history, "os"), [["quick"], ["ux"]]);
}
