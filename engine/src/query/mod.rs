//! Instance queries, the same on both engines: [`Query`] says what to select
//! (process, status, the element a token waits at, business or correlation key,
//! open incidents, start and end time), in which order and which page;
//! `Engine::instances` answers from memory, `DurableEngine::instances` from the
//! store's indexes. Each [`InstanceSummary`] carries the instance's data typed as
//! `D`.

mod filter;
pub(crate) mod memory;

use std::ops::{Bound, RangeBounds};

pub(crate) use filter::Row;
pub use filter::{After, InstanceQuery, SortBy, Status};

use crate::graph::Process;
use crate::instance::InstanceId;

/// An instance query of process data `D`: made with [`Query::of`] (typed) or,
/// with the `durable` feature, [`Query::named`] (data as JSON), narrowed by the
/// builder methods, run by `Engine::instances` or `DurableEngine::instances` (and
/// counted by their `count`).
///
/// ```
/// # use thresh::{Query, SortBy, Status};
/// # thresh::process! { pub ORDER: u32 { start s; end e; s -> e; } }
/// let q = Query::of(&ORDER)
///     .status(Status::Running)
///     .waiting_at("approve")
///     .sort_by(SortBy::Started)
///     .limit(50);
/// ```
#[derive(Debug)]
pub struct Query<D: 'static> {
    target: Target<D>,
    filter: InstanceQuery,
    cursor: Option<String>,
}

enum Target<D: 'static> {
    Static(&'static Process<D>),
    #[cfg_attr(not(feature = "durable"), allow(dead_code))]
    Named(String),
}

// By hand: a query clones whatever its data type is.
impl<D> Clone for Query<D> {
    fn clone(&self) -> Self {
        Query {
            target: self.target.clone(),
            filter: self.filter.clone(),
            cursor: self.cursor.clone(),
        }
    }
}

impl<D> std::fmt::Debug for Target<D> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Target::Static(p) => write!(f, "Static({})", p.name()),
            Target::Named(n) => write!(f, "Named({n})"),
        }
    }
}

impl<D> Clone for Target<D> {
    fn clone(&self) -> Self {
        match self {
            Target::Static(p) => Target::Static(p),
            Target::Named(n) => Target::Named(n.clone()),
        }
    }
}

impl<D: 'static> Query<D> {
    /// The instances of `process` — of this version of it (README, "Versions"):
    /// [`Query::named`] selects every version's —, any status, sorted by id, all
    /// of them.
    pub fn of(process: &'static Process<D>) -> Self {
        Query {
            target: Target::Static(process),
            filter: InstanceQuery {
                process: Some(process.name().to_string()),
                fingerprint: Some(process.fingerprint()),
                ..InstanceQuery::default()
            },
            cursor: None,
        }
    }

    /// Only instances with this status (called again: with any of them).
    pub fn status(mut self, status: Status) -> Self {
        if !self.filter.statuses.contains(&status) {
            self.filter.statuses.push(status);
        }
        self
    }

    /// Only instances with a token waiting at `element` (a catch, a receive or
    /// user task, a join, a call activity, a task held at an incident): a typed
    /// user task (`PROCESS::user.approve`, checked at compile time) or an element's
    /// id as a string — one the process does not have is
    /// [`QueryError::UnknownElement`].
    pub fn waiting_at(mut self, element: impl Element<D>) -> Self {
        self.filter.waiting_at = Some(element.element().to_string());
        self
    }

    /// Only the instance `id` (a page of one, or none if it is not of this process
    /// or not listed): how an operations console finds one instance's summary.
    pub fn id(mut self, id: InstanceId) -> Self {
        self.filter.id = Some(id.0);
        self
    }

    /// Only instances started with this business key (`start_keyed`).
    pub fn key(mut self, business_key: &str) -> Self {
        self.filter.business_key = Some(business_key.to_string());
        self
    }

    /// Only instances with this correlation key (what their message catches
    /// correlate on, set by a keyed message start).
    pub fn correlation_key(mut self, key: &str) -> Self {
        self.filter.key = Some(key.to_string());
        self
    }

    /// Only instances with an open incident (`true`) or with none (`false`).
    pub fn incident(mut self, open: bool) -> Self {
        self.filter.incident = Some(open);
        self
    }

    /// Only instances started within `range` (milliseconds since the Unix epoch).
    pub fn started(mut self, range: impl RangeBounds<i64>) -> Self {
        self.filter.started = half_open(range);
        self
    }

    /// Only instances that ended within `range` (milliseconds since the Unix epoch).
    pub fn ended(mut self, range: impl RangeBounds<i64>) -> Self {
        self.filter.ended = half_open(range);
        self
    }

    /// Sort by `key`, then by id (ascending unless [`descending`](Self::descending)).
    /// Sorting by [`SortBy::Ended`] lists ended instances only.
    pub fn sort_by(mut self, key: SortBy) -> Self {
        self.filter.sort = key;
        self
    }

    /// Largest first.
    pub fn descending(mut self) -> Self {
        self.filter.descending = true;
        self
    }

    /// At most `n` instances; the page's [`Page::next`] continues after them.
    pub fn limit(mut self, n: u32) -> Self {
        self.filter.limit = Some(n);
        self
    }

    /// Skip the first `n` instances (a cursor is better: an offset shifts when
    /// instances are added before it).
    pub fn offset(mut self, n: u64) -> Self {
        self.filter.offset = n;
        self
    }

    /// Continue after the page `cursor` (a [`Page::next`] of this query) ended.
    /// A cursor not made by a query of the same order is [`QueryError::BadCursor`].
    pub fn after(mut self, cursor: &str) -> Self {
        self.cursor = Some(cursor.to_string());
        self
    }

    /// The process's name.
    pub fn process_name(&self) -> &str {
        match &self.target {
            Target::Static(p) => p.name(),
            Target::Named(n) => n,
        }
    }

    /// The process, when the query was made from its static.
    pub(crate) fn process(&self) -> Option<&'static Process<D>> {
        match self.target {
            Target::Static(p) => Some(p),
            Target::Named(_) => None,
        }
    }

    /// The filter for a store or the in-memory index, its element checked against
    /// `known` (the process's element ids) and its cursor read.
    pub(crate) fn resolve(&self, known: &[&str]) -> Result<InstanceQuery, QueryError> {
        let mut filter = self.filter.clone();
        if let Some(node) = &filter.waiting_at {
            if !known.contains(&node.as_str()) {
                return Err(QueryError::UnknownElement {
                    process: self.process_name().to_string(),
                    element: node.clone(),
                    known: known.join(", "),
                });
            }
        }
        if let Some(cursor) = &self.cursor {
            filter.after = Some(read_cursor(cursor, &filter)?);
        }
        Ok(filter)
    }
}

/// What names an element of a process over `D` that a token may wait at: a typed
/// user task ([`UserTask<D>`](crate::refs::UserTask)), or any element's id as a
/// string (checked when the query runs).
#[diagnostic::on_unimplemented(
    message = "`{Self}` does not name an element of a process over `{D}`",
    label = "not an element of this query's process",
    note = "name a user task by the process's typed reference, `PROCESS::user.name`, or any element by its id as a string"
)]
pub trait Element<D> {
    /// The element's id.
    fn element(&self) -> &str;
}

impl<D> Element<D> for crate::refs::UserTask<D> {
    fn element(&self) -> &str {
        self.name()
    }
}

impl<D> Element<D> for &str {
    fn element(&self) -> &str {
        self
    }
}

impl<D> Element<D> for String {
    fn element(&self) -> &str {
        self
    }
}

impl<D> Element<D> for &String {
    fn element(&self) -> &str {
        self
    }
}

#[cfg(feature = "durable")]
impl Query<serde_json::Value> {
    /// The instances of the process named `name`, their data as JSON (for a name
    /// known only at run time: a durable engine checks it against its registered
    /// processes, [`QueryError::UnknownProcess`] naming them; the in-memory engine
    /// has no codec to read data as JSON and answers [`QueryError::Untyped`]).
    ///
    /// Needs the `durable` feature.
    pub fn named(name: &str) -> Self {
        Query {
            target: Target::Named(name.to_string()),
            filter: InstanceQuery {
                process: Some(name.to_string()),
                ..InstanceQuery::default()
            },
            cursor: None,
        }
    }
}

fn half_open(range: impl RangeBounds<i64>) -> (Option<i64>, Option<i64>) {
    let from = match range.start_bound() {
        Bound::Included(&t) => Some(t),
        Bound::Excluded(&t) => Some(t.saturating_add(1)),
        Bound::Unbounded => None,
    };
    let to = match range.end_bound() {
        Bound::Included(&t) => Some(t.saturating_add(1)),
        Bound::Excluded(&t) => Some(t),
        Bound::Unbounded => None,
    };
    (from, to)
}

/// One page of a query's answer.
#[derive(Clone, Debug)]
pub struct Page<D> {
    /// The instances, in the query's order.
    pub items: Vec<InstanceSummary<D>>,
    /// A cursor for the next page ([`Query::after`]), when this one is full (there
    /// may be more); `None` when the query had no limit or the page is short.
    pub next: Option<String>,
}

/// One instance as a query sees it.
#[derive(Clone, Debug, PartialEq)]
pub struct InstanceSummary<D> {
    /// Its id.
    pub id: InstanceId,
    /// Its process's name.
    pub process: String,
    /// The fingerprint of the model it runs (or ran) under.
    pub fingerprint: u64,
    /// The version of its process it runs (or ran) on (README, "Versions");
    /// `None` for a stored instance whose model is not registered with this engine.
    pub version: Option<u32>,
    /// Running, or how it ended.
    pub status: Status,
    /// The business key it was started with, if any.
    pub business_key: Option<String>,
    /// Its correlation key, if any.
    pub key: Option<String>,
    /// When it started, in milliseconds since the Unix epoch.
    pub started_ms: i64,
    /// When it ended, if it did.
    pub ended_ms: Option<i64>,
    /// The ids of the elements its tokens wait at, sorted.
    pub waiting_at: Vec<String>,
    /// Its open incidents.
    pub incidents: u32,
    /// Its data when it last rested (every token waiting, or ended).
    pub data: D,
}

/// Now, in milliseconds since the Unix epoch: the clock every time a query
/// reports (starts, ends, due times) is on.
pub(crate) fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}

/// An armed timer of a running instance — a timer catch, boundary or event
/// sub-process start — and when it falls due (`Engine::timers_due`,
/// `DurableEngine::timers_due`: the console's timers page).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DueTimer {
    /// The instance it belongs to.
    pub instance: InstanceId,
    /// Its process's name.
    pub process: String,
    /// The version of its process the instance runs; `None` for a stored instance
    /// whose model is not registered with this engine.
    pub version: Option<u32>,
    /// The timer event's element id.
    pub element: String,
    /// When it falls due, in milliseconds since the Unix epoch.
    pub due_ms: i64,
}

impl<D> Row for InstanceSummary<D> {
    fn id(&self) -> u64 {
        self.id.0
    }
    fn process(&self) -> &str {
        &self.process
    }
    fn fingerprint(&self) -> u64 {
        self.fingerprint
    }
    fn status(&self) -> Status {
        self.status
    }
    fn waits_at(&self, node: &str) -> bool {
        self.waiting_at.iter().any(|w| w == node)
    }
    fn business_key(&self) -> Option<&str> {
        self.business_key.as_deref()
    }
    fn key(&self) -> Option<&str> {
        self.key.as_deref()
    }
    fn incidents(&self) -> u32 {
        self.incidents
    }
    fn started_ms(&self) -> i64 {
        self.started_ms
    }
    fn ended_ms(&self) -> Option<i64> {
        self.ended_ms
    }
}

/// Why a query could not run.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum QueryError {
    /// A query by name names no registered process.
    #[error("no process named `{name}` is registered here (registered: {known})")]
    UnknownProcess {
        /// The name given.
        name: String,
        /// The registered processes' names.
        known: String,
    },
    /// `waiting_at` names an element the process does not have.
    #[error("process `{process}` has no element `{element}` (its elements: {known})")]
    UnknownElement {
        /// The process.
        process: String,
        /// The id given.
        element: String,
        /// The process's element ids.
        known: String,
    },
    /// The cursor is not one a page of this query gave.
    #[error("bad cursor `{cursor}`: {reason} (pass the `next` of a page of the same query)")]
    BadCursor {
        /// The cursor given.
        cursor: String,
        /// What is wrong with it.
        reason: &'static str,
    },
    /// A stored instance's data did not read back as the query's type.
    #[error("the data of instance {id} does not read as the query's data type: {message}")]
    Data {
        /// The instance.
        id: InstanceId,
        /// The deserializer's message.
        message: String,
    },
    /// The in-memory engine answers typed queries only ([`Query::of`]).
    #[error(
        "the in-memory engine has no codec to give data as JSON: query with Query::of(&PROCESS)"
    )]
    Untyped,
}

/// The cursor after `row`: the order it belongs to, then the row's sort value and
/// id (`s:a:1700000000000:42`).
pub(crate) fn cursor_after(filter: &InstanceQuery, value: i64, id: u64) -> String {
    format!(
        "{}:{}:{value}:{id}",
        order_tag(filter.sort),
        dir_tag(filter.descending)
    )
}

fn order_tag(sort: SortBy) -> &'static str {
    match sort {
        SortBy::Id => "i",
        SortBy::Started => "s",
        SortBy::Ended => "e",
    }
}

fn dir_tag(descending: bool) -> &'static str {
    if descending {
        "d"
    } else {
        "a"
    }
}

fn read_cursor(cursor: &str, filter: &InstanceQuery) -> Result<After, QueryError> {
    let bad = |reason| QueryError::BadCursor {
        cursor: cursor.to_string(),
        reason,
    };
    let parts: Vec<&str> = cursor.split(':').collect();
    let [sort, dir, value, id] = parts[..] else {
        return Err(bad("not a cursor"));
    };
    if sort != order_tag(filter.sort) || dir != dir_tag(filter.descending) {
        return Err(bad("it was made for a query sorted another way"));
    }
    let value = value.parse().map_err(|_| bad("not a cursor"))?;
    let id = id.parse().map_err(|_| bad("not a cursor"))?;
    Ok(After { value, id })
}

/// A business key as given to `start_keyed`, or why it cannot be one.
pub(crate) fn check_business_key(key: String) -> Result<String, String> {
    if key.is_empty() {
        return Err("it is empty".to_string());
    }
    if key.contains('\0') {
        return Err(format!("{key:?} holds a NUL character"));
    }
    Ok(key)
}

/// The page of `rows` (already selected by `filter`, in its order) and its next
/// cursor.
pub(crate) fn page_of<D, R: Row>(
    filter: &InstanceQuery,
    rows: Vec<R>,
    mut summary: impl FnMut(R) -> Result<InstanceSummary<D>, QueryError>,
) -> Result<Page<D>, QueryError> {
    let full = filter
        .limit
        .is_some_and(|l| l > 0 && rows.len() >= l as usize);
    let next = match rows.last() {
        Some(last) if full => filter
            .sort_value(last)
            .map(|value| cursor_after(filter, value, last.id())),
        _ => None,
    };
    let items = rows
        .into_iter()
        .map(&mut summary)
        .collect::<Result<_, _>>()?;
    Ok(Page { items, next })
}
