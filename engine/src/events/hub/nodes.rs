//! The hub of a node of several engines on one PostgreSQL store: it keeps no stored
//! message (the node claims them from the store, `engine/durable/cluster.rs`), and it
//! tells the node's claimer what to claim and when.
//!
//! What it reports does not grow with the waits: the message names waited for (a
//! count of keys per name, kept as waits come and go) and the message start events;
//! the claimer asks the store for the unclaimed messages of those names and asks the
//! hub, per message, whether a catch here waits for its key ([`Hub::waits`]).

use std::sync::Arc;

use super::{Hub, Payload, Published};

/// What a node's hub takes from the store.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Wanted {
    /// The message names some catch here waits for (each with some key).
    pub waits: Vec<String>,
    /// The message start events deployed here: (message name, process name).
    pub starts: Vec<(String, &'static str)>,
}

impl Hub {
    /// Hand a stored message to a waiter or (`start`: the store let it start an
    /// instance) a start event of this hub, never into its buffer: `None` if none
    /// takes it (a node of several then gives up its claim, so that the node whose
    /// instance waits for it gets it). A message claimed for a waiter never starts an
    /// instance here: whether it may is the store's decision (the key rule).
    pub fn offer_stored(
        &self,
        name: &str,
        key: &str,
        payload: Payload,
        (stored, start): (u64, bool),
    ) -> Option<Published> {
        self.route(
            name,
            key,
            payload,
            Some(stored),
            (start, false),
            self.config.ttl,
        )
    }

    /// Whether a catch here waits for the message `name` with `key`.
    pub fn waits(&self, name: &str, key: &str) -> bool {
        let state = self.lock();
        let at: (Arc<str>, Arc<str>) = (name.into(), key.into());
        state.waiters.get(&at).is_some_and(|w| !w.is_empty())
    }

    /// What this hub takes: the names waited for, and the message start events.
    pub fn wanted(&self) -> Wanted {
        let state = self.lock();
        let waits = state
            .wait_names
            .iter()
            .flatten()
            .map(|(name, _)| name.to_string())
            .collect();
        Wanted {
            waits,
            starts: starts(&state),
        }
    }

    /// The message start events deployed here: (message name, process name).
    pub fn starts(&self) -> Vec<(String, &'static str)> {
        starts(&self.lock())
    }

    /// Make this the hub of a node: wake `notify` whenever a catch starts waiting for
    /// a message or a message start is deployed here (the node then looks in the
    /// store for a message it may claim), and count the waits by name.
    pub fn on_wait(&self, notify: Arc<tokio::sync::Notify>) {
        let mut state = self.lock();
        let mut names = std::collections::HashMap::new();
        for (name, _) in state.waiters.keys() {
            *names.entry(name.clone()).or_default() += 1;
        }
        state.wait_names = Some(names);
        drop(state);
        let _ = self.on_wait.set(notify);
    }
}

fn starts(state: &super::State) -> Vec<(String, &'static str)> {
    let mut starts: Vec<(String, &'static str)> = state
        .message_starters
        .iter()
        .flat_map(|(name, s)| s.iter().map(|(_, s)| (name.to_string(), s.process())))
        .collect();
    starts.sort_unstable();
    starts.dedup();
    starts
}
