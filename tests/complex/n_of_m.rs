//! N of M: the discriminator, partial and full joins, a join that splits, two tokens
//! on one flow; tail tokens after the join fired.

use super::*;

// ----- N of M ----------------------------------------------------------------------

process! {
    /// 1 of 3: the discriminator.
    DISCRIMINATOR: Purchase {
        start requested;
        parallel ask;
        task manager = approve_manager;
        task cfo = approve_cfo;
        task legal = approve_legal;
        complex approved: activate(count = 1);
        task order = place_order;
        end done;

        requested -> ask -> manager, cfo, legal;
        manager, cfo, legal -> approved -> order -> done;
    }
}

/// 1 of 3: fires once, on the first arrival; the other two are consumed; the task
/// after the join runs exactly once.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn discriminator_fires_once_on_the_first_arrival() {
    repeat(RUNS, |engine, _| async move {
        let (outcome, history) = run(&engine, &DISCRIMINATOR, Purchase::new()).await;
        let firing = check_fired(&history, "approved", |arrived| !arrived.is_empty());
        let data = completed(outcome, &history);
        assert_eq!(firing.arrived.len(), 1, "{history}");
        assert_eq!(firing.consumed.len(), 2, "{history}");
        assert_eq!(
            sorted([firing.arrived.clone(), firing.consumed.clone()].concat()),
            ["cfo", "legal", "manager"]
        );
        assert_eq!(history.fired("approved"), 1);
        assert_eq!(history.count("approved", |h| *h == Happening::Merged), 0);
        assert_eq!(completions(&history, "order"), 1, "{history}");
        assert_eq!(data.ordered, 1);
        assert!(data.manager_ok && data.cfo_ok && data.legal_ok);
        assert_eq!(history.ended_at(), ["done"]);
    })
    .await;
}

/// A discriminator fires on the CFO; the manager and legal are held until the task
/// after the join has completed, then arrive: both are consumed at the join (no
/// waiting, no second firing) and the instance still completes.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn tail_tokens_are_consumed_and_the_instance_completes() {
    for first in [MANAGER, CFO, LEGAL] {
        repeat(RUNS, move |engine, _| async move {
            let gates = Gates::closed();
            let data = Purchase {
                gates: gates.clone(),
                ..Purchase::new()
            };
            let handle = engine.start(&DISCRIMINATOR, data).await.unwrap();
            gates.release(first);
            let before = until(&handle, "`order` completes", |h| {
                completions(h, "order") == 1
            })
            .await;
            assert_eq!(
                before.count("approved", |h| *h == Happening::Consumed),
                0,
                "{before}"
            );
            for who in [MANAGER, CFO, LEGAL] {
                if who != first {
                    gates.release(who);
                }
            }
            let (outcome, history) = finish(&handle).await;
            let firing = check_fired(&history, "approved", |arrived| !arrived.is_empty());
            let data = completed(outcome, &history);
            assert_eq!(
                firing.arrived,
                [["manager", "cfo", "legal"][first]],
                "{history}"
            );
            assert_eq!(firing.consumed.len(), 2, "{history}");
            let order_done = history
                .steps()
                .iter()
                .position(|s| s.node == "order" && matches!(s.what, Happening::Completed { .. }))
                .expect("order completed");
            assert!(
                firing.consumed_at.iter().all(|&c| c > order_done),
                "the tail arrived after `order`\n{history}"
            );
            assert!(firing.fired_at < order_done);
            assert_eq!(history.fired("approved"), 1);
            assert_eq!(completions(&history, "order"), 1);
            assert_eq!(data.ordered, 1);
            assert!(data.manager_ok && data.cfo_ok && data.legal_ok);
            assert_eq!(history.ended_at(), ["done"]);
        })
        .await;
    }
}

process! {
    /// 2 of 3: a partial join.
    PARTIAL: Purchase {
        start requested;
        parallel ask;
        task manager = approve_manager;
        task cfo = approve_cfo;
        task legal = approve_legal;
        complex approved: activate(count = 2);
        task order = place_order;
        end done;

        requested -> ask -> manager, cfo, legal;
        manager, cfo, legal -> approved -> order -> done;
    }
}

/// 2 of 3: fires on the second arrival, which carries on; the first is merged, the
/// third consumed.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn partial_join_fires_on_the_second_arrival() {
    repeat(RUNS, |engine, _| async move {
        let (outcome, history) = run(&engine, &PARTIAL, Purchase::new()).await;
        let firing = check_fired(&history, "approved", |arrived| arrived.len() >= 2);
        let data = completed(outcome, &history);
        assert_eq!(firing.arrived.len(), 2, "{history}");
        assert_eq!(firing.consumed.len(), 1, "{history}");
        assert_eq!(history.fired("approved"), 1);
        assert_eq!(history.count("approved", |h| *h == Happening::Merged), 1);
        assert_eq!(completions(&history, "order"), 1, "{history}");
        assert_eq!(data.ordered, 1);
    })
    .await;
}

process! {
    /// 3 of 3: N = M, a parallel join by another name.
    ALL: Purchase {
        start requested;
        parallel ask;
        task manager = approve_manager;
        task cfo = approve_cfo;
        task legal = approve_legal;
        complex approved: activate(count = 3);
        task order = place_order;
        end done;

        requested -> ask -> manager, cfo, legal;
        manager, cfo, legal -> approved -> order -> done;
    }
}

/// 3 of 3: waits for every branch, fires on the last, consumes nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn all_of_three_waits_for_every_branch() {
    repeat(RUNS, |engine, _| async move {
        let (outcome, history) = run(&engine, &ALL, Purchase::new()).await;
        let firing = check_fired(&history, "approved", |arrived| arrived.len() == 3);
        let data = completed(outcome, &history);
        assert!(firing.consumed.is_empty(), "{history}");
        assert_eq!(history.count("approved", |h| *h == Happening::Merged), 2);
        assert_eq!(completions(&history, "order"), 1, "{history}");
        assert_eq!(data.ordered, 1);
        assert!(data.manager_ok && data.cfo_ok && data.legal_ok);
    })
    .await;
}

process! {
    /// 2 of 3, then an inclusive-style split on what the arrivals wrote.
    JOIN_AND_SPLIT: Purchase {
        start requested;
        parallel ask;
        task manager = approve_manager;
        task cfo = approve_cfo;
        task legal = approve_legal;
        complex approved: activate(count = 2);
        task order = place_order;
        task file = file_it;
        end done;
        end filed;

        requested -> ask -> manager, cfo, legal;
        manager, cfo, legal -> approved;
        approved -> order when |p| p.cfo_ok;
        approved -> file when |p| p.legal_ok;
        order -> done;
        file -> filed;
    }
}

/// A join that also splits: after 2 of 3 the fired token takes every outgoing flow
/// whose condition holds on the data the arrivals committed — `order` when the CFO was
/// among them, `file` when legal was — and the third arrival is consumed.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn join_that_splits_takes_every_true_flow() {
    repeat(RUNS, |engine, _| async move {
        let (outcome, history) = run(&engine, &JOIN_AND_SPLIT, Purchase::new()).await;
        let firing = check_fired_to(&history, "approved", |arrived| arrived.len() >= 2);
        let data = completed(outcome, &history);
        let mut expected = Vec::new();
        if firing.arrived.contains(&"cfo") {
            expected.push("order");
        }
        if firing.arrived.contains(&"legal") {
            expected.push("file");
        }
        assert_eq!(firing.routed, expected, "{history}");
        assert_eq!(firing.consumed.len(), 1, "{history}");
        assert_eq!(
            (data.ordered, data.filed),
            (
                u32::from(expected.contains(&"order")),
                u32::from(expected.contains(&"file"))
            )
        );
        let mut ends = history.ended_at();
        ends.sort_unstable();
        let mut want: Vec<&str> = expected
            .iter()
            .map(|t| if *t == "order" { "done" } else { "filed" })
            .collect();
        want.sort_unstable();
        assert_eq!(ends, want, "{history}");
    })
    .await;
}

process! {
    /// The manager's and legal's tokens share one incoming flow (through the exclusive
    /// merge `desk`); 2 of the 2 flows: the CFO's and one from the desk.
    FUNNEL: Purchase {
        start requested;
        parallel ask;
        task manager = approve_manager;
        task legal = approve_legal;
        exclusive desk: multi;
        task cfo = approve_cfo;
        complex approved: activate(count = 2);
        task order = place_order;
        end done;

        requested -> ask -> manager, legal, cfo;
        manager, legal -> desk -> approved;
        cfo -> approved;
        approved -> order -> done;
    }
}

/// Two tokens on one incoming flow: `count` counts flows, not tokens. The join fires
/// once the CFO's flow and the desk's flow both hold a token, taking one from each (the
/// later carries on); the other desk token is consumed — drained from the queue if it
/// was already waiting, or on arrival if it comes later.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn two_tokens_on_one_flow_count_once() {
    repeat(RUNS, |engine, _| async move {
        let (outcome, history) = run(&engine, &FUNNEL, Purchase::new()).await;
        let data = completed(outcome, &history);
        assert_eq!(data.ordered, 1);
        let steps = steps_at(&history, "approved");
        let name = |i: usize, t: TrackId| source(&history, t, i);
        let waiting: Vec<TrackId> = steps
            .iter()
            .filter(|(_, _, w)| *w == Happening::Waiting)
            .map(|(_, t, _)| *t)
            .collect();
        let pick = |what: Happening| -> Vec<TrackId> {
            steps
                .iter()
                .filter(|(_, _, w)| *w == what)
                .map(|(_, t, _)| *t)
                .collect()
        };
        // Arrivals in order: those that waited, then the one that completed the rule
        // (it fires on the spot), then any that came after (consumed on arrival).
        let fired = pick(Happening::Fired);
        assert_eq!(fired.len(), 1, "{history}");
        let consumed = pick(Happening::Consumed);
        assert_eq!(consumed.len(), 1, "{history}");
        let (i, _, _) = steps
            .iter()
            .find(|(_, t, w)| *t == fired[0] && *w == Happening::Fired)
            .expect("fired");
        let cfo_fired = name(*i, fired[0]) == "cfo";
        if waiting.len() == 2 {
            assert!(
                cfo_fired,
                "two tokens waited, so they were the desk's\n{history}"
            );
            // The CFO came last: both desk tokens waited on one flow; the first merged
            // and the second, left on its flow when the join fired, was consumed.
            assert_eq!(waiting.len(), 2, "{history}");
            assert_eq!(pick(Happening::Merged), [waiting[0]], "{history}");
            assert_eq!(consumed, [waiting[1]], "{history}");
        } else {
            // The join fired as soon as both flows held a token; the third arrived
            // later and was consumed without waiting.
            assert_eq!(
                waiting.len(),
                1,
                "the join fires as soon as both flows hold a token\n{history}"
            );
            assert_eq!(pick(Happening::Merged), waiting, "{history}");
            assert!(!waiting.contains(&consumed[0]), "{history}");
        }
        assert_eq!(completions(&history, "order"), 1, "{history}");
    })
    .await;
}

// ----- tail tokens -----------------------------------------------------------------
