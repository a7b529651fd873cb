//! A running process instance.
//!
//! The instance's loop (`event_loop`) is the single writer of all its state
//! (`state`: tracks, joins, scopes, what is armed, timers, conditions). The loop's
//! rules are split by what they do: moving tokens (`routing`), running activities
//! (`tasks`), joins (`joining`), scopes (`scoping`), errors and escalations travelling
//! outward (`raising`), waiting for events (`parking`), events arriving (`delivery`),
//! user tasks (`user_work`) and throws (`throwing`). A track's task (`track`) gets
//! its instructions on its park channel (`park`) and reports on the loop's intake
//! (`intake`, `input`). The public face is the handle (`handle`), the outcome
//! (`outcome`), the history (`history`), and where the end is left (`ending`).
//!
//! State modules depend on nothing of the loop; each rule module depends on the
//! state, not on the loop.

mod calling;
mod commit;
mod compensating;
mod delivery;
#[cfg(feature = "durable")]
pub(crate) mod durable;
mod ending;
mod event_loop;
mod handle;
pub(crate) mod history;
mod input;

mod joining;
mod leaving;
#[cfg(feature = "durable")]
mod loop_snapshot;
mod looping;
mod outcome;
mod park;
mod parking;
mod raising;
mod routing;
mod scoping;
#[cfg(feature = "durable")]
pub(crate) mod snapshot;
mod state;
mod straight;
mod tasks;
mod throwing;
mod track;
mod user_work;
mod work;

pub(crate) use event_loop::{spawn, Birth, Entry};
pub use handle::InstanceHandle;
pub use history::{Happening, History, Step, TrackId};
pub(crate) use outcome::{panic_message, Ended, Finished};
pub use outcome::{InstanceError, InstanceId, Outcome};
pub use work::{OpenWork, WorkError};
