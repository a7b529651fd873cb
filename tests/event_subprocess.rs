//! Event sub-processes at run time (ADR-006 §2.2, §2.6, §2.7; ADR-023): at the top
//! level of a process and inside an embedded sub-process.
//!
//! - message and signal starts: an interrupting message start cancels everything
//!   running in its scope — a waiting user task, a slow task (its handler dropped,
//!   its write never lands), a running non-interrupting event sub-process — and
//!   disarms the scope's other starts at once; the instance completes when it ends.
//!   Non-interrupting signal and message starts run beside the main path as often as
//!   triggered (two messages with one key back to back: the second waits in the
//!   buffer until the start subscribes again); armed starts keep no instance alive;
//! - timer starts, on the paused clock: a top-level cycle with `times` and an
//!   interrupting timeout; in a sub-process a cycle without limit and a timeout, which
//!   never fire once the sub-process has completed; an interrupting timeout lets the
//!   parent go on;
//! - conditional starts: false→true edges of commits (a user task's, a service task's,
//!   a commit outside the sub-process), `on = [field]` filtering, true when armed (at
//!   the top: instead of the process, or beside it; on entering a sub-process: before
//!   its inner start), disarmed with their sub-process;
//! - error starts: a task's `BpmnError` (seen by `apply`) at the top level, the start
//!   naming the code preferred over a catch-all declared first, a task's own boundary
//!   first; errors from two sub-processes down caught by the enclosing sub-process or
//!   by the process, or failing the instance (`UncaughtError`); an error thrown in an
//!   event sub-process skips its siblings and goes on up;
//! - escalation starts, interrupting and non-interrupting, for a task's escalation and
//!   for escalation throw and end events in a sub-process;
//! - event sub-processes of a sub-process are armed only while it runs (before: a
//!   signal reaches no catcher, a message waits in the buffer and is caught on entry;
//!   after: no catcher, buffered); an interrupting one cancels only that sub-process's
//!   work and the parent goes on after it; a sub-process waits for its running
//!   non-interrupting runs; two instances of one sub-process each have their own;
//! - deployed processes (`Engine::deploy`): a message-started instance runs its event
//!   sub-processes, keyed on the data its start message brought, also for further
//!   messages of the start's own name;
//! - cancel and shutdown with every kind of start armed (and runs waiting) leave no
//!   subscription; a cancel races a signal storm;
//! - races on a four-worker multi-thread runtime, 200 times each (the `repeat`
//!   helper): an interrupting message start against the end of the main path (a task,
//!   or a user task completed from another task) and against the end of a
//!   sub-process's path: exactly one wins, never both, and a message too late waits
//!   in the buffer; a signal storm while the instance ends.
//!
//! Every history is checked with `check_scoped_history`; several are compared whole.
//!
//! Three tests pinned engine bugs, now fixed: a deadlocked instance hung instead of
//! failing with `Deadlock` when a non-interrupting event sub-process was armed (since
//! refined: an armed message, signal or timer trigger keeps the instance waiting, as
//! its run may still act; a conditional one alone does not); and a
//! conditional start true when its scope — an event sub-process — opened was lost
//! when a commit (the event sub-process's own start, or any other) came before its
//! first step.
//!
//! Not a bug, but worth knowing: a run of an event sub-process applies its payload
//! to its own copy of the data, as a task does, so two runs whose triggers come
//! before either commits merge field by field — an `apply` that adds up (`+=`) may
//! lose the earlier addition.

#[macro_use]
mod common;

use std::collections::HashSet;
use std::sync::{Mutex, OnceLock};
use std::time::Duration;

use common::*;
use thresh::events::{BpmnError, Escalation};
use thresh::{
    process, Engine, Happening, History, InstanceError, InstanceHandle, Outcome, ProcessData,
    Published, TaskError, TrackId,
};

#[derive(Clone, Debug, Default, PartialEq, ProcessData)]
struct Order {
    id: String,
    /// What `charge` and `work` end with: "" is `Ok`, any other code a BPMN error
    /// (`charge`) or an escalation (`work`).
    code: String,
    /// Written by the start events' `apply`.
    reason: String,
    caught: String,
    pings: u32,
    /// Written by the main path's tasks.
    worked: bool,
    slow_wrote: bool,
    total: u64,
    gate: bool,
    finished: bool,
    /// Written by the event sub-processes' tasks.
    undone: u32,
    notes: u32,
    ticks: u32,
    alarms: u32,
    after: u32,
}

fn order(id: &str) -> Order {
    Order {
        id: id.into(),
        ..Order::default()
    }
}

/// A day: longer than any test waits on the paused clock.
const DAY: Duration = Duration::from_secs(86_400);

/// The ids of the orders whose `slow` handler was dropped before it finished.
fn slow_dropped() -> &'static Mutex<HashSet<String>> {
    static DROPPED: OnceLock<Mutex<HashSet<String>>> = OnceLock::new();
    DROPPED.get_or_init(Default::default)
}

struct DropMark(String);

impl Drop for DropMark {
    fn drop(&mut self) {
        slow_dropped().lock().unwrap().insert(self.0.clone());
    }
}

/// Writes `slow_wrote` to its copy, then takes a day.
async fn slow(o: &mut Order) -> Result<(), TaskError> {
    let mark = DropMark(o.id.clone());
    o.slow_wrote = true;
    tokio::time::sleep(DAY).await;
    std::mem::forget(mark);
    Ok(())
}

/// Yields once (so the other branches park first), marks `worked`, then ends with
/// `code` as a BPMN error.
async fn charge(o: &mut Order) -> Result<(), TaskError> {
    tokio::task::yield_now().await;
    o.worked = true;
    match o.code.as_str() {
        "" => Ok(()),
        code => Err(TaskError::bpmn(code, format!("{} refused", o.id))),
    }
}

/// Yields once, marks `worked`, then raises `code` as an escalation.
async fn work(o: &mut Order) -> Result<(), TaskError> {
    tokio::task::yield_now().await;
    o.worked = true;
    match o.code.as_str() {
        "" => Ok(()),
        code => Err(TaskError::escalate(code)),
    }
}

async fn undo(o: &mut Order) -> Result<(), TaskError> {
    o.undone += 1;
    Ok(())
}

async fn note(o: &mut Order) -> Result<(), TaskError> {
    o.notes += 1;
    Ok(())
}

async fn tick(o: &mut Order) -> Result<(), TaskError> {
    o.ticks += 1;
    Ok(())
}

async fn alarm(o: &mut Order) -> Result<(), TaskError> {
    o.alarms += 1;
    Ok(())
}

async fn bump(o: &mut Order) -> Result<(), TaskError> {
    o.total += 200;
    Ok(())
}

async fn after(o: &mut Order) -> Result<(), TaskError> {
    o.after += 1;
    Ok(())
}

/// Varies the interleaving (`jitter`), then marks `worked`.
async fn quick(o: &mut Order) -> Result<(), TaskError> {
    jitter().await;
    o.worked = true;
    Ok(())
}

process! {
    /// A user task and a slow task side by side; an interrupting message start that
    /// waits at a user task, and a non-interrupting signal start that waits at one.
    CANCELLABLE: Order {
        start    begin;
        parallel fork;
        user     review;
        task     slow = slow;
        parallel join;
        end      done;
        begin -> fork -> review, slow;
        review, slow -> join -> done;
        event_subprocess on_cancel {
            start cancel: message("cancel", key = |o| o.id.clone(), apply = |o, p: &String| o.reason = p.clone());
            task  undo = undo;
            user  confirm;
            end   cancelled;
            cancel -> undo -> confirm -> cancelled;
        }
        event_subprocess on_ping {
            start ping: non_interrupting signal("ping", apply = |o, n: &u32| o.pings += *n);
            user  ack;
            end   acked;
            ping -> ack -> acked;
        }
    }

    /// A user task; non-interrupting signal and message starts.
    PINGED: Order {
        start begin;
        user  review;
        end   done;
        begin -> review -> done;
        event_subprocess on_ping {
            start ping: non_interrupting signal("ping", apply = |o, n: &u32| o.pings += *n);
            task  note = note;
            end   noted;
            ping -> note -> noted;
        }
        event_subprocess on_nudge {
            start nudge: non_interrupting message("nudge", key = |o| o.id.clone(), apply = |o, p: &String| o.reason.push_str(p));
            end   nudged;
            nudge -> nudged;
        }
    }

    /// A user task; an interrupting timeout at 45 s and a cycle every 10 s, 3 times.
    TIMED: Order {
        start begin;
        user  review;
        end   done;
        begin -> review -> done;
        event_subprocess on_timeout {
            start timeout: timer(Duration::from_secs(45));
            task  undo = undo;
            end   expired;
            timeout -> undo -> expired;
        }
        event_subprocess on_tick {
            start tick: non_interrupting timer(every = Duration::from_secs(10), times = 3);
            task  count = tick;
            end   counted;
            tick -> count -> counted;
        }
    }

    /// The same timers inside a sub-process (the cycle without a limit); a user task
    /// after it.
    TIMED_SCOPE: Order {
        start begin;
        subprocess work {
            start w_begin;
            user  inner;
            end   w_done;
            w_begin -> inner -> w_done;
            event_subprocess on_timeout {
                start timeout: timer(Duration::from_secs(45));
                task  undo = undo;
                end   expired;
                timeout -> undo -> expired;
            }
            event_subprocess on_tick {
                start tick: non_interrupting timer(every = Duration::from_secs(10));
                task  count = tick;
                end   counted;
                tick -> count -> counted;
            }
        }
        user  later;
        end   done;
        begin -> work -> later -> done;
    }

    /// `set` commits what the test gives it, in a loop until `finished`; an alarm
    /// whenever `total > 100 && gate` becomes true, re-evaluated only on commits that
    /// change `total`.
    COND_FILTERED: Order {
        start     begin;
        catch     top: link("set");
        user      set;
        exclusive more;
        throw     again: link("set");
        end       done;
        begin -> set -> more;
        top -> set;
        more -> again when |o| !o.finished;
        more -> done else;
        event_subprocess on_big {
            start big: non_interrupting condition(|o| o.total > 100 && o.gate, on = [total]);
            task  alarm = alarm;
            end   alarmed;
            big -> alarm -> alarmed;
        }
    }

    /// The same condition, re-evaluated on every commit.
    COND_UNFILTERED: Order {
        start     begin;
        catch     top: link("set");
        user      set;
        exclusive more;
        throw     again: link("set");
        end       done;
        begin -> set -> more;
        top -> set;
        more -> again when |o| !o.finished;
        more -> done else;
        event_subprocess on_big {
            start big: non_interrupting condition(|o| o.total > 100 && o.gate);
            task  alarm = alarm;
            end   alarmed;
            big -> alarm -> alarmed;
        }
    }

    /// An interrupting conditional start; `bump` adds 200 to `total`.
    COND_BUMP: Order {
        start begin;
        user  first;
        task  bump = bump;
        user  second;
        end   done;
        begin -> first -> bump -> second -> done;
        event_subprocess on_big {
            start big: condition(|o| o.total > 100, on = [total]);
            task  alarm = alarm;
            end   alarmed;
            big -> alarm -> alarmed;
        }
    }

    /// A non-interrupting conditional start.
    COND_BESIDE: Order {
        start begin;
        user  review;
        end   done;
        begin -> review -> done;
        event_subprocess on_big {
            start big: non_interrupting condition(|o| o.total > 100, on = [total]);
            task  alarm = alarm;
            end   alarmed;
            big -> alarm -> alarmed;
        }
    }

    /// An interrupting conditional start inside a sub-process.
    COND_SCOPED: Order {
        start begin;
        subprocess work {
            start w_begin;
            user  inner;
            end   w_done;
            w_begin -> inner -> w_done;
            event_subprocess on_big {
                start big: condition(|o| o.total > 100, on = [total]);
                task  alarm = alarm;
                end   alarmed;
                big -> alarm -> alarmed;
            }
        }
        user  later;
        end   done;
        begin -> work -> later -> done;
    }

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

    /// A sub-process with an interrupting message start and a non-interrupting
    /// signal start, entered after `before`; a user task `side` beside it all.
    SCOPED: Order {
        start    begin;
        parallel fork;
        user     side;
        user     before;
        subprocess work {
            start w_begin;
            user  inner;
            end   w_done;
            w_begin -> inner -> w_done;
            event_subprocess on_abort {
                start abort: message("abort", key = |o| o.id.clone(), apply = |o, p: &String| o.reason = p.clone());
                task  undo = undo;
                end   aborted;
                abort -> undo -> aborted;
            }
            event_subprocess on_poke {
                start poke: non_interrupting signal("poke");
                task  note = note;
                end   noted;
                poke -> note -> noted;
            }
        }
        task     after = after;
        parallel join;
        end      done;
        begin -> fork -> side, before;
        before -> work -> after;
        side, after -> join -> done;
    }

    /// Started by an `order` message; top-level event sub-processes.
    DEPLOYED: Order {
        start received: message("order", apply = |o, id: &String| o.id = id.clone());
        user  review;
        end   done;
        received -> review -> done;
        event_subprocess on_cancel {
            start cancel: message("cancel", key = |o| o.id.clone(), apply = |o, p: &String| o.reason = p.clone());
            task  undo = undo;
            end   cancelled;
            cancel -> undo -> cancelled;
        }
        event_subprocess on_ping {
            start ping: non_interrupting signal("ping");
            task  note = note;
            end   noted;
            ping -> note -> noted;
        }
    }

    /// Started by an `order` message; later `order` messages with its id run its
    /// non-interrupting event sub-process.
    DEPLOYED_MORE: Order {
        start received: message("order", apply = |o, id: &String| o.id = id.clone());
        user  review;
        end   done;
        received -> review -> done;
        event_subprocess on_more {
            start more: non_interrupting message("order", key = |o| o.id.clone(), apply = |o, id: &String| o.reason.push_str(id));
            task  note = note;
            end   noted;
            more -> note -> noted;
        }
    }

    /// The same as `STUCK` without the event sub-process.
    STUCK_PLAIN: Order {
        start     begin;
        exclusive pick;
        task      a = after;
        task      b = after;
        parallel  join;
        end       done;
        begin -> pick;
        pick -> a when |o| o.total == 0;
        pick -> b else;
        a, b -> join -> done;
    }

    /// Non-interrupting event sub-processes with a conditional event sub-process of
    /// their own (`total > 100`, true from the start here): `on_ping`, and `on_pong`,
    /// whose start's `apply` commits `pings`; a signal catch `go` beside the user
    /// task commits `gate`.
    NESTED_COND: Order {
        start    begin;
        parallel fork;
        catch    go: signal("go", apply = |o, _p: &()| o.gate = true);
        user     review;
        parallel join;
        end      done;
        begin -> fork -> go, review;
        go, review -> join -> done;
        event_subprocess on_ping {
            start ping: non_interrupting signal("ping");
            user  ack;
            end   acked;
            ping -> ack -> acked;
            event_subprocess on_hot {
                start hot: non_interrupting condition(|o| o.total > 100, on = [total]);
                task  alarm = alarm;
                end   alarmed;
                hot -> alarm -> alarmed;
            }
        }
        event_subprocess on_pong {
            start pong: non_interrupting signal("pong", apply = |o, _p: &()| o.pings += 1);
            user  pong_ack;
            end   pong_acked;
            pong -> pong_ack -> pong_acked;
            event_subprocess on_pong_hot {
                start pong_hot: non_interrupting condition(|o| o.total > 100, on = [total]);
                task  pong_alarm = alarm;
                end   pong_alarmed;
                pong_hot -> pong_alarm -> pong_alarmed;
            }
        }
    }

    /// Every kind of subscribing start armed at the top and in a sub-process; the
    /// non-interrupting ones wait at a user task when they run.
    ARMED: Order {
        start    begin;
        parallel fork;
        user     review;
        subprocess work {
            start w_begin;
            user  inner;
            end   w_done;
            w_begin -> inner -> w_done;
            event_subprocess on_poke {
                start poke: non_interrupting signal("poke");
                user  poke_ack;
                end   poked;
                poke -> poke_ack -> poked;
            }
            event_subprocess on_abort {
                start abort: message("abort", key = |o| o.id.clone());
                end   aborted;
                abort -> aborted;
            }
            event_subprocess on_inner_late {
                start inner_late: timer(Duration::from_secs(3600));
                end   inner_expired;
                inner_late -> inner_expired;
            }
        }
        parallel join;
        end      done;
        begin -> fork -> review, work;
        review, work -> join -> done;
        event_subprocess on_cancel {
            start cancel: message("cancel", key = |o| o.id.clone());
            end   cancelled;
            cancel -> cancelled;
        }
        event_subprocess on_ping {
            start ping: non_interrupting signal("ping");
            user  ping_ack;
            end   pinged;
            ping -> ping_ack -> pinged;
        }
        event_subprocess on_late {
            start late: timer(Duration::from_secs(3600));
            end   expired;
            late -> expired;
        }
        event_subprocess on_big {
            start big: condition(|o| o.total > 100, on = [total]);
            end   big_end;
            big -> big_end;
        }
    }

    /// An interrupting conditional start in a sub-process; `side`, beside it, is
    /// what commits `total`.
    COND_ACROSS: Order {
        start    begin;
        parallel fork;
        user     side;
        subprocess work {
            start w_begin;
            user  inner;
            end   w_done;
            w_begin -> inner -> w_done;
            event_subprocess on_big {
                start big: condition(|o| o.total > 100, on = [total]);
                task  alarm = alarm;
                end   alarmed;
                big -> alarm -> alarmed;
            }
        }
        task     after = after;
        parallel join;
        end      done;
        begin -> fork -> side, work;
        work -> after;
        side, after -> join -> done;
    }

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

    /// Two tokens run the sub-process `work` at once, each its own instance of it
    /// with its own interrupting message start (the same name and key).
    TWICE: Order {
        start    begin;
        parallel fork;
        task     left = after;
        task     right = after;
        subprocess work {
            start w_begin;
            user  inner;
            end   w_done;
            w_begin -> inner -> w_done;
            event_subprocess on_abort {
                start abort: message("abort", key = |o| o.id.clone());
                task  undo = undo;
                end   aborted;
                abort -> undo -> aborted;
            }
        }
        end      done;
        begin -> fork -> left, right;
        left -> work;
        right -> work;
        work -> done;
    }

    /// A token that can never leave the parallel join (the exclusive split sends one
    /// token only); the only event sub-process is non-interrupting.
    STUCK: Order {
        start     begin;
        exclusive pick;
        task      a = after;
        task      b = after;
        parallel  join;
        end       done;
        begin -> pick;
        pick -> a when |o| o.total == 0;
        pick -> b else;
        a, b -> join -> done;
        event_subprocess on_ping {
            start ping: non_interrupting signal("ping");
            task  note = note;
            end   noted;
            ping -> note -> noted;
        }
    }

    /// `quick` races an interrupting message start.
    RACE_TASK: Order {
        start begin;
        task  quick = quick;
        end   done;
        begin -> quick -> done;
        event_subprocess on_cancel {
            start cancel: message("cancel", key = |o| o.id.clone(), apply = |o, p: &String| o.reason = p.clone());
            task  undo = undo;
            end   cancelled;
            cancel -> undo -> cancelled;
        }
    }

    /// A user task's completion races an interrupting message start.
    RACE_USER: Order {
        start begin;
        user  hold;
        end   done;
        begin -> hold -> done;
        event_subprocess on_cancel {
            start cancel: message("cancel", key = |o| o.id.clone(), apply = |o, p: &String| o.reason = p.clone());
            task  undo = undo;
            end   cancelled;
            cancel -> undo -> cancelled;
        }
    }

    /// `quick` in a sub-process races the sub-process's interrupting message start;
    /// `after` follows the sub-process either way.
    RACE_SCOPED: Order {
        start begin;
        subprocess work {
            start w_begin;
            task  quick = quick;
            end   w_done;
            w_begin -> quick -> w_done;
            event_subprocess on_abort {
                start abort: message("abort", key = |o| o.id.clone(), apply = |o, p: &String| o.reason = p.clone());
                task  undo = undo;
                end   aborted;
                abort -> undo -> aborted;
            }
        }
        task after = after;
        end  done;
        begin -> work -> after -> done;
    }

    /// A user task; a non-interrupting signal start.
    STORM: Order {
        start begin;
        user  review;
        end   done;
        begin -> review -> done;
        event_subprocess on_ping {
            start ping: non_interrupting signal("ping");
            task  note = note;
            end   noted;
            ping -> note -> noted;
        }
    }
}

// ----- helpers ---------------------------------------------------------------------

/// Wait for the outcome (failing the test if the instance hangs), read the history
/// and check its structure as a process with scopes.
async fn outcome_of<D: Clone + std::fmt::Debug>(
    handle: &InstanceHandle<D>,
) -> (Outcome<D>, History) {
    finish_with(handle, HANG, check_scoped_history).await
}

/// Broadcast the signal `name` 40 times from a thread of its own, yielding in
/// between; returns the thread, whose result is how many catchers the broadcasts
/// reached. It begins once this task has been scheduled again, so the caller's next
/// steps race it.
fn storm(engine: &Engine, name: &'static str) -> std::thread::JoinHandle<usize> {
    let (go, ready) = tokio::sync::oneshot::channel::<()>();
    let engine = engine.clone();
    let thread = std::thread::spawn(move || {
        let _ = ready.blocking_recv();
        (0..40)
            .map(|_| {
                let reached = engine.broadcast_signal(name, ());
                std::thread::sleep(Duration::from_micros(100));
                reached
            })
            .sum::<usize>()
    });
    let _ = go.send(());
    thread
}

/// How many times `node` ended a track.
fn ends(history: &History, node: &str) -> usize {
    count(history, node, &Happening::Ended)
}

/// How many times an event sub-process started at `start`.
fn runs(history: &History, start: &str) -> usize {
    count(history, start, &Happening::Started)
}

/// The open user tasks, sorted.
async fn open_work<D: Clone>(handle: &InstanceHandle<D>) -> Vec<&'static str> {
    let mut open: Vec<&'static str> = handle.open_work().await.iter().map(|w| w.node).collect();
    open.sort_unstable();
    open
}

/// Wait until the user task `node` is open.
async fn open<D: Clone>(handle: &InstanceHandle<D>, node: &str) {
    for _ in 0..200_000 {
        if handle.open_work().await.iter().any(|w| w.node == node) {
            return;
        }
        assert!(
            !handle.is_finished(),
            "instance {} ended before `{node}` opened\n{}",
            handle.id(),
            handle.history().await
        );
        tokio::task::yield_now().await;
    }
    panic!(
        "instance {}: `{node}` never opened\n{}",
        handle.id(),
        handle.history().await
    );
}

/// Wait until the user task `node` is open, then complete it with `update`.
async fn complete<D: Clone + Send + 'static>(
    handle: &InstanceHandle<D>,
    node: &str,
    update: impl FnOnce(&mut D) + Send + 'static,
) {
    open(handle, node).await;
    handle
        .complete(node, update)
        .await
        .unwrap_or_else(|e| panic!("completing `{node}`: {e}"));
}

/// Let every ready task run: on a paused current-thread runtime time moves only once
/// nothing can run, so this returns when the instance is idle.
async fn settle() {
    tokio::time::sleep(Duration::from_millis(1)).await;
}

fn spawned(from: u32) -> Happening {
    Happening::Spawned {
        from: TrackId(from),
    }
}

fn routed(to: &[&'static str]) -> Happening {
    Happening::Routed { to: to.to_vec() }
}

fn error_thrown(code: &str) -> Happening {
    Happening::ErrorThrown { code: code.into() }
}

fn escalated(code: &str) -> Happening {
    Happening::Escalated { code: code.into() }
}

type Row = (u32, &'static str, Happening);

/// The history's rows with the `Cancelled` ones of one loop step sorted by track (the
/// loop cancels a scope's tracks in its own order).
fn rows(history: &History) -> Vec<Row> {
    let mut rows = steps(history);
    let mut i = 0;
    while i < rows.len() {
        let mut j = i;
        while j < rows.len() && rows[j].2 == Happening::Cancelled {
            j += 1;
        }
        rows[i..j].sort_by_key(|r| r.0);
        i = j.max(i + 1);
    }
    rows
}

// ----- interrupting and non-interrupting message and signal starts -----------------

/// An interrupting message start at the top level, while a user task waits, a slow
/// task runs and a non-interrupting event sub-process waits at its own user task:
/// all three are cancelled (the slow handler is dropped, its write never lands), the
/// other event sub-processes are disarmed at once (a signal reaches no catcher, a
/// second message is buffered, even while the interrupting one still runs), and the
/// instance completes when the interrupting one ends.
#[tokio::test(start_paused = true)]
async fn an_interrupting_message_start_cancels_the_process_and_completes_it() {
    let engine = Engine::new();
    let handle = engine.start(&CANCELLABLE, order("A-1"));
    open(&handle, "review").await;
    until(&handle, "slow runs", |h| {
        count(h, "slow", &Happening::TaskStarted) == 1
    })
    .await;
    assert_eq!(engine.broadcast_signal("ping", 2_u32), 1);
    open(&handle, "ack").await;
    assert_eq!(
        engine.publish_message("cancel", "A-1", "customer".to_string()),
        Published::Delivered
    );
    open(&handle, "confirm").await;
    assert_eq!(open_work(&handle).await, ["confirm"]);
    assert_eq!(engine.broadcast_signal("ping", 1_u32), 0);
    assert_eq!(
        engine.publish_message("cancel", "A-1", "again".to_string()),
        Published::Buffered
    );
    assert!(handle.complete("review", |_| {}).await.is_err());
    complete(&handle, "confirm", |_| {}).await;
    let (outcome, history) = outcome_of(&handle).await;
    let data = completed(outcome, &history);
    assert_eq!(
        (
            data.reason.as_str(),
            data.undone,
            data.pings,
            data.slow_wrote
        ),
        ("customer", 1, 2, false)
    );
    assert!(slow_dropped().lock().unwrap().contains("A-1"));
    assert_eq!(
        rows(&history),
        vec![
            (0, "begin", Happening::Started),
            (0, "fork", routed(&["review", "slow"])),
            (1, "fork", spawned(0)),
            (0, "review", Happening::Parked),
            (1, "slow", Happening::TaskStarted),
            (2, "ping", Happening::Started),
            (2, "ping", caught(&["pings"])),
            (2, "ack", Happening::Parked),
            (0, "review", Happening::Cancelled),
            (1, "slow", Happening::Cancelled),
            (2, "ack", Happening::Cancelled),
            (3, "cancel", Happening::Started),
            (3, "cancel", caught(&["reason"])),
            (3, "undo", Happening::TaskStarted),
            (3, "undo", done(&["undone"])),
            (3, "confirm", Happening::Parked),
            (3, "confirm", done(&[])),
            (3, "cancelled", Happening::Ended),
        ]
    );
    assert_eq!(engine.broker_stats().buffered, 1);
}

/// Non-interrupting signal and message starts, each triggered twice while the main
/// path waits: four runs beside it, each applying its payload; the main path then
/// completes the instance, after which nothing is armed. The two messages, with the
/// same key, are published back to back: the second waits in the buffer until the
/// start has subscribed again.
#[tokio::test(start_paused = true)]
async fn non_interrupting_starts_run_beside_the_main_path_as_often_as_triggered() {
    let engine = Engine::new();
    let handle = engine.start(&PINGED, order("P-1"));
    open(&handle, "review").await;
    assert_eq!(engine.broadcast_signal("ping", 2_u32), 1);
    until(&handle, "the first ping is caught", |h| {
        count(h, "ping", &caught(&["pings"])) == 1
    })
    .await;
    assert_eq!(engine.broadcast_signal("ping", 5_u32), 1);
    assert_eq!(
        engine.publish_message("nudge", "P-1", "a".to_string()),
        Published::Delivered
    );
    assert_eq!(
        engine.publish_message("nudge", "P-1", "b".to_string()),
        Published::Buffered
    );
    until(&handle, "every run ended", |h| {
        ends(h, "noted") == 2 && ends(h, "nudged") == 2
    })
    .await;
    assert_eq!(open_work(&handle).await, ["review"]);
    complete(&handle, "review", |_| {}).await;
    let (outcome, history) = outcome_of(&handle).await;
    let data = completed(outcome, &history);
    assert_eq!((data.pings, data.notes), (7, 2));
    // Both runs caught their message. Each run applies its payload to its own copy
    // of the data as it was when its trigger came, and a commit keeps the later
    // write of a field: when the second message came before the first run's commit,
    // "a" is overwritten.
    assert!(["b", "ab"].contains(&data.reason.as_str()), "{data:?}");
    assert_eq!((runs(&history, "ping"), runs(&history, "nudge")), (2, 2));
    assert_eq!(count(&history, "review", &done(&[])), 1);
    assert_eq!(ends(&history, "done"), 1);
    assert_eq!(engine.broadcast_signal("ping", 1_u32), 0);
    assert_eq!(
        engine.publish_message("nudge", "P-1", "c".to_string()),
        Published::Buffered
    );
    assert_eq!(engine.broker_stats().delivered, 2);
}

/// The main path completing at once is not held up by armed event sub-processes.
#[tokio::test(start_paused = true)]
async fn armed_event_sub_processes_do_not_keep_an_instance_alive() {
    let engine = Engine::new();
    let handle = engine.start(&PINGED, order("P-2"));
    complete(&handle, "review", |_| {}).await;
    let (outcome, history) = outcome_of(&handle).await;
    completed(outcome, &history);
    assert_eq!(
        steps(&history),
        vec![
            (0, "begin", Happening::Started),
            (0, "review", Happening::Parked),
            (0, "review", done(&[])),
            (0, "done", Happening::Ended),
        ]
    );
    assert_eq!(engine.broadcast_signal("ping", 1_u32), 0);
}

// ----- timer starts (paused clock) -------------------------------------------------

/// A top-level cycle (every 10 s, 3 times) runs beside the main path, and an
/// interrupting timer at 45 s cancels the waiting user task and completes the
/// instance.
#[tokio::test(start_paused = true)]
async fn timer_starts_at_the_top_level_cycle_then_interrupt() {
    let engine = Engine::new();
    let t0 = tokio::time::Instant::now();
    let handle = engine.start(&TIMED, order("T-1"));
    open(&handle, "review").await;
    tokio::time::advance(Duration::from_secs(9)).await;
    settle().await;
    assert_eq!(runs(&handle.history().await, "tick"), 0);
    for expected in 1..=3 {
        tokio::time::advance(Duration::from_secs(10)).await;
        settle().await;
        let history = handle.history().await;
        assert_eq!(runs(&history, "tick"), expected, "{history}");
    }
    let (outcome, history) = outcome_of(&handle).await;
    assert_eq!(t0.elapsed(), Duration::from_secs(45));
    let data = completed(outcome, &history);
    assert_eq!((data.ticks, data.undone), (3, 1));
    assert_eq!(count(&history, "review", &Happening::Cancelled), 1);
    assert_eq!(ends(&history, "done"), 0);
    assert_eq!(ends(&history, "expired"), 1);
}

/// The main path ends before the interrupting timer: the cycle ran twice, nothing
/// else fires.
#[tokio::test(start_paused = true)]
async fn timer_starts_at_the_top_level_end_with_the_instance() {
    let engine = Engine::new();
    let handle = engine.start(&TIMED, order("T-2"));
    open(&handle, "review").await;
    tokio::time::sleep(Duration::from_secs(25)).await;
    complete(&handle, "review", |_| {}).await;
    let (outcome, history) = outcome_of(&handle).await;
    let data = completed(outcome, &history);
    assert_eq!((data.ticks, data.undone), (2, 0));
    assert_eq!(runs(&history, "timeout"), 0);
}

/// Timers in a sub-process: the cycle (no limit) fires every 10 s while it runs; once
/// it has completed, neither the cycle nor the 45 s timeout fires again, for an hour.
#[tokio::test(start_paused = true)]
async fn timer_starts_in_a_sub_process_stop_when_it_completes() {
    let engine = Engine::new();
    let handle = engine.start(&TIMED_SCOPE, order("T-3"));
    open(&handle, "inner").await;
    tokio::time::sleep(Duration::from_secs(25)).await;
    complete(&handle, "inner", |_| {}).await;
    open(&handle, "later").await;
    tokio::time::sleep(Duration::from_secs(3600)).await;
    let history = handle.history().await;
    assert_eq!(
        (runs(&history, "tick"), runs(&history, "timeout")),
        (2, 0),
        "{history}"
    );
    complete(&handle, "later", |_| {}).await;
    let (outcome, history) = outcome_of(&handle).await;
    let data = completed(outcome, &history);
    assert_eq!((data.ticks, data.undone), (2, 0));
    assert_eq!(count(&history, "work", &done(&[])), 1);
}

/// The sub-process's interrupting timeout at 45 s cancels its user task (after four
/// cycles); the token goes on after the sub-process, and no timer of it fires again.
#[tokio::test(start_paused = true)]
async fn an_interrupting_timer_in_a_sub_process_lets_the_parent_go_on() {
    let engine = Engine::new();
    let t0 = tokio::time::Instant::now();
    let handle = engine.start(&TIMED_SCOPE, order("T-4"));
    open(&handle, "inner").await;
    tokio::time::sleep(Duration::from_secs(44)).await;
    assert_eq!(open_work(&handle).await, ["inner"]);
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert_eq!(open_work(&handle).await, ["later"]);
    let history = handle.history().await;
    let at = common::position(&history, "timeout", |w| *w == Happening::Started);
    assert_eq!(history.steps()[at - 1].node, "inner", "{history}");
    assert_eq!(
        history.steps()[at - 1].what,
        Happening::Cancelled,
        "{history}"
    );
    assert_eq!(t0.elapsed(), Duration::from_secs(46));
    tokio::time::sleep(Duration::from_secs(3600)).await;
    let history = handle.history().await;
    assert_eq!(
        (runs(&history, "tick"), runs(&history, "timeout")),
        (4, 1),
        "{history}"
    );
    assert_eq!(count(&history, "inner", &Happening::Cancelled), 1);
    complete(&handle, "later", |_| {}).await;
    let (outcome, history) = outcome_of(&handle).await;
    let data = completed(outcome, &history);
    assert_eq!((data.ticks, data.undone), (4, 1));
}

// ----- conditional starts ----------------------------------------------------------

/// One lap of `set`: its commit, and the alarms expected after it.
type Lap = (fn(&mut Order), u32);

/// Drive `COND_FILTERED` or `COND_UNFILTERED` through commits of `set`, each with
/// the alarm count expected after it.
async fn drive_conditions(process: &'static thresh::Process<Order>, script: Vec<Lap>) {
    let engine = Engine::new();
    let handle = engine.start(process, order("C-1"));
    open(&handle, "set").await;
    settle().await;
    assert_eq!(runs(&handle.history().await, "big"), 0);
    let laps = script.len();
    for (lap, (update, alarms)) in script.into_iter().enumerate() {
        complete(&handle, "set", update).await;
        if lap + 1 < laps {
            parked_at(&handle, "set", lap + 2).await;
        }
        settle().await;
        let history = handle.history().await;
        assert_eq!(
            ends(&history, "alarmed") as u32,
            alarms,
            "lap {lap}\n{history}"
        );
    }
    let (outcome, history) = outcome_of(&handle).await;
    let data = completed(outcome, &history);
    assert_eq!(data.alarms as usize, runs(&history, "big"));
}

/// `on = [total]`: a commit of `gate` alone is not looked at, even when it makes the
/// condition true; the next commit of `total` finds it true and fires (false→true);
/// a commit keeping it true does not; false then true again fires again.
#[tokio::test(start_paused = true)]
async fn a_conditional_start_fires_on_edges_of_commits_to_its_fields() {
    drive_conditions(
        &COND_FILTERED,
        vec![
            (|o| o.total = 150, 0),
            (|o| o.gate = true, 0),
            (|o| o.total = 151, 1),
            (|o| o.total = 152, 1),
            (|o| o.total = 0, 1),
            (|o| o.total = 200, 2),
            (|o| o.finished = true, 2),
        ],
    )
    .await;
}

/// Without `on`, every commit re-evaluates: the commit of `gate` fires.
#[tokio::test(start_paused = true)]
async fn a_conditional_start_without_fields_looks_at_every_commit() {
    drive_conditions(
        &COND_UNFILTERED,
        vec![
            (|o| o.total = 150, 0),
            (|o| o.gate = true, 1),
            (|o| o.total = 151, 1),
            (|o| o.gate = false, 1),
            (|o| o.gate = true, 2),
            (|o| o.finished = true, 2),
        ],
    )
    .await;
}

/// An interrupting conditional start, false when armed, made true by the commit of a
/// task (`bump`): it fires on that commit, the token leaving `bump` goes no further,
/// and the instance completes when the event sub-process ends.
#[tokio::test(start_paused = true)]
async fn an_interrupting_conditional_start_fires_on_a_tasks_commit() {
    let engine = Engine::new();
    let handle = engine.start(&COND_BUMP, order("C-2"));
    complete(&handle, "first", |o| o.gate = true).await;
    let (outcome, history) = outcome_of(&handle).await;
    let data = completed(outcome, &history);
    assert_eq!((data.total, data.alarms), (200, 1));
    assert_eq!(
        rows(&history),
        vec![
            (0, "begin", Happening::Started),
            (0, "first", Happening::Parked),
            (0, "first", done(&["gate"])),
            (0, "bump", Happening::TaskStarted),
            (0, "bump", done(&["total"])),
            (0, "bump", Happening::Cancelled),
            (1, "big", Happening::Started),
            (1, "big", caught(&[])),
            (1, "alarm", Happening::TaskStarted),
            (1, "alarm", done(&["alarms"])),
            (1, "alarmed", Happening::Ended),
        ]
    );
}

/// An interrupting conditional start true when the process's scope opens fires at
/// once: the main path never starts.
#[tokio::test(start_paused = true)]
async fn an_interrupting_conditional_start_true_when_armed_runs_instead_of_the_process() {
    let engine = Engine::new();
    let data = Order {
        total: 150,
        ..order("C-3")
    };
    let (outcome, history) = outcome_of(&engine.start(&COND_BUMP, data)).await;
    let data = completed(outcome, &history);
    assert_eq!(data.alarms, 1);
    assert_eq!(
        steps(&history),
        vec![
            (0, "big", Happening::Started),
            (0, "big", caught(&[])),
            (0, "alarm", Happening::TaskStarted),
            (0, "alarm", done(&["alarms"])),
            (0, "alarmed", Happening::Ended),
        ]
    );
}

/// A non-interrupting conditional start true when armed runs once beside the main
/// path, and not again while the condition stays true.
#[tokio::test(start_paused = true)]
async fn a_non_interrupting_conditional_start_true_when_armed_runs_beside() {
    let engine = Engine::new();
    let data = Order {
        total: 150,
        ..order("C-4")
    };
    let handle = engine.start(&COND_BESIDE, data);
    open(&handle, "review").await;
    settle().await;
    complete(&handle, "review", |o| o.total = 300).await;
    let (outcome, history) = outcome_of(&handle).await;
    let data = completed(outcome, &history);
    assert_eq!((data.alarms, data.total), (1, 300));
    assert_eq!(runs(&history, "big"), 1);
    assert_eq!(ends(&history, "done"), 1);
}

/// A conditional start in a sub-process is armed when the token enters it: true
/// then, it takes the sub-process over before its inner start runs, and the token
/// goes on after the sub-process.
#[tokio::test(start_paused = true)]
async fn a_conditional_start_in_a_sub_process_true_on_entry_takes_it_over() {
    let engine = Engine::new();
    let data = Order {
        total: 150,
        ..order("C-5")
    };
    let handle = engine.start(&COND_SCOPED, data);
    complete(&handle, "later", |_| {}).await;
    let (outcome, history) = outcome_of(&handle).await;
    let data = completed(outcome, &history);
    assert_eq!(data.alarms, 1);
    assert_eq!(
        steps(&history),
        vec![
            (0, "begin", Happening::Started),
            (0, "work", Happening::TaskStarted),
            (1, "big", Happening::Started),
            (1, "big", caught(&[])),
            (1, "alarm", Happening::TaskStarted),
            (1, "alarm", done(&["alarms"])),
            (1, "alarmed", Happening::Ended),
            (0, "work", done(&[])),
            (0, "later", Happening::Parked),
            (0, "later", done(&[])),
            (0, "done", Happening::Ended),
        ]
    );
}

/// Once the sub-process has completed, its conditional start is disarmed: a commit
/// making the condition true fires nothing; while it runs, a commit does.
#[tokio::test(start_paused = true)]
async fn a_conditional_start_in_a_sub_process_lives_as_long_as_the_sub_process() {
    let engine = Engine::new();
    let handle = engine.start(&COND_SCOPED, order("C-6"));
    complete(&handle, "inner", |_| {}).await;
    complete(&handle, "later", |o| o.total = 500).await;
    let (outcome, history) = outcome_of(&handle).await;
    let data = completed(outcome, &history);
    assert_eq!((data.alarms, data.total), (0, 500));

    let handle = engine.start(&COND_SCOPED, order("C-7"));
    complete(&handle, "inner", |o| o.total = 500).await;
    complete(&handle, "later", |_| {}).await;
    let (outcome, history) = outcome_of(&handle).await;
    let data = completed(outcome, &history);
    assert_eq!(data.alarms, 1);
    assert_eq!(
        (ends(&history, "w_done"), ends(&history, "alarmed")),
        (0, 1),
        "{history}"
    );
}

// ----- error starts ----------------------------------------------------------------

/// Run `ERRORS` with `charge` ending with `code`.
async fn charge_with(engine: &Engine, code: &str) -> (Outcome<Order>, History) {
    let data = Order {
        code: code.into(),
        ..order("E-1")
    };
    let handle = engine.start(&ERRORS, data);
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

/// Run `NESTED` with `charge` (two sub-processes deep) ending with `code`.
async fn nested_with(code: &str) -> (Outcome<Order>, History) {
    let engine = Engine::new();
    let data = Order {
        code: code.into(),
        ..order("E-2")
    };
    outcome_of(&engine.start(&NESTED, data)).await
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

/// An error the sub-process's own path throws (an error end) is caught by its error
/// start; the same code thrown inside one of its event sub-processes is not caught
/// by that sibling but goes on up, to the process's catch-all.
#[tokio::test(start_paused = true)]
async fn an_error_from_an_event_sub_process_skips_its_siblings() {
    let engine = Engine::new();
    let handle = engine.start(&SIBLING, order("E-3"));
    complete(&handle, "wait", |o| o.code = "OOPS".into()).await;
    let (outcome, history) = outcome_of(&handle).await;
    let data = completed(outcome, &history);
    assert_eq!((data.caught.as_str(), data.after), ("work:OOPS", 1));
    assert_eq!(runs(&history, "work_error"), 1);

    let handle = engine.start(&SIBLING, order("E-4"));
    open(&handle, "wait").await;
    assert_eq!(engine.broadcast_signal("poke", ()), 1);
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
    let handle = engine.start(&SIBLING, order("E-5"));
    open(&handle, "wait").await;
    assert_eq!(engine.broadcast_signal("top_poke", ()), 1);
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

// ----- escalation starts -----------------------------------------------------------

/// Run `ESCALATIONS` with `work` raising `code`.
async fn escalate_with(code: &str, review: bool) -> (Outcome<Order>, History) {
    let engine = Engine::new();
    let data = Order {
        code: code.into(),
        ..order("X-1")
    };
    let handle = engine.start(&ESCALATIONS, data);
    if review {
        until(&handle, "work ended", |h| {
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

/// Escalations out of a sub-process reach the process's starts: a throw on the way
/// in runs the non-interrupting one beside (the sub-process goes on); an escalation
/// end, later, the interrupting one, which cancels the sub-process's token.
#[tokio::test(start_paused = true)]
async fn escalations_from_a_sub_process_reach_the_process_starts() {
    let engine = Engine::new();
    let handle = engine.start(&ESCALATED_UP, order("X-2"));
    complete(&handle, "wait", |_| {}).await;
    let (outcome, history) = outcome_of(&handle).await;
    let data = completed(outcome, &history);
    assert_eq!(
        (data.caught.as_str(), data.notes, data.after),
        ("up:UP", 1, 1)
    );
    assert_eq!(runs(&history, "stop"), 0);

    let handle = engine.start(&ESCALATED_UP, order("X-3"));
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

// ----- event sub-processes of an embedded sub-process ------------------------------

/// Before the token enters the sub-process its event sub-processes are not armed: a
/// signal reaches no catcher, a message is buffered. Entering arms them, and the
/// buffered message runs the interrupting one at once: it cancels the sub-process's
/// user task only — `side`, beside the sub-process, still waits — and the token
/// goes on after the sub-process.
#[tokio::test(start_paused = true)]
async fn an_interrupting_start_in_a_sub_process_cancels_only_its_work() {
    let engine = Engine::new();
    let handle = engine.start(&SCOPED, order("S-1"));
    open(&handle, "before").await;
    open(&handle, "side").await;
    assert_eq!(engine.broadcast_signal("poke", ()), 0);
    assert_eq!(
        engine.publish_message("abort", "S-1", "early".to_string()),
        Published::Buffered
    );
    complete(&handle, "before", |_| {}).await;
    until(&handle, "the token waits at the join", |h| {
        count(h, "join", &Happening::Waiting) == 1
    })
    .await;
    assert_eq!(open_work(&handle).await, ["side"]);
    assert_eq!(engine.broadcast_signal("poke", ()), 0);
    complete(&handle, "side", |_| {}).await;
    let (outcome, history) = outcome_of(&handle).await;
    let data = completed(outcome, &history);
    assert_eq!(
        (data.reason.as_str(), data.undone, data.notes, data.after),
        ("early", 1, 0, 1)
    );
    assert_eq!(
        rows(&history),
        vec![
            (0, "begin", Happening::Started),
            (0, "fork", routed(&["side", "before"])),
            (1, "fork", spawned(0)),
            (0, "side", Happening::Parked),
            (1, "before", Happening::Parked),
            (1, "before", done(&[])),
            (1, "work", Happening::TaskStarted),
            (2, "w_begin", spawned(1)),
            (2, "inner", Happening::Parked),
            (2, "inner", Happening::Cancelled),
            (3, "abort", Happening::Started),
            (3, "abort", caught(&["reason"])),
            (3, "undo", Happening::TaskStarted),
            (3, "undo", done(&["undone"])),
            (3, "aborted", Happening::Ended),
            (1, "work", done(&[])),
            (1, "after", Happening::TaskStarted),
            (1, "after", done(&["after"])),
            (1, "join", Happening::Waiting),
            (0, "side", done(&[])),
            (1, "join", Happening::Merged),
            (0, "join", Happening::Fired),
            (0, "join", routed(&["done"])),
            (0, "done", Happening::Ended),
        ]
    );
    assert_eq!(engine.broker_stats().buffered, 0);
}

/// While the sub-process runs its non-interrupting signal start runs beside its user
/// task; once it has completed, its starts are disarmed — a signal reaches no
/// catcher, a message is buffered — though the instance still runs.
#[tokio::test(start_paused = true)]
async fn event_sub_processes_of_a_sub_process_are_armed_only_while_it_runs() {
    let engine = Engine::new();
    let handle = engine.start(&SCOPED, order("S-2"));
    complete(&handle, "before", |_| {}).await;
    open(&handle, "inner").await;
    assert_eq!(engine.broadcast_signal("poke", ()), 1);
    until(&handle, "the poke ran", |h| ends(h, "noted") == 1).await;
    assert_eq!(engine.broadcast_signal("poke", ()), 1);
    until(&handle, "the second poke ran", |h| ends(h, "noted") == 2).await;
    complete(&handle, "inner", |_| {}).await;
    until(&handle, "the token waits at the join", |h| {
        count(h, "join", &Happening::Waiting) == 1
    })
    .await;
    assert_eq!(engine.broadcast_signal("poke", ()), 0);
    assert_eq!(
        engine.publish_message("abort", "S-2", "late".to_string()),
        Published::Buffered
    );
    complete(&handle, "side", |_| {}).await;
    let (outcome, history) = outcome_of(&handle).await;
    let data = completed(outcome, &history);
    assert_eq!(
        (data.reason.as_str(), data.undone, data.notes, data.after),
        ("", 0, 2, 1)
    );
    assert_eq!(runs(&history, "abort"), 0);
    assert_eq!(count(&history, "work", &done(&[])), 1);
    assert_eq!(engine.broker_stats().buffered, 1);
}

// ----- deployed processes ----------------------------------------------------------

/// An instance a message start started (`Engine::deploy`) has its top-level event
/// sub-processes armed: a signal runs the non-interrupting one, a `cancel` message
/// with its key the interrupting one; the key is free again afterwards.
#[tokio::test(start_paused = true)]
async fn a_deployed_instance_runs_its_event_sub_processes() {
    let engine = Engine::new();
    let mut orders = engine
        .deploy(&DEPLOYED, Order::default())
        .expect("deployed");
    assert_eq!(
        engine.publish_message("order", "D-1", "D-1".to_string()),
        Published::Started
    );
    let handle = next_handle(&mut orders).await;
    open(&handle, "review").await;
    assert_eq!(engine.broadcast_signal("ping", ()), 1);
    until(&handle, "the ping ran", |h| ends(h, "noted") == 1).await;
    assert_eq!(
        engine.publish_message("cancel", "D-1", "changed my mind".to_string()),
        Published::Delivered
    );
    let (outcome, history) = outcome_of(&handle).await;
    let data = completed(outcome, &history);
    assert_eq!(
        (
            data.id.as_str(),
            data.reason.as_str(),
            data.undone,
            data.notes
        ),
        ("D-1", "changed my mind", 1, 1)
    );
    assert_eq!(
        steps(&history)[..2],
        [
            (0, "received", Happening::Started),
            (0, "received", caught(&["id"])),
        ]
    );
    assert_eq!(count(&history, "review", &Happening::Cancelled), 1);
    assert_eq!(ends(&history, "cancelled"), 1);

    // The key is free: a new order with it starts a new instance, which completes.
    assert_eq!(
        engine.publish_message("order", "D-1", "D-1".to_string()),
        Published::Started
    );
    let handle = next_handle(&mut orders).await;
    complete(&handle, "review", |_| {}).await;
    let (outcome, history) = outcome_of(&handle).await;
    let data = completed(outcome, &history);
    assert_eq!((data.undone, data.notes), (0, 0));
    assert_eq!(engine.broadcast_signal("ping", ()), 0);
}

/// A deployed instance whose event sub-process waits for the start's own message
/// name: while it runs, an `order` message with its key goes to it (not to a new
/// instance) — each one runs the event sub-process; once it has ended, the key
/// starts a new instance.
#[tokio::test(start_paused = true)]
async fn a_deployed_instance_catches_its_start_message_again_in_an_event_sub_process() {
    let engine = Engine::new();
    let mut orders = engine
        .deploy(&DEPLOYED_MORE, Order::default())
        .expect("deployed");
    assert_eq!(
        engine.publish_message("order", "M-1", "M-1".to_string()),
        Published::Started
    );
    let handle = next_handle(&mut orders).await;
    open(&handle, "review").await;
    for k in 1..=2 {
        assert_eq!(
            engine.publish_message("order", "M-1", "+".to_string()),
            Published::Delivered
        );
        until(&handle, "the run ended", |h| ends(h, "noted") == k).await;
    }
    complete(&handle, "review", |_| {}).await;
    let (outcome, history) = outcome_of(&handle).await;
    let data = completed(outcome, &history);
    assert_eq!(
        (data.id.as_str(), data.reason.as_str(), data.notes),
        ("M-1", "++", 2)
    );
    assert_eq!(
        engine.publish_message("order", "M-1", "M-1".to_string()),
        Published::Started
    );
    let handle = next_handle(&mut orders).await;
    complete(&handle, "review", |_| {}).await;
    let (outcome, history) = outcome_of(&handle).await;
    assert_eq!(completed(outcome, &history).notes, 0);
    engine
        .shutdown(Duration::from_secs(10))
        .await
        .expect("stops");
}

// ----- cancel and shutdown with event sub-processes armed ---------------------------

/// Cancel or shut down an instance whose process and sub-process have every kind of
/// subscribing start armed (message, signal, timer, condition), with `pings`
/// non-interrupting runs waiting at their user tasks in each: every track ends
/// cancelled, and no subscription is left — a signal reaches no catcher, a message is
/// buffered.
async fn stopping_with_event_sub_processes_armed(_: Engine, i: usize) {
    let engine = Engine::new();
    let id = format!("armed-{i}");
    let shutdown = i % 2 == 1;
    let pings = i / 2 % 3;
    let handle = engine.start(&ARMED, order(&id));
    open(&handle, "review").await;
    open(&handle, "inner").await;
    for k in 1..=pings {
        assert_eq!(engine.broadcast_signal("ping", ()), 1);
        assert_eq!(engine.broadcast_signal("poke", ()), 1);
        until(&handle, "the pings wait", |h| {
            count(h, "ping_ack", &Happening::Parked) == k
                && count(h, "poke_ack", &Happening::Parked) == k
        })
        .await;
    }
    if shutdown {
        engine
            .shutdown(Duration::from_secs(10))
            .await
            .expect("the loop stops");
    } else {
        handle.cancel();
    }
    let (outcome, history) = outcome_of(&handle).await;
    assert!(matches!(outcome, Outcome::Cancelled(_)), "{history}");
    let mut cancelled: Vec<&str> = steps(&history)
        .into_iter()
        .filter(|r| r.2 == Happening::Cancelled)
        .map(|r| r.1)
        .collect();
    cancelled.sort_unstable();
    let mut want = vec!["inner", "review", "work"];
    want.extend(std::iter::repeat_n("ping_ack", pings));
    want.extend(std::iter::repeat_n("poke_ack", pings));
    want.sort_unstable();
    assert_eq!(cancelled, want, "{history}");
    // The loop publishes the outcome just before its task ends.
    until_true("the instance loop stops", || {
        engine.running_instances() == 0
    })
    .await;
    assert_eq!(engine.broadcast_signal("ping", ()), 0);
    assert_eq!(engine.broadcast_signal("poke", ()), 0);
    for name in ["cancel", "abort"] {
        assert_eq!(engine.publish_message(name, &id, ()), Published::Buffered);
    }
    assert_eq!(engine.broker_stats().buffered, 2);
    assert_eq!(engine.broker_stats().delivered, 0);
}

flavors!(stopping_with_event_sub_processes_armed);

/// Cancelling an instance races a storm of signals for its non-interrupting
/// start, from another thread: it always ends cancelled, every run it started is
/// either ended or cancelled, and nothing is left subscribed.
async fn a_cancel_racing_event_sub_process_signals(_: Engine, i: usize) {
    let engine = Engine::new();
    let id = format!("storm-{i}");
    let handle = engine.start(&ARMED, order(&id));
    open(&handle, "review").await;
    open(&handle, "inner").await;
    let storm = storm(&engine, "ping");
    jitter().await;
    handle.cancel();
    let reached = storm.join().expect("the storm");
    let (outcome, history) = outcome_of(&handle).await;
    assert!(matches!(outcome, Outcome::Cancelled(_)), "{history}");
    let started = runs(&history, "ping");
    assert!(
        started <= reached,
        "{started} runs, {reached} reached\n{history}"
    );
    // Each run was cancelled where it was: at its start (its catch not yet in) or
    // at its user task.
    let cancelled = count(&history, "ping", &Happening::Cancelled)
        + count(&history, "ping_ack", &Happening::Cancelled);
    assert_eq!(cancelled, started, "{history}");
    assert_eq!(engine.broadcast_signal("ping", ()), 0);
    assert_eq!(
        engine.publish_message("cancel", &id, ()),
        Published::Buffered
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_cancel_racing_event_sub_process_signals_multi_thread() {
    repeat(RUNS, a_cancel_racing_event_sub_process_signals).await;
}

// ----- races on a multi-thread runtime ---------------------------------------------

/// An interrupting message start races the end of the main path (a task that varies
/// the interleaving, or a user task completed from another task): exactly one of
/// them wins — the main path ends at `done`, or the event sub-process at
/// `cancelled` with the main path's work cancelled, never both — and a message that
/// came too late is not lost but waits in the buffer.
async fn an_interrupting_message_racing_the_end_of_the_main_path(_: Engine, i: usize) {
    let engine = Engine::new();
    let id = format!("race-{i}");
    let user = i % 2 == 1;
    let (process, main) = if user {
        (&RACE_USER, "hold")
    } else {
        (&RACE_TASK, "quick")
    };
    let handle = engine.start(process, order(&id));
    let completer = if user {
        open(&handle, "hold").await;
        let handle = handle.clone();
        Some(tokio::spawn(async move {
            jitter().await;
            handle.complete("hold", |o| o.worked = true).await
        }))
    } else {
        None
    };
    jitter().await;
    let published = engine.publish_message("cancel", &id, "late".to_string());
    let (outcome, history) = outcome_of(&handle).await;
    let completion = match completer {
        Some(task) => Some(task.await.expect("the completer")),
        None => None,
    };
    let data = completed(outcome, &history);
    let (by_main, by_event) = (ends(&history, "done"), ends(&history, "cancelled"));
    assert_eq!(by_main + by_event, 1, "{history}");
    assert_eq!(runs(&history, "cancel"), by_event, "{history}");
    let stats = engine.broker_stats();
    if by_event == 1 {
        assert_eq!(
            (data.reason.as_str(), data.undone, data.worked),
            ("late", 1, false),
            "{history}"
        );
        assert_eq!(count(&history, main, &Happening::Cancelled), 1, "{history}");
        // Delivered, or buffered until the start subscribed.
        assert_ne!(published, Published::Dropped);
        assert_eq!(stats.buffered, 0);
    } else {
        assert_eq!(
            (data.reason.as_str(), data.undone, data.worked),
            ("", 0, true),
            "{history}"
        );
        assert!(matches!(completion, None | Some(Ok(()))), "{completion:?}");
        assert_eq!(count(&history, "cancel", &Happening::Cancelled), 0);
        assert_eq!(stats.buffered, 1, "{published:?} {stats:?}\n{history}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn an_interrupting_message_racing_the_end_of_the_main_path_multi_thread() {
    repeat(
        RUNS,
        an_interrupting_message_racing_the_end_of_the_main_path,
    )
    .await;
}

/// The same race inside a sub-process: its interrupting message start against its
/// task's end. Either way the sub-process completes once and the token goes on to
/// `after`; the sub-process's start is disarmed when it completes, so a message that
/// came too late waits in the buffer.
async fn an_interrupting_message_racing_the_end_of_a_sub_process(_: Engine, i: usize) {
    let engine = Engine::new();
    let id = format!("scoped-race-{i}");
    let handle = engine.start(&RACE_SCOPED, order(&id));
    jitter().await;
    let published = engine.publish_message("abort", &id, "late".to_string());
    let (outcome, history) = outcome_of(&handle).await;
    let data = completed(outcome, &history);
    let (by_main, by_event) = (ends(&history, "w_done"), ends(&history, "aborted"));
    assert_eq!(by_main + by_event, 1, "{history}");
    assert_eq!(count(&history, "work", &done(&[])), 1, "{history}");
    assert_eq!((data.after, ends(&history, "done")), (1, 1), "{history}");
    let stats = engine.broker_stats();
    if by_event == 1 {
        assert_eq!(
            (data.reason.as_str(), data.undone, data.worked),
            ("late", 1, false)
        );
        // Delivered, or buffered until the start subscribed.
        assert_ne!(published, Published::Dropped);
        assert_eq!(stats.buffered, 0);
    } else {
        assert_eq!(
            (data.reason.as_str(), data.undone, data.worked),
            ("", 0, true)
        );
        assert_eq!(stats.buffered, 1, "{published:?} {stats:?}\n{history}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn an_interrupting_message_racing_the_end_of_a_sub_process_multi_thread() {
    repeat(
        RUNS,
        an_interrupting_message_racing_the_end_of_a_sub_process,
    )
    .await;
}

/// A storm of signals for a non-interrupting start, from another thread, while the
/// main path's user task is completed: the instance completes; every run that
/// started ran to its end (the instance waits for them; meanwhile the start stays
/// armed), no more runs than signals that reached it, and afterwards nothing is
/// subscribed.
async fn a_signal_storm_while_the_instance_ends(_: Engine, i: usize) {
    let engine = Engine::new();
    let handle = engine.start(&STORM, order(&format!("storm-{i}")));
    open(&handle, "review").await;
    let storm = storm(&engine, "ping");
    jitter().await;
    complete(&handle, "review", |_| {}).await;
    let (outcome, history) = outcome_of(&handle).await;
    let reached = storm.join().expect("the storm");
    let data = completed(outcome, &history);
    let started = runs(&history, "ping");
    assert!(
        started <= reached,
        "{started} runs, {reached} reached\n{history}"
    );
    assert_eq!(ends(&history, "noted"), started, "{history}");
    assert_eq!(completions(&history, "note"), started);
    // Runs side by side each count on their own copy of the data: the commits merge
    // field by field, the later write wins, so some increments may be overwritten.
    assert!(started == 0 || (1..=started).contains(&(data.notes as usize)));
    assert_eq!(ends(&history, "done"), 1);
    assert_eq!(engine.broadcast_signal("ping", ()), 0);
}

/// One instance at a time, 100 times: with 200 at once on a small machine every
/// storm was over before its main path ended (the instance cannot end while a run
/// is under way, so a storm under way keeps it going); one at a time, the end falls
/// inside the storm, and signals that reached the instance after its last run are
/// dropped with it.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_signal_storm_while_the_instance_ends_multi_thread() {
    for i in 0..100 {
        a_signal_storm_while_the_instance_ends(Engine::new(), i).await;
    }
}

// ----- more scope interplay --------------------------------------------------------

/// The process's interrupting message start cancels a running sub-process with
/// everything in it — its user task, a non-interrupting run of its own event
/// sub-process — and disarms the sub-process's starts with the process's.
#[tokio::test(start_paused = true)]
async fn an_interrupting_start_of_the_process_cancels_a_sub_process_with_its_starts() {
    let engine = Engine::new();
    let handle = engine.start(&ARMED, order("N-1"));
    open(&handle, "review").await;
    open(&handle, "inner").await;
    assert_eq!(engine.broadcast_signal("poke", ()), 1);
    open(&handle, "poke_ack").await;
    assert_eq!(
        engine.publish_message("cancel", "N-1", ()),
        Published::Delivered
    );
    let (outcome, history) = outcome_of(&handle).await;
    completed(outcome, &history);
    let mut cancelled: Vec<&str> = steps(&history)
        .into_iter()
        .filter(|r| r.2 == Happening::Cancelled)
        .map(|r| r.1)
        .collect();
    cancelled.sort_unstable();
    assert_eq!(cancelled, ["inner", "poke_ack", "review", "work"]);
    assert_eq!(history.steps().last().unwrap().node, "cancelled");
    assert_eq!(engine.broadcast_signal("poke", ()), 0);
    assert_eq!(engine.broadcast_signal("ping", ()), 0);
    assert_eq!(
        engine.publish_message("abort", "N-1", ()),
        Published::Buffered
    );
}

/// A sub-process whose own path has ended still runs while a non-interrupting run
/// of its event sub-process does — and its starts stay armed meanwhile; it
/// completes when the last run ends.
#[tokio::test(start_paused = true)]
async fn a_sub_process_waits_for_its_running_event_sub_processes() {
    let engine = Engine::new();
    let handle = engine.start(&ARMED, order("N-2"));
    complete(&handle, "review", |_| {}).await;
    open(&handle, "inner").await;
    assert_eq!(engine.broadcast_signal("poke", ()), 1);
    open(&handle, "poke_ack").await;
    complete(&handle, "inner", |_| {}).await;
    until(&handle, "the inner path ended", |h| ends(h, "w_done") == 1).await;
    let history = handle.history().await;
    assert_eq!(count(&history, "work", &done(&[])), 0, "{history}");
    assert_eq!(engine.broadcast_signal("poke", ()), 1);
    until(&handle, "the second poke waits", |h| {
        count(h, "poke_ack", &Happening::Parked) == 2
    })
    .await;
    complete(&handle, "poke_ack", |_| {}).await;
    until(&handle, "the first poke ended", |h| ends(h, "poked") == 1).await;
    assert_eq!(count(&handle.history().await, "work", &done(&[])), 0);
    complete(&handle, "poke_ack", |_| {}).await;
    let (outcome, history) = outcome_of(&handle).await;
    completed(outcome, &history);
    assert_eq!(ends(&history, "poked"), 2);
    let work_done = common::position(&history, "work", |w| *w == done(&[]));
    let last_poke = history
        .steps()
        .iter()
        .rposition(|s| s.node == "poked")
        .unwrap();
    assert!(last_poke < work_done, "{history}");
    assert_eq!(engine.broadcast_signal("poke", ()), 0);
}

/// A commit outside a sub-process (by `side`, beside it) makes its interrupting
/// conditional start true: the sub-process's work is cancelled, `side`'s token is
/// not, and the parent goes on after the sub-process.
#[tokio::test(start_paused = true)]
async fn a_commit_outside_a_sub_process_fires_its_conditional_start() {
    let engine = Engine::new();
    let handle = engine.start(&COND_ACROSS, order("N-3"));
    open(&handle, "inner").await;
    complete(&handle, "side", |o| o.total = 500).await;
    let (outcome, history) = outcome_of(&handle).await;
    let data = completed(outcome, &history);
    assert_eq!((data.alarms, data.after), (1, 1));
    let cancelled: Vec<(u32, &str)> = steps(&history)
        .into_iter()
        .filter(|r| r.2 == Happening::Cancelled)
        .map(|r| (r.0, r.1))
        .collect();
    assert_eq!(cancelled, [(2, "inner")], "{history}");
    assert_eq!(count(&history, "side", &done(&["total"])), 1);
    assert_eq!(ends(&history, "done"), 1);
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
        let (outcome, history) = outcome_of(&engine.start(&BOUNDARY_FIRST, data)).await;
        let data = completed(outcome, &history);
        assert_eq!(data.caught, caught);
        assert_eq!(ends(&history, end), 1, "{history}");
        assert_eq!(runs(&history, "any"), usize::from(code == "OTHER"));
    }
}

/// Two instances of one sub-process at once, each with its interrupting message
/// start subscribed under the same name and key: a message interrupts one of them
/// only (the other's user task still waits), the next message the other.
#[tokio::test(start_paused = true)]
async fn each_instance_of_a_sub_process_has_its_own_event_sub_processes() {
    let engine = Engine::new();
    let handle = engine.start(&TWICE, order("N-5"));
    until(&handle, "both instances wait", |h| {
        count(h, "inner", &Happening::Parked) == 2
    })
    .await;
    assert_eq!(
        engine.publish_message("abort", "N-5", ()),
        Published::Delivered
    );
    until(&handle, "one was aborted", |h| ends(h, "aborted") == 1).await;
    settle().await;
    let history = handle.history().await;
    assert_eq!(open_work(&handle).await, ["inner"], "{history}");
    assert_eq!(count(&history, "inner", &Happening::Cancelled), 1);
    assert_eq!(ends(&history, "done"), 1, "{history}");
    assert_eq!(
        engine.publish_message("abort", "N-5", ()),
        Published::Delivered
    );
    let (outcome, history) = outcome_of(&handle).await;
    let data = completed(outcome, &history);
    assert_eq!(data.undone, 2);
    assert_eq!(count(&history, "inner", &Happening::Cancelled), 2);
    assert_eq!(count(&history, "work", &done(&[])), 2);
    assert_eq!(ends(&history, "done"), 2);
}

/// Without event sub-processes, a token stuck at a parallel join fails the instance
/// with `Deadlock` (the baseline of the next test).
#[tokio::test(start_paused = true)]
async fn a_deadlock_fails_the_instance() {
    let engine = Engine::new();
    let (outcome, history) = outcome_of(&engine.start(&STUCK_PLAIN, order("N-7"))).await;
    assert_eq!(
        failed(outcome, &history),
        InstanceError::Deadlock {
            joins: vec!["join"]
        }
    );
}

/// A token stuck at a parallel join does not fail the instance while a message,
/// signal or timer event sub-process is armed: its run could still change things
/// (raise an error a boundary catches, commit data a condition waits for). This
/// one's run cannot, so the instance waits — through the run — until cancelled.
/// (With only a conditional trigger armed, `Deadlock` comes at once:
/// tests/loop_robustness.rs.)
#[tokio::test(start_paused = true)]
async fn an_armed_event_sub_process_keeps_a_stuck_instance_waiting() {
    let engine = Engine::new();
    let handle = engine.start(&STUCK, order("N-6"));
    tokio::time::sleep(Duration::from_secs(3600)).await;
    assert!(!handle.is_finished(), "{}", handle.history().await);
    assert_eq!(engine.broadcast_signal("ping", ()), 1);
    tokio::time::sleep(Duration::from_secs(3600)).await;
    assert!(!handle.is_finished(), "{}", handle.history().await);
    handle.cancel();
    let (outcome, history) = outcome_of(&handle).await;
    assert!(matches!(outcome, Outcome::Cancelled(_)), "{outcome:?}");
    assert_eq!(
        history.count("note", |h| matches!(h, Happening::Completed { .. })),
        1
    );
    assert_eq!(history.count("join", |h| *h == Happening::Cancelled), 1);
}

/// Run `NESTED_COND` with `total = 150`: `ping` runs `on_ping`, whose own conditional
/// event sub-process is true when armed and runs once; `go` first, when asked.
async fn nested_condition(go_first: bool) {
    let engine = Engine::new();
    let data = Order {
        total: 150,
        ..order("N-8")
    };
    let handle = engine.start(&NESTED_COND, data);
    open(&handle, "review").await;
    parked_at(&handle, "go", 1).await;
    if go_first {
        assert_eq!(engine.broadcast_signal("go", ()), 1);
    }
    assert_eq!(engine.broadcast_signal("ping", ()), 1);
    open(&handle, "ack").await;
    settle().await;
    let history = handle.history().await;
    assert_eq!(runs(&history, "hot"), 1, "{history}");
    complete(&handle, "ack", |_| {}).await;
    if !go_first {
        assert_eq!(engine.broadcast_signal("go", ()), 1);
    }
    complete(&handle, "review", |_| {}).await;
    let (outcome, history) = outcome_of(&handle).await;
    let data = completed(outcome, &history);
    assert_eq!((data.alarms, data.gate), (1, true));
}

/// A conditional start true when its scope — an event sub-process — opens runs at
/// once.
#[tokio::test(start_paused = true)]
async fn a_conditional_start_in_an_event_sub_process_true_when_armed_runs() {
    nested_condition(false).await;
}

/// The same, with a commit elsewhere (the catch `go`, of a field the condition does
/// not watch) taken in between the event sub-process's start and its first step.
#[tokio::test(start_paused = true)]
async fn a_conditional_start_true_when_armed_survives_a_commit_elsewhere() {
    nested_condition(true).await;
}

/// The same, when the event sub-process's own start commits a field (`pings`) the
/// condition does not watch.
#[tokio::test(start_paused = true)]
async fn a_conditional_start_true_when_armed_survives_its_scopes_first_commit() {
    let engine = Engine::new();
    let data = Order {
        total: 150,
        ..order("N-9")
    };
    let handle = engine.start(&NESTED_COND, data);
    open(&handle, "review").await;
    assert_eq!(engine.broadcast_signal("pong", ()), 1);
    open(&handle, "pong_ack").await;
    settle().await;
    let history = handle.history().await;
    assert_eq!(runs(&history, "pong_hot"), 1, "{history}");
    complete(&handle, "pong_ack", |_| {}).await;
    assert_eq!(engine.broadcast_signal("go", ()), 1);
    complete(&handle, "review", |_| {}).await;
    let (outcome, history) = outcome_of(&handle).await;
    let data = completed(outcome, &history);
    assert_eq!((data.alarms, data.pings), (1, 1));
}
