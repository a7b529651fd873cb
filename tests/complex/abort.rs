//! Abort and exhaustion: a required branch dies, the count becomes unreachable, no
//! condition holds, the condition panics; the instance fails, never completes.

use super::*;

// ----- abort and exhaustion --------------------------------------------------------

process! {
    /// 2 of 3 with the CFO, whose branch may end at `cfo_declined`.
    DECLINE_REQUIRED: Purchase {
        start requested;
        parallel ask;
        task manager = approve_manager;
        task cfo_review = review_cfo;
        exclusive cfo_decides;
        task cfo = approve_cfo;
        end cfo_declined;
        task legal_review = review_legal;
        exclusive legal_decides;
        task legal = approve_legal;
        end legal_declined;
        complex approved: activate(count = 2, require = [cfo]);
        task order = place_order;
        end done;

        requested -> ask -> manager, cfo_review, legal_review;
        cfo_review -> cfo_decides;
        cfo_decides -> cfo when |p| !p.cfo_declines;
        cfo_decides -> cfo_declined else;
        legal_review -> legal_decides;
        legal_decides -> legal when |p| !p.legal_declines;
        legal_decides -> legal_declined else;
        manager, cfo, legal -> approved -> order -> done;
    }
}

/// The CFO declines: its branch ends at `cfo_declined` instead of reaching the join,
/// so `require = [cfo]` can never hold: the instance fails with ActivationUnsatisfiable
/// in the step where that became certain, and `order` never runs. The control run,
/// where the CFO approves and legal declines, completes. (The second of the Go
/// engine's flaky trio: abort on death.)
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn abort_when_a_required_branch_dies() {
    repeat(RUNS, |engine, _| async move {
        let data = Purchase {
            cfo_declines: true,
            ..Purchase::new()
        };
        let (outcome, history) = run(&engine, &DECLINE_REQUIRED, data).await;
        assert_eq!(
            failed(outcome, &history),
            InstanceError::ActivationUnsatisfiable { node: "approved" },
            "{history}"
        );
        check_failed_at_once(&history, "approved", &["cfo_declined"], false);
        assert_eq!(history.count("cfo", |h| *h == Happening::TaskStarted), 0);
    })
    .await;
    repeat(RUNS, |engine, _| async move {
        let data = Purchase {
            legal_declines: true,
            ..Purchase::new()
        };
        let (outcome, history) = run(&engine, &DECLINE_REQUIRED, data).await;
        let firing = check_fired(&history, "approved", |arrived| {
            arrived.len() >= 2 && arrived.contains(&"cfo")
        });
        completed(outcome, &history);
        assert_eq!(sorted(firing.arrived), ["cfo", "manager"], "{history}");
        assert_eq!(completions(&history, "order"), 1, "{history}");
    })
    .await;
}

process! {
    /// 2 of 3, any two; the CFO's and legal's branches may end early.
    DECLINE_COUNT: Purchase {
        start requested;
        parallel ask;
        task manager = approve_manager;
        task cfo_review = review_cfo;
        exclusive cfo_decides;
        task cfo = approve_cfo;
        end cfo_declined;
        task legal_review = review_legal;
        exclusive legal_decides;
        task legal = approve_legal;
        end legal_declined;
        complex approved: activate(count = 2);
        task order = place_order;
        end done;

        requested -> ask -> manager, cfo_review, legal_review;
        cfo_review -> cfo_decides;
        cfo_decides -> cfo when |p| !p.cfo_declines;
        cfo_decides -> cfo_declined else;
        legal_review -> legal_decides;
        legal_decides -> legal when |p| !p.legal_declines;
        legal_decides -> legal_declined else;
        manager, cfo, legal -> approved -> order -> done;
    }
}

/// 2 of 3, and both the CFO and legal decline: once both are gone and the manager has
/// arrived, the count can never be reached: ActivationUnsatisfiable. With one decline
/// the other two make the count and the instance completes.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn abort_when_the_count_becomes_unreachable() {
    repeat(RUNS, |engine, _| async move {
        let data = Purchase {
            cfo_declines: true,
            legal_declines: true,
            ..Purchase::new()
        };
        let (outcome, history) = run(&engine, &DECLINE_COUNT, data).await;
        assert_eq!(
            failed(outcome, &history),
            InstanceError::ActivationUnsatisfiable { node: "approved" },
            "{history}"
        );
        check_failed_at_once(
            &history,
            "approved",
            &["cfo_declined", "legal_declined"],
            false,
        );
    })
    .await;
    for cfo_declines in [true, false] {
        repeat(RUNS, move |engine, _| async move {
            let data = Purchase {
                cfo_declines,
                legal_declines: !cfo_declines,
                ..Purchase::new()
            };
            let (outcome, history) = run(&engine, &DECLINE_COUNT, data).await;
            let firing = check_fired(&history, "approved", |arrived| arrived.len() >= 2);
            completed(outcome, &history);
            let other = if cfo_declines { "legal" } else { "cfo" };
            assert_eq!(sorted(firing.arrived), sorted(vec!["manager", other]));
            assert!(firing.consumed.is_empty(), "{history}");
        })
        .await;
    }
}

process! {
    /// 2 of 3, only when urgent; legal's branch may end early.
    DECLINE_GUARDED: Purchase {
        start requested;
        parallel ask;
        task manager = approve_manager;
        task cfo_review = review_cfo;
        exclusive cfo_decides;
        task cfo = approve_cfo;
        end cfo_declined;
        task legal_review = review_legal;
        exclusive legal_decides;
        task legal = approve_legal;
        end legal_declined;
        complex approved: activate(count = 2, when = |p| p.urgent);
        task order = place_order;
        end done;

        requested -> ask -> manager, cfo_review, legal_review;
        cfo_review -> cfo_decides;
        cfo_decides -> cfo when |p| !p.cfo_declines;
        cfo_decides -> cfo_declined else;
        legal_review -> legal_decides;
        legal_decides -> legal when |p| !p.legal_declines;
        legal_decides -> legal_declined else;
        manager, cfo, legal -> approved -> order -> done;
    }
}

/// `count = 2, when = urgent` with urgent false: the count is met but the condition
/// never holds; when nothing more can arrive (the last arrival, or legal's branch
/// ending after the others arrived) the instance fails with ArrivalsExhausted. When
/// urgent, it fires on the second arrival.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn exhausted_when_no_condition_holds() {
    for legal_declines in [false, true] {
        repeat(RUNS, move |engine, _| async move {
            let data = Purchase {
                legal_declines,
                ..Purchase::new()
            };
            let (outcome, history) = run(&engine, &DECLINE_GUARDED, data).await;
            assert_eq!(
                failed(outcome, &history),
                InstanceError::ArrivalsExhausted { node: "approved" },
                "{history}"
            );
            let deaths: &[&str] = if legal_declines {
                &["legal_declined"]
            } else {
                &[]
            };
            check_failed_at_once(&history, "approved", deaths, true);
            assert_eq!(
                history.count("approved", |h| *h == Happening::Waiting),
                if legal_declines { 2 } else { 3 },
                "every branch that could arrive did\n{history}"
            );
        })
        .await;
    }
    repeat(RUNS, |engine, _| async move {
        let data = Purchase {
            urgent: true,
            ..Purchase::new()
        };
        let (outcome, history) = run(&engine, &DECLINE_GUARDED, data).await;
        let firing = check_fired(&history, "approved", |arrived| arrived.len() >= 2);
        completed(outcome, &history);
        assert_eq!(firing.consumed.len(), 1, "{history}");
    })
    .await;
}

/// Silence the panic messages of the activation condition that panics on purpose;
/// every other panic (a failing assertion) still prints.
fn quiet_guard_panics() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let default = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            let payload = info.payload();
            let message = payload
                .downcast_ref::<&str>()
                .copied()
                .or_else(|| payload.downcast_ref::<String>().map(String::as_str));
            if message != Some("the guard exploded") {
                default(info);
            }
        }));
    });
}

process! {
    /// The activation condition panics when it is evaluated (not urgent).
    GUARD_PANICS: Purchase {
        start requested;
        parallel ask;
        task manager = approve_manager;
        task cfo = approve_cfo;
        task legal = approve_legal;
        complex approved: activate(count = 1, when = |p| p.urgent || panic!("the guard exploded"));
        task order = place_order;
        end done;

        requested -> ask -> manager, cfo, legal;
        manager, cfo, legal -> approved -> order -> done;
    }
}

/// An activation condition that panics fails the instance with
/// ActivationConditionPanicked, carrying the message, at the first arrival (the first
/// time the triple's count is met and its condition is evaluated).
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn activation_condition_panic_fails_the_instance() {
    quiet_guard_panics();
    repeat(RUNS, |engine, _| async move {
        let (outcome, history) = run(&engine, &GUARD_PANICS, Purchase::new()).await;
        assert_eq!(
            failed(outcome, &history),
            InstanceError::ActivationConditionPanicked {
                node: "approved",
                message: "the guard exploded".into()
            },
            "{history}"
        );
        // The first arrival meets the count, so the guard runs on the spot and its
        // panic fails the instance: the arriving token is cancelled at the join.
        let at_join: Vec<_> = steps_at(&history, "approved")
            .into_iter()
            .map(|(_, _, w)| w)
            .collect();
        assert_eq!(at_join, [Happening::Cancelled], "{history}");
        assert_eq!(history.count("order", |h| *h == Happening::TaskStarted), 0);
        assert_eq!(
            history.steps().last().map(|s| &s.what),
            Some(&Happening::Cancelled)
        );
    })
    .await;
}

// ----- the instance fails, never completes -----------------------------------------

/// The third of the Go engine's flaky trio: the dying required branch races with the
/// arrivals (every handler yields exactly once, so the CFO's death and the others'
/// arrivals land in adjacent loop steps in any order). The outcome is always
/// Failed(ActivationUnsatisfiable), never Completed; every track still live when the
/// join aborts is cancelled; nothing runs after the join.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn abort_fails_the_instance_even_when_the_death_races_arrivals() {
    // The CFO's required branch dies; or, for a plain 2 of 3, the CFO's and legal's.
    for both_die in [false, true] {
        repeat(RUNS, move |engine, _| async move {
            let data = Purchase {
                cfo_declines: true,
                legal_declines: both_die,
                race: true,
                ..Purchase::new()
            };
            let process = if both_die {
                &DECLINE_COUNT
            } else {
                &DECLINE_REQUIRED
            };
            let (outcome, history) = run(&engine, process, data).await;
            match &outcome {
                Outcome::Failed(InstanceError::ActivationUnsatisfiable { node: "approved" }) => {}
                other => {
                    panic!("expected Failed(ActivationUnsatisfiable), got {other:?}\n{history}")
                }
            }
            let deaths: &[&str] = if both_die {
                &["cfo_declined", "legal_declined"]
            } else {
                &["cfo_declined"]
            };
            check_failed_at_once(&history, "approved", deaths, false);
            // Every track that had not ended was cancelled, once.
            let live: Vec<TrackId> = history
                .steps()
                .iter()
                .filter(|s| s.what == Happening::Cancelled)
                .map(|s| s.track)
                .collect();
            assert!(!live.is_empty(), "{history}");
            assert_eq!(
                history.count("approved", |h| *h == Happening::Waiting),
                history.count("approved", |h| *h == Happening::Cancelled),
                "every token waiting at the join was cancelled\n{history}"
            );
        })
        .await;
    }
}

/// Cancelling an instance while a token waits at the complex join: Cancelled, the
/// join never fires, the waiting token and the held branches are cancelled.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn cancel_while_waiting_at_the_join() {
    repeat(RUNS, |engine, _| async move {
        let gates = Gates::closed();
        let data = Purchase {
            gates: gates.clone(),
            ..Purchase::new()
        };
        let handle = engine.start(&CFO_REQUIRED, data).await.unwrap();
        gates.release(MANAGER);
        until(&handle, "the manager waits at the join", |h| {
            h.count("approved", |w| *w == Happening::Waiting) == 1
        })
        .await;
        handle.cancel();
        let (outcome, history) = finish(&handle).await;
        assert!(
            matches!(outcome, Outcome::Cancelled(_)),
            "{outcome:?}\n{history}"
        );
        assert_eq!(history.fired("approved"), 0, "{history}");
        assert_eq!(
            history.count("approved", |h| *h == Happening::Cancelled),
            1,
            "{history}"
        );
        for task in ["cfo", "legal"] {
            assert_eq!(
                history.count(task, |h| *h == Happening::Cancelled),
                1,
                "{history}"
            );
        }
        assert_eq!(history.count("order", |h| *h == Happening::TaskStarted), 0);
    })
    .await;
}
