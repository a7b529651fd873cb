//! The JSON the console's API reads and writes: filters read from a query string,
//! instances, tasks and incidents as plain objects, ids from paths.

use std::time::{SystemTime, UNIX_EPOCH};

use serde::Serialize;
use serde_json::Value;

use super::error::ApiError;
use crate::instance::InstanceId;
use crate::query::{InstanceSummary, SortBy};
use crate::retry::{Incident, IncidentId};
use crate::tasklist::{Task, TaskId};
use crate::Status;

/// The most instances one page lists.
pub(crate) const MAX_LIMIT: u32 = 500;
/// A page's length when none is asked for.
pub(crate) const DEFAULT_LIMIT: u32 = 50;

/// An instance listing's filter, order and page, as a query string gives it:
/// `process`, `status` (repeated or comma-separated), `waiting_at`, `key`,
/// `incident` (`true`/`false`), `sort` (`id`, `started`, `ended`; if none,
/// `started` — the stores index it by process — or `id` with a `key`, whose few
/// rows its own index finds: SQLite's planner would take the start-time index and
/// scan), `desc` (`true` if none: newest first), `limit`, `after` (a page's
/// `next`).
#[derive(Clone, Debug, Default)]
pub(crate) struct Filter {
    pub process: Option<String>,
    pub statuses: Vec<Status>,
    pub waiting_at: Option<String>,
    pub key: Option<String>,
    pub incident: Option<bool>,
    pub sort: SortBy,
    pub descending: bool,
    pub limit: u32,
    pub after: Option<String>,
}

fn flag(name: &str, value: &str) -> Result<bool, ApiError> {
    match value {
        "true" | "1" | "on" | "yes" => Ok(true),
        "false" | "0" | "off" | "no" => Ok(false),
        _ => Err(ApiError::BadRequest(format!(
            "`{name}` is `true` or `false`, not `{value}`"
        ))),
    }
}

impl Filter {
    pub fn parse(pairs: &[(String, String)]) -> Result<Filter, ApiError> {
        let mut f = Filter {
            limit: DEFAULT_LIMIT,
            sort: SortBy::Started,
            descending: true,
            ..Filter::default()
        };
        let mut sorted = false;
        for (name, value) in pairs {
            // An empty field of a form is no filter.
            if value.is_empty() {
                continue;
            }
            sorted |= name == "sort";
            match name.as_str() {
                "process" => f.process = Some(value.clone()),
                "status" => {
                    for s in value.split(',') {
                        let status = Status::from_name(s).ok_or_else(|| {
                            ApiError::BadRequest(format!(
                                "no status `{s}` (running, completed, terminated, cancelled, failed)"
                            ))
                        })?;
                        if !f.statuses.contains(&status) {
                            f.statuses.push(status);
                        }
                    }
                }
                "waiting_at" => f.waiting_at = Some(value.clone()),
                "key" => f.key = Some(value.clone()),
                "incident" => f.incident = Some(flag(name, value)?),
                "sort" => {
                    f.sort = match value.as_str() {
                        "id" => SortBy::Id,
                        "started" => SortBy::Started,
                        "ended" => SortBy::Ended,
                        _ => {
                            return Err(ApiError::BadRequest(format!(
                                "no sort `{value}` (id, started, ended)"
                            )))
                        }
                    }
                }
                "desc" => f.descending = flag(name, value)?,
                "limit" => {
                    f.limit = value
                        .parse()
                        .ok()
                        .filter(|n| (1..=MAX_LIMIT).contains(n))
                        .ok_or_else(|| {
                            ApiError::BadRequest(format!(
                                "`limit` is a number from 1 to {MAX_LIMIT}, not `{value}`"
                            ))
                        })?
                }
                "after" => f.after = Some(value.clone()),
                _ => {
                    return Err(ApiError::BadRequest(format!(
                        "unknown parameter `{name}` (process, status, waiting_at, key, incident, sort, desc, limit, after)"
                    )))
                }
            }
        }
        if !sorted && f.key.is_some() {
            f.sort = SortBy::Id;
        }
        Ok(f)
    }

    /// The query string that gives this filter again, with `after` in place of
    /// its cursor (`None`: the first page).
    pub fn query_string(&self, after: Option<&str>) -> String {
        let mut parts: Vec<(String, String)> = Vec::new();
        if let Some(p) = &self.process {
            parts.push(("process".into(), p.clone()));
        }
        if !self.statuses.is_empty() {
            let names: Vec<&str> = self.statuses.iter().map(|s| s.as_str()).collect();
            parts.push(("status".into(), names.join(",")));
        }
        if let Some(w) = &self.waiting_at {
            parts.push(("waiting_at".into(), w.clone()));
        }
        if let Some(k) = &self.key {
            parts.push(("key".into(), k.clone()));
        }
        if let Some(i) = self.incident {
            parts.push(("incident".into(), i.to_string()));
        }
        let sort = match self.sort {
            SortBy::Id => "id",
            SortBy::Started => "started",
            SortBy::Ended => "ended",
        };
        parts.push(("sort".into(), sort.into()));
        parts.push(("desc".into(), self.descending.to_string()));
        parts.push(("limit".into(), self.limit.to_string()));
        if let Some(a) = after {
            parts.push(("after".into(), a.to_string()));
        }
        parts
            .iter()
            .map(|(n, v)| format!("{n}={}", encode(v)))
            .collect::<Vec<_>>()
            .join("&")
    }
}

/// Percent-encoding of a query string's value.
pub(crate) fn encode(value: &str) -> String {
    let mut out = String::with_capacity(value.len());
    for b in value.bytes() {
        match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                out.push(b as char)
            }
            _ => out.push_str(&format!("%{b:02X}")),
        }
    }
    out
}

/// An instance as the API shows it.
#[derive(Clone, Debug, Serialize)]
pub(crate) struct Summary {
    pub id: String,
    /// The console's name for its process's version (`order`, `order@2`).
    pub process: String,
    pub version: Option<u32>,
    pub status: Status,
    pub business_key: Option<String>,
    pub key: Option<String>,
    pub started_ms: i64,
    pub ended_ms: Option<i64>,
    pub waiting_at: Vec<String>,
    pub incidents: u32,
    pub data: Value,
}

impl Summary {
    pub fn of<D: Serialize>(s: InstanceSummary<D>) -> Result<Summary, ApiError> {
        let data = serde_json::to_value(&s.data).map_err(|e| {
            ApiError::Internal(format!(
                "the data of instance {} did not serialise: {e}",
                s.id
            ))
        })?;
        Ok(Summary {
            id: s.id.to_string(),
            process: match s.version {
                Some(v) if v > 1 => format!("{}@{v}", s.process),
                _ => s.process,
            },
            version: s.version,
            status: s.status,
            business_key: s.business_key,
            key: s.key,
            started_ms: s.started_ms,
            ended_ms: s.ended_ms,
            waiting_at: s.waiting_at,
            incidents: s.incidents,
            data,
        })
    }
}

fn ms(t: SystemTime) -> i64 {
    t.duration_since(UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}

/// An open task as the API shows it.
pub(crate) fn task(t: &Task) -> Value {
    serde_json::json!({
        "id": task_path(t.id),
        "instance": t.id.instance.to_string(),
        "process": t.process,
        "element": t.element,
        "name": t.name,
        "iteration": t.iteration,
        "assignee": t.assignee,
        "groups": t.groups,
        "due_ms": t.due.map(ms),
        "priority": t.priority,
        "claimed_by": t.claimed_by,
        "created_ms": ms(t.created),
        "business_key": t.business_key,
        "key": t.key,
    })
}

/// A step of an instance's history as the API shows it: its track, node and what
/// happened there (the happening as `Debug` writes it, as a history prints).
pub(crate) fn step(s: &crate::instance::Step) -> Value {
    serde_json::json!({
        "track": s.track.0,
        "node": s.node,
        "what": format!("{:?}", s.what),
    })
}

/// An open incident as the API shows it.
pub(crate) fn incident(i: &Incident) -> Value {
    serde_json::json!({
        "id": incident_path(i.id),
        "instance": i.id.instance.to_string(),
        "process": i.process,
        "node": i.node,
        "error": i.error,
        "attempts": i.attempts,
        "opened_ms": ms(i.opened),
    })
}

/// A task's id in a path: `i42/1`.
pub(crate) fn task_path(id: TaskId) -> String {
    format!("{}/{}", id.instance, id.number)
}

/// An incident's id in a path: `i42/1`.
pub(crate) fn incident_path(id: IncidentId) -> String {
    format!("{}/{}", id.instance, id.number)
}

/// An instance id as a path gives it: `i42` (as ids display) or `42`.
pub(crate) fn instance_id(text: &str) -> Result<InstanceId, ApiError> {
    text.strip_prefix('i')
        .unwrap_or(text)
        .parse()
        .map(InstanceId)
        .map_err(|_| {
            ApiError::NotFound(format!(
                "`{text}` is not an instance id (ids read `i42` or `42`)"
            ))
        })
}

/// The number of a task or incident in its instance, as a path gives it.
pub(crate) fn number(text: &str) -> Result<u32, ApiError> {
    text.parse()
        .map_err(|_| ApiError::NotFound(format!("`{text}` is not a task or incident number")))
}
