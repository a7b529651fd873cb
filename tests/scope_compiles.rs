//! Every scope feature in one process compiles, and the graph `process!` emits holds
//! them as written: a sub-process nested in a sub-process, boundary events on a
//! sub-process, event sub-processes on each trigger (message, signal, timer,
//! condition, error, escalation), interrupting and non-interrupting, at the top level
//! and inside a sub-process, and a link pair inside a sub-process with the same name
//! as a link pair at the top level (each container has its own link names).

use std::time::Duration;

use thresh::{process, Process, ProcessData, TaskError};

#[derive(Clone, Debug, Default, PartialEq, ProcessData)]
struct Claim {
    id: String,
    amount: u64,
    tries: u32,
    flagged: bool,
}

async fn step(_: &mut Claim) -> Result<(), TaskError> {
    Ok(())
}

process! {
    /// A claim, handled in a sub-process, with an event sub-process for every trigger.
    CLAIM: Claim {
        start begin;
        catch retry: link("retry");
        task intake = step;

        subprocess handle {
            start s;
            catch retry_inner: link("retry");
            task assess = step;
            subprocess review {
                start review_start;
                task check = step;
                end reviewed;
                review_start -> check -> reviewed;
            }
            exclusive verdict;
            throw again: link("retry");
            throw late: escalation("LATE");
            end fraud_found: error("FRAUD");
            end handled;

            s -> assess -> review -> verdict;
            retry_inner -> assess;
            verdict -> again when |c| c.tries < 2;
            verdict -> fraud_found when |c| c.flagged;
            verdict -> late else;
            late -> handled;

            event_subprocess on_late {
                start late_seen: non_interrupting escalation("LATE");
                task note = step;
                end noted;
                late_seen -> note -> noted;
            }
            event_subprocess on_nudge {
                start nudge: non_interrupting message("nudge", key = |c| c.id.clone());
                end nudged;
                nudge -> nudged;
            }
        }
        boundary fraud on handle: error("FRAUD");
        boundary reminder on handle: non_interrupting timer(Duration::from_secs(3600));

        task investigate = step;
        exclusive decide;
        throw retry_claim: link("retry");
        task remind = step;
        end done;
        end rejected;
        end reminded;

        begin -> intake -> handle -> done;
        retry -> intake;
        fraud -> investigate -> decide;
        decide -> retry_claim when |c| c.tries < 3;
        decide -> rejected else;
        reminder -> remind -> reminded;

        event_subprocess on_cancel {
            start cancel: message("cancel", key = |c| c.id.clone());
            task undo = step;
            end cancelled;
            cancel -> undo -> cancelled;
        }
        event_subprocess on_ping {
            start ping: non_interrupting signal("ping");
            end pinged;
            ping -> pinged;
        }
        event_subprocess on_deadline {
            start deadline: timer(Duration::from_secs(86_400));
            end expired: terminate;
            deadline -> expired;
        }
        event_subprocess on_poll {
            start poll: non_interrupting timer(every = Duration::from_secs(600), times = 3);
            end polled;
            poll -> polled;
        }
        event_subprocess on_large {
            start large: non_interrupting condition(|c| c.amount > 10_000, on = [amount]);
            task flag = |c| async move {
                c.flagged = true;
                Ok(())
            };
            end flagged;
            large -> flag -> flagged;
        }
        event_subprocess on_failure {
            start failure: error("BROKEN");
            end failed;
            failure -> failed;
        }
        event_subprocess on_escalation {
            start escalated: non_interrupting escalation;
            end seen;
            escalated -> seen;
        }
    }
}

/// The index of node `id` in `process`.
fn index(process: &Process<Claim>, id: &str) -> usize {
    process
        .nodes()
        .iter()
        .position(|n| n.id() == id)
        .unwrap_or_else(|| panic!("no node `{id}`"))
}

/// Whether `process` has a flow from `source` to `target` (a link pair resolves into
/// one).
fn flows(process: &Process<Claim>, source: &str, target: &str) -> bool {
    let (s, t) = (index(process, source), index(process, target));
    process
        .flows()
        .iter()
        .any(|f| f.source() == s && f.target() == t)
}

#[test]
fn every_scope_feature_compiles_into_the_graph() {
    let keyword = |id: &str| CLAIM.node(id).map(|n| n.keyword());
    assert_eq!(CLAIM.name(), "CLAIM");

    for sub in ["handle", "review"] {
        assert_eq!(keyword(sub), Some("subprocess"), "{sub}");
    }
    let event_subs = [
        ("on_late", "late_seen"),
        ("on_nudge", "nudge"),
        ("on_cancel", "cancel"),
        ("on_ping", "ping"),
        ("on_deadline", "deadline"),
        ("on_poll", "poll"),
        ("on_large", "large"),
        ("on_failure", "failure"),
        ("on_escalation", "escalated"),
    ];
    for (sub, start) in event_subs {
        assert_eq!(keyword(sub), Some("event_subprocess"), "{sub}");
        assert_eq!(keyword(start), Some("start (event sub-process)"), "{start}");
        // An event sub-process is entered by its trigger, never by a flow.
        let node = CLAIM.node(sub).unwrap();
        assert!(
            node.incoming().is_empty() && node.outgoing().is_empty(),
            "{sub}"
        );
    }
    // The starts of the sub-processes are plain none starts; the process's own
    // `Engine::start` begins at `begin`.
    for start in ["begin", "s", "review_start"] {
        assert_eq!(keyword(start), Some("start"), "{start}");
    }
    assert_eq!(CLAIM.none_start(), Some(index(&CLAIM, "begin")));

    // Boundaries sit on the sub-process and lead on from outside it.
    for boundary in ["fraud", "reminder"] {
        assert_eq!(keyword(boundary), Some("boundary"), "{boundary}");
    }
    assert!(flows(&CLAIM, "begin", "intake"));
    assert!(flows(&CLAIM, "intake", "handle"));
    assert!(flows(&CLAIM, "handle", "done"));
    assert!(flows(&CLAIM, "fraud", "investigate"));
    assert!(flows(&CLAIM, "reminder", "remind"));
    assert!(flows(&CLAIM, "review", "verdict"));
    assert_eq!(keyword("fraud_found"), Some("end (error)"));
    assert_eq!(keyword("late"), Some("throw (escalation)"));
    assert_eq!(keyword("expired"), Some("end (terminate)"));

    // Two link pairs named "retry", one per container: each throw lands on the catch
    // of its own container.
    for link in ["retry", "retry_inner", "again", "retry_claim"] {
        assert_eq!(keyword(link), Some("link"), "{link}");
    }
    assert!(flows(&CLAIM, "again", "retry_inner"));
    assert!(flows(&CLAIM, "retry_claim", "retry"));
    assert!(!flows(&CLAIM, "again", "retry"));
    assert!(!flows(&CLAIM, "retry_claim", "retry_inner"));
}
