//! Eviction on a node of several (issue 35, item 4): an evicted instance keeps its
//! owner and lease; a message published on another node, a task completion and a
//! cancel made there load it on its owner, each taken once; a node SIGKILLed with
//! evicted instances leaves them to a survivor, which takes them over without
//! loading them and wakes each on its message.

use std::collections::BTreeMap;

use thresh::store::Store;
use thresh::{InstanceId, TaskQuery};

use super::*;

/// An `ORDER` stored by every node as `store` reads it: waiting until `done` says.
async fn until_stored(
    store: &PostgresStore,
    ids: &[InstanceId],
    what: &str,
    done: impl Fn(&thresh::store::InstanceRecord) -> bool,
) {
    tokio::time::timeout(HANG, async {
        loop {
            let all = ids.iter().all(|id| {
                tokio::task::block_in_place(|| store.instance(id.0))
                    .expect("read")
                    .is_some_and(|r| done(&r))
            });
            if all {
                return;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await
    .unwrap_or_else(|_| panic!("every instance {what}"));
}

/// Wait until `node` holds `count` instances evicted.
async fn until_evicted(node: &DurableEngine, count: usize) {
    tokio::time::timeout(HANG, async {
        while node.evicted_instances() != count {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    })
    .await
    .unwrap_or_else(|_| {
        panic!(
            "{count} instances evicted (there are {})",
            node.evicted_instances()
        )
    });
}

/// The owner and fence of each of `ids`.
fn owners(store: &PostgresStore, ids: &[InstanceId]) -> Vec<(Option<String>, i64)> {
    ids.iter()
        .map(|id| {
            tokio::task::block_in_place(|| store.owner(id.0))
                .expect("read")
                .expect("stored")
        })
        .collect()
}

/// How many messages (published ones, and stored requests) the store holds.
fn stored_messages(schema: &Schema) -> i64 {
    sql(format!("SELECT count(*) FROM {}.messages", schema.0))[0].get(0)
}

/// Two nodes; `a` evicts at once. Orders started on `a` are evicted at their
/// payment; each payment, published on `b`, loads its order on `a` (never on `b`),
/// and is applied once; each approval, completed from `b`'s task list, loads it on
/// `a` again and completes it; a cancel from `b` loads and cancels another. Run
/// twice over.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn messages_tasks_and_cancels_from_another_node_load_an_evicted_instance_on_its_owner() {
    let _serial = one_at_a_time().await;
    const ORDERS: usize = 24;
    const CANCELS: usize = 4;
    let schema = Schema::new("evict_remote");
    let a = schema.node("a").await;
    let b = schema.node("b").await;
    a.evict_idle(Some(Duration::ZERO));
    for node in [&a, &b] {
        node.register(&ORDER).expect("register");
        node.message_type::<u64>("pay");
    }
    let store = schema.store().await;
    for round in 0..2 {
        let mut ids = Vec::new();
        for n in 0..ORDERS + CANCELS {
            let handle = a
                .start(&ORDER, order(&format!("E{round}-{n}")))
                .await
                .expect("start");
            ids.push(handle.id());
        }
        let (orders, cancels) = ids.split_at(ORDERS);
        // Each at its payment, checked once, its checkpoint stored: evicted.
        until_evicted(&a, ORDERS + CANCELS).await;
        let loads = a.evicted_loads();
        assert_eq!(a.running_instances(), 0);
        // Published on b, at once from many tasks: each loads its order on a.
        let publishes: Vec<_> = (0..ORDERS)
            .map(|n| {
                let b = b.clone();
                tokio::spawn(async move {
                    b.publish_message("pay", format!("E{round}-{n}"), 5_u64)
                        .await
                        .expect("stored")
                })
            })
            .collect();
        for publish in publishes {
            assert_eq!(publish.await.expect("task"), Published::Buffered);
        }
        until_stored(&store, orders, "paid, at its approval", |r| {
            r.waits == ["approve"]
        })
        .await;
        for &id in orders {
            let paid = b.watch(&ORDER, id).data().await.expect("read").paid;
            assert_eq!(paid, 5, "paid once");
        }
        assert!(a.evicted_loads() >= loads + ORDERS as u64);
        assert_eq!((b.evicted_loads(), b.running_instances()), (0, 0));
        // Evicted again at the approval; completed from b's task list.
        until_evicted(&a, ORDERS + CANCELS).await;
        let tasks = b.tasks(&TaskQuery::new()).await.expect("tasks");
        assert_eq!(tasks.len(), ORDERS);
        for task in tasks {
            b.complete_task(&ORDER, task.id, |o: &mut Order| o.approved = true)
                .await
                .expect("handed to a");
        }
        for &id in cancels {
            b.cancel_instance(&ORDER, id).await.expect("handed to a");
        }
        until_stored(&store, orders, "completed", |r| {
            r.status == Status::Completed
        })
        .await;
        until_stored(&store, cancels, "cancelled", |r| {
            r.status == Status::Cancelled
        })
        .await;
        for &id in orders {
            let outcome = b.watch(&ORDER, id).outcome().await.expect("read").data;
            assert_eq!(
                (outcome.checked, outcome.paid, outcome.approved),
                (1, 5, true)
            );
        }
        // Their tasks left the task list with their ends.
        let left = sql(format!("SELECT instance FROM {}.user_tasks", schema.0));
        let left: Vec<i64> = left.iter().map(|r| r.get(0)).collect();
        assert!(left.is_empty(), "tasks of ended instances listed: {left:?}");
        // Run by a all along: never moved, nothing left over.
        assert!(owners(&store, &ids)
            .iter()
            .all(|(owner, fence)| (owner.as_deref(), *fence) == (Some("a"), 1)));
        assert_eq!((b.evicted_loads(), b.running_instances()), (0, 0));
        assert_eq!(a.evicted_instances(), 0);
        tokio::time::timeout(HANG, async {
            while stored_messages(&schema) != 0 {
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
        })
        .await
        .expect("every message and request consumed");
    }
    for node in [a, b] {
        node.shutdown(HANG).await.expect("shutdown");
    }
}

/// A node whose lease on an evicted instance ran out (cut off from the database
/// longer than its lease) and was taken: the survivor keeps the instance asleep;
/// the old owner, woken by a payment for it, loads it and is refused by the fence —
/// the instance moved, the new owner's record untouched — and the new owner, asked
/// to cancel it, loads and cancels it.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn an_evicted_instance_loaded_by_a_node_that_lost_its_lease_is_fenced() {
    let _serial = one_at_a_time().await;
    let schema = Schema::new("evict_fenced");
    // a renews every 20 s: the test can expire its lease in between.
    let a = schema.node_with("a", Duration::from_secs(60)).await;
    let b = schema.node("b").await;
    for node in [&a, &b] {
        node.evict_idle(Some(Duration::ZERO));
        node.register(&ORDER).expect("register");
        node.message_type::<u64>("pay");
    }
    let handle = a.start(&ORDER, order("F-1")).await.expect("start");
    let id = handle.id();
    until_evicted(&a, 1).await;
    let store = schema.store().await;
    let stored = store.instance(id.0).expect("read").expect("stored");
    sql(format!(
        "UPDATE {}.instances SET lease_until = now() - interval '1 hour'",
        schema.0
    ));
    until_evicted(&b, 1).await;
    assert_eq!(owners(&store, &[id]), [(Some("b".to_string()), 2)]);
    assert_eq!((b.evicted_loads(), b.running_instances()), (0, 0));
    // a still holds it evicted, its hub subscription kept: its payment loads it
    // there, and its checkpoint is refused.
    a.publish_message("pay", "F-1", 7_u64)
        .await
        .expect("stored");
    let outcome = tokio::time::timeout(HANG, handle.outcome())
        .await
        .expect("a stopped it");
    match outcome {
        Outcome::Failed(InstanceError::Moved { message }) => {
            assert!(message.contains("owner b"), "{message}")
        }
        other => panic!("not moved: {other:?}"),
    }
    assert!(a.evicted_loads() >= 1);
    let now = store.instance(id.0).expect("read").expect("stored");
    assert_eq!(
        (now.status, now.seq, &now.state),
        (Status::Running, stored.seq, &stored.state)
    );
    assert_eq!(b.watch(&ORDER, id).data().await.expect("read").paid, 0);
    // Its owner cancels it: loaded there from the store.
    b.cancel_instance(&ORDER, id).await.expect("cancelled");
    until_stored(&store, &[id], "cancelled", |r| {
        r.status == Status::Cancelled
    })
    .await;
    assert_eq!(b.evicted_loads(), 1);
    for node in [a, b] {
        node.shutdown(HANG).await.expect("shutdown");
    }
}

/// The lease of the SIGKILL test's child node: short, so the survivor takes its
/// instances soon; long enough for a loaded machine to renew in time.
const KILLED_LEASE: Duration = Duration::from_secs(2);

/// How many orders waiting for a payment the killed node leaves evicted.
const LEFT: u64 = 16;

/// How many orders waiting for a signal the killed node leaves evicted.
const SIGNALLED: u64 = 4;

process! {
    PARKED: Order {
        start   s;
        receive pay: message("pay", key = |o| o.id.clone(), apply = |o, amount: &u64| o.paid += *amount);
        end     e;
        s -> pay -> e;
    }
}

process! {
    HELD: Order {
        start s;
        catch go: signal("go", apply = |o, amount: &u64| o.paid += *amount);
        end   e;
        s -> go -> e;
    }
}

/// The SIGKILL test's node process: evicts at once, starts `LEFT` orders that wait
/// for their payment and `SIGNALLED` that wait for a signal, says `evicted` once
/// they all are, and waits to be killed.
#[test]
#[ignore = "run by the eviction SIGKILL test as its child process"]
fn evicting_node_child() {
    let Ok(schema) = std::env::var("THRESH_EVICT_SCHEMA") else {
        return;
    };
    // The test holds our stdin: when it ends (or panics), this node ends too.
    std::thread::spawn(|| {
        let _ = std::io::copy(&mut std::io::stdin(), &mut std::io::sink());
        std::process::exit(0);
    });
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    runtime.block_on(async {
        let config = NodeConfig {
            schema,
            node_id: Some("doomed".to_string()),
            lease: KILLED_LEASE,
            poll: Duration::from_millis(50),
            ..NodeConfig::default()
        };
        let engine = DurableEngine::connect_with(&url(), config)
            .await
            .expect("connect");
        engine.evict_idle(Some(Duration::ZERO));
        engine.register(&PARKED).expect("register");
        engine.register(&HELD).expect("register");
        engine.signal_type::<u64>("go");
        for n in 0..LEFT {
            let handle = engine
                .start(&PARKED, order(&format!("K-{n}")))
                .await
                .expect("stored");
            println!("started K-{n} {}", handle.id().0);
        }
        for n in 0..SIGNALLED {
            let handle = engine
                .start(&HELD, order(&format!("S-{n}")))
                .await
                .expect("stored");
            println!("started S-{n} {}", handle.id().0);
        }
        until_evicted(&engine, (LEFT + SIGNALLED) as usize).await;
        println!("evicted");
        std::future::pending::<()>().await;
    });
}

/// A node process starts orders, which are evicted; it is SIGKILLed. The survivor
/// takes them over without loading one (all kept asleep, their leases its own),
/// then payments published on it and on a third node, and a signal broadcast on
/// the third node, wake each on the survivor, where it completes, paid once.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_survivor_takes_over_a_killed_nodes_evicted_instances_and_wakes_them_on_their_messages() {
    use std::io::{BufRead, BufReader};
    let _serial = one_at_a_time().await;
    let schema = Schema::new("evict_kill");
    let mut child = std::process::Command::new(std::env::current_exe().expect("exe"))
        .args([
            "--ignored",
            "--exact",
            "eviction::evicting_node_child",
            "--nocapture",
            "--test-threads=1",
        ])
        .env("THRESH_EVICT_SCHEMA", &schema.0)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("child");
    let stdout = child.stdout.take().expect("stdout");
    let (ids, evicted) = tokio::task::spawn_blocking(move || {
        let mut ids = BTreeMap::new();
        for line in BufReader::new(stdout).lines() {
            let line = line.expect("a line");
            // The harness's own words may come first on a line (`--nocapture`).
            if let Some(at) = line.find("started ") {
                let words: Vec<&str> = line[at..].split_whitespace().collect();
                if let ["started", key, id] = words.as_slice() {
                    ids.insert(key.to_string(), InstanceId(id.parse().expect("an id")));
                }
            } else if line.ends_with("evicted") {
                return (ids, true);
            }
        }
        (ids, false)
    })
    .await
    .expect("reading the child");
    assert!(evicted, "the child node evicted its orders");
    assert_eq!(ids.len(), (LEFT + SIGNALLED) as usize);
    // SIGKILL: no shutdown, its leases left to run out.
    child.kill().expect("SIGKILL");
    child.wait().expect("reaped");
    let store = schema.store().await;
    let all: Vec<InstanceId> = ids.values().copied().collect();
    let count = all.len();
    assert!(owners(&store, &all)
        .iter()
        .all(|(owner, fence)| (owner.as_deref(), *fence) == (Some("doomed"), 1)));
    let survivor = schema.node("survivor").await;
    survivor.evict_idle(Some(Duration::ZERO));
    survivor.register(&PARKED).expect("register");
    survivor.register(&HELD).expect("register");
    survivor.message_type::<u64>("pay");
    survivor.signal_type::<u64>("go");
    let publisher = schema.node("publisher").await;
    publisher.signal_type::<u64>("go");
    // Taken over once the killed node's leases ran out: kept asleep, none loaded
    // (not one loop runs meanwhile: a resumed one would, until evicted).
    tokio::time::timeout(HANG, async {
        while survivor.evicted_instances() != count {
            assert_eq!(
                survivor.running_instances(),
                0,
                "a loop for a resting instance"
            );
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
    })
    .await
    .expect("taken over");
    assert_eq!(survivor.evicted_loads(), 0);
    assert_eq!(survivor.running_instances(), 0);
    assert!(owners(&store, &all)
        .iter()
        .all(|(owner, fence)| (owner.as_deref(), *fence) == (Some("survivor"), 2)));
    // Still not loaded a lease later: the survivor's renewals keep them.
    tokio::time::sleep(KILLED_LEASE).await;
    assert_eq!(
        (survivor.evicted_instances(), survivor.evicted_loads()),
        (count, 0)
    );
    // Half paid through the survivor itself, half through a third node; at once.
    let publishes: Vec<_> = ids
        .keys()
        .filter(|key| key.starts_with("K-"))
        .enumerate()
        .map(|(n, key)| {
            let (key, node) = match n % 2 {
                0 => (key.clone(), survivor.clone()),
                _ => (key.clone(), publisher.clone()),
            };
            tokio::spawn(async move {
                let amount = key[2..].parse::<u64>().expect("n") + 1;
                node.publish_message("pay", &key, amount)
                    .await
                    .expect("stored")
            })
        })
        .collect();
    for publish in publishes {
        publish.await.expect("task");
    }
    // The signal reaches the survivor by NOTIFY; the publisher runs no catcher.
    let reached = publisher.broadcast_signal("go", 7_u64).await.expect("sent");
    assert_eq!(reached, 0);
    until_stored(&store, &all, "completed", |r| r.status == Status::Completed).await;
    for (key, &id) in &ids {
        let (outcome, amount) = match key.starts_with("K-") {
            true => (
                publisher.watch(&PARKED, id).outcome().await,
                key[2..].parse::<u64>().expect("n") + 1,
            ),
            false => (publisher.watch(&HELD, id).outcome().await, 7),
        };
        assert_eq!(outcome.expect("read").data.paid, amount, "{key} paid once");
    }
    // Each loaded on the survivor: once, or twice when it rested and was evicted
    // again (idle time zero) between its restore and its payment's delivery, which
    // then loads it once more; every payment consumed.
    let loads = survivor.evicted_loads();
    assert!(
        (count as u64..=2 * count as u64).contains(&loads),
        "{loads} loads"
    );
    assert_eq!(survivor.evicted_instances(), 0);
    assert_eq!(
        (publisher.evicted_loads(), publisher.running_instances()),
        (0, 0)
    );
    assert_eq!(stored_messages(&schema), 0);
    let handovers = store.handovers().expect("read");
    assert_eq!(handovers.len(), count, "{handovers:?}");
    assert!(handovers
        .iter()
        .all(|h| (h.from.as_deref(), h.to.as_str()) == (Some("doomed"), "survivor")));
    for node in [survivor, publisher] {
        node.shutdown(HANG).await.expect("shutdown");
    }
}
