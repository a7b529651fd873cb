//! Waits survive a restart: a user task, a timer at its recorded deadline, a parallel
//! join's arrivals (and a running task runs again), an event-based gateway, an OR join
//! and an event sub-process inside a sub-process.

use super::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_user_task_waits_across_a_restart_and_committed_tasks_do_not_run_again() {
    let store = test_store();
    let engine = store.engine().expect("open");
    let order = Order {
        id: "A-1".into(),
        ..Order::default()
    };
    let handle = engine.start(&APPROVAL, order).await.expect("stored");
    let id = handle.id();
    until_open(&handle, "approve").await;
    let before = CHECKS.load(Ordering::SeqCst);

    let (engine, report) = restart(&store, engine).await;
    assert_eq!(report.resumed, [(id, "APPROVAL")]);
    assert!(report.skipped.is_empty());
    let handle = engine.handle(&APPROVAL, id).expect("resumed handle");
    until_open(&handle, "approve").await;
    handle
        .complete("approve", |o: &mut Order| o.approved = true)
        .await
        .expect("completed");
    // Acknowledged means stored: the completion is in the store before `complete`
    // returned (and `ship`, the task after it, starts only then).
    let stored = store.instance(id.0).expect("read").expect("kept");
    let state: serde_json::Value = serde_json::from_str(&stored.state).expect("json");
    assert_eq!(state["running"]["data"]["approved"], true);
    let Outcome::Completed(order) = outcome(&handle).await else {
        panic!("not completed")
    };
    assert_eq!((order.checked, order.approved, order.shipped), (1, true, 1));
    // `check` completed before the restart: it did not run again.
    assert_eq!(CHECKS.load(Ordering::SeqCst), before);
    engine.shutdown(HANG).await.expect("shutdown");
    let record = store.instance(id.0).expect("read").expect("kept");
    assert_eq!(record.status, Status::Completed);
    let outcome: serde_json::Value =
        serde_json::from_str(record.outcome.as_deref().expect("outcome")).expect("json");
    assert_eq!(outcome["outcome"], "completed");
    assert_eq!(outcome["data"]["shipped"], 1);
}

#[derive(Clone, Debug, Default, PartialEq, ProcessData, Serialize, Deserialize)]
pub struct Wait {
    pub left: bool,
    pub a: u32,
    pub b: bool,
}

process! {
    REMINDER: Wait {
        start s;
        catch hour: timer(Duration::from_secs(3600));
        task  go = |w| async move { w.left = true; Ok(()) };
        end   e;
        s -> hour -> go -> e;
    }
}

/// A timer keeps its deadline across a restart: 40 minutes waited before it, 20
/// after.
#[tokio::test(start_paused = true)]
async fn a_timer_fires_at_its_recorded_deadline_after_a_restart() {
    let store = test_store();
    let engine = store.engine().expect("open");
    let handle = engine
        .start(&REMINDER, Wait::default())
        .await
        .expect("stored");
    let id = handle.id();
    tokio::time::sleep(Duration::from_secs(40 * 60)).await;
    engine.shutdown(HANG).await.expect("shutdown");

    let engine = store.engine().expect("reopen");
    engine.register(&REMINDER).expect("register");
    engine.resume().await.expect("resume");
    let handle = engine.handle(&REMINDER, id).expect("resumed");
    tokio::time::sleep(Duration::from_secs(19 * 60)).await;
    assert!(!handle.is_finished(), "fired before its deadline");
    tokio::time::sleep(Duration::from_secs(2 * 60)).await;
    // No timeout on the paused clock here: the end is stored by the store's writer
    // thread, which the paused clock does not wait for (it would jump to a timeout).
    let outcome = handle.outcome().await;
    assert_eq!(outcome.completed().map(|w| w.left), Some(true));
    engine.shutdown(HANG).await.expect("shutdown");
}

static SLOW_RUNS: AtomicUsize = AtomicUsize::new(0);
/// The attempts `slow`'s handler saw, in order.
static SLOW_ATTEMPTS: std::sync::Mutex<Vec<u32>> = std::sync::Mutex::new(Vec::new());

process! {
    JOINED: Wait {
        start s;
        parallel fork;
        task  a = |w| async move { w.a += 1; Ok(()) };
        user  b;
        parallel join;
        task  slow = |_w| async move {
            // The first run waits for ever (its engine stops under it); later runs
            // finish at once: a task running at a restart runs again.
            let attempt = thresh::task::current().expect("in a handler").attempt;
            SLOW_ATTEMPTS.lock().unwrap().push(attempt);
            if SLOW_RUNS.fetch_add(1, Ordering::SeqCst) == 0 {
                std::future::pending::<()>().await;
            }
            Ok(())
        };
        user  last;
        end   e;
        s -> fork -> a, b;
        a, b -> join -> slow -> last -> e;
    }
}

/// A parallel join keeps its arrival across a restart, and a task that was running
/// when the engine stopped runs again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_join_keeps_its_arrivals_and_a_running_task_runs_again() {
    let store = test_store();
    let reopen = |store: &TestStore| {
        let engine = store.engine().expect("reopen");
        engine.register(&JOINED).expect("register");
        engine
    };
    let engine = store.engine().expect("open");
    let handle = engine
        .start(&JOINED, Wait::default())
        .await
        .expect("stored");
    let id = handle.id();
    until_open(&handle, "b").await;
    // `a` arrived at the join; `b` waits.
    engine.shutdown(HANG).await.expect("shutdown");

    let engine = reopen(&store);
    engine.resume().await.expect("resume");
    let handle = engine.handle(&JOINED, id).expect("resumed");
    until_open(&handle, "b").await;
    handle
        .complete("b", |w: &mut Wait| w.b = true)
        .await
        .expect("b");
    // The join fires; `slow` starts and hangs.
    tokio::time::timeout(HANG, async {
        while SLOW_RUNS.load(Ordering::SeqCst) == 0 {
            tokio::task::yield_now().await;
        }
    })
    .await
    .expect("slow started");
    // Its start is checkpointed (the join fired, `slow` works) before the restart.
    tokio::time::sleep(Duration::from_millis(50)).await;
    engine.shutdown(HANG).await.expect("shutdown");

    let engine = reopen(&store);
    engine.resume().await.expect("resume");
    let handle = engine.handle(&JOINED, id).expect("resumed again");
    until_open(&handle, "last").await;
    assert_eq!(SLOW_RUNS.load(Ordering::SeqCst), 2, "slow ran again, once");
    // The handler can tell: its second run is its second attempt.
    assert_eq!(*SLOW_ATTEMPTS.lock().unwrap(), [1, 2]);
    handle
        .complete("last", |_: &mut Wait| {})
        .await
        .expect("last");
    let Outcome::Completed(w) = tokio::time::timeout(HANG, handle.outcome())
        .await
        .expect("ended")
    else {
        panic!("not completed")
    };
    assert_eq!((w.a, w.b), (1, true), "`a` ran once, `b` committed once");
    engine.shutdown(HANG).await.expect("shutdown");
}

#[derive(Clone, Debug, Default, PartialEq, ProcessData, Serialize, Deserialize)]
pub struct Claim {
    pub id: String,
    pub a: bool,
    pub b: bool,
    pub assessed: u32,
    pub paid: u64,
    pub nudges: u32,
}

process! {
    SCOPED: Claim {
        start     s;
        inclusive split;
        task      quick = |c| async move { c.assessed += 1; Ok(()) };
        subprocess review {
            start       inner;
            event_based gate;
            catch       paid: message("paid", key = |c| c.id.clone(), apply = |c, amount: &u64| c.paid = *amount);
            catch       late: timer(Duration::from_secs(3600));
            end         settled;
            end         expired;
            inner -> gate -> paid, late;
            paid -> settled;
            late -> expired;
        }
        inclusive join;
        end       done;
        event_subprocess nudging {
            start nudge: non_interrupting message("nudge", key = |c| c.id.clone(), apply = |c, _n: &u32| c.nudges += 1);
            end   nudged;
            nudge -> nudged;
        }
        s -> split;
        split -> quick when |c| c.a;
        split -> review when |c| c.b;
        quick, review -> join -> done;
    }
}

/// Restored inside a sub-process: an event-based gateway waits there again (its
/// message arm wins after the restart, its timer arm is disarmed), the inclusive join
/// keeps the arrival from the other branch, and the process's non-interrupting
/// message event sub-process is armed again (it runs after the restart, and the
/// instance still completes).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn scopes_event_gates_or_joins_and_event_sub_processes_survive_a_restart() {
    let store = test_store();
    let open = |store: &TestStore| {
        let engine = store.engine().expect("open");
        engine.register(&SCOPED).expect("register");
        engine.message_type::<u64>("paid");
        engine.message_type::<u32>("nudge");
        engine
    };
    let engine = open(&store);
    let claim = Claim {
        id: "C-1".into(),
        a: true,
        b: true,
        ..Claim::default()
    };
    let handle = engine.start(&SCOPED, claim).await.expect("stored");
    let id = handle.id();
    // `quick` reached the join; the sub-process's gate waits.
    tokio::time::timeout(HANG, async {
        while handle
            .history()
            .await
            .count("gate", |w| *w == thresh::Happening::Parked)
            == 0
        {
            tokio::task::yield_now().await;
        }
    })
    .await
    .expect("the gate waits");
    engine.shutdown(HANG).await.expect("shutdown");

    let engine = open(&store);
    let report = engine.resume().await.expect("resume");
    assert_eq!(report.resumed, [(id, "SCOPED")]);
    let handle = engine.handle(&SCOPED, id).expect("resumed");
    // The event sub-process is armed again: a nudge runs it beside.
    engine
        .publish_message("nudge", "C-1", 1_u32)
        .await
        .expect("stored");
    tokio::time::timeout(HANG, async {
        while handle.data().await.is_some_and(|c| c.nudges == 0) {
            tokio::task::yield_now().await;
        }
    })
    .await
    .expect("nudged");
    // The gate's message arm wins; the join fires on the restored arrival.
    engine
        .publish_message("paid", "C-1", 120_u64)
        .await
        .expect("stored");
    let claim = tokio::time::timeout(HANG, handle.outcome())
        .await
        .expect("ended")
        .completed()
        .expect("completed");
    assert_eq!(
        (claim.assessed, claim.paid, claim.nudges),
        (1, 120, 1),
        "quick once, the payment once, the nudge once"
    );
    engine.shutdown(HANG).await.expect("shutdown");
    assert!(store.messages().expect("read").is_empty());
}

#[derive(Clone, Debug, Default, PartialEq, ProcessData, Serialize, Deserialize)]
pub struct Sign {
    pub id: String,
    pub signed: u32,
    pub noted: u64,
}

process! {
    /// Two of three signatures, then a note by message.
    TWO_OF_THREE: Sign {
        start s;
        parallel ask;
        user  a;
        user  b;
        user  c;
        complex two: activate(count = 2);
        catch note: message("note", key = |d| d.id.clone(), apply = |d, n: &u64| d.noted += *n);
        end   done;
        s -> ask -> a, b, c -> two -> note -> done;
    }
}

/// A complex join keeps its partial arrival across a restart (it fires at the second
/// one, after it, exactly once), an intermediate message catch waits again after a
/// second restart and takes a message published durably then, and the third arrival
/// is consumed at the fired join: the instance completes, the note applied once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_complex_join_and_a_message_catch_survive_restarts() {
    let store = test_store();
    let engine = store.engine().expect("open");
    let data = Sign {
        id: "S-1".into(),
        ..Sign::default()
    };
    let handle = engine.start(&TWO_OF_THREE, data).await.expect("stored");
    let id = handle.id();
    until_open(&handle, "a").await;
    handle
        .complete("a", |s: &mut Sign| s.signed += 1)
        .await
        .expect("stored");

    let setup = |engine: &DurableEngine| {
        engine.register(&TWO_OF_THREE)?;
        engine.message_type::<u64>("note");
        Ok(())
    };
    let restarted = thresh::testing::restart(engine, &store, setup)
        .await
        .expect("restarted");
    assert_eq!(restarted.report.resumed, [(id, "TWO_OF_THREE")]);
    let handle = restarted.handle(&TWO_OF_THREE, id).expect("resumed");
    until_open(&handle, "b").await;
    handle
        .complete("b", |s: &mut Sign| s.signed += 1)
        .await
        .expect("stored");
    // The join fired on `a` (kept) and `b`: the token waits at `note`, `c` is open.
    until_open(&handle, "c").await;

    let restarted = thresh::testing::restart(restarted.engine, &store, setup)
        .await
        .expect("restarted");
    let handle = restarted.handle(&TWO_OF_THREE, id).expect("resumed");
    until_open(&handle, "c").await;
    restarted
        .engine
        .publish_message("note", "S-1", 5_u64)
        .await
        .expect("stored");
    handle
        .complete("c", |s: &mut Sign| s.signed += 1)
        .await
        .expect("stored");
    let sign = outcome_of(&handle).await;
    assert_eq!((sign.signed, sign.noted), (3, 5));
    assert!(store.messages().expect("read").is_empty());
    restarted.engine.shutdown(HANG).await.expect("shutdown");
}

async fn outcome_of<D: Clone + std::fmt::Debug>(handle: &InstanceHandle<D>) -> D {
    tokio::time::timeout(HANG, handle.outcome())
        .await
        .expect("ended")
        .completed()
        .expect("completed")
}
