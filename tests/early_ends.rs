//! Instances that end in their first step, run by `Engine::start` on its caller,
//! are kept whole in one block when their history is short (`EndRef::packed`):
//! read through the handle they are what any ended instance is — the outcome, the
//! data, every step with its changed fields — and they keep one allocation each.
//! The engine keeps no copy of a process's data once its instance ended and its
//! handles are gone: a data type holding a channel's sender closes the channel.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::sync::Arc;

use thresh::{process, Engine, Happening, Outcome, ProcessData, Step, TaskError, TrackId};

// ----- a counting allocator: this thread's live allocations ---------------------------

struct Counting;

thread_local! {
    /// Allocations made on this thread less those freed on it.
    static LIVE: Cell<i64> = const { Cell::new(0) };
}

// SAFETY: forwards to the system allocator; the count is a const thread-local `Cell`
// (no allocation, no lazy initialisation with a destructor).
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let _ = LIVE.try_with(|n| n.set(n.get() + 1));
        // SAFETY: by the caller.
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        let _ = LIVE.try_with(|n| n.set(n.get() - 1));
        // SAFETY: by the caller.
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

fn live() -> i64 {
    LIVE.with(Cell::get)
}

// ----- processes -----------------------------------------------------------------------

/// Three words.
#[derive(Clone, Debug, Default, PartialEq, ProcessData)]
pub struct Note {
    pub text: String,
}

/// A word, its copies counted (the `Arc`'s strong count).
#[derive(Clone, Debug, Default, PartialEq, ProcessData)]
pub struct Token {
    pub token: Arc<u32>,
}

/// Two strings.
#[derive(Clone, Debug, Default, PartialEq, ProcessData)]
pub struct Letter {
    pub to: String,
    pub text: String,
}

#[derive(Clone, Debug, Default, PartialEq, ProcessData)]
pub struct Count {
    pub n: u64,
}

process! {
    WRITE: Note {
        start begin;
        task write = |n| async move { n.text = "written".into(); Ok(()) };
        task read = |_| async move { Ok(()) };
        end done;
        begin -> write -> read -> done;
    }
}

process! {
    WRITE_LETTER: Letter {
        start begin;
        task write = |l| async move { l.text = "written".into(); Ok(()) };
        task read = |_| async move { Ok(()) };
        end done;
        begin -> write -> read -> done;
    }
}

process! {
    /// Eight steps.
    WRITE_THRICE: Note {
        start begin;
        task a = |n| async move { n.text.push('a'); Ok(()) };
        task b = |n| async move { n.text.push('b'); Ok(()) };
        task c = |n| async move { n.text.push('c'); Ok(()) };
        end done;
        begin -> a -> b -> c -> done;
    }
}

process! {
    KEEP: Token {
        start begin;
        task look = |_| async move { Ok(()) };
        end done;
        begin -> look -> done;
    }
}

process! {
    STOP: Count {
        start begin;
        task add = |c| async move { c.n += 1; Ok(()) };
        end kill: terminate;
        begin -> add -> kill;
    }
}

process! {
    ADD: Count {
        start begin;
        task add = add;
        end done;
        begin -> add -> done;
    }
}

async fn add(c: &mut Count) -> Result<(), TaskError> {
    c.n += 1;
    Ok(())
}

fn step(track: u32, node: &'static str, what: Happening) -> Step {
    Step {
        track: TrackId(track),
        node,
        what,
    }
}

/// The steps of `begin -> write -> read -> done`, `write` changing `text`.
fn written() -> Vec<Step> {
    vec![
        step(0, "begin", Happening::Started),
        step(0, "write", Happening::TaskStarted),
        step(
            0,
            "write",
            Happening::Completed {
                changed: vec!["text"].into(),
            },
        ),
        step(0, "read", Happening::TaskStarted),
        step(
            0,
            "read",
            Happening::Completed {
                changed: vec![].into(),
            },
        ),
        step(0, "done", Happening::Ended),
    ]
}

// ----- tests -----------------------------------------------------------------------------

#[tokio::test]
async fn an_end_in_the_first_step_reads_as_any_end() {
    let engine = Engine::new();
    let handle = engine.start(&WRITE, Note::default()).await.unwrap();
    assert!(
        handle.is_finished(),
        "ended in its first step, on its caller"
    );
    let Outcome::Completed(note) = handle.outcome().await else {
        panic!("completed");
    };
    assert_eq!(note.text, "written");
    assert_eq!(handle.data().await, Some(note));
    assert_eq!(handle.history().await.steps(), written());
    assert_eq!(handle.history().await.completed_tasks(), ["write", "read"]);
    assert_eq!(handle.parent(), None);
    assert!(handle.open_work().await.is_empty());
    assert!(handle.children().await.is_empty());
    assert!(handle.complete("read", |_: &mut Note| {}).await.is_err());
    handle.cancel(); // no effect on an ended instance
    assert!(matches!(handle.outcome().await, Outcome::Completed(_)));
    // A clone reads the same, and outlives the original.
    let clone = handle.clone();
    drop(handle);
    assert_eq!(clone.history().await.steps(), written());
    assert_eq!(clone.data().await.unwrap().text, "written");
}

#[tokio::test]
async fn ends_of_larger_data_and_longer_histories_read_the_same() {
    let engine = Engine::new();
    let letter = engine
        .start(&WRITE_LETTER, Letter::default())
        .await
        .unwrap();
    assert!(letter.is_finished());
    assert_eq!(letter.data().await.unwrap().text, "written");
    assert_eq!(
        letter.history().await.steps(),
        written(),
        "a larger data type's end reads the same",
    );
    let thrice = engine.start(&WRITE_THRICE, Note::default()).await.unwrap();
    assert!(thrice.is_finished());
    assert_eq!(thrice.data().await.unwrap().text, "abc");
    assert_eq!(thrice.history().await.steps().len(), 8);
    assert_eq!(thrice.history().await.completed_tasks(), ["a", "b", "c"]);
}

#[tokio::test]
async fn a_terminated_first_step_ends_terminated() {
    let engine = Engine::new();
    let handle = engine.start(&STOP, Count::default()).await.unwrap();
    let Outcome::Terminated(count) = handle.outcome().await else {
        panic!("terminated");
    };
    assert_eq!(count.n, 1);
    let history = handle.history().await;
    assert_eq!(history.ended_at(), ["kill"]);
    assert_eq!(history.count("kill", |w| *w == Happening::Terminated), 1);
}

#[tokio::test]
async fn ended_data_is_dropped_once_with_its_last_handle() {
    let engine = Engine::new();
    let token = Arc::new(7);
    let mut handles = Vec::new();
    for _ in 0..100 {
        let token = token.clone();
        handles.push(engine.start(&KEEP, Token { token }).await.unwrap());
    }
    // Ours, and one an ended instance (its handle's end).
    assert_eq!(Arc::strong_count(&token), 1 + 100);
    let clones: Vec<_> = handles.iter().map(Clone::clone).collect();
    for handle in &clones {
        assert_eq!(*handle.data().await.unwrap().token, 7);
    }
    drop(handles);
    drop(clones);
    // Every handle's copy dropped once (a second drop would have underflowed the
    // count, a missing one kept it up), and no copy kept by the engine.
    assert_eq!(Arc::strong_count(&token), 1);
}

#[tokio::test]
async fn an_instance_that_ended_in_its_first_step_keeps_its_end_and_data() {
    let engine = Engine::new();
    let mut handles = Vec::with_capacity(1_000);
    // The first starts on a thread make its scratch pieces; later ones reuse them.
    for _ in 0..10 {
        handles.push(engine.start(&ADD, Count::default()).await.unwrap());
    }
    let before = live();
    for _ in 0..900 {
        handles.push(engine.start(&ADD, Count::default()).await.unwrap());
    }
    // Kept per instance: its end's block (with its steps) and its data's box (its
    // `Completed` step borrows the one field its commit changed from the data type's
    // field list).
    let kept = live() - before;
    assert!(
        (1800..1810).contains(&kept),
        "{kept} allocations kept for 900 instances that ended in their first step"
    );
    for handle in &handles {
        assert_eq!(handle.data().await, Some(Count { n: 1 }));
    }
}

/// A data type holding a channel's sender, as a service's data may hold a
/// connection or a permit: it must close once its instance is done with it.
#[derive(Clone, Debug, ProcessData)]
pub struct Reporting {
    pub n: u64,
    pub report: Report,
}

/// The sender, compared by the channel it sends on.
#[derive(Clone, Debug)]
pub struct Report(tokio::sync::mpsc::UnboundedSender<u64>);

impl PartialEq for Report {
    fn eq(&self, other: &Self) -> bool {
        self.0.same_channel(&other.0)
    }
}

process! {
    REPORT: Reporting {
        start begin;
        task send = |r| async move { r.n += 1; let _ = r.report.0.send(r.n); Ok(()) };
        end done;
        begin -> send -> done;
    }
}

process! {
    /// Waits for a person before it ends: it gets a loop.
    REPORT_LATER: Reporting {
        start begin;
        task send = |r| async move { r.n += 1; let _ = r.report.0.send(r.n); Ok(()) };
        user approve;
        end done;
        begin -> send -> approve -> done;
    }
}

/// Start `process` with a sender, on this thread and from spawned tasks (other
/// workers), let each end, drop the handles: the receiver sees the channel closed.
async fn the_channel_closes_once_the_instances_are_done(
    process: &'static thresh::Process<Reporting>,
) {
    let engine = Engine::new();
    let (report, mut reports) = tokio::sync::mpsc::unbounded_channel();
    let mut handles = Vec::new();
    for n in 0..8 {
        let data = Reporting {
            n,
            report: Report(report.clone()),
        };
        match n % 2 {
            0 => handles.push(engine.start(process, data).await.unwrap()),
            _ => {
                let engine = engine.clone();
                let process: &'static thresh::Process<Reporting> = process;
                handles.push(
                    tokio::spawn(async move { engine.start(process, data).await.unwrap() })
                        .await
                        .unwrap(),
                );
            }
        }
    }
    drop(report);
    for handle in &handles {
        if !handle.open_work().await.is_empty() {
            handle
                .complete("approve", |_: &mut Reporting| {})
                .await
                .unwrap();
        }
        assert!(matches!(handle.outcome().await, Outcome::Completed(_)));
    }
    drop(handles);
    let mut seen = 0;
    let closed = tokio::time::timeout(std::time::Duration::from_secs(10), async {
        while reports.recv().await.is_some() {
            seen += 1;
        }
    })
    .await;
    assert!(
        closed.is_ok(),
        "the channel stayed open: a copy of the data was kept"
    );
    assert_eq!(seen, 8);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn data_holding_a_sender_closes_it_after_a_first_step_end() {
    for _ in 0..20 {
        the_channel_closes_once_the_instances_are_done(&REPORT).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn data_holding_a_sender_closes_it_after_a_loop_end() {
    for _ in 0..20 {
        the_channel_closes_once_the_instances_are_done(&REPORT_LATER).await;
    }
}

#[tokio::test]
async fn data_holding_a_sender_closes_it_on_one_thread() {
    the_channel_closes_once_the_instances_are_done(&REPORT).await;
    the_channel_closes_once_the_instances_are_done(&REPORT_LATER).await;
}
