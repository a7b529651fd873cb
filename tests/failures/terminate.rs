//! A terminate end event ends the instance.

use super::*;

process! {
    TERMINATE: Job {
        start s;
        parallel fork;
        task slow = long;
        task quick = quick;
        end done;
        end kill: terminate;

        s -> fork -> slow, quick;
        quick -> kill;
        slow -> done;
    }
}

/// One track reaches a terminate end while the other works in a task that would take
/// an hour (or spins): the instance is terminated with the data committed so far, the
/// working task is cancelled and never completes.
async fn terminate_end_stops_the_other_tracks(engine: Engine, i: usize) {
    let mut job = Job::new();
    job.spin = i % 2 == 1 && can_spin();
    let id = job.id;
    let (outcome, h) = run(&engine, &TERMINATE, job.clone()).await;
    let Outcome::Terminated(data) = outcome else {
        panic!("expected terminated, got {outcome:?}\n{h}");
    };
    assert_eq!(data, Job { quick: true, ..job });
    assert_eq!(h.completed_tasks(), ["quick"], "{h}");
    assert_eq!(h.ended_at(), ["kill"]);
    assert_eq!(h.count("kill", |w| *w == Happening::Terminated), 1);
    assert_eq!(h.count("slow", |w| *w == Happening::TaskStarted), 1);
    assert_eq!(h.count("slow", |w| *w == Happening::Cancelled), 1, "{h}");
    assert_eq!(completions(&h, "slow"), 0);
    assert_eq!(h.count("done", |_| true), 0);
    assert_stopped(id, "long");
}

flavors!(terminate_end_stops_the_other_tracks);
