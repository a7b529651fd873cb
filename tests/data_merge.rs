//! Process data and history at run time: parallel tasks that change different fields
//! both keep their writes (three-way merge); a same-field conflict goes to the later
//! commit; `Completed { changed }` names exactly the fields a commit changed;
//! `InstanceHandle::data` shows the committed data while the instance runs; the
//! history lists a chain's steps, and `completed_tasks` commits, in order.
//!
//! Every scenario runs 200 times on a paused current-thread runtime and 200 times on a
//! four-worker multi-thread runtime (see `common`); the `*_in_order` tests pin one
//! interleaving with the paused clock.

#[macro_use]
mod common;

use std::collections::HashSet;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::Duration;

use common::*;
use thresh::{process, Engine, Happening, Outcome, ProcessData, Step, TaskError, TrackId};

#[derive(Clone, Debug, Default, PartialEq, ProcessData)]
struct Doc {
    id: u64,
    x: u32,
    y: u32,
    v: u32,
    w1: bool,
    w2: bool,
    /// Both writers write the same value to `v`.
    same: bool,
    /// Milliseconds the writers wait first.
    d1: u64,
    d2: u64,
    a: u32,
    b: String,
    c: Vec<u8>,
}

impl Doc {
    fn new() -> Self {
        static NEXT: AtomicU64 = AtomicU64::new(1);
        Doc {
            id: NEXT.fetch_add(1, Ordering::Relaxed),
            ..Doc::default()
        }
    }
}

fn changed(h: &thresh::History, task: &str) -> Vec<Vec<&'static str>> {
    h.steps()
        .iter()
        .filter(|s| s.node == task)
        .filter_map(|s| match &s.what {
            Happening::Completed { changed } => Some(changed.to_vec()),
            _ => None,
        })
        .collect()
}

// ----- different fields ----------------------------------------------------------

process! {
    DISJOINT: Doc {
        start s;
        parallel fork;
        task set_x = |d| async move {
            jitter().await;
            d.x = 1;
            Ok(())
        };
        task set_y = |d| async move {
            jitter().await;
            d.y = 2;
            Ok(())
        };
        parallel join;
        end done;

        s -> fork -> set_x, set_y;
        set_x, set_y -> join -> done;
    }
}

/// Both tasks start from the same snapshot; the second commit merges into the first
/// instead of overwriting it.
async fn parallel_writes_to_different_fields_both_stay(engine: Engine, _: usize) {
    let doc = Doc::new();
    let (outcome, h) = run(&engine, &DISJOINT, doc.clone()).await;
    assert_eq!(
        outcome,
        Outcome::Completed(Doc { x: 1, y: 2, ..doc }),
        "{h}"
    );
    assert_eq!(changed(&h, "set_x"), [["x"]]);
    assert_eq!(changed(&h, "set_y"), [["y"]]);
}

// ----- the same field --------------------------------------------------------------

async fn write_v(d: &mut Doc, first: bool) -> Result<(), TaskError> {
    let delay = if first { d.d1 } else { d.d2 };
    tokio::time::sleep(Duration::from_millis(delay)).await;
    jitter().await;
    d.v = match (d.same, first) {
        (true, _) => 7,
        (false, true) => 1,
        (false, false) => 2,
    };
    if first {
        d.w1 = true;
    } else {
        d.w2 = true;
    }
    Ok(())
}

process! {
    CONFLICT: Doc {
        start s;
        parallel fork;
        task w1 = |d| write_v(d, true);
        task w2 = |d| write_v(d, false);
        parallel join;
        end done;

        s -> fork -> w1, w2;
        w1, w2 -> join -> done;
    }
}

/// Both write `v`: the later commit (by the history's order) wins, and each keeps its
/// own marker field. A commit lists `v` as changed only if it changed the committed
/// value — when both write the same value, the second lists only its marker.
async fn same_field_conflict_goes_to_the_later_commit(engine: Engine, i: usize) {
    let mut doc = Doc::new();
    doc.same = i.is_multiple_of(3);
    doc.d1 = (i % 2) as u64;
    doc.d2 = ((i / 2) % 2) as u64;
    let same = doc.same;
    let (outcome, h) = run(&engine, &CONFLICT, doc).await;
    let data = completed(outcome, &h);
    let order = h.completed_tasks();
    assert_eq!(sorted(&order), ["w1", "w2"]);
    let (first, later) = (order[0], order[1]);
    let expected_v = match (same, later) {
        (true, _) => 7,
        (false, "w1") => 1,
        _ => 2,
    };
    assert!(data.w1 && data.w2, "{data:?}");
    assert_eq!(data.v, expected_v, "{h}");
    let marker = |t: &str| if t == "w1" { "w1" } else { "w2" };
    assert_eq!(changed(&h, first), [["v", marker(first)]]);
    if same {
        assert_eq!(changed(&h, later), [[marker(later)]]);
    } else {
        assert_eq!(changed(&h, later), [["v", marker(later)]]);
    }
}

/// Pinned: with the paused clock the shorter wait commits first, so the other wins.
#[tokio::test(start_paused = true)]
async fn same_field_conflict_goes_to_the_later_commit_in_order() {
    let engine = Engine::new();
    for (d1, d2, order, v) in [(5, 10, ["w1", "w2"], 2), (10, 5, ["w2", "w1"], 1)] {
        let doc = Doc {
            d1,
            d2,
            ..Doc::new()
        };
        let (outcome, h) = run(&engine, &CONFLICT, doc).await;
        let data = completed(outcome, &h);
        assert_eq!(h.completed_tasks(), order);
        assert_eq!(data.v, v);
    }
}

// ----- a tuple struct ---------------------------------------------------------------

#[derive(Clone, Debug, Default, PartialEq, ProcessData)]
struct Pair(u32, String);

process! {
    PAIR: Pair {
        start s;
        parallel fork;
        task first = |p| async move {
            jitter().await;
            p.0 = 10;
            Ok(())
        };
        task second = |p| async move {
            jitter().await;
            p.1 = "ten".into();
            Ok(())
        };
        parallel join;
        end done;

        s -> fork -> first, second;
        first, second -> join -> done;
    }
}

async fn tuple_struct_fields_merge_by_position(engine: Engine, _: usize) {
    let (outcome, h) = run(&engine, &PAIR, Pair::default()).await;
    assert_eq!(outcome, Outcome::Completed(Pair(10, "ten".into())));
    assert_eq!(changed(&h, "first"), [["0"]]);
    assert_eq!(changed(&h, "second"), [["1"]]);
}

// ----- history of a chain --------------------------------------------------------

process! {
    CHAIN: Doc {
        start s;
        task t1 = |d| async move {
            jitter().await;
            d.a = 1;
            d.b = "one".into();
            Ok(())
        };
        task t2 = |d| async move {
            jitter().await;
            d.c.push(2);
            Ok(())
        };
        task t3 = |d| async move {
            jitter().await;
            // Writes a field with the value it has: not a change.
            d.a = 1;
            Ok(())
        };
        task t4 = |d| async move {
            jitter().await;
            d.a += 3;
            Ok(())
        };
        end done;

        s -> t1 -> t2 -> t3 -> t4 -> done;
    }
}

/// A sequential chain: every step in order on track 0, the changed fields of each
/// commit, the completed tasks in completion order.
async fn chain_history_is_in_order(engine: Engine, _: usize) {
    let doc = Doc::new();
    let (outcome, h) = run(&engine, &CHAIN, doc.clone()).await;
    assert_eq!(
        outcome,
        Outcome::Completed(Doc {
            a: 4,
            b: "one".into(),
            c: vec![2],
            ..doc
        })
    );
    assert_eq!(h.completed_tasks(), ["t1", "t2", "t3", "t4"]);
    let step = |node, what| Step {
        track: TrackId(0),
        node,
        what,
    };
    let done = |changed: &[&'static str]| Happening::Completed {
        changed: changed.to_vec().into(),
    };
    assert_eq!(
        h.steps(),
        [
            step("s", Happening::Started),
            step("t1", Happening::TaskStarted),
            step("t1", done(&["a", "b"])),
            step("t2", Happening::TaskStarted),
            step("t2", done(&["c"])),
            step("t3", Happening::TaskStarted),
            step("t3", done(&[])),
            step("t4", Happening::TaskStarted),
            step("t4", done(&["a"])),
            step("done", Happening::Ended),
        ]
    );
    assert_eq!(h.ended_at(), ["done"]);
    assert_eq!(h.tracks(), 1);
}

process! {
    RACE: Doc {
        start s;
        parallel fork;
        task p1 = |_d| async move {
            tokio::time::sleep(Duration::from_millis(30)).await;
            Ok(())
        };
        task p2 = |_d| async move {
            tokio::time::sleep(Duration::from_millis(10)).await;
            Ok(())
        };
        task p3 = |_d| async move {
            tokio::time::sleep(Duration::from_millis(20)).await;
            Ok(())
        };
        parallel join;
        end done;

        s -> fork -> p1, p2, p3;
        p1, p2, p3 -> join -> done;
    }
}

/// Pinned: parallel tasks are listed in the order they completed, not as declared.
#[tokio::test(start_paused = true)]
async fn completed_tasks_are_in_completion_order_in_order() {
    let engine = Engine::new();
    let (outcome, h) = run(&engine, &RACE, Doc::new()).await;
    completed(outcome, &h);
    assert_eq!(h.completed_tasks(), ["p2", "p3", "p1"]);
    // The join fires on the last arrival, p1's.
    let p1 = position(&h, "p1", |w| matches!(w, Happening::Completed { .. }));
    let fired = position(&h, "join", |w| *w == Happening::Fired);
    assert_eq!(h.steps()[p1].track, h.steps()[fired].track);
}

// ----- data while running ---------------------------------------------------------

static RELEASED: Mutex<Option<HashSet<u64>>> = Mutex::new(None);

fn release(id: u64) {
    RELEASED
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .get_or_insert_with(HashSet::new)
        .insert(id);
}

fn released(id: u64) -> bool {
    RELEASED
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .as_ref()
        .is_some_and(|s| s.contains(&id))
}

process! {
    HELD: Doc {
        start s;
        task set = |d| async move {
            jitter().await;
            d.a = 1;
            Ok(())
        };
        task hold = |d| async move {
            d.b = "held".into();
            while !released(d.id) {
                tokio::time::sleep(Duration::from_millis(1)).await;
            }
            Ok(())
        };
        end done;

        s -> set -> hold -> done;
    }
}

/// `data()` while a task holds: the committed data, without the running task's
/// writes; after the end, the final data.
async fn data_shows_the_committed_data_while_running(engine: Engine, _: usize) {
    let doc = Doc::new();
    let handle = engine.start(&HELD, doc.clone()).await.unwrap();
    started(&handle, &["hold"]).await;
    let during = Doc {
        a: 1,
        ..doc.clone()
    };
    assert_eq!(handle.data().await, Some(during.clone()));
    assert!(!handle.is_finished());
    assert_eq!(handle.history().await.completed_tasks(), ["set"]);
    release(doc.id);
    let (outcome, h) = finish(&handle).await;
    let after = Doc {
        b: "held".into(),
        ..during
    };
    assert_eq!(outcome, Outcome::Completed(after.clone()));
    assert_eq!(handle.data().await, Some(after));
    assert_eq!(h.completed_tasks(), ["set", "hold"]);
}

flavors!(
    parallel_writes_to_different_fields_both_stay,
    same_field_conflict_goes_to_the_later_commit,
    tuple_struct_fields_merge_by_position,
    chain_history_is_in_order,
    data_shows_the_committed_data_while_running,
);
