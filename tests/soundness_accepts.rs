//! Models the soundness analysis must accept: the patterns around boundary events,
//! event-based gateways, loops, OR-joins, terminate ends and deliberate multi-merges
//! that a careless analysis would flag. Each compiles (that is the test) and runs to
//! completion.

use std::time::Duration;

use thresh::{process, Engine, InstanceError, Outcome, ProcessData, TaskError};

#[derive(Clone, Debug, Default, PartialEq, ProcessData)]
pub struct D {
    pub x: u32,
    pub rounds: u32,
}

async fn work(_: &mut D) -> Result<(), TaskError> {
    Ok(())
}

async fn round(d: &mut D) -> Result<(), TaskError> {
    d.rounds += 1;
    Ok(())
}

process! {
    /// An interrupting boundary whose path meets the normal one at an exclusive merge:
    /// either the activity or its boundary goes on, never both.
    BOUNDARY_ALTERNATIVE: D {
        start s;
        task pay = work;
        boundary late on pay: timer(Duration::from_secs(60));
        task remind = work;
        exclusive after;
        end e;
        s -> pay -> after;
        late -> remind -> after;
        after -> e;
    }
}

process! {
    /// A non-interrupting boundary's path ends on its own.
    BOUNDARY_BESIDE: D {
        start s;
        task pay = work;
        boundary nudge on pay: non_interrupting timer(Duration::from_secs(60));
        task remind = work;
        end e;
        end reminded;
        s -> pay -> e;
        nudge -> remind -> reminded;
    }
}

process! {
    /// An event-based gateway's arms meet at an exclusive merge.
    EVENT_GATE: D {
        start s;
        event_based wait;
        catch paid: signal("paid");
        catch late: timer(Duration::from_millis(10));
        exclusive after;
        end e;
        s -> wait -> paid, late;
        paid, late -> after -> e;
    }
}

process! {
    /// A loop through an exclusive merge, a parallel block inside it.
    LOOP: D {
        start s;
        exclusive again;
        parallel fork;
        task a = round;
        task b = work;
        parallel join;
        exclusive more;
        end e;
        s -> again -> fork -> a, b -> join -> more;
        more -> again when |d| d.rounds < 3;
        more -> e else;
    }
}

process! {
    /// An inclusive split and its inclusive join, and an exclusive choice between a
    /// terminate end and a parallel block.
    INCLUSIVE_AND_TERMINATE: D {
        start s;
        inclusive some;
        task a = work;
        task b = work;
        inclusive join;
        parallel fork;
        task c = work;
        exclusive stop;
        end halt: terminate;
        task d = work;
        parallel both;
        end e;
        s -> some;
        some -> a when |d| d.x > 0;
        some -> b else;
        a, b -> join -> fork -> c, d;
        c -> stop;
        stop -> halt when |d| d.x > 5;
        stop -> both else;
        d -> both -> e;
    }
}

process! {
    /// An error boundary on a sub-process whose inside may end with that error.
    ERROR_OUT: D {
        start s;
        subprocess inner {
            start i1;
            exclusive ok;
            end i2;
            end fail: error("E");
            i1 -> ok;
            ok -> i2 when |d| d.x == 0;
            ok -> fail else;
        }
        boundary caught on inner: error("E");
        exclusive after;
        end e;
        s -> inner -> after;
        caught -> after;
        after -> e;
    }
}

process! {
    /// A deliberate multi-merge: every token passes on its own.
    MULTI: D {
        start s;
        parallel fork;
        task a = work;
        task b = work;
        exclusive each: multi;
        task c = work;
        end e;
        s -> fork -> a, b -> each -> c -> e;
    }
}

process! {
    /// Call activities in parallel branches, one with an error boundary whose path
    /// meets the normal one at an exclusive merge, one with a non-interrupting
    /// escalation boundary whose path ends on its own: no deadlock, no lack of
    /// synchronisation (a call is an activity like a task).
    CALLS: D {
        start s;
        parallel fork;
        call first = MULTI;
        boundary failed on first: error;
        exclusive after;
        call second = LOOP(input = |d| d.clone(), output = |d, inner| d.rounds = inner.rounds);
        boundary slow on second: non_interrupting escalation;
        end noted;
        parallel join;
        end e;
        s -> fork -> first, second;
        first -> after;
        failed -> after;
        after -> join;
        second -> join;
        slow -> noted;
        join -> e;
    }
}

process! {
    /// A compensation boundary on a branch of a parallel split: its handler is off
    /// every path, so the branch still reaches the join (no deadlock), and the handler
    /// is no dead element.
    COMPENSATION_IN_BRANCH: D {
        start s;
        parallel fork;
        task a = work;
        task b = work;
        boundary undo_a on a: compensation -> unda;
        task unda = work: compensation;
        throw undo: compensation;
        parallel join;
        end e;
        s -> fork -> a, b;
        a -> undo -> join;
        b -> join;
        join -> e;
    }
}

process! {
    /// A transaction left either normally or through its cancel boundary: the two
    /// paths meet at an exclusive merge; the cancel end clears the transaction's
    /// other branch (no improper completion inside).
    TRANSACTION_EITHER_WAY: D {
        start s;
        transaction t {
            start ts;
            parallel fork;
            task a = work;
            boundary undo_a on a: compensation -> unda;
            task unda = work: compensation;
            user wait;
            exclusive ok;
            end done_a;
            end done_wait;
            end no: cancel;
            ts -> fork -> a, wait;
            a -> ok;
            ok -> done_a when |d| d.x > 0;
            ok -> no else;
            wait -> done_wait;
        }
        boundary cancelled on t: cancel;
        exclusive merge;
        end e;
        s -> t -> merge;
        cancelled -> merge;
        merge -> e;
    }
}

process! {
    /// Two multi-merges one behind the other (issue 38, model 2, with `jm` marked
    /// too): each declares its own doubling, so neither is reported.
    MULTI_BEHIND_MULTI: D {
        start s;
        parallel p;
        task a = work;
        exclusive mm0: multi;
        exclusive jm: multi;
        end e;
        s -> p;
        p -> a, mm0, jm;
        a -> mm0;
        mm0 -> jm;
        jm -> e;
    }
}

process! {
    /// Issue 38, model 3: `j` is marked `may_deadlock`, and the OR-join `oj` waits for
    /// ever for the token `j` is left with (the multi-merge `m` sends it two, `p` one).
    /// That waiting is the one declared at `j`: nothing behind it is reported. At run
    /// time the instance ends in `Deadlock`, as declared.
    WAITS_BEHIND_MAY_DEADLOCK: D {
        start s;
        parallel p;
        task a = work;
        exclusive m: multi;
        parallel j: may_deadlock;
        exclusive x;
        task c = work;
        inclusive oj;
        end e;
        s -> p;
        p -> a, m, j;
        a -> m;
        m -> j;
        j -> x;
        x -> c when |d| d.x > 0;
        x -> oj else;
        c -> oj;
        oj -> e;
    }
}

#[tokio::test(start_paused = true)]
async fn what_waits_behind_a_may_deadlock_join_deadlocks_as_declared() {
    let engine = Engine::new();
    for x in [0, 1] {
        let h = engine
            .start(&WAITS_BEHIND_MAY_DEADLOCK, D { x, rounds: 0 })
            .await
            .unwrap();
        let outcome = h.outcome().await;
        assert!(
            matches!(outcome, Outcome::Failed(InstanceError::Deadlock { .. })),
            "{outcome:?}\n{}",
            h.history().await
        );
    }
}

#[tokio::test(start_paused = true)]
async fn every_accepted_model_completes() {
    let engine = Engine::new();
    for process in [
        &BOUNDARY_ALTERNATIVE,
        &BOUNDARY_BESIDE,
        &EVENT_GATE,
        &LOOP,
        &INCLUSIVE_AND_TERMINATE,
        &ERROR_OUT,
        &MULTI,
        &CALLS,
        &COMPENSATION_IN_BRANCH,
        &MULTI_BEHIND_MULTI,
    ] {
        for x in [0, 1, 7] {
            let h = engine.start(process, D { x, rounds: 0 }).await.unwrap();
            let outcome = h.outcome().await;
            assert!(
                matches!(outcome, Outcome::Completed(_) | Outcome::Terminated(_)),
                "{}: {outcome:?}\n{}",
                process.name(),
                h.history().await
            );
        }
    }
    // Cancelled (x = 0): the open user task is withdrawn, the token leaves by the
    // cancel boundary.
    let h = engine
        .start(&TRANSACTION_EITHER_WAY, D { x: 0, rounds: 0 })
        .await
        .unwrap();
    assert!(matches!(h.outcome().await, Outcome::Completed(_)));
    assert_eq!(h.history().await.ended_at(), ["unda", "no", "e"]);
}
