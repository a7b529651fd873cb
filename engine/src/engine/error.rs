//! The one error both engines answer with.

#[cfg(feature = "durable")]
use crate::instance::InstanceId;

/// Why an engine — in memory or durable — could not do what was asked. Both engines
/// answer their operations with it, so code moves from one to the other unchanged;
/// the variants about a store need the `durable` feature.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum EngineError {
    #[cfg(feature = "durable")]
    #[cfg_attr(docsrs, doc(cfg(feature = "durable")))]
    /// The store refused or failed.
    #[error(transparent)]
    Store(#[from] crate::store::StoreError),
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
    #[cfg(feature = "durable")]
    #[cfg_attr(docsrs, doc(cfg(feature = "durable")))]
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
    #[cfg(feature = "durable")]
    #[cfg_attr(docsrs, doc(cfg(feature = "durable")))]
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
    #[cfg(feature = "durable")]
    #[cfg_attr(docsrs, doc(cfg(feature = "durable")))]
    PayloadNotStorable {
        /// The process.
        process: &'static str,
        /// The catch.
        node: &'static str,
        /// The message's name.
        message: &'static str,
    },
    /// A publish whose payload is of another type than the catches of that message
    /// take (a durable engine knows them from `register`, an in-memory one from
    /// the catches that waited on it): refused, rather than failing the instance
    /// whose catch takes it. The typed form (`ORDER::message.receipt`) makes it a
    /// compile error.
    #[error("the message `{message}` carries a `{expected}` (the type its catches' `apply` takes), not a `{given}`: publish a `{expected}`")]
    WrongPayload {
        /// The message's name.
        message: String,
        /// The type its catches take.
        expected: &'static str,
        /// The type published.
        given: &'static str,
    },
    /// Another model of this process registered the same version number: a
    /// changed model needs a version of its own (README, "Versions").
    #[error(
        "version {version} of `{process}` is registered with another model (fingerprints \
         {registered:#x} and {given:#x}): give the changed model a version of its own \
         (`= \"{process}\" version N` in its header)"
    )]
    VersionTaken {
        /// The process's name.
        process: &'static str,
        /// The version both claim.
        version: u32,
        /// The registered one's fingerprint.
        registered: u64,
        /// The given one's.
        given: u64,
    },
    /// A start by name found no such registered process or version.
    #[error("{}", unknown_version(process, *version, known))]
    UnknownVersion {
        /// The name asked for.
        process: String,
        /// The version asked for (`None`: the newest).
        version: Option<u32>,
        /// What is registered: the process's versions, or (none of it) the names
        /// of the processes that are.
        known: String,
    },
    /// A start by name gave data of another type than that version takes.
    #[error("version {version} of `{process}` takes a `{expected}`, not a `{given}`")]
    WrongData {
        /// The process's name.
        process: &'static str,
        /// Its version.
        version: u32,
        /// The data type it takes.
        expected: &'static str,
        /// The data type given.
        given: &'static str,
    },
    #[cfg(feature = "durable")]
    #[cfg_attr(docsrs, doc(cfg(feature = "durable")))]
    /// The process data did not serialise.
    #[error("the data of `{process}` did not serialise: {message}")]
    Data {
        /// The process.
        process: &'static str,
        /// The serializer's message.
        message: String,
    },
    /// A business key that cannot be one (`start_keyed`).
    #[error("bad business key: {reason}")]
    BadBusinessKey {
        /// What is wrong with it.
        reason: String,
    },
    /// An instance query could not run as written.
    #[error(transparent)]
    Query(#[from] crate::query::QueryError),
    /// The engine is shutting down: no instance starts.
    #[error("the engine is shutting down: no instance starts")]
    ShuttingDown,
    /// The process cannot be deployed.
    #[error(transparent)]
    Deploy(crate::DeployError),
    /// Called outside a tokio runtime.
    #[error("no tokio runtime: use the engine from within a tokio runtime")]
    NoRuntime,
    #[cfg(feature = "durable")]
    #[cfg_attr(docsrs, doc(cfg(feature = "durable")))]
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

impl From<crate::DeployError> for EngineError {
    fn from(error: crate::DeployError) -> Self {
        match error {
            crate::DeployError::NoRuntime => EngineError::NoRuntime,
            other => EngineError::Deploy(other),
        }
    }
}

/// [`EngineError::UnknownVersion`]'s message.
fn unknown_version(process: &str, version: Option<u32>, known: &str) -> String {
    match version {
        Some(n) => format!("version {n} of `{process}` is not registered ({known})"),
        None => format!("no version of `{process}` is registered ({known})"),
    }
}
