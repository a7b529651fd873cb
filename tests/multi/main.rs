//! Multi-instance activities and standard loops at run time (ARCHITECTURE.md,
//! "Loops and multi-instance").
//!
//! - tasks: parallel and sequential, over a collection (typed item and index in the
//!   handler, typed output merged in index order whatever the completion order) and
//!   over a count; an empty collection completes at once; the completion condition
//!   reads the counts and cancels the rest; an error in one instance is caught by the
//!   activity's boundary (all instances cancelled) or fails the instance;
//!   interrupting and non-interrupting timer boundaries;
//! - user and receive tasks: one open work item / one wait per instance, each work
//!   item with its instance's index (`OpenWork::iteration`), completed earliest
//!   first; 40 of them (past the armed set's scan, so through its index);
//! - sub-processes: each instance its own scope (a parallel join inside counts per
//!   instance), inner tasks marked `#[item]` get the instance's item;
//! - standard loops: tested after or before each run, `max`, the run number in the
//!   handler (`thresh::task::current()`);
//! - history: every instance and run visible (node + index).

mod durable;
mod kit;
mod loops;
mod tasks;
mod waits;
