//! The edge rule (ARCHITECTURE.md, "Events"): a non-interrupting condition fires on each false→true
//! edge of the commits.

use super::*;

/// A temperature sequence for run `i`, from a small LCG: values around the 100 line.
fn temperatures(i: usize) -> Vec<u32> {
    let mut state = i as u64 * 2_654_435_761 + 1;
    (0..6 + i % 5)
        .map(|_| {
            state = state
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1);
            [0, 50, 100, 101, 120, 150, 200][(state >> 33) as usize % 7]
        })
        .collect()
}

/// Which of the commits setting `temps` (from 0) are false→true edges of `temp > 100`.
/// A value equal to the previous one is no change, hence no commit.
fn edges(temps: &[u32]) -> Vec<bool> {
    let mut last = 0;
    temps
        .iter()
        .filter_map(|&t| {
            if t == last {
                return None;
            }
            let edge = last <= 100 && t > 100;
            last = t;
            Some(edge)
        })
        .collect()
}

process! {
    /// A non-interrupting conditional boundary on a user task; `set` moves `temp`.
    EDGE: Gauge {
        start     s;
        parallel  fork;
        user      review;
        boundary  hot on review: non_interrupting condition(|d| d.temp > 100, on = [temp]);
        task      alarm = |d| async move {
            d.alarms += 1;
            Ok(())
        };
        end       alarmed;
        end       reviewed;
        catch     top: link("set");
        user      set;
        exclusive more;
        throw     again: link("set");
        end       set_done;
        s -> fork -> review, set;
        review -> reviewed;
        hot -> alarm -> alarmed;
        top -> set;
        set -> more;
        more -> again when |d| !d.finished;
        more -> set_done else;
    }
}

/// The edge rule (ARCHITECTURE.md, "Events"): a non-interrupting conditional boundary fires on
/// every false→true edge of its condition while its activity waits — and not while
/// it stays true. Each firing is recorded in the step of the commit that caused it.
/// Once the activity is done, no commit fires it.
async fn a_non_interrupting_condition_fires_on_each_edge(i: usize) {
    let engine = Engine::new();
    let handle = engine.start(&EDGE, Gauge::default()).await.unwrap();
    let temps = temperatures(i);
    let expected = edges(&temps);
    let mut fired = 0;
    for &t in &temps {
        set(&handle, move |d| d.temp = t).await;
        let history = handle.history().await;
        fired = spawns(&history, "hot");
        // Wait for the alarm before the next commit: it commits `alarms`, a field the
        // condition does not watch.
        expect_that(&handle, "every alarm rang", |h| {
            completions(h, "alarm") == fired
        })
        .await;
    }
    assert_eq!(fired, expected.iter().filter(|e| **e).count());
    complete(&handle, "review", |_: &mut Gauge| {}).await;
    expect_that(&handle, "review completed", |h| {
        completions(h, "review") == 1
    })
    .await;
    // The boundary went with the activity: a fresh edge fires nothing.
    set(&handle, |d| d.temp = 1).await;
    set(&handle, |d| d.temp = 500).await;
    finish_setting(&handle).await;
    let (outcome, history) = finish_strict(&handle).await;
    let data = completed(outcome, &history);
    assert_eq!(data.alarms as usize, fired);
    assert_eq!(spawns(&history, "hot"), fired);
    // Every firing right after the commit that made the edge, in that step.
    let all = history.steps();
    let commits: Vec<usize> = indices(
        &history,
        "set",
        |h| matches!(h, Happening::Completed { changed } if changed[..] == ["temp"]),
    );
    let after: Vec<bool> = commits
        .iter()
        .map(|&c| all[c + 1].node == "hot" && all[c + 1].what == spawned(0))
        .collect();
    let mut expected = expected;
    expected.extend([false, false]);
    assert_eq!(after, expected, "temps {temps:?}\n{history}");
}

both_runtimes!(RUNS => a_non_interrupting_condition_fires_on_each_edge);
