//! Timer boundaries on a sub-process, on the paused clock.

use super::*;

/// `TIMED` until `slow` runs: `wait_in` waits in `sub` on track 1, `slow` in `inner`
/// on track 3.
fn timed_prefix() -> Vec<Row> {
    vec![
        (0, "s", Happening::Started),
        (0, "sub", Happening::TaskStarted),
        (1, "s1", spawned(0)),
        (1, "f1", routed(&["wait_in", "inner"])),
        (2, "f1", spawned(1)),
        (1, "wait_in", Happening::Parked),
        (2, "inner", Happening::TaskStarted),
        (3, "s2", spawned(2)),
        (3, "slow", Happening::TaskStarted),
    ]
}

/// One firing of the reminder cycle on `sub`, on track `track`.
fn tick_rows(track: u32) -> [Row; 5] {
    [
        (track, "tick", spawned(0)),
        (track, "tick", caught(&[])),
        (track, "ring", Happening::TaskStarted),
        (track, "ring", done(&["x"])),
        (track, "rung", Happening::Ended),
    ]
}

process! {
    /// A 30 s timeout and a 7 s reminder cycle on a sub-process whose user task and
    /// nested sub-process (a task of `secs` seconds) both must finish.
    TIMED: Claim {
        start s;
        subprocess sub {
            start    s1;
            parallel f1;
            user     wait_in;
            subprocess inner {
                start s2;
                task  slow = slow;
                end   e2;
                s2 -> slow -> e2;
            }
            parallel j1;
            end      e1;
            s1 -> f1 -> wait_in, inner;
            wait_in, inner -> j1 -> e1;
        }
        boundary late on sub: timer(Duration::from_secs(30));
        boundary tick on sub: non_interrupting timer(every = Duration::from_secs(7));
        task  ring = |c| async move { c.x += 1; Ok(()) };
        user  next;
        end   done;
        end   rung;
        end   gave_up;
        s -> sub -> next -> done;
        tick -> ring -> rung;
        late -> gave_up;
    }
}

/// Nobody completes `wait_in` and `slow` would take 1000 s: the 30 s timer on `sub`
/// interrupts it — the user task waiting inside is withdrawn, the nested
/// sub-process and its running task cancelled (its write never lands) — and the
/// token goes on from the boundary; meanwhile the 7 s cycle fired beside the
/// sub-process at 7, 14, 21 and 28 s. Nothing fires afterwards.
#[tokio::test(start_paused = true)]
async fn a_timer_boundary_interrupts_everything_inside() {
    let engine = Engine::new();
    let t0 = Instant::now();
    let handle = engine
        .start(
            &TIMED,
            Claim {
                secs: 1000,
                ..claim("timed")
            },
        )
        .await
        .unwrap();
    expect_open_work(&handle, "wait_in").await;
    // A sleep lets the paused clock jump from timer to timer.
    tokio::time::sleep(Duration::from_secs(29)).await;
    let history = handle.history().await;
    assert_eq!(count(&history, "rung", &Happening::Ended), 4, "{history}");
    assert_eq!(open_work(&handle).await, ["wait_in"], "{history}");
    let (outcome, history) = finish_in(&handle, DAY).await;
    assert_eq!(t0.elapsed(), Duration::from_secs(30));
    let data = completed(outcome, &history);
    assert_eq!((data.b, data.x), (0, 4));
    let mut rows = timed_prefix();
    for track in 4..=7 {
        rows.extend(tick_rows(track));
    }
    let all = steps(&history);
    assert_eq!(all[..rows.len()], rows[..], "{history}");
    let mut cancels = all[rows.len()..rows.len() + 3].to_vec();
    cancels.sort_by_key(|r| r.0);
    assert_eq!(
        cancels,
        [
            (1, "wait_in", Happening::Cancelled),
            (2, "inner", Happening::Cancelled),
            (3, "slow", Happening::Cancelled),
        ],
        "{history}"
    );
    assert_eq!(
        all[rows.len() + 3..],
        [
            (0, "sub", interrupted("late")),
            (8, "late", spawned(0)),
            (8, "late", caught(&[])),
            (8, "gave_up", Happening::Ended),
        ],
        "{history}"
    );
    tokio::time::sleep(Duration::from_secs(3600)).await;
    assert_eq!(handle.history().await, history);
}

/// The sub-process completes in time (`slow` after 3 s, `wait_in` at 10 s): the
/// reminder fired once, at 7 s, and then its timers are gone — hours later, while
/// the token waits at `next`, neither the timeout nor the cycle has fired.
#[tokio::test(start_paused = true)]
async fn a_timer_boundary_is_gone_once_its_sub_process_completes() {
    let engine = Engine::new();
    let handle = engine
        .start(
            &TIMED,
            Claim {
                secs: 3,
                ..claim("in-time")
            },
        )
        .await
        .unwrap();
    expect_open_work(&handle, "wait_in").await;
    tokio::time::sleep(Duration::from_secs(10)).await;
    complete(&handle, "wait_in", |c: &mut Claim| c.y = 1).await;
    expect_open_work(&handle, "next").await;
    tokio::time::sleep(Duration::from_secs(7200)).await;
    let history = handle.history().await;
    assert_eq!(spawns(&history, "tick"), 1, "{history}");
    assert_eq!(spawns(&history, "late"), 0, "{history}");
    assert_eq!(count(&history, "sub", &done(&[])), 1);
    assert_eq!(open_work(&handle).await, ["next"]);
    complete(&handle, "next", |_: &mut Claim| {}).await;
    let (outcome, history) = finish_in(&handle, DAY).await;
    let data = completed(outcome, &history);
    assert_eq!((data.b, data.x, data.y), (1, 1, 1));
    let mut rows = timed_prefix();
    rows.extend([
        (3, "slow", done(&["b"])),
        (3, "e2", Happening::Ended),
        (2, "inner", done(&[])),
        (2, "j1", Happening::Waiting),
    ]);
    rows.extend(tick_rows(4));
    rows.extend([
        (1, "wait_in", done(&["y"])),
        (2, "j1", Happening::Merged),
        (1, "j1", Happening::Fired),
        (1, "j1", routed(&["e1"])),
        (1, "e1", Happening::Ended),
        (0, "sub", done(&[])),
        (0, "next", Happening::Parked),
        (0, "next", done(&[])),
        (0, "done", Happening::Ended),
    ]);
    assert_eq!(steps(&history), rows, "{history}");
}

/// The reminder cycle on `sub` is a schedule — every 7 s from when the token
/// entered, so at 7, 14, 21 and 28 s before the 30 s timeout — also when the clock
/// jumps: after `advance(29 s)` the three missed occurrences are due as well.
///
/// The engine re-arms a cycle from the instant it fired (`TimerSpec::next(fired,
/// Instant::now())` in `rearm`), not from the deadline it was due at: the late
/// firing at 29 s puts the next at 36 s, after the timeout, so the cycle fires once
/// instead of four times (and under load every late firing shifts the rest).
#[tokio::test(start_paused = true)]
async fn a_timer_cycle_keeps_its_schedule_across_a_clock_jump() {
    let engine = Engine::new();
    let handle = engine
        .start(
            &TIMED,
            Claim {
                secs: 1000,
                ..claim("jump")
            },
        )
        .await
        .unwrap();
    expect_open_work(&handle, "wait_in").await;
    tokio::time::advance(Duration::from_secs(29)).await;
    let (outcome, history) = finish_in(&handle, DAY).await;
    let data = completed(outcome, &history);
    assert_eq!(spawns(&history, "tick"), 4, "{history}");
    assert_eq!(data.x, 4);
    assert_eq!(count(&history, "sub", &interrupted("late")), 1);
}
