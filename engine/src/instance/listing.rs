//! An in-memory instance's entry in its engine's listing (`query/memory.rs`), which
//! `Engine::instances` reads: put there by the loop when it rests — every token
//! waits, where a durable instance checkpoints — and taken out when it ends. An
//! instance that ends in its first step is never listed, so a ready-at-once start
//! pays one check (two with `EngineConfig::keep_ended` set).

use super::core::Instance;
use super::outcome::Ended;
use super::state::tracks::TrackState;
use crate::data::ProcessData;
use crate::graph::NodeKind;
use crate::query::memory::Entry;
use crate::query::Status;

/// What the listing needs that the instance does not otherwise keep; made at a
/// keyed start, or at its first rest.
pub(crate) struct Listed {
    /// When it started (its first rest, for an instance started without a key:
    /// the first step runs at once, on the starter's call or its loop's first poll).
    pub started_ms: i64,
    /// The business key it was started with (`Engine::start_keyed`).
    pub business_key: Option<Box<str>>,
    /// Whether its entry is in the listing.
    pub listed: bool,
}

impl Listed {
    pub fn new(business_key: Option<Box<str>>) -> Box<Listed> {
        Box::new(Listed {
            started_ms: now_ms(),
            business_key,
            listed: false,
        })
    }
}

fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}

impl<D: ProcessData> Instance<D> {
    /// After an input: if the instance rests, its entry in the listing is renewed.
    pub(crate) fn list_at_rest(&mut self) {
        #[cfg(feature = "durable")]
        if self.durable.is_some() {
            // A durable instance is listed by its store.
            return;
        }
        if self.outcome.is_some() || !self.rests() {
            return;
        }
        self.tracks.count();
        let (waits, incidents) = self.waits_and_incidents();
        let listed = self.listed.get_or_insert_with(|| Listed::new(None));
        listed.listed = true;
        let data: &D = &self.data;
        let renew = |entry: &mut Entry| {
            entry.waits.clone_from(&waits);
            entry.incidents = incidents;
            match entry.data.downcast_mut::<D>() {
                Some(old) => old.clone_from(data),
                None => entry.data = Box::new(data.clone()),
            }
        };
        let make = || Entry {
            id: self.id.0,
            process: self.process.name,
            fingerprint: self.process.fingerprint,
            status: Status::Running,
            business_key: listed.business_key.clone(),
            started_ms: listed.started_ms,
            ended_ms: None,
            waits: waits.clone(),
            incidents,
            data: Box::new(data.clone()),
        };
        self.hub.listing.rested(self.id.0, renew, make);
    }

    /// The instance ended: its entry leaves the listing, its summary kept if the
    /// engine keeps ended ones. Asked inline: an instance never listed, in an
    /// engine that keeps no ended ones, pays two loads.
    #[inline]
    pub(crate) fn unlist(&mut self) {
        if self.listed.is_some() || self.hub.listing.keep_ended() > 0 {
            self.unlist_made();
        }
    }

    #[inline(never)]
    fn unlist_made(&mut self) {
        let keep = self.hub.listing.keep_ended() > 0;
        let listed = self.listed.as_ref().is_some_and(|l| l.listed);
        if !keep && !listed {
            return;
        }
        #[cfg(feature = "durable")]
        if self.durable.is_some() {
            return;
        }
        let status = match &self.outcome {
            Some(Ended::Completed) => Status::Completed,
            Some(Ended::Terminated) => Status::Terminated,
            Some(Ended::Cancelled) => Status::Cancelled,
            Some(Ended::Failed(_)) | None => Status::Failed,
        };
        let ended = keep.then(|| {
            let now = now_ms();
            let (started_ms, business_key) = match self.listed.take() {
                Some(l) => (l.started_ms, l.business_key),
                // Ended in its first step: it started just now.
                None => (now, None),
            };
            Entry {
                id: self.id.0,
                process: self.process.name,
                fingerprint: self.process.fingerprint,
                status,
                business_key,
                started_ms,
                ended_ms: Some(now),
                waits: Vec::new(),
                incidents: 0,
                data: Box::new((*self.data).clone()),
            }
        });
        self.hub.listing.ended(self.id.0, ended);
    }

    /// Whether every token waits (none works at a task; a call activity waits for
    /// its child).
    fn rests(&self) -> bool {
        if let Some((_, working)) = self.tracks.counted() {
            // Every working track is a call activity's, waiting for its child.
            return working == 0 || working == self.live_calls().len();
        }
        self.tracks.iter().all(|t| {
            t.state() != TrackState::Working
                || matches!(self.process.nodes[t.at].kind, NodeKind::Call(_))
        })
    }

    /// The ids of the elements its tokens wait at (each once, sorted) and its open
    /// incidents: what a query reads of it at rest.
    pub(crate) fn waits_and_incidents(&self) -> (Vec<&'static str>, u32) {
        let nodes = &self.process.nodes;
        let incidents = self
            .retries
            .iter()
            .filter(|h| matches!(h.wait, super::state::retries::HeldFor::Incident(_)))
            .count();
        let incidents = u32::try_from(incidents).unwrap_or(u32::MAX);
        if let Some((waiting, working)) = self.tracks.counted() {
            let mut waits: Vec<&'static str> = waiting.map(|n| nodes[n].id).collect();
            if working > 0 {
                // A call activity waits for its child while its track works.
                waits.extend(self.live_calls().iter().map(|c| nodes[c.node].id));
            }
            waits.sort_unstable();
            waits.dedup();
            debug_assert_eq!(waits, self.scan_waits(), "the track counts drifted");
            return (waits, incidents);
        }
        (self.scan_waits(), incidents)
    }

    /// The waits by a scan of every track.
    fn scan_waits(&self) -> Vec<&'static str> {
        let nodes = &self.process.nodes;
        let mut waits: Vec<&'static str> = self
            .tracks
            .iter()
            .filter(|t| match t.state() {
                TrackState::Parked | TrackState::AtJoin | TrackState::Held => true,
                TrackState::Working => matches!(nodes[t.at].kind, NodeKind::Call(_)),
                _ => false,
            })
            .map(|t| nodes[t.at].id)
            .collect();
        waits.sort_unstable();
        waits.dedup();
        waits
    }
}
