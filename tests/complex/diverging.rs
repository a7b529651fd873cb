//! A diverging complex gateway splits like an inclusive one.

use super::*;

process! {
    /// One incoming flow: the complex gateway only splits, like an inclusive one.
    SPLIT: Pick {
        start s;
        complex pick;
        task a = run_a;
        task b = run_b;
        task c = run_c;
        inclusive merge;
        end done;

        s -> pick;
        pick -> a when |p| p.a;
        pick -> b when |p| p.b;
        pick -> c else;
        a, b, c -> merge -> done;
    }
}

process! {
    SPLIT_NO_DEFAULT: Pick {
        start s;
        complex pick;
        task a = run_a;
        task b = run_b;
        inclusive merge;
        end done;

        s -> pick;
        pick -> a when |p| p.a;
        pick -> b when |p| p.b;
        a, b -> merge -> done;
    }
}

/// A complex gateway with one incoming flow splits like an inclusive gateway: every
/// true flow is taken, the default only when none is, and with no default and no true
/// condition the instance fails with NoFlowTaken.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn diverging_complex_splits_like_an_inclusive_gateway() {
    for (a, b) in [(true, true), (true, false), (false, true), (false, false)] {
        repeat(RUNS, move |engine, _| async move {
            let (outcome, history) = run(
                &engine,
                &SPLIT,
                Pick {
                    a,
                    b,
                    ..Pick::default()
                },
            )
            .await;
            let data = completed(outcome, &history);
            let mut expected = Vec::new();
            if a {
                expected.push("a");
            }
            if b {
                expected.push("b");
            }
            if expected.is_empty() {
                expected.push("c");
            }
            let routed: Vec<Vec<&str>> = steps_at(&history, "pick")
                .into_iter()
                .filter_map(|(_, _, w)| match w {
                    Happening::Routed { to } => Some(to.to_vec()),
                    _ => None,
                })
                .collect();
            assert_eq!(routed, [expected.clone()], "{history}");
            assert_eq!(sorted(history.completed_tasks()), expected, "{history}");
            assert_eq!((data.a_ran, data.b_ran, data.c_ran), (a, b, !a && !b));
            assert_eq!(history.fired("merge"), 1, "{history}");
            assert_eq!(history.ended_at(), ["done"]);
        })
        .await;
        repeat(RUNS, move |engine, _| async move {
            let (outcome, history) = run(
                &engine,
                &SPLIT_NO_DEFAULT,
                Pick {
                    a,
                    b,
                    ..Pick::default()
                },
            )
            .await;
            if a || b {
                let data = completed(outcome, &history);
                assert_eq!((data.a_ran, data.b_ran), (a, b));
            } else {
                assert_eq!(
                    failed(outcome, &history),
                    InstanceError::NoFlowTaken { node: "pick" },
                    "{history}"
                );
                assert!(history.completed_tasks().is_empty(), "{history}");
            }
        })
        .await;
    }
}
