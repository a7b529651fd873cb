//! What the graph's events carry: payloads and how a catch maps them into the data,
//! the triggers of catches and starts, and what throws send.

use super::Condition;
use crate::data::TaskError;

/// An event payload, shared as it is handed out (a signal reaches every catcher).
pub type Payload = std::sync::Arc<dyn std::any::Any + Send + Sync>;

/// Map a caught payload into the process data; `Err` when it could not
/// ([`ApplyFailure`]).
pub type ApplyPayload<D> = fn(&mut D, &Payload) -> Result<(), ApplyFailure>;

/// How a stored message's JSON payload is read back into the type a catch's `apply`
/// takes (feature `durable`): `None` when that type is not `Deserialize` (then a
/// durable engine needs `message_type` for it).
#[cfg(feature = "durable")]
pub type PayloadDecode = Option<fn(serde_json::Value) -> Result<Payload, String>>;
/// Without feature `durable` nothing is stored: no decoder.
#[cfg(not(feature = "durable"))]
pub type PayloadDecode = Option<fn()>;

/// The payload type a message catch's `apply` takes, as the graph names it at run
/// time: its id and its name for messages.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PayloadType {
    /// The type's id.
    pub id: std::any::TypeId,
    /// The type's name (`std::any::type_name`).
    pub name: &'static str,
}

/// Why a catch's `apply` mapping did not map its payload.
#[derive(Debug)]
pub enum ApplyFailure {
    /// The payload is of another type than the mapping takes (its name).
    WrongPayload(&'static str),
    /// The mapping raised a BPMN error or escalation, or failed: the payload carries a
    /// failure (a receive task's "declined" reply).
    Raised(TaskError),
}

/// What a catch (or receive task, or event-gate arm) waits for.
#[non_exhaustive]
pub enum Trigger<D: 'static> {
    /// A message by name, correlated by key: the catch's key over the instance's data
    /// must equal the published key.
    Message {
        #[doc(hidden)]
        name: &'static str,
        #[doc(hidden)]
        key: fn(&D) -> String,
        /// The data fields the key reads, when the macro could see them in its
        /// closure (`None`: any): a waiting catch's key is evaluated again only
        /// after a commit that changed one of them.
        #[doc(hidden)]
        reads: Option<&'static [&'static str]>,
        #[doc(hidden)]
        apply: Option<ApplyPayload<D>>,
        /// Reads a stored payload back as the type `apply` takes.
        #[doc(hidden)]
        decode: fn() -> PayloadDecode,
        /// The type `apply` takes (`None`: no `apply`, any payload will do).
        #[doc(hidden)]
        payload_type: fn() -> Option<PayloadType>,
    },
    /// A signal by name: every waiting catcher gets it.
    Signal {
        #[doc(hidden)]
        name: &'static str,
        #[doc(hidden)]
        apply: Option<ApplyPayload<D>>,
    },
    /// A timer, armed when the token arrives.
    Timer(#[doc(hidden)] TimerDef<D>),
    /// A condition over the data (ARCHITECTURE.md, "Events"): evaluated when armed, then after
    /// every commit that changes a field in `on` (every commit when `on` is empty);
    /// it fires on a false→true edge.
    Condition {
        #[doc(hidden)]
        condition: Condition<D>,
        #[doc(hidden)]
        on: &'static [&'static str],
    },
    /// A BPMN error thrown inside the activity (boundary only): `code` `None` catches
    /// every error. `apply` gets the [`BpmnError`](crate::events::BpmnError).
    Error {
        #[doc(hidden)]
        code: Option<&'static str>,
        #[doc(hidden)]
        apply: Option<ApplyPayload<D>>,
    },
    /// An escalation raised inside the activity (boundary only); `apply` gets the
    /// [`Escalation`](crate::events::Escalation).
    Escalation {
        #[doc(hidden)]
        code: Option<&'static str>,
        #[doc(hidden)]
        apply: Option<ApplyPayload<D>>,
    },
}

/// What a throw event sends.
pub enum Throw<D: 'static> {
    /// Broadcast a signal to every catcher in the engine.
    Signal {
        #[doc(hidden)]
        name: &'static str,
        #[doc(hidden)]
        payload: Option<fn(&D) -> Payload>,
    },
    /// Publish a message to the one waiter correlated by `key`.
    Message {
        #[doc(hidden)]
        name: &'static str,
        #[doc(hidden)]
        key: fn(&D) -> String,
        #[doc(hidden)]
        payload: Option<fn(&D) -> Payload>,
    },
}

/// Where a timer's spec comes from: written in the model, or read off the instance's
/// data when the timer is armed (`timer(|order| order.due)`).
#[doc(hidden)]
pub enum TimerDef<D> {
    Fixed(fn() -> crate::events::TimerSpec),
    Data(fn(&D) -> crate::events::TimerSpec),
}

impl<D> Clone for TimerDef<D> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<D> Copy for TimerDef<D> {}

impl<D> TimerDef<D> {
    /// The spec, for an instance whose data is `data` (user code: run it where a
    /// panic is caught).
    pub(crate) fn spec(&self, data: &D) -> crate::events::TimerSpec {
        match self {
            TimerDef::Fixed(spec) => spec(),
            TimerDef::Data(spec) => spec(data),
        }
    }

    /// The spec when it does not depend on an instance (a start event's; a picture).
    pub(crate) fn fixed(&self) -> Option<crate::events::TimerSpec> {
        match self {
            TimerDef::Fixed(spec) => Some(spec()),
            TimerDef::Data(_) => None,
        }
    }
}
