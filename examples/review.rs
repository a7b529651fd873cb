//! Document review: an inclusive gateway picks the reviewers a document needs (legal,
//! finance, security — or only an editorial read when it needs none of them), they
//! review in parallel, an OR-join waits for exactly the reviews that were started,
//! and then a decision approves the document or sends it back for revision, for at
//! most `MAX_ROUNDS` rounds.
//!
//! The revision loop re-enters at the exclusive merge `again`, after the OR-join:
//! thresh's OR-join is single-pass and may not lie on a cycle (`process!` rejects
//! it), so the specialists review once and later rounds re-check the author's fixes
//! at `decide`.
//!
//! Run: `cargo run --example review`

use thresh::{process, Engine, Happening, Outcome, ProcessData, TaskError};

/// Rounds a document gets before it is rejected.
const MAX_ROUNDS: u32 = 3;

#[derive(Clone, Debug, Default, ProcessData)]
pub struct Document {
    pub title: String,
    /// Money the document commits the company to.
    pub amount: u64,
    /// A contract: legal must review it.
    pub contract: bool,
    /// It handles personal data: security must review it.
    pub personal_data: bool,
    /// How many open issues the author fixes per revision.
    pub fixes_per_round: u32,
    // Each reviewer writes only its own field, so parallel reviews never collide.
    pub legal_issues: u32,
    pub finance_issues: u32,
    pub security_issues: u32,
    pub editorial_issues: u32,
    pub open_issues: u32,
    /// The review round, from 1.
    pub round: u32,
    pub approved: bool,
}

pub mod handlers {
    use super::*;

    pub async fn intake(doc: &mut Document) -> Result<(), TaskError> {
        if doc.title.is_empty() {
            return Err(TaskError::new("a document needs a title"));
        }
        doc.round = 1;
        Ok(())
    }

    pub async fn legal(doc: &mut Document) -> Result<(), TaskError> {
        // A liability clause, plus a second look at large commitments.
        doc.legal_issues = 1 + u32::from(doc.amount >= 100_000);
        Ok(())
    }

    pub async fn finance(doc: &mut Document) -> Result<(), TaskError> {
        doc.finance_issues = u32::from(doc.amount >= 50_000) + u32::from(doc.amount >= 150_000);
        Ok(())
    }

    pub async fn security(doc: &mut Document) -> Result<(), TaskError> {
        doc.security_issues = 2; // retention period, access log
        Ok(())
    }

    pub async fn editorial(doc: &mut Document) -> Result<(), TaskError> {
        doc.editorial_issues = u32::from(doc.title.len() > 40);
        Ok(())
    }

    pub async fn consolidate(doc: &mut Document) -> Result<(), TaskError> {
        doc.open_issues =
            doc.legal_issues + doc.finance_issues + doc.security_issues + doc.editorial_issues;
        Ok(())
    }

    pub async fn decide(doc: &mut Document) -> Result<(), TaskError> {
        doc.approved = doc.open_issues == 0;
        Ok(())
    }

    pub async fn revise(doc: &mut Document) -> Result<(), TaskError> {
        doc.open_issues -= doc.open_issues.min(doc.fixes_per_round);
        doc.round += 1;
        Ok(())
    }
}

process! {
    /// From submission to publication (or rejection after `MAX_ROUNDS` rounds).
    pub REVIEW: Document {
        start     submitted;
        task      intake = handlers::intake;
        /// Choose the reviewers: every one whose condition holds.
        inclusive route;
        task      legal = handlers::legal;
        task      finance = handlers::finance;
        task      security = handlers::security;
        task      editorial = handlers::editorial;
        /// Waits for the reviews that were started, and only those.
        inclusive reviewed;
        task      consolidate = handlers::consolidate;
        /// Merge of the first round and the revision loop.
        exclusive again;
        task      decide = handlers::decide;
        exclusive verdict;
        task      revise = handlers::revise;
        end       published;
        end       rejected;

        submitted -> intake -> route;
        route -> legal when |d| d.contract;
        route -> finance when |d| d.amount >= 10_000;
        route -> security when |d| d.personal_data;
        route -> editorial else;       // no specialist needed
        legal, finance, security, editorial -> reviewed;
        reviewed -> consolidate -> again -> decide -> verdict;
        verdict -> published when |d| d.approved;
        verdict -> revise when |d| d.round < MAX_ROUNDS;
        verdict -> rejected else;
        revise -> again;
    }
}

#[tokio::main]
async fn main() {
    let inputs = [
        // (document, the end it must reach)
        (
            Document {
                title: "Release notes 2.4".into(),
                ..Document::default()
            },
            "published",
        ),
        (
            Document {
                title: "Vendor contract: cloud hosting".into(),
                amount: 80_000,
                contract: true,
                fixes_per_round: 1,
                ..Document::default()
            },
            "published",
        ),
        (
            Document {
                title: "Customer data export agreement".into(),
                amount: 200_000,
                contract: true,
                personal_data: true,
                fixes_per_round: 2,
                ..Document::default()
            },
            "rejected",
        ),
    ];
    let engine = Engine::new();
    let mut unexpected = 0;
    for (doc, expected_end) in inputs {
        let title = doc.title.clone();
        let handle = engine.start(&REVIEW, doc).await.unwrap();
        let outcome = handle.outcome().await;
        let history = handle.history().await;
        let reviewers: Vec<&str> = history
            .steps()
            .iter()
            .find_map(|s| match &s.what {
                Happening::Routed { to } if s.node == "route" => Some(to.to_vec()),
                _ => None,
            })
            .unwrap_or_default();
        let ended_at = history.ended_at();
        println!("\"{title}\": {}", outcome.kind());
        println!("  reviewers:       {reviewers:?}");
        println!("  tasks completed: {:?}", history.completed_tasks());
        println!("  ended at:        {ended_at:?}");
        match outcome {
            Outcome::Completed(d) => {
                println!(
                    "  final data:      round={} approved={} open_issues={} (legal={} finance={} security={} editorial={})",
                    d.round,
                    d.approved,
                    d.open_issues,
                    d.legal_issues,
                    d.finance_issues,
                    d.security_issues,
                    d.editorial_issues
                );
                if ended_at != [expected_end] || d.approved != (expected_end == "published") {
                    eprintln!("  unexpected: expected to end at `{expected_end}`");
                    unexpected += 1;
                }
            }
            other => {
                eprintln!("  unexpected outcome: {other:?}");
                unexpected += 1;
            }
        }
    }
    if let Err(e) = engine.shutdown(std::time::Duration::from_secs(5)).await {
        eprintln!("{e}");
        std::process::exit(1);
    }
    if unexpected > 0 {
        std::process::exit(1);
    }
}
