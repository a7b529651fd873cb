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
            .filter_map(|d| thresh::store::parse_anchors(&d.timer_anchors)?.get("tick").copied())
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
    let mut handed_out = 0;
    let mut by_node = Vec::new();
    for rx in started {
        let handles = rx.await.expect("deployment ended");
        handed_out += handles.len();
        by_node.push(handles.len());
    }
    assert_eq!(handed_out as u64, fired, "each tick started on one node: {by_node:?}");
    let stored = {
        let s = store.clone();
        tokio::task::spawn_blocking(move || thresh::store::Store::deployments(&*s))
            .await
            .expect("thread")
            .expect("read")
    };
    assert_eq!(stored.len(), 1, "one shared schedule: {stored:?}");
}
