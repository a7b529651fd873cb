//! The console in a real browser: headless Chromium driven through chromedriver
//! (WebDriver, by fantoccini) over a SQLite engine served on 127.0.0.1 — filter the
//! instances, open one and find its token on the diagram, claim and complete its
//! task from the task list, retry the incident that follows and see the instance
//! complete, cancel another from its page (the confirm dismissed, then accepted),
//! and a 404 page for an unknown instance.
//!
//! `cargo test --features browser --test console_browser` (needs `chromium` and
//! `chromium-driver`: .ci/run installs them; THRESH_CHROMEDRIVER and
//! THRESH_CHROMIUM name other binaries).

use std::process::{Child, Command, Stdio};
use std::time::Duration;

use fantoccini::{Client, ClientBuilder, Locator};
use thresh::console::axum;
use thresh::{Engine, TaskQuery};

#[path = "common/console_order.rs"]
mod order;
use order::{Order, ORDER};

/// chromedriver, ended with the test.
struct Driver(Child);

impl Drop for Driver {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port")
}

async fn browser() -> (Driver, Client) {
    let driver =
        std::env::var("THRESH_CHROMEDRIVER").unwrap_or_else(|_| "/usr/bin/chromedriver".into());
    let chromium =
        std::env::var("THRESH_CHROMIUM_BIN").unwrap_or_else(|_| "/usr/bin/chromium".into());
    let port = free_port();
    let child = Command::new(&driver)
        .arg(format!("--port={port}"))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap_or_else(|e| panic!("{driver} does not run ({e}): install chromium-driver"));
    let driver_guard = Driver(child);
    let mut caps = serde_json::Map::new();
    caps.insert(
        "goog:chromeOptions".into(),
        serde_json::json!({
            "binary": chromium,
            "args": ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--window-size=1280,900"],
        }),
    );
    let connector = hyper_util::client::legacy::connect::HttpConnector::new();
    // chromedriver takes a moment to listen.
    let client = tokio::time::timeout(Duration::from_secs(30), async {
        loop {
            match ClientBuilder::new(connector.clone())
                .capabilities(caps.clone())
                .connect(&format!("http://127.0.0.1:{port}"))
                .await
            {
                Ok(client) => return client,
                Err(_) => tokio::time::sleep(Duration::from_millis(100)).await,
            }
        }
    })
    .await
    .expect("chromedriver answers with a session");
    (driver_guard, client)
}

async fn css(client: &Client, selector: &str) -> fantoccini::elements::Element {
    let found = client
        .wait()
        .at_most(Duration::from_secs(10))
        .for_element(Locator::Css(selector))
        .await;
    match found {
        Ok(element) => element,
        Err(e) => panic!("no `{selector}` on {:?}: {e}", client.current_url().await),
    }
}

/// Reload the page until `shown` holds (the engine acts on its own loop: what
/// follows a click takes a moment).
async fn reload_until<F, Fut>(client: &Client, what: &str, shown: F)
where
    F: Fn() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    let waited = tokio::time::timeout(Duration::from_secs(10), async {
        while !shown().await {
            tokio::time::sleep(Duration::from_millis(100)).await;
            client.refresh().await.unwrap();
        }
    })
    .await;
    assert!(waited.is_ok(), "{what}: not within 10 s");
}

/// Wait until the page a click asked for is the one shown (its address holds
/// `needle`): until then the old page's elements are still found.
async fn navigated(client: &Client, needle: &str) {
    let waited = tokio::time::timeout(Duration::from_secs(10), async {
        while !client
            .current_url()
            .await
            .unwrap()
            .as_str()
            .contains(needle)
        {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await;
    assert!(waited.is_ok(), "no page with `{needle}` within 10 s");
}

async fn rows(client: &Client, table: &str) -> usize {
    // The header row is not an instance.
    client
        .find_all(Locator::Css(&format!("table#{table} tr")))
        .await
        .expect("rows")
        .len()
        - 1
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_console_in_a_browser() {
    let path =
        std::env::temp_dir().join(format!("thresh-console-browser-{}.db", std::process::id()));
    let engine = Engine::open(&path).await.expect("a store");
    engine.register(&ORDER).unwrap();
    for (key, card) in [("ORD-1", ""), ("ORD-2", "4242"), ("ORD-3", "")] {
        let order = Order {
            amount: 100,
            card: card.into(),
            approved: false,
        };
        engine.start_keyed(&ORDER, key, order).await.unwrap();
    }
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}/console", listener.local_addr().unwrap());
    let app = axum::Router::new().nest(
        "/console",
        thresh::console::router(engine.clone())
            .process(&ORDER)
            .into_router(),
    );
    let server = tokio::spawn(async move { axum::serve(listener, app).await });
    let (_driver, client) = browser().await;

    // Filter the instances: every one waits at approve; one has key ORD-2.
    client.goto(&format!("{base}/instances")).await.unwrap();
    css(&client, "select[name='waiting_at']")
        .await
        .select_by_value("approve")
        .await
        .unwrap();
    css(&client, "form.filter button")
        .await
        .click()
        .await
        .unwrap();
    navigated(&client, "waiting_at=approve").await;
    css(&client, "table#instances").await;
    assert_eq!(rows(&client, "instances").await, 3);
    css(&client, "input[name='key']")
        .await
        .send_keys("ORD-2")
        .await
        .unwrap();
    css(&client, "form.filter button")
        .await
        .click()
        .await
        .unwrap();
    navigated(&client, "key=ORD-2").await;
    css(&client, "table#instances").await;
    assert_eq!(rows(&client, "instances").await, 1);

    // ORD-1: its token waits at approve on the diagram.
    let one = engine
        .instances(&thresh::Query::of(&ORDER).key("ORD-1"))
        .await
        .unwrap()
        .items[0]
        .id;
    client
        .goto(&format!("{base}/instances?process=ORDER"))
        .await
        .unwrap();
    css(&client, &format!("a[href='/console/instances/{one}']"))
        .await
        .click()
        .await
        .unwrap();
    css(&client, ".diagram svg g[id='approve'].waiting").await;
    assert_eq!(
        css(&client, "td#waiting").await.text().await.unwrap(),
        "approve"
    );

    // Claim and complete its task from the task list.
    let task = engine.tasks(&TaskQuery::new().instance(one)).await.unwrap()[0].id;
    let form = |action: &str| {
        format!(
            "form[action='/console/tasks/{}/{}/{action}']",
            task.instance, task.number
        )
    };
    client
        .goto(&format!("{base}/tasks?group=sales"))
        .await
        .unwrap();
    css(&client, &format!("{} input[name='user']", form("claim")))
        .await
        .send_keys("ann")
        .await
        .unwrap();
    css(&client, &format!("{} button", form("claim")))
        .await
        .click()
        .await
        .unwrap();
    css(&client, &form("unclaim")).await;
    let claimed = engine.task(task).await.unwrap();
    assert_eq!(claimed.claimed_by.as_deref(), Some("ann"));
    css(&client, &format!("{} textarea", form("complete")))
        .await
        .send_keys(r#"{"approved": true}"#)
        .await
        .unwrap();
    css(&client, &format!("{} button", form("complete")))
        .await
        .click()
        .await
        .unwrap();
    css(&client, "table#tasks").await;
    assert!(
        client.find(Locator::Css(&form("complete"))).await.is_err(),
        "the task is closed"
    );

    // Approved without a card: an incident at charge. Retried with one, it completes.
    client
        .goto(&format!("{base}/instances/{one}"))
        .await
        .unwrap();
    reload_until(&client, "the incident shows on the diagram", || async {
        client
            .find(Locator::Css(".diagram svg g[id='charge'].incident"))
            .await
            .is_ok()
    })
    .await;
    assert!(css(&client, "p.error")
        .await
        .text()
        .await
        .unwrap()
        .contains("no card on file"));
    css(&client, "form.retry textarea")
        .await
        .send_keys(r#"{"card": "4242"}"#)
        .await
        .unwrap();
    css(&client, "form.retry button")
        .await
        .click()
        .await
        .unwrap();
    reload_until(
        &client,
        "the instance completes after the retry",
        || async {
            match client.find(Locator::Css("td#status")).await {
                Ok(status) => status.text().await.unwrap_or_default() == "completed",
                Err(_) => false,
            }
        },
    )
    .await;
    assert!(css(&client, "pre#data")
        .await
        .text()
        .await
        .unwrap()
        .contains("\"card\": \"4242\""));

    // ORD-3: cancelled from its page, once the browser's confirm is accepted (a
    // dismissed one changes nothing).
    let three = engine
        .instances(&thresh::Query::of(&ORDER).key("ORD-3"))
        .await
        .unwrap()
        .items[0]
        .id;
    client
        .goto(&format!("{base}/instances/{three}"))
        .await
        .unwrap();
    css(&client, "button#cancel").await.click().await.unwrap();
    client.dismiss_alert().await.unwrap();
    assert_eq!(
        css(&client, "td#status").await.text().await.unwrap(),
        "running"
    );
    css(&client, "button#cancel").await.click().await.unwrap();
    client.accept_alert().await.unwrap();
    reload_until(&client, "the instance shows cancelled", || async {
        match client.find(Locator::Css("td#status")).await {
            Ok(status) => status.text().await.unwrap_or_default() == "cancelled",
            Err(_) => false,
        }
    })
    .await;
    assert!(
        client.find(Locator::Css("button#cancel")).await.is_err(),
        "no cancel button on an ended instance"
    );

    // An unknown instance: a 404 page.
    client
        .goto(&format!("{base}/instances/i999999"))
        .await
        .unwrap();
    assert_eq!(css(&client, "h1").await.text().await.unwrap(), "Not found");
    assert!(css(&client, "p.error")
        .await
        .text()
        .await
        .unwrap()
        .contains("no instance i999999"));

    client.close().await.unwrap();
    server.abort();
    engine.shutdown(Duration::from_secs(5)).await.unwrap();
    let _ = std::fs::remove_file(&path);
}
