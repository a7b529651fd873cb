//! The JSON API (`/api/...`): the pages' operations for scripts and other tools.
//! Every answer is JSON; an error is `{"error": kind, "message": ...}` with its
//! 4xx (or 500 for a store failure) status.

use axum::body::Bytes;
use axum::extract::rejection::QueryRejection;
use axum::extract::{Path, Query};
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use serde_json::{json, Value};

use super::engines::ConsoleEngine;
use super::error::ApiError;
use super::json::{self, Filter};
use super::{Shared, State};
use crate::retry::IncidentId;
use crate::tasklist::{TaskId, TaskQuery};
use crate::Status;
use std::sync::Arc;

pub(crate) type Pairs = Result<Query<Vec<(String, String)>>, QueryRejection>;

pub(super) fn routes<E: ConsoleEngine>() -> Router<Arc<Shared<E>>> {
    Router::new()
        .route("/api/openapi.json", get(openapi))
        .route("/api/csrf", get(csrf::<E>))
        .route("/api/processes", get(processes::<E>))
        .route("/api/instances", get(instances::<E>).post(start::<E>))
        .route("/api/instances/{id}", get(instance::<E>))
        .route("/api/instances/{id}/cancel", post(cancel::<E>))
        .route("/api/instances/{id}/diagram.svg", get(diagram::<E>))
        .route("/api/tasks", get(tasks::<E>))
        .route("/api/tasks/{instance}/{number}", get(task::<E>))
        .route(
            "/api/tasks/{instance}/{number}/{action}",
            post(task_action::<E>),
        )
        .route("/api/incidents", get(incidents::<E>))
        .route("/api/incidents/{instance}/{number}/retry", post(retry::<E>))
        .route("/api/messages", get(messages::<E>))
        .route("/api/timers", get(timers::<E>))
        .route("/metrics", get(metrics::<E>))
}

/// The application's metrics as Prometheus text.
async fn metrics<E: ConsoleEngine>(state: State<E>) -> Result<Response, ApiError> {
    let render = state.metrics.as_ref().ok_or_else(|| {
        ApiError::NotFound(
            "no metrics here: give the console the exporter's renderer (Console::metrics)".into(),
        )
    })?;
    let text = render();
    Ok((
        [(
            header::CONTENT_TYPE,
            "text/plain; version=0.0.4; charset=utf-8",
        )],
        text,
    )
        .into_response())
}

/// The query string's pairs, or why it does not read.
pub(crate) fn pairs(query: Pairs) -> Result<Vec<(String, String)>, ApiError> {
    query
        .map(|Query(pairs)| pairs)
        .map_err(|e| ApiError::BadRequest(format!("the query string does not read: {e}")))
}

/// A POST's body as a JSON object (an empty body is `{}`).
fn body(bytes: &Bytes) -> Result<serde_json::Map<String, Value>, ApiError> {
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return Ok(Default::default());
    }
    match serde_json::from_slice(bytes) {
        Ok(Value::Object(map)) => Ok(map),
        Ok(_) => Err(ApiError::BadRequest(
            "the body is JSON, but not an object".into(),
        )),
        Err(e) => Err(ApiError::BadRequest(format!("the body is not JSON: {e}"))),
    }
}

fn text_field<'a>(
    map: &'a serde_json::Map<String, Value>,
    name: &str,
) -> Result<Option<&'a str>, ApiError> {
    match map.get(name) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s)),
        Some(_) => Err(ApiError::BadRequest(format!("`{name}` is a string"))),
    }
}

fn task_id(instance: &str, number: &str) -> Result<TaskId, ApiError> {
    Ok(TaskId {
        instance: json::instance_id(instance)?,
        number: json::number(number)?,
    })
}

/// The API's OpenAPI 3 document, written by hand beside the routes (a test holds
/// the two to each other).
pub(crate) const OPENAPI: &str = include_str!("openapi.json");

async fn openapi() -> Response {
    ([(header::CONTENT_TYPE, "application/json")], OPENAPI).into_response()
}

async fn csrf<E: ConsoleEngine>(state: State<E>) -> Json<Value> {
    Json(json!({ "token": state.token, "read_only": state.read_only }))
}

/// Each registered process with its instances counted by status and those with
/// an open incident (counts on the stores' indexes).
pub(crate) async fn process_rows<E: ConsoleEngine>(
    shared: &Shared<E>,
) -> Result<Vec<Value>, ApiError> {
    let mut rows = Vec::new();
    for p in &shared.processes {
        let mut counts = serde_json::Map::new();
        for status in Status::ALL {
            counts.insert(
                status.as_str().into(),
                p.count(&shared.engine, Some(status), None).await?.into(),
            );
        }
        let stuck = p.count(&shared.engine, None, Some(true)).await?;
        rows.push(json!({
            "process": p.key(),
            "name": p.name(),
            "version": p.version(),
            "fingerprint": format!("{:016x}", p.fingerprint()),
            "elements": p.elements(),
            "counts": counts,
            "with_incident": stuck,
        }));
    }
    Ok(rows)
}

async fn processes<E: ConsoleEngine>(state: State<E>) -> Result<Json<Value>, ApiError> {
    Ok(Json(Value::Array(process_rows(&state).await?)))
}

async fn instances<E: ConsoleEngine>(
    state: State<E>,
    query: Pairs,
) -> Result<Json<Value>, ApiError> {
    let filter = Filter::parse(&pairs(query)?)?;
    let name = filter.process.as_deref().ok_or_else(|| {
        ApiError::BadRequest(
            "name the process: `process=NAME` (GET /api/processes lists them)".into(),
        )
    })?;
    let page = state.process(name)?.list(&state.engine, &filter).await?;
    Ok(Json(json!({ "items": page.items, "next": page.next })))
}

async fn start<E: ConsoleEngine>(
    state: State<E>,
    headers: HeaderMap,
    bytes: Bytes,
) -> Result<Response, ApiError> {
    state.check_post(&headers, None)?;
    let mut map = body(&bytes)?;
    let name = text_field(&map, "process")?
        .ok_or_else(|| ApiError::BadRequest("`process` names the process to start".into()))?
        .to_string();
    let key = text_field(&map, "business_key")?.map(str::to_string);
    let data = map
        .remove("data")
        .ok_or_else(|| ApiError::BadRequest("`data` is the new instance's data".into()))?;
    let id = state
        .process(&name)?
        .start(&state.engine, key, data)
        .await?;
    Ok((StatusCode::CREATED, Json(json!({ "id": id.to_string() }))).into_response())
}

/// One instance: its summary, open tasks and incidents.
pub(crate) async fn instance_view<E: ConsoleEngine>(
    shared: &Shared<E>,
    id: &str,
) -> Result<Value, ApiError> {
    let id = json::instance_id(id)?;
    let (process, summary) = shared.find(id).await?;
    let tasks = shared.engine.tasks(&TaskQuery::new().instance(id)).await?;
    let incidents = process.incidents(&shared.engine, id).await?;
    let incidents: Vec<Value> = incidents.iter().map(json::incident).collect();
    // `null` where the engine keeps no history to read by id.
    let history = process.history(&shared.engine, id).await?;
    let history = history.map(|h| h.steps().iter().map(json::step).collect::<Vec<_>>());
    Ok(json!({
        "instance": summary,
        "tasks": tasks.iter().map(json::task).collect::<Vec<_>>(),
        "incidents": incidents,
        "history": history,
    }))
}

async fn instance<E: ConsoleEngine>(
    state: State<E>,
    Path(id): Path<String>,
) -> Result<Json<Value>, ApiError> {
    Ok(Json(instance_view(&state, &id).await?))
}

/// Cancel instance `id` through its process's engine call: 404 if the console
/// lists no such instance, 409 if it has ended.
pub(crate) async fn cancel_instance<E: ConsoleEngine>(
    shared: &Shared<E>,
    id: &str,
) -> Result<(), ApiError> {
    let id = json::instance_id(id)?;
    let (process, summary) = shared.find(id).await?;
    if summary.status.is_ended() {
        return Err(ApiError::Conflict(format!(
            "instance {id} has ended already ({})",
            summary.status.as_str()
        )));
    }
    process.cancel(&shared.engine, id).await
}

async fn cancel<E: ConsoleEngine>(
    state: State<E>,
    headers: HeaderMap,
    Path(id): Path<String>,
) -> Result<Json<Value>, ApiError> {
    state.check_post(&headers, None)?;
    cancel_instance(&state, &id).await?;
    Ok(Json(json!({ "ok": true })))
}

/// The instance on its diagram, or why not.
pub(crate) async fn picture<E: ConsoleEngine>(
    shared: &Shared<E>,
    id: &str,
) -> Result<String, ApiError> {
    let id = json::instance_id(id)?;
    let (process, _) = shared.find(id).await?;
    process.picture(&shared.engine, id).await?.ok_or_else(|| {
        ApiError::NotFound(format!(
            "instance {id} cannot be drawn: it is no longer kept"
        ))
    })
}

async fn diagram<E: ConsoleEngine>(
    state: State<E>,
    Path(id): Path<String>,
) -> Result<Response, ApiError> {
    let svg = picture(&state, &id).await?;
    Ok(([(header::CONTENT_TYPE, "image/svg+xml")], svg).into_response())
}

/// The task list's filter from a query string: `assignee`, `claimed_by`, `group`
/// (repeated or comma-separated), `process`, `element`, `instance`, `unassigned`.
pub(crate) fn task_query(pairs: &[(String, String)]) -> Result<TaskQuery, ApiError> {
    let mut q = TaskQuery::new();
    let mut groups = Vec::new();
    for (name, value) in pairs {
        if value.is_empty() {
            continue;
        }
        q = match name.as_str() {
            "assignee" => q.assignee(value),
            "claimed_by" => q.claimed_by(value),
            "group" => {
                groups.extend(value.split(',').map(str::to_string));
                q
            }
            "process" => q.process(value),
            "element" => q.element(value),
            "instance" => q.instance(json::instance_id(value).map_err(|e| ApiError::BadRequest(e.to_string()))?),
            "unassigned" => match value.as_str() {
                "true" | "on" | "1" => q.unassigned(),
                _ => q,
            },
            _ => {
                return Err(ApiError::BadRequest(format!(
                    "unknown parameter `{name}` (assignee, claimed_by, group, process, element, instance, unassigned)"
                )))
            }
        };
    }
    if !groups.is_empty() {
        q = q.candidate_groups(groups);
    }
    Ok(q)
}

async fn tasks<E: ConsoleEngine>(state: State<E>, query: Pairs) -> Result<Json<Value>, ApiError> {
    let q = task_query(&pairs(query)?)?;
    let tasks = state.engine.tasks(&q).await?;
    Ok(Json(Value::Array(tasks.iter().map(json::task).collect())))
}

async fn task<E: ConsoleEngine>(
    state: State<E>,
    Path((instance, number)): Path<(String, String)>,
) -> Result<Json<Value>, ApiError> {
    let task = state.engine.task(task_id(&instance, &number)?).await?;
    Ok(Json(json::task(&task)))
}

/// A task's `claim` (`user`), `unclaim`, `complete` (`data`: a merge patch) or
/// `fail` (`message`), by the engine's calls of those names.
pub(crate) async fn act_on_task<E: ConsoleEngine>(
    shared: &Shared<E>,
    id: TaskId,
    action: &str,
    map: &mut serde_json::Map<String, Value>,
) -> Result<Option<Value>, ApiError> {
    let engine = &shared.engine;
    match action {
        "claim" => {
            let user = text_field(map, "user")?
                .filter(|u| !u.trim().is_empty())
                .ok_or_else(|| ApiError::BadRequest("`user` names who claims the task".into()))?;
            Ok(Some(json::task(&engine.claim(id, user).await?)))
        }
        "unclaim" => Ok(Some(json::task(&engine.unclaim(id).await?))),
        "complete" => {
            // The task must be open; its instance's version types the change.
            engine.task(id).await?;
            let patch = map.remove("data").unwrap_or_else(|| json!({}));
            let (process, _) = shared.find(id.instance).await?;
            process.complete(engine, id, patch).await?;
            Ok(None)
        }
        "fail" => {
            let message = text_field(map, "message")?
                .filter(|m| !m.trim().is_empty())
                .ok_or_else(|| ApiError::BadRequest("`message` says why the task failed".into()))?;
            engine.fail_task(id, message.to_string()).await?;
            Ok(None)
        }
        _ => Err(ApiError::NotFound(format!(
            "no task action `{action}` (claim, unclaim, complete, fail)"
        ))),
    }
}

async fn task_action<E: ConsoleEngine>(
    state: State<E>,
    headers: HeaderMap,
    Path((instance, number, action)): Path<(String, String, String)>,
    bytes: Bytes,
) -> Result<Json<Value>, ApiError> {
    state.check_post(&headers, None)?;
    let id = task_id(&instance, &number)?;
    let mut map = body(&bytes)?;
    let answer = act_on_task(&state, id, &action, &mut map).await?;
    Ok(Json(answer.unwrap_or_else(|| json!({ "ok": true }))))
}

/// The open incidents of the instances with one, newest first: of `process` if
/// given, else of every registered process; at most `limit` instances' (50 if
/// none) of each. Found by the instance query on the stores' incident index, then
/// read instance by instance — never every running instance's checkpoint.
async fn incidents<E: ConsoleEngine>(
    state: State<E>,
    query: Pairs,
) -> Result<Json<Value>, ApiError> {
    let mut filter = Filter::parse(&pairs(query)?)?;
    if !filter.statuses.is_empty() || filter.waiting_at.is_some() || filter.after.is_some() {
        return Err(ApiError::BadRequest(
            "incidents are listed by `process`, `key`, `sort`, `desc` and `limit`".into(),
        ));
    }
    filter.incident = Some(true);
    let processes: Vec<&dyn super::typed::Registered<E>> = match &filter.process {
        Some(name) => vec![state.process(name)?],
        None => state.processes.iter().map(|p| &**p).collect(),
    };
    let mut listed = Vec::new();
    for p in processes {
        for instance in p.list(&state.engine, &filter).await?.items {
            let id = json::instance_id(&instance.id)?;
            let open = p.incidents(&state.engine, id).await?;
            listed.extend(open.iter().map(json::incident));
        }
    }
    Ok(Json(Value::Array(listed)))
}

/// Retry incident `id`, with a merge patch over the data if one is given.
pub(crate) async fn retry_incident<E: ConsoleEngine>(
    shared: &Shared<E>,
    id: IncidentId,
    patch: Option<Value>,
) -> Result<(), ApiError> {
    match patch {
        None => Ok(shared.engine.retry(id).await?),
        Some(patch) => {
            let gone = || ApiError::NotFound(format!("no open incident {id}"));
            let (process, _) = shared.find(id.instance).await.map_err(|_| gone())?;
            let open = process.incidents(&shared.engine, id.instance).await?;
            if !open.iter().any(|i| i.id == id) {
                return Err(gone());
            }
            process.retry_with(&shared.engine, id, patch).await
        }
    }
}

async fn retry<E: ConsoleEngine>(
    state: State<E>,
    headers: HeaderMap,
    Path((instance, number)): Path<(String, String)>,
    bytes: Bytes,
) -> Result<Json<Value>, ApiError> {
    state.check_post(&headers, None)?;
    let id = IncidentId {
        instance: json::instance_id(&instance)?,
        number: json::number(&number)?,
    };
    let mut map = body(&bytes)?;
    retry_incident(&state, id, map.remove("data").filter(|d| !d.is_null())).await?;
    Ok(Json(json!({ "ok": true })))
}

/// How many buffered messages the console lists at most.
pub(crate) const MESSAGES_LISTED: usize = 200;

/// The message buffer's figures, and its oldest messages.
pub(crate) fn broker<E: ConsoleEngine>(shared: &Shared<E>) -> Value {
    let s = shared.engine.broker_stats();
    let messages: Vec<Value> = shared
        .engine
        .buffered_messages(MESSAGES_LISTED)
        .iter()
        .map(|m| {
            json!({
                "name": m.name,
                "key": m.key,
                "expires_in_ms": u64::try_from(m.expires_in.as_millis()).unwrap_or(u64::MAX),
                "stored": m.stored,
            })
        })
        .collect();
    json!({
        "delivered": s.delivered,
        "buffered": s.buffered,
        "dropped_full": s.dropped_full,
        "expired": s.expired,
        "unknown": s.unknown,
        "messages": messages,
    })
}

async fn messages<E: ConsoleEngine>(state: State<E>) -> Json<Value> {
    Json(broker(&state))
}

/// How many armed timers the console lists at most.
pub(crate) const TIMERS_LISTED: usize = 200;

/// The running instances' armed timers, earliest due first.
pub(crate) async fn due_timers<E: ConsoleEngine>(shared: &Shared<E>) -> Result<Value, ApiError> {
    let now = crate::query::now_ms();
    let timers: Vec<Value> = shared
        .engine
        .timers_due(TIMERS_LISTED)
        .await?
        .iter()
        .map(|t| {
            json!({
                "instance": t.instance.to_string(),
                "process": t.process,
                "version": t.version,
                "element": t.element,
                "due_ms": t.due_ms,
                "due_in_ms": t.due_ms - now,
            })
        })
        .collect();
    Ok(json!({ "timers": timers }))
}

async fn timers<E: ConsoleEngine>(state: State<E>) -> Result<Json<Value>, ApiError> {
    Ok(Json(due_timers(&state).await?))
}
