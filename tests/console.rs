//! The console's JSON API over HTTP (feature `console`): every endpoint, on the
//! in-memory engine and on SQLite, answered by the router itself (tower's
//! `oneshot`, no server) — bad input, CSRF refusal and the read-only mode included.
//!
//! `cargo test --features console --test console`

use std::time::Duration;

use axum::body::Body;
use axum::http::{Request, StatusCode};
use http_body_util::BodyExt;
use serde_json::{json, Value};
use thresh::console::axum;
use thresh::console::{self, ConsoleEngine};
use thresh::{DurableEngine, Engine, EngineConfig};
use tower::ServiceExt;

#[path = "common/console_order.rs"]
mod order;
use order::ORDER;

#[path = "console/cancel.rs"]
mod cancel;
#[cfg(feature = "postgres")]
#[path = "console/nodes.rs"]
mod nodes;
#[path = "console/openapi.rs"]
mod openapi;
#[path = "console/timers.rs"]
mod timers;
use cancel::{cancels_an_instance_through_its_page, cancels_an_instance_through_the_api};
use timers::lists_armed_timers;

/// A console over `engine` with ORDER, and its CSRF token.
struct Console {
    router: axum::Router,
    token: String,
    /// The engine's kind (`ConsoleEngine::kind`).
    kind: &'static str,
}

impl Console {
    async fn new<E: ConsoleEngine>(engine: E, read_only: bool) -> Console {
        let kind = engine.kind();
        let mut c = console::router(engine).process(&ORDER);
        if read_only {
            c = c.read_only();
        }
        let router = c.into_router();
        let (status, csrf) = get(&router, "/api/csrf").await;
        assert_eq!(status, StatusCode::OK);
        assert_eq!(csrf["read_only"], read_only);
        let token = csrf["token"].as_str().expect("a token").to_string();
        assert_eq!(token.len(), 32);
        Console {
            router,
            token,
            kind,
        }
    }

    async fn get(&self, uri: &str) -> (StatusCode, Value) {
        get(&self.router, uri).await
    }

    /// A POST with the console's token.
    async fn post(&self, uri: &str, body: &str) -> (StatusCode, Value) {
        post(&self.router, uri, Some(&self.token), body).await
    }

    async fn start(&self, amount: u32, key: Option<&str>) -> String {
        let body = json!({ "process": "ORDER", "business_key": key, "data": { "amount": amount, "card": "", "approved": false } });
        let (status, answer) = self.post("/api/instances", &body.to_string()).await;
        assert_eq!(status, StatusCode::CREATED, "{answer}");
        answer["id"].as_str().expect("an id").to_string()
    }

    /// Wait until `uri` answers something `ready` accepts (an in-memory instance is
    /// listed once it rests; a task opens once its token arrives).
    async fn until(&self, uri: &str, ready: impl Fn(&Value) -> bool) -> Value {
        tokio::time::timeout(Duration::from_secs(20), async {
            loop {
                let (status, answer) = self.get(uri).await;
                if status == StatusCode::OK && ready(&answer) {
                    return answer;
                }
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
        })
        .await
        .unwrap_or_else(|_| panic!("{uri} never answered as awaited"))
    }
}

async fn send(router: &axum::Router, request: Request<Body>) -> (StatusCode, Value) {
    let response = router.clone().oneshot(request).await.expect("infallible");
    let status = response.status();
    let json_type = response
        .headers()
        .get("content-type")
        .is_some_and(|t| t.to_str().unwrap_or("").starts_with("application/json"));
    let bytes = response
        .into_body()
        .collect()
        .await
        .expect("a body")
        .to_bytes();
    let text = String::from_utf8_lossy(&bytes).to_string();
    match json_type {
        true => (
            status,
            serde_json::from_str(&text).expect("JSON as announced"),
        ),
        false => (status, Value::String(text)),
    }
}

async fn get(router: &axum::Router, uri: &str) -> (StatusCode, Value) {
    let request = Request::get(uri).body(Body::empty()).expect("a request");
    send(router, request).await
}

async fn post(
    router: &axum::Router,
    uri: &str,
    token: Option<&str>,
    body: &str,
) -> (StatusCode, Value) {
    let mut request = Request::post(uri).header("content-type", "application/json");
    if let Some(token) = token {
        request = request.header("x-csrf-token", token);
    }
    send(
        router,
        request
            .body(Body::from(body.to_string()))
            .expect("a request"),
    )
    .await
}

/// An error answer: its status, and JSON naming its kind with a message.
fn refused(answer: &(StatusCode, Value), status: StatusCode, says: &str) {
    assert_eq!(answer.0, status, "{}", answer.1);
    let message = answer.1["message"].as_str().expect("a message");
    assert!(message.contains(says), "`{message}` should say `{says}`");
    assert!(answer.1["error"].is_string());
}

fn memory() -> Engine {
    Engine::with_config(EngineConfig {
        keep_ended: 100,
        ..EngineConfig::default()
    })
}

async fn sqlite() -> (DurableEngine, std::path::PathBuf) {
    let path = std::env::temp_dir().join(format!(
        "thresh-console-{}-{}.db",
        std::process::id(),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos()
    ));
    let engine = Engine::open(&path).await.expect("a store");
    engine.register(&ORDER).expect("registered");
    // The instance page shows a stored history.
    engine.keep_history(true);
    (engine, path)
}

/// Both engines, each test the same.
macro_rules! on_both {
    ($($name:ident),* $(,)?) => {
        mod memory {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $name() {
                    super::$name(super::memory()).await;
                }
            )*
        }
        mod sqlite {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $name() {
                    let (engine, path) = super::sqlite().await;
                    super::$name(engine.clone()).await;
                    let _ = engine.shutdown(std::time::Duration::from_secs(5)).await;
                    let _ = std::fs::remove_file(path);
                }
            )*
        }
    };
}

on_both!(
    shows_each_version_on_its_own,
    starts_lists_and_pages_instances,
    lists_processes_messages_and_one_instance,
    claims_completes_and_retries_through_the_task_list,
    fails_a_task,
    refuses_bad_input_with_a_clear_error,
    refuses_a_post_without_the_token_or_in_read_only_mode,
    pages_show_and_act_through_forms,
    cancels_an_instance_through_the_api,
    cancels_an_instance_through_its_page,
    lists_armed_timers,
);

async fn starts_lists_and_pages_instances<E: ConsoleEngine>(engine: E) {
    let c = Console::new(engine, false).await;
    let a = c.start(10, Some("A-1")).await;
    c.start(20, None).await;
    c.start(30, None).await;
    let all = c
        .until("/api/instances?process=ORDER", |a| {
            let items = a["items"].as_array().unwrap();
            // A durable instance is listed from its first checkpoint, before its
            // token reaches approve.
            items.len() == 3 && items.iter().all(|i| i["waiting_at"] == json!(["approve"]))
        })
        .await;
    assert!(all["items"]
        .as_array()
        .unwrap()
        .iter()
        .all(|i| i["status"] == "running"));
    // Newest first by default.
    assert_eq!(all["items"][2]["id"], a.as_str());
    assert!(all["next"].is_null());
    // By business key.
    let (_, keyed) = c.get("/api/instances?process=ORDER&key=A-1").await;
    assert_eq!(keyed["items"].as_array().unwrap().len(), 1);
    assert_eq!(keyed["items"][0]["id"], a.as_str());
    assert_eq!(keyed["items"][0]["data"]["amount"], 10);
    let tasks = c
        .until("/api/tasks", |t| t.as_array().unwrap().len() == 3)
        .await;
    let keyed_task = tasks
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["instance"] == a.as_str());
    assert_eq!(keyed_task.expect("its task")["business_key"], "A-1");
    // Waiting at, status, incident.
    let (_, at) = c
        .get("/api/instances?process=ORDER&waiting_at=approve&status=running&incident=false")
        .await;
    assert_eq!(at["items"].as_array().unwrap().len(), 3);
    let (_, at) = c
        .get("/api/instances?process=ORDER&waiting_at=charge")
        .await;
    assert_eq!(at["items"].as_array().unwrap().len(), 0);
    let (_, failed) = c
        .get("/api/instances?process=ORDER&status=failed,completed")
        .await;
    assert_eq!(failed["items"].as_array().unwrap().len(), 0);
    // Pages of two, largest id first: the second page is the rest.
    let (status, first) = c
        .get("/api/instances?process=ORDER&limit=2&desc=true")
        .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(first["items"].as_array().unwrap().len(), 2);
    assert_eq!(first["items"][1]["data"]["amount"], 20);
    let next = first["next"].as_str().expect("a next page");
    let (status, second) = c
        .get(&format!(
            "/api/instances?process=ORDER&limit=2&desc=true&after={next}"
        ))
        .await;
    assert_eq!(status, StatusCode::OK, "{second}");
    assert_eq!(second["items"].as_array().unwrap().len(), 1);
    assert_eq!(second["items"][0]["id"], a.as_str());
}

async fn lists_processes_messages_and_one_instance<E: ConsoleEngine>(engine: E) {
    let c = Console::new(engine, false).await;
    let id = c.start(10, None).await;
    c.until("/api/tasks?group=sales", |t| {
        t.as_array().unwrap().len() == 1
    })
    .await;
    let one = c.until(&format!("/api/instances/{id}"), |_| true).await;
    assert_eq!(one["instance"]["id"], id.as_str());
    assert_eq!(one["instance"]["process"], "ORDER");
    assert_eq!(one["tasks"][0]["element"], "approve");
    assert!(one["tasks"][0]["business_key"].is_null());
    assert_eq!(one["incidents"], json!([]));
    // A durable engine that keeps histories gives the instance's from its store
    // (up to its last checkpoint); the in-memory one has none to read by id.
    match c.kind {
        "durable" => {
            let history = c
                .until(&format!("/api/instances/{id}"), |one| {
                    one["history"]
                        .as_array()
                        .is_some_and(|h| h.iter().any(|s| s["node"] == "approve"))
                })
                .await;
            let steps = history["history"].as_array().unwrap();
            assert_eq!(steps[0]["node"], "s");
            assert_eq!(steps[0]["what"], "Started");
            let (status, page) = page(&c.router, &format!("/instances/{id}")).await;
            assert_eq!(status, StatusCode::OK);
            assert!(page.contains("id=\"history\""), "{page}");
        }
        _ => assert!(one["history"].is_null(), "{one}"),
    }
    // Its number alone names it too.
    let (status, _) = c.get(&format!("/api/instances/{}", &id[1..])).await;
    assert_eq!(status, StatusCode::OK);
    let processes = c
        .until("/api/processes", |p| p[0]["counts"]["running"] == 1)
        .await;
    assert_eq!(processes[0]["name"], "ORDER");
    assert_eq!(processes[0]["with_incident"], 0);
    assert!(processes[0]["elements"]
        .as_array()
        .unwrap()
        .contains(&json!("approve")));
    let (status, svg) = c.get(&format!("/api/instances/{id}/diagram.svg")).await;
    assert_eq!(status, StatusCode::OK);
    let svg = svg.as_str().unwrap();
    assert!(svg.starts_with("<svg") || svg.starts_with("<?xml"), "{svg}");
    let (status, messages) = c.get("/api/messages").await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(messages["buffered"], 0);
    assert_eq!(messages["messages"], json!([]));
}

async fn claims_completes_and_retries_through_the_task_list<E: ConsoleEngine>(engine: E) {
    let c = Console::new(engine, false).await;
    let id = c.start(10, None).await;
    let tasks = c
        .until("/api/tasks?group=sales", |t| {
            t.as_array().unwrap().len() == 1
        })
        .await;
    let task = tasks[0]["id"].as_str().unwrap().to_string();
    assert_eq!(task, format!("{id}/1"));
    let (status, one) = c.get(&format!("/api/tasks/{task}")).await;
    assert_eq!(
        (status, &one["element"]),
        (StatusCode::OK, &json!("approve"))
    );
    // Claimed by ann; bob cannot; unclaimed, bob can.
    let (status, claimed) = c
        .post(&format!("/api/tasks/{task}/claim"), r#"{"user":"ann"}"#)
        .await;
    assert_eq!(
        (status, &claimed["claimed_by"]),
        (StatusCode::OK, &json!("ann"))
    );
    let bob = c
        .post(&format!("/api/tasks/{task}/claim"), r#"{"user":"bob"}"#)
        .await;
    refused(&bob, StatusCode::CONFLICT, "claimed by `ann`");
    let (status, _) = c.post(&format!("/api/tasks/{task}/unclaim"), "").await;
    assert_eq!(status, StatusCode::OK);
    let (status, claimed) = c
        .post(&format!("/api/tasks/{task}/claim"), r#"{"user":"bob"}"#)
        .await;
    assert_eq!(
        (status, &claimed["claimed_by"]),
        (StatusCode::OK, &json!("bob"))
    );
    // A change that does not read as an Order changes nothing.
    let wrong = c
        .post(
            &format!("/api/tasks/{task}/complete"),
            r#"{"data":{"card":5}}"#,
        )
        .await;
    refused(
        &wrong,
        StatusCode::UNPROCESSABLE_ENTITY,
        "does not read as the data of process `ORDER`",
    );
    let (status, still) = c.get(&format!("/api/tasks/{task}")).await;
    assert_eq!(
        (status, &still["claimed_by"]),
        (StatusCode::OK, &json!("bob"))
    );
    // Approved without a card: the charge opens an incident.
    let (status, _) = c
        .post(
            &format!("/api/tasks/{task}/complete"),
            r#"{"data":{"approved":true}}"#,
        )
        .await;
    assert_eq!(status, StatusCode::OK);
    let gone = c.get(&format!("/api/tasks/{task}")).await;
    refused(&gone, StatusCode::NOT_FOUND, "no open task");
    let incidents = c
        .until("/api/incidents", |i| i.as_array().unwrap().len() == 1)
        .await;
    assert_eq!(incidents[0]["node"], "charge");
    let (_, of_order) = c.get("/api/incidents?process=ORDER&limit=1").await;
    assert_eq!(of_order, incidents);
    let (_, processes) = c.get("/api/processes").await;
    assert_eq!(processes[0]["with_incident"], 1);
    let (_, stuck) = c.get("/api/instances?process=ORDER&incident=true").await;
    assert_eq!(stuck["items"][0]["id"], id.as_str());
    assert_eq!(incidents[0]["error"], "no card on file");
    let incident = incidents[0]["id"].as_str().unwrap().to_string();
    let one = c
        .until(&format!("/api/instances/{id}"), |i| {
            i["incidents"].as_array().unwrap().len() == 1
        })
        .await;
    assert_eq!(one["instance"]["data"]["approved"], true);
    // A retry with a change that does not read is refused; with a card it completes.
    let wrong = c
        .post(
            &format!("/api/incidents/{incident}/retry"),
            r#"{"data":{"approved":"yes"}}"#,
        )
        .await;
    refused(&wrong, StatusCode::UNPROCESSABLE_ENTITY, "does not read");
    let other = c
        .post(
            &format!("/api/incidents/{id}/9/retry"),
            r#"{"data":{"card":"4242"}}"#,
        )
        .await;
    refused(&other, StatusCode::NOT_FOUND, "no open incident");
    let (status, _) = c
        .post(
            &format!("/api/incidents/{incident}/retry"),
            r#"{"data":{"card":"4242"}}"#,
        )
        .await;
    assert_eq!(status, StatusCode::OK);
    let done = c
        .until(&format!("/api/instances/{id}"), |i| {
            i["instance"]["status"] == "completed"
        })
        .await;
    assert_eq!(
        done["instance"]["data"],
        json!({ "amount": 10, "card": "4242", "approved": true })
    );
    let again = c
        .post(&format!("/api/incidents/{incident}/retry"), "")
        .await;
    refused(&again, StatusCode::NOT_FOUND, "no open incident");
}

async fn fails_a_task<E: ConsoleEngine>(engine: E) {
    let c = Console::new(engine, false).await;
    let id = c.start(10, None).await;
    let tasks = c
        .until("/api/tasks?process=ORDER", |t| {
            t.as_array().unwrap().len() == 1
        })
        .await;
    let task = tasks[0]["id"].as_str().unwrap().to_string();
    let blank = c
        .post(&format!("/api/tasks/{task}/fail"), r#"{"message":" "}"#)
        .await;
    refused(&blank, StatusCode::BAD_REQUEST, "`message`");
    let (status, _) = c
        .post(
            &format!("/api/tasks/{task}/fail"),
            r#"{"message":"customer withdrew"}"#,
        )
        .await;
    assert_eq!(status, StatusCode::OK);
    let failed = c
        .until("/api/instances?process=ORDER&status=failed", |a| {
            a["items"].as_array().unwrap().len() == 1
        })
        .await;
    assert_eq!(failed["items"][0]["id"], id.as_str());
}

async fn refuses_bad_input_with_a_clear_error<E: ConsoleEngine>(engine: E) {
    let c = Console::new(engine, false).await;
    let id = c.start(10, None).await;
    c.until("/api/tasks", |t| t.as_array().unwrap().len() == 1)
        .await;
    let cases: Vec<((StatusCode, Value), StatusCode, &str)> = vec![
        (c.get("/api/instances").await, StatusCode::BAD_REQUEST, "name the process"),
        (c.get("/api/instances?process=refund").await, StatusCode::BAD_REQUEST, "no process `refund`"),
        (c.get("/api/instances?process=ORDER&status=stuck").await, StatusCode::BAD_REQUEST, "no status `stuck`"),
        (c.get("/api/instances?process=ORDER&limit=0").await, StatusCode::BAD_REQUEST, "`limit`"),
        (c.get("/api/instances?process=ORDER&limit=many").await, StatusCode::BAD_REQUEST, "`limit`"),
        (c.get("/api/instances?process=ORDER&sort=size").await, StatusCode::BAD_REQUEST, "no sort `size`"),
        (c.get("/api/instances?process=ORDER&incident=maybe").await, StatusCode::BAD_REQUEST, "`incident`"),
        (c.get("/api/instances?process=ORDER&colour=red").await, StatusCode::BAD_REQUEST, "unknown parameter `colour`"),
        (c.get("/api/instances?process=ORDER&waiting_at=nowhere").await, StatusCode::BAD_REQUEST, "no element `nowhere`"),
        (c.get("/api/instances?process=ORDER&after=x:y").await, StatusCode::BAD_REQUEST, "bad cursor"),
        (c.get("/api/instances?process=ORDER&sort=started&after=i:a:1:1").await, StatusCode::BAD_REQUEST, "sorted another way"),
        (c.get("/api/instances/i999999").await, StatusCode::NOT_FOUND, "no instance i999999"),
        (c.get("/api/instances/bogus").await, StatusCode::NOT_FOUND, "not an instance id"),
        (c.get("/api/instances/i999999/diagram.svg").await, StatusCode::NOT_FOUND, "no instance"),
        (c.get("/api/tasks?colour=red").await, StatusCode::BAD_REQUEST, "unknown parameter `colour`"),
        (c.get("/api/tasks?instance=x").await, StatusCode::BAD_REQUEST, "not an instance id"),
        (c.get(&format!("/api/tasks/{id}/99")).await, StatusCode::NOT_FOUND, "no open task"),
        (c.get(&format!("/api/tasks/{id}/one")).await, StatusCode::NOT_FOUND, "not a task or incident number"),
        (c.post(&format!("/api/tasks/{id}/1/claim"), "{").await, StatusCode::BAD_REQUEST, "not JSON"),
        (c.post(&format!("/api/tasks/{id}/1/claim"), "[1]").await, StatusCode::BAD_REQUEST, "not an object"),
        (c.post(&format!("/api/tasks/{id}/1/claim"), "{}").await, StatusCode::BAD_REQUEST, "`user`"),
        (c.post(&format!("/api/tasks/{id}/1/claim"), r#"{"user":7}"#).await, StatusCode::BAD_REQUEST, "`user` is a string"),
        (c.post(&format!("/api/tasks/{id}/1/approve"), "{}").await, StatusCode::NOT_FOUND, "no task action `approve`"),
        (c.post(&format!("/api/tasks/{id}/99/complete"), "{}").await, StatusCode::NOT_FOUND, "no open task"),
        (c.post(&format!("/api/incidents/{id}/1/retry"), "").await, StatusCode::NOT_FOUND, "no open incident"),
        (c.post("/api/incidents/i999999/1/retry", r#"{"data":{}}"#).await, StatusCode::NOT_FOUND, "no open incident"),
        (c.get("/api/incidents?status=running").await, StatusCode::BAD_REQUEST, "incidents are listed by"),
        (c.get("/api/incidents?process=refund").await, StatusCode::BAD_REQUEST, "no process `refund`"),
        (c.post("/api/instances", r#"{"data":{}}"#).await, StatusCode::BAD_REQUEST, "`process`"),
        (c.post("/api/instances", r#"{"process":"ORDER"}"#).await, StatusCode::BAD_REQUEST, "`data`"),
        (c.post("/api/instances", r#"{"process":"refund","data":{}}"#).await, StatusCode::BAD_REQUEST, "no process `refund`"),
        (c.post("/api/instances", r#"{"process":"ORDER","data":{"amount":"ten"}}"#).await, StatusCode::UNPROCESSABLE_ENTITY, "does not read as the data"),
        (c.post("/api/instances", r#"{"process":"ORDER","business_key":"","data":{"amount":1,"card":"","approved":false}}"#).await, StatusCode::BAD_REQUEST, "bad business key"),
    ];
    for (answer, status, says) in &cases {
        refused(answer, *status, says);
    }
    // An unknown path is a 404 page.
    let (status, page) = c.get("/api/nothing/here").await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    assert!(page.as_str().unwrap().contains("Not found"), "{page}");
}

async fn refuses_a_post_without_the_token_or_in_read_only_mode<E: ConsoleEngine>(engine: E) {
    let c = Console::new(engine.clone(), false).await;
    let start =
        json!({ "process": "ORDER", "data": { "amount": 1, "card": "", "approved": false } })
            .to_string();
    let none = post(&c.router, "/api/instances", None, &start).await;
    refused(&none, StatusCode::FORBIDDEN, "CSRF token");
    let wrong = post(
        &c.router,
        "/api/instances",
        Some("0123456789abcdef0123456789abcdef"),
        &start,
    )
    .await;
    refused(&wrong, StatusCode::FORBIDDEN, "not this console's");
    // Another console's token is not this one's.
    let other = Console::new(engine.clone(), false).await;
    assert_ne!(other.token, c.token);
    let foreign = post(&c.router, "/api/instances", Some(&other.token), &start).await;
    refused(&foreign, StatusCode::FORBIDDEN, "not this console's");
    // Replicas given one token accept each other's forms; a short one is ignored.
    let shared = "a-secret-of-the-service-0123456789";
    let replica = |token: &str| {
        console::router(engine.clone())
            .process(&ORDER)
            .csrf_token(token)
            .into_router()
    };
    let (_, given) = get(&replica(shared), "/api/csrf").await;
    assert_eq!(given["token"], shared);
    let (_, short) = get(&replica("short"), "/api/csrf").await;
    assert_eq!(short["token"].as_str().unwrap().len(), 32);
    let bad = json!({ "process": "ORDER", "data": { "amount": "x" } }).to_string();
    let across = post(&replica(shared), "/api/instances", Some(shared), &bad).await;
    refused(&across, StatusCode::UNPROCESSABLE_ENTITY, "does not read");
    // Nothing was started.
    let (_, listed) = c.get("/api/processes").await;
    assert_eq!(listed[0]["counts"]["running"], 0);
    let id = c.start(1, None).await;
    let tasks = c
        .until("/api/tasks", |t| t.as_array().unwrap().len() == 1)
        .await;
    let task = tasks[0]["id"].as_str().unwrap().to_string();
    let claim = post(
        &c.router,
        &format!("/api/tasks/{task}/claim"),
        None,
        r#"{"user":"ann"}"#,
    )
    .await;
    refused(&claim, StatusCode::FORBIDDEN, "CSRF token");
    // Read-only: it shows, it does not act, token or not.
    let ro = Console::new(engine, true).await;
    let (status, _) = ro.get(&format!("/api/instances/{id}")).await;
    assert_eq!(status, StatusCode::OK);
    for (uri, body) in [
        (
            format!("/api/tasks/{task}/claim"),
            r#"{"user":"ann"}"#.to_string(),
        ),
        (format!("/api/tasks/{task}/complete"), "{}".to_string()),
        ("/api/instances".to_string(), start.clone()),
    ] {
        refused(
            &ro.post(&uri, &body).await,
            StatusCode::FORBIDDEN,
            "read-only",
        );
    }
    let (_, still) = c.get(&format!("/api/tasks/{task}")).await;
    assert!(still["claimed_by"].is_null(), "{still}");
}

/// A form POST to `uri` (fields url-encoded by hand: plain ASCII here).
async fn form(
    router: &axum::Router,
    uri: &str,
    fields: &[(&str, &str)],
) -> (StatusCode, String, String) {
    let body: Vec<String> = fields
        .iter()
        .map(|(k, v)| {
            format!(
                "{k}={}",
                v.replace('%', "%25")
                    .replace(' ', "+")
                    .replace('{', "%7B")
                    .replace('}', "%7D")
                    .replace('"', "%22")
                    .replace(':', "%3A")
                    .replace('/', "%2F")
            )
        })
        .collect();
    let request = Request::post(uri)
        .header("content-type", "application/x-www-form-urlencoded")
        .body(Body::from(body.join("&")))
        .expect("a request");
    let response = router.clone().oneshot(request).await.expect("infallible");
    let status = response.status();
    let location = response
        .headers()
        .get("location")
        .map(|l| l.to_str().unwrap().to_string())
        .unwrap_or_default();
    let bytes = response
        .into_body()
        .collect()
        .await
        .expect("a body")
        .to_bytes();
    (
        status,
        location,
        String::from_utf8_lossy(&bytes).to_string(),
    )
}

async fn page(router: &axum::Router, uri: &str) -> (StatusCode, String) {
    let (status, body) = get(router, uri).await;
    (status, body.as_str().expect("a page, not JSON").to_string())
}

async fn pages_show_and_act_through_forms<E: ConsoleEngine>(engine: E) {
    let c = Console::new(engine, false).await;
    let id = c.start(10, Some("A-1")).await;
    let tasks = c
        .until("/api/tasks", |t| t.as_array().unwrap().len() == 1)
        .await;
    let task = tasks[0]["id"].as_str().unwrap().to_string();
    // Nested under a prefix, as a service mounts it: links carry the prefix.
    let app = axum::Router::new().nest("/ops", c.router.clone());
    let (status, home) = page(&app, "/ops").await;
    assert_eq!(status, StatusCode::OK);
    assert!(
        home.contains("href=\"/ops/instances?process=ORDER\""),
        "{home}"
    );
    let (status, list) = page(&app, "/ops/instances?process=ORDER&waiting_at=approve").await;
    assert_eq!(status, StatusCode::OK);
    assert!(
        list.contains(&format!("href=\"/ops/instances/{id}\"")),
        "{list}"
    );
    assert!(list.contains("A-1"));
    let (status, none) = page(&app, "/ops/instances?process=ORDER&status=failed").await;
    assert_eq!(status, StatusCode::OK);
    assert!(none.contains("No instance matches."));
    let (status, one) = page(&app, &format!("/ops/instances/{id}")).await;
    assert_eq!(status, StatusCode::OK);
    assert!(one.contains("<svg"), "the diagram is inline");
    assert!(
        one.contains("&quot;amount&quot;: 10"),
        "the data is shown: {one}"
    );
    assert!(one.contains(&format!("action=\"/ops/tasks/{task}/claim\"")));
    assert!(
        one.contains(&format!("value=\"{}\"", c.token)),
        "forms carry the token"
    );
    let (status, list) = page(&app, "/ops/tasks?group=sales").await;
    assert_eq!(status, StatusCode::OK);
    assert!(list.contains(&task));
    let (status, messages) = page(&app, "/ops/messages").await;
    assert_eq!(status, StatusCode::OK);
    assert!(messages.contains("Buffered now"));
    // Bad input: a 404 or 400 page, not a trace.
    for (uri, status, says) in [
        (
            "/ops/instances/i999999".to_string(),
            StatusCode::NOT_FOUND,
            "no instance i999999",
        ),
        (
            "/ops/nowhere".to_string(),
            StatusCode::NOT_FOUND,
            "no page `/nowhere`",
        ),
        (
            "/ops/instances?process=ORDER&status=stuck".to_string(),
            StatusCode::BAD_REQUEST,
            "no status `stuck`",
        ),
        (
            "/ops/instances?process=refund".to_string(),
            StatusCode::BAD_REQUEST,
            "no process `refund`",
        ),
        (
            "/ops/tasks?colour=red".to_string(),
            StatusCode::BAD_REQUEST,
            "unknown parameter",
        ),
    ] {
        let (got, body) = page(&app, &uri).await;
        assert_eq!(got, status, "{uri}: {body}");
        assert!(body.contains(says), "{uri}: {body}");
        assert!(body.contains("<h1>"), "a page: {body}");
    }
    // A form without the token is refused, and changes nothing.
    let claim = format!("/ops/tasks/{task}/claim");
    let (status, _, body) = form(&app, &claim, &[("user", "ann")]).await;
    assert_eq!(status, StatusCode::FORBIDDEN, "{body}");
    let (status, _, _) = form(&app, &claim, &[("user", "ann"), ("csrf", "nope")]).await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    let (_, still) = c.get(&format!("/api/tasks/{task}")).await;
    assert!(still["claimed_by"].is_null());
    // With it: done, and back to the page it came from (never to another site).
    let back = format!("/instances/{id}");
    let (status, location, _) = form(
        &app,
        &claim,
        &[("csrf", &c.token), ("back", &back), ("user", "ann")],
    )
    .await;
    assert_eq!(
        (status, location.as_str()),
        (StatusCode::SEE_OTHER, format!("/ops{back}").as_str())
    );
    let (_, claimed) = c.get(&format!("/api/tasks/{task}")).await;
    assert_eq!(claimed["claimed_by"], "ann");
    let (_, location, _) = form(
        &app,
        &format!("/ops/tasks/{task}/unclaim"),
        &[("csrf", &c.token), ("back", "//evil.example/")],
    )
    .await;
    assert_eq!(location, "/ops");
    // A completion whose data does not read: a 422 page.
    let complete = format!("/ops/tasks/{task}/complete");
    let (status, _, body) = form(
        &app,
        &complete,
        &[("csrf", &c.token), ("data", r#"{"amount":"ten"}"#)],
    )
    .await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{body}");
    let (status, _, body) = form(&app, &complete, &[("csrf", &c.token), ("data", "{")]).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    assert!(body.contains("not JSON"));
    let (status, _, _) = form(
        &app,
        &complete,
        &[
            ("csrf", &c.token),
            ("data", r#"{"approved":true,"card":"4242"}"#),
        ],
    )
    .await;
    assert_eq!(status, StatusCode::SEE_OTHER);
    c.until(&format!("/api/instances/{id}"), |i| {
        i["instance"]["status"] == "completed"
    })
    .await;
}

/// `/metrics` serves what the application's exporter renders, or says it has none.
#[tokio::test]
async fn serves_the_exporters_metrics_when_given_one() {
    let engine = memory();
    let without = console::router(engine.clone())
        .process(&ORDER)
        .into_router();
    let (status, answer) = get(&without, "/metrics").await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    assert!(answer["message"]
        .as_str()
        .unwrap()
        .contains("Console::metrics"));
    let calls = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let counted = calls.clone();
    let with = console::router(engine)
        .process(&ORDER)
        .metrics(move || {
            let n = counted.fetch_add(1, std::sync::atomic::Ordering::SeqCst) + 1;
            format!("# TYPE renders counter\nrenders {n}\n")
        })
        .into_router();
    let request = Request::get("/metrics").body(Body::empty()).unwrap();
    let response = with.clone().oneshot(request).await.unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    let content_type = response.headers()["content-type"]
        .to_str()
        .unwrap()
        .to_string();
    assert!(
        content_type.starts_with("text/plain; version=0.0.4"),
        "{content_type}"
    );
    let body = response.into_body().collect().await.unwrap().to_bytes();
    assert_eq!(&body[..], b"# TYPE renders counter\nrenders 1\n");
    let (_, again) = get(&with, "/metrics").await;
    assert_eq!(
        again.as_str().unwrap(),
        "# TYPE renders counter\nrenders 2\n"
    );
}

/// The messages page and API list what waits in the buffer.
#[tokio::test]
async fn lists_the_buffered_messages() {
    let engine = memory();
    engine
        .publish_message_ttl("paid", "o-1", 5_u32, Duration::from_secs(600))
        .await
        .unwrap();
    let c = Console::new(engine, false).await;
    let (status, messages) = c.get("/api/messages").await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(messages["buffered"], 1);
    assert_eq!(messages["messages"][0]["name"], "paid");
    assert_eq!(messages["messages"][0]["key"], "o-1");
    assert_eq!(messages["messages"][0]["stored"], false);
    let left = messages["messages"][0]["expires_in_ms"].as_u64().unwrap();
    assert!(left > 500_000 && left <= 600_000, "{left}");
    let (status, page) = page(&c.router, "/messages").await;
    assert_eq!(status, StatusCode::OK);
    assert!(page.contains("<td>paid</td><td>o-1</td>"), "{page}");
}

#[derive(
    Clone, Debug, Default, PartialEq, thresh::ProcessData, serde::Serialize, serde::Deserialize,
)]
pub struct Ticket {
    pub title: String,
    pub done: bool,
}

#[derive(
    Clone, Debug, Default, PartialEq, thresh::ProcessData, serde::Serialize, serde::Deserialize,
)]
pub struct TicketV2 {
    pub title: String,
    pub done: bool,
    pub priority: u8,
}

thresh::process! {
    pub TICKET_V1: Ticket = "ticket" version 1 {
        start s;
        user work;
        end e;
        s -> work -> e;
    }
    pub TICKET_V2: TicketV2 = "ticket" version 2 {
        start s;
        user triage;
        user work;
        end e;
        s -> triage -> work -> e;
    }
}

/// Two versions of one process, each with its own data type: registered side by
/// side, named `ticket` and `ticket@2`, each listing its own instances; a task of
/// each is completed with a change its own version's data type reads.
async fn shows_each_version_on_its_own<E: ConsoleEngine>(engine: E) {
    let kind = engine.kind();
    let router = console::router(engine)
        .process(&TICKET_V1)
        .process(&TICKET_V2)
        .into_router();
    let (_, csrf) = get(&router, "/api/csrf").await;
    let c = Console {
        router,
        token: csrf["token"].as_str().expect("a token").to_string(),
        kind,
    };
    let (_, processes) = c.get("/api/processes").await;
    let keys: Vec<(&str, u64)> = processes
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            (
                p["process"].as_str().unwrap(),
                p["version"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(keys, [("ticket", 1), ("ticket@2", 2)]);
    let one = json!({ "process": "ticket", "data": { "title": "old", "done": false } });
    let (status, old) = c.post("/api/instances", &one.to_string()).await;
    assert_eq!(status, StatusCode::CREATED, "{old}");
    let two =
        json!({ "process": "ticket@2", "data": { "title": "new", "done": false, "priority": 3 } });
    let (status, new) = c.post("/api/instances", &two.to_string()).await;
    assert_eq!(status, StatusCode::CREATED, "{new}");
    // V1's data does not read as V2's (no priority): refused.
    let wrong = json!({ "process": "ticket@2", "data": { "title": "x", "done": false } });
    refused(
        &c.post("/api/instances", &wrong.to_string()).await,
        StatusCode::UNPROCESSABLE_ENTITY,
        "priority",
    );
    let v1 = c
        .until("/api/instances?process=ticket", |a| {
            a["items"].as_array().unwrap().len() == 1
                && a["items"][0]["waiting_at"] == json!(["work"])
        })
        .await;
    assert_eq!(v1["items"][0]["id"], old["id"]);
    assert_eq!(v1["items"][0]["version"], 1);
    let v2 = c
        .until("/api/instances?process=ticket@2", |a| {
            a["items"].as_array().unwrap().len() == 1
                && a["items"][0]["waiting_at"] == json!(["triage"])
        })
        .await;
    assert_eq!(v2["items"][0]["id"], new["id"]);
    assert_eq!(
        (
            v2["items"][0]["process"].as_str(),
            v2["items"][0]["version"].as_u64()
        ),
        (Some("ticket@2"), Some(2))
    );
    let (status, one_view) = c
        .get(&format!("/api/instances/{}", new["id"].as_str().unwrap()))
        .await;
    assert_eq!(status, StatusCode::OK, "{one_view}");
    assert_eq!(one_view["instance"]["process"], "ticket@2");
    // Each task completed with its own version's data.
    let tasks = c
        .until("/api/tasks", |t| t.as_array().unwrap().len() == 2)
        .await;
    for task in tasks.as_array().unwrap() {
        let id = task["id"].as_str().unwrap();
        let change = match task["element"].as_str().unwrap() {
            "triage" => json!({ "data": { "priority": 9 } }),
            _ => json!({ "data": { "done": true } }),
        };
        let (status, answer) = c
            .post(&format!("/api/tasks/{id}/complete"), &change.to_string())
            .await;
        assert_eq!(status, StatusCode::OK, "{answer}");
    }
    let v2 = c
        .until("/api/instances?process=ticket@2", |a| {
            a["items"][0]["waiting_at"] == json!(["work"])
        })
        .await;
    assert_eq!(v2["items"][0]["data"]["priority"], 9);
}
