use thresh::{process, Engine, Happening, ProcessData, TaskError};

#[derive(Clone, Debug, Default, ProcessData)]
pub struct Call {
    pub attempts: u32,
    pub answer_on: u32,
    pub answered: bool,
    pub seen: Vec<u32>,
    pub go: bool,
}

async fn call_api(c: &mut Call) -> Result<(), TaskError> {
    let run = thresh::task::current()
        .expect("in a handler")
        .iteration
        .expect("a loop run");
    c.seen.push(run);
    c.attempts += 1;
    c.answered = c.attempts >= c.answer_on;
    Ok(())
}

process! {
    pub RETRY: Call {
        start s;
        #[standard_loop(while = |c, _runs| !c.answered, max = 5)]
        task call = call_api;
        end e;
        s -> call -> e;
    }
}

process! {
    pub BEFORE: Call {
        start s;
        #[standard_loop(test_before, while = |c, runs| c.go && runs < 3)]
        task call = call_api;
        end e;
        s -> call -> e;
    }
}

process! {
    pub LOOPED_SUB: Call {
        start s;
        #[standard_loop(while = |c, runs| runs < c.answer_on)]
        subprocess round {
            start rs;
            parallel fork;
            task a = |c| async move { c.attempts += 1; Ok(()) };
            task b = |c| async move { c.seen.push(thresh::task::current().unwrap().iteration.unwrap()); Ok(()) };
            parallel join;
            end re;
            rs -> fork -> a, b -> join -> re;
        }
        end e;
        s -> round -> e;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_loop_runs_until_its_condition_fails_tested_after_each_run() {
    let engine = Engine::with_config(thresh::EngineConfig::fail_fast());
    let h = engine
        .start(
            &RETRY,
            Call {
                answer_on: 3,
                ..Call::default()
            },
        )
        .await
        .unwrap();
    let done = h.outcome().await.completed().unwrap();
    assert_eq!((done.attempts, done.seen), (3, vec![0, 1, 2]));
    let runs: Vec<u32> = h
        .history()
        .await
        .steps()
        .iter()
        .filter_map(|s| match s.what {
            Happening::Instance { index } if s.node == "call" => Some(index),
            _ => None,
        })
        .collect();
    assert_eq!(runs, [0, 1, 2]);
    // At least once, even when the condition is false at once.
    let h = engine
        .start(
            &RETRY,
            Call {
                answer_on: 0,
                ..Call::default()
            },
        )
        .await
        .unwrap();
    assert_eq!(h.outcome().await.completed().unwrap().attempts, 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn max_bounds_the_runs() {
    let engine = Engine::with_config(thresh::EngineConfig::fail_fast());
    let h = engine
        .start(
            &RETRY,
            Call {
                answer_on: 100,
                ..Call::default()
            },
        )
        .await
        .unwrap();
    let done = h.outcome().await.completed().unwrap();
    assert_eq!((done.attempts, done.answered), (5, false));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn tested_before_a_false_condition_runs_nothing() {
    let engine = Engine::with_config(thresh::EngineConfig::fail_fast());
    let h = engine.start(&BEFORE, Call::default()).await.unwrap();
    assert_eq!(h.outcome().await.completed().unwrap().attempts, 0);
    assert_eq!(h.history().await.ended_at(), ["e"]);
    let h = engine
        .start(
            &BEFORE,
            Call {
                go: true,
                ..Call::default()
            },
        )
        .await
        .unwrap();
    let done = h.outcome().await.completed().unwrap();
    assert_eq!((done.attempts, done.seen), (3, vec![0, 1, 2]));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_looped_sub_process_is_a_fresh_scope_each_run() {
    for _ in 0..100 {
        let engine = Engine::with_config(thresh::EngineConfig::fail_fast());
        let h = engine
            .start(
                &LOOPED_SUB,
                Call {
                    answer_on: 3,
                    ..Call::default()
                },
            )
            .await
            .unwrap();
        let done = h.outcome().await.completed().unwrap();
        assert_eq!((done.attempts, done.seen), (3, vec![0, 1, 2]));
        assert_eq!(h.history().await.fired("join"), 3);
    }
}
