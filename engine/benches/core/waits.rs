//! (w) Many waits in one instance: a parallel multi-instance user task and receive
//! task of 1k and 10k instances, all parked, then completed or delivered one by one.
//! Each completion and delivery finds its wait among the armed ones: with an indexed
//! lookup the rate is the same at both sizes, with a scan it falls tenfold. And a
//! parallel multi-instance call activity of 1k and 10k children: each start adds to
//! the instance's list of calls, which must not be scanned per call.

use std::time::Duration;

use thresh::{process, Engine, Happening, InstanceHandle, Outcome, ProcessData};

use super::support::{report_rate, timed};
use super::{on_two_workers, sample};

#[derive(Clone, Debug, Default, ProcessData)]
pub struct Waits {
    pub id: String,
    pub n: usize,
    pub done: u32,
}

process! {
    /// start -> a parallel multi-instance user task of `n` instances -> end.
    pub MANY_USER: Waits {
        start begin;
        #[multi_instance(count = |w| w.n)]
        user approve;
        end done;
        begin -> approve -> done;
    }
}

process! {
    /// start -> a parallel multi-instance receive task of `n` instances, all waiting
    /// on the same message name and key -> end.
    pub MANY_RECEIVE: Waits {
        start begin;
        #[multi_instance(count = |w| w.n)]
        receive pay: message("pay", key = |w| w.id.clone(), apply = |w, _: &u32| w.done += 1);
        end done;
        begin -> pay -> done;
    }
}

process! {
    /// start -> a parallel multi-instance sub-process of `n` instances, each a user
    /// task with an hour's timer boundary -> end: `n` timers armed at once, one
    /// cancelled at each completion.
    pub MANY_TIMED: Waits {
        start begin;
        #[multi_instance(count = |w| w.n)]
        subprocess each {
            start s;
            user approve;
            boundary late on approve: timer(Duration::from_secs(3600));
            end approved;
            end timed_out;
            s -> approve -> approved;
            late -> timed_out;
        }
        end done;
        begin -> each -> done;
    }
}

#[derive(Clone, Debug, Default, ProcessData)]
pub struct Child {
    pub index: usize,
}

process! {
    /// A called process: one task that awaits once.
    pub CHILD: Child {
        start begin;
        task work = |c| async move { tokio::task::yield_now().await; c.index += 1; Ok(()) };
        end done;
        begin -> work -> done;
    }
}

process! {
    /// start -> a parallel multi-instance call activity of `n` children -> end,
    /// the children's outputs merged in index order.
    pub MANY_CALLS: Waits {
        start begin;
        #[multi_instance(count = |w| w.n, output = |w, _i, c| w.done += u32::from(c.index > 0))]
        call ship = CHILD(input = |_w, _k, index| Child { index });
        end done;
        begin -> ship -> done;
    }
}

/// Waits per timed run: one instance of 10k waits, or ten of 1k (so both sizes
/// time the same work, long enough to read).
const WAITS: usize = 10_000;

/// Start `WAITS / n` instances of `n` waits each (instance `i` keyed `B{i}`) and
/// return once all their waits are parked at `node` — untimed: the figure is about
/// finding the waits, not arming them.
async fn parked(
    engine: &Engine,
    process: &'static thresh::Process<Waits>,
    node: &str,
    n: usize,
) -> Vec<InstanceHandle<Waits>> {
    let mut handles = Vec::new();
    for i in 0..WAITS / n {
        let waits = Waits {
            id: format!("B{i}"),
            n,
            done: 0,
        };
        handles.push(engine.start(process, waits).await.unwrap());
    }
    for h in &handles {
        while h
            .history()
            .await
            .count(node, |w| matches!(w, Happening::Parked))
            < n
        {
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
    }
    handles
}

fn ended(outcome: Outcome<Waits>) {
    if let Outcome::Completed(_) = outcome {
        return;
    }
    panic!("not completed: {outcome:?}");
}

/// Which waits a run parks and resolves.
#[derive(Clone, Copy)]
enum Kind {
    /// User tasks, each completed through the handle (each completion awaited).
    User,
    /// Receive tasks, each delivered one message (published one after the other).
    Receive,
    /// User tasks each with a timer boundary (its timer cancelled at completion).
    Timed,
}

/// `WAITS / n` instances of a parallel multi-instance activity of `n` waits each,
/// all parked, then resolved one by one: waits resolved per second.
fn many(kind: Kind, n: usize) {
    let (name, what, node, process, unit): (_, _, _, &'static thresh::Process<Waits>, _) =
        match kind {
            Kind::User => (
                "user",
                "user task of {n}, all open, completed one by one (each awaited)",
                "approve",
                &MANY_USER,
                "completions/s",
            ),
            Kind::Receive => (
                "receive",
                "receive task of {n}, all waiting, one message each published one by one",
                "pay",
                &MANY_RECEIVE,
                "deliveries/s",
            ),
            Kind::Timed => (
                "timed-user",
                "sub-process of {n}, each a user task with a timer boundary, completed one by one (each awaited)",
                "approve",
                &MANY_TIMED,
                "completions/s",
            ),
        };
    println!(
        "multi-{name}-{}k: {} instance(s) of a parallel multi-instance {}, multi_thread runtime, 2 workers",
        n / 1000,
        WAITS / n,
        what.replace("{n}", &n.to_string())
    );
    let runs = on_two_workers(move |engine| async move {
        sample(|| {
            let engine = engine.clone();
            async move {
                let handles = parked(&engine, process, node, n).await;
                timed(WAITS as u64, async {
                    for (i, h) in handles.into_iter().enumerate() {
                        let key = format!("B{i}");
                        for _ in 0..n {
                            match kind {
                                Kind::User | Kind::Timed => {
                                    h.complete(node, |w| w.done += 1).await.expect("open work")
                                }
                                Kind::Receive => {
                                    engine.publish_message("pay", &key, 1u32).await.unwrap();
                                }
                            }
                        }
                        ended(h.outcome().await);
                    }
                })
                .await
            }
        })
        .await
    });
    report_rate(unit, &runs, None);
}

/// `WAITS / n` instances of a parallel multi-instance call activity of `n` children,
/// one at a time: children per second, each started, awaited and merged.
fn calls(n: usize) {
    println!(
        "multi-call-{}k: {} instance(s) of a parallel multi-instance call activity of {n} children (each awaits once), one at a time, multi_thread runtime, 2 workers",
        n / 1000,
        WAITS / n
    );
    let runs = on_two_workers(move |engine| async move {
        sample(|| {
            let engine = engine.clone();
            timed(WAITS as u64, async move {
                for _ in 0..WAITS / n {
                    let h = engine
                        .start(
                            &MANY_CALLS,
                            Waits {
                                n,
                                ..Waits::default()
                            },
                        )
                        .await
                        .unwrap();
                    match h.outcome().await {
                        Outcome::Completed(w) => assert_eq!(w.done as usize, n),
                        other => panic!("not completed: {other:?}"),
                    }
                }
            })
        })
        .await
    });
    report_rate("children/s", &runs, None);
}

pub fn timed_1k() {
    many(Kind::Timed, 1_000);
}

pub fn timed_10k() {
    many(Kind::Timed, 10_000);
}

pub fn call_1k() {
    calls(1_000);
}

pub fn call_10k() {
    calls(10_000);
}

pub fn user_1k() {
    many(Kind::User, 1_000);
}

pub fn user_10k() {
    many(Kind::User, 10_000);
}

pub fn receive_1k() {
    many(Kind::Receive, 1_000);
}

pub fn receive_10k() {
    many(Kind::Receive, 10_000);
}
