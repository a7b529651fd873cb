//! A small task-list service on a durable engine: expenses arrive as messages keyed
//! by their expense id; each waits on the task list for its manager, or for finance,
//! most urgent first; a clerk claims and approves the two at the top, and expenses
//! are looked up by their expense id — their open approval, or the instance with its
//! typed data. Every name the service uses is checked by the compiler
//! (`EXPENSE::message.expense` takes only an `(u32, String)`).
//!
//! Run: `cargo run --example expenses`

use std::time::Duration;

use serde::{Deserialize, Serialize};
use thresh::{process, Engine, ProcessData, Query, Status, TaskQuery};

#[derive(Clone, Debug, Default, ProcessData, Serialize, Deserialize)]
pub struct Expense {
    pub amount: u32,
    pub manager: String,
    pub approved: bool,
    pub paid: bool,
}

process! {
    /// An expense: approved by its manager (or anyone in finance), then paid.
    pub EXPENSE: Expense {
        start received: message("expense", apply = |e, claim: &(u32, String)| {
            e.amount = claim.0;
            e.manager = claim.1.clone();
        });
        user approve: "Approve the expense"
            | assignee(|e| e.manager.clone())
            | groups("finance")
            | due(2d)
            | priority(|e| if e.amount > 1000 { 80 } else { 50 });
        task pay = |e| async move { e.paid = e.approved; Ok(()) };
        end done;
        received -> approve -> pay -> done;
    }
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let path = std::env::temp_dir().join(format!("thresh-expenses-{}.db", std::process::id()));
    let engine = Engine::open(&path).await?;
    engine.register(&EXPENSE)?;
    engine.deploy(&EXPENSE, Expense::default())?;
    // The message's key, the expense id, becomes the instance's correlation key.
    for (id, amount, manager) in [
        ("EXP-1", 120_u32, "maria"),
        ("EXP-2", 4_800, "li"),
        ("EXP-3", 75, "maria"),
        ("EXP-4", 2_300, "omar"),
    ] {
        engine
            .publish(EXPENSE::message.expense, id, (amount, manager.to_string()))
            .await?;
    }
    let finance = TaskQuery::new().candidate_groups(["finance"]);
    // Each approval opens once its instance has started from its message.
    let waiting = tokio::time::timeout(Duration::from_secs(10), async {
        loop {
            let tasks = engine.tasks(&finance).await?;
            if tasks.len() == 4 {
                return Ok::<_, thresh::TaskListError>(tasks);
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    })
    .await
    .map_err(|_| "the four approvals did not open within 10 s")??;
    println!("waiting for finance, most urgent first:");
    for task in &waiting {
        println!(
            "  {} {} for {} (priority {}, expense {})",
            task.id,
            task.name,
            task.assignee.as_deref().unwrap_or("-"),
            task.priority,
            task.key.as_deref().unwrap_or("?"),
        );
    }
    for task in &waiting[..2] {
        engine.claim(task.id, "ann").await?;
        engine
            .complete_task(&EXPENSE, task.id, |e| e.approved = true)
            .await?;
        println!("ann approved {}", task.key.as_deref().unwrap_or("?"));
    }
    let found = engine
        .tasks(&TaskQuery::new().correlation_key("EXP-3"))
        .await?;
    println!(
        "EXP-3 waits at `{}` for {}",
        found[0].element,
        found[0].assignee.as_deref().unwrap_or("-")
    );
    // An approved one, by its expense id: the instance and its typed data.
    let approved = waiting[0].key.clone().unwrap_or_default();
    let by_id = Query::of(&EXPENSE).correlation_key(&approved);
    let summary = loop {
        let page = engine.instances(&by_id).await?;
        match page.items.into_iter().next() {
            Some(s) if s.status == Status::Completed => break s,
            _ => tokio::time::sleep(Duration::from_millis(5)).await,
        }
    };
    println!(
        "{approved}: {} of {}, approved {}, paid {}",
        summary.status, summary.data.amount, summary.data.approved, summary.data.paid
    );
    let left = engine.tasks(&TaskQuery::new()).await?.len();
    println!("{left} approvals left");
    engine.shutdown(Duration::from_secs(5)).await?;
    for suffix in ["", "-wal", "-shm"] {
        let _ = std::fs::remove_file(format!("{}{suffix}", path.display()));
    }
    Ok(())
}
