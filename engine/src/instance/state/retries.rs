//! Tokens held where they failed: waiting for their next attempt's backoff timer,
//! or at an open incident until someone retries it (ARCHITECTURE.md, "Retries and
//! incidents").
//!
//! Made on first need: most instances never fail, and out of line the empty state
//! costs an instance one pointer. Few tokens are held at once, so a vector is
//! scanned.

use std::time::SystemTime;

use tokio::time::Instant;

use crate::graph::NodeIdx;
use crate::instance::state::ids::TrackId;
use crate::instance::state::timers::TimerId;

/// One held token.
pub(crate) struct Held {
    pub track: TrackId,
    pub node: NodeIdx,
    pub wait: HeldFor,
}

/// What a held token waits for.
pub(crate) enum HeldFor {
    /// Its next attempt, when `timer` fires (at `due`, which a checkpoint keeps).
    Backoff {
        timer: TimerId,
        #[cfg_attr(not(feature = "durable"), allow(dead_code))]
        due: Instant,
    },
    /// An operator: an open incident.
    Incident(OpenIncident),
}

/// An open incident, as its instance keeps it.
pub(crate) struct OpenIncident {
    /// Its number in the instance (from 1).
    pub number: u32,
    pub error: String,
    /// The attempts made (0 at a gateway).
    pub attempts: u32,
    pub opened: SystemTime,
    /// At a gateway (or a task's conditional flows): a retry chooses the flows
    /// again, runs no handler.
    pub route: bool,
}

#[derive(Default)]
pub(crate) struct Retries(Option<Box<Inner>>);

#[derive(Default)]
struct Inner {
    held: Vec<Held>,
    /// The last incident number given.
    last: u32,
}

impl Drop for Retries {
    #[inline]
    fn drop(&mut self) {
        super::drop_if_made(&mut self.0);
    }
}

impl Retries {
    /// Whether any token is held (inline: every removed track asks).
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.0.as_ref().is_none_or(|inner| inner.held.is_empty())
    }

    fn inner(&mut self) -> &mut Inner {
        self.0.get_or_insert_with(Box::default)
    }

    /// Hold `track` at `node` for `wait` (replacing what it was held for).
    pub fn hold(&mut self, track: TrackId, node: NodeIdx, wait: HeldFor) {
        let inner = self.inner();
        inner.held.retain(|h| h.track != track);
        inner.held.push(Held { track, node, wait });
    }

    /// A new incident number.
    pub fn next_number(&mut self) -> u32 {
        let inner = self.inner();
        inner.last += 1;
        inner.last
    }

    /// The last incident number given (a checkpoint keeps it).
    #[cfg(feature = "durable")]
    pub fn last_number(&self) -> u32 {
        self.0.as_ref().map_or(0, |inner| inner.last)
    }

    /// Go on numbering after `last` (a restore).
    #[cfg(feature = "durable")]
    pub fn set_last_number(&mut self, last: u32) {
        self.inner().last = last;
    }

    /// Take out the token whose backoff timer is `timer`.
    pub fn take_by_timer(&mut self, timer: TimerId) -> Option<Held> {
        let inner = self.0.as_mut()?;
        let i = inner
            .held
            .iter()
            .position(|h| matches!(h.wait, HeldFor::Backoff { timer: t, .. } if t == timer))?;
        Some(inner.held.swap_remove(i))
    }

    /// Take out the token held at incident `number`.
    pub fn take_incident(&mut self, number: u32) -> Option<Held> {
        let inner = self.0.as_mut()?;
        let i = inner
            .held
            .iter()
            .position(|h| matches!(&h.wait, HeldFor::Incident(open) if open.number == number))?;
        Some(inner.held.swap_remove(i))
    }

    /// Take out what `track` was held for, if anything.
    pub fn take_track(&mut self, track: TrackId) -> Option<Held> {
        let inner = self.0.as_mut()?;
        let i = inner.held.iter().position(|h| h.track == track)?;
        Some(inner.held.swap_remove(i))
    }

    /// Take every held token out.
    pub fn take_all(&mut self) -> Vec<Held> {
        self.0
            .as_mut()
            .map(|inner| std::mem::take(&mut inner.held))
            .unwrap_or_default()
    }

    /// The held tokens, in holding order.
    pub fn iter(&self) -> impl Iterator<Item = &Held> {
        self.0.iter().flat_map(|inner| inner.held.iter())
    }
}
