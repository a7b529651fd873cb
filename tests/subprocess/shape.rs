//! Shape: a token waits at the sub-process while a track runs its inside; one and
//! two levels deep; entered once per lap of a loop and twice at once.

use super::*;

// ----- plain and nested ------------------------------------------------------------

process! {
    /// `before`, a sub-process running `one` then `two`, `after`.
    PLAIN: Claim {
        start s;
        task  before = |c| async move { c.a += 1; Ok(()) };
        subprocess sub {
            start s1;
            task  one = |c| async move { c.b += 1; Ok(()) };
            task  two = |c| async move { c.b *= 10; Ok(()) };
            end   e1;
            s1 -> one -> two -> e1;
        }
        task  after = |c| async move { c.after += 1; Ok(()) };
        end   done;
        s -> before -> sub -> after -> done;
    }
}

/// The token entering a sub-process waits at it (`TaskStarted`) while a track
/// spawned from it runs the inside from the inner start; when that ends, the
/// sub-process completes (no fields of its own) and the token goes on.
#[tokio::test(start_paused = true)]
async fn a_plain_sub_process_runs_between_its_neighbours() {
    let engine = Engine::new();
    let (outcome, history) = finish(&engine.start(&PLAIN, claim("plain")).await.unwrap()).await;
    let data = completed(outcome, &history);
    // `two` multiplies what `one` added: they ran in order, inside.
    assert_eq!((data.a, data.b, data.after), (1, 10, 1));
    assert_eq!(
        steps(&history),
        [
            (0, "s", Happening::Started),
            (0, "before", Happening::TaskStarted),
            (0, "before", done(&["a"])),
            (0, "sub", Happening::TaskStarted),
            (1, "s1", spawned(0)),
            (1, "one", Happening::TaskStarted),
            (1, "one", done(&["b"])),
            (1, "two", Happening::TaskStarted),
            (1, "two", done(&["b"])),
            (1, "e1", Happening::Ended),
            (0, "sub", done(&[])),
            (0, "after", Happening::TaskStarted),
            (0, "after", done(&["after"])),
            (0, "done", Happening::Ended),
        ]
    );
}

process! {
    /// The claim of the DSL's example: `pay` in `inner` in `handle`, an error
    /// boundary for `FRAUD` on `handle`.
    NESTED: Claim {
        start begin;
        subprocess handle {
            start s;
            task  assess = |c| async move { c.b += 1; Ok(()) };
            subprocess inner {
                start s2;
                task  pay = pay;
                end   e2;
                s2 -> pay -> e2;
            }
            end   e;
            s -> assess -> inner -> e;
        }
        boundary fraud on handle: error("FRAUD", apply = |c, e: &BpmnError| {
            c.caught = format!("fraud:{}", e.code);
            c.message = e.message.clone();
        });
        task  investigate = |c| async move { c.after += 1; Ok(()) };
        end   done;
        end   flagged;
        begin -> handle -> done;
        fraud -> investigate -> flagged;
    }
}

/// Two levels: `handle`'s track waits while `inner`'s waits inside it; they complete
/// innermost first and the error boundary on `handle` never fires. When `pay`
/// throws, both levels are left and the token goes on from the boundary.
#[tokio::test(start_paused = true)]
async fn a_nested_sub_process_completes_innermost_first() {
    let engine = Engine::new();
    let (outcome, history) = finish(&engine.start(&NESTED, claim("nested")).await.unwrap()).await;
    let data = completed(outcome, &history);
    assert_eq!((data.a, data.b, data.after), (1, 1, 0));
    assert_eq!(
        steps(&history),
        [
            (0, "begin", Happening::Started),
            (0, "handle", Happening::TaskStarted),
            (1, "s", spawned(0)),
            (1, "assess", Happening::TaskStarted),
            (1, "assess", done(&["b"])),
            (1, "inner", Happening::TaskStarted),
            (2, "s2", spawned(1)),
            (2, "pay", Happening::TaskStarted),
            (2, "pay", done(&["a"])),
            (2, "e2", Happening::Ended),
            (1, "inner", done(&[])),
            (1, "e", Happening::Ended),
            (0, "handle", done(&[])),
            (0, "done", Happening::Ended),
        ]
    );

    // `pay` throws `FRAUD`: `inner` and `handle` are left, the boundary takes over.
    let data = Claim {
        code: "FRAUD".into(),
        ..claim("nested")
    };
    let (outcome, history) = finish(&engine.start(&NESTED, data).await.unwrap()).await;
    let data = completed(outcome, &history);
    assert_eq!(
        (
            data.a,
            data.b,
            data.after,
            data.caught.as_str(),
            data.message.as_str()
        ),
        (0, 1, 1, "fraud:FRAUD", "nested refused")
    );
    assert_eq!(
        steps(&history),
        [
            (0, "begin", Happening::Started),
            (0, "handle", Happening::TaskStarted),
            (1, "s", spawned(0)),
            (1, "assess", Happening::TaskStarted),
            (1, "assess", done(&["b"])),
            (1, "inner", Happening::TaskStarted),
            (2, "s2", spawned(1)),
            (2, "pay", Happening::TaskStarted),
            (2, "pay", error_thrown("FRAUD")),
            (1, "inner", Happening::Cancelled),
            (2, "pay", Happening::Cancelled),
            (0, "handle", interrupted("fraud")),
            (3, "fraud", spawned(0)),
            (3, "fraud", caught(&["caught", "message"])),
            (3, "investigate", Happening::TaskStarted),
            (3, "investigate", done(&["after"])),
            (3, "flagged", Happening::Ended),
        ]
    );
}

process! {
    /// A sub-process with a parallel join inside, entered once per lap of a loop
    /// that an exclusive gateway closes before it.
    LOOP: Claim {
        start     s;
        exclusive again;
        subprocess sub {
            start    s1;
            parallel fork;
            task     left = |c| async move { yield_jitter().await; c.left += 1; Ok(()) };
            task     right = |c| async move { yield_jitter().await; c.right += 1; Ok(()) };
            parallel join;
            end      e1;
            s1 -> fork -> left, right;
            left, right -> join -> e1;
        }
        task      count = |c| async move { c.a += 1; Ok(()) };
        exclusive more;
        end       done;
        s -> again -> sub -> count -> more;
        more -> again when |c| c.a < c.limit;
        more -> done else;
    }
}

/// A sub-process entered once per lap of a loop closed by an exclusive gateway
/// before it: every entry runs the inside afresh — its parallel join fires once per
/// entry, with its own arrivals — and completes once; racing branches inside.
async fn a_sub_process_in_a_loop(i: usize) {
    let engine = Engine::new();
    let limit = 1 + (i % 8) as u32;
    let data = Claim {
        limit,
        ..claim(format!("loop-{i}"))
    };
    let (outcome, history) = finish(&engine.start(&LOOP, data).await.unwrap()).await;
    let data = completed(outcome, &history);
    assert_eq!((data.a, data.left, data.right), (limit, limit, limit));
    let laps = limit as usize;
    assert_eq!(count(&history, "sub", &Happening::TaskStarted), laps);
    assert_eq!(count(&history, "sub", &done(&[])), laps);
    assert_eq!(history.fired("join"), laps, "{history}");
    assert_eq!(count(&history, "join", &Happening::Merged), laps);
    assert_eq!(count(&history, "join", &Happening::Waiting), laps);
    assert_eq!(count(&history, "e1", &Happening::Ended), laps);
    // Lap by lap: the sub-process is entered, its join fires, it completes, `count`
    // runs; never two laps at once.
    let events: Vec<&str> = history
        .steps()
        .iter()
        .filter_map(|s| match (&s.node, &s.what) {
            (&"sub", Happening::TaskStarted) => Some("enter"),
            (&"join", Happening::Fired) => Some("fire"),
            (&"sub", Happening::Completed { .. }) => Some("leave"),
            (&"count", Happening::Completed { .. }) => Some("count"),
            _ => None,
        })
        .collect();
    assert_eq!(
        events,
        ["enter", "fire", "leave", "count"].repeat(laps),
        "{history}"
    );
    let mut more = vec![routed(&["again"]); laps - 1];
    more.push(routed(&["done"]));
    let got: Vec<Happening> = history
        .steps()
        .iter()
        .filter(|s| s.node == "more")
        .map(|s| s.what.clone())
        .collect();
    assert_eq!(got, more);
    // The waiting token stays on track 0; each entry spawns one inner track and its
    // fork one more.
    assert_eq!(history.tracks(), 1 + 2 * laps);
    assert_eq!(history.ended_at().last(), Some(&"done"));
}

multi_thread!(common::RUNS => a_sub_process_in_a_loop);

process! {
    /// Two tokens in the same sub-process at once: `first` enters at once, `second`
    /// after `secs` seconds. Inside, `left` is a user task and `right` takes
    /// `secs * 100` seconds in the first entry, none in the second.
    TWICE: Claim {
        start    s;
        parallel fork;
        task     first = |c| async move { c.x += 1; Ok(()) };
        task     second = |c| async move {
            tokio::time::sleep(Duration::from_secs(c.secs)).await;
            c.y += 1;
            Ok(())
        };
        exclusive enter: multi;
        subprocess sub {
            start    s1;
            parallel split;
            user     left;
            task     right = |c| async move {
                if c.y == 0 {
                    tokio::time::sleep(Duration::from_secs(c.secs * 100)).await;
                }
                Ok(())
            };
            parallel join;
            end      e1;
            s1 -> split -> left, right;
            left, right -> join -> e1;
        }
        end      done;
        s -> fork -> first, second;
        first, second -> enter -> sub;
        sub -> done;
    }
}

/// Two tokens in the same sub-process at once: its parallel join counts only the
/// tokens of its own entry. Entry A waits at `left` (a user task) with `right`
/// taking 100 s; entry B, a second later, has `right` at the join at once. Completing
/// A's `left` must not fire the join with B's `right`: A keeps waiting for its own;
/// completing B's `left` fires B's join and completes entry B first, while A is still
/// inside; A completes at 100 s.
#[tokio::test(start_paused = true)]
async fn a_sub_process_entered_twice_at_once_keeps_its_joins_apart() {
    let engine = Engine::new();
    let t0 = Instant::now();
    let handle = engine
        .start(
            &TWICE,
            Claim {
                secs: 1,
                ..claim("twice")
            },
        )
        .await
        .unwrap();
    let history = until_slept(&handle, "both entries wait", |h| {
        count(h, "left", &Happening::Parked) == 2 && count(h, "join", &Happening::Waiting) == 1
    })
    .await;
    let entries: Vec<TrackId> = history
        .steps()
        .iter()
        .filter(|s| s.node == "s1")
        .map(|s| s.track)
        .collect();
    assert_eq!(entries.len(), 2, "{history}");
    let (a, b) = (entries[0], entries[1]);
    let waiting = history.steps()[at(&history, "join", &Happening::Waiting)].track;
    assert_eq!(entry_of(&history, waiting), b, "{history}");
    let work = handle.open_work().await;
    assert_eq!(work.len(), 2);
    assert_eq!(entry_of(&history, work[0].track), a);
    assert_eq!(entry_of(&history, work[1].track), b);

    // A's `left`: A's join has `left`, not `right` — it must not fire.
    handle
        .complete("left", |_: &mut Claim| {})
        .await
        .expect("left is open");
    settle().await;
    let history = handle.history().await;
    assert_eq!(history.fired("join"), 0, "{history}");
    assert_eq!(count(&history, "sub", &done(&[])), 0, "{history}");

    // B's `left`: B's join fires and entry B completes while A is inside.
    handle
        .complete("left", |_: &mut Claim| {})
        .await
        .expect("left is open");
    let history = expect_that(&handle, "entry B completed", |h| {
        count(h, "done", &Happening::Ended) == 1
    })
    .await;
    assert_eq!(history.fired("join"), 1, "{history}");
    let fired = history.steps()[at(&history, "join", &Happening::Fired)].track;
    let merged = history.steps()[at(&history, "join", &Happening::Merged)].track;
    assert_eq!(
        (entry_of(&history, fired), entry_of(&history, merged)),
        (b, b),
        "{history}"
    );
    assert!(!handle.is_finished());

    let (outcome, history) = finish_in(&handle, DAY).await;
    assert_eq!(t0.elapsed(), Duration::from_secs(100));
    let data = completed(outcome, &history);
    assert_eq!((data.x, data.y), (1, 1));
    assert_eq!(history.fired("join"), 2);
    assert_eq!(count(&history, "join", &Happening::Merged), 2);
    assert_eq!(count(&history, "sub", &done(&[])), 2);
    assert_eq!(count(&history, "done", &Happening::Ended), 2);
    // Each firing merged two tokens of one entry.
    let mut pairs: Vec<(TrackId, TrackId)> = Vec::new();
    for pick in [Happening::Fired, Happening::Merged] {
        for k in common::indices(&history, "join", |h| *h == pick) {
            let track = history.steps()[k].track;
            pairs.push((entry_of(&history, track), track));
        }
    }
    pairs.sort_unstable();
    let per_entry: Vec<TrackId> = pairs.iter().map(|p| p.0).collect();
    assert_eq!(per_entry, [a, a, b, b], "{history}");
}
