//! The store's tests: one conformance suite run against every store, the writer, and
//! (feature `sqlite`) the file store's open errors, locking and crash safety, and
//! (feature `postgres`) the PostgreSQL store's (against `THRESH_POSTGRES_URL`).

mod conformance;
mod queries;
mod tasks;
mod wake;
mod writer;

#[cfg(feature = "sqlite")]
mod sqlite;

#[cfg(feature = "postgres")]
mod postgres;

use super::*;

#[cfg(any(feature = "sqlite", feature = "postgres"))]
use writer::four_submitters;

pub(super) fn rec(id: u64, seq: u64, state: &str) -> InstanceRecord {
    InstanceRecord {
        id,
        process: if id.is_multiple_of(2) { "even" } else { "odd" }.into(),
        fingerprint: 0xfeed_0000_0000_0000 | id,
        status: Status::Running,
        key: Some(format!("k{id}")),
        seq,
        state: state.into(),
        outcome: None,
        updated_ms: 1_000 + seq as i64,
        business_key: None,
        started_ms: 1_000,
        waits: Vec::new(),
        incidents: 0,
        wake: Default::default(),
    }
}

pub(super) fn msg(id: u64, expires_ms: i64) -> MessageRecord {
    MessageRecord {
        id,
        name: "paid".into(),
        key: format!("k{id}"),
        payload: format!(r#"{{"amount":{id}}}"#),
        expires_ms,
    }
}

fn dep(id: u64, data: &str) -> DeploymentRecord {
    DeploymentRecord {
        id,
        process: "order".into(),
        fingerprint: u64::MAX - id,
        data: data.into(),
        timer_anchors: r#"{"every":[1,2]}"#.into(),
    }
}

type Snapshot = (
    Vec<InstanceRecord>,
    Vec<MessageRecord>,
    Vec<DeploymentRecord>,
    Ids,
);

fn snapshot(s: &dyn Store) -> Snapshot {
    (
        s.list(None, None).unwrap(),
        s.messages().unwrap(),
        s.deployments().unwrap(),
        s.next_ids().unwrap(),
    )
}

#[test]
fn records_serialise_with_stable_names() {
    let mut r = rec(1, 2, "{}");
    r.status = Status::Cancelled;
    let json = serde_json::to_string(&r).unwrap();
    assert_eq!(
        json,
        r#"{"id":1,"process":"odd","fingerprint":18369338455114121217,"status":"cancelled","key":"k1","seq":2,"state":"{}","outcome":null,"updated_ms":1002,"started_ms":1000}"#
    );
    assert_eq!(serde_json::from_str::<InstanceRecord>(&json).unwrap(), r);
    for s in Status::ALL {
        assert_eq!(Status::from_name(s.as_str()), Some(s));
        assert_eq!(serde_json::to_string(&s).unwrap(), format!("\"{s}\""));
    }
}
