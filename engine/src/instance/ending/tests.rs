use std::sync::Arc;

use super::*;
use crate::data::ProcessData;
use crate::instance::history::{Happening, TrackId};

/// Data that counts its copies alive (the `Arc`'s strong count).
#[derive(Clone, Debug, Default)]
struct Counted(#[allow(dead_code)] Arc<()>, u32);

/// Over-aligned data, so a packed end's data is not right after its steps.
#[derive(Clone, Debug, Default)]
#[repr(align(64))]
struct Wide(u64);

crate::data::fieldless_process_data!(Counted, Wide);

fn finished(data: impl ProcessData, history: History) -> Finished<Erased> {
    Finished {
        ended: Ended::Completed,
        history,
        data: Erased::new(data),
        unsent: None,
    }
}

fn data_of(end: &EndRef) -> Option<u32> {
    let finished = end.finished()?;
    Some(finished.data.clone_data::<Counted>().1)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn waiters_see_the_end_published_after_they_began_to_wait() {
    for _ in 0..200 {
        let (publisher, ending) = EndRef::pending();
        let waiters: Vec<_> = (0..3)
            .map(|_| {
                let ending = ending.clone();
                tokio::spawn(async move {
                    let end = ending.wait_finished().await.ok();
                    end.map(|f| f.data.clone_data::<Counted>().1)
                })
            })
            .collect();
        tokio::task::yield_now().await;
        publisher.publish(finished(Counted(Arc::new(()), 7), History::default()));
        for waiter in waiters {
            assert_eq!(waiter.await.unwrap(), Some(7));
        }
        assert_eq!(data_of(&ending), Some(7));
    }
}

#[tokio::test]
async fn a_publisher_dropped_unpublished_marks_the_loop_lost() {
    let (publisher, ending) = EndRef::pending();
    assert!(ending.get().is_none());
    let waiter = {
        let ending = ending.clone();
        tokio::spawn(async move { matches!(ending.wait().await, End::Lost) })
    };
    drop(publisher);
    assert!(waiter.await.unwrap());
    assert!(matches!(ending.get(), Some(End::Lost)));
}

#[tokio::test]
async fn publishing_then_dropping_keeps_the_outcome() {
    let (publisher, ending) = EndRef::pending();
    publisher.publish(finished(Counted(Arc::new(()), 3), History::default()));
    drop(publisher);
    let end = ending
        .wait_finished()
        .await
        .ok()
        .map(|f| f.data.clone_data::<Counted>().1);
    assert_eq!(end, Some(3));
}

#[test]
fn the_end_is_dropped_once_with_its_cell_born_set_or_published_or_never_set() {
    let data = Arc::new(());
    let born = EndRef::ended(finished(Counted(Arc::clone(&data), 0), History::default()));
    assert!(born.finished().is_some());
    assert_eq!(Arc::strong_count(&data), 2);
    drop(born);
    assert_eq!(Arc::strong_count(&data), 1);

    let (publisher, ending) = EndRef::pending();
    publisher.publish(finished(Counted(Arc::clone(&data), 0), History::default()));
    // A second set (the drop's `Lost`) is ignored, not written over the first.
    drop(publisher);
    assert_eq!(Arc::strong_count(&data), 2);
    assert!(ending.finished().is_some());
    drop(ending);
    assert_eq!(Arc::strong_count(&data), 1);

    let (publisher, ending) = EndRef::pending();
    drop(ending);
    drop(publisher);
    assert_eq!(Arc::strong_count(&data), 1);
}

fn steps(n: usize, message: bool) -> History {
    let mut history = History::default();
    for i in 0..n {
        let what = match (message, i) {
            (true, 1) => Happening::Failed {
                message: "a message on the heap".to_string(),
            },
            _ => Happening::TaskStarted,
        };
        history.push(TrackId(0), "t", what);
    }
    history
}

#[test]
fn a_packed_end_keeps_its_steps_in_its_block_and_drops_them_and_its_data_once() {
    let data = Arc::new(());
    for (n, message) in [
        (0, false),
        (1, false),
        (4, false),
        (4, true),
        (16, true),
        (64, true),
    ] {
        let history = steps(n, message);
        let end = EndRef::packed(finished(Counted(Arc::clone(&data), 5), history.clone()));
        assert_eq!(Arc::strong_count(&data), 2, "the data moved, not copied");
        let copy = end.clone();
        let finished = copy.finished().expect("ended");
        assert_eq!(finished.history(), history);
        assert_eq!(finished.data.clone_data::<Counted>().1, 5);
        assert!(matches!(
            finished.outcome(|d| d.clone_data::<Counted>().1),
            Outcome::Completed(5)
        ));
        assert!(finished.unsent.is_empty());
        drop(end);
        assert_eq!(Arc::strong_count(&data), 2, "a reference remains");
        drop(copy);
        assert_eq!(Arc::strong_count(&data), 1, "dropped once, with the last");
    }
    // Over-aligned data keeps its alignment after the steps.
    let end = EndRef::packed(finished(Wide(9), steps(3, false)));
    let finished = end.finished().expect("ended");
    let wide: Wide = finished.data.clone_data();
    assert_eq!(wide.0, 9);
    assert!(matches!(end.get(), Some(End::Packed(_))));
}

#[test]
fn an_end_is_no_larger_than_a_published_one() {
    // Every parked instance's block holds an `End`: packing must not grow it.
    assert!(std::mem::size_of::<End>() <= std::mem::size_of::<Finished<Erased>>());
}

#[test]
fn a_packed_end_gives_a_lent_scratch_buffer_back_empty() {
    // On a thread of its own: the scratch buffer is the thread's.
    std::thread::spawn(|| {
        let mut history = History::lazy(4);
        history.lend_scratch();
        history.push(TrackId(0), "t", Happening::TaskStarted);
        let end = EndRef::packed(finished(Counted::default(), history));
        assert_eq!(end.finished().unwrap().history().steps().len(), 1);
        let mut again = History::lazy(4);
        again.lend_scratch();
        assert!(again.steps().is_empty());
        again.push(TrackId(0), "u", Happening::Ended);
        again.return_scratch();
        assert_eq!(again.steps()[0].node, "u");
        assert_eq!(end.finished().unwrap().history().steps()[0].node, "t");
    })
    .join()
    .unwrap();
}
