//! Start events across nodes: a timer start deployed on every node fires once per
//! tick cluster-wide (and goes on when nodes stop), and a start message whose key
//! belongs to an instance running on another node waits for that instance's end.

use super::*;

#[derive(Clone, Debug, Default, PartialEq, ProcessData, Serialize, Deserialize)]
pub struct Beat {
    pub beats: u32,
}

process! {
    TICKER: Beat {
        start tick: timer(every = Duration::from_millis(150));
        task  count = |b| async move { b.beats += 1; Ok(()) };
        end   done;
        tick -> count -> done;
    }
}

/// The stored instances of `process`, and the `fired` count of its timer start `tick`
/// (0 before its schedule is stored).
async fn ticks(store: &std::sync::Arc<PostgresStore>, process: &'static str) -> (Vec<u64>, u64) {
    let s = store.clone();
    tokio::task::spawn_blocking(move || {
        let ids = thresh::store::Store::list(&*s, Some(process), None)
            .expect("read")
            .iter()
            .map(|r| r.id)
            .collect();
        let fired = thresh::store::Store::deployments(&*s)
            .expect("read")
            .iter()
            .filter(|d| d.process == process)
            .filter_map(|d| {
                thresh::store::parse_anchors(&d.timer_anchors)?
                    .get("tick")
                    .copied()
            })
            .map(|t| u64::from(t.fired))
            .sum();
        (ids, fired)
    })
    .await
    .expect("thread")
}

/// Wait until the timer start fired `n` times in all.
async fn until_fired(store: &std::sync::Arc<PostgresStore>, n: u64) -> u64 {
    let fired = tokio::time::timeout(HANG, async {
        loop {
            let (_, fired) = ticks(store, "TICKER").await;
            if fired >= n {
                return fired;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await
    .expect("the schedule goes on");
    fired
}

/// Three nodes deploy one timer start: each tick starts one instance cluster-wide
/// (the stored schedule's count equals the instances stored, and the instances the
/// nodes' deployments handed out add up to it); stopping nodes one after another —
/// whichever fired the last ticks — leaves the schedule to the others.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_timer_start_deployed_on_every_node_fires_once_per_tick() {
    let _serial = one_at_a_time().await;
    let schema = Schema::new("ticks");
    let nodes = [
        schema.node("a").await,
        schema.node("b").await,
        schema.node("c").await,
    ];
    let mut started = Vec::new();
    for node in &nodes {
        let mut deployment = node.deploy(&TICKER, Beat::default()).expect("deploy");
        let (tx, rx) = tokio::sync::oneshot::channel();
        tokio::spawn(async move {
            let mut handles = Vec::new();
            while let Some(handle) = deployment.next().await {
                handles.push(handle);
            }
            let _ = tx.send(handles);
        });
        started.push(rx);
    }
    let store = std::sync::Arc::new(schema.store().await);
    until_fired(&store, 4).await;
    let [a, b, c] = nodes;
    a.shutdown(HANG).await.expect("shutdown");
    until_fired(&store, 8).await;
    b.shutdown(HANG).await.expect("shutdown");
    until_fired(&store, 11).await;
    c.shutdown(HANG).await.expect("shutdown");
    // Every node stopped: the count is final.
    let (ids, fired) = ticks(&store, "TICKER").await;
    assert_eq!(ids.len() as u64, fired, "one instance per tick: {ids:?}");
    // Each tick's instance ran on the one node that stored the tick — but one
    // stored as its node was stopping, which stays stored: for a restart, or for
    // another node to take over once its lease expired.
    let mut handed_out = BTreeSet::new();
    let mut by_node = Vec::new();
    for rx in started {
        let handles = rx.await.expect("deployment ended");
        by_node.push(handles.len());
        handed_out.extend(handles.iter().map(|h| h.id().0));
    }
    let stored_ids: BTreeSet<u64> = ids.iter().copied().collect();
    assert_eq!(
        handed_out.len(),
        by_node.iter().sum::<usize>(),
        "no tick ran on two nodes: {by_node:?}"
    );
    assert!(
        handed_out.is_subset(&stored_ids),
        "{handed_out:?} {stored_ids:?}"
    );
    let (left, taken_over) = {
        let s = store.clone();
        tokio::task::spawn_blocking(move || {
            let running = thresh::store::Store::list(&*s, Some("TICKER"), Some(Status::Running));
            let handovers = s.handovers().expect("read");
            (running.expect("read"), handovers)
        })
        .await
        .expect("thread")
    };
    let left: BTreeSet<u64> = left.iter().map(|r| r.id).collect();
    let taken_over: BTreeSet<u64> = taken_over.iter().map(|h| h.instance).collect();
    assert!(
        stored_ids
            .difference(&handed_out)
            .all(|id| left.contains(id) || taken_over.contains(id)),
        "every tick not run by its node is stored running or was taken over: \
         {handed_out:?} {left:?} {taken_over:?}"
    );
    let stored = {
        let s = store.clone();
        tokio::task::spawn_blocking(move || thresh::store::Store::deployments(&*s))
            .await
            .expect("thread")
            .expect("read")
    };
    assert_eq!(stored.len(), 1, "one shared schedule: {stored:?}");
}

#[derive(Clone, Debug, Default, PartialEq, ProcessData, Serialize, Deserialize)]
pub struct Ride {
    pub seat: u32,
}

process! {
    RIDE: Ride {
        start requested: message("ride", apply = |r, seat: &u32| r.seat = *seat);
        user  drive;
        end   arrived;
        requested -> drive -> arrived;
    }
}

/// The stored instances of `RIDE`: (status, seat) by id.
async fn rides(store: &std::sync::Arc<PostgresStore>) -> Vec<(Status, u64)> {
    let s = store.clone();
    tokio::task::spawn_blocking(move || {
        thresh::store::Store::list(&*s, Some("RIDE"), None)
            .expect("read")
            .iter()
            .map(|r| {
                let data = match &r.outcome {
                    Some(outcome) => {
                        serde_json::from_str::<serde_json::Value>(outcome).unwrap()["data"].clone()
                    }
                    None => {
                        serde_json::from_str::<serde_json::Value>(&r.state).unwrap()["data"].clone()
                    }
                };
                (r.status, data["seat"].as_u64().unwrap_or(0))
            })
            .collect()
    })
    .await
    .expect("thread")
}

/// The next instance a deployment started, once it waits at `drive`, with its seat.
async fn next_ride(
    started: &mut tokio::sync::mpsc::UnboundedReceiver<InstanceHandle<Ride>>,
) -> (InstanceHandle<Ride>, u32) {
    let handle = tokio::time::timeout(HANG, started.recv())
        .await
        .expect("started")
        .expect("a deployment");
    until_open(&handle, "drive").await;
    let seat = handle.data().await.expect("data").seat;
    (handle, seat)
}

/// No further instance started meanwhile.
async fn none_started(
    started: &mut tokio::sync::mpsc::UnboundedReceiver<InstanceHandle<Ride>>,
    why: &str,
) {
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(started.try_recv().is_err(), "{why}");
}

/// Zeebe's rule across nodes: a start message whose key belongs to an instance
/// running on another node waits, stored, published on any node; when that instance
/// ends, the oldest waiting one starts the next instance — one, on any node — and a
/// third waits for the second. The nodes poll only once a minute: the end of the
/// instance wakes them.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_start_message_for_a_key_running_on_another_node_waits_for_its_end() {
    let _serial = one_at_a_time().await;
    let schema = Schema::new("startkey");
    let minute = Duration::from_secs(60);
    let nodes = [
        schema.node_polling("a", minute).await,
        schema.node_polling("b", minute).await,
        schema.node_polling("c", minute).await,
    ];
    let (tx, mut started) = tokio::sync::mpsc::unbounded_channel();
    for node in &nodes {
        let mut deployment = node.deploy(&RIDE, Ride::default()).expect("deploy");
        let tx = tx.clone();
        tokio::spawn(async move {
            while let Some(handle) = deployment.next().await {
                let _ = tx.send(handle);
            }
        });
    }
    let store = std::sync::Arc::new(schema.store().await);
    assert_eq!(
        nodes[0]
            .publish_message("ride", "K", 1_u32)
            .await
            .expect("stored"),
        Published::Started,
        "a's start event takes it"
    );
    // Published on b at once (the first message is claimed by a, or consumed by its
    // instance's first checkpoint) and on c once the instance waits: they wait.
    assert_eq!(
        nodes[1]
            .publish_message("ride", "K", 2_u32)
            .await
            .expect("stored"),
        Published::Buffered
    );
    let (first, seat) = next_ride(&mut started).await;
    assert_eq!(seat, 1);
    assert_eq!(
        nodes[2]
            .publish_message("ride", "K", 3_u32)
            .await
            .expect("stored"),
        Published::Buffered
    );
    // Another key starts at once, beside it.
    nodes[1]
        .publish_message("ride", "L", 9_u32)
        .await
        .expect("stored");
    let (other, seat) = next_ride(&mut started).await;
    assert_eq!(seat, 9);
    none_started(&mut started, "no second instance for K while one runs").await;
    // a's instance ends: the oldest waiting message (seat 2) starts the next one.
    first
        .complete("drive", |_: &mut Ride| {})
        .await
        .expect("completed");
    let (second, seat) = next_ride(&mut started).await;
    assert_eq!(seat, 2, "the oldest first");
    none_started(&mut started, "the third waits for the second").await;
    second
        .complete("drive", |_: &mut Ride| {})
        .await
        .expect("completed");
    let (third, seat) = next_ride(&mut started).await;
    assert_eq!(seat, 3);
    for h in [&other, &third] {
        h.complete("drive", |_: &mut Ride| {})
            .await
            .expect("completed");
        tokio::time::timeout(HANG, h.outcome())
            .await
            .expect("ended");
    }
    none_started(&mut started, "one instance per message").await;
    let mut seats: Vec<(Status, u64)> = rides(&store).await;
    seats.sort_by_key(|(_, seat)| *seat);
    assert_eq!(
        seats,
        [1, 2, 3, 9].map(|seat| (Status::Completed, seat)).to_vec()
    );
    for node in nodes {
        node.shutdown(HANG).await.expect("shutdown");
    }
}

#[derive(Clone, Debug, Default, PartialEq, ProcessData, Serialize, Deserialize)]
pub struct Pair {
    pub id: String,
    pub arms: u32,
}

process! {
    PAIRED: Pair {
        event_based first: instantiate(parallel);
        catch left: message("left", key = |p| p.id.clone(), apply = |p, id: &String| { p.id = id.clone(); p.arms += 1; });
        catch right: message("right", key = |p| p.id.clone(), apply = |p, id: &String| { p.id = id.clone(); p.arms += 1; });
        parallel both;
        end   done;
        first -> left, right;
        left, right -> both -> done;
    }
}

/// A parallel instantiating gate deployed on two nodes: a repeat of the arm its
/// instance took, published on the other node while the instance runs, waits; when
/// the instance ends it is stale — it leaves the store with the end and starts no
/// instance on any node.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_stale_arm_repeat_starts_no_instance_on_another_node() {
    let _serial = one_at_a_time().await;
    let schema = Schema::new("stale");
    let nodes = [schema.node("a").await, schema.node("b").await];
    let (tx, mut started) = tokio::sync::mpsc::unbounded_channel();
    for node in &nodes {
        let mut deployment = node.deploy(&PAIRED, Pair::default()).expect("deploy");
        let tx = tx.clone();
        tokio::spawn(async move {
            while let Some(handle) = deployment.next().await {
                let _ = tx.send(handle);
            }
        });
    }
    let [a, b] = nodes;
    assert_eq!(
        a.publish_message("left", "P-1", "P-1".to_string())
            .await
            .expect("stored"),
        Published::Started
    );
    let first = tokio::time::timeout(HANG, started.recv())
        .await
        .expect("started")
        .expect("a deployment");
    assert_eq!(
        b.publish_message("left", "P-1", "P-1".to_string())
            .await
            .expect("stored"),
        Published::Buffered,
        "the repeat waits while the instance runs"
    );
    b.publish_message("right", "P-1", "P-1".to_string())
        .await
        .expect("stored");
    let pair = tokio::time::timeout(HANG, first.outcome())
        .await
        .expect("ended")
        .completed()
        .expect("completed");
    assert_eq!(pair.arms, 2, "each arm once");
    // Give a wrong start time to happen (the end woke both nodes).
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert!(
        started.try_recv().is_err(),
        "the stale repeat started nothing"
    );
    let store = schema.store().await;
    let left = tokio::task::spawn_blocking(move || thresh::store::Store::messages(&store))
        .await
        .expect("thread")
        .expect("read");
    assert!(left.is_empty(), "the repeat left the store: {left:?}");
    for node in [a, b] {
        node.shutdown(HANG).await.expect("shutdown");
    }
}
