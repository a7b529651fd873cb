//! The child's side of a call activity: who called it, and how it tells its parent's
//! call activity what the parent must hear while it runs. The parent's side (the
//! starter `process!` emits for a call activity) is the crate's `call` module.

use std::sync::Arc;

use super::outcome::InstanceId;

/// The child's side of a call: who called it, how deep calls nest here, and how it
/// tells its parent's call activity what the parent must hear while it runs.
#[derive(Clone)]
pub(crate) struct ParentLink {
    pub parent: InstanceId,
    /// How many calls deep the child runs (a top-level instance is 0).
    pub depth: u32,
    /// Tell the parent's call activity (a no-op until a resumed parent adopts a
    /// resumed child again).
    pub notify: Notify,
    /// A resumed child's link until its parent's resumed call adopts it: the
    /// escalations raised meanwhile, told once it does (`None`: a live call's link).
    pub unsent: Option<Vec<String>>,
}

/// How a child tells its parent's call activity (a send on the parent's intake).
pub(crate) type Notify = Arc<dyn Fn(ChildNote) + Send + Sync>;

/// What a child tells its parent's call activity while it runs.
pub(crate) enum ChildNote {
    /// An escalation the child did not catch: raised at the call activity.
    Escalated(String),
    /// After a restart, the recorded child was never stored: the call started this
    /// one instead.
    #[cfg(feature = "durable")]
    Restarted(InstanceId),
}

/// A child's handle as the parent keeps it: an `InstanceHandle<C>` of the called
/// process, erased.
pub(crate) type ChildHandle = Arc<dyn std::any::Any + Send + Sync>;

/// A working call's child as the handle lists it: its id, the called process's
/// name, its handle.
pub(crate) type ChildEntry = (InstanceId, &'static str, Option<ChildHandle>);
