//! The HTML pages, rendered on the server by maud (no JavaScript, no build step):
//! processes, instances, one instance, the task list, the message buffer, and
//! the forms that act (POSTs carrying the CSRF token, answered by a redirect to
//! the page they came from, or an error page).

use std::sync::Arc;

use axum::extract::rejection::FormRejection;
use axum::extract::{OriginalUri, Path};
use axum::http::{HeaderMap, StatusCode, Uri};
use axum::response::{Html, IntoResponse, Redirect, Response};
use axum::routing::{get, post};
use axum::{Form, Router};
use maud::{html, Markup, PreEscaped, DOCTYPE};
use serde_json::Value;

use super::api::{self, Pairs};
use super::engines::ConsoleEngine;
use super::error::ApiError;
use super::json::{self, Filter};
use super::{Shared, State};
use crate::retry::IncidentId;
use crate::tasklist::TaskId;
use crate::Status;

pub(super) fn routes<E: ConsoleEngine>() -> Router<Arc<Shared<E>>> {
    Router::new()
        .route("/", get(processes::<E>))
        .route("/instances", get(instances::<E>))
        .route("/instances/{id}", get(instance::<E>))
        .route("/tasks", get(tasks::<E>))
        .route("/messages", get(messages::<E>))
        .route("/timers", get(timers::<E>))
        .route(
            "/tasks/{instance}/{number}/{action}",
            post(task_action::<E>),
        )
        .route("/incidents/{instance}/{number}/retry", post(retry::<E>))
        .route("/instances/{id}/cancel", post(cancel::<E>))
}

/// Where the console is mounted (the prefix the service nested it under), so
/// links and redirects work at any prefix.
struct Base(String);

impl Base {
    fn of(original: &Uri, uri: &Uri) -> Base {
        let full = original.path();
        let prefix = match uri.path() {
            "/" => full.trim_end_matches('/'),
            inner => full.strip_suffix(inner).unwrap_or(""),
        };
        Base(prefix.to_string())
    }

    /// `path` under the prefix; the root is the prefix itself (a nested router
    /// answers `/ops`, not `/ops/`).
    fn to(&self, path: &str) -> String {
        match (self.0.is_empty(), path) {
            (false, "/") => self.0.clone(),
            _ => format!("{}{path}", self.0),
        }
    }
}

/// An error as a page.
struct PageError(ApiError, Base);

impl IntoResponse for PageError {
    fn into_response(self) -> Response {
        let PageError(error, base) = self;
        let title = match error.status() {
            StatusCode::NOT_FOUND => "Not found",
            StatusCode::FORBIDDEN => "Refused",
            StatusCode::INTERNAL_SERVER_ERROR => "The engine failed",
            _ => "Bad request",
        };
        let body = html! {
            h1 { (title) }
            p.error { (error.to_string()) }
        };
        (error.status(), layout(&base, title, body)).into_response()
    }
}

type PageResult = Result<Response, PageError>;

const STYLE: &str = "body{font:14px/1.4 system-ui,sans-serif;margin:0;color:#222}\
nav{background:#234;padding:.6em 1em}nav a{color:#fff;margin-right:1.2em;text-decoration:none}\
main{padding:1em 1.5em}table{border-collapse:collapse;margin:.5em 0}\
td,th{border-bottom:1px solid #ddd;padding:.3em .7em;text-align:left;vertical-align:top}\
th{background:#f3f5f7}.error{color:#a00;white-space:pre-wrap}pre{background:#f6f6f6;padding:.6em}\
form.inline{display:inline-block;margin:0 .4em .2em 0}form.filter label{margin-right:.8em}\
.status-running{color:#06c}.status-completed{color:#070}.status-failed,.status-cancelled,.status-terminated{color:#a00}\
.diagram{overflow:auto;border:1px solid #ddd;max-width:100%}textarea{font-family:monospace}";

fn layout(base: &Base, title: &str, body: Markup) -> Html<String> {
    Html(
        html! {
            (DOCTYPE)
            html lang="en" {
                head {
                    meta charset="utf-8";
                    title { (title) " — thresh console" }
                    style { (PreEscaped(STYLE)) }
                }
                body {
                    nav {
                        a href=(base.to("/")) { "Processes" }
                        a href=(base.to("/instances")) { "Instances" }
                        a href=(base.to("/tasks")) { "Tasks" }
                        a href=(base.to("/messages")) { "Messages" }
                        a href=(base.to("/timers")) { "Timers" }
                    }
                    main { (body) }
                }
            }
        }
        .into_string(),
    )
}

fn when(ms: Option<i64>) -> String {
    // UTC, to the second: the same on every node's console.
    let Some(ms) = ms else { return String::new() };
    let secs = ms.div_euclid(1000);
    let (days, rest) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    // Civil from days (Howard Hinnant's algorithm).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!(
        "{y:04}-{m:02}-{d:02} {:02}:{:02}:{:02}",
        rest / 3600,
        rest % 3600 / 60,
        rest % 60
    )
}

async fn processes<E: ConsoleEngine>(
    state: State<E>,
    OriginalUri(original): OriginalUri,
    uri: Uri,
) -> PageResult {
    let base = Base::of(&original, &uri);
    let rows = match api::process_rows(&state).await {
        Ok(rows) => rows,
        Err(e) => return Err(PageError(e, base)),
    };
    let body = html! {
        h1 { "Processes" }
        p { "Engine: " (state.engine.kind()) @if state.read_only { " — read-only console" } }
        table id="processes" {
            tr {
                th { "Process" } th { "Version" } th { "Fingerprint" }
                @for s in Status::ALL { th { (s.as_str()) } }
                th { "With an open incident" }
            }
            @for row in &rows {
                @let name = row["process"].as_str().unwrap_or_default();
                tr {
                    td { a href=(base.to(&format!("/instances?process={}", json::encode(name)))) { (row["name"].as_str().unwrap_or_default()) } }
                    td { (row["version"]) }
                    td { code { (row["fingerprint"].as_str().unwrap_or_default()) } }
                    @for s in Status::ALL {
                        td { a href=(base.to(&format!("/instances?process={}&status={}", json::encode(name), s.as_str()))) { (row["counts"][s.as_str()]) } }
                    }
                    td { a href=(base.to(&format!("/instances?process={}&incident=true", json::encode(name)))) { (row["with_incident"]) } }
                }
            }
        }
    };
    Ok(layout(&base, "Processes", body).into_response())
}

async fn instances<E: ConsoleEngine>(
    state: State<E>,
    OriginalUri(original): OriginalUri,
    uri: Uri,
    query: Pairs,
) -> PageResult {
    let base = Base::of(&original, &uri);
    let fail = |e| PageError(e, Base::of(&original, &uri));
    let mut filter = api::pairs(query)
        .and_then(|p| Filter::parse(&p))
        .map_err(fail)?;
    if filter.process.is_none() {
        filter.process = state.processes.first().map(|p| p.key());
    }
    let Some(name) = filter.process.clone() else {
        let body = html! { h1 { "Instances" } p { "No process is registered with the console." } };
        return Ok(layout(&base, "Instances", body).into_response());
    };
    let process = state.process(&name).map_err(fail)?;
    let page = process.list(&state.engine, &filter).await.map_err(fail)?;
    let sort = match filter.sort {
        crate::query::SortBy::Id => "id",
        crate::query::SortBy::Started => "started",
        crate::query::SortBy::Ended => "ended",
    };
    let body = html! {
        h1 { "Instances of " (name) }
        form.filter method="get" action=(base.to("/instances")) {
            label { "Process " select name="process" {
                @for p in &state.processes { option value=(p.key()) selected[p.key() == name] { (p.key()) } }
            } }
            label { "Status " select name="status" {
                option value="" { "any" }
                @for s in Status::ALL { option value=(s.as_str()) selected[filter.statuses == [s]] { (s.as_str()) } }
            } }
            label { "Waiting at " select name="waiting_at" {
                option value="" { "anywhere" }
                @for e in process.elements() { option value=(e) selected[filter.waiting_at.as_deref() == Some(e)] { (e) } }
            } }
            label { "Business key " input name="key" value=(filter.key.clone().unwrap_or_default()); }
            label { "Incident " select name="incident" {
                option value="" { "either" }
                option value="true" selected[filter.incident == Some(true)] { "open" }
                option value="false" selected[filter.incident == Some(false)] { "none" }
            } }
            label { "Sort " select name="sort" {
                @for s in ["id", "started", "ended"] { option value=(s) selected[s == sort] { (s) } }
            } }
            label { "Order " select name="desc" {
                option value="true" selected[filter.descending] { "newest first" }
                option value="false" selected[!filter.descending] { "oldest first" }
            } }
            label { "Per page " input name="limit" size="4" value=(filter.limit); }
            button type="submit" { "Filter" }
        }
        table id="instances" {
            tr { th { "Id" } th { "Business key" } th { "Status" } th { "Waiting at" } th { "Incidents" } th { "Started (UTC)" } th { "Ended (UTC)" } }
            @for i in &page.items {
                tr {
                    td { a href=(base.to(&format!("/instances/{}", i.id))) { (i.id) } }
                    td { (i.business_key.clone().unwrap_or_default()) }
                    td class=(format!("status-{}", i.status)) { (i.status) }
                    td { (i.waiting_at.join(", ")) }
                    td { (i.incidents) }
                    td { (when(Some(i.started_ms))) }
                    td { (when(i.ended_ms)) }
                }
            }
        }
        @if page.items.is_empty() { p { "No instance matches." } }
        p {
            a href=(base.to(&format!("/instances?{}", filter.query_string(None)))) { "First page" }
            @if let Some(next) = &page.next {
                " · " a id="next" href=(base.to(&format!("/instances?{}", filter.query_string(Some(next))))) { "Next page" }
            }
        }
    };
    Ok(layout(&base, "Instances", body).into_response())
}

fn token_field<E>(state: &Shared<E>) -> Markup {
    html! { input type="hidden" name="csrf" value=(state.token); }
}

fn task_forms<E>(state: &Shared<E>, base: &Base, task: &Value, back: &str) -> Markup {
    let id = task["id"].as_str().unwrap_or_default();
    let action = |a: &str| base.to(&format!("/tasks/{id}/{a}"));
    html! {
        @if !state.read_only {
            form.inline.claim method="post" action=(action("claim")) {
                (token_field(state)) input type="hidden" name="back" value=(back);
                input name="user" placeholder="user" size="8" required;
                button type="submit" { "Claim" }
            }
            @if !task["claimed_by"].is_null() {
                form.inline.unclaim method="post" action=(action("unclaim")) {
                    (token_field(state)) input type="hidden" name="back" value=(back);
                    button type="submit" { "Unclaim" }
                }
            }
            form.inline.complete method="post" action=(action("complete")) {
                (token_field(state)) input type="hidden" name="back" value=(back);
                textarea name="data" rows="2" cols="30" placeholder="{\"field\": \"new value\"}" {}
                button type="submit" { "Complete" }
            }
            form.inline.fail method="post" action=(action("fail")) {
                (token_field(state)) input type="hidden" name="back" value=(back);
                input name="message" placeholder="why" size="10" required;
                button type="submit" { "Fail" }
            }
        }
    }
}

fn task_table<E>(state: &Shared<E>, base: &Base, tasks: &[Value], back: &str) -> Markup {
    html! {
        table id="tasks" {
            tr { th { "Task" } th { "Instance" } th { "Process" } th { "Element" } th { "Assignee" } th { "Groups" } th { "Claimed by" } th { "Priority" } th { "Due (UTC)" } th { "Act" } }
            @for t in tasks {
                @let instance = t["instance"].as_str().unwrap_or_default();
                tr {
                    td { (t["id"].as_str().unwrap_or_default()) }
                    td { a href=(base.to(&format!("/instances/{instance}"))) { (instance) } }
                    td { (t["process"].as_str().unwrap_or_default()) }
                    td { (t["name"].as_str().unwrap_or_default()) }
                    td { (t["assignee"].as_str().unwrap_or_default()) }
                    td { (t["groups"].as_array().map(|g| g.iter().filter_map(Value::as_str).collect::<Vec<_>>().join(", ")).unwrap_or_default()) }
                    td.claimed { (t["claimed_by"].as_str().unwrap_or_default()) }
                    td { (t["priority"]) }
                    td { (when(t["due_ms"].as_i64())) }
                    td { (task_forms(state, base, t, back)) }
                }
            }
        }
        @if tasks.is_empty() { p { "No open task matches." } }
    }
}

async fn instance<E: ConsoleEngine>(
    state: State<E>,
    OriginalUri(original): OriginalUri,
    uri: Uri,
    Path(id): Path<String>,
) -> PageResult {
    let base = Base::of(&original, &uri);
    let fail = |e| PageError(e, Base::of(&original, &uri));
    let view = api::instance_view(&state, &id).await.map_err(fail)?;
    let i = &view["instance"];
    let id = i["id"].as_str().unwrap_or_default().to_string();
    let svg = api::picture(&state, &id).await.ok();
    let back = format!("/instances/{id}");
    let data = serde_json::to_string_pretty(&i["data"]).unwrap_or_default();
    let tasks = view["tasks"].as_array().cloned().unwrap_or_default();
    let incidents = view["incidents"].as_array().cloned().unwrap_or_default();
    let body = html! {
        h1 { "Instance " (id) }
        table id="summary" {
            tr { th { "Process" } td { a href=(base.to(&format!("/instances?process={}", json::encode(i["process"].as_str().unwrap_or_default())))) { (i["process"].as_str().unwrap_or_default()) } } }
            tr { th { "Status" } td id="status" class=(format!("status-{}", i["status"].as_str().unwrap_or_default())) { (i["status"].as_str().unwrap_or_default()) } }
            tr { th { "Business key" } td { (i["business_key"].as_str().unwrap_or_default()) } }
            tr { th { "Waiting at" } td id="waiting" { (i["waiting_at"].as_array().map(|w| w.iter().filter_map(Value::as_str).collect::<Vec<_>>().join(", ")).unwrap_or_default()) } }
            tr { th { "Started (UTC)" } td { (when(i["started_ms"].as_i64())) } }
            tr { th { "Ended (UTC)" } td { (when(i["ended_ms"].as_i64())) } }
        }
        @if !state.read_only && i["status"].as_str() == Some("running") {
            form.cancel method="post" action=(base.to(&format!("/instances/{id}/cancel")))
                onsubmit=(format!("return confirm('Cancel instance {id}? Its tokens stop and it ends cancelled.')")) {
                (token_field(&state)) input type="hidden" name="back" value=(back);
                button type="submit" id="cancel" { "Cancel instance" }
            }
        }
        h2 { "Diagram" }
        @match &svg {
            Some(svg) => div.diagram { (PreEscaped(svg)) },
            None => p { "Not drawn: the instance is no longer kept." },
        }
        h2 { "Data" }
        pre id="data" { (data) }
        h2 { "Incidents" }
        @if incidents.is_empty() { p { "None open." } }
        @for inc in &incidents {
            div.incident {
                p { "At " b { (inc["node"].as_str().unwrap_or_default()) } " after " (inc["attempts"]) " attempt(s): " }
                p.error { (inc["error"].as_str().unwrap_or_default()) }
                @if !state.read_only {
                    form.retry method="post" action=(base.to(&format!("/incidents/{}/retry", inc["id"].as_str().unwrap_or_default()))) {
                        (token_field(&state)) input type="hidden" name="back" value=(back);
                        textarea name="data" rows="2" cols="40" placeholder="optional change of the data, as JSON: {\"field\": \"value\"}" {}
                        button type="submit" { "Retry" }
                    }
                }
            }
        }
        h2 { "Open tasks" }
        (task_table(&state, &base, &tasks, &back))
        h2 { "History" }
        @match view["history"].as_array() {
            Some(steps) => table id="history" {
                tr { th { "Track" } th { "Element" } th { "What happened" } }
                @for s in steps {
                    tr { td { (s["track"]) } td { (s["node"].as_str().unwrap_or_default()) } td { code { (s["what"].as_str().unwrap_or_default()) } } }
                }
            },
            None => p { "Not kept here: a durable engine keeps it with keep_history(true); in memory, an instance's handle holds it." },
        }
    };
    Ok(layout(&base, &format!("Instance {id}"), body).into_response())
}

async fn tasks<E: ConsoleEngine>(
    state: State<E>,
    OriginalUri(original): OriginalUri,
    uri: Uri,
    query: Pairs,
) -> PageResult {
    let base = Base::of(&original, &uri);
    let fail = |e| PageError(e, Base::of(&original, &uri));
    let pairs = api::pairs(query).map_err(fail)?;
    let q = api::task_query(&pairs).map_err(fail)?;
    let listed = state.engine.tasks(&q).await.map_err(|e| fail(e.into()))?;
    let listed: Vec<Value> = listed.iter().map(json::task).collect();
    let field = |n: &str| {
        pairs
            .iter()
            .find(|(k, _)| k == n)
            .map(|(_, v)| v.clone())
            .unwrap_or_default()
    };
    let back = match uri.query() {
        Some(q) => format!("/tasks?{q}"),
        None => "/tasks".to_string(),
    };
    let body = html! {
        h1 { "Task list" }
        form.filter method="get" action=(base.to("/tasks")) {
            label { "Assignee " input name="assignee" value=(field("assignee")); }
            label { "Group " input name="group" value=(field("group")); }
            label { "Claimed by " input name="claimed_by" value=(field("claimed_by")); }
            label { "Process " select name="process" {
                option value="" { "any" }
                @for p in &state.processes { option value=(p.key()) selected[field("process") == p.key()] { (p.key()) } }
            } }
            button type="submit" { "Filter" }
        }
        (task_table(&state, &base, &listed, &back))
    };
    Ok(layout(&base, "Tasks", body).into_response())
}

async fn messages<E: ConsoleEngine>(
    state: State<E>,
    OriginalUri(original): OriginalUri,
    uri: Uri,
) -> Response {
    let base = Base::of(&original, &uri);
    let stats = api::broker(&state);
    let body = html! {
        h1 { "Messages" }
        table id="messages" {
            tr { th { "Buffered now (waiting for a catch)" } td { (stats["buffered"]) } }
            tr { th { "Delivered" } td { (stats["delivered"]) } }
            tr { th { "Expired in the buffer" } td { (stats["expired"]) } }
            tr { th { "Dropped (buffer full)" } td { (stats["dropped_full"]) } }
            tr { th { "Published to a name nothing takes" } td { (stats["unknown"]) } }
        }
        h2 { "Waiting for a catch" }
        table id="buffered" {
            tr { th { "Message" } th { "Key" } th { "Kept for" } th { "Stored" } }
            @for m in stats["messages"].as_array().into_iter().flatten() {
                tr {
                    td { (m["name"].as_str().unwrap_or_default()) }
                    td { (m["key"].as_str().unwrap_or_default()) }
                    td { (format!("{:.1} s", m["expires_in_ms"].as_u64().unwrap_or(0) as f64 / 1000.0)) }
                    td { @if m["stored"] == true { "yes" } @else { "no" } }
                }
            }
        }
        p { "Oldest first, at most " (api::MESSAGES_LISTED) "." }
    };
    layout(&base, "Messages", body).into_response()
}

async fn timers<E: ConsoleEngine>(
    state: State<E>,
    OriginalUri(original): OriginalUri,
    uri: Uri,
) -> Result<Response, ApiError> {
    let base = Base::of(&original, &uri);
    let listed = api::due_timers(&state).await?;
    let body = html! {
        h1 { "Timers" }
        table id="timers" {
            tr { th { "Due (UTC)" } th { "In" } th { "Instance" } th { "Process" } th { "Element" } }
            @for t in listed["timers"].as_array().into_iter().flatten() {
                @let instance = t["instance"].as_str().unwrap_or_default();
                @let due_in = t["due_in_ms"].as_i64().unwrap_or(0);
                tr {
                    td { (when(t["due_ms"].as_i64())) }
                    td { @if due_in < 0 { "overdue " } (span(due_in.unsigned_abs())) }
                    td { a href=(base.to(&format!("/instances/{instance}"))) { (instance) } }
                    td { (t["process"].as_str().unwrap_or_default()) @if let Some(v) = t["version"].as_u64() { " v" (v) } }
                    td { (t["element"].as_str().unwrap_or_default()) }
                }
            }
        }
        p { "Timer catches, boundaries and event sub-process starts of running instances, earliest first, at most " (api::TIMERS_LISTED) "." }
    };
    Ok(layout(&base, "Timers", body).into_response())
}

/// A duration in milliseconds, in its largest whole unit and the next.
fn span(ms: u64) -> String {
    let s = ms / 1000;
    match s {
        0..60 => format!("{s} s"),
        60..3600 => format!("{} min {} s", s / 60, s % 60),
        3600..86_400 => format!("{} h {} min", s / 3600, s % 3600 / 60),
        _ => format!("{} d {} h", s / 86_400, s % 86_400 / 3600),
    }
}

/// A form's fields, the token checked; and where to go back to.
fn form_fields<E: ConsoleEngine>(
    state: &Shared<E>,
    headers: &HeaderMap,
    form: Result<Form<Vec<(String, String)>>, FormRejection>,
) -> Result<(serde_json::Map<String, Value>, String), ApiError> {
    let Form(fields) =
        form.map_err(|e| ApiError::BadRequest(format!("the form does not read: {e}")))?;
    let get = |n: &str| fields.iter().find(|(k, _)| k == n).map(|(_, v)| v.as_str());
    state.check_post(headers, get("csrf"))?;
    // Only a path of this console: never a redirect elsewhere.
    let back = get("back")
        .filter(|b| b.starts_with('/') && !b.starts_with("//") && !b.contains('\\'))
        .unwrap_or("/")
        .to_string();
    let mut map = serde_json::Map::new();
    for (name, value) in &fields {
        match name.as_str() {
            "user" | "message" => {
                map.insert(name.clone(), Value::String(value.clone()));
            }
            "data" if !value.trim().is_empty() => {
                let data = serde_json::from_str(value).map_err(|e| {
                    ApiError::BadRequest(format!("the data change is not JSON: {e}"))
                })?;
                map.insert("data".into(), data);
            }
            _ => {}
        }
    }
    Ok((map, back))
}

async fn task_action<E: ConsoleEngine>(
    state: State<E>,
    OriginalUri(original): OriginalUri,
    uri: Uri,
    headers: HeaderMap,
    Path((instance, number, action)): Path<(String, String, String)>,
    form: Result<Form<Vec<(String, String)>>, FormRejection>,
) -> PageResult {
    let base = Base::of(&original, &uri);
    let fail = |e| PageError(e, Base::of(&original, &uri));
    let (mut map, back) = form_fields(&state, &headers, form).map_err(fail)?;
    let id = TaskId {
        instance: json::instance_id(&instance).map_err(fail)?,
        number: json::number(&number).map_err(fail)?,
    };
    api::act_on_task(&state, id, &action, &mut map)
        .await
        .map_err(fail)?;
    Ok(Redirect::to(&base.to(&back)).into_response())
}

async fn retry<E: ConsoleEngine>(
    state: State<E>,
    OriginalUri(original): OriginalUri,
    uri: Uri,
    headers: HeaderMap,
    Path((instance, number)): Path<(String, String)>,
    form: Result<Form<Vec<(String, String)>>, FormRejection>,
) -> PageResult {
    let base = Base::of(&original, &uri);
    let fail = |e| PageError(e, Base::of(&original, &uri));
    let (mut map, back) = form_fields(&state, &headers, form).map_err(fail)?;
    let id = IncidentId {
        instance: json::instance_id(&instance).map_err(fail)?,
        number: json::number(&number).map_err(fail)?,
    };
    api::retry_incident(&state, id, map.remove("data"))
        .await
        .map_err(fail)?;
    Ok(Redirect::to(&base.to(&back)).into_response())
}

async fn cancel<E: ConsoleEngine>(
    state: State<E>,
    OriginalUri(original): OriginalUri,
    uri: Uri,
    headers: HeaderMap,
    Path(id): Path<String>,
    form: Result<Form<Vec<(String, String)>>, FormRejection>,
) -> PageResult {
    let base = Base::of(&original, &uri);
    let fail = |e| PageError(e, Base::of(&original, &uri));
    let (_, back) = form_fields(&state, &headers, form).map_err(fail)?;
    api::cancel_instance(&state, &id).await.map_err(fail)?;
    Ok(Redirect::to(&base.to(&back)).into_response())
}

/// Any other path: a 404 page.
pub(super) async fn not_found(OriginalUri(original): OriginalUri, uri: Uri) -> Response {
    let base = Base::of(&original, &uri);
    let message = format!("the console has no page `{}`", uri.path());
    PageError(ApiError::NotFound(message), base).into_response()
}
