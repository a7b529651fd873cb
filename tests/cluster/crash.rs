//! Three node processes on one store, SIGKILLed at random moments while they run
//! orders: every order ends once, with its amount, whichever node ends it. The nodes
//! are this test binary run again (`crash::cluster_node_child`, an ignored test the
//! parent runs by name with its environment set).

use super::*;

#[derive(Clone, Debug, Default, PartialEq, ProcessData, Serialize, Deserialize)]
pub struct Deal {
    pub id: String,
    pub checked: u32,
    pub paid: u64,
    pub shipped: u32,
}

process! {
    DEAL: Deal {
        start    s;
        task     check = |d| async move { d.checked += 1; Ok(()) };
        parallel fork;
        receive  pay: message("pay", key = |d| d.id.clone(), apply = |d, amount: &u64| d.paid += *amount);
        catch    cool: timer(Duration::from_millis(150));
        parallel join;
        task     ship = |d| async move { d.shipped += 1; Ok(()) };
        end      e;
        s -> check -> fork -> pay, cool;
        pay, cool -> join -> ship -> e;
    }
}

/// The amount deal `key` (`<node>-<n>`) is paid: n + 1.
fn amount(key: &str) -> u64 {
    key.rsplit('-')
        .next()
        .and_then(|n| n.parse::<u64>().ok())
        .expect("a deal key")
        + 1
}

/// Long enough that a node alive on a loaded machine renews in time (a live node
/// losing a lease would fail the test's no-handover-from-a-live-node check; 1.5 s
/// was seen to fail once in 20 runs with six builds beside it on two cores).
const CRASH_LEASE: Duration = Duration::from_secs(3);

/// One node process of the crash test: resume (take over what dead nodes left),
/// start `THRESH_NODE_STARTS` deals one after another printing each acknowledged
/// one, then go on running (finishing, taking over) until killed.
#[test]
#[ignore = "run by the multi-node crash test as its child processes"]
fn cluster_node_child() {
    let (Ok(schema), Ok(node), Ok(starts)) = (
        std::env::var("THRESH_NODE_SCHEMA"),
        std::env::var("THRESH_NODE_NAME"),
        std::env::var("THRESH_NODE_STARTS"),
    ) else {
        return;
    };
    let starts: u64 = starts.parse().expect("a number");
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
            node_id: Some(node.clone()),
            lease: CRASH_LEASE,
            poll: Duration::from_millis(50),
            ..NodeConfig::default()
        };
        let engine = DurableEngine::connect_with(&url(), config)
            .await
            .expect("connect");
        engine.register(&DEAL).expect("register");
        engine.message_type::<u64>("pay");
        engine.resume().await.expect("resume");
        for n in 0..starts {
            let key = format!("{node}-{n}");
            let deal = Deal {
                id: key.clone(),
                ..Deal::default()
            };
            let handle = engine.start(&DEAL, deal).await.expect("stored");
            println!("started {key} {}", handle.id().0);
            tokio::time::sleep(Duration::from_millis(15)).await;
        }
        println!("idle");
        std::future::pending::<()>().await;
    });
}

/// A tiny deterministic generator (the seed is printed: a failure can be replayed).
struct Lcg(u64);

impl Lcg {
    fn below(&mut self, n: u64) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        (self.0 >> 33) % n
    }
}

struct NodeProcess {
    name: String,
    child: std::process::Child,
}

impl Drop for NodeProcess {
    fn drop(&mut self) {
        // A failing test leaves no node running (its stdin closes too).
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn spawn_node(
    schema: &str,
    name: String,
    starts: u64,
    lines: tokio::sync::mpsc::UnboundedSender<(String, String)>,
) -> NodeProcess {
    use std::io::{BufRead, BufReader};
    let mut child = std::process::Command::new(std::env::current_exe().expect("exe"))
        .args([
            "--ignored",
            "--exact",
            "crash::cluster_node_child",
            "--nocapture",
            "--test-threads=1",
        ])
        .env("THRESH_NODE_SCHEMA", schema)
        .env("THRESH_NODE_NAME", &name)
        .env("THRESH_NODE_STARTS", starts.to_string())
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::fs::File::create(node_log(schema, &name)).expect("a log file"))
        .spawn()
        .expect("child");
    let stdout = child.stdout.take().expect("stdout");
    let node = name.clone();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            if lines.send((node.clone(), line)).is_err() {
                break;
            }
        }
    });
    NodeProcess { name, child }
}

/// Where a node process's stderr goes (a failing run prints where).
fn node_log(schema: &str, name: &str) -> std::path::PathBuf {
    std::env::temp_dir().join(format!("{schema}-{name}.log"))
}

/// The database's clock now, in milliseconds since the epoch.
fn db_now_ms() -> i64 {
    let rows = sql("SELECT (extract(epoch FROM now()) * 1000)::bigint".into());
    rows[0].get(0)
}

/// Three engine processes on one store run deals (starts, a payment message
/// published by a fourth node, a timer, a parallel join); the test SIGKILLs one of
/// them at random moments, several times, and starts a new one in its place. After
/// all: every acknowledged start ended exactly once, every acknowledged payment was
/// applied exactly once, every instance moved only from a node already killed, with
/// fences 2, 3, … in order, and nothing is left running.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn three_nodes_survive_sigkill_at_random_moments() {
    let _serial = one_at_a_time().await;
    const KILLS: usize = 10;
    const STARTS: u64 = 12;
    let schema = Schema::new("crash");
    let seed = std::env::var("THRESH_CRASH_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(7, |d| d.as_nanos() as u64)
        });
    eprintln!("crash seed {seed} (THRESH_CRASH_SEED replays it)");
    let mut rng = Lcg(seed);
    // The publisher: a node with no process registered (it takes nothing over).
    let publisher = schema.node("publisher").await;
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let mut nodes: Vec<NodeProcess> = (0..3)
        .map(|slot| spawn_node(&schema.0, format!("n{slot}.0"), STARTS, tx.clone()))
        .collect();
    let mut started: BTreeMap<String, (String, u64)> = BTreeMap::new();
    let mut paid: BTreeSet<String> = BTreeSet::new();
    // Node name → the database's clock just before it was killed.
    let mut killed: BTreeMap<String, i64> = BTreeMap::new();
    let mut idle: BTreeSet<String> = BTreeSet::new();
    let mut lives = [1u32; 3];
    let mut acks = 0u64;
    let mut next_kill = 3 + rng.below(10);
    let pay = |key: String| {
        let publisher = publisher.clone();
        async move {
            publisher
                .publish_message("pay", &key, amount(&key))
                .await
                .expect("stored");
            key
        }
    };
    let deadline = tokio::time::Instant::now() + Duration::from_secs(90);
    // Run while killing; then until every node of the last generation is idle.
    while killed.len() < KILLS || nodes.iter().any(|n| !idle.contains(&n.name)) {
        let Ok(got) = tokio::time::timeout_at(deadline, rx.recv()).await else {
            let waiting = sql(
                "SELECT application_name || ' ' || state || ' ' || coalesce(wait_event, '-') \
                 || ' ' || left(query, 80) FROM pg_stat_activity WHERE state <> 'idle'"
                    .into(),
            );
            let waiting: Vec<String> = waiting.iter().map(|r| r.get(0)).collect();
            panic!(
                "the nodes made no progress: {} acknowledged, kills {killed:?}, idle {idle:?}, \
                 nodes {:?}; the database is busy with {waiting:#?}",
                started.len(),
                nodes.iter().map(|n| &n.name).collect::<Vec<_>>()
            );
        };
        let (node, line) = got.expect("a line");
        if line == "idle" {
            idle.insert(node);
        } else if let Some(rest) = line.strip_prefix("started ") {
            let (key, id) = rest.split_once(' ').expect("key and id");
            started.insert(key.to_string(), (node, id.parse().expect("an id")));
            paid.insert(pay(key.to_string()).await);
            acks += 1;
        }
        // Kill after a random number of acknowledgments — or now, if every node is
        // done starting (it still finishes and takes over: a kill point too).
        let all_idle = nodes.iter().all(|n| idle.contains(&n.name));
        if killed.len() < KILLS && (acks >= next_kill || all_idle) {
            let slot = rng.below(3) as usize;
            let before = db_now_ms();
            let victim = &mut nodes[slot];
            victim.child.kill().expect("SIGKILL");
            let _ = victim.child.wait();
            killed.insert(victim.name.clone(), before);
            let name = format!("n{slot}.{}", lives[slot]);
            lives[slot] += 1;
            nodes[slot] = spawn_node(&schema.0, name, STARTS, tx.clone());
            next_kill = acks + 3 + rng.below(12);
        }
    }
    // Deals stored but not acknowledged (a kill between the store and the print)
    // get their payment too, as a client that retries would send it.
    let store = std::sync::Arc::new(schema.store().await);
    let list = |status: Option<Status>| {
        let store = store.clone();
        async move {
            tokio::task::spawn_blocking(move || {
                thresh::store::Store::list(&*store, Some("DEAL"), status).expect("read")
            })
            .await
            .expect("thread")
        }
    };
    tokio::time::timeout_at(deadline, async {
        loop {
            let running = list(Some(Status::Running)).await;
            if running.is_empty() {
                return;
            }
            for record in running {
                let key = publisher
                    .watch(&DEAL, thresh::InstanceId(record.id))
                    .data()
                    .await
                    .expect("data")
                    .id;
                if !paid.contains(&key) {
                    paid.insert(pay(key).await);
                }
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    })
    .await
    .expect("nothing left running");

    // Every deal ended exactly once, completed, each effect applied once.
    let all = list(None).await;
    let mut by_key: BTreeMap<String, u32> = BTreeMap::new();
    for record in &all {
        assert_eq!(record.status, Status::Completed, "{record:?}");
        let outcome: serde_json::Value =
            serde_json::from_str(record.outcome.as_deref().expect("an outcome")).expect("json");
        let data = &outcome["data"];
        let key = data["id"].as_str().expect("a key").to_string();
        assert_eq!(data["paid"], amount(&key), "deal {key}: paid once");
        assert_eq!(data["checked"], 1, "deal {key}");
        assert_eq!(data["shipped"], 1, "deal {key}");
        *by_key.entry(key).or_default() += 1;
    }
    for (key, (_, id)) in &started {
        assert_eq!(by_key.get(key), Some(&1), "acknowledged deal {key} ({id})");
    }
    assert!(by_key.values().all(|n| *n == 1), "one instance per deal");
    // Ownership moved only from killed nodes, after their kill, fence after fence.
    let handovers = tokio::task::spawn_blocking({
        let store = store.clone();
        move || store.handovers().expect("read")
    })
    .await
    .expect("thread");
    let at = sql(format!(
        "SELECT instance, fence, (extract(epoch FROM at) * 1000)::bigint FROM {}.handovers",
        schema.0
    ));
    let at: BTreeMap<(i64, i64), i64> = at
        .iter()
        .map(|r| ((r.get(0), r.get(1)), r.get(2)))
        .collect();
    let starter: BTreeMap<u64, &str> = started
        .values()
        .map(|(node, id)| (*id, node.as_str()))
        .collect();
    let mut owner: BTreeMap<u64, (String, i64)> = BTreeMap::new();
    for h in &handovers {
        let from = h.from.clone().expect("every deal had an owner");
        let dead_since = killed
            .get(&from)
            .unwrap_or_else(|| panic!("instance {} moved from the live node {from}", h.instance));
        let when = at[&(h.instance as i64, h.fence)];
        assert!(
            when >= *dead_since,
            "instance {} moved from {from} {} ms before it was killed (a live node lost a \
             lease: starved for longer than the lease?)",
            h.instance,
            dead_since - when,
        );
        let (previous, fence) = owner.get(&h.instance).cloned().unwrap_or_else(|| {
            (
                starter
                    .get(&h.instance)
                    .map_or_else(|| from.clone(), |s| s.to_string()),
                1,
            )
        });
        assert_eq!(h.fence, fence + 1, "fences in order: {h:?}");
        assert_eq!(from, previous, "moved from its owner: {h:?}");
        owner.insert(h.instance, (h.to.clone(), h.fence));
    }
    eprintln!(
        "{} deals ({} acknowledged), {} kills, {} handovers",
        all.len(),
        started.len(),
        killed.len(),
        handovers.len()
    );
    assert!(!handovers.is_empty(), "some instances moved");
    drop(nodes);
    publisher.shutdown(HANG).await.expect("shutdown");
}
