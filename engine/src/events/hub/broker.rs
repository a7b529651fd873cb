//! What a user sees of the message broker: its bounds ([`BrokerConfig`]), what
//! became of a publish ([`Published`]), its counters ([`BrokerStats`]) and the
//! messages it buffers ([`BufferedMessage`]).

use std::time::Duration;

/// Bounds of the message buffer (messages published before any waiter).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BrokerConfig {
    /// At most this many buffered messages; a message published when the buffer is
    /// full (after expired ones are purged) is dropped and counted.
    pub capacity: usize,
    /// A buffered message expires this long after it was published.
    pub ttl: Duration,
}

impl Default for BrokerConfig {
    fn default() -> Self {
        Self {
            capacity: 10_000,
            ttl: Duration::from_secs(60),
        }
    }
}

/// What became of a published message.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Published {
    /// Handed to a waiting instance, which takes it. Of an event-based gateway's
    /// arms only one is ever served (so too of a receive task's message and its
    /// interrupting boundaries): a message for an arm whose gateway another arm
    /// already won is not `Delivered` but buffered for another waiter; one for an
    /// interrupting boundary of an activity is `Delivered` only if it interrupts the
    /// activity (a completion that came first closed the boundary); one for a
    /// non-interrupting boundary fires it, even if the activity completes or is
    /// interrupted before the message reaches the loop. (The one window left: a wait
    /// withdrawn while the message is on its way by its scope or instance ending; the
    /// message then goes back to the broker, uncounted.)
    Delivered,
    /// No instance waits for it yet: buffered until one subscribes or it expires.
    Buffered,
    /// No instance waits for it and the buffer is full: dropped.
    Dropped,
    /// A deployed process's message start event started an instance with it.
    Started,
    /// The message came for a deployed process's message start event while the
    /// engine was shutting down: no instance was started with it, and it was not
    /// kept.
    ShutDown,
}

/// Counters of the message broker, for observing the buffer's bound and drops.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct BrokerStats {
    /// Messages handed to a waiting instance (at publish or from the buffer),
    /// each counted once: one given back — its wait was withdrawn before the
    /// instance took it — is uncounted, and counted again only if handed on.
    pub delivered: u64,
    /// Messages currently in the buffer.
    pub buffered: usize,
    /// Messages dropped because the buffer was full.
    pub dropped_full: u64,
    /// Buffered messages that expired before any waiter came.
    pub expired: u64,
    /// Messages published to a name that no catch here has waited for and no
    /// deployed start event nor registered process takes: likely a misspelt name.
    /// They are buffered all the same (a catch may come), and the first of each
    /// name is logged at warn. Counted by durable engines, whose processes are
    /// registered; an in-memory engine knows its processes only as their catches
    /// wait, so it counts none.
    pub unknown: u64,
    /// Repeats of a parallel instantiating gate's arms, buffered while the instance
    /// with their key ran and dropped when it ended (README, "Start events and
    /// deployments").
    pub stale: u64,
    /// Buffered messages dropped when a catch came whose `apply` takes another
    /// payload type (a string-form publish of the wrong type before any such catch
    /// waited; once one has, the publish itself is refused with
    /// `EngineError::WrongPayload`). Each is logged at warn.
    pub mistyped: u64,
}

/// A message in the broker's buffer, published before a catch waited for it
/// ([`Engine::buffered_messages`](crate::Engine::buffered_messages)).
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct BufferedMessage {
    /// Its name.
    pub name: String,
    /// Its correlation key.
    pub key: String,
    /// How long it is kept still, unless a catch takes it first.
    pub expires_in: std::time::Duration,
    /// Whether a durable engine's store holds it too (it outlives a restart).
    pub stored: bool,
}
