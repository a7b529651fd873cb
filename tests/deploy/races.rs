//! Races around deployed processes.

use super::*;

/// Repetitions of each race.
const RACES: usize = 200;

/// How long a race's instance may take on the real clock.
const RACE_HANG: Duration = Duration::from_secs(5);

/// Keys per race and publishing tasks; every task publishes every key once, so each
/// key gets one message per task: the first starts its instance, the other three are
/// its three catches'.
const KEYS: usize = 16;
const PUBLISHERS: u64 = 4;

process! {
    /// Started by an `order` message, then waits for three more with its id.
    ORDER_THREE_MORE: Order {
        start received: message("order", apply = |o, p: &Placed| {
            o.id = p.id.clone();
            o.amount = p.amount;
        });
        catch more1: message("order", key = |o| o.id.clone(), apply = |o, p: &Placed| o.extra += p.amount);
        catch more2: message("order", key = |o| o.id.clone(), apply = |o, p: &Placed| o.extra += p.amount);
        catch more3: message("order", key = |o| o.id.clone(), apply = |o, p: &Placed| o.extra += p.amount);
        end   done;
        received -> more1 -> more2 -> more3 -> done;
    }
}

/// Many keys published from several tasks at once, to instances that catch the
/// further messages with their key: exactly one instance per key, none duplicated,
/// every message consumed by that key's instance (its start's payload plus its three
/// catches' add up to every task's), nothing left in the buffer.
///
/// Fails within a few dozen races: an instance parks at a catch while the message
/// for it sits in the buffer. `Hub::publish` checks for a waiter, and finding none
/// offers the message to the starters; the deployment declines (the key's instance
/// runs) and `publish` buffers the message under a fresh lock, without looking for
/// a waiter again. A catch that subscribed in between found the buffer empty and
/// waits; the buffered message is never handed to it.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn many_keys_caught_by_their_instances_from_many_tasks() {
    for race in 0..RACES {
        let engine = Engine::new();
        let mut orders = engine
            .deploy(&ORDER_THREE_MORE, Order::default())
            .expect("deployed");
        let mut publishers = tokio::task::JoinSet::new();
        for task in 0..PUBLISHERS {
            let engine = engine.clone();
            publishers.spawn(async move {
                let mut results = Vec::new();
                for k in 0..KEYS {
                    // Each task goes through the keys in its own order.
                    let k = (k * (2 * task as usize + 1) + race) % KEYS;
                    let key = format!("r{race}-k{k}");
                    if (k + task as usize) % 3 == 1 {
                        tokio::task::yield_now().await;
                    }
                    let amount = 1 << (8 * task);
                    let published = engine
                        .publish_message("order", &key, placed(key.clone(), amount))
                        .await
                        .unwrap();
                    results.push((key, published));
                }
                results
            });
        }
        let mut started: BTreeMap<String, usize> = BTreeMap::new();
        let mut total = 0;
        while let Some(results) = publishers.join_next().await {
            for (key, published) in results.expect("a publisher") {
                total += 1;
                match published {
                    Published::Started => *started.entry(key).or_default() += 1,
                    Published::Delivered | Published::Buffered => {}
                    Published::Dropped => panic!("race {race}: {key} dropped"),
                    other => panic!("race {race}: {key}: {other:?}"),
                }
            }
        }
        assert_eq!(total, KEYS * PUBLISHERS as usize);
        assert_eq!(started.len(), KEYS, "race {race}: {started:?}");
        assert!(
            started.values().all(|&n| n == 1),
            "race {race}: {started:?}"
        );

        let mut ids = BTreeMap::new();
        for _ in 0..KEYS {
            let h = tokio::time::timeout(RACE_HANG, orders.next())
                .await
                .unwrap_or_else(|_| panic!("race {race}: too few instances"))
                .expect("deployed");
            let Ok(outcome) = tokio::time::timeout(RACE_HANG, h.outcome()).await else {
                panic!(
                    "race {race}: instance {} hung; broker {:?}\n{}",
                    h.id(),
                    engine.broker_stats(),
                    h.history().await
                )
            };
            let history = h.history().await;
            check_history(&history, &outcome);
            let data = completed(outcome, &history);
            // One message from each task: 1 + 256 + 65536 + 16777216.
            assert_eq!(
                data.amount + data.extra,
                0x0101_0101,
                "race {race}: {data:?}"
            );
            assert!(
                ids.insert(data.id.clone(), h.id()).is_none(),
                "race {race}: {} twice",
                data.id
            );
        }
        assert_eq!(ids.len(), KEYS);
        assert!(engine.undeploy(orders.id()));
        assert!(
            tokio::time::timeout(RACE_HANG, orders.next())
                .await
                .expect("next() ends")
                .is_none(),
            "race {race}: an instance too many"
        );
        assert_eq!(
            engine.broker_stats(),
            BrokerStats {
                delivered: (KEYS * PUBLISHERS as usize) as u64,
                ..BrokerStats::default()
            },
            "race {race}"
        );
        engine.shutdown(RACE_HANG).await.expect("every loop stops");
    }
}

process! {
    /// Started by an `order` message, then held at a user task until completed.
    ORDER_HELD: Order {
        start received: message("order", apply = |o, p: &Placed| {
            o.id = p.id.clone();
            o.amount = p.amount;
        });
        user  review;
        end   done;
        received -> review -> done;
    }
}

/// Many keys published from several tasks at once, to instances that hold at a user
/// task (no catch: the further messages for a key only ever go to the buffer):
/// exactly one `Started` and one running instance per key, none duplicated; every
/// other message is buffered — and as each instance ends, a buffered one starts the
/// next for its key, until every message started one.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn many_keys_from_many_tasks_start_one_instance_each() {
    for race in 0..RACES {
        let engine = Engine::new();
        let mut orders = engine
            .deploy(&ORDER_HELD, Order::default())
            .expect("deployed");
        let mut publishers = tokio::task::JoinSet::new();
        for task in 0..PUBLISHERS {
            let engine = engine.clone();
            publishers.spawn(async move {
                let mut results = Vec::new();
                for k in 0..KEYS {
                    let k = (k * (2 * task as usize + 1) + race) % KEYS;
                    let key = format!("r{race}-k{k}");
                    if (k + task as usize) % 3 == 1 {
                        tokio::task::yield_now().await;
                    }
                    let published = engine
                        .publish_message("order", &key, placed(key.clone(), task))
                        .await
                        .unwrap();
                    results.push((key, task, published));
                }
                results
            });
        }
        // key -> the task whose message started its instance.
        let mut starters: BTreeMap<String, Vec<u64>> = BTreeMap::new();
        while let Some(results) = publishers.join_next().await {
            for (key, task, published) in results.expect("a publisher") {
                match published {
                    Published::Started => starters.entry(key).or_default().push(task),
                    Published::Buffered => {}
                    other => panic!("race {race}: {key}: {other:?}"),
                }
            }
        }
        assert_eq!(starters.len(), KEYS, "race {race}: {starters:?}");
        assert!(
            starters.values().all(|tasks| tasks.len() == 1),
            "race {race}: {starters:?}"
        );
        assert_eq!(
            engine.broker_stats().buffered,
            KEYS * (PUBLISHERS as usize - 1),
            "race {race}"
        );

        // key -> the publishing tasks of its instances, in the order they ran.
        let mut seen: BTreeMap<String, Vec<u64>> = BTreeMap::new();
        for _ in 0..KEYS * PUBLISHERS as usize {
            let h = tokio::time::timeout(RACE_HANG, orders.next())
                .await
                .unwrap_or_else(|_| panic!("race {race}: too few instances"))
                .expect("deployed");
            let review = async {
                while h.complete("review", |_| {}).await.is_err() {
                    tokio::task::yield_now().await;
                }
                h.outcome().await
            };
            let outcome = tokio::time::timeout(RACE_HANG, review)
                .await
                .unwrap_or_else(|_| panic!("race {race}: instance {} hung", h.id()));
            let history = h.history().await;
            check_history(&history, &outcome);
            let data = completed(outcome, &history);
            seen.entry(data.id.clone()).or_default().push(data.amount);
        }
        assert_eq!(engine.broker_stats().buffered, 0, "race {race}");
        for (key, tasks) in &seen {
            // The first instance's payload is the one whose publish said `Started`;
            // then one instance for each other publisher's message.
            assert_eq!(tasks.first(), starters[key].first(), "race {race}: {key}");
            let mut all = tasks.clone();
            all.sort_unstable();
            assert_eq!(
                all,
                (0..PUBLISHERS).collect::<Vec<_>>(),
                "race {race}: {key}"
            );
        }
        assert!(engine.undeploy(orders.id()));
        assert!(
            tokio::time::timeout(RACE_HANG, orders.next())
                .await
                .expect("next() ends")
                .is_none(),
            "race {race}: an instance too many"
        );
        engine.shutdown(RACE_HANG).await.expect("every loop stops");
    }
}

/// Publishers race an undeploy: every `Published::Started` is one handle out of the
/// deployment (and no other handle comes out), a message published after `undeploy`
/// returned is buffered, and `next()` ends.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn publishers_race_an_undeploy() {
    for race in 0..RACES {
        let engine = Engine::new();
        let mut orders = engine.deploy(&ORDER, Order::default()).expect("deployed");
        let mut publishers = tokio::task::JoinSet::new();
        for task in 0..3 {
            let engine = engine.clone();
            publishers.spawn(async move {
                let mut started = Vec::new();
                for i in 0..20 {
                    let key = format!("t{task}-{i}");
                    match engine
                        .publish_message("order", &key, placed(key.clone(), 1))
                        .await
                        .unwrap()
                    {
                        Published::Started => started.push(key),
                        Published::Buffered => {}
                        other => panic!("{key}: {other:?}"),
                    }
                    tokio::task::yield_now().await;
                }
                started
            });
        }
        for _ in 0..race % 7 {
            tokio::task::yield_now().await;
        }
        assert!(engine.undeploy(orders.id()));
        assert_eq!(
            engine
                .publish_message("order", "after", placed("after", 1))
                .await
                .unwrap(),
            Published::Buffered,
            "race {race}"
        );
        let mut started = Vec::new();
        while let Some(keys) = publishers.join_next().await {
            started.extend(keys.expect("a publisher"));
        }
        let mut yielded = Vec::new();
        loop {
            match tokio::time::timeout(RACE_HANG, orders.next()).await {
                Ok(Some(h)) => {
                    let outcome = tokio::time::timeout(RACE_HANG, h.outcome())
                        .await
                        .expect("the instance ends");
                    let history = h.history().await;
                    yielded.push(completed(outcome, &history).id);
                }
                Ok(None) => break,
                Err(_) => panic!("race {race}: next() never ended after undeploy"),
            }
        }
        started.sort();
        yielded.sort();
        assert_eq!(started, yielded, "race {race}");
        let buffered = 60 + 1 - started.len();
        assert_eq!(engine.broker_stats().buffered, buffered, "race {race}");
        engine.shutdown(RACE_HANG).await.expect("every loop stops");
    }
}

/// Broadcasts from several tasks at once: each starts exactly one instance of each
/// deployed process.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_broadcasts_start_one_instance_each() {
    const TASKS: u64 = 4;
    const EACH: u64 = 5;
    for race in 0..RACES {
        let engine = Engine::new();
        let mut a = engine.deploy(&GO_A, Order::default()).expect("deployed");
        let mut b = engine.deploy(&GO_B, Order::default()).expect("deployed");
        let mut broadcasters = tokio::task::JoinSet::new();
        for task in 0..TASKS {
            let engine = engine.clone();
            broadcasters.spawn(async move {
                for i in 0..EACH {
                    assert_eq!(
                        engine
                            .broadcast_signal("go", task * EACH + i)
                            .await
                            .unwrap(),
                        2
                    );
                    tokio::task::yield_now().await;
                }
            });
        }
        while let Some(result) = broadcasters.join_next().await {
            result.expect("a broadcaster");
        }
        assert!(engine.undeploy(a.id()));
        assert!(engine.undeploy(b.id()));
        let mut amounts = Vec::new();
        while let Some(h) = tokio::time::timeout(RACE_HANG, a.next())
            .await
            .expect("next() ends")
        {
            let outcome = tokio::time::timeout(RACE_HANG, h.outcome())
                .await
                .expect("the instance ends");
            amounts.push(completed(outcome, &h.history().await).amount);
        }
        amounts.sort_unstable();
        assert_eq!(
            amounts,
            (0..TASKS * EACH).collect::<Vec<_>>(),
            "race {race}"
        );
        let mut count = 0;
        while let Some(h) = tokio::time::timeout(RACE_HANG, b.next())
            .await
            .expect("next() ends")
        {
            let outcome = tokio::time::timeout(RACE_HANG, h.outcome())
                .await
                .expect("the instance ends");
            assert_eq!(completed(outcome, &h.history().await).tag, "b");
            count += 1;
        }
        assert_eq!(count, TASKS * EACH, "race {race}");
        engine.shutdown(RACE_HANG).await.expect("every loop stops");
    }
}
