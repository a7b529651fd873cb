//! Terminate end events inside a sub-process end only their scope; at the top level,
//! the instance.

use super::*;

// ----- terminate -------------------------------------------------------------------

process! {
    /// A sub-process beside a parallel branch: completing `quit` reaches a terminate
    /// end event inside while `wait_in` waits; the parent's `side` is still working.
    TERMINATE_INSIDE: Claim {
        start    s;
        parallel fork;
        subprocess sub {
            start    s1;
            parallel f1;
            user     wait_in;
            user     quit;
            end      stop: terminate;
            end      e1;
            s1 -> f1 -> wait_in, quit;
            wait_in -> e1;
            quit -> stop;
        }
        task     side = slow;
        task     after = |c| async move { c.after += 1; Ok(()) };
        end      done;
        end      side_end;
        s -> fork -> sub, side;
        sub -> after -> done;
        side -> side_end;
    }
}

/// A terminate end event inside a sub-process ends only that scope: its waiting user
/// task is cancelled and withdrawn, the sub-process completes and its token goes on,
/// and the parent's other branch (a 10 s task, already running) still runs to its
/// end. The outcome is `Completed`.
#[tokio::test(start_paused = true)]
async fn terminate_inside_a_sub_process_ends_only_that_scope() {
    let engine = Engine::new();
    let t0 = Instant::now();
    let handle = engine
        .start(
            &TERMINATE_INSIDE,
            Claim {
                secs: 10,
                ..claim("term-in")
            },
        )
        .await
        .unwrap();
    expect_open_work(&handle, "wait_in").await;
    expect_open_work(&handle, "quit").await;
    expect_that(&handle, "side runs", |h| {
        count(h, "side", &Happening::TaskStarted) == 1
    })
    .await;
    complete(&handle, "quit", |c: &mut Claim| c.a = 1).await;
    let history = expect_that(&handle, "the parent went on", |h| {
        count(h, "done", &Happening::Ended) == 1
    })
    .await;
    assert!(!handle.is_finished(), "`side` still runs\n{history}");
    assert!(open_work(&handle).await.is_empty());
    let (outcome, history) = finish_in(&handle, DAY).await;
    assert_eq!(t0.elapsed(), Duration::from_secs(10));
    let data = completed(outcome, &history);
    assert_eq!((data.a, data.b, data.after), (1, 1, 1));
    // Track 0 waits at `sub`, 1 runs `side`; inside, 2 waits at `wait_in`, 3 at `quit`.
    let rows = steps(&history);
    assert_eq!(
        rows[..9],
        [
            (0, "s", Happening::Started),
            (0, "fork", routed(&["sub", "side"])),
            (1, "fork", spawned(0)),
            (0, "sub", Happening::TaskStarted),
            (2, "s1", spawned(0)),
            (2, "f1", routed(&["wait_in", "quit"])),
            (3, "f1", spawned(2)),
            (2, "wait_in", Happening::Parked),
            (3, "quit", Happening::Parked),
        ],
        "{history}"
    );
    assert!(rows[9..].contains(&(1, "side", Happening::TaskStarted)));
    assert_eq!(
        rows[rows.len() - 9..],
        [
            (3, "quit", done(&["a"])),
            (3, "stop", Happening::Terminated),
            (2, "wait_in", Happening::Cancelled),
            (0, "sub", done(&[])),
            (0, "after", Happening::TaskStarted),
            (0, "after", done(&["after"])),
            (0, "done", Happening::Ended),
            (1, "side", done(&["b"])),
            (1, "side_end", Happening::Ended),
        ],
        "{history}"
    );
    assert_eq!(rows.len(), 19, "{history}");
    assert_eq!(cancelled(&history), [(2, "wait_in")]);
    assert_eq!(history.ended_at(), ["stop", "done", "side_end"]);
}

process! {
    /// A terminate end event at the top level while a sub-process waits inside.
    TERMINATE_TOP: Claim {
        start    s;
        parallel fork;
        subprocess sub {
            start s1;
            subprocess inner {
                start s2;
                user  wait_in;
                end   e2;
                s2 -> wait_in -> e2;
            }
            end   e1;
            s1 -> inner -> e1;
        }
        user     kill;
        end      done;
        end      killed: terminate;
        s -> fork -> sub, kill;
        sub -> done;
        kill -> killed;
    }
}

/// A terminate end event at the top level still terminates the instance, with
/// everything waiting inside two levels of sub-processes cancelled.
#[tokio::test(start_paused = true)]
async fn terminate_at_the_top_level_ends_the_instance() {
    let engine = Engine::new();
    let handle = engine
        .start(&TERMINATE_TOP, claim("term-top"))
        .await
        .unwrap();
    expect_open_work(&handle, "wait_in").await;
    expect_open_work(&handle, "kill").await;
    complete(&handle, "kill", |c: &mut Claim| c.a = 7).await;
    let (outcome, history) = finish(&handle).await;
    let Outcome::Terminated(data) = outcome else {
        panic!("expected a terminated instance, got {outcome:?}\n{history}");
    };
    assert_eq!(data.a, 7);
    assert_eq!(count(&history, "killed", &Happening::Terminated), 1);
    // Track 0 waits at `sub`, 1 at `kill`; `sub` runs on 2, `inner` on 3.
    assert_eq!(
        cancelled(&history),
        [(0, "sub"), (2, "inner"), (3, "wait_in")],
        "{history}"
    );
    assert_eq!(count(&history, "sub", &done(&[])), 0);
    assert!(handle.open_work().await.is_empty());
    assert_eq!(
        handle.complete("wait_in", |_: &mut Claim| {}).await,
        Err(WorkError::InstanceEnded)
    );
}

process! {
    /// A terminate end event two levels down: `quit` ends `inner` only.
    TERMINATE_NESTED: Claim {
        start s;
        subprocess outer {
            start    s1;
            parallel f1;
            user     keep;
            subprocess inner {
                start    s2;
                parallel f2;
                user     wait2;
                user     quit;
                end      stop: terminate;
                end      e2;
                s2 -> f2 -> wait2, quit;
                wait2 -> e2;
                quit -> stop;
            }
            end      e1a;
            end      e1b;
            s1 -> f1 -> keep, inner;
            keep -> e1a;
            inner -> e1b;
        }
        end   done;
        s -> outer -> done;
    }
}

/// A terminate end event two levels down ends only the innermost sub-process: its
/// other user task is cancelled, `inner` completes, and `outer` — whose own user task
/// still waits — and the instance go on and complete.
#[tokio::test(start_paused = true)]
async fn terminate_two_levels_down_ends_only_the_innermost_scope() {
    let engine = Engine::new();
    let handle = engine
        .start(&TERMINATE_NESTED, claim("term-nested"))
        .await
        .unwrap();
    expect_open_work(&handle, "keep").await;
    expect_open_work(&handle, "wait2").await;
    complete(&handle, "quit", |_: &mut Claim| {}).await;
    expect_that(&handle, "inner completed", |h| {
        count(h, "e1b", &Happening::Ended) == 1
    })
    .await;
    assert_eq!(open_work(&handle).await, ["keep"]);
    complete(&handle, "keep", |_: &mut Claim| {}).await;
    let (outcome, history) = finish(&handle).await;
    completed(outcome, &history);
    assert_eq!(
        steps(&history),
        [
            (0, "s", Happening::Started),
            (0, "outer", Happening::TaskStarted),
            (1, "s1", spawned(0)),
            (1, "f1", routed(&["keep", "inner"])),
            (2, "f1", spawned(1)),
            (1, "keep", Happening::Parked),
            (2, "inner", Happening::TaskStarted),
            (3, "s2", spawned(2)),
            (3, "f2", routed(&["wait2", "quit"])),
            (4, "f2", spawned(3)),
            (3, "wait2", Happening::Parked),
            (4, "quit", Happening::Parked),
            (4, "quit", done(&[])),
            (4, "stop", Happening::Terminated),
            (3, "wait2", Happening::Cancelled),
            (2, "inner", done(&[])),
            (2, "e1b", Happening::Ended),
            (1, "keep", done(&[])),
            (1, "e1a", Happening::Ended),
            (0, "outer", done(&[])),
            (0, "done", Happening::Ended),
        ]
    );
}
