//! A running process instance.
//!
//! The instance (`core::Instance`) is one struct its loop owns (`event_loop`), the
//! single writer of all its state: the state types (`state`: tracks, joins,
//! scopes, what is armed, timers, conditions, loops, compensation), each keeping
//! its own invariant, and the committed data (`mem::cell::DataCell`). The loop's
//! rules are `impl` blocks on it, split by what they do: moving tokens
//! (`routing`, and `straight` for a chain of plain tasks), running activities
//! (`tasks`) and committing their data (`commit`), joins (`joining`), scopes
//! (`scoping`), loops and multi-instance activities (`looping`), call activities
//! (`calling`; the child's side of the link is `call_link`, the engine as the
//! instance holds it `engine_link`), compensation
//! (`compensating`), errors and escalations travelling outward (`raising`),
//! waiting for events (`parking`), events arriving (`delivery`), user tasks
//! (`user_work`) and throws (`throwing`). A track's task (`track`) gets its
//! instructions on its park channel (`park`) and reports on the loop's intake
//! (`mem::intake`, `input`). The public face is the handle (`handle`), the
//! outcome (`outcome`), the history (`history`), and where the end is left
//! (`ending`, made of what `leaving` moves out of an ended instance). A durable
//! instance's checkpoints are `durable` (its records, how they are taken and
//! restored, and its loops' records, each a file of that tree).
//!
//! State modules depend on nothing of the loop or the rules; the rules depend on
//! `core` and the state, not on each other's internals.

mod birth;
mod call_link;
mod calling;
mod commands;
mod commit;
mod compensating;
mod core;
mod delivery;
#[cfg(feature = "durable")]
pub(crate) mod durable;
mod ending;
mod engine_link;
mod event_loop;
mod handle;
pub(crate) mod history;
mod input;

mod joining;
mod leaving;
pub(crate) mod listing;
mod looping;
mod outcome;
mod park;
mod parking;
mod raising;
mod retrying;
mod routing;
mod scoping;
mod state;
mod straight;
mod tasks;
mod throwing;
mod track;
mod user_work;
mod work;

#[cfg(feature = "durable")]
pub(crate) use birth::spawn_reloaded;
pub(crate) use birth::{spawn, Birth};
pub(crate) use call_link::{ChildHandle, ChildNote, Notify, ParentLink};
#[cfg(feature = "durable")]
pub(crate) use ending::EndRef;
#[cfg(feature = "durable")]
pub(crate) use engine_link::Resumed;
pub(crate) use engine_link::{ChildEngine, EngineRef};
pub(crate) use event_loop::Entry;
pub use handle::InstanceHandle;
pub use history::{Happening, History, Step, TrackId};
pub(crate) use input::{Command, Input};
pub(crate) use outcome::panic_message;
pub use outcome::{InstanceError, InstanceId, Outcome};
pub use work::{OpenWork, WorkError};
pub(crate) use work::{Raised, TaskAct};
