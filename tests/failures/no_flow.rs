//! No flow to take: a split whose conditions all fail fails the instance with
//! `NoFlowTaken`.

use super::*;

process! {
    NO_FLOW_EXCLUSIVE: Job {
        start s;
        task prep = prepare;
        exclusive x;
        task a = step;
        task b = step;
        end done;

        s -> prep -> x;
        x -> a when |j| j.a;
        x -> b when |j| j.b;
        a, b -> done;
    }
}

process! {
    NO_FLOW_INCLUSIVE: Job {
        start s;
        task prep = prepare;
        inclusive os;
        task a = step;
        task b = step;
        inclusive oj;
        end done;

        s -> prep -> os;
        os -> a when |j| j.a;
        os -> b when |j| j.b;
        a, b -> oj -> done;
    }
}

process! {
    NO_FLOW_TASK: Job {
        start s;
        task prep = prepare;
        task a = step;
        task b = step;
        end done;

        // A task's conditional outgoing flows: every true one, else the default, else
        // the instance fails naming the task.
        s -> prep;
        prep -> a when |j| j.a;
        prep -> b when |j| j.b;
        a, b -> done;
    }
}

async fn no_flow_taken_fails_naming_the_node(engine: Engine, i: usize) {
    let (process, node) = [
        (&NO_FLOW_EXCLUSIVE, "x"),
        (&NO_FLOW_INCLUSIVE, "os"),
        (&NO_FLOW_TASK, "prep"),
    ][i % 3];
    let mut job = Job::new();
    // Every sixth run takes a flow, to show the same process can complete.
    job.a = i % 6 >= 3;
    let handle = engine.start(process, job.clone()).await.unwrap();
    let (outcome, h) = finish(&handle).await;
    if job.a {
        completed(outcome, &h);
        assert_eq!(h.completed_tasks(), ["prep", "a"]);
        return;
    }
    assert_eq!(failed(outcome, &h), InstanceError::NoFlowTaken { node });
    assert_eq!(h.completed_tasks(), ["prep"]);
    assert!(routes(&h, node).is_empty());
    assert_eq!(h.count(node, |w| *w == Happening::Cancelled), 1, "{h}");
    assert_eq!(
        handle.data().await,
        Some(Job {
            prepared: true,
            ..job
        })
    );
}

flavors!(no_flow_taken_fails_naming_the_node);

// Each test below pinned a bug of the instance loop (it failed before its fix).

process! {
    TWO_OR_JOINS: D {
        start s;
        parallel fork;
        inclusive os1;
        task a1 = ok;
        task b1 = ok;
        inclusive j1;
        end e1;
        end e1b;
        inclusive os2;
        task a2 = ok;
        task b2 = ok;
        inclusive j2;
        end e2;
        s -> fork -> os1, os2;
        os1 -> a1 when |_| true;
        os1 -> b1 when |_| false;
        a1, b1 -> j1;
        j1 -> e1 when |_| false;
        j1 -> e1b when |_| false;
        os2 -> a2 when |_| true;
        os2 -> b2 when |_| false;
        a2, b2 -> j2 -> e2;
    }
}

#[tokio::test]
async fn no_join_fires_after_a_split_failed() {
    let engine = Engine::with_config(thresh::EngineConfig::fail_fast());
    let h = engine.start(&TWO_OR_JOINS, D::default()).await.unwrap();
    let outcome = tokio::time::timeout(Duration::from_secs(5), h.outcome())
        .await
        .expect("outcome");
    assert_eq!(
        outcome.error(),
        Some(&InstanceError::NoFlowTaken { node: "j1" }),
        "expected NoFlowTaken at j1, got {outcome:?}"
    );
}

/// After the loop is lost, the handle's requests must not hang.
///
/// The loop is lost for real: it runs on a runtime that is dropped while the instance
/// waits at a user task, so the loop's task is dropped without an outcome. The handle,
/// used on another runtime, must answer every request.
#[test]
fn handle_requests_after_a_lost_loop_do_not_hang() {
    let doomed = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let h = doomed.block_on(async {
        let engine = Engine::with_config(thresh::EngineConfig::fail_fast());
        let h = engine.start(&WAITS, D::default()).await.unwrap();
        // The loop has parked the token at `u` once the work is listed.
        let open = h.open_work().await;
        assert_eq!(open.len(), 1, "{open:?}");
        h
    });
    drop(doomed);
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let limit = Duration::from_secs(5);
        let outcome = tokio::time::timeout(limit, h.outcome())
            .await
            .expect("outcome() answers after the loop was lost");
        assert_eq!(outcome.error(), Some(&InstanceError::Lost), "{outcome:?}");
        tokio::time::timeout(limit, h.data())
            .await
            .expect("data() answers after the loop was lost");
        tokio::time::timeout(limit, h.history())
            .await
            .expect("history() answers after the loop was lost");
        let open = tokio::time::timeout(limit, h.open_work())
            .await
            .expect("open_work() answers after the loop was lost");
        assert!(open.is_empty(), "{open:?}");
        let completed = tokio::time::timeout(limit, h.complete("u", |_| ()))
            .await
            .expect("complete() answers after the loop was lost");
        assert!(completed.is_err(), "{completed:?}");
    });
}

process! {
    WAITS: D {
        start s;
        user u;
        end e;
        s -> u -> e;
    }
}
