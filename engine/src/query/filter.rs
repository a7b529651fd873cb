//! What an instance query selects, as the engines hand it to a store or to the
//! in-memory index: [`InstanceQuery`], and its reference semantics over rows in
//! memory (`matches`, `select`). The SQL stores run the same as SQL
//! (`store/sql.rs`).

use std::fmt;

/// Where an instance is in its life. Stored as its lowercase name.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "durable", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "durable", serde(rename_all = "lowercase"))]
pub enum Status {
    /// Still running (or waiting): resumed after a restart.
    Running,
    /// Reached its end.
    Completed,
    /// Ended by a terminate end event.
    Terminated,
    /// Cancelled from outside (its handle, or engine shutdown policy).
    Cancelled,
    /// Failed (an uncaught error, a failed task).
    Failed,
}

impl Status {
    /// Every status, in declaration order.
    pub const ALL: [Status; 5] = [
        Status::Running,
        Status::Completed,
        Status::Terminated,
        Status::Cancelled,
        Status::Failed,
    ];

    /// The name stored on disk: `running`, `completed`, `terminated`, `cancelled`,
    /// `failed`.
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Running => "running",
            Status::Completed => "completed",
            Status::Terminated => "terminated",
            Status::Cancelled => "cancelled",
            Status::Failed => "failed",
        }
    }

    /// The status named `name` (as [`Status::as_str`] spells it), if any.
    pub fn from_name(name: &str) -> Option<Status> {
        Status::ALL.into_iter().find(|s| s.as_str() == name)
    }

    /// Whether the instance has ended (any status but `Running`).
    pub fn is_ended(self) -> bool {
        self != Status::Running
    }
}

impl fmt::Display for Status {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What a query reads of an instance: a stored record, or the in-memory index's
/// entry.
pub(crate) trait Row {
    fn id(&self) -> u64;
    fn process(&self) -> &str;
    /// The fingerprint of the version it runs on.
    fn fingerprint(&self) -> u64;
    fn status(&self) -> Status;
    /// Whether a token waits at element `node`.
    fn waits_at(&self, node: &str) -> bool;
    fn business_key(&self) -> Option<&str>;
    fn key(&self) -> Option<&str>;
    fn incidents(&self) -> u32;
    fn started_ms(&self) -> i64;
    fn ended_ms(&self) -> Option<i64>;
}

/// What an instance query selects, and in which order. Every filter that is set
/// must hold; an unset one selects everything. Times are milliseconds since the
/// Unix epoch, ranges half open (`from <= t < to`).
///
/// Both engines read it; a user builds it through [`Query`](crate::Query).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct InstanceQuery {
    /// The process's name.
    pub process: Option<String>,
    /// This one instance (its id).
    pub id: Option<u64>,
    /// The version it runs on, by its fingerprint ([`Query::of`](crate::Query::of)
    /// sets it: the instances of one version, whose data is of one type).
    pub fingerprint: Option<u64>,
    /// Any of these statuses (empty: any status).
    pub statuses: Vec<Status>,
    /// A token waits at this element (its id).
    pub waiting_at: Option<String>,
    /// The business key it was started with.
    pub business_key: Option<String>,
    /// Its correlation key (what its message catches correlate on).
    pub key: Option<String>,
    /// `Some(true)`: it has an open incident; `Some(false)`: it has none.
    pub incident: Option<bool>,
    /// It started in `from..to`.
    pub started: (Option<i64>, Option<i64>),
    /// It ended in `from..to` (a running instance never matches a set bound).
    pub ended: (Option<i64>, Option<i64>),
    /// The order: by this key, then by id.
    pub sort: SortBy,
    /// Largest first.
    pub descending: bool,
    /// Start after this row (keyset pagination: stays right while instances are
    /// added).
    pub after: Option<After>,
    /// Skip this many rows first.
    pub offset: u64,
    /// At most this many rows (`None`: all).
    pub limit: Option<u32>,
}

/// What instances are sorted by (then by id, so the order is total).
///
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum SortBy {
    /// The instance id (the order they were started in on one node).
    #[default]
    Id,
    /// The start time.
    Started,
    /// The end time; sorting by it selects ended instances only.
    Ended,
}

/// The row a page ends at: its sort key's value and its id.
///
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct After {
    /// The row's value of the sort key (its id when sorted by id).
    pub value: i64,
    /// The row's id.
    pub id: u64,
}

impl InstanceQuery {
    /// The value `record` is sorted by (`None`: it is not in this order — a running
    /// instance sorted by end time).
    pub(crate) fn sort_value(&self, row: &impl Row) -> Option<i64> {
        match self.sort {
            SortBy::Id => i64::try_from(row.id()).ok(),
            SortBy::Started => Some(row.started_ms()),
            SortBy::Ended => row.ended_ms(),
        }
    }

    /// Whether `record` passes every filter (not the cursor).
    pub(crate) fn matches(&self, r: &impl Row) -> bool {
        let within = |t: Option<i64>, (from, to): (Option<i64>, Option<i64>)| {
            if from.is_none() && to.is_none() {
                return true;
            }
            t.is_some_and(|t| from.is_none_or(|f| t >= f) && to.is_none_or(|e| t < e))
        };
        self.process.as_ref().is_none_or(|p| p == r.process())
            && self.id.is_none_or(|id| id == r.id())
            && self.fingerprint.is_none_or(|f| f == r.fingerprint())
            && (self.statuses.is_empty() || self.statuses.contains(&r.status()))
            && self.waiting_at.as_ref().is_none_or(|n| r.waits_at(n))
            && self
                .business_key
                .as_ref()
                .is_none_or(|k| r.business_key() == Some(k.as_str()))
            && self
                .key
                .as_ref()
                .is_none_or(|k| r.key() == Some(k.as_str()))
            && self.incident.is_none_or(|open| (r.incidents() > 0) == open)
            && within(Some(r.started_ms()), self.started)
            && within(r.ended_ms(), self.ended)
            && self.sort_value(r).is_some()
    }

    /// The reference semantics: `records` filtered, sorted, paged.
    pub(crate) fn select<R: Row>(&self, rows: impl IntoIterator<Item = R>) -> Vec<R> {
        let mut keyed: Vec<(i64, u64, R)> = rows
            .into_iter()
            .filter(|r| self.matches(r))
            .filter_map(|r| Some((self.sort_value(&r)?, r.id(), r)))
            .filter(|(v, id, _)| {
                self.after.is_none_or(|a| match self.descending {
                    false => (*v, *id) > (a.value, a.id),
                    true => (*v, *id) < (a.value, a.id),
                })
            })
            .collect();
        keyed.sort_by_key(|(v, id, _)| (*v, *id));
        if self.descending {
            keyed.reverse();
        }
        let limit = self.limit.map_or(usize::MAX, |l| l as usize);
        keyed
            .into_iter()
            .skip(usize::try_from(self.offset).unwrap_or(usize::MAX))
            .take(limit)
            .map(|(_, _, r)| r)
            .collect()
    }
}
