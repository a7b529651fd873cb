//! The broker's buffer: messages published before their catch waits, kept by
//! (name, key) in publication order with a time-to-live, within the configured
//! capacity; and what the deployments take from it (the oldest start message of a
//! key, a parallel gate's stale arm repeats).

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use tokio::time::Instant;
use tracing::{debug, warn};

use super::{
    BrokerStats, BufferedMessage, Hub, MessageKey, Payload, PayloadType, Published, State,
};

/// One buffered message.
pub(super) struct Buffered {
    payload: Payload,
    stored: Option<u64>,
    expires: Instant,
    /// Its place in the order of publication (across names).
    seq: u64,
}

impl Hub {
    pub fn stats(&self) -> BrokerStats {
        let buffered = self.lock().buffered;
        BrokerStats {
            delivered: self.delivered.load(Ordering::Relaxed),
            buffered,
            dropped_full: self.dropped_full.load(Ordering::Relaxed),
            expired: self.expired.load(Ordering::Relaxed),
            unknown: self.unknown.load(Ordering::Relaxed),
            stale: self.stale.load(Ordering::Relaxed),
            mistyped: self.mistyped.load(Ordering::Relaxed),
        }
    }

    /// The buffered messages not yet expired, oldest first, at most `limit`: one
    /// pass over the buffer under its lock (bounded by its capacity).
    pub fn buffered_messages(&self, limit: usize) -> Vec<BufferedMessage> {
        let now = Instant::now();
        let state = self.lock();
        let mut listed: Vec<(u64, BufferedMessage)> = state
            .buffer
            .iter()
            .flat_map(|((name, key), queue)| {
                queue.iter().filter(|b| b.expires > now).map(move |b| {
                    let message = BufferedMessage {
                        name: name.to_string(),
                        key: key.to_string(),
                        expires_in: b.expires - now,
                        stored: b.stored.is_some(),
                    };
                    (b.seq, message)
                })
            })
            .collect();
        drop(state);
        listed.sort_unstable_by_key(|(seq, _)| *seq);
        listed.truncate(limit);
        listed.into_iter().map(|(_, m)| m).collect()
    }

    pub(super) fn buffer(
        &self,
        state: &mut State,
        at: MessageKey,
        payload: Payload,
        stored: Option<u64>,
        ttl: Duration,
    ) -> Published {
        if state.buffered >= self.config.capacity {
            self.purge_expired(state);
        }
        if state.buffered >= self.config.capacity {
            self.dropped_full.fetch_add(1, Ordering::Relaxed);
            #[cfg(feature = "metrics")]
            crate::metrics::messages_lost("dropped", 1);
            warn!(
                message = &*at.0,
                key = &*at.1,
                capacity = self.config.capacity,
                "message buffer full: message dropped"
            );
            return Published::Dropped;
        }
        let expires = Instant::now() + ttl;
        let seq = state.next_buffered;
        state.next_buffered += 1;
        state.buffer.entry(at).or_default().push_back(Buffered {
            payload,
            stored,
            expires,
            seq,
        });
        state.buffered += 1;
        Published::Buffered
    }

    /// The oldest live message buffered at `at` for a catch that takes a
    /// `payload` (any type if `None`): expired ones go, and so do ones of another
    /// type that no store keeps (a stored one is of its name's registered type).
    pub(super) fn take_buffered(
        &self,
        state: &mut State,
        at: &MessageKey,
        payload: Option<PayloadType>,
    ) -> Option<(Payload, Option<u64>)> {
        let queue = state.buffer.get_mut(at)?;
        let now = Instant::now();
        let (mut expired, mut mistyped) = (0, 0);
        let mut found = None;
        while let Some(buffered) = queue.pop_front() {
            if buffered.expires <= now {
                expired_untaken(at);
                expired += 1;
                continue;
            }
            if let (Some(expected), None) = (payload, buffered.stored) {
                if expected.id != (*buffered.payload).type_id() {
                    warn!(
                        message = &*at.0,
                        key = &*at.1,
                        expected = expected.name,
                        "a buffered message is not the payload its catch maps: message dropped"
                    );
                    mistyped += 1;
                    continue;
                }
            }
            found = Some((buffered.payload, buffered.stored));
            break;
        }
        let taken = expired + mistyped + usize::from(found.is_some());
        if queue.is_empty() {
            state.buffer.remove(at);
        }
        state.buffered -= taken;
        self.expired.fetch_add(expired as u64, Ordering::Relaxed);
        self.mistyped.fetch_add(mistyped as u64, Ordering::Relaxed);
        #[cfg(feature = "metrics")]
        {
            crate::metrics::messages_lost("expired", expired as u64);
            crate::metrics::messages_lost("mistyped", mistyped as u64);
        }
        found
    }

    /// Take the oldest buffered message with `key` under any of `names` (the one
    /// published first), with its name: the start message for the next instance of a
    /// key whose instance ended.
    pub fn take_oldest(
        &self,
        names: &[Arc<str>],
        key: &str,
    ) -> Option<(Arc<str>, Payload, Option<u64>)> {
        let mut state = self.lock();
        let now = Instant::now();
        let mut oldest: Option<(u64, MessageKey)> = None;
        for name in names {
            let at = (name.clone(), Arc::<str>::from(key));
            if let Some(first) = state
                .buffer
                .get(&at)
                .and_then(|q| q.iter().find(|b| b.expires > now))
            {
                if oldest.as_ref().is_none_or(|(seq, _)| first.seq < *seq) {
                    oldest = Some((first.seq, at));
                }
            }
        }
        let (_, at) = oldest?;
        let (payload, stored) = self.take_buffered(&mut state, &at, None)?;
        Some((at.0, payload, stored))
    }

    /// Drop every buffered message with `key` under any of `names` (a parallel
    /// instantiating gate's arm repeats, stale once their instance ended); the ids of
    /// their stored copies.
    pub fn drop_stale(&self, names: &[Arc<str>], key: &str) -> Vec<u64> {
        let mut state = self.lock();
        let mut stored = Vec::new();
        let mut dropped = 0;
        for name in names {
            let at = (name.clone(), Arc::<str>::from(key));
            if let Some(queue) = state.buffer.remove(&at) {
                dropped += queue.len();
                stored.extend(queue.iter().filter_map(|b| b.stored));
            }
        }
        state.buffered -= dropped;
        self.stale.fetch_add(dropped as u64, Ordering::Relaxed);
        if dropped > 0 {
            debug!(
                key,
                dropped, "stale arm repeats dropped: their instance ended"
            );
        }
        stored
    }

    pub(super) fn purge_expired(&self, state: &mut State) {
        let now = Instant::now();
        let mut expired = 0;
        state.buffer.retain(|at, queue| {
            let before = queue.len();
            queue.retain(|b| {
                let live = b.expires > now;
                if !live {
                    expired_untaken(at);
                }
                live
            });
            expired += before - queue.len();
            !queue.is_empty()
        });
        state.buffered -= expired;
        self.expired.fetch_add(expired as u64, Ordering::Relaxed);
        #[cfg(feature = "metrics")]
        crate::metrics::messages_lost("expired", expired as u64);
    }
}

/// A buffered message's time-to-live ran out before any catch took it.
fn expired_untaken((name, key): &MessageKey) {
    warn!(
        message = &**name,
        key = &**key,
        "a buffered message expired untaken: dropped"
    );
}

impl Hub {
    /// A message published to a name nothing here takes: counted, the first of
    /// each name logged at warn (a later catch may still take it from the buffer).
    pub(super) fn unknown(&self, state: &mut State, name: &str, key: &str) {
        self.unknown.fetch_add(1, Ordering::Relaxed);
        #[cfg(feature = "metrics")]
        crate::metrics::messages_lost("unknown", 1);
        if state.warned_unknown.insert(name.into()) {
            warn!(
                message = name,
                key,
                "a message published under a name no catch here has waited for and no \
                 registered or deployed process takes (a misspelt name?): it waits in \
                 the buffer until its time-to-live ends"
            );
        }
    }
}
