//! A loan application: a credit check that can fail with a BPMN error (caught by an
//! error boundary), a reminder that fires on a timer cycle while the applicant is
//! asked for documents (non-interrupting), an interrupting timeout on the same
//! wait, a conditional event that waits until the score is high enough, and a link
//! loop that re-scores until it does.
//!
//! Run: `cargo run --example loan`

use std::time::Duration;

use thresh::{process, Engine, Outcome, ProcessData, TaskError};

#[derive(Clone, Debug, Default, ProcessData)]
pub struct Loan {
    pub applicant: String,
    pub amount: u64,
    pub score: u32,
    pub rounds: u32,
    pub reminders: u32,
    pub rejected_reason: String,
    pub approved: bool,
}

pub async fn credit_check(loan: &mut Loan) -> Result<(), TaskError> {
    if loan.applicant.starts_with("blocked") {
        return Err(TaskError::bpmn(
            "BLACKLISTED",
            format!("{} is on the blacklist", loan.applicant),
        ));
    }
    loan.score = 40;
    Ok(())
}

pub async fn improve(loan: &mut Loan) -> Result<(), TaskError> {
    loan.rounds += 1;
    loan.score += 15;
    Ok(())
}

pub async fn gather_documents(loan: &mut Loan) -> Result<(), TaskError> {
    // The applicant takes a while; a reminder goes out every 20 ms meanwhile.
    tokio::time::sleep(Duration::from_millis(if loan.amount > 50_000 {
        500
    } else {
        50
    }))
    .await;
    Ok(())
}

process! {
    /// From application to decision.
    pub LOAN: Loan {
        start     applied;
        task      check = credit_check;
        boundary  blacklisted on check: error("BLACKLISTED", apply = |l, e: &thresh::events::BpmnError| l.rejected_reason = e.message.clone());
        task      documents = gather_documents;
        boundary  remind on documents: non_interrupting timer(every = Duration::from_millis(20), times = 10);
        task      send_reminder = |l| async move { l.reminders += 1; Ok(()) };
        end       reminded;
        boundary  too_slow on documents: timer(Duration::from_millis(200));
        parallel  fork;
        catch     rescore: link("rescore");
        task      improve = improve;
        exclusive more;
        throw     again: link("rescore");
        /// Waits, beside the re-scoring loop, until the score is high enough.
        catch     score_ok: condition(|l| l.score >= 70, on = [score]);
        task      approve = |l| async move { l.approved = true; Ok(()) };
        parallel  join;
        end       approved;
        end       rejected;
        end       timed_out;

        applied -> check -> documents -> fork;
        fork -> score_ok, improve;
        rescore -> improve -> more;
        more -> again when |l| l.score < 70;
        more -> join else;
        score_ok -> approve -> join -> approved;
        blacklisted -> rejected;
        remind -> send_reminder -> reminded;
        too_slow -> timed_out;
    }
}

#[tokio::main]
async fn main() {
    let engine = Engine::new();
    let mut failed = false;
    for (applicant, amount) in [("ada", 10_000), ("blocked-bob", 5_000), ("carol", 90_000)] {
        let handle = engine
            .start(
                &LOAN,
                Loan {
                    applicant: applicant.into(),
                    amount,
                    ..Loan::default()
                },
            )
            .await
            .unwrap();
        let outcome = handle.outcome().await;
        let history = handle.history().await;
        println!("{applicant} ({amount}): {}", outcome.kind());
        println!("  ended at:        {:?}", history.ended_at());
        match outcome {
            Outcome::Completed(loan) => println!(
                "  score {} after {} rounds, approved: {}, reminders sent: {}, rejected because: {:?}",
                loan.score, loan.rounds, loan.approved, loan.reminders, loan.rejected_reason
            ),
            other => {
                eprintln!("unexpected: {other:?}");
                failed = true;
            }
        }
    }
    if failed {
        std::process::exit(1);
    }
}
