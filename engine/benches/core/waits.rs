//! (w) Many waits in one instance: a parallel multi-instance user task and receive
//! task of 1k and 10k instances, all parked, then completed or delivered one by one.
//! Each completion and delivery finds its wait among the armed ones: with an indexed
//! lookup the rate is the same at both sizes, with a scan it falls tenfold.

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

/// Start an instance of `n` waits and return once all of them are parked at `node`
/// (untimed: the figure is about finding the waits, not arming them).
async fn parked(
    engine: &Engine,
    process: &'static thresh::Process<Waits>,
    node: &str,
    n: usize,
) -> InstanceHandle<Waits> {
    let h = engine.start(
        process,
        Waits {
            id: "B".into(),
            n,
            done: 0,
        },
    );
    while h.history().await.count(node, |w| matches!(w, Happening::Parked)) < n {
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    h
}

fn ended(outcome: Outcome<Waits>) {
    if let Outcome::Completed(_) = outcome {
        return;
    }
    panic!("not completed: {outcome:?}");
}

/// `n` user task instances, completed one after the other through the handle.
fn user(n: usize) {
    println!(
        "multi-user-{}k: a parallel multi-instance user task of {n} instances, all open, completed one by one (each awaited), multi_thread runtime, 2 workers",
        n / 1000
    );
    let runs = on_two_workers(move |engine| async move {
        sample(|| {
            let engine = engine.clone();
            async move {
                let h = parked(&engine, &MANY_USER, "approve", n).await;
                timed(n as u64, async {
                    for _ in 0..n {
                        h.complete("approve", |w| w.done += 1)
                            .await
                            .expect("open work");
                    }
                    ended(h.outcome().await);
                })
                .await
            }
        })
        .await
    });
    report_rate("completions/s", &runs, None);
}

/// `n` receive task instances, each delivered one message.
fn receive(n: usize) {
    println!(
        "multi-receive-{}k: a parallel multi-instance receive task of {n} instances, all waiting, one message each published one by one, multi_thread runtime, 2 workers",
        n / 1000
    );
    let runs = on_two_workers(move |engine| async move {
        sample(|| {
            let engine = engine.clone();
            async move {
                let h = parked(&engine, &MANY_RECEIVE, "pay", n).await;
                timed(n as u64, async {
                    for _ in 0..n {
                        engine.publish_message("pay", "B", 1u32);
                    }
                    ended(h.outcome().await);
                })
                .await
            }
        })
        .await
    });
    report_rate("deliveries/s", &runs, None);
}

pub fn user_1k() {
    user(1_000);
}

pub fn user_10k() {
    user(10_000);
}

pub fn receive_1k() {
    receive(1_000);
}

pub fn receive_10k() {
    receive(10_000);
}
