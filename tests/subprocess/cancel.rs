//! Cancel while work waits two sub-processes deep.

use super::*;

/// The `DEEP` tracks waiting when it is cancelled: track 0 at `outer`, 1 at `side`;
/// in `outer`, 2 at `u1` and 3 at `inner`; in `inner`, 4 at `u2`, 5 running
/// `forever`, 6 at the signal catch, 7 at the receive task.
const DEEP_WAITING: [(u32, &str); 8] = [
    (0, "outer"),
    (1, "side"),
    (2, "u1"),
    (3, "inner"),
    (4, "u2"),
    (5, "forever"),
    (6, "sig"),
    (7, "msg"),
];

process! {
    /// Work waits two sub-processes deep (a user task, a handler that never
    /// finishes, a signal catch, a receive task) beside a parent user task, with
    /// boundaries on both sub-processes and an event sub-process armed.
    DEEP: Claim {
        start    s;
        parallel fork;
        subprocess outer {
            start    s1;
            parallel f1;
            user     u1;
            subprocess inner {
                start    s2;
                parallel f2;
                user     u2;
                task     forever = |c| async move {
                    std::future::pending::<()>().await;
                    c.b += 1;
                    Ok(())
                };
                catch    sig: signal("deep_sig");
                receive  msg: message("deep_msg", key = |c| c.id.clone());
                end      e2a;
                end      e2b;
                end      e2c;
                end      e2d;
                s2 -> f2 -> u2, forever, sig, msg;
                u2 -> e2a;
                forever -> e2b;
                sig -> e2c;
                msg -> e2d;
            }
            boundary inner_halt on inner: signal("inner_halt");
            boundary inner_late on inner: timer(Duration::from_secs(3600));
            event_subprocess watch {
                start ws: non_interrupting signal("watch");
                task  seen = |c| async move { c.y += 1; Ok(()) };
                end   we;
                ws -> seen -> we;
            }
            end      e1a;
            end      e1b;
            end      e1c;
            s1 -> f1 -> u1, inner;
            u1 -> e1a;
            inner -> e1b;
            inner_halt -> e1c;
            inner_late -> e1c;
        }
        boundary outer_stop on outer: message("outer_stop", key = |c| c.id.clone());
        boundary outer_poke on outer: non_interrupting signal("outer_poke");
        user     side;
        end      done;
        end      stopped;
        end      poked;
        end      side_end;
        s -> fork -> outer, side;
        outer -> done;
        outer_stop -> stopped;
        outer_poke -> poked;
        side -> side_end;
    }
}

/// Cancel `DEEP` while work waits two sub-processes deep, after `pings` rounds of
/// the non-interrupting event sub-process and boundary signals — during a storm of
/// them from another thread when `storm`: the outcome is `Cancelled`, every waiting
/// track of every scope is cancelled, the user tasks are withdrawn, and no
/// subscription is left — signals reach no catcher, messages are buffered, and (on
/// the paused clock) the hour's timer on `inner` never fires.
async fn cancel_deep(i: usize, storm: bool, paused: bool) {
    let engine = Engine::new();
    let id = format!("deep-{i}");
    let pings = i % 3;
    let handle = engine.start(&DEEP, claim(&id)).await.unwrap();
    for user in ["u1", "u2", "side"] {
        expect_open_work(&handle, user).await;
    }
    expect_that(&handle, "everything waits", |h| {
        count(h, "forever", &Happening::TaskStarted) == 1
            && count(h, "sig", &Happening::Parked) == 1
            && count(h, "msg", &Happening::Parked) == 1
    })
    .await;
    let mut work = open_work(&handle).await;
    work.sort_unstable();
    assert_eq!(work, ["side", "u1", "u2"]);
    for _ in 0..pings {
        assert_eq!(engine.broadcast_signal("watch", ()).await.unwrap(), 1);
        assert_eq!(engine.broadcast_signal("outer_poke", ()).await.unwrap(), 1);
    }
    expect_that(&handle, "every ping ended", |h| {
        count(h, "we", &Happening::Ended) == pings && count(h, "poked", &Happening::Ended) == pings
    })
    .await;
    let sender = storm.then(|| {
        let engine = engine.clone();
        std::thread::spawn(move || {
            (0..20)
                .map(|_| {
                    let reached = common::at_once(engine.broadcast_signal("watch", ())).unwrap()
                        + common::at_once(engine.broadcast_signal("outer_poke", ())).unwrap();
                    std::thread::yield_now();
                    reached
                })
                .sum::<usize>()
        })
    });
    yield_jitter().await;
    handle.cancel();
    let reached = sender.map_or(0, |s| s.join().expect("the storm"));
    let (outcome, history) = finish(&handle).await;
    assert!(matches!(outcome, Outcome::Cancelled(_)), "{history}");
    let fired = count(&history, "ws", &Happening::Started) + spawns(&history, "outer_poke");
    assert!(
        fired >= 2 * pings && fired <= 2 * pings + reached,
        "{history}"
    );
    let cancels = cancelled(&history);
    if storm {
        for waiting in DEEP_WAITING {
            assert!(cancels.contains(&waiting), "{waiting:?}\n{history}");
        }
    } else {
        assert_eq!(cancels, DEEP_WAITING, "{history}");
    }
    assert!(handle.open_work().await.is_empty());
    for signal in ["deep_sig", "inner_halt", "watch", "outer_poke"] {
        assert_eq!(
            engine.broadcast_signal(signal, ()).await.unwrap(),
            0,
            "{signal}"
        );
    }
    for message in ["deep_msg", "outer_stop"] {
        assert_eq!(
            engine.publish_message(message, &id, ()).await.unwrap(),
            Published::Buffered,
            "{message}"
        );
    }
    assert_eq!(
        engine.broker_stats(),
        BrokerStats {
            buffered: 2,
            ..BrokerStats::default()
        }
    );
    if paused {
        tokio::time::sleep(Duration::from_secs(7200)).await;
        assert_eq!(handle.history().await, history);
    }
}

/// [`cancel_deep`] on the paused clock, one instance at a time.
#[tokio::test(start_paused = true)]
async fn cancel_while_work_runs_in_nested_sub_processes() {
    for i in 0..3 {
        cancel_deep(i, false, true).await;
    }
}

async fn cancel_racing_signals_in_nested_sub_processes(i: usize) {
    cancel_deep(i, true, false).await;
}

multi_thread!(common::RUNS => cancel_racing_signals_in_nested_sub_processes);
