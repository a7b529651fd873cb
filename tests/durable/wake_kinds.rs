//! Eviction for the waits `eviction.rs` and `wake.rs` do not cover: an
//! event-based gateway (its arms race as they would in memory, whether the
//! instance was evicted by this engine or left asleep by a resume), a token at a
//! join beside a receive, an incident retried. Each instance is evicted at once,
//! and each is checked evicted before what wakes it comes.

use super::*;

#[derive(Clone, Debug, Default, PartialEq, ProcessData, Serialize, Deserialize)]
pub struct Gate {
    pub id: String,
    pub paid: u64,
    pub off: String,
    pub refunded: u64,
    pub signed: bool,
    pub fixed: bool,
}

process! {
    GATE: Gate {
        start       s;
        event_based gate;
        catch       paid: message("gate-paid", key = |g| g.id.clone(), apply = |g, p: &u64| g.paid = *p);
        catch       refund: message("gate-refund", key = |g| g.id.clone(), apply = |g, r: &u64| g.refunded = *r);
        catch       off: signal("gate-off", apply = |g, why: &String| g.off = why.clone());
        catch       late: timer(Duration::from_secs(3600));
        end         paid_end;
        end         refund_end;
        end         off_end;
        end         late_end;
        s -> gate -> paid, refund, off, late;
        paid -> paid_end;
        refund -> refund_end;
        off -> off_end;
        late -> late_end;
    }
}

process! {
    JOINED: Gate {
        start    s;
        parallel split;
        user     sign;
        receive  pay: message("joined-paid", key = |g| g.id.clone(), apply = |g, p: &u64| g.paid = *p);
        parallel join;
        end      e;
        s -> split -> sign, pay;
        sign -> join;
        pay -> join;
        join -> e;
    }
}

/// Whether `FIXABLE`'s handler succeeds (it fails, opening an incident, until set).
static FIXED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

process! {
    FIXABLE: Gate {
        start s;
        task  charge = |g| async move {
            if !FIXED.load(Ordering::SeqCst) {
                return Err(thresh::TaskError::permanent("the card service is down"));
            }
            g.fixed = true;
            Ok(())
        };
        end   e;
        s -> charge -> e;
    }
}

fn register(engine: &DurableEngine) -> Result<(), thresh::EngineError> {
    engine.evict_idle(Some(Duration::ZERO));
    engine.register(&GATE)?;
    engine.register(&JOINED)?;
    engine.register(&FIXABLE)?;
    Ok(())
}

/// An event-based gateway's two message arms and its signal arm fired at the same
/// moment from three tasks at an evicted instance — evicted by this engine (its hub choice kept)
/// or left asleep by a resume (its choice opened anew as it loads): one arm wins,
/// and a message another arm beat stays buffered for another catch, not consumed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_evicted_event_based_gateways_arms_race_as_in_memory() {
    let mut won = [0; 3];
    for round in 0..8 {
        let store = test_store();
        let mut engine = store.engine().expect("open");
        register(&engine).expect("register");
        let key = format!("G-{round}");
        let gate = Gate {
            id: key.clone(),
            ..Gate::default()
        };
        let id = engine.start(&GATE, gate).await.expect("stored").id();
        until("evicted", || engine.evicted_instances() == 1).await;
        let asleep = round % 2 == 1;
        if asleep {
            let restarted = thresh::testing::restart(engine, &store, register)
                .await
                .expect("restarted");
            engine = restarted.engine;
            assert_eq!(restarted.report.asleep, 1, "{:?}", restarted.report);
            assert_eq!(engine.running_instances(), 0);
        }
        let engine = Arc::new(engine);
        let publish = {
            let (engine, key) = (Arc::clone(&engine), key.clone());
            tokio::spawn(async move { engine.publish_message("gate-paid", &key, 7_u64).await })
        };
        let refund = {
            let (engine, key) = (Arc::clone(&engine), key.clone());
            tokio::spawn(async move { engine.publish_message("gate-refund", &key, 4_u64).await })
        };
        let broadcast = {
            let engine = Arc::clone(&engine);
            tokio::spawn(async move {
                engine
                    .broadcast_signal("gate-off", "closed".to_string())
                    .await
            })
        };
        let paid_published = publish.await.expect("joined").expect("published");
        let refund_published = refund.await.expect("joined").expect("published");
        broadcast.await.expect("joined").expect("broadcast");
        let (status, outcome) = ended(&engine, id).await;
        assert_eq!(status, Status::Completed, "{outcome}");
        let arms = [
            outcome.contains("\"paid\":7"),
            outcome.contains("\"refunded\":4"),
            outcome.contains("\"off\":\"closed\""),
        ];
        assert_eq!(arms.iter().filter(|&&a| a).count(), 1, "one arm: {outcome}");
        let arm = arms.iter().position(|&a| a).unwrap_or_default();
        won[arm] += 1;
        // The messages no arm took wait, for another catch.
        let mut buffered: Vec<String> = engine
            .buffered_messages(10)
            .into_iter()
            .map(|m| format!("{}/{}", m.name, m.key))
            .collect();
        buffered.sort();
        let waiting: Vec<String> = [("gate-paid", 0), ("gate-refund", 1)]
            .into_iter()
            .filter(|&(_, a)| a != arm)
            .map(|(name, _)| format!("{name}/{key}"))
            .collect();
        assert_eq!(buffered, waiting, "won by arm {arm}: {outcome}");
        // And the hub never handed a losing arm its message.
        for (published, a) in [(paid_published, 0), (refund_published, 1)] {
            if a != arm {
                assert_eq!(published, thresh::Published::Buffered, "arm {a} lost");
            }
        }
        assert!(engine.evicted_loads() >= 1);
        engine.shutdown(HANG).await.expect("shutdown");
    }
    // Which arm wins is the race's; both are seen over the rounds most often.
    eprintln!("won by payment, refund, signal: {won:?}");
}

/// A token waiting at a parallel join while its sibling waits at a receive, both
/// branches evicted between their steps: the user task's completion loads the
/// instance and leaves it at the join (evicted again), the message loads it again
/// and the join fires once — before and after a restart.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_token_at_a_join_survives_eviction_and_the_join_fires_once() {
    for restart_between in [false, true] {
        let store = test_store();
        let mut engine = store.engine().expect("open");
        register(&engine).expect("register");
        let gate = Gate {
            id: "J-1".into(),
            ..Gate::default()
        };
        let id = engine.start(&JOINED, gate).await.expect("stored").id();
        until("evicted", || engine.evicted_instances() == 1).await;
        let tasks = engine
            .tasks(&thresh::TaskQuery::new())
            .await
            .expect("listed");
        let [task] = &tasks[..] else {
            panic!("one open task: {tasks:?}");
        };
        engine
            .complete_task(&JOINED, task.id, |g| g.signed = true)
            .await
            .expect("completed");
        // At the join now, and evicted again.
        until("evicted at the join", || {
            engine.evicted_instances() == 1 && engine.running_instances() == 0
        })
        .await;
        assert_eq!(
            engine.instance(id).await.expect("read").unwrap().0,
            Status::Running
        );
        if restart_between {
            let restarted = thresh::testing::restart(engine, &store, register)
                .await
                .expect("restarted");
            engine = restarted.engine;
            assert_eq!(restarted.report.asleep, 1, "{:?}", restarted.report);
        }
        engine
            .publish_message("joined-paid", "J-1", 3_u64)
            .await
            .expect("published");
        let (status, outcome) = ended(&engine, id).await;
        assert_eq!(status, Status::Completed, "{outcome}");
        assert!(outcome.contains("\"paid\":3"), "{outcome}");
        assert!(outcome.contains("\"signed\":true"), "{outcome}");
        engine.shutdown(HANG).await.expect("shutdown");
    }
}

/// An instance with an open incident is evicted; retrying the incident loads it
/// and the handler runs once more — before and after a restart.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_evicted_instances_incident_is_retried() {
    for restart_between in [false, true] {
        FIXED.store(false, Ordering::SeqCst);
        let store = test_store();
        let mut engine = store.engine().expect("open");
        register(&engine).expect("register");
        let id = engine
            .start(&FIXABLE, Gate::default())
            .await
            .expect("stored")
            .id();
        until("evicted with its incident", || {
            engine.evicted_instances() == 1
        })
        .await;
        if restart_between {
            let restarted = thresh::testing::restart(engine, &store, register)
                .await
                .expect("restarted");
            engine = restarted.engine;
            assert_eq!(restarted.report.asleep, 1, "{:?}", restarted.report);
        }
        let incidents = engine.incidents().await.expect("read");
        let [incident] = &incidents[..] else {
            panic!("one incident: {incidents:?}");
        };
        assert_eq!(incident.id.instance, id);
        let loads = engine.evicted_loads();
        FIXED.store(true, Ordering::SeqCst);
        engine.retry(incident.id).await.expect("retried");
        let (status, outcome) = ended(&engine, id).await;
        assert_eq!(status, Status::Completed, "{outcome}");
        assert!(outcome.contains("\"fixed\":true"), "{outcome}");
        assert_eq!(
            engine.evicted_loads(),
            loads + 1,
            "the retry loaded it once"
        );
        engine.shutdown(HANG).await.expect("shutdown");
    }
}

process! {
    SIGN_TWICE: Gate {
        start s;
        user  first;
        user  second;
        end   e;
        s -> first -> second -> e;
    }
}

/// Task-list completions of many evicted instances' tasks at once, on a
/// multi-thread runtime, each instance evicted again the moment it rests: a
/// completion that loads an instance reaches it even when the loaded loop rests
/// (and is evicted) before the completion comes — never `NotRunning` — and each
/// task is completed once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn task_list_actions_reach_instances_evicted_again_as_they_load() {
    const N: usize = 64;
    for _round in 0..4 {
        let store = test_store();
        let engine = Arc::new(store.engine().expect("open"));
        engine.evict_idle(Some(Duration::ZERO));
        engine.register(&SIGN_TWICE).expect("register");
        let mut ids = Vec::new();
        for _ in 0..N {
            let id = engine
                .start(&SIGN_TWICE, Gate::default())
                .await
                .expect("stored")
                .id();
            ids.push(id);
        }
        until("evicted", || engine.evicted_instances() == N).await;
        for step in 0..2 {
            let tasks = engine
                .tasks(&thresh::TaskQuery::new())
                .await
                .expect("listed");
            assert_eq!(tasks.len(), N, "step {step}");
            let mut set = tokio::task::JoinSet::new();
            for task in tasks {
                let engine = Arc::clone(&engine);
                set.spawn(async move {
                    engine
                        .complete_task(&SIGN_TWICE, task.id, |g| g.paid += 1)
                        .await
                });
            }
            while let Some(done) = set.join_next().await {
                done.expect("joined").expect("completed");
            }
        }
        for id in ids {
            let (status, outcome) = ended(&engine, id).await;
            assert_eq!(status, Status::Completed, "{outcome}");
            assert!(outcome.contains("\"paid\":2"), "{outcome}");
        }
        engine.shutdown(HANG).await.expect("shutdown");
    }
}
