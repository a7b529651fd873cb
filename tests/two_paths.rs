//! The engine runs a plain task two ways: the fast path (`run_plain`, for a task
//! with no boundary in a quiet instance, and `straight_on` from one task to the
//! next) and the general path every other task takes. A test that replaces
//! handlers turns the fast path off for its instance (`Overrides`, even an empty
//! table), so the same processes run down both and must leave the same history,
//! step for step, and the same data.

use thresh::testing::Overrides;
use thresh::{process, Engine, Outcome, ProcessData, Step, TaskError};

#[derive(Clone, Debug, Default, PartialEq, ProcessData)]
pub struct Work {
    pub n: u64,
    pub label: String,
    pub big: bool,
    pub trace: Vec<u64>,
}

async fn add(w: &mut Work) -> Result<(), TaskError> {
    w.n += 1;
    w.trace.push(w.n);
    Ok(())
}

async fn noop(_: &mut Work) -> Result<(), TaskError> {
    Ok(())
}

async fn name(w: &mut Work) -> Result<(), TaskError> {
    w.label = format!("n={}", w.n);
    Ok(())
}

async fn later(w: &mut Work) -> Result<(), TaskError> {
    tokio::task::yield_now().await;
    w.big = w.n > 3;
    Ok(())
}

process! {
    /// A chain of tasks, some changing fields, some not, one waiting once.
    CHAIN: Work {
        start s;
        task a = add; task b = noop; task c = add; task d = name; task e = later;
        task f = add; task g = noop;
        end done;
        s -> a -> b -> c -> d -> e -> f -> g -> done;
    }
}

process! {
    /// A loop through an exclusive gateway, a split and a join.
    LOOPS: Work {
        start s;
        exclusive again: multi;
        task step = add;
        exclusive more;
        parallel fork;
        task left = name;
        task right = noop;
        parallel join;
        end done;
        s -> again -> step -> more;
        more -> again when |w| w.n % 4 != 0;
        more -> fork else;
        fork -> left, right;
        left -> join; right -> join;
        join -> done;
    }
}

process! {
    /// Conditions that read what the tasks before them wrote.
    CHOICE: Work {
        start s;
        task first = add;
        task second = later;
        exclusive x;
        task small = name;
        task large = add;
        exclusive merge;
        task last = noop;
        end done;
        s -> first -> second -> x;
        x -> large when |w| w.big;
        x -> small else;
        small -> merge; large -> merge;
        merge -> last -> done;
    }
}

async fn both_ways(engine: &Engine, process: &'static thresh::Process<Work>, data: Work) {
    let fast = engine.start(process, data.clone()).await.unwrap();
    let general = Overrides::new(process).start(engine, data).await.unwrap();
    let (fast_outcome, general_outcome) = (fast.outcome().await, general.outcome().await);
    let (Outcome::Completed(a), Outcome::Completed(b)) = (&fast_outcome, &general_outcome) else {
        panic!("{fast_outcome:?} / {general_outcome:?}");
    };
    assert_eq!(a, b, "the same data both ways");
    let (fast, general) = (fast.history().await, general.history().await);
    let (fast, general): (&[Step], &[Step]) = (fast.steps(), general.steps());
    assert!(!fast.is_empty());
    assert_eq!(fast, general, "the same history both ways");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_fast_and_the_general_path_leave_the_same_history() {
    let engine = Engine::new();
    for n in 0..12 {
        let data = Work {
            n,
            ..Work::default()
        };
        both_ways(&engine, &CHAIN, data.clone()).await;
        both_ways(&engine, &LOOPS, data.clone()).await;
        both_ways(&engine, &CHOICE, data).await;
    }
}
