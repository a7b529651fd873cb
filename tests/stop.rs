//! Stop means stop: a shutdown that comes before an instance's first step ends it
//! `Cancelled` with no handler run (`Engine::start` runs that step before it returns,
//! so no cancel can come first; a deployed start's or a call's child's first step is
//! on its loop, where a cancel queued before it is honoured); after `shutdown`
//! returned `Ok`, no instance runs and no handler of that engine runs again — also
//! for the instance a publish already under way was creating when the shutdown began.

mod common;

use std::cell::RefCell;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::mpsc;
use std::time::Duration;

use common::HANG;
use thresh::{process, Engine, EngineError, Happening, Outcome, ProcessData, Published};

#[derive(Clone, Debug, Default, PartialEq, ProcessData)]
pub struct Count {
    pub n: u32,
}

/// Every run of `ONE`'s handler, in this test binary. The tests that use it expect
/// none, so they can share it while running at once.
static ONE_RAN: AtomicUsize = AtomicUsize::new(0);

process! {
    ONE: Count {
        start s;
        task  a = |d| async move {
            ONE_RAN.fetch_add(1, Ordering::SeqCst);
            d.n += 1;
            Ok(())
        };
        end   e;
        s -> a -> e;
    }
}

process! {
    NOTHING: Count {
        start s;
        end   e;
        s -> e;
    }
}

fn runtime(workers: usize) -> tokio::runtime::Runtime {
    let mut builder = if workers == 1 {
        tokio::runtime::Builder::new_current_thread()
    } else {
        let mut b = tokio::runtime::Builder::new_multi_thread();
        b.worker_threads(workers);
        b
    };
    builder.enable_all().build().expect("runtime")
}

async fn outcome_of(handle: &thresh::InstanceHandle<Count>) -> Outcome<Count> {
    tokio::time::timeout(HANG, handle.outcome())
        .await
        .expect("the instance ended")
}

// ----- the first step, and a cancel after it --------------------------------------

/// The history of an instance cancelled before its first step: its token, cancelled
/// at the start it was to leave from.
fn cancelled_at_birth(steps: &[thresh::Step]) -> bool {
    let steps: Vec<_> = steps.iter().map(|s| (s.node, s.what.clone())).collect();
    steps == [("s", Happening::Started), ("s", Happening::Cancelled)]
}

/// `Engine::start` runs the instance's first step before it returns (no handle
/// exists before that, so no cancel can come first): an instance whose work is all
/// ready has ended when `start` returns — no loop was spawned — and a cancel then
/// changes nothing. Its handler ran exactly once per instance.
#[test]
fn start_runs_the_first_step_before_it_returns() {
    static RAN: AtomicUsize = AtomicUsize::new(0);
    process! {
        READY: Count {
            start s;
            task  a = |d| async move {
                RAN.fetch_add(1, Ordering::SeqCst);
                d.n += 1;
                Ok(())
            };
            end   e;
            s -> a -> e;
        }
    }
    for workers in [1, 4] {
        RAN.store(0, Ordering::SeqCst);
        runtime(workers).block_on(async {
            let engine = Engine::new();
            for _ in 0..500 {
                let handle = engine.start(&READY, Count::default()).await.unwrap();
                assert_eq!(
                    engine.running_instances(),
                    0,
                    "no loop for a finished instance"
                );
                handle.cancel();
                assert_eq!(
                    outcome_of(&handle).await,
                    Outcome::Completed(Count { n: 1 })
                );
                let nothing = engine.start(&NOTHING, Count::default()).await.unwrap();
                nothing.cancel();
                assert_eq!(
                    outcome_of(&nothing).await,
                    Outcome::Completed(Count { n: 0 })
                );
            }
            engine.shutdown(HANG).await.expect("shutdown");
            assert_eq!(RAN.load(Ordering::SeqCst), 500);
        });
    }
}

/// An instance whose handler has to wait leaves `start` with its loop spawned and
/// its track waiting; a cancel from another task, racing the handler, ends it
/// `Cancelled` with the handler's commit not applied, or it completed first with it
/// — on four workers, repeated. The handler ran once for each completion, at most
/// once for each cancel (its first poll was in `start`).
#[test]
fn a_cancel_racing_a_waiting_handler_is_cancelled_or_completed_multi_thread() {
    static RAN: AtomicUsize = AtomicUsize::new(0);
    static DONE: AtomicUsize = AtomicUsize::new(0);
    process! {
        WAITING: Count {
            start s;
            task  a = |d| async move {
                RAN.fetch_add(1, Ordering::SeqCst);
                tokio::task::yield_now().await;
                d.n += 1;
                DONE.fetch_add(1, Ordering::SeqCst);
                Ok(())
            };
            end   e;
            s -> a -> e;
        }
    }
    runtime(4).block_on(async {
        let engine = Engine::new();
        let (mut completed, mut cancelled) = (0, 0);
        for _ in 0..500 {
            let handle = engine.start(&WAITING, Count::default()).await.unwrap();
            let canceller = handle.clone();
            tokio::spawn(async move { canceller.cancel() });
            match outcome_of(&handle).await {
                Outcome::Completed(d) => {
                    assert_eq!(d, Count { n: 1 });
                    completed += 1;
                }
                Outcome::Cancelled(d) => {
                    assert_eq!(d, Count { n: 0 }, "a cancelled run commits nothing");
                    let steps = handle.history().await;
                    assert!(!cancelled_at_birth(steps.steps()), "its first step ran");
                    cancelled += 1;
                }
                other => panic!("unexpected outcome {other:?}"),
            }
        }
        engine.shutdown(HANG).await.expect("shutdown");
        assert_eq!(RAN.load(Ordering::SeqCst), completed + cancelled);
        assert!(DONE.load(Ordering::SeqCst) >= completed);
    });
}

// ----- starting after shutdown ------------------------------------------------------

fn start_after_shutdown(workers: usize, runs: usize) {
    runtime(workers).block_on(async {
        let engine = Engine::new();
        engine.shutdown(HANG).await.expect("shutdown");
        for _ in 0..runs {
            let one = engine.start(&ONE, Count::default()).await;
            let nothing = engine.start(&NOTHING, Count::default()).await;
            assert_eq!(engine.running_instances(), 0);
            assert!(matches!(one, Err(EngineError::ShuttingDown)), "{one:?}");
            assert!(
                matches!(nothing, Err(EngineError::ShuttingDown)),
                "{nothing:?}"
            );
        }
        assert_eq!(engine.running_instances(), 0);
        assert_eq!(ONE_RAN.load(Ordering::SeqCst), 0);
    });
}

#[test]
fn a_start_after_shutdown_is_refused_current_thread() {
    start_after_shutdown(1, 500);
}

#[test]
fn a_start_after_shutdown_is_refused_multi_thread() {
    start_after_shutdown(4, 500);
}

/// Shutdown began (its stop is seen) while `start` was being called from other
/// tasks: every start either ran its instance before the `Ok`, or its instance was
/// cancelled before its first step, or it was refused; nothing runs after it.
#[test]
fn starts_racing_a_shutdown_run_nothing_after_it_returned_multi_thread() {
    static AFTER_OK: AtomicBool = AtomicBool::new(false);
    static LATE: AtomicUsize = AtomicUsize::new(0);
    process! {
        WATCHED: Count {
            start s;
            task  a = |d| async move {
                if AFTER_OK.load(Ordering::SeqCst) {
                    LATE.fetch_add(1, Ordering::SeqCst);
                }
                d.n += 1;
                Ok(())
            };
            end   e;
            s -> a -> e;
        }
    }
    runtime(4).block_on(async {
        for _ in 0..200 {
            AFTER_OK.store(false, Ordering::SeqCst);
            let engine = Engine::new();
            let starters: Vec<_> = (0..3)
                .map(|_| {
                    let engine = engine.clone();
                    tokio::spawn(async move {
                        let mut handles = Vec::new();
                        for _ in 0..20 {
                            match engine.start(&WATCHED, Count::default()).await {
                                Ok(handle) => handles.push(handle),
                                Err(EngineError::ShuttingDown) => {}
                                Err(other) => panic!("unexpected error {other:?}"),
                            }
                            tokio::task::yield_now().await;
                        }
                        handles
                    })
                })
                .collect();
            tokio::task::yield_now().await;
            engine.shutdown(HANG).await.expect("shutdown");
            AFTER_OK.store(true, Ordering::SeqCst);
            assert_eq!(engine.running_instances(), 0);
            for starter in starters {
                for handle in starter.await.expect("starter") {
                    match outcome_of(&handle).await {
                        Outcome::Completed(d) => assert_eq!(d, Count { n: 1 }),
                        Outcome::Cancelled(_) => {}
                        other => panic!("unexpected outcome {other:?}"),
                    }
                }
            }
            assert_eq!(engine.running_instances(), 0);
        }
        assert_eq!(
            LATE.load(Ordering::SeqCst),
            0,
            "a handler ran after shutdown returned"
        );
    });
}

/// A shutdown that begins while an instance's first step runs on its starter (its
/// handler not yet returned) waits for that step: the start was admitted before the
/// stop, so the instance completes, and `shutdown` returns only after its handler
/// has — woken when the admission ends, not by polling.
#[test]
fn a_shutdown_waits_for_a_first_step_running_on_its_starter_multi_thread() {
    static ENTERED: AtomicBool = AtomicBool::new(false);
    static RELEASED: AtomicBool = AtomicBool::new(false);
    static FINISHED: AtomicBool = AtomicBool::new(false);
    process! {
        HELD: Count {
            start s;
            task  a = |d| async move {
                ENTERED.store(true, Ordering::SeqCst);
                // Blocks its thread (a blocking task's) until the test releases it.
                while !RELEASED.load(Ordering::SeqCst) {
                    std::thread::yield_now();
                }
                d.n += 1;
                FINISHED.store(true, Ordering::SeqCst);
                Ok(())
            };
            end   e;
            s -> a -> e;
        }
    }
    runtime(2).block_on(async {
        for _ in 0..20 {
            ENTERED.store(false, Ordering::SeqCst);
            RELEASED.store(false, Ordering::SeqCst);
            FINISHED.store(false, Ordering::SeqCst);
            let engine = Engine::new();
            let starter = {
                let engine = engine.clone();
                tokio::task::spawn_blocking(move || {
                    common::at_once(engine.start(&HELD, Count::default())).unwrap()
                })
            };
            while !ENTERED.load(Ordering::SeqCst) {
                tokio::task::yield_now().await;
            }
            let shutdown = {
                let engine = engine.clone();
                tokio::spawn(async move { engine.shutdown(HANG).await })
            };
            for _ in 0..100 {
                tokio::task::yield_now().await;
                assert!(
                    !shutdown.is_finished(),
                    "shutdown returned while a first step was running"
                );
            }
            RELEASED.store(true, Ordering::SeqCst);
            shutdown.await.expect("shutdown task").expect("shutdown");
            assert!(
                FINISHED.load(Ordering::SeqCst),
                "the handler returned first"
            );
            let handle = starter.await.expect("starter");
            assert_eq!(
                outcome_of(&handle).await,
                Outcome::Completed(Count { n: 1 })
            );
        }
    });
}

// ----- a publish in flight during shutdown ------------------------------------------

/// Process data whose clone, on a thread that armed the gate, stops until released:
/// a deterministic widening of the window between a publish reaching a deployed
/// start event and the instance existing (the deployment clones its data there).
#[derive(Debug, Default, PartialEq, ProcessData)]
pub struct Gated {
    pub n: u32,
}

/// The entered signal and the release a gated clone waits on.
type Gate = (mpsc::Sender<()>, mpsc::Receiver<()>);

thread_local! {
    static GATE: RefCell<Option<Gate>> = const { RefCell::new(None) };
}

impl Clone for Gated {
    fn clone(&self) -> Self {
        // Taken, so only the first clone on the armed thread waits.
        if let Some((entered, release)) = GATE.with(|g| g.borrow_mut().take()) {
            entered.send(()).expect("test waits");
            release.recv().expect("test releases");
        }
        Gated { n: self.n }
    }
}

static GATED_RAN: AtomicUsize = AtomicUsize::new(0);

process! {
    GATED_ORDERS: Gated {
        start received: message("order");
        task  work = |d| async move {
            GATED_RAN.fetch_add(1, Ordering::SeqCst);
            d.n += 1;
            Ok(())
        };
        end   done;
        received -> work -> done;
    }
}

/// The publish has reached the deployment (its instance is being made) when the
/// shutdown starts: shutdown waits for it, the instance ends cancelled before its
/// first step, and after `Ok` nothing runs.
#[test]
fn a_publish_in_flight_is_waited_for_and_its_instance_cancelled() {
    runtime(4).block_on(async {
        let engine = Engine::new();
        let mut deployment = engine
            .deploy(&GATED_ORDERS, Gated::default())
            .expect("deploy");
        let (entered_tx, entered) = mpsc::channel();
        let (release, release_rx) = mpsc::channel();
        let publisher = {
            let engine = engine.clone();
            std::thread::spawn(move || {
                GATE.with(|g| *g.borrow_mut() = Some((entered_tx, release_rx)));
                common::at_once(engine.publish_message("order", "o-1", ())).unwrap()
            })
        };
        // The publisher is inside the deployment's start, cloning the data.
        tokio::task::spawn_blocking(move || entered.recv().expect("entered"))
            .await
            .expect("entered");
        let shutdown = {
            let engine = engine.clone();
            tokio::spawn(async move { engine.shutdown(HANG).await })
        };
        // However long the publish takes, shutdown does not end before it.
        tokio::time::sleep(Duration::from_millis(50)).await;
        assert!(
            !shutdown.is_finished(),
            "shutdown returned while an instance was being made"
        );
        release.send(()).expect("release");
        shutdown.await.expect("joined").expect("shutdown");
        assert_eq!(engine.running_instances(), 0);
        let published = tokio::task::spawn_blocking(move || publisher.join().expect("publisher"))
            .await
            .expect("joined");
        assert_eq!(published, Published::Started);
        let started = deployment.next().await.expect("the instance made");
        assert!(matches!(
            started.outcome().await,
            Outcome::Cancelled(Gated { n: 0 })
        ));
        assert!(deployment.next().await.is_none());
        assert_eq!(GATED_RAN.load(Ordering::SeqCst), 0);
    });
}

/// Three publishers race a shutdown, many times: after `Ok`, no instance runs and no
/// handler runs again; every publish has a definite answer.
#[test]
fn publishes_racing_a_shutdown_run_nothing_after_it_returned() {
    static AFTER_OK: AtomicBool = AtomicBool::new(false);
    static LATE: AtomicUsize = AtomicUsize::new(0);
    process! {
        RACED: Count {
            start received: message("order");
            task  work = |d| async move {
                if AFTER_OK.load(Ordering::SeqCst) {
                    LATE.fetch_add(1, Ordering::SeqCst);
                }
                d.n += 1;
                Ok(())
            };
            end   done;
            received -> work -> done;
        }
    }
    runtime(4).block_on(async {
        for round in 0..300 {
            AFTER_OK.store(false, Ordering::SeqCst);
            let engine = Engine::new();
            let _orders = engine.deploy(&RACED, Count::default()).expect("deploy");
            let publishers: Vec<_> = (0..3)
                .map(|p| {
                    let engine = engine.clone();
                    std::thread::spawn(move || {
                        (0..20)
                            .map(|i| {
                                common::at_once(engine.publish_message(
                                    "order",
                                    format!("{round}-{p}-{i}"),
                                    (),
                                ))
                                .unwrap()
                            })
                            .collect::<Vec<_>>()
                    })
                })
                .collect();
            engine.shutdown(HANG).await.expect("shutdown");
            AFTER_OK.store(true, Ordering::SeqCst);
            assert_eq!(engine.running_instances(), 0, "round {round}");
            for publisher in publishers {
                let answers =
                    tokio::task::spawn_blocking(move || publisher.join().expect("publisher"))
                        .await
                        .expect("joined");
                for answer in answers {
                    // Buffered: published after the deployment was gone.
                    assert!(
                        matches!(
                            answer,
                            Published::Started | Published::ShutDown | Published::Buffered
                        ),
                        "round {round}: {answer:?}"
                    );
                }
            }
            assert_eq!(engine.running_instances(), 0, "round {round}");
        }
        assert_eq!(
            LATE.load(Ordering::SeqCst),
            0,
            "a handler ran after shutdown returned"
        );
    });
}
