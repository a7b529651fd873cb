//! A condition true when armed fires at once: on every visit, before or despite a
//! commit in the same step, and on a boundary at the start of its activity.

use super::*;

process! {
    /// A catch whose condition may already hold when the token arrives.
    ALREADY: Gauge {
        start s;
        catch ready: condition(|d| d.level >= 3, on = [level]);
        end   e;
        s -> ready -> e;
    }
}

/// True when armed: the catch fires at once, though no commit touches `level`.
/// False when armed: it waits (and nothing else ever commits here).
#[tokio::test(start_paused = true)]
async fn a_condition_true_when_armed_fires_at_once() {
    let engine = Engine::new();
    let data = Gauge {
        level: 5,
        ..Gauge::default()
    };
    let (outcome, history) = finish_strict(&engine.start(&ALREADY, data).await.unwrap()).await;
    completed(outcome, &history);
    assert_eq!(
        steps(&history),
        [
            (0, "s", Happening::Started),
            (0, "ready", Happening::Parked),
            (0, "ready", caught(&[])),
            (0, "e", Happening::Ended),
        ]
    );

    let waiting = engine.start(&ALREADY, Gauge::default()).await.unwrap();
    tokio::time::sleep(Duration::from_secs(3600)).await;
    assert!(!waiting.is_finished());
    assert_eq!(
        steps(&waiting.history().await),
        [
            (0, "s", Happening::Started),
            (0, "ready", Happening::Parked)
        ]
    );
    waiting.cancel();
    let (outcome, _) = finish_strict(&waiting).await;
    assert_eq!(outcome.kind(), "cancelled");
}

process! {
    /// The catch is armed anew on every lap of a link loop.
    REVISIT: Gauge {
        start     s;
        catch     top: link("top");
        catch     ready: condition(|d| d.level >= 3, on = [level]);
        task      count = |d| async move {
            d.rounds += 1;
            Ok(())
        };
        exclusive more;
        throw     back: link("top");
        end       e;
        s -> ready;
        top -> ready;
        ready -> count -> more;
        more -> back when |d| d.rounds < d.limit;
        more -> e else;
    }
}

/// Each visit arms the catch anew, with its own edge state: a condition that stays
/// true fires on every visit.
async fn a_condition_armed_on_every_visit_fires_on_every_visit(i: usize) {
    let engine = Engine::new();
    let limit = 1 + (i % 30) as u32;
    let data = Gauge {
        level: 3,
        limit,
        ..Gauge::default()
    };
    let (outcome, history) = finish_strict(&engine.start(&REVISIT, data).await.unwrap()).await;
    assert_eq!(completed(outcome, &history).rounds, limit);
    let mut rows = vec![(0, "s", Happening::Started)];
    for k in 1..=limit {
        rows.push((0, "ready", Happening::Parked));
        rows.push((0, "ready", caught(&[])));
        rows.push((0, "count", Happening::TaskStarted));
        rows.push((0, "count", done(&["rounds"])));
        rows.push((0, "more", routed(&[if k < limit { "back" } else { "e" }])));
    }
    rows.push((0, "e", Happening::Ended));
    assert_eq!(steps(&history), rows);
}

multi_thread!(RUNS => a_condition_armed_on_every_visit_fires_on_every_visit);

process! {
    /// True when the catch is armed; a sibling branch's task, ready at once, makes it
    /// false in the same loop step.
    FLEETING: Gauge {
        start    s;
        parallel fork;
        catch    ready: condition(|d| d.x == 0);
        task     spoil = |d| async move {
            d.x = 1;
            Ok(())
        };
        parallel join;
        end      e;
        s -> fork -> ready, spoil;
        ready, spoil -> join -> e;
    }
}

/// True when armed — and a sibling's commit in the same loop step makes it false.
/// The condition is evaluated once when the subscription is armed and
/// an already-true one fires at once; so `ready` fires and the join completes.
#[tokio::test(start_paused = true)]
async fn a_condition_true_when_armed_fires_even_if_a_same_step_commit_falsifies_it() {
    let engine = Engine::new();
    let (outcome, history) =
        finish_strict(&engine.start(&FLEETING, Gauge::default()).await.unwrap()).await;
    assert_eq!(completed(outcome, &history).x, 1);
    assert_eq!(count(&history, "ready", &caught(&[])), 1, "{history}");
}

process! {
    /// The same, but the sibling's task has to wait before it commits.
    FLEETING_LATER: Gauge {
        start    s;
        parallel fork;
        catch    ready: condition(|d| d.x == 0);
        task     spoil = |d| async move {
            tokio::task::yield_now().await;
            d.x = 1;
            Ok(())
        };
        parallel join;
        end      e;
        s -> fork -> ready, spoil;
        ready, spoil -> join -> e;
    }
}

/// The same process where the sibling's task commits in a later step: the catch was
/// evaluated true when armed and fired.
#[tokio::test(start_paused = true)]
async fn a_condition_true_when_armed_fires_before_a_later_commit_falsifies_it() {
    let engine = Engine::new();
    let (outcome, history) = finish_strict(
        &engine
            .start(&FLEETING_LATER, Gauge::default())
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(completed(outcome, &history).x, 1);
    assert_eq!(count(&history, "ready", &caught(&[])), 1, "{history}");
}

/// The rows of an activity `at` stopped when armed by the boundary `by`.
fn stopped_at_start(at: &'static str, started: Happening, by: &'static str) -> Vec<Row> {
    vec![
        (0, "s", Happening::Started),
        (0, at, started),
        (0, at, interrupted(by)),
        (1, by, spawned(0)),
        (1, by, caught(&[])),
        (1, "hot_end", Happening::Ended),
    ]
}

process! {
    /// The same, but the handler has to wait first.
    AT_START_LATER: Gauge {
        start    s;
        task     quick = |d| async move {
            tokio::task::yield_now().await;
            d.x = 1;
            Ok(())
        };
        boundary hot on quick: condition(|d| d.temp > 100, on = [temp]);
        end      done;
        end      hot_end;
        s -> quick -> done;
        hot -> hot_end;
    }
}

process! {
    /// An interrupting one on a user task.
    AT_START_USER: Gauge {
        start    s;
        user     review;
        boundary hot on review: condition(|d| d.temp > 100, on = [temp]);
        end      done;
        end      hot_end;
        s -> review -> done;
        hot -> hot_end;
    }
}

/// An interrupting conditional boundary that is true when its activity starts fires
/// at once: a user task is withdrawn as soon as it waits, a task whose handler has to
/// wait is stopped before its handler's write.
#[tokio::test(start_paused = true)]
async fn a_boundary_condition_true_at_the_start_stops_its_activity() {
    let engine = Engine::new();
    let hot = Gauge {
        temp: 150,
        ..Gauge::default()
    };
    let (outcome, history) =
        finish_strict(&engine.start(&AT_START_USER, hot.clone()).await.unwrap()).await;
    completed(outcome, &history);
    assert_eq!(
        steps(&history),
        stopped_at_start("review", Happening::Parked, "hot")
    );

    let (outcome, history) =
        finish_strict(&engine.start(&AT_START_LATER, hot.clone()).await.unwrap()).await;
    assert_eq!(completed(outcome, &history).x, 0);
    assert_eq!(
        steps(&history),
        stopped_at_start("quick", Happening::TaskStarted, "hot")
    );

    // False at the start: the task completes.
    let (outcome, history) = finish_strict(
        &engine
            .start(&AT_START_LATER, Gauge::default())
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(completed(outcome, &history).x, 1);
    assert_eq!(history.ended_at(), ["done"]);
}

process! {
    /// An interrupting conditional boundary on a task whose handler is ready at once.
    AT_START: Gauge {
        start    s;
        task     quick = |d| async move {
            d.x = 1;
            Ok(())
        };
        boundary hot on quick: condition(|d| d.temp > 100, on = [temp]);
        end      done;
        end      hot_end;
        s -> quick -> done;
        hot -> hot_end;
    }
}

process! {
    /// A non-interrupting one on a task whose handler is ready at once.
    AT_START_NON_INTERRUPTING: Gauge {
        start    s;
        task     quick = |d| async move {
            d.x = 1;
            Ok(())
        };
        boundary warm on quick: non_interrupting condition(|d| d.temp > 100, on = [temp]);
        end      done;
        end      warm_end;
        s -> quick -> done;
        warm -> warm_end;
    }
}

/// The same when the task's handler is ready at once: the boundary is armed before
/// the handler runs (ARCHITECTURE.md, "Events") and is true then, so it
/// fires — the interrupting one stops the task, the non-interrupting one starts a
/// token.
#[tokio::test(start_paused = true)]
async fn a_boundary_condition_true_at_the_start_fires_even_for_a_task_ready_at_once() {
    let engine = Engine::new();
    let hot = Gauge {
        temp: 150,
        ..Gauge::default()
    };
    let (outcome, history) = finish_strict(
        &engine
            .start(&AT_START_NON_INTERRUPTING, hot.clone())
            .await
            .unwrap(),
    )
    .await;
    completed(outcome, &history);
    assert_eq!(spawns(&history, "warm"), 1, "{history}");

    let (outcome, history) = finish_strict(&engine.start(&AT_START, hot).await.unwrap()).await;
    assert_eq!(completed(outcome, &history).x, 0, "{history}");
    assert_eq!(
        steps(&history),
        stopped_at_start("quick", Happening::TaskStarted, "hot")
    );
}
