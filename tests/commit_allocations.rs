//! A commit that changes a field allocates nothing: a chain of tasks whose handlers
//! change a field of data with a string in it allocates exactly what the same chain
//! of no-op handlers does, history on. The task's copy is renewed field by field
//! (`ProcessData::clone_fields_from`: the string keeps its buffer), the history
//! step names its one changed field from the data type's field list, and a process
//! with no message catch or conditional event follows no keys and checks no
//! condition.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

use thresh::{process, Engine, Happening, Outcome, ProcessData, TaskError};

// ----- a counting allocator: this thread's allocations ---------------------------------

struct Counting;

thread_local! {
    /// Allocations made on this thread (reallocations too).
    static MADE: Cell<u64> = const { Cell::new(0) };
}

// SAFETY: forwards to the system allocator; the count is a const thread-local `Cell`
// (no allocation, no lazy initialisation with a destructor).
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let _ = MADE.try_with(|n| n.set(n.get() + 1));
        // SAFETY: by the caller.
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: by the caller.
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let _ = MADE.try_with(|n| n.set(n.get() + 1));
        // SAFETY: by the caller.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

fn made() -> u64 {
    MADE.with(Cell::get)
}

// ----- processes -----------------------------------------------------------------------

#[derive(Clone, Debug, Default, PartialEq, ProcessData)]
pub struct Order {
    pub id: u64,
    pub customer: String,
    pub amount: u64,
    pub lines: u32,
}

async fn bump(order: &mut Order) -> Result<(), TaskError> {
    order.amount += 1;
    Ok(())
}

async fn rename(order: &mut Order) -> Result<(), TaskError> {
    // As long as the name it replaces: the copy's buffer holds it.
    order.customer.clear();
    order.customer.push_str(if order.amount.is_multiple_of(2) {
        "ACME Industrial"
    } else {
        "Wile E. Coyote."
    });
    order.amount += 1;
    Ok(())
}

async fn noop(_: &mut Order) -> Result<(), TaskError> {
    Ok(())
}

process! {
    pub BUMPS: Order {
        start begin;
        task t1 = bump; task t2 = bump; task t3 = bump; task t4 = bump; task t5 = bump;
        task t6 = bump; task t7 = bump; task t8 = bump; task t9 = bump; task t10 = bump;
        end done;
        begin -> t1 -> t2 -> t3 -> t4 -> t5 -> t6 -> t7 -> t8 -> t9 -> t10 -> done;
    }
}

process! {
    pub RENAMES: Order {
        start begin;
        task t1 = rename; task t2 = rename; task t3 = rename; task t4 = rename; task t5 = rename;
        task t6 = rename; task t7 = rename; task t8 = rename; task t9 = rename; task t10 = rename;
        end done;
        begin -> t1 -> t2 -> t3 -> t4 -> t5 -> t6 -> t7 -> t8 -> t9 -> t10 -> done;
    }
}

process! {
    pub NOOPS: Order {
        start begin;
        task t1 = noop; task t2 = noop; task t3 = noop; task t4 = noop; task t5 = noop;
        task t6 = noop; task t7 = noop; task t8 = noop; task t9 = noop; task t10 = noop;
        end done;
        begin -> t1 -> t2 -> t3 -> t4 -> t5 -> t6 -> t7 -> t8 -> t9 -> t10 -> done;
    }
}

fn order() -> Order {
    Order {
        id: 7,
        customer: String::from("ACME Industrial"),
        amount: 0,
        lines: 3,
    }
}

/// Allocations made on this thread by starting an instance of `process`, reading its
/// outcome and history and dropping it all (the second of two such runs: the first
/// fills the thread's spares). Also returns the ended data and the history.
async fn allocations(
    engine: &Engine,
    process: &'static thresh::Process<Order>,
) -> (u64, Order, Vec<Happening>) {
    let mut result = None;
    for _ in 0..2 {
        let before = made();
        let handle = engine.start(process, order()).await.unwrap();
        let Outcome::Completed(data) = handle.outcome().await else {
            panic!("the instance completed");
        };
        let history = handle.history().await;
        drop(handle);
        let count = made() - before;
        let steps = history.steps().iter().map(|s| s.what.clone()).collect();
        result = Some((count, data, steps));
    }
    result.expect("two runs")
}

#[tokio::test(flavor = "current_thread")]
async fn a_commit_that_changes_a_field_allocates_no_more_than_a_commit_of_nothing() {
    let engine = Engine::new();
    let (noops, data, _) = allocations(&engine, &NOOPS).await;
    assert_eq!(data, order());
    let (bumps, data, steps) = allocations(&engine, &BUMPS).await;
    assert_eq!(data.amount, 10);
    let completed: Vec<_> = steps
        .iter()
        .filter_map(|what| match what {
            Happening::Completed { changed } => Some(changed.to_vec()),
            _ => None,
        })
        .collect();
    assert_eq!(completed, vec![vec!["amount"]; 10]);
    assert_eq!(
        bumps, noops,
        "ten commits that change `amount` allocate what ten that change nothing do"
    );
    let (renames, data, steps) = allocations(&engine, &RENAMES).await;
    assert_eq!(
        (data.amount, data.customer.as_str()),
        (10, "Wile E. Coyote.")
    );
    assert!(steps.iter().any(|what| matches!(
        what,
        Happening::Completed { changed } if changed[..] == ["customer", "amount"]
    )));
    assert_eq!(
        renames, noops,
        "a string changed within its buffer, and a neighbouring field, allocate nothing either"
    );
    engine
        .shutdown(std::time::Duration::from_secs(1))
        .await
        .unwrap();
}

// ----- the derived copy -----------------------------------------------------------------

/// Not `Clone`: a field the derived copy cannot copy by itself.
#[derive(Debug, Default, PartialEq)]
pub struct Ticket(u32);

/// A hand-written `Clone` over a field that is not `Clone`.
#[derive(Debug, Default, PartialEq, ProcessData)]
pub struct Counter {
    pub label: String,
    pub ticket: Ticket,
}

impl Clone for Counter {
    fn clone(&self) -> Self {
        Counter {
            label: self.label.clone(),
            ticket: Ticket(self.ticket.0),
        }
    }
}

#[test]
fn the_derived_copy_keeps_a_string_buffer_and_falls_back_to_clone_for_other_fields() {
    let source = order();
    let mut copy = Order {
        customer: String::with_capacity(64),
        ..Order::default()
    };
    let buffer = copy.customer.as_ptr();
    copy.clone_fields_from(&source);
    assert_eq!(copy, source);
    assert_eq!(copy.customer.as_ptr(), buffer, "the copy's buffer is kept");

    let source = Counter {
        label: "seven".into(),
        ticket: Ticket(7),
    };
    let mut copy = Counter::default();
    copy.clone_fields_from(&source);
    assert_eq!(copy, source, "copied whole, by its own `Clone`");
}
