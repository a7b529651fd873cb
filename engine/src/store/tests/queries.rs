//! Instance queries on every store: the SQL stores answer as the reference
//! semantics (`InstanceQuery::select` over every record) does, pages included.

use super::*;

fn instance(id: u64) -> InstanceRecord {
    let mut r = rec(id, 1, r#"{"data":1}"#);
    r.process = if id % 3 == 0 { "order" } else { "refund" }.into();
    r.business_key = (id % 4 != 0).then(|| format!("b{}", id % 5));
    // Some share a start time: the order goes on by id.
    r.started_ms = 10_000 + (id as i64 % 7) * 100;
    r.waits = match id % 4 {
        0 => vec![],
        1 => vec!["approve".into()],
        2 => vec!["approve".into(), "pay".into()],
        _ => vec!["pay".into()],
    };
    r.incidents = u32::from(id % 6 == 0);
    r
}

fn queries() -> Vec<InstanceQuery> {
    let base = InstanceQuery::default();
    let of = |p: &str| InstanceQuery {
        process: Some(p.into()),
        ..base.clone()
    };
    let mut all = vec![
        base.clone(),
        of("order"),
        InstanceQuery {
            statuses: vec![Status::Running],
            ..of("refund")
        },
        InstanceQuery {
            statuses: vec![Status::Completed, Status::Failed],
            ..base.clone()
        },
        InstanceQuery {
            waiting_at: Some("approve".into()),
            sort: SortBy::Started,
            ..of("refund")
        },
        InstanceQuery {
            waiting_at: Some("pay".into()),
            ..base.clone()
        },
        InstanceQuery {
            business_key: Some("b2".into()),
            ..base.clone()
        },
        InstanceQuery {
            key: Some("k7".into()),
            ..base.clone()
        },
        InstanceQuery {
            incident: Some(true),
            ..base.clone()
        },
        InstanceQuery {
            incident: Some(false),
            statuses: vec![Status::Running],
            ..base.clone()
        },
        InstanceQuery {
            started: (Some(10_200), Some(10_500)),
            sort: SortBy::Started,
            descending: true,
            ..base.clone()
        },
        InstanceQuery {
            ended: (Some(20_005), None),
            sort: SortBy::Ended,
            ..base.clone()
        },
        InstanceQuery {
            sort: SortBy::Ended,
            descending: true,
            ..base.clone()
        },
        InstanceQuery {
            offset: 3,
            limit: Some(4),
            sort: SortBy::Started,
            ..base.clone()
        },
    ];
    // Every query again, paged by cursor from a row in the middle.
    let paged: Vec<InstanceQuery> = all
        .iter()
        .map(|q| InstanceQuery {
            after: Some(After {
                value: match q.sort {
                    SortBy::Id => 11,
                    SortBy::Started => 10_300,
                    SortBy::Ended => 20_010,
                },
                id: 11,
            }),
            limit: Some(5),
            ..q.clone()
        })
        .collect();
    all.extend(paged);
    all
}

pub(super) fn queries_match_the_reference(s: &dyn Store) {
    let mut writes: Vec<Write> = (1..=30).map(|id| Write::Put(instance(id))).collect();
    // Some end: completed, failed; their waits and incidents go with the end.
    for id in (1..=30).filter(|id| id % 5 == 0 || id % 6 == 0) {
        writes.push(Write::End {
            id,
            status: if id % 2 == 0 {
                Status::Completed
            } else {
                Status::Failed
            },
            outcome: Some("{}".into()),
            at_ms: 20_000 + id as i64,
        });
    }
    s.apply(&writes).unwrap();
    // A later checkpoint replaces the waits.
    let mut moved = instance(7);
    moved.seq = 2;
    moved.waits = vec!["ship".into()];
    s.apply(&[Write::Put(moved.clone())]).unwrap();
    assert_eq!(s.instance(7).unwrap(), Some(moved));
    let ended = s.instance(30).unwrap().unwrap();
    assert_eq!((ended.waits.len(), ended.incidents), (0, 0));
    assert_eq!(ended.ended_ms(), Some(20_030));

    let every = s.list(None, None).unwrap();
    for q in queries() {
        let expected = q.select(every.clone());
        let got = s.query(&q).unwrap();
        let ids = |rs: &[InstanceRecord]| rs.iter().map(|r| r.id).collect::<Vec<_>>();
        assert_eq!(ids(&got), ids(&expected), "{q:?}");
        assert_eq!(got, expected, "{q:?}");
        let all = InstanceQuery {
            after: None,
            offset: 0,
            limit: None,
            ..q.clone()
        };
        assert_eq!(
            s.count(&q).unwrap(),
            all.select(every.clone()).len() as u64,
            "{q:?}"
        );
    }
    // The reference itself, on a few hand-checked answers.
    let waiting = |node: &str| InstanceQuery {
        waiting_at: Some(node.into()),
        ..InstanceQuery::default()
    };
    let ids = |q: InstanceQuery| s.query(&q).unwrap().iter().map(|r| r.id).collect::<Vec<_>>();
    assert_eq!(ids(waiting("ship")), [7]);
    assert_eq!(
        ids(InstanceQuery {
            business_key: Some("b2".into()),
            ..InstanceQuery::default()
        }),
        [2, 7, 17, 22, 27]
    );
}
