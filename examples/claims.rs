//! Insurance claims: a deployed process started by a `claim` message. Each claim is
//! handled in a sub-process — assessed, then, for a large amount, it waits for the
//! claimant's documents before it is paid. Fraud found during the assessment is a
//! BPMN error thrown inside the sub-process and caught by an error boundary on it,
//! which cancels the rest of the handling. A `withdraw` message for the claim, at any
//! time, starts an interrupting event sub-process that closes the claim instead.
//!
//! Run: `cargo run --example claims`

use std::time::Duration;

use thresh::events::BpmnError;
use thresh::{process, Engine, InstanceHandle, Outcome, ProcessData, TaskError};

#[derive(Clone, Debug, Default, ProcessData)]
pub struct Claim {
    pub id: String,
    pub amount: u64,
    pub suspicious: bool,
    pub documents: bool,
    pub paid: u64,
    pub status: String,
    pub reason: String,
}

/// What a `claim` message carries.
pub struct Filed {
    pub id: String,
    pub amount: u64,
    pub suspicious: bool,
}

pub async fn assess(claim: &mut Claim) -> Result<(), TaskError> {
    if claim.suspicious {
        return Err(TaskError::bpmn(
            "FRAUD",
            format!("claim {} matches a known fraud pattern", claim.id),
        ));
    }
    claim.status = "assessed".into();
    Ok(())
}

pub async fn pay(claim: &mut Claim) -> Result<(), TaskError> {
    claim.paid = claim.amount;
    claim.status = "paid".into();
    Ok(())
}

process! {
    /// From a filed claim to a payment, a rejection or a withdrawal.
    pub CLAIMS: Claim {
        start     filed: message("claim", apply = |c, f: &Filed| {
                      c.id = f.id.clone();
                      c.amount = f.amount;
                      c.suspicious = f.suspicious;
                  });
        /// Assess, collect documents when the amount calls for them, pay.
        subprocess handling {
            start     open;
            task      assess = assess;
            exclusive needs_documents;
            receive   documents: message("documents", key = |c| c.id.clone(), apply = |c, _: &()| c.documents = true);
            exclusive ready;
            task      pay = pay;
            end       settled;

            open -> assess -> needs_documents;
            needs_documents -> documents when |c| c.amount > 1_000;
            needs_documents -> ready else;
            documents -> ready -> pay -> settled;
        }
        boundary  fraud on handling: error("FRAUD", apply = |c, e: &BpmnError| c.reason = e.message.clone());
        task      reject = |c| async move { c.status = "rejected".into(); Ok(()) };
        end       paid;
        end       rejected;

        filed -> handling -> paid;
        fraud -> reject -> rejected;

        /// The claimant withdraws: whatever runs is cancelled, the claim is closed.
        event_subprocess withdrawal {
            start     withdrawn: message("withdraw", key = |c| c.id.clone());
            task      close = |c| async move { c.status = "withdrawn".into(); Ok(()) };
            end       closed;

            withdrawn -> close -> closed;
        }
    }
}

#[tokio::main]
async fn main() {
    let engine = Engine::new();
    let mut claims = engine
        .deploy(&CLAIMS, Claim::default())
        .expect("CLAIMS has a message start");
    let mut failed = false;

    let file = |id: &'static str, amount: u64, suspicious: bool| {
        let filed = Filed {
            id: id.into(),
            amount,
            suspicious,
        };
        engine.publish(CLAIMS::message.claim, id, filed)
    };
    // A small claim, paid at once; a suspicious one, rejected.
    file("C-1", 400, false).await.expect("published");
    let small = claims.next().await.expect("started by its message");
    file("C-2", 700, true).await.expect("published");
    let fraud = claims.next().await.expect("started by its message");
    // Two large claims wait for documents: one gets them, one is withdrawn.
    file("C-3", 5_000, false).await.expect("published");
    let documented = claims.next().await.expect("started by its message");
    file("C-4", 9_000, false).await.expect("published");
    let withdrawn = claims.next().await.expect("started by its message");
    wait_for_documents(&documented).await;
    wait_for_documents(&withdrawn).await;
    engine
        .publish(CLAIMS::message.documents, "C-3", ())
        .await
        .unwrap();
    engine
        .publish(CLAIMS::message.withdraw, "C-4", ())
        .await
        .unwrap();

    for (handle, expected) in [
        (small, "paid"),
        (fraud, "rejected"),
        (documented, "paid"),
        (withdrawn, "withdrawn"),
    ] {
        let outcome = handle.outcome().await;
        let history = handle.history().await;
        match outcome {
            Outcome::Completed(claim) => {
                println!(
                    "{}: {} (amount {}, paid {}{})",
                    claim.id,
                    claim.status,
                    claim.amount,
                    claim.paid,
                    if claim.reason.is_empty() {
                        String::new()
                    } else {
                        format!(", because {}", claim.reason)
                    }
                );
                println!("  tasks done:  {:?}", history.completed_tasks());
                println!("  ended at:    {:?}", history.ended_at());
                if claim.status != expected {
                    eprintln!("  expected {expected}");
                    failed = true;
                }
            }
            other => {
                eprintln!("unexpected: {other:?}");
                failed = true;
            }
        }
    }
    engine.undeploy(claims.id());
    if failed {
        std::process::exit(1);
    }
}

/// Wait until the claim's handling waits for its documents, so the next message is
/// about a claim that is under way.
async fn wait_for_documents(handle: &InstanceHandle<Claim>) {
    for _ in 0..1_000 {
        let history = handle.history().await;
        if history.count("documents", |h| *h == thresh::Happening::Parked) > 0 {
            return;
        }
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    panic!("the claim never waited for its documents");
}
