//! `on = [field]` filters: which commits re-evaluate a condition.

use super::*;

/// The four commits of the filter scenarios: `a = 1` (the condition is still false),
/// `b = 5` (unrelated), `gate = true` (true now; a field the filtered catch does not
/// watch), `a = 2` (a watched field). `fires_at` is the commit (1-based) that must fire
/// the catch; the stamp shows what the data was when it fired.
async fn filter_scenario(process: &'static thresh::Process<Gauge>, fires_at: usize) {
    let engine = Engine::new();
    let handle = engine.start(process, Gauge::default()).await.unwrap();
    let commits: [fn(&mut Gauge); 4] = [|d| d.a = 1, |d| d.b = 5, |d| d.gate = true, |d| d.a = 2];
    for (n, commit) in commits.into_iter().enumerate() {
        let n = n + 1;
        set(&handle, commit).await;
        if n < fires_at {
            not_fired(&handle, &format!("commit {n}")).await;
        } else if n == fires_at {
            // Fired: wait for its stamp before any further commit.
            expect_that(&handle, "`ready` fired and stamped", stamped).await;
        }
    }
    finish_setting(&handle).await;
    let (outcome, history) = finish_strict(&handle).await;
    let data = completed(outcome, &history);
    let expected_a = if fires_at == 4 { 2 } else { 1 };
    assert_eq!(
        (data.seen_a, data.seen_b, data.seen_gate),
        (expected_a, 5, true),
        "fired on the wrong commit\n{history}"
    );
    assert_eq!(count(&history, "ready", &Happening::Parked), 1);
    assert_eq!(count(&history, "ready", &caught(&[])), 1);
    // The catch was caught after the commit that fired it.
    let sets = indices(&history, "set", |h| {
        matches!(h, Happening::Completed { .. })
    });
    assert_eq!(sets.len(), 5);
    let caught_at = index_of(&history, "ready", &caught(&[]));
    assert!(
        caught_at > sets[fires_at - 1] && caught_at < sets[fires_at],
        "{history}"
    );
}

process! {
    /// Fires when `a >= 1 && gate`, but re-evaluated only on commits that change `a`.
    FILTERED: Gauge {
        start     s;
        parallel  fork;
        catch     ready: condition(|d| d.a >= 1 && d.gate, on = [a]);
        task      stamp = |d| async move {
            d.seen_a = d.a;
            d.seen_b = d.b;
            d.seen_gate = d.gate;
            Ok(())
        };
        catch     top: link("set");
        user      set;
        exclusive more;
        throw     again: link("set");
        parallel  join;
        end       e;
        s -> fork -> ready, set;
        top -> set;
        ready -> stamp -> join;
        set -> more;
        more -> again when |d| !d.finished;
        more -> join else;
        join -> e;
    }
}

/// `on = [a]`: commits to `b` and `gate` are not looked at, though `gate = true`
/// makes the condition true; the next commit to `a` fires it.
async fn a_filtered_condition_fires_only_on_commits_to_its_fields(_: usize) {
    filter_scenario(&FILTERED, 4).await;
}

process! {
    /// The same condition, re-evaluated on every commit.
    UNFILTERED: Gauge {
        start     s;
        parallel  fork;
        catch     ready: condition(|d| d.a >= 1 && d.gate);
        task      stamp = |d| async move {
            d.seen_a = d.a;
            d.seen_b = d.b;
            d.seen_gate = d.gate;
            Ok(())
        };
        catch     top: link("set");
        user      set;
        exclusive more;
        throw     again: link("set");
        parallel  join;
        end       e;
        s -> fork -> ready, set;
        top -> set;
        ready -> stamp -> join;
        set -> more;
        more -> again when |d| !d.finished;
        more -> join else;
        join -> e;
    }
}

/// Without `on` every commit re-evaluates: `gate = true` fires it.
async fn an_unfiltered_condition_fires_on_any_commit(_: usize) {
    filter_scenario(&UNFILTERED, 3).await;
}

process! {
    /// The same condition, re-evaluated on commits that change `a` or `gate`.
    BOTH_FIELDS: Gauge {
        start     s;
        parallel  fork;
        catch     ready: condition(|d| d.a >= 1 && d.gate, on = [a, gate]);
        task      stamp = |d| async move {
            d.seen_a = d.a;
            d.seen_b = d.b;
            d.seen_gate = d.gate;
            Ok(())
        };
        catch     top: link("set");
        user      set;
        exclusive more;
        throw     again: link("set");
        parallel  join;
        end       e;
        s -> fork -> ready, set;
        top -> set;
        ready -> stamp -> join;
        set -> more;
        more -> again when |d| !d.finished;
        more -> join else;
        join -> e;
    }
}

/// `on = [a, gate]`: the commit to `gate` fires it.
async fn a_condition_watching_two_fields_fires_on_either(_: usize) {
    filter_scenario(&BOTH_FIELDS, 3).await;
}

both_runtimes!(RUNS => a_filtered_condition_fires_only_on_commits_to_its_fields,
    an_unfiltered_condition_fires_on_any_commit,
    a_condition_watching_two_fields_fires_on_either);
