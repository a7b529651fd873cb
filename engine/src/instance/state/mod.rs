//! An instance's state: everything its loop owns, in one struct of plain parts.
//!
//! Each family of state is a type that keeps its own invariant, so the loop's rules
//! (in the sibling modules of `instance`) cannot break it by forgetting a step:
//! [`Tracks`](tracks::Tracks) keeps the count of active tracks with their states,
//! [`Timers`](timers::Timers) keeps the loop's sleep on the earliest deadline,
//! [`Armed`](armed::Armed) holds what is armed and for whom, [`Joins`](joins::Joins)
//! the joins' arrivals, [`Scopes`](scopes::Scopes) the open scopes,
//! [`Conditions`](conditions::Conditions) the armed conditional events. Only the loop
//! touches any of it: no lock guards it (ARCHITECTURE.md, "The instance loop").
//!
//! The instance that holds them is `instance::core`; state types depend on nothing
//! of the loop, and the loop's modules depend on them.

pub(crate) mod armed;
pub(crate) mod compensation;
pub(crate) mod conditions;
pub(crate) mod ids;
pub(crate) mod join_rules;
pub(crate) mod joins;
pub(crate) mod loops;
pub(crate) mod retries;
pub(crate) mod scopes;
pub(crate) mod timers;
pub(crate) mod tracks;
pub(crate) mod user_tasks;

/// Drop what a state's box (made on first need) holds, out of line: a state's
/// `Drop` then checks inline whether it made one. Left to the drop glue, each
/// state's drop was a call of its own at every instance's end, though most made
/// nothing.
#[inline(never)]
pub(crate) fn drop_made<T>(made: T) {
    drop(made);
}

/// A state's `Drop` for what it makes on first need: nothing to do, inline, when
/// it made nothing; else [`drop_made`].
#[inline(always)]
pub(crate) fn drop_if_made<T>(made: &mut Option<T>) {
    if let Some(made) = made.take() {
        drop_made(made);
    }
}
