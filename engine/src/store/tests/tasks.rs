//! The task list's rows, for the conformance suite (`conformance.rs` runs it
//! against every store).

use super::*;

/// A task row of instance `instance`.
fn task_row(
    instance: u64,
    number: u32,
    priority: i32,
    due_ms: Option<i64>,
    created_ms: i64,
) -> TaskRecord {
    TaskRecord {
        instance,
        number,
        process: "odd".into(),
        element: format!("u{number}"),
        name: String::new(),
        iteration: None,
        assignee: None,
        groups: Vec::new(),
        due_ms,
        priority,
        claimed_by: None,
        created_ms,
        key: None,
        business_key: None,
    }
}

/// The task list's rows: written with checkpoints, listed by every filter in each
/// order, claimed, kept with their claims when the instance's set changes, gone
/// with the instance's end.
pub(super) fn tasks_are_listed_claimed_and_ended(s: &dyn Store) {
    use crate::tasklist::{TaskOrder, TaskQuery};
    let mut a = task_row(1, 1, 50, Some(100), 10);
    a.assignee = Some("maria".into());
    a.groups = vec!["finance".into(), "audit".into()];
    a.iteration = Some(3);
    a.name = "Approve ✓".into();
    let b = task_row(1, 2, 80, None, 20);
    let mut c = task_row(2, 1, 50, Some(50), 5);
    c.groups = vec!["audit".into()];
    c.key = Some("K".into());
    c.business_key = Some("ORDER-7".into());
    c.process = "even".into();
    s.apply(&[
        Write::Put(rec(1, 0, "{}")),
        Write::Tasks {
            instance: 1,
            open: vec![a.clone(), b.clone()],
        },
        Write::Put(rec(2, 0, "{}")),
        Write::Tasks {
            instance: 2,
            open: vec![c.clone()],
        },
    ])
    .unwrap();
    let ids = |q: TaskQuery| {
        s.tasks(&q)
            .unwrap()
            .into_iter()
            .map(|t| (t.instance, t.number))
            .collect::<Vec<_>>()
    };
    assert_eq!(
        s.tasks(&TaskQuery::new()).unwrap(),
        [b.clone(), c.clone(), a.clone()]
    );
    assert_eq!(
        ids(TaskQuery::new().order(TaskOrder::Due)),
        [(2, 1), (1, 1), (1, 2)]
    );
    assert_eq!(
        ids(TaskQuery::new().order(TaskOrder::Created)),
        [(2, 1), (1, 1), (1, 2)]
    );
    assert_eq!(
        ids(TaskQuery::new().candidate_groups(["finance"])),
        [(1, 1)]
    );
    assert_eq!(
        ids(TaskQuery::new().candidate_groups(["audit", "x"])),
        [(2, 1), (1, 1)]
    );
    assert_eq!(ids(TaskQuery::new().correlation_key("K")), [(2, 1)]);
    assert_eq!(ids(TaskQuery::new().key("ORDER-7")), [(2, 1)]);
    assert_eq!(ids(TaskQuery::new().key("K")), []);
    assert_eq!(
        ids(TaskQuery::new().instance(crate::InstanceId(1))),
        [(1, 2), (1, 1)]
    );
    assert_eq!(
        ids(TaskQuery::new()
            .due_before(std::time::UNIX_EPOCH + std::time::Duration::from_millis(60))),
        [(2, 1)]
    );
    assert_eq!(ids(TaskQuery::new().unassigned()), [(1, 2), (2, 1)]);
    assert_eq!(ids(TaskQuery::new().assignee("maria")), [(1, 1)]);
    assert_eq!(ids(TaskQuery::new().process("odd").element("u2")), [(1, 2)]);
    assert_eq!(ids(TaskQuery::new().page(1, 1)), [(2, 1)]);
    assert_eq!(ids(TaskQuery::new().page(2, 5)), [(1, 1)]);

    // Claims: one statement each; another user's is refused (the holder stays).
    let claimed = s.claim_task(1, 1, Some("ann")).unwrap().unwrap();
    assert_eq!(claimed.claimed_by.as_deref(), Some("ann"));
    let refused = s.claim_task(1, 1, Some("bob")).unwrap().unwrap();
    assert_eq!(refused.claimed_by.as_deref(), Some("ann"));
    assert_eq!(ids(TaskQuery::new().claimed_by("ann")), [(1, 1)]);
    s.claim_task(1, 1, None).unwrap();
    assert_eq!(
        s.claim_task(1, 1, Some("bob"))
            .unwrap()
            .unwrap()
            .claimed_by
            .as_deref(),
        Some("bob")
    );
    assert_eq!(s.claim_task(1, 9, Some("bob")).unwrap(), None);

    // A later checkpoint's set: the closed one goes, the kept one keeps its claim.
    let d = task_row(1, 3, 10, None, 30);
    s.apply(&[
        Write::Put(rec(1, 1, "{}")),
        Write::Tasks {
            instance: 1,
            open: vec![a.clone(), d.clone()],
        },
    ])
    .unwrap();
    let mut kept = a.clone();
    kept.claimed_by = Some("bob".into());
    assert_eq!(
        s.tasks(&TaskQuery::new().instance(crate::InstanceId(1)))
            .unwrap(),
        [kept, d]
    );

    // A batch that fails writes no task.
    let e = task_row(2, 2, 10, None, 40);
    assert!(s
        .apply(&[
            Write::Tasks {
                instance: 2,
                open: vec![c.clone(), e]
            },
            Write::Consume { message: 404 },
        ])
        .is_err());
    assert_eq!(
        ids(TaskQuery::new().instance(crate::InstanceId(2))),
        [(2, 1)]
    );
    // A task of another instance among the instance's is refused.
    assert!(s
        .apply(&[Write::Tasks {
            instance: 2,
            open: vec![b]
        }])
        .is_err());

    // The end takes the instance's tasks.
    s.apply(&[Write::End {
        id: 1,
        status: Status::Cancelled,
        outcome: None,
        at_ms: 50,
    }])
    .unwrap();
    assert_eq!(ids(TaskQuery::new()), [(2, 1)]);

    // Ends of several instances in a row (one statement on PostgreSQL) take their
    // tasks too.
    s.apply(&[
        Write::Put(rec(3, 0, "{}")),
        Write::Tasks {
            instance: 3,
            open: vec![task_row(3, 1, 10, None, 60)],
        },
    ])
    .unwrap();
    assert_eq!(ids(TaskQuery::new()), [(2, 1), (3, 1)]);
    let end = |id| Write::End {
        id,
        status: Status::Completed,
        outcome: None,
        at_ms: 70,
    };
    s.apply(&[end(2), end(3)]).unwrap();
    assert_eq!(ids(TaskQuery::new()), []);
}
