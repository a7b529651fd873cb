//! Processes that between them use every element kind thresh has, for the diagram
//! tests: gateways of every kind, every event definition, nested sub-processes,
//! event sub-processes at two levels, boundary events (interrupting and not, on
//! tasks and on a sub-process), link pairs, loops and defaults.

use std::time::Duration;

use thresh::{process, ProcessData};

#[derive(Clone, Debug, Default, ProcessData)]
pub struct Job {
    pub id: String,
    pub n: u32,
    pub ok: bool,
    pub urgent: bool,
}

process! {
    /// Every gateway: exclusive (with a default), inclusive split and OR-join,
    /// parallel, complex with an activation rule, an event-based gateway.
    pub GATEWAYS: Job {
        start     begin;
        exclusive triage;
        inclusive pick;
        task      left = |j| async move { j.n += 1; Ok(()) };
        task      right = |j| async move { j.n += 2; Ok(()) };
        inclusive gather;
        parallel  fork;
        task      legal = |j| async move { j.ok = true; Ok(()) };
        task      cfo = |j| async move { j.ok = true; Ok(()) };
        complex   approved: activate(count = 2) | activate(count = 1, require = [cfo], when = |j| j.urgent);
        event_based gate;
        catch     paid: message("paid", key = |j| j.id.clone());
        catch     late: timer(Duration::from_secs(3600));
        catch     stop: signal("stop");
        exclusive merge;
        end       done;
        /// Nothing to do.
        end       skipped;

        begin -> triage;
        triage -> pick when |j| j.n < 10 && !j.ok;
        triage -> skipped else;
        pick -> left when |j| j.n % 2 == 0;
        pick -> right else;
        left, right -> gather -> fork -> legal, cfo;
        legal, cfo -> approved -> gate -> paid, late, stop;
        paid, late, stop -> merge -> done;
    }

    /// Every throw and end event, a conditional catch, a link pair, a user task and
    /// a receive task.
    pub EVENTS: Job {
        start     begin;
        parallel  fork;
        throw     shout: signal("shout");
        throw     write: message("note", key = |j| j.id.clone());
        throw     raise: escalation("HEADS_UP");
        catch     ready: condition(|j| j.n > 3, on = [n]);
        throw     jump: link("next");
        catch     next: link("next");
        user      approve;
        receive   answer: message("answer", key = |j| j.id.clone());
        end       signalled: signal("done");
        end       messaged: message("done", key = |j| j.id.clone());
        end       escalated: escalation("UP");
        end       failed: error("BROKEN");
        end       killed: terminate;

        begin -> fork -> shout, write, raise, ready;
        shout -> signalled;
        write -> messaged;
        raise -> escalated;
        ready -> jump;
        next -> approve -> answer -> failed;
        fork -> killed;
    }

    /// Nested sub-processes with boundaries, an event sub-process inside a
    /// sub-process, and event sub-processes of every start at the top.
    pub SCOPES: Job {
        start      begin;
        subprocess outer {
            start      inner_begin;
            task       prepare = |j| async move { j.n += 1; Ok(()) };
            boundary   prepare_late on prepare: non_interrupting timer(every = Duration::from_secs(60), times = 3);
            end        reminded;
            subprocess inner {
                start inner_start;
                user  sign;
                end   signed;
                inner_start -> sign -> signed;
            }
            boundary   inner_failed on inner: error("SIGN");
            end        inner_end;
            end        sign_failed;
            event_subprocess inner_watch {
                start watch: non_interrupting signal("poke");
                task  log = |j| async move { j.n += 1; Ok(()) };
                end   logged;
                watch -> log -> logged;
            }
            inner_begin -> prepare -> inner -> inner_end;
            prepare_late -> reminded;
            inner_failed -> sign_failed;
        }
        boundary   cancelled on outer: message("cancel", key = |j| j.id.clone());
        boundary   nudged on outer: non_interrupting escalation("NUDGE");
        end        finished;
        end        aborted;
        end        nudge_seen;
        event_subprocess on_error {
            start any_error: error;
            end   handled;
            any_error -> handled;
        }
        event_subprocess on_escalation {
            start esc: non_interrupting escalation("WARN");
            end   noted;
            esc -> noted;
        }
        event_subprocess on_timer {
            start timeout: timer(Duration::from_secs(86_400));
            end   timed_out;
            timeout -> timed_out;
        }
        event_subprocess on_condition {
            start big: non_interrupting condition(|j| j.n > 100, on = [n]);
            end   seen;
            big -> seen;
        }
        begin -> outer -> finished;
        cancelled -> aborted;
        nudged -> nudge_seen;
    }

    /// A loop back over a task, a retry from a boundary event back to its host, and
    /// a task with two outgoing flows (one conditional, one default).
    pub LOOPS: Job {
        start     begin;
        task      attempt = |j| async move { j.n += 1; Ok(()) };
        boundary  flaky on attempt: error("FLAKY");
        exclusive again;
        task      review = |j| async move { j.ok = j.n > 2; Ok(()) };
        task      celebrate = |j| async move { j.ok = true; Ok(()) };
        end       done;
        end       given_up;

        begin -> attempt -> again;
        again -> attempt when |j| j.n < 3;
        again -> review else;
        flaky -> attempt;
        review -> celebrate when |j| j.ok;
        review -> given_up else;
        celebrate -> done;
    }

    /// Starts of a deployed process: message, signal, timer.
    pub STARTS: Job {
        start  by_message: message("job", apply = |j, id: &String| j.id = id.clone());
        start  by_signal: signal("go");
        start  by_timer: timer(every = Duration::from_secs(60));
        task   run = |j| async move { j.n += 1; Ok(()) };
        end    done;
        by_message, by_signal, by_timer -> run -> done;
    }

    /// An instantiating event-based gateway.
    pub INSTANTIATING: Job {
        event_based first: instantiate;
        catch a: message("a", key = |j| j.id.clone());
        catch b: message("b", key = |j| j.id.clone());
        exclusive meet;
        end   done;
        first -> a, b;
        a, b -> meet -> done;
    }

    /// A parallel instantiating event-based gateway.
    pub INSTANTIATING_PARALLEL: Job {
        event_based first: instantiate(parallel);
        catch a: message("a", key = |j| j.id.clone());
        catch b: message("b", key = |j| j.id.clone());
        parallel both;
        end   done;
        first -> a, b;
        a, b -> both -> done;
    }
}

process! {
    /// For an instance picture: a loop that runs three times, then a fork to a task
    /// and a user task that waits.
    pub STUCK: Job {
        start     begin;
        task      count = |j| async move { j.n += 1; Ok(()) };
        exclusive enough;
        parallel  fork;
        task      notify = |j| async move { j.ok = true; Ok(()) };
        user      approve;
        parallel  join;
        end       done;
        begin -> count -> enough;
        enough -> count when |j| j.n < 3;
        enough -> fork else;
        fork -> notify, approve;
        notify, approve -> join -> done;
    }

    /// For an instance picture: a task that fails.
    pub BROKEN: Job {
        start     begin;
        task      prepare = |j| async move { j.n += 1; Ok(()) };
        task      charge = |_j| async move { Err(thresh::TaskError::new("card declined")) };
        end       done;
        begin -> prepare -> charge -> done;
    }
}

process! {
    /// Call activities: one calling `GATEWAYS` with both mappings and a boundary,
    /// one calling `BROKEN` with neither.
    pub CALLS: Job {
        start begin;
        call  gateways = GATEWAYS(input = |j| j.clone(), output = |j, g| j.n = g.n);
        boundary failed on gateways: error;
        call  broken = BROKEN;
        end   done;
        end   recovered;
        begin -> gateways -> broken -> done;
        failed -> recovered;
    }
}

process! {
    /// Compensation and a transaction: a compensation boundary with its handler, a
    /// compensation event sub-process, a cancel end and a cancel boundary, a named
    /// compensation throw and a compensation end event.
    pub COMPENSATION: Job {
        start     begin;
        task      charge = |j| async move { j.n += 1; Ok(()) };
        boundary  undo_charge on charge: compensation -> refund;
        task      refund = |j| async move { j.n -= 1; Ok(()) }: compensation;
        transaction booking {
            start     bs;
            task      flight = |j| async move { j.ok = true; Ok(()) };
            boundary  undo_flight on flight: compensation -> cancel_flight;
            task      cancel_flight = |j| async move { j.ok = false; Ok(()) }: compensation;
            exclusive seats;
            end       booked;
            end       no_seats: cancel;
            bs -> flight -> seats;
            seats -> booked when |j| j.ok;
            seats -> no_seats else;
            event_subprocess undo_booking {
                start  us: compensation;
                throw  inner: compensation;
                end    ue;
                us -> inner -> ue;
            }
        }
        boundary  cancelled on booking: cancel;
        throw     undo_one: compensation(charge);
        end       undone: compensation;
        end       given_up;
        begin -> charge -> booking -> undo_one -> undone;
        cancelled -> given_up;
    }
}

process! {
    /// Loop and multi-instance markers on every kind of activity: a parallel
    /// multi-instance task over a collection with a completion condition, a
    /// sequential multi-instance sub-process over a count, a multi-instance user
    /// task, a standard loop on a receive task tested before each run.
    pub MULTI: Job {
        start begin;
        #[multi_instance(each = |j| vec![j.n; 3], completion = |_j, n| n.completed >= 2)]
        task fan = |j, _n: &u32, _i| async move { j.ok = true; Ok(()) };
        #[multi_instance(sequential, count = |j| j.n)]
        subprocess rounds {
            start rs;
            #[item]
            task round = |j, _k: &usize, _i| async move { j.n += 1; Ok(()) };
            end re;
            rs -> round -> re;
        }
        #[multi_instance(count = |_j| 2)]
        user sign;
        #[standard_loop(test_before, while = |j, runs| !j.ok && runs < 3, max = 3)]
        receive poll: message("poll", key = |j| j.id.clone());
        boundary late on rounds: timer(Duration::from_secs(60));
        end done;
        end timed_out;
        begin -> fan -> rounds -> sign -> poll -> done;
        late -> timed_out;
    }
}
