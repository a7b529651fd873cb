//! `PostgresStore` for several engine nodes: fencing by lease, disjoint claims and
//! ids, one timer tick stored once, the end that notifies the other nodes.

use super::*;

/// A store on `schema` as node `name`, its leases lasting `lease_ms`.
fn node(schema: &TestSchema, name: &str, lease_ms: u64) -> PostgresStore {
    PostgresStore::connect_node(
        &url(),
        &schema.0,
        name,
        std::time::Duration::from_millis(lease_ms),
    )
    .unwrap()
}

#[test]
fn a_fenced_writer_cannot_overwrite_the_new_owners_checkpoint() {
    let schema = TestSchema::new();
    let node = |name: &str, lease_ms: u64| node(&schema, name, lease_ms);
    // Node a's lease is over as soon as it is given (0 ms); b's lasts.
    let a = node("a", 0);
    let b = node("b", 60_000);
    let record = rec(1, 1, r#"{"by":"a","step":1}"#);
    let process = (record.process.clone(), record.fingerprint);
    a.apply(&[Write::Put(record), Write::Buffer(msg(7, i64::MAX))])
        .unwrap();
    assert_eq!(a.owner(1).unwrap(), Some((Some("a".into()), 1)));
    // b takes the expired instance: fence 2, one handover recorded. Not a process b
    // cannot run.
    assert!(b
        .take_over(&[("other".into(), process.1)], &[], 10)
        .unwrap()
        .is_empty());
    let taken = b
        .take_over(std::slice::from_ref(&process), &[], 10)
        .unwrap();
    assert_eq!(taken.len(), 1);
    assert_eq!((taken[0].record.seq, taken[0].fence), (1, 2));
    assert_eq!(taken[0].from.as_deref(), Some("a"));
    // Nothing more to take: b's lease is live.
    assert!(a
        .take_over(std::slice::from_ref(&process), &[], 10)
        .unwrap()
        .is_empty());
    // a, not knowing, checkpoints with a message it applied: refused as fenced, and
    // nothing of the batch is stored (the message stays for the new owner).
    let err = a
        .apply(&[
            Write::Put(rec(1, 2, r#"{"by":"a","step":2}"#)),
            Write::Consume { message: 7 },
        ])
        .unwrap_err();
    assert!(
        matches!(&err, StoreError::Fenced { id: 1, owner: Some(o), fence: 2, held: 1 } if o == "b"),
        "{err:?}"
    );
    eprintln!("{err}");
    assert_eq!(a.messages().unwrap().len(), 1);
    // The new owner checkpoints at the same seq a tried: stored.
    b.apply(&[
        Write::Put(rec(1, 2, r#"{"by":"b","step":2}"#)),
        Write::Consume { message: 7 },
    ])
    .unwrap();
    // a's later checkpoint and its end are refused too.
    for write in [
        Write::Put(rec(1, 9, r#"{"by":"a","step":9}"#)),
        Write::End {
            id: 1,
            status: Status::Completed,
            outcome: Some("{}".into()),
            at_ms: 5,
        },
    ] {
        let err = a.apply(&[write]).unwrap_err();
        assert!(matches!(err, StoreError::Fenced { id: 1, .. }), "{err:?}");
    }
    let stored = b.instance(1).unwrap().unwrap();
    assert_eq!(
        (stored.seq, stored.state.as_str()),
        (2, r#"{"by":"b","step":2}"#)
    );
    assert_eq!(stored.status, Status::Running);
    // Renewal: b keeps it, a has nothing.
    assert_eq!(b.renew().unwrap(), [1]);
    assert!(a.renew().unwrap().is_empty());
    assert_eq!(
        b.handovers().unwrap(),
        [Handover {
            instance: 1,
            fence: 2,
            from: Some("a".into()),
            to: "b".into()
        }]
    );
    // b ends it (fenced by its own fence: accepted).
    b.apply(&[Write::End {
        id: 1,
        status: Status::Completed,
        outcome: Some("{}".into()),
        at_ms: 6,
    }])
    .unwrap();
    assert_eq!(b.instance(1).unwrap().unwrap().status, Status::Completed);
}

#[test]
fn nodes_take_disjoint_batches_and_reserve_disjoint_ids() {
    let schema = TestSchema::new();
    let dead = PostgresStore::connect_node(&url(), &schema.0, "dead", Default::default()).unwrap();
    let records: Vec<Write> = (0..40).map(|i| Write::Put(rec(i * 2, 1, "{}"))).collect();
    dead.apply(&records).unwrap();
    let prints: Vec<(String, u64)> = (0..40)
        .map(|i| ("even".to_string(), 0xfeed_0000_0000_0000 | (i * 2)))
        .collect();
    let survivors: Vec<PostgresStore> = (0..3)
        .map(|n| {
            PostgresStore::connect_node(
                &url(),
                &schema.0,
                &format!("s{n}"),
                std::time::Duration::from_secs(60),
            )
            .unwrap()
        })
        .collect();
    let mut all = Vec::new();
    let mut ids = Vec::new();
    std::thread::scope(|scope| {
        let runs: Vec<_> = survivors
            .iter()
            .map(|s| {
                let prints = &prints;
                scope.spawn(move || {
                    let mut mine = Vec::new();
                    loop {
                        let batch = s.take_over(prints, &[], 7).unwrap();
                        if batch.is_empty() {
                            break;
                        }
                        mine.extend(batch.into_iter().map(|t| t.record.id));
                    }
                    (mine, s.reserve_ids(1 << 20).unwrap())
                })
            })
            .collect();
        for run in runs {
            let (mine, reserved) = run.join().unwrap();
            all.extend(mine);
            ids.push(reserved);
        }
    });
    all.sort_unstable();
    assert_eq!(
        all,
        (0..40).map(|i| i * 2).collect::<Vec<_>>(),
        "each taken once"
    );
    ids.sort_unstable();
    for pair in ids.windows(2) {
        assert!(pair[1].0 >= pair[0].0 + (1 << 20), "{ids:?}");
        assert!(pair[1].1 >= pair[0].1 + (1 << 20), "{ids:?}");
    }
    assert_eq!(survivors[0].handovers().unwrap().len(), 40);
}

/// Three nodes tick one stored schedule at once, each from the schedule it read:
/// every tick is stored once, by one of them (with its instance), and the others
/// are refused as `TickTaken` with nothing of their batch stored.
#[test]
fn nodes_ticking_one_schedule_at_once_store_each_tick_once() {
    let schema = TestSchema::new();
    let nodes: Vec<PostgresStore> = (0..3)
        .map(|n| {
            let lease = std::time::Duration::from_secs(60);
            PostgresStore::connect_node(&url(), &schema.0, &format!("n{n}"), lease).unwrap()
        })
        .collect();
    let deployment = DeploymentRecord {
        id: 1 << 62,
        process: "ticker".into(),
        fingerprint: 7,
        data: "null".into(),
        timer_anchors: "{}".into(),
    };
    let ticks: u32 = 30;
    let won: Vec<Vec<u64>> = std::thread::scope(|scope| {
        let runs: Vec<_> = nodes
            .iter()
            .enumerate()
            .map(|(n, node)| {
                let deployment = deployment.clone();
                scope.spawn(move || {
                    let mut mine = Vec::new();
                    for attempt in 0..ticks * 3 {
                        let stored = stored_tick(&node.deployments().unwrap(), deployment.id, "t");
                        let fired = stored.map_or(0, |t| t.fired);
                        if fired >= ticks {
                            break;
                        }
                        let id = (n as u64) << 32 | u64::from(attempt);
                        let batch = [
                            Write::Tick {
                                deployment: deployment.clone(),
                                start: "t".into(),
                                from: stored,
                                to: TimerTick {
                                    fired: fired + 1,
                                    due_ms: None,
                                },
                            },
                            Write::Put(rec(id, 1, "{}")),
                        ];
                        match node.apply(&batch) {
                            Ok(()) => mine.push(id),
                            Err(StoreError::TickTaken { .. }) => {}
                            Err(e) => panic!("{e}"),
                        }
                    }
                    mine
                })
            })
            .collect();
        runs.into_iter().map(|r| r.join().unwrap()).collect()
    });
    let stored = stored_tick(&nodes[0].deployments().unwrap(), deployment.id, "t");
    assert_eq!(stored.map(|t| t.fired), Some(ticks));
    let instances = nodes[0].list(None, None).unwrap();
    assert_eq!(
        instances.len(),
        ticks as usize,
        "one instance per tick: {won:?}"
    );
    assert_eq!(won.iter().map(Vec::len).sum::<usize>(), ticks as usize);
}

/// A node's end of an instance with a correlation key for which an unclaimed
/// message is stored (a start message may wait for the key) wakes the nodes, alone
/// or in a run of ends; other ends wake nobody.
#[test]
fn an_end_with_a_waiting_key_notifies_the_nodes() {
    let schema = TestSchema::new();
    let lease = std::time::Duration::from_secs(60);
    let node = PostgresStore::connect_node(&url(), &schema.0, "n", lease).unwrap();
    let mut listener = node.listen();
    assert!(
        listener
            .wait(std::time::Duration::from_millis(10))
            .unwrap()
            .reconnected
    );
    let end = |id| Write::End {
        id,
        status: Status::Completed,
        outcome: None,
        at_ms: 9,
    };
    let keyless = |id| InstanceRecord {
        key: None,
        ..rec(id, 1, "{}")
    };
    let mut writes: Vec<Write> = (1..=3).map(|id| Write::Put(keyless(id))).collect();
    // Keys k4 .. k8; messages wait for k6 and k8.
    writes.extend((4..=8).map(|id| Write::Put(rec(id, 1, "{}"))));
    writes.extend([6, 8].map(|id| Write::Buffer(msg(id, i64::MAX))));
    node.apply(&writes).unwrap();
    let heard = |listener: &mut crate::store::postgres::Listener| {
        let heard = listener
            .wait(std::time::Duration::from_millis(300))
            .unwrap();
        heard.messages
    };
    node.apply(&[end(1), end(2)]).unwrap();
    node.apply(&[end(4), end(5)]).unwrap();
    node.apply(&[end(3)]).unwrap();
    assert!(!heard(&mut listener), "no message waits for these keys");
    node.apply(&[end(7), end(6)]).unwrap();
    assert!(
        heard(&mut listener),
        "a run of ends, one whose key a message waits for"
    );
    node.apply(&[end(8)]).unwrap();
    assert!(
        heard(&mut listener),
        "a lone end whose key a message waits for"
    );
}

/// A renewal renews every lease of its node, more than one batch of them, and
/// never waits for a row another transaction holds: that one is skipped (counted
/// as owned) while the rest are renewed.
#[test]
fn a_renewal_renews_every_lease_in_batches_and_skips_a_locked_row() {
    let schema = TestSchema::new();
    let node = |name: &str, lease_ms: u64| node(&schema, name, lease_ms);
    // Stored by a node whose leases are short; renewed by the same node with long
    // ones (a second connection as the same node).
    const MANY: u64 = 1_201;
    let short = node("a", 1_000);
    let records: Vec<Write> = (1..=MANY).map(|id| Write::Put(rec(id, 1, "{}"))).collect();
    short.apply(&records).unwrap();
    drop(short);
    let long = node("a", 600_000);
    let mut db = raw();
    let set = format!("SET search_path TO {}", schema.0);
    db.batch_execute(&set).unwrap();
    // Another transaction holds instance 7's row.
    let mut holder = raw();
    holder.batch_execute(&set).unwrap();
    let mut held = holder.transaction().unwrap();
    held.execute("SELECT 1 FROM instances WHERE id = 7 FOR UPDATE", &[])
        .unwrap();
    let kept = long.renew().unwrap();
    assert_eq!(kept, (1..=MANY).collect::<Vec<_>>());
    let renewed = |db: &mut ::postgres::Client| -> Vec<i64> {
        db.query(
            "SELECT id FROM instances WHERE lease_until > now() + interval '60 seconds'
             ORDER BY id",
            &[],
        )
        .unwrap()
        .iter()
        .map(|r| r.get(0))
        .collect()
    };
    let expected: Vec<i64> = (1..=MANY as i64).filter(|&id| id != 7).collect();
    assert_eq!(renewed(&mut db), expected, "all but the locked row renewed");
    held.rollback().unwrap();
    long.renew().unwrap();
    assert_eq!(renewed(&mut db).len() as u64, MANY, "renewed once let go");
}
