//! The operations console over a durable engine: orders wait for approval on the
//! task list, one has failed, one has an incident (approved without a card: its
//! charge cannot run), one is finished. Open the printed address in a browser.
//!
//! Run: `cargo run --example console --features console` (serves until Ctrl-C, on
//! 127.0.0.1:3000 or the address given as its argument); with `--check` it serves
//! on a free port, fetches its own pages once and exits (CI).

use std::time::Duration;

use serde::{Deserialize, Serialize};
use thresh::console::axum;
use thresh::{process, Engine, ProcessData, Query, Status, TaskError, TaskQuery};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

#[derive(Clone, Debug, Default, ProcessData, Serialize, Deserialize)]
pub struct Order {
    pub customer: String,
    pub amount: u32,
    pub card: String,
    pub approved: bool,
}

pub async fn charge(order: &mut Order) -> Result<(), TaskError> {
    match order.card.as_str() {
        "" => Err(TaskError::permanent("no card on file")),
        _ => Ok(()),
    }
}

process! {
    /// An order: approved by sales, then charged.
    pub ORDER: Order {
        start received;
        user approve: "Approve the order" | groups("sales") | priority(|o| if o.amount > 1000 { 80 } else { 50 });
        task charge = charge;
        end done;
        received -> approve -> charge -> done;
    }
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let check = std::env::args().any(|a| a == "--check");
    let addr = match check {
        true => "127.0.0.1:0".to_string(),
        false => std::env::args()
            .nth(1)
            .unwrap_or_else(|| "127.0.0.1:3000".to_string()),
    };
    let path = std::env::temp_dir().join(format!("thresh-console-{}.db", std::process::id()));
    let engine = Engine::open(&path).await?;
    engine.register(&ORDER)?;
    let orders = [
        ("ORD-1", "ada", 120, ""),
        ("ORD-2", "grace", 4_800, "4242"),
        ("ORD-3", "alan", 75, ""),
        ("ORD-4", "edsger", 2_300, "5555"),
        ("ORD-5", "barbara", 640, ""),
        ("ORD-6", "ken", 99, "1234"),
    ];
    for (key, customer, amount, card) in orders {
        let order = Order {
            customer: customer.into(),
            amount,
            card: card.into(),
            approved: false,
        };
        engine.start_keyed(&ORDER, key, order).await?;
    }
    // Each approval opens once its instance reaches it.
    let tasks = tokio::time::timeout(Duration::from_secs(10), async {
        loop {
            let tasks = engine.tasks(&TaskQuery::new()).await?;
            if tasks.len() == orders.len() {
                return Ok::<_, thresh::TaskListError>(tasks);
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await??;
    // ORD-2 approved and charged (finished), ORD-1 approved without a card (an
    // incident at charge), ORD-6 rejected (failed); the rest wait for sales.
    let by_key = |key: &'static str| {
        let engine = engine.clone();
        async move {
            let page = engine.instances(&Query::of(&ORDER).key(key)).await?;
            Ok::<_, thresh::EngineError>(page.items[0].id)
        }
    };
    for (key, approve) in [("ORD-2", true), ("ORD-1", true), ("ORD-6", false)] {
        let id = by_key(key).await?;
        let task = tasks
            .iter()
            .find(|t| t.id.instance == id)
            .expect("its task")
            .id;
        engine.claim(task, "maria").await?;
        match approve {
            true => {
                engine
                    .complete_task(&ORDER, task, |o| o.approved = true)
                    .await?
            }
            false => {
                engine
                    .fail_task(task, "the customer withdrew the order")
                    .await?
            }
        }
    }
    tokio::time::timeout(Duration::from_secs(10), async {
        while engine.incidents().await.map_or(0, |i| i.len()) == 0
            || engine
                .count(&Query::of(&ORDER).status(Status::Completed))
                .await
                .unwrap_or(0)
                == 0
        {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await?;

    let console = thresh::console::router(engine.clone())
        .process(&ORDER)
        .into_router();
    let app = axum::Router::new().nest("/console", console);
    let listener = tokio::net::TcpListener::bind(&addr).await?;
    let local = listener.local_addr()?;
    println!("thresh console: http://{local}/console");
    let server = tokio::spawn(async move { axum::serve(listener, app).await });
    if check {
        let one = by_key("ORD-1").await?;
        for page in [
            "/console".to_string(),
            "/console/instances?process=ORDER".to_string(),
            format!("/console/instances/{one}"),
            "/console/tasks?group=sales".to_string(),
            "/console/messages".to_string(),
            "/console/api/processes".to_string(),
        ] {
            let status = fetch(local, &page).await?;
            println!("GET {page}: {status}");
            if status != 200 {
                return Err(format!("GET {page} answered {status}").into());
            }
        }
        server.abort();
    } else {
        let _ = server.await;
    }
    engine.shutdown(Duration::from_secs(5)).await?;
    let _ = std::fs::remove_file(&path);
    Ok(())
}

/// The status of a GET, over a plain HTTP/1.1 connection.
async fn fetch(addr: std::net::SocketAddr, path: &str) -> std::io::Result<u16> {
    let mut stream = tokio::net::TcpStream::connect(addr).await?;
    let request = format!("GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n");
    stream.write_all(request.as_bytes()).await?;
    let mut answer = Vec::new();
    stream.read_to_end(&mut answer).await?;
    let head = String::from_utf8_lossy(&answer);
    Ok(head
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0))
}
