//! Required flows and data-guarded triples of the activation condition.

use super::*;

// ----- required flows --------------------------------------------------------------

/// "The CFO must be one of the two", in whatever order the branches come: the join
/// fires exactly when the CFO and one other have arrived, never on the manager and
/// legal alone. (The first of the Go engine's flaky trio: the required gate.)
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn required_flow_must_be_among_the_arrivals() {
    repeat(RUNS, |engine, _| async move {
        let (outcome, history) = run(&engine, &CFO_REQUIRED, Purchase::new()).await;
        let firing = check_fired(&history, "approved", |arrived| {
            arrived.len() >= 2 && arrived.contains(&"cfo")
        });
        completed(outcome, &history);
        assert!(firing.arrived.contains(&"cfo"), "{history}");
        assert_eq!(firing.arrived.len() + firing.consumed.len(), 3, "{history}");
        assert_eq!(completions(&history, "order"), 1, "{history}");
    })
    .await;
}

/// The manager and legal arrive first: the join holds both; when the CFO arrives it
/// fires on all three, the CFO carrying on.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn required_flow_holds_the_join_until_it_arrives() {
    repeat(RUNS, |engine, i| async move {
        let gates = Gates::closed();
        let data = Purchase {
            gates: gates.clone(),
            ..Purchase::new()
        };
        let handle = engine.start(&CFO_REQUIRED, data).await.unwrap();
        let (first, second) = [(MANAGER, LEGAL), (LEGAL, MANAGER)][i % 2];
        gates.release(first);
        if random() & 1 == 0 {
            tokio::task::yield_now().await;
        }
        gates.release(second);
        let held = until(&handle, "manager and legal wait at the join", |h| {
            h.count("approved", |w| *w == Happening::Waiting) == 2
        })
        .await;
        assert_eq!(
            held.fired("approved"),
            0,
            "two arrivals without the CFO must not fire the join\n{held}"
        );
        assert_eq!(held.count("cfo", |w| *w == Happening::TaskStarted), 1);
        assert_eq!(completions(&held, "cfo"), 0);
        gates.release(CFO);
        let (outcome, history) = finish(&handle).await;
        let firing = check_fired(&history, "approved", |arrived| {
            arrived.len() >= 2 && arrived.contains(&"cfo")
        });
        completed(outcome, &history);
        assert_eq!(firing.arrived.len(), 3, "{history}");
        assert_eq!(firing.arrived[2], "cfo", "{history}");
        assert!(firing.consumed.is_empty(), "{history}");
        assert_eq!(history.count("approved", |h| *h == Happening::Merged), 2);
        assert_eq!(completions(&history, "order"), 1, "{history}");
    })
    .await;
}

// ----- data-guarded triples --------------------------------------------------------

process! {
    /// 2 of 3 with the CFO; when urgent, the CFO alone.
    URGENT: Purchase {
        start requested;
        parallel ask;
        task manager = approve_manager;
        task cfo = approve_cfo;
        task legal = approve_legal;
        complex approved: activate(count = 2, require = [cfo])
                        | activate(count = 1, require = [cfo], when = |p| p.urgent);
        task order = place_order;
        end done;

        requested -> ask -> manager, cfo, legal;
        manager, cfo, legal -> approved -> order -> done;
    }
}

/// The CFO arrives alone: when urgent, the guarded triple (the CFO alone) fires at
/// once and the others are consumed; otherwise the join waits for a second approval.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn data_guard_chooses_the_triple() {
    for urgent in [true, false] {
        repeat(RUNS, move |engine, _| async move {
            let gates = Gates::closed();
            let data = Purchase {
                urgent,
                gates: gates.clone(),
                ..Purchase::new()
            };
            let handle = engine.start(&URGENT, data).await.unwrap();
            gates.release(CFO);
            // Urgent, the CFO's arrival fires on the spot; otherwise it waits.
            let seen = until(&handle, "the CFO reaches the join", |h| {
                h.count("approved", |w| {
                    matches!(w, Happening::Waiting | Happening::Fired)
                }) == 1
            })
            .await;
            assert_eq!(
                seen.fired("approved"),
                usize::from(urgent),
                "urgent: {urgent}\n{seen}"
            );
            gates.release(MANAGER);
            until(&handle, "the join fires", |h| h.fired("approved") == 1).await;
            gates.release(LEGAL);
            let (outcome, history) = finish(&handle).await;
            let firing = check_fired(&history, "approved", |arrived| {
                arrived.contains(&"cfo") && (urgent || arrived.len() >= 2)
            });
            let data = completed(outcome, &history);
            if urgent {
                assert_eq!(firing.arrived, ["cfo"], "{history}");
                assert_eq!(sorted(firing.consumed), ["legal", "manager"], "{history}");
            } else {
                assert_eq!(firing.arrived, ["cfo", "manager"], "{history}");
                assert_eq!(firing.consumed, ["legal"], "{history}");
            }
            assert_eq!(data.ordered, 1);
        })
        .await;
    }
}

process! {
    /// Any one arrival, once legal has approved: the guard reads data a branch writes.
    LEGAL_DECIDES: Purchase {
        start requested;
        parallel ask;
        task manager = approve_manager;
        task cfo = approve_cfo;
        task legal = approve_legal;
        complex approved: activate(count = 1, when = |p| p.legal_ok);
        task order = place_order;
        end done;

        requested -> ask -> manager, cfo, legal;
        manager, cfo, legal -> approved -> order -> done;
    }
}

/// A guard over data a branch writes: `count = 1, when = legal_ok` fires exactly on
/// legal's arrival (its commit and arrival are one loop step), whatever came before.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn data_guard_reads_data_a_branch_wrote() {
    repeat(RUNS, |engine, _| async move {
        let (outcome, history) = run(&engine, &LEGAL_DECIDES, Purchase::new()).await;
        let firing = check_fired(&history, "approved", |arrived| arrived.contains(&"legal"));
        completed(outcome, &history);
        assert_eq!(firing.arrived.last(), Some(&"legal"), "{history}");
        assert_eq!(completions(&history, "order"), 1, "{history}");
    })
    .await;
}
