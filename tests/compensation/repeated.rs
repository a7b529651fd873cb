//! Repeated activities (BPMN §13.5.5): each run of a standard loop and each instance
//! of a multi-instance activity is undone on its own, latest completion first, each
//! from the data as that run or instance left it; its handler reads which one it
//! undoes in `thresh::task::current().iteration`.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::Duration;

use super::*;

#[derive(Clone, Debug, Default, PartialEq, ProcessData)]
pub struct Reps {
    pub run: u64,
    pub items: Vec<u32>,
    pub laps: u32,
    /// The item of the last instance to commit.
    pub last: u32,
}

/// What each compensating task saw, in the order they ran: (run, who, the value it
/// read from its data, its iteration). The history does not carry data.
static SEEN: Mutex<Vec<Seen>> = Mutex::new(Vec::new());

/// (run, who, the value it read, its iteration).
type Seen = (u64, &'static str, u32, Option<u32>);

fn saw(run: u64, who: &'static str, value: u32) {
    let iteration = thresh::task::current().and_then(|c| c.iteration);
    SEEN.lock().unwrap().push((run, who, value, iteration));
}

/// What `who` saw in `run`, in order.
fn seen(run: u64, who: &str) -> Vec<(u32, Option<u32>)> {
    SEEN.lock()
        .unwrap()
        .iter()
        .filter(|(r, w, ..)| *r == run && *w == who)
        .map(|&(_, _, v, i)| (v, i))
        .collect()
}

/// Each instance gets its own run number (the tests of a binary share `SEEN`).
fn reps(items: &[u32]) -> Reps {
    static NEXT: AtomicU64 = AtomicU64::new(1);
    Reps {
        run: NEXT.fetch_add(1, Ordering::Relaxed),
        items: items.to_vec(),
        ..Reps::default()
    }
}

/// The outcome and history (the common history checks do not know instance tracks,
/// which end where their activity completes).
async fn finish_reps(handle: &thresh::InstanceHandle<Reps>) -> (Reps, History) {
    let outcome = tokio::time::timeout(HANG, handle.outcome())
        .await
        .expect("the instance ends");
    let history = handle.history().await;
    match outcome {
        Outcome::Completed(reps) => (reps, history),
        other => panic!("expected completed, got {other:?}\n{history}"),
    }
}

process! {
    /// `lap` runs three times (a standard loop); the throw undoes each run, the
    /// third first, each from the data its run left.
    LOOPED: Reps {
        start     begin;
        #[standard_loop(while = |t, _runs| t.laps < 3)]
        task      lap = |t| async move { yield_jitter().await; t.laps += 1; Ok(()) };
        boundary  undo_lap on lap: compensation -> unlap;
        task      unlap = |t| async move {
            yield_jitter().await;
            saw(t.run, "unlap", t.laps);
            Ok(())
        }: compensation;
        throw     undo: compensation;
        end       done;
        begin -> lap -> undo -> done;
    }
}

async fn looped(engine: Engine, _: usize) {
    let handle = engine.start(&LOOPED, reps(&[])).await.unwrap();
    let (done, history) = finish_reps(&handle).await;
    assert_eq!(
        history.completed_tasks(),
        ["lap", "lap", "lap", "lap", "unlap", "unlap", "unlap"],
        "{history}"
    );
    assert_eq!(done.laps, 3);
    assert_eq!(
        seen(done.run, "unlap"),
        [(3, Some(2)), (2, Some(1)), (1, Some(0))],
        "{history}"
    );
}

flavors!(looped);

process! {
    /// `pack` runs once per item, one after the other; a throw naming it undoes
    /// each instance, the last item first.
    SEQUENTIAL: Reps {
        start     begin;
        #[multi_instance(sequential, each = |t| t.items.clone())]
        task      pack = |t, item: &u32, _i| {
            let item = *item;
            async move { yield_jitter().await; t.last = item; Ok(()) }
        };
        boundary  undo_pack on pack: compensation -> unpack;
        task      unpack = |t| async move {
            yield_jitter().await;
            saw(t.run, "unpack", t.last);
            Ok(())
        }: compensation;
        throw     undo: compensation(pack);
        end       done;
        begin -> pack -> undo -> done;
    }
}

async fn sequential(engine: Engine, _: usize) {
    let handle = engine
        .start(&SEQUENTIAL, reps(&[10, 20, 30]))
        .await
        .unwrap();
    let (done, history) = finish_reps(&handle).await;
    assert_eq!(
        common::completions(&history, "unpack"),
        3,
        "one handler per instance\n{history}"
    );
    assert_eq!(
        seen(done.run, "unpack"),
        [(30, Some(2)), (20, Some(1)), (10, Some(0))],
        "{history}"
    );
}

flavors!(sequential);

process! {
    /// `pack` runs for every item at once; an instance sleeps its item's
    /// milliseconds, so they complete in item order, not index order.
    PARALLEL: Reps {
        start     begin;
        #[multi_instance(each = |t| t.items.clone())]
        task      pack = |t, item: &u32, _i| {
            let item = *item;
            async move {
                tokio::time::sleep(Duration::from_millis(u64::from(item))).await;
                t.last = item;
                Ok(())
            }
        };
        boundary  undo_pack on pack: compensation -> unpack;
        task      unpack = |t| async move {
            yield_jitter().await;
            saw(t.run, "unpack", t.last);
            Ok(())
        }: compensation;
        throw     undo: compensation;
        end       done;
        begin -> pack -> undo -> done;
    }
}

#[tokio::test(start_paused = true)]
async fn parallel_instances_are_undone_latest_completion_first() {
    let engine = Engine::new();
    for _ in 0..20 {
        let handle = engine.start(&PARALLEL, reps(&[30, 10, 20])).await.unwrap();
        let (done, history) = finish_reps(&handle).await;
        assert_eq!(common::completions(&history, "unpack"), 3, "{history}");
        // Completed 10 (index 1), 20 (index 2), 30 (index 0): undone the other way.
        assert_eq!(
            seen(done.run, "unpack"),
            [(30, Some(0)), (20, Some(2)), (10, Some(1))],
            "{history}"
        );
    }
    engine.shutdown(HANG).await.expect("shutdown");
}

process! {
    /// Every instance of `trip` books its item; its compensation event sub-process
    /// runs once per completed instance, latest first, with that instance's inner
    /// log: its inner throw undoes that instance's `book` only.
    TRIPS: Reps {
        start     begin;
        #[multi_instance(each = |t| t.items.clone())]
        subprocess trip {
            start     ts;
            #[item]
            task      book = |t, item: &u32, _i| {
                let item = *item;
                async move {
                    tokio::time::sleep(Duration::from_millis(u64::from(item))).await;
                    t.last = item;
                    Ok(())
                }
            };
            boundary  undo_book on book: compensation -> unbook;
            task      unbook = |t| async move { saw(t.run, "unbook", t.last); Ok(()) }: compensation;
            end       te;
            ts -> book -> te;
            event_subprocess undo_trip {
                start     us: compensation;
                task      notify = |t| async move { yield_jitter().await; saw(t.run, "notify", 0); Ok(()) };
                throw     inner: compensation;
                end       ue;
                us -> notify -> inner -> ue;
            }
        }
        throw     undo: compensation(trip);
        end       done;
        begin -> trip -> undo -> done;
    }
}

#[tokio::test(start_paused = true)]
async fn each_multi_instance_sub_process_instance_runs_its_compensation_event_sub_process() {
    let engine = Engine::new();
    for _ in 0..20 {
        let handle = engine.start(&TRIPS, reps(&[30, 10, 20])).await.unwrap();
        let (done, history) = finish_reps(&handle).await;
        assert_eq!(
            common::completions(&history, "notify"),
            3,
            "one event sub-process per instance\n{history}"
        );
        // Latest completion first: index 0 (30), then 2 (20), then 1 (10).
        assert_eq!(
            seen(done.run, "notify"),
            [(0, Some(0)), (0, Some(2)), (0, Some(1))],
            "{history}"
        );
        assert_eq!(
            seen(done.run, "unbook"),
            [(30, Some(0)), (20, Some(2)), (10, Some(1))],
            "{history}"
        );
    }
    engine.shutdown(HANG).await.expect("shutdown");
}

process! {
    /// Two instances are enough: the third (the slowest) is cancelled, and only the
    /// two that completed are undone.
    ENOUGH: Reps {
        start     begin;
        #[multi_instance(each = |t| t.items.clone(), completion = |_t, n| n.completed >= 2)]
        task      pack = |t, item: &u32, _i| {
            let item = *item;
            async move {
                tokio::time::sleep(Duration::from_millis(u64::from(item))).await;
                t.last = item;
                Ok(())
            }
        };
        boundary  undo_pack on pack: compensation -> unpack;
        task      unpack = |t| async move { saw(t.run, "unpack", t.last); Ok(()) }: compensation;
        throw     undo: compensation;
        end       done;
        begin -> pack -> undo -> done;
    }
}

#[tokio::test(start_paused = true)]
async fn instances_cancelled_by_the_completion_condition_are_not_undone() {
    let engine = Engine::new();
    let handle = engine.start(&ENOUGH, reps(&[30, 10, 20])).await.unwrap();
    let (done, history) = finish_reps(&handle).await;
    assert_eq!(
        seen(done.run, "unpack"),
        [(20, Some(2)), (10, Some(1))],
        "{history}"
    );
    engine.shutdown(HANG).await.expect("shutdown");
}
