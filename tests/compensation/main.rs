//! Compensation, transactions and cancel events at run time (ARCHITECTURE.md,
//! "Compensation").
//!
//! - saga: charge, reserve, ship; ship fails with a BPMN error caught on it, and a
//!   compensation throw for the whole scope undoes reserve, then charge (latest
//!   first), each handler from the data its activity left — 200 times on both
//!   runtimes, handlers yielding at random;
//! - a throw naming one activity undoes only that one; an activity completed three
//!   times in a loop is undone three times, latest lap first, each from its lap's
//!   snapshot; a standard loop's runs and a multi-instance activity's instances
//!   (sequential, parallel, a sub-process with a compensation event sub-process)
//!   are each undone, latest completion first, each from its own snapshot and with
//!   its iteration (`repeated.rs`); an activity still running when compensation is
//!   thrown is not undone; a second throw finds nothing left to undo; the throw
//!   waits for its handlers: what follows sees their writes;
//! - a completed sub-process: undone through its inner activities (latest first),
//!   or by its compensation event sub-process when it has one (which may itself
//!   throw compensation for the inner activities); one not completed (interrupted)
//!   is not undone;
//! - transactions: a cancel end cancels the rest (an open user task is withdrawn),
//!   undoes what completed inside, and leaves through the cancel boundary; a
//!   transaction that completes leaves normally and its activities can be undone
//!   later from the parent; an error inside does not compensate (the error boundary
//!   takes the token, no handler runs);
//! - `examples/saga.rs`: shipped, failed at shipping (release then refund), failed
//!   at the reservation (refund only);
//! - races, 200 times on four workers: two branches throw compensation for the same
//!   scope at once — each completion is undone exactly once.

#[macro_use]
#[path = "../common/mod.rs"]
mod common;

use common::{check_scoped_history, finish_with, yield_jitter, HANG};
use thresh::{process, Engine, Happening, History, Outcome, ProcessData, TaskError};

#[allow(clippy::all, unused)]
#[path = "../../examples/saga.rs"]
mod example;
mod loops;
mod races;
mod repeated;
mod saga;
mod scopes;
mod transaction;

/// The data of the processes here.
#[derive(Clone, Debug, Default, PartialEq, ProcessData)]
pub struct Trip {
    pub run: u64,
    /// Set by `charge`: the charge's id, which a later retry may change.
    pub charge_id: u64,
    pub charged: bool,
    pub reserved: bool,
    pub shipped: bool,
    /// The charge id the refund undid (read from its snapshot).
    pub refunded: u64,
    pub released: bool,
    pub laps: u32,
    /// What the handler of the last undone lap saw.
    pub undone_lap: u32,
    pub undone_laps: u32,
    pub after: bool,
}

/// Run to the end, checking the history is well formed.
pub async fn finish_trip(handle: &thresh::InstanceHandle<Trip>) -> (Outcome<Trip>, History) {
    finish_with(handle, HANG, check_scoped_history).await
}

/// The completed data, or a panic with the history.
pub fn completed_trip(outcome: Outcome<Trip>, history: &History) -> Trip {
    match outcome {
        Outcome::Completed(trip) => trip,
        other => panic!("expected completed, got {other:?}\n{history}"),
    }
}
