//! Several engine nodes on one PostgreSQL store (feature `postgres`; the database of
//! `THRESH_POSTGRES_URL`, default the local `test` database; a schema of its own per
//! test, dropped at its end): takeover of a stopped node's instances, fencing of a
//! node that lost its lease, messages and signals across nodes, message starts once
//! cluster-wide, watching an instance another node runs, reconnecting after the
//! connections were killed, and three node processes SIGKILLed at random moments.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use thresh::store::{PostgresStore, Status};
use thresh::{
    process, DurableEngine, InstanceError, InstanceHandle, NodeConfig, Outcome, ProcessData,
    Published,
};

mod cancels;
mod claims;
mod commits;
mod crash;
mod eviction;
mod incidents;
mod starts;
mod takeover_seen;
mod tasks;
mod versions;

const HANG: Duration = Duration::from_secs(30);

fn url() -> String {
    thresh::testing::postgres_url()
}

/// One test of this file at a time: each runs several nodes of four connections,
/// and the server's `max_connections` (100 by default) is shared with every other
/// suite running beside this one.
async fn one_at_a_time() -> tokio::sync::MutexGuard<'static, ()> {
    static SERIAL: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());
    SERIAL.lock().await
}

/// Run `sql` on a connection of its own, off the tokio runtime.
fn sql(sql: String) -> Vec<postgres::Row> {
    std::thread::spawn(move || {
        let mut client = postgres::Client::connect(&url(), postgres::NoTls).expect("connect");
        client.query(&sql, &[]).expect("sql")
    })
    .join()
    .expect("sql thread")
}

/// A schema of its own (its name, and the kit's schema that drops it at the end).
struct Schema(String, #[allow(dead_code)] thresh::testing::TempSchema);

impl Schema {
    fn new(tag: &str) -> Schema {
        let temp = thresh::testing::TempSchema::new(&format!("cluster_{tag}"));
        Schema(temp.name().to_string(), temp)
    }

    fn config(&self, node: &str, lease: Duration) -> NodeConfig {
        NodeConfig {
            schema: self.0.clone(),
            node_id: Some(node.to_string()),
            lease,
            poll: Duration::from_millis(50),
            ..NodeConfig::default()
        }
    }

    /// A node whose connections are named after the schema (so a test kills only its
    /// own), with a lease of 600 ms.
    async fn node(&self, name: &str) -> DurableEngine {
        self.node_with(name, Duration::from_millis(600)).await
    }

    async fn node_with(&self, name: &str, lease: Duration) -> DurableEngine {
        let url = format!("{}?application_name={}", url(), self.0);
        DurableEngine::connect_with(&url, self.config(name, lease))
            .await
            .expect("connect")
    }

    /// A node that polls the store only every `poll` (what it claims before then,
    /// a wake-up brought).
    async fn node_polling(&self, name: &str, poll: Duration) -> DurableEngine {
        let url = format!("{}?application_name={}", url(), self.0);
        let config = NodeConfig {
            poll,
            ..self.config(name, Duration::from_millis(600))
        };
        DurableEngine::connect_with(&url, config)
            .await
            .expect("connect")
    }

    async fn store(&self) -> PostgresStore {
        let (url, schema) = (url(), self.0.clone());
        tokio::task::spawn_blocking(move || PostgresStore::connect_schema(&url, &schema))
            .await
            .expect("thread")
            .expect("store")
    }
}

#[derive(Clone, Debug, Default, PartialEq, ProcessData, Serialize, Deserialize)]
pub struct Order {
    pub id: String,
    pub checked: u32,
    pub paid: u64,
    pub approved: bool,
}

process! {
    ORDER: Order {
        start s;
        task  check = |o| async move { o.checked += 1; Ok(()) };
        receive pay: message("pay", key = |o| o.id.clone(), apply = |o, amount: &u64| o.paid += *amount);
        user  approve;
        end   e;
        s -> check -> pay -> approve -> e;
    }
}

async fn until_open<D: Clone>(handle: &InstanceHandle<D>, node: &str) {
    tokio::time::timeout(HANG, async {
        while !handle.open_work().await.iter().any(|w| w.node == node) {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    })
    .await
    .unwrap_or_else(|_| panic!("the user task {node} opened"));
}

fn order(id: &str) -> Order {
    Order {
        id: id.to_string(),
        ..Order::default()
    }
}

/// The handle of instance `id` once node `engine` has taken it over.
async fn taken_over(engine: &DurableEngine, id: thresh::InstanceId) -> InstanceHandle<Order> {
    tokio::time::timeout(HANG, async {
        loop {
            if let Some(handle) = engine.handle(&ORDER, id) {
                return handle;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await
    .expect("taken over")
}

/// Through `node`, pay an `ORDER` instance parked at its payment (5), approve it,
/// and check it completed once with both.
async fn pay_approve_and_finish(node: &DurableEngine, handle: &InstanceHandle<Order>) {
    let key = handle.data().await.expect("data").id;
    node.publish_message("pay", &key, 5_u64)
        .await
        .expect("stored");
    until_open(handle, "approve").await;
    handle
        .complete("approve", |o: &mut Order| o.approved = true)
        .await
        .expect("approved");
    let done = tokio::time::timeout(HANG, handle.outcome())
        .await
        .expect("ended")
        .completed()
        .expect("completed");
    assert_eq!((done.checked, done.paid, done.approved), (1, 5, true));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_stopped_nodes_instances_are_taken_over_and_finish_once() {
    let _serial = one_at_a_time().await;
    let schema = Schema::new("takeover");
    let a = schema.node("a").await;
    let b = schema.node("b").await;
    b.register(&ORDER).expect("register");
    b.message_type::<u64>("pay");
    // Started on a: a owns them.
    let mut ids = Vec::new();
    for n in 0..6 {
        let handle = a
            .start(&ORDER, order(&format!("T-{n}")))
            .await
            .expect("start");
        ids.push(handle.id());
    }
    let store = schema.store().await;
    for id in &ids {
        let (owner, fence) = store.owner(id.0).expect("read").expect("stored");
        assert_eq!((owner.as_deref(), fence), (Some("a"), 1));
    }
    // a stops: its leases stay in the store, unrenewed, and expire; b takes them.
    a.shutdown(HANG).await.expect("shutdown");
    for id in &ids {
        let handle = taken_over(&b, *id).await;
        pay_approve_and_finish(&b, &handle).await;
    }
    // One handover each, from a to b with fence 2.
    let handovers = store.handovers().expect("read");
    assert_eq!(handovers.len(), ids.len(), "{handovers:?}");
    for h in &handovers {
        assert_eq!(
            (h.from.as_deref(), h.to.as_str(), h.fence),
            (Some("a"), "b", 2)
        );
    }
    b.shutdown(HANG).await.expect("shutdown");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_node_that_lost_its_lease_stops_the_instance_and_the_new_owner_goes_on() {
    let _serial = one_at_a_time().await;
    let schema = Schema::new("fenced");
    // a renews every 20 s: the test can expire its lease in between.
    let a = schema.node_with("a", Duration::from_secs(60)).await;
    let b = schema.node("b").await;
    b.register(&ORDER).expect("register");
    b.message_type::<u64>("pay");
    let handle = a.start(&ORDER, order("F-1")).await.expect("start");
    a.publish_message("pay", "F-1", 7_u64)
        .await
        .expect("stored");
    until_open(&handle, "approve").await;
    // And stored so (the payment applied, the token at the user task): a writes
    // nothing more until the completion below.
    let stored = a.watch(&ORDER, handle.id());
    tokio::time::timeout(HANG, async {
        while stored.data().await.expect("read").paid != 7 {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    })
    .await
    .expect("stored at the user task");
    // As if a had been cut off from the database for longer than its lease: its
    // lease expired before a renewed it — b takes it over.
    sql(format!(
        "UPDATE {}.instances SET lease_until = now() - interval '1 hour'",
        schema.0
    ));
    let moved = taken_over(&b, handle.id()).await;
    // a does not know yet: its completion is refused by the fence, and a stops the
    // instance without ending it.
    let refused = handle
        .complete("approve", |o: &mut Order| o.approved = true)
        .await;
    assert!(refused.is_err(), "{refused:?}");
    let outcome = tokio::time::timeout(HANG, handle.outcome())
        .await
        .expect("a stopped it");
    match outcome {
        Outcome::Failed(InstanceError::Moved { message }) => {
            assert!(message.contains("owner b"), "{message}")
        }
        other => panic!("not moved: {other:?}"),
    }
    // The store still holds it running, owned by b, and b finishes it.
    assert_eq!(
        b.watch(&ORDER, handle.id()).status().await.expect("read"),
        Status::Running
    );
    until_open(&moved, "approve").await;
    moved
        .complete("approve", |o: &mut Order| o.approved = true)
        .await
        .expect("approved on b");
    // Watched from a (which no longer runs it): b's outcome.
    let watched = tokio::time::timeout(HANG, a.watch(&ORDER, handle.id()).outcome())
        .await
        .expect("ended")
        .expect("read");
    assert_eq!(watched.status, Status::Completed);
    assert_eq!(
        (
            watched.data.checked,
            watched.data.paid,
            watched.data.approved
        ),
        (1, 7, true)
    );
    a.shutdown(HANG).await.expect("shutdown");
    b.shutdown(HANG).await.expect("shutdown");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_node_stops_an_instance_whose_lease_another_node_took_without_writing() {
    let _serial = one_at_a_time().await;
    let schema = Schema::new("swept");
    let a = schema.node("a").await;
    let handle = a.start(&ORDER, order("S-1")).await.expect("start");
    until_checked(&a, &handle).await;
    // Another node took it (as the store says: owner, fence, a live lease).
    sql(format!(
        "UPDATE {}.instances SET owner = 'z', fence = fence + 1,
                lease_until = now() + interval '1 hour'",
        schema.0
    ));
    // a's next renewal does not keep it: a stops its loop; the end it tries is
    // refused by the fence, so the store keeps z's instance running.
    let outcome = tokio::time::timeout(HANG, handle.outcome())
        .await
        .expect("a stopped it");
    assert!(
        matches!(&outcome, Outcome::Failed(InstanceError::Moved { message }) if message.contains("owner z")),
        "{outcome:?}"
    );
    assert_eq!(
        a.watch(&ORDER, handle.id()).status().await.expect("read"),
        Status::Running
    );
    a.shutdown(HANG).await.expect("shutdown");
}

/// Wait until the instance stored its first task's completion.
async fn until_checked(engine: &DurableEngine, handle: &InstanceHandle<Order>) {
    let watched = engine.watch(&ORDER, handle.id());
    tokio::time::timeout(HANG, async {
        while watched.data().await.expect("read").checked == 0 {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    })
    .await
    .expect("checked");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_message_published_on_one_node_reaches_the_instance_on_another() {
    let _serial = one_at_a_time().await;
    let schema = Schema::new("messages");
    let a = schema.node("a").await;
    let b = schema.node("b").await;
    let c = schema.node("c").await;
    // The node whose instances catch the message reads its payload.
    a.message_type::<u64>("pay");
    // Waiting first, then published on b.
    let first = a.start(&ORDER, order("M-1")).await.expect("start");
    let first_data = a.watch(&ORDER, first.id());
    tokio::time::timeout(HANG, async {
        while first_data.data().await.expect("read").checked == 0 {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    })
    .await
    .expect("checked");
    assert_eq!(
        b.publish_message("pay", "M-1", 3_u64)
            .await
            .expect("stored"),
        Published::Buffered,
        "stored for the node that takes it"
    );
    // Published on c before the instance (on a) waits: it waits in the store.
    c.publish_message("pay", "M-2", 4_u64)
        .await
        .expect("stored");
    let second = a.start(&ORDER, order("M-2")).await.expect("start");
    for (handle, paid) in [(&first, 3), (&second, 4)] {
        until_open(handle, "approve").await;
        assert_eq!(handle.data().await.expect("data").paid, paid);
        handle
            .complete("approve", |o: &mut Order| o.approved = true)
            .await
            .expect("approved");
        let done = tokio::time::timeout(HANG, handle.outcome())
            .await
            .expect("ended")
            .completed()
            .expect("completed");
        assert_eq!(done.paid, paid, "applied once");
    }
    let store = schema.store().await;
    let left = tokio::task::spawn_blocking(move || thresh::store::Store::messages(&store))
        .await
        .expect("thread")
        .expect("read");
    assert!(left.is_empty(), "both consumed: {left:?}");
    for node in [a, b, c] {
        node.shutdown(HANG).await.expect("shutdown");
    }
}

#[derive(Clone, Debug, Default, PartialEq, ProcessData, Serialize, Deserialize)]
pub struct Ticket {
    pub seats: u32,
}

process! {
    BOOKING: Ticket {
        start booked: message("booking", apply = |t, seats: &u32| t.seats = *seats);
        end   done;
        booked -> done;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_message_start_deployed_on_every_node_starts_one_instance_per_message() {
    let _serial = one_at_a_time().await;
    let schema = Schema::new("starts");
    let nodes = [
        schema.node("a").await,
        schema.node("b").await,
        schema.node("c").await,
    ];
    let mut deployments = Vec::new();
    for node in &nodes {
        node.message_type::<u32>("booking");
        deployments.push(node.deploy(&BOOKING, Ticket::default()).expect("deploy"));
    }
    for n in 0..30u32 {
        nodes[n as usize % 3]
            .publish_message("booking", format!("B-{n}"), n)
            .await
            .expect("stored");
    }
    let store = schema.store().await;
    let store = std::sync::Arc::new(store);
    let completed = tokio::time::timeout(HANG, async {
        loop {
            let s = store.clone();
            let done = tokio::task::spawn_blocking(move || {
                thresh::store::Store::list(&*s, Some("BOOKING"), None).expect("read")
            })
            .await
            .expect("thread");
            if done.len() >= 30 && done.iter().all(|r| r.status == Status::Completed) {
                return done;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await
    .expect("all started");
    // Give a duplicate time to show up, then count: one instance per message.
    tokio::time::sleep(Duration::from_millis(300)).await;
    let s = store.clone();
    let all = tokio::task::spawn_blocking(move || {
        thresh::store::Store::list(&*s, Some("BOOKING"), None).expect("read")
    })
    .await
    .expect("thread");
    assert_eq!(all.len(), 30, "{completed:?}");
    let seats: BTreeSet<u64> = all
        .iter()
        .map(|r| {
            let o: serde_json::Value = serde_json::from_str(r.outcome.as_deref().unwrap()).unwrap();
            o["data"]["seats"].as_u64().unwrap()
        })
        .collect();
    assert_eq!(seats, (0..30).collect::<BTreeSet<u64>>());
    for node in nodes {
        node.shutdown(HANG).await.expect("shutdown");
    }
}

#[derive(Clone, Debug, Default, PartialEq, ProcessData, Serialize, Deserialize)]
pub struct Alarm {
    pub level: u32,
}

process! {
    WATCHER: Alarm {
        start s;
        catch alarm: signal("alarm", apply = |a, level: &u32| a.level = *level);
        end   e;
        s -> alarm -> e;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_signal_reaches_catchers_on_every_node() {
    let _serial = one_at_a_time().await;
    let schema = Schema::new("signals");
    let a = schema.node("a").await;
    let b = schema.node("b").await;
    let mut handles = Vec::new();
    for node in [&a, &b] {
        node.signal_type::<u32>("alarm");
        for _ in 0..3 {
            handles.push(node.start(&WATCHER, Alarm::default()).await.expect("start"));
        }
    }
    // Every catch armed before the signal: each instance stored the step that armed
    // it (its second checkpoint; the first is its birth).
    let store = std::sync::Arc::new(schema.store().await);
    for h in &handles {
        let (store, id) = (store.clone(), h.id().0);
        tokio::time::timeout(HANG, async {
            loop {
                let s = store.clone();
                let seq = tokio::task::spawn_blocking(move || {
                    thresh::store::Store::instance(&*s, id)
                        .expect("read")
                        .map_or(0, |r| r.seq)
                })
                .await
                .expect("thread");
                if seq >= 2 {
                    return;
                }
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
        })
        .await
        .expect("armed");
    }
    a.broadcast_signal("alarm", 9_u32).await.expect("sent");
    for h in &handles {
        let alarm = tokio::time::timeout(HANG, h.outcome())
            .await
            .expect("ended")
            .completed()
            .expect("completed");
        assert_eq!(alarm.level, 9);
    }
    a.shutdown(HANG).await.expect("shutdown");
    b.shutdown(HANG).await.expect("shutdown");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn nodes_reconnect_after_their_connections_are_killed() {
    let _serial = one_at_a_time().await;
    let schema = Schema::new("reconnect");
    let a = schema.node("a").await;
    let b = schema.node("b").await;
    a.message_type::<u64>("pay");
    let mut handles = Vec::new();
    for n in 0..4 {
        handles.push(
            a.start(&ORDER, order(&format!("R-{n}")))
                .await
                .expect("start"),
        );
    }
    for h in &handles {
        let watched = a.watch(&ORDER, h.id());
        tokio::time::timeout(HANG, async {
            while watched.data().await.expect("read").checked == 0 {
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
        })
        .await
        .expect("checked");
    }
    // Every connection of this test's nodes is terminated by the server.
    let killed = sql(format!(
        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity
         WHERE application_name = '{}' AND pid <> pg_backend_pid()",
        schema.0
    ));
    assert!(
        killed.len() >= 6,
        "two nodes' connections: {}",
        killed.len()
    );
    // They go on: payments published on b reach a's instances, completions are
    // stored, and nothing is lost.
    for (n, h) in handles.iter().enumerate() {
        b.publish_message("pay", format!("R-{n}"), 2_u64)
            .await
            .expect("stored after reconnecting");
        until_open(h, "approve").await;
        h.complete("approve", |o: &mut Order| o.approved = true)
            .await
            .expect("approved");
    }
    for h in &handles {
        let done = tokio::time::timeout(HANG, h.outcome())
            .await
            .expect("ended")
            .completed()
            .expect("completed");
        assert_eq!((done.checked, done.paid, done.approved), (1, 2, true));
    }
    let watched = b.watch(&ORDER, handles[0].id());
    assert_eq!(watched.status().await.expect("read"), Status::Completed);
    a.shutdown(HANG).await.expect("shutdown");
    b.shutdown(HANG).await.expect("shutdown");
}
