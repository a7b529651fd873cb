//! What a durable engine reports: its errors, and what a resume did.

use crate::instance::InstanceId;
use crate::store::StoreError;

/// Why a durable engine could not do what was asked.
///
/// Needs the `durable` feature.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
#[cfg_attr(docsrs, doc(cfg(feature = "durable")))]
pub enum DurableError {
    /// The store refused or failed.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The store lost its connection while committing the start of instance `id`
    /// and could not learn whether it was stored (the server did not answer again
    /// in time). If it was, it is stored as running and a resume runs it (on a node
    /// of several: a takeover, once this node stops); if not, nothing of it was
    /// stored. Look it up by its id (`DurableEngine::instance`) before starting it
    /// again.
    #[error(
        "whether instance {id} of `{process}` was stored is unknown ({reason}): look it up \
         by its id before starting it again (if stored, a resume runs it)"
    )]
    StartUnknown {
        /// The process.
        process: &'static str,
        /// The instance's id, as it would be stored.
        id: InstanceId,
        /// The store's error.
        reason: String,
    },
    /// The store lost its connection while committing a published message and could
    /// not learn whether it was stored. If it was, it is delivered after a restart
    /// (on a node of several: claimed by a node whose catch waits for it);
    /// publishing it again may deliver it twice.
    #[error(
        "whether message `{name}` with key `{key}` was stored is unknown ({reason}): if \
         it was, it is delivered after a restart; publishing it again may deliver it twice"
    )]
    PublishUnknown {
        /// The message's name.
        name: String,
        /// Its correlation key.
        key: String,
        /// The store's error.
        reason: String,
    },
    /// A message catch's `apply` takes a payload type that is not `Deserialize`:
    /// a durable engine stores messages and must read them back.
    #[error(
        "the `apply` of `{node}` in `{process}` takes a payload type that is not `Deserialize`, \
         but a durable engine stores message `{message}` and must read it back: derive \
         `serde::Deserialize` for that type (or, before `register`, say which type to read \
         it as with `message_type::<P>(\"{message}\")`)"
    )]
    PayloadNotStorable {
        /// The process.
        process: &'static str,
        /// The catch.
        node: &'static str,
        /// The message's name.
        message: &'static str,
    },
    /// Another process of this name, with another model, is registered.
    #[error("a different process named `{process}` is registered (fingerprints {registered:#x} and {given:#x}): give each process its own name")]
    NameTaken {
        /// The name.
        process: &'static str,
        /// The registered one's fingerprint.
        registered: u64,
        /// The given one's.
        given: u64,
    },
    /// The process data did not serialise.
    #[error("the data of `{process}` did not serialise: {message}")]
    Data {
        /// The process.
        process: &'static str,
        /// The serializer's message.
        message: String,
    },
    /// The engine is shutting down: no instance starts.
    #[error("the engine is shutting down: no instance starts")]
    ShuttingDown,
    /// The process cannot be deployed.
    #[error(transparent)]
    Deploy(crate::DeployError),
    /// Called outside a tokio runtime.
    #[error("no tokio runtime: use the durable engine from within a tokio runtime")]
    NoRuntime,
    /// A broadcast signal reached instances, but the effect in some of them could not
    /// be stored (a failed write, or a shutdown stopped the instance first): those
    /// instances wait for the signal again after a restart.
    #[error("signal `{signal}` reached {reached} catchers, but {unstored} of them could not store its effect ({cause}); they wait for it again after a restart")]
    SignalNotStored {
        /// The signal.
        signal: String,
        /// How many catchers and signal starts it reached.
        reached: usize,
        /// How many of them did not store its effect.
        unstored: usize,
        /// The first cause.
        cause: String,
    },
}

/// What [`DurableEngine::resume`](super::DurableEngine::resume) did with the stored running instances.
///
/// Needs the `durable` feature.
#[derive(Debug, Default)]
#[cfg_attr(docsrs, doc(cfg(feature = "durable")))]
pub struct ResumeReport {
    /// Resumed: their handles come from [`DurableEngine::handle`](super::DurableEngine::handle).
    pub resumed: Vec<(InstanceId, &'static str)>,
    /// Stored as running but not resumed, and why. They stay stored, untouched.
    pub skipped: Vec<Skipped>,
    /// Stored messages published again (to their waiting catch, or into the buffer).
    pub messages: usize,
    /// Stored messages left in the store: no payload type is known for their name
    /// yet (call [`DurableEngine::message_type`](super::DurableEngine::message_type) before `resume`).
    pub messages_unread: usize,
    /// A node of several: the running instances other nodes still hold by leases
    /// not run out, by node — after a crash, the dead node's, which this node takes
    /// over (and logs at info) once they run out, by `free_at`; a live node's leases
    /// keep moving on.
    ///
    /// Needs the `postgres` feature.
    #[cfg(feature = "postgres")]
    #[cfg_attr(docsrs, doc(cfg(feature = "postgres")))]
    pub leased: Vec<crate::store::Leased>,
}

/// A stored running instance that was not resumed.
///
/// Needs the `durable` feature.
#[derive(Debug, Clone, PartialEq, Eq)]
#[cfg_attr(docsrs, doc(cfg(feature = "durable")))]
pub struct Skipped {
    /// The instance.
    pub id: InstanceId,
    /// Its process's name.
    pub process: String,
    /// Why.
    pub reason: SkipReason,
}

/// Why a stored instance was not resumed.
///
/// Needs the `durable` feature.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
#[cfg_attr(docsrs, doc(cfg(feature = "durable")))]
pub enum SkipReason {
    /// No process of its name is registered.
    NotRegistered,
    /// Its process changed since it started: an instance never resumes under another
    /// model. Keep the old process (under its own name) registered to finish it.
    ModelChanged {
        /// The fingerprint it was started under.
        stored: u64,
        /// The registered process's.
        registered: u64,
    },
    /// Its checkpoint could not be read back — e.g. the data type changed and the
    /// stored data no longer deserialises.
    Unreadable(String),
}
