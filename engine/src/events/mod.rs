//! Events: the engine-wide hub (signal index and message broker) and timers.
//!
//! Producers never touch a track: the hub hands every delivery to the instance loop
//! that subscribed (through its mailbox), and the loop decides — flip on first
//! dispatch, correlation check for messages — whether a parked track gets it
//! (ARCHITECTURE.md, "The instance loop").

mod hub;
mod timer;

#[cfg(feature = "postgres")]
pub(crate) use hub::Wanted;
#[cfg(feature = "durable")]
pub(crate) use hub::{Among, SignalReceipt};
pub use hub::{BrokerConfig, BrokerStats, BufferedMessage, Published};
pub(crate) use hub::{
    ChoiceId, Delivery, Hub, Mailbox, Offer, SignalAck, StartTrigger, Starter, SubId,
};
pub use timer::{IntoTimer, TimerSpec};

/// The payload an error boundary's `apply` gets: the error a handler returned with
/// [`TaskError::bpmn`](crate::TaskError::bpmn).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BpmnError {
    /// The error code the boundary matched.
    pub code: String,
    /// The handler's message.
    pub message: String,
}

/// The payload an escalation boundary's `apply` gets.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Escalation {
    /// The escalation code.
    pub code: String,
}
