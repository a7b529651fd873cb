//! The engine-wide event hub: a signal index (name → subscribers) and a message
//! broker (name + key → waiters, and a bounded buffer with a time-to-live for
//! messages that arrive before their catch).
//!
//! The hub is engine state, not instance state: publishers on any thread and instance
//! loops meet here, under one short lock that is never held while a delivery is
//! posted. The hub alone owns the waiters; a subscription is removed once, by
//! whichever comes first — its message, or its loop's unsubscribe (a no-op if gone).
//!
//! The arms of one event-based gateway form a *choice* (a group): serving one arm
//! takes the others' subscriptions out under the same lock, so a second message
//! finds no waiter there and is buffered for another instance (Zeebe's rule: a
//! message correlated to a closed subscription is not consumed). A loop whose own
//! trigger (a timer, a condition) fires for the choice closes it first, and loses
//! if a message or signal was served before (ARCHITECTURE.md, "Events").

use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use crate::graph::{Payload, PayloadType};

mod broker;
mod buffer;
mod signals;
mod state;
use buffer::Buffered;
#[cfg(feature = "postgres")]
mod nodes;
pub use broker::{BrokerConfig, BrokerStats, BufferedMessage, Published};
#[cfg(feature = "postgres")]
pub(crate) use nodes::Wanted;
#[cfg(feature = "durable")]
pub(crate) use signals::Among;

/// Identifies one subscription in the hub.
pub(crate) type SubId = u64;

/// Identifies one deferred choice in the hub: the subscriptions of an event-based
/// gateway's arms, of which at most one is served.
pub(crate) type ChoiceId = u64;

/// What the hub hands an instance loop.
pub(crate) enum Delivery {
    /// A message for subscription `sub`, published with `key`.
    Message {
        sub: SubId,
        name: Arc<str>,
        key: Arc<str>,
        payload: Payload,
        /// The id of the message's stored copy, when a durable engine published it:
        /// the receiving instance consumes it with the checkpoint recording its effect.
        stored: Option<u64>,
    },
    /// A signal for subscription `sub`.
    Signal {
        sub: SubId,
        payload: Payload,
        /// Set by a durable broadcast: answered once the signal's effect is stored.
        ack: Option<SignalAck>,
    },
}

/// Answers a durable broadcast for one delivery: `Ok` once the instance stored the
/// signal's effect (or it had none to store), `Err` naming why it could not.
pub(crate) type SignalAck = tokio::sync::oneshot::Sender<Result<(), String>>;

/// The broadcaster's end of a [`SignalAck`].
pub(crate) type SignalReceipt = tokio::sync::oneshot::Receiver<Result<(), String>>;

/// An instance loop's intake, as the hub sees it.
pub(crate) trait Mailbox: Send + Sync {
    /// Post a delivery to the loop; `false` if the instance has ended.
    fn post(&self, delivery: Delivery) -> bool;
    /// Which intake queue it posts to (0: unknown): a durable signal to woken
    /// instances reaches only theirs (`Among::Only`).
    fn queue_id(&self) -> usize {
        0
    }
}

/// Starts instances of a deployed process when a start event's trigger comes.
pub(crate) trait Starter: Send + Sync {
    /// The process it starts instances of.
    #[cfg_attr(not(feature = "postgres"), allow(dead_code))]
    fn process(&self) -> &'static str;
    /// Whether an instance with correlation `key` runs in this deployment.
    fn runs(&self, key: &str) -> bool;
    /// A message with `key` came: start an instance, or decline because an
    /// instance with that correlation key is running (the message then waits in the
    /// buffer for it) or because the engine is shutting down.
    /// `stored`: the id of the message's stored copy (a durable engine published it),
    /// for the started instance to consume.
    fn offer_message(&self, key: &str, payload: Payload, stored: Option<u64>) -> Offer;
    /// A signal came: start an instance, or decline because the engine is shutting
    /// down. `ack`: a durable broadcast's, answered once the instance is stored.
    fn offer_signal(&self, payload: Payload, ack: Option<SignalAck>) -> Offer;
}

/// What starts a deployed process's instance through the hub.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum StartTrigger {
    Message,
    Signal,
}

/// A starter's answer to a trigger.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Offer {
    /// It started an instance.
    Started,
    /// An instance with the message's correlation key runs: it is that instance's.
    KeyRunning,
    /// The engine is shutting down: no instance starts any more.
    Closed,
}

type MessageKey = (Arc<str>, Arc<str>);

/// The start events registered for one name.
type Starters = Vec<(SubId, Arc<dyn Starter>)>;

/// A subscriber: its subscription and its loop's mailbox.
type Waiter = (SubId, Arc<dyn Mailbox>);

#[derive(Default)]
struct State {
    next_sub: SubId,
    /// Signal name → its subscribers.
    signals: HashMap<Arc<str>, HashMap<SubId, Arc<dyn Mailbox>>>,
    /// Message (name, key) → waiters, first come first served.
    waiters: HashMap<MessageKey, VecDeque<Waiter>>,
    /// A node of several: how many keys are waited on per message name (what its
    /// claim poll asks the store for; `nodes.rs`). `None` on one engine.
    #[cfg(feature = "postgres")]
    wait_names: Option<HashMap<Arc<str>, usize>>,
    /// The names waiters wait on, each allocated once (`State::intern`), and the
    /// names registered processes take (`Hub::know`): never shrinks.
    names: HashSet<Arc<str>>,
    /// The payload type each message name's catches take, learned as a catch with
    /// an `apply` mapping first waits on it: what a publish of another type is
    /// refused by.
    payload_types: HashMap<Arc<str>, PayloadType>,
    /// The unknown names published to, each warned of once.
    warned_unknown: HashSet<Box<str>>,
    /// Whether the engine registers its processes (`Hub::know`: a durable engine),
    /// so that a name none of them takes is known to be unknown. (In memory,
    /// processes are not registered: a publish before the first catch waited is
    /// common there, and not counted.)
    catalogue: bool,
    /// Subscription → where it is, so an unsubscribe finds it without a scan.
    subs: HashMap<SubId, Place>,
    /// Open choices → their members. A choice leaves the map once: when one member
    /// is served (its siblings go with it) or its loop closes it.
    choices: HashMap<ChoiceId, Vec<SubId>>,
    buffer: HashMap<MessageKey, VecDeque<Buffered>>,
    buffered: usize,
    /// The next buffered message's `seq`.
    next_buffered: u64,
    /// Deployed processes' start events, by message or signal name.
    message_starters: HashMap<Arc<str>, Starters>,
    signal_starters: HashMap<Arc<str>, Starters>,
}

/// Where a subscription is, and the choice it belongs to.
enum Place {
    Signal(Arc<str>, Option<ChoiceId>),
    Message(MessageKey, Option<ChoiceId>),
    MessageStarter(Arc<str>),
    SignalStarter(Arc<str>),
}

/// The hub. One per engine.
pub(crate) struct Hub {
    state: Mutex<State>,
    config: BrokerConfig,
    delivered: AtomicU64,
    dropped_full: AtomicU64,
    expired: AtomicU64,
    /// Messages published to a name no catch or start event here ever took.
    unknown: AtomicU64,
    /// Woken when a catch starts waiting (a node of several: `Hub::on_wait`).
    #[cfg(feature = "postgres")]
    on_wait: std::sync::OnceLock<Arc<tokio::sync::Notify>>,
    stale: AtomicU64,
    mistyped: AtomicU64,
    /// The engine's listing of its in-memory instances, for queries
    /// (`query/memory.rs`): here because every instance holds the hub.
    pub(crate) listing: crate::query::memory::Listing,
}

impl Hub {
    pub fn new(config: BrokerConfig) -> Self {
        Self {
            state: Mutex::new(State::default()),
            config,
            delivered: AtomicU64::new(0),
            dropped_full: AtomicU64::new(0),
            expired: AtomicU64::new(0),
            unknown: AtomicU64::new(0),
            #[cfg(feature = "postgres")]
            on_wait: std::sync::OnceLock::new(),
            stale: AtomicU64::new(0),
            mistyped: AtomicU64::new(0),
            listing: crate::query::memory::Listing::default(),
        }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        // No code panics while holding the lock, so a poisoned lock still holds a
        // consistent state.
        self.state
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Open a choice: the subscriptions made with it are served at most once
    /// between them.
    pub fn open_choice(&self) -> ChoiceId {
        let mut state = self.lock();
        let choice = state.next_id();
        state.choices.insert(choice, Vec::with_capacity(2));
        choice
    }

    /// Close `choice` for its loop: its subscriptions go. `false` if one of them was
    /// served first (its delivery is on its way to the loop, which must take it).
    pub fn close_choice(&self, choice: ChoiceId) -> bool {
        self.lock().claim(choice)
    }

    /// Subscribe `mailbox` to the signal `name` (as a member of `choice`, if any; a
    /// choice already made gives a subscription that is never served).
    pub fn subscribe_signal(
        &self,
        name: &str,
        mailbox: &Arc<dyn Mailbox>,
        choice: Option<ChoiceId>,
    ) -> SubId {
        let mut state = self.lock();
        let sub = state.next_id();
        if !state.joins(sub, choice) {
            return sub;
        }
        let name: Arc<str> = state
            .signals
            .get_key_value(name)
            .map_or_else(|| name.into(), |(k, _)| k.clone());
        state
            .signals
            .entry(name.clone())
            .or_default()
            .insert(sub, mailbox.clone());
        state.subs.insert(sub, Place::Signal(name, choice));
        sub
    }

    /// Subscribe `mailbox` to the message `name` with `key` (as a member of
    /// `choice`, if any). A buffered message that matches is delivered at once (the
    /// subscription, and its choice, are then already spent).
    ///
    /// `payload` is the type the catch's `apply` takes, if it maps one: learned
    /// for the name, and a buffered message of another type is dropped rather than
    /// handed to it.
    pub fn subscribe_message(
        &self,
        (name, payload): (&str, Option<PayloadType>),
        key: &Arc<str>,
        mailbox: &Arc<dyn Mailbox>,
        choice: Option<ChoiceId>,
    ) -> SubId {
        let mut state = self.lock();
        let (sub, delivery) =
            self.subscribe_message_locked(&mut state, (name, payload), key, mailbox, choice);
        drop(state);
        match delivery {
            Some(delivery) => self.hand_over(mailbox, delivery),
            None => self.wait_began(),
        }
        sub
    }

    /// A catch began to wait for a message: a node of several looks in the store
    /// for one at once (`Hub::on_wait`).
    fn wait_began(&self) {
        #[cfg(feature = "postgres")]
        if let Some(notify) = self.on_wait.get() {
            notify.notify_one();
        }
    }

    /// Move the subscription `old` to the message `name` with `key` (the data its
    /// key reads changed): the new subscription, served at once by a message
    /// buffered under `key`; `None` if `old` was already served (its message, under
    /// the old key, is on its way and is the wait's).
    pub fn resubscribe_message(
        &self,
        old: SubId,
        name: (&str, Option<PayloadType>),
        key: &Arc<str>,
        mailbox: &Arc<dyn Mailbox>,
    ) -> Option<SubId> {
        let mut state = self.lock();
        let choice = match state.remove(old)? {
            Place::Message(_, choice) => choice,
            _ => None,
        };
        let (sub, delivery) = self.subscribe_message_locked(&mut state, name, key, mailbox, choice);
        drop(state);
        match delivery {
            Some(delivery) => self.hand_over(mailbox, delivery),
            None => self.wait_began(),
        }
        Some(sub)
    }

    fn subscribe_message_locked(
        &self,
        state: &mut State,
        (name, payload): (&str, Option<PayloadType>),
        key: &Arc<str>,
        mailbox: &Arc<dyn Mailbox>,
        choice: Option<ChoiceId>,
    ) -> (SubId, Option<Delivery>) {
        let sub = state.next_id();
        if choice.is_some_and(|c| !state.choices.contains_key(&c)) {
            // The choice is made: this arm is never served.
            return (sub, None);
        }
        // The waiting instance's key itself, and the name shared by every waiter on
        // it: a parked catch costs the hub no string of its own.
        let at = (state.intern(name), Arc::clone(key));
        if let Some(payload) = payload {
            if !state.payload_types.contains_key(&at.0) {
                state.payload_types.insert(Arc::clone(&at.0), payload);
            }
        }
        if let Some((payload, stored)) = self.take_buffered(state, &at, payload) {
            if let Some(choice) = choice {
                state.claim(choice);
            }
            let (name, key) = at;
            let delivery = Delivery::Message {
                sub,
                name,
                key,
                payload,
                stored,
            };
            return (sub, Some(delivery));
        }
        state.joins(sub, choice);
        state.add_waiter(at.clone(), (sub, mailbox.clone()));
        state.subs.insert(sub, Place::Message(at, choice));
        (sub, None)
    }

    /// Post a message taken from the buffer for a loop's own subscription.
    fn hand_over(&self, mailbox: &Arc<dyn Mailbox>, delivery: Delivery) {
        if mailbox.post(delivery) {
            self.delivered.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// A message handed to a loop that no wait of it took any more (the wait was
    /// withdrawn while the message was on its way, or the instance ended): it is
    /// uncounted and published again, for another waiter or the buffer.
    pub fn give_back(&self, name: &str, key: &str, payload: Payload, stored: Option<u64>) {
        tracing::debug!(message = ?stored, name, key, "message given back");
        // Counted when it was handed over; every give-back follows one such count.
        let _ = self
            .delivered
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |n| n.checked_sub(1));
        self.publish_stored(name, key, payload, stored);
    }

    /// Register a deployed process's message or signal start event.
    pub fn add_starter(&self, on: StartTrigger, name: &str, starter: Arc<dyn Starter>) -> SubId {
        let mut state = self.lock();
        let sub = state.next_id();
        let name: Arc<str> = name.into();
        let (starters, place) = match on {
            StartTrigger::Message => (
                &mut state.message_starters,
                Place::MessageStarter(name.clone()),
            ),
            StartTrigger::Signal => (
                &mut state.signal_starters,
                Place::SignalStarter(name.clone()),
            ),
        };
        starters.entry(name).or_default().push((sub, starter));
        state.subs.insert(sub, place);
        drop(state);
        if on == StartTrigger::Message {
            // Stored messages may be waiting for it.
            self.wait_began();
        }
        sub
    }

    /// Remove a subscription; nothing happens if it is already gone.
    pub fn unsubscribe(&self, sub: SubId) {
        self.lock().remove(sub);
    }

    /// Drop the message subscription `sub`; `false` if the broker had served it
    /// already (its message is on its way).
    pub fn unsubscribe_message(&self, sub: SubId) -> bool {
        self.lock().remove(sub).is_some()
    }

    /// Whether `payload` is of the type the catches of messages called `name` take
    /// (any type, for a name no catch with an `apply` mapping has waited on yet):
    /// the expected type if not.
    pub fn payload_fits(&self, name: &str, payload: &Payload) -> Result<(), PayloadType> {
        let state = self.lock();
        match state.payload_types.get(name) {
            Some(expected) if expected.id != (**payload).type_id() => Err(*expected),
            _ => Ok(()),
        }
    }

    /// Publish a message: to the first waiter for (name, key), else into the buffer.
    pub fn publish(&self, name: &str, key: &str, payload: Payload) -> Published {
        self.publish_stored(name, key, payload, None)
    }

    /// Publish a message whose copy a durable engine stored as `stored`.
    pub fn publish_stored(
        &self,
        name: &str,
        key: &str,
        payload: Payload,
        stored: Option<u64>,
    ) -> Published {
        self.publish_for(name, key, payload, stored, self.config.ttl)
    }

    /// Publish a message that waits in the buffer `ttl` at most (rather than the
    /// broker's time-to-live).
    pub fn publish_for(
        &self,
        name: &str,
        key: &str,
        payload: Payload,
        stored: Option<u64>,
        ttl: Duration,
    ) -> Published {
        self.route(name, key, payload, stored, (true, true), ttl)
            .unwrap_or(Published::Dropped)
    }

    /// Say that catches or start events of a registered process take messages
    /// called `names`: a publish to one of them before any waited is not unknown.
    #[cfg(feature = "durable")]
    pub fn know(&self, names: impl IntoIterator<Item = &'static str>) {
        let mut state = self.lock();
        state.catalogue = true;
        for name in names {
            state.intern(name);
        }
    }

    /// To a waiter, (`start`) a start event, or (`buffer`) into the buffer for `ttl`.
    fn route(
        &self,
        name: &str,
        key: &str,
        payload: Payload,
        stored: Option<u64>,
        (start, buffer): (bool, bool),
        ttl: Duration,
    ) -> Option<Published> {
        let at = (Arc::<str>::from(name), Arc::<str>::from(key));
        // Starters are asked once: when they decline, the waiters are looked at again
        // under the same lock that buffers, so a catch that subscribed meanwhile gets
        // the message instead of the buffer.
        let mut starters_asked = !start;
        loop {
            let mut state = self.lock();
            let waiter = state.waiters.get_mut(&at).and_then(VecDeque::pop_front);
            let Some((sub, mailbox)) = waiter else {
                let starters: Vec<Arc<dyn Starter>> = match state.message_starters.get(name) {
                    Some(s) if !starters_asked => s.iter().map(|(_, s)| s.clone()).collect(),
                    _ => Vec::new(),
                };
                if starters.is_empty() {
                    if buffer
                        && state.catalogue
                        && !state.names.contains(name)
                        && !state.message_starters.contains_key(name)
                    {
                        self.unknown(&mut state, name, key);
                    }
                    #[cfg(feature = "postgres")]
                    if stored.is_some() {
                        if let Some(notify) = self.on_wait.get() {
                            // A node of several keeps no stored message here: its claim
                            // expires and the node whose catch waits for it claims it.
                            drop(state);
                            notify.notify_one();
                            return buffer.then_some(Published::Buffered);
                        }
                    }
                    return buffer.then(|| self.buffer(&mut state, at, payload, stored, ttl));
                }
                drop(state);
                starters_asked = true;
                // A deployed process with a message start: a new instance, unless one
                // with this correlation key runs in any deployment — then the message
                // waits for that instance's catch.
                if !starters.iter().any(|s| s.runs(key)) {
                    for starter in &starters {
                        match starter.offer_message(key, payload.clone(), stored) {
                            Offer::Started => {
                                self.delivered.fetch_add(1, Ordering::Relaxed);
                                return Some(Published::Started);
                            }
                            // Shutdown began after this publish copied the starters.
                            Offer::Closed => return Some(Published::ShutDown),
                            Offer::KeyRunning => {}
                        }
                    }
                }
                continue;
            };
            if let Some(Place::Message(_, Some(choice))) = state.subs.remove(&sub) {
                // Served: the other arms of its choice go now, under this lock.
                state.claim(choice);
            }
            if state.waiters.get(&at).is_some_and(VecDeque::is_empty) {
                state.no_waiters(&at);
            }
            drop(state);
            let (name, key) = at.clone();
            if mailbox.post(Delivery::Message {
                sub,
                name,
                key,
                payload: payload.clone(),
                stored,
            }) {
                self.delivered.fetch_add(1, Ordering::Relaxed);
                return Some(Published::Delivered);
            }
            // That instance ended without unsubscribing yet: try the next waiter.
        }
    }
}
