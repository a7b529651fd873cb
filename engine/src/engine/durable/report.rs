//! What a durable engine reports: its errors, and what a resume did.

use crate::instance::InstanceId;

/// What [`DurableEngine::resume`](super::DurableEngine::resume) did with the stored running instances.
///
/// Needs the `durable` feature.
#[derive(Debug, Default)]
#[cfg_attr(docsrs, doc(cfg(feature = "durable")))]
pub struct ResumeReport {
    /// Resumed — loaded, or left asleep in the store (see `asleep`): their handles
    /// come from [`DurableEngine::handle`](super::DurableEngine::handle).
    pub resumed: Vec<(InstanceId, &'static str)>,
    /// With eviction on ([`DurableEngine::evict_idle`](super::DurableEngine::evict_idle),
    /// the default): how many of `resumed` were left in the store as evicted, their
    /// checkpoints not read — they had nothing to do. Whatever is for them loads
    /// them, a request of their handle too. (A checkpoint that cannot be read is
    /// found when it loads: logged at error, the instance left stored as running.)
    pub asleep: usize,
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
    /// The version of its process it was stored with is not registered (another
    /// is): an instance never resumes under another model. Register that version
    /// too (README, "Versions"), or migrate it (README, "Migration plans").
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
