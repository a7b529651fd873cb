//! The process data's own code — its `Clone`, its `PartialEq` — runs inside the
//! engine outside any handler (a task's copy, a commit's diff). A panic there
//! stops that instance with an outcome naming the call and the type; it never
//! leaves `Engine::start`, nor takes another instance with it.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use thresh::{process, Engine, InstanceError, Outcome, ProcessData, TaskError};

/// Clones panic while `fail` is set.
#[derive(Debug, Default)]
pub struct Fragile {
    pub n: u64,
    pub fail: Arc<AtomicBool>,
}

impl Clone for Fragile {
    fn clone(&self) -> Self {
        if self.fail.load(Ordering::SeqCst) {
            panic!("this clone refuses");
        }
        Fragile {
            n: self.n,
            fail: self.fail.clone(),
        }
    }
}

impl PartialEq for Fragile {
    fn eq(&self, other: &Self) -> bool {
        self.n == other.n
    }
}

#[derive(Clone, Debug, Default, ProcessData)]
pub struct Picky {
    pub n: Touchy,
}

/// Compares by panicking once its value is 13.
#[derive(Clone, Debug, Default)]
pub struct Touchy(pub u64);

impl PartialEq for Touchy {
    fn eq(&self, other: &Self) -> bool {
        if self.0 == 13 || other.0 == 13 {
            panic!("13 cannot be compared");
        }
        self.0 == other.0
    }
}

impl ProcessData for Fragile {
    const FIELDS: &'static [&'static str] = &["n"];
    fn diff(&self, other: &Self) -> thresh::ChangedFields {
        let mut changed = thresh::ChangedFields::new(Self::FIELDS);
        if self.n != other.n {
            changed.insert(0);
        }
        changed
    }
    fn merge(&mut self, base: &Self, edited: Self) -> thresh::ChangedFields {
        let mut changed = thresh::ChangedFields::new(Self::FIELDS);
        if edited.n != base.n && edited.n != self.n {
            self.n = edited.n;
            changed.insert(0);
        }
        changed
    }
}

async fn add(f: &mut Fragile) -> Result<(), TaskError> {
    f.n += 1;
    Ok(())
}

process! {
    ADD: Fragile {
        start begin;
        task add = add;
        end done;
        begin -> add -> done;
    }
}

process! {
    /// Waits for a person, then runs a task (the loop's copy of the data).
    WAIT_THEN_ADD: Fragile {
        start begin;
        user approve;
        task add = add;
        end done;
        begin -> approve -> add -> done;
    }
}

process! {
    THIRTEEN: Picky {
        start begin;
        task set = |p| async move { p.n = Touchy(13); Ok(()) };
        end done;
        begin -> set -> done;
    }
}

process! {
    /// Parks at a user task: its completion's commit runs in the instance's loop.
    THIRTEEN_LATER: Picky {
        start begin;
        user approve;
        end done;
        begin -> approve -> done;
    }
}

fn refused_clone(outcome: &Outcome<Fragile>) -> bool {
    matches!(
        outcome,
        Outcome::Failed(InstanceError::DataPanicked { call: "Clone", data_type, message })
            if data_type.ends_with("Fragile") && message == "this clone refuses"
    )
}

async fn a_clone_that_panics_fails_its_instance_only() {
    let engine = Engine::new();
    // In the first step, run by `Engine::start` on its caller.
    let fail = Arc::new(AtomicBool::new(true));
    let data = Fragile {
        n: 0,
        fail: fail.clone(),
    };
    let handle = engine.start(&ADD, data).await.unwrap();
    let outcome = handle.outcome().await;
    assert!(refused_clone(&outcome), "{outcome:?}");
    let message = match &outcome {
        Outcome::Failed(error) => error.to_string(),
        _ => unreachable!(),
    };
    assert!(
        message.contains("Clone") && message.contains("Fragile"),
        "{message}"
    );
    // In the loop: the user task parks it; the task after it copies the data.
    let fail = Arc::new(AtomicBool::new(false));
    let handle = engine
        .start(
            &WAIT_THEN_ADD,
            Fragile {
                n: 0,
                fail: fail.clone(),
            },
        )
        .await
        .unwrap();
    let healthy = engine
        .start(&WAIT_THEN_ADD, Fragile::default())
        .await
        .unwrap();
    fail.store(true, Ordering::SeqCst);
    let _ = handle.complete("approve", |_: &mut Fragile| {}).await;
    let outcome = handle.outcome().await;
    assert!(refused_clone(&outcome), "{outcome:?}");
    // The engine and its other instances go on.
    healthy
        .complete("approve", |_: &mut Fragile| {})
        .await
        .unwrap();
    assert!(matches!(healthy.outcome().await, Outcome::Completed(f) if f.n == 1));
    fail.store(false, Ordering::SeqCst);
    let again = engine.start(&ADD, Fragile { n: 5, fail }).await.unwrap();
    assert!(matches!(again.outcome().await, Outcome::Completed(f) if f.n == 6));
}

#[tokio::test(flavor = "current_thread")]
async fn a_clone_that_panics_fails_its_instance_on_one_thread() {
    a_clone_that_panics_fails_its_instance_only().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_clone_that_panics_fails_its_instance_on_two_workers() {
    for _ in 0..10 {
        a_clone_that_panics_fails_its_instance_only().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_comparison_that_panics_in_a_commit_names_the_diff() {
    let engine = Engine::new();
    let outcome = engine
        .start(&THIRTEEN, Picky::default())
        .await
        .unwrap()
        .outcome()
        .await;
    assert!(
        matches!(
            &outcome,
            Outcome::Failed(InstanceError::DataPanicked { call: "diff", data_type, message })
                if data_type.ends_with("Picky") && message == "13 cannot be compared"
        ),
        "{outcome:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_comparison_that_panics_in_the_loop_ends_the_instance_naming_it() {
    let engine = Engine::new();
    for _ in 0..10 {
        let handle = engine
            .start(&THIRTEEN_LATER, Picky::default())
            .await
            .unwrap();
        let other = engine
            .start(&THIRTEEN_LATER, Picky::default())
            .await
            .unwrap();
        // The copy is made and changed on the track; the loop's commit diffs it.
        let _ = handle
            .complete("approve", |p: &mut Picky| p.n = Touchy(13))
            .await;
        let outcome = handle.outcome().await;
        assert!(
            matches!(
                &outcome,
                Outcome::Failed(InstanceError::DataPanicked { call: "diff", message, .. })
                    if message == "13 cannot be compared"
            ),
            "{outcome:?}"
        );
        other
            .complete("approve", |p: &mut Picky| p.n = Touchy(2))
            .await
            .unwrap();
        assert!(matches!(other.outcome().await, Outcome::Completed(p) if p.n.0 == 2));
    }
}

async fn refuse(_: &mut Picky) -> Result<(), TaskError> {
    Err(TaskError::permanent("refused"))
}

process! {
    /// One branch holds at an incident; the other waits for its approval.
    HELD_AND_WAITING: Picky {
        start begin;
        parallel fork;
        task refuse = refuse;
        user approve;
        parallel join;
        end done;
        begin -> fork -> refuse, approve;
        refuse, approve -> join -> done;
    }
}

/// An instance that ends by a panic in its loop, with an incident open, leaves no
/// incident behind: none listed, a retry finds none.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_loop_that_panics_leaves_no_incident_listed() {
    let engine = Engine::new();
    let handle = engine
        .start(&HELD_AND_WAITING, Picky::default())
        .await
        .unwrap();
    let incident = tokio::time::timeout(std::time::Duration::from_secs(20), async {
        loop {
            if let Some(incident) = engine.incidents().await.unwrap().pop() {
                return incident;
            }
            tokio::time::sleep(std::time::Duration::from_millis(1)).await;
        }
    })
    .await
    .expect("an incident at refuse");
    // The approval's commit diffs a 13: the loop panics.
    let _ = handle
        .complete("approve", |p: &mut Picky| p.n = Touchy(13))
        .await;
    let outcome = handle.outcome().await;
    assert!(
        matches!(
            &outcome,
            Outcome::Failed(InstanceError::DataPanicked { call: "diff", .. })
        ),
        "{outcome:?}"
    );
    assert_eq!(engine.incidents().await.unwrap(), Vec::new());
    assert_eq!(
        engine.retry(incident.id).await,
        Err(thresh::retry::RetryError::NoIncident(incident.id))
    );
}
