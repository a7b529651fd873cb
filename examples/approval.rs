//! A complex gateway: a purchase needs two of three approvals and the CFO's must be
//! one of them — or, when it is urgent, the CFO's alone. Approvers answer in their own
//! time; the join fires as soon as its rule holds and the late approval is consumed.
//!
//! Run: `cargo run --example approval`

use std::time::Duration;

use thresh::{process, Engine, Outcome, ProcessData, TaskError};

#[derive(Clone, Debug, Default, ProcessData)]
pub struct Purchase {
    pub item: String,
    pub urgent: bool,
    /// How long each approver takes, in milliseconds: manager, CFO, legal.
    pub delays: [u64; 3],
    /// One field per approver: parallel tasks that write different fields all keep
    /// their writes when the loop merges their copies.
    pub manager_ok: bool,
    pub cfo_ok: bool,
    pub legal_ok: bool,
    pub ordered: bool,
}

pub async fn approve(ok: &mut bool, delay: u64) -> Result<(), TaskError> {
    tokio::time::sleep(Duration::from_millis(delay)).await;
    *ok = true;
    Ok(())
}

process! {
    /// Two of three approvals, the CFO's among them; urgent purchases need the CFO only.
    pub APPROVAL: Purchase {
        start    requested;
        parallel ask;
        task     manager = |p| approve(&mut p.manager_ok, p.delays[0]);
        task     cfo = |p| approve(&mut p.cfo_ok, p.delays[1]);
        task     legal = |p| approve(&mut p.legal_ok, p.delays[2]);
        complex  approved: activate(count = 2, require = [cfo])
                         | activate(count = 1, require = [cfo], when = |p| p.urgent);
        task     order = |p| async move { p.ordered = true; Ok(()) };
        end      done;

        requested -> ask -> manager, cfo, legal;
        manager, cfo, legal -> approved -> order -> done;
    }
}

#[tokio::main]
async fn main() {
    let engine = Engine::new();
    let cases = [
        ("laptop", false, [10, 30, 300]),
        ("server", true, [200, 10, 300]),
        ("desk", false, [10, 300, 20]),
    ];
    for (item, urgent, delays) in cases {
        let purchase = Purchase {
            item: item.into(),
            urgent,
            delays,
            ..Purchase::default()
        };
        let handle = engine.start(&APPROVAL, purchase).await.unwrap();
        let outcome = handle.outcome().await;
        let history = handle.history().await;
        println!(
            "{item} (urgent: {urgent}, delays {delays:?} ms): {}",
            outcome.kind()
        );
        println!("  tasks completed:  {:?}", history.completed_tasks());
        println!(
            "  late approvals consumed at the join: {}",
            history.count("approved", |h| *h == thresh::Happening::Consumed)
        );
        match outcome {
            Outcome::Completed(p) => println!(
                "  approvals: manager {}, cfo {}, legal {}; ordered: {}",
                p.manager_ok, p.cfo_ok, p.legal_ok, p.ordered
            ),
            other => {
                eprintln!("unexpected outcome: {other:?}");
                std::process::exit(1);
            }
        }
    }
}
