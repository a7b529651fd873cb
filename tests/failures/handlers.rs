//! A failing and a panicking handler, a panicking condition: the instance fails.

use super::*;

// ----- a failing and a panicking handler -----------------------------------------

process! {
    FAILING: Job {
        start s;
        task prep = prepare;
        parallel fork;
        task boom = fail;
        task wait = forever;
        parallel join;
        end done;

        s -> prep -> fork -> wait, boom;
        boom, wait -> join -> done;
    }
}

async fn failing_handler_fails_the_instance(engine: Engine, i: usize) {
    let mut job = Job::new();
    job.how = (i % 2) as u8;
    let id = job.id;
    let handle = engine.start(&FAILING, job.clone()).await.unwrap();
    let (outcome, h) = finish(&handle).await;
    let message = match job.how {
        0 => "card declined",
        _ => "invalid digit found in string",
    };
    assert_eq!(
        failed(outcome, &h),
        InstanceError::TaskFailed {
            node: "boom",
            message: message.into()
        }
    );
    assert_eq!(
        h.count("boom", |w| *w
            == Happening::Failed {
                message: message.into()
            }),
        1,
        "{h}"
    );
    assert_eq!(h.count("wait", |w| *w == Happening::Cancelled), 1, "{h}");
    assert_eq!(h.completed_tasks(), ["prep"]);
    // The committed data: prep's write, not the failed handler's.
    let data = handle.data().await.expect("the loop reported");
    assert_eq!(
        data,
        Job {
            prepared: true,
            ..job
        }
    );
    assert_stopped(id, "forever");
}

flavors!(failing_handler_fails_the_instance);

process! {
    PANICKING: Job {
        start s;
        task prep = prepare;
        parallel fork;
        task explode = explode;
        task wait = forever;
        parallel join;
        end done;

        s -> prep -> fork -> wait, explode;
        explode, wait -> join -> done;
    }
}

async fn panicking_handler_fails_the_instance(engine: Engine, i: usize) {
    let mut job = Job::new();
    job.how = (i % 3) as u8;
    let id = job.id;
    let handle = engine.start(&PANICKING, job.clone()).await.unwrap();
    let (outcome, h) = finish(&handle).await;
    let message = match job.how {
        0 => "kaboom".to_string(),
        1 => format!("kaboom #{id}"),
        _ => "a non-string panic payload".to_string(),
    };
    assert_eq!(
        failed(outcome, &h),
        InstanceError::TaskPanicked {
            node: "explode",
            message: message.clone()
        }
    );
    assert_eq!(
        h.count("explode", |w| *w
            == Happening::Failed {
                message: message.clone()
            }),
        1,
        "{h}"
    );
    assert_eq!(h.count("wait", |w| *w == Happening::Cancelled), 1, "{h}");
    assert_eq!(
        handle.data().await,
        Some(Job {
            prepared: true,
            ..job
        })
    );
    assert_stopped(id, "forever");
}

flavors!(panicking_handler_fails_the_instance);

// ----- a panicking condition -------------------------------------------------------

process! {
    CONDITION_PANICS: Job {
        start s;
        task prep = prepare;
        exclusive x;
        inclusive os;
        task a = step;
        task b = step;
        task c = step;
        end done;

        s -> prep -> x;
        x -> a when |j| j.a;
        x -> os else;
        // An inclusive split evaluates every condition, so the second one panics even
        // though the first holds.
        os -> b when |j| !j.a;
        os -> c when |j| {
            assert!(!j.b, "condition on {}", j.id);
            true
        };
        a, b, c -> done;
    }
}

async fn panicking_condition_fails_the_instance(engine: Engine, i: usize) {
    let mut job = Job::new();
    job.b = !i.is_multiple_of(4);
    let id = job.id;
    let (outcome, h) = run(&engine, &CONDITION_PANICS, job.clone()).await;
    if !job.b {
        completed(outcome, &h);
        assert_eq!(sorted(&h.completed_tasks()), ["b", "c", "prep"]);
        return;
    }
    assert_eq!(
        failed(outcome, &h),
        InstanceError::ConditionPanicked {
            from: "os",
            to: "c",
            message: format!("condition on {id}"),
        }
    );
    assert_eq!(h.completed_tasks(), ["prep"]);
    assert_eq!(routes(&h, "x"), [["os"]]);
    assert!(routes(&h, "os").is_empty(), "{h}");
    assert_eq!(h.count("os", |w| *w == Happening::Cancelled), 1, "{h}");
}

flavors!(panicking_condition_fails_the_instance);
