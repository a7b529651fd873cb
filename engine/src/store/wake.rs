//! The wake index's reference semantics (the `Store` trait's defaults, and
//! [`MemoryStore`](super::MemoryStore)'s): what can wake a running instance that is
//! not in memory, read from whole records. The SQL stores answer the same from
//! their indexes (`instances.due_ms`, `instances.at_rest`, `instance_wakes`).

#[cfg(any(feature = "sqlite", feature = "postgres"))]
use super::WakeIndex;
use super::{InstanceRecord, MessageRecord, Resting, Status};

/// A wake index as the SQL stores read it back: the instance's columns, and its
/// subscriptions as one text — `kind U+001E name U+001E key`, joined by U+001F.
#[cfg(any(feature = "sqlite", feature = "postgres"))]
pub(super) fn joined(due_ms: Option<i64>, at_rest: bool, wakes: Option<&str>) -> WakeIndex {
    let mut wake = WakeIndex {
        due_ms,
        at_rest,
        ..WakeIndex::default()
    };
    for row in wakes.into_iter().flat_map(|w| w.split('\u{1f}')) {
        let mut parts = row.splitn(3, '\u{1e}');
        let (Some(kind), Some(name), key) = (parts.next(), parts.next(), parts.next()) else {
            continue;
        };
        match kind {
            "message" => wake
                .messages
                .push((name.to_string(), key.unwrap_or_default().to_string())),
            _ => wake.signals.push(name.to_string()),
        }
    }
    wake.messages.sort_unstable();
    wake.signals.sort_unstable();
    wake
}

/// The running instances' due times after `after` and at or before `at_ms`, as
/// (due time, id), earliest first, at most `limit`.
pub(super) fn due<'a>(
    records: impl Iterator<Item = &'a InstanceRecord>,
    after: Option<(i64, u64)>,
    at_ms: i64,
    limit: usize,
) -> Vec<(i64, u64)> {
    let mut due: Vec<(i64, u64)> = records
        .filter(|r| r.status == Status::Running)
        .filter_map(|r| r.wake.due_ms.map(|at| (at, r.id)))
        .filter(|&(at, id)| at <= at_ms && after.is_none_or(|a| (at, id) > a))
        .collect();
    due.sort_unstable();
    due.truncate(limit);
    due
}

pub(super) fn for_message(running: &[InstanceRecord], name: &str, key: &str) -> Vec<u64> {
    running
        .iter()
        .filter(|r| r.status == Status::Running)
        .filter(|r| r.wake.messages.iter().any(|(n, k)| n == name && k == key))
        .map(|r| r.id)
        .collect()
}

pub(super) fn for_signal(
    running: &[InstanceRecord],
    name: &str,
    after: Option<u64>,
    limit: usize,
) -> Vec<u64> {
    running
        .iter()
        .filter(|r| r.status == Status::Running && after.is_none_or(|a| r.id > a))
        .filter(|r| r.wake.signals.iter().any(|n| n == name))
        .map(|r| r.id)
        .take(limit)
        .collect()
}

/// The running instances with work now at `now_ms` — not at rest, a timer due, a
/// buffered message for one of their subscriptions —, by id.
pub(super) fn to_load(
    running: Vec<InstanceRecord>,
    messages: &[MessageRecord],
    now_ms: i64,
) -> Vec<InstanceRecord> {
    running
        .into_iter()
        .filter(|record| {
            let wake = &record.wake;
            record.status == Status::Running
                && (!wake.at_rest
                    || wake.due_ms.is_some_and(|at| at <= now_ms)
                    || wake
                        .messages
                        .iter()
                        .any(|(n, k)| messages.iter().any(|m| m.name == *n && m.key == *k)))
        })
        .collect()
}

/// The running instances at rest with an id greater than `after`, by id, at most
/// `limit`.
pub(super) fn resting<'a>(
    records: impl Iterator<Item = &'a InstanceRecord>,
    after: Option<u64>,
    limit: usize,
) -> Vec<Resting> {
    records
        .filter(|r| r.status == Status::Running && r.wake.at_rest)
        .filter(|r| after.is_none_or(|a| r.id > a))
        .take(limit)
        .map(|record| Resting {
            id: record.id,
            messages: !record.wake.messages.is_empty(),
            signals: !record.wake.signals.is_empty(),
            due_ms: record.wake.due_ms,
            process: record.process.clone(),
            fingerprint: record.fingerprint,
            key: record.key.clone(),
        })
        .collect()
}
