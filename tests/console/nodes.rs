//! The console on a node of several (feature `postgres`): node A's console lists
//! the instances node B runs, and acts on them through the store and the owning
//! node — retries B's incident with a data change, completes B's task, cancels B's
//! instance — each seen to take effect in what A's console shows next.
//!
//! `cargo test --features "console postgres" --test console nodes`

use super::*;
use thresh::NodeConfig;

async fn node(schema: &str, name: &str) -> DurableEngine {
    let url = format!(
        "{}?application_name={schema}",
        thresh::testing::postgres_url()
    );
    let config = NodeConfig {
        schema: schema.to_string(),
        node_id: Some(name.to_string()),
        lease: Duration::from_millis(600),
        poll: Duration::from_millis(50),
        ..NodeConfig::default()
    };
    let engine = DurableEngine::connect_with(&url, config)
        .await
        .expect("connect");
    engine.register(&ORDER).expect("registered");
    engine
}

fn order(card: &str) -> order::Order {
    order::Order {
        amount: 10,
        card: card.to_string(),
        approved: false,
    }
}

/// Node A's console over node B's instances.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_nodes_console_acts_on_another_nodes_instances() {
    let temp = thresh::testing::TempSchema::new("console_nodes");
    let a = node(temp.name(), "a").await;
    let b = node(temp.name(), "b").await;
    let c = Console::new(a.clone(), false).await;
    // Three orders on B: one to cancel, one whose task A completes, one that B
    // approves without a card (an incident at charge, retried from A with one).
    let to_cancel = b.start(&ORDER, order("")).await.unwrap().id();
    let to_complete = b.start(&ORDER, order("")).await.unwrap().id();
    let stuck = b.start(&ORDER, order("")).await.unwrap();
    let (to_cancel, to_complete, stuck_id) = (
        to_cancel.to_string(),
        to_complete.to_string(),
        stuck.id().to_string(),
    );
    let open = |t: &Value| t.as_array().unwrap().len() == 3;
    c.until("/api/tasks?process=ORDER", open).await;
    let task = b
        .tasks(&thresh::TaskQuery::new().instance(stuck.id()))
        .await
        .unwrap()[0]
        .id;
    b.complete_task(&ORDER, task, |o| o.approved = true)
        .await
        .unwrap();

    // A lists them all, as the store has them; none runs on A.
    let listed = c
        .until("/api/instances?process=ORDER", |page| {
            page["items"].as_array().unwrap().len() == 3
        })
        .await;
    assert_eq!(listed["items"].as_array().unwrap().len(), 3);
    assert_eq!(a.running_instances(), 0, "A runs none of them");
    let incidents = c
        .until("/api/incidents?process=ORDER", |i| {
            i.as_array().unwrap().len() == 1
        })
        .await;
    assert_eq!(incidents[0]["instance"], stuck_id.as_str());
    assert_eq!(incidents[0]["error"], "no card on file");

    // B's incident, retried from A with a card: B runs the charge again.
    let incident = incidents[0]["id"].as_str().unwrap().to_string();
    let (status, answer) = c
        .post(
            &format!("/api/incidents/{incident}/retry"),
            r#"{"data":{"card":"4242"}}"#,
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{answer}");
    let done = c
        .until(&format!("/api/instances/{stuck_id}"), |i| {
            i["instance"]["status"] == "completed"
        })
        .await;
    assert_eq!(done["instance"]["data"]["card"], "4242");

    // B's task, completed from A.
    let tasks = c.get(&format!("/api/tasks?instance={to_complete}")).await.1;
    let task = tasks[0]["id"].as_str().unwrap().to_string();
    let (status, answer) = c
        .post(
            &format!("/api/tasks/{task}/complete"),
            r#"{"data":{"approved":true,"card":"4242"}}"#,
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{answer}");
    let done = c
        .until(&format!("/api/instances/{to_complete}"), |i| {
            i["instance"]["status"] == "completed"
        })
        .await;
    assert_eq!(done["instance"]["data"]["approved"], true);

    // B's instance, cancelled from A: a request B's claim poll takes.
    let (status, answer) = c
        .post(&format!("/api/instances/{to_cancel}/cancel"), "")
        .await;
    assert_eq!(status, StatusCode::OK, "{answer}");
    let cancelled = c
        .until(&format!("/api/instances/{to_cancel}"), |i| {
            i["instance"]["status"] == "cancelled"
        })
        .await;
    assert_eq!(cancelled["tasks"], json!([]));
    let again = c
        .post(&format!("/api/instances/{to_cancel}/cancel"), "")
        .await;
    refused(&again, StatusCode::CONFLICT, "ended already");
    assert_eq!(a.running_instances(), 0, "A ran none of them");
    assert_eq!(b.running_instances(), 0, "each ended on B");
    for node in [a, b] {
        node.shutdown(Duration::from_secs(10)).await.unwrap();
    }
}
