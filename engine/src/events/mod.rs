//! Events: the engine-wide hub (signal index and message broker) and timers.
//!
//! Producers never touch a track: the hub hands every delivery to the instance loop
//! that subscribed (through its [`Mailbox`]), and the loop decides — flip on first
//! dispatch, correlation check for messages — whether a parked track gets it
//! (SRD-027 FR-2..FR-8).

mod hub;
mod timer;

pub use hub::{BrokerConfig, BrokerStats, Published};
pub(crate) use hub::{Delivery, Hub, Mailbox, SubId};
pub use timer::TimerSpec;
