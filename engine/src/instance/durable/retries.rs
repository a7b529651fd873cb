//! Held tokens in a checkpoint (ARCHITECTURE.md, "Retries and incidents"): each
//! backoff's due time (wall clock: a restart fires it at its time, an overdue one
//! at once) and each open incident, which a restore puts back on the engine's board.

use std::time::{Duration, UNIX_EPOCH};

use serde::{Deserialize, Serialize};

use super::super::core::Instance;
use super::super::state::ids::TrackId;
use super::super::state::retries::{HeldFor, OpenIncident};
use super::records::{from_wall, to_wall};
use super::RestoreError;
use crate::data::ProcessData;
use crate::graph::NodeIdx;

/// The held tokens, and the last incident number given.
#[derive(Debug, Default, Serialize, Deserialize)]
pub(crate) struct RetriesRecord {
    pub held: Vec<HeldRecord>,
    pub last: u32,
}

impl RetriesRecord {
    pub(crate) fn is_empty(&self) -> bool {
        self.held.is_empty() && self.last == 0
    }
}

#[derive(Debug, Serialize, Deserialize)]
pub(crate) struct HeldRecord {
    pub track: u32,
    pub node: String,
    pub wait: HeldWaitRecord,
}

#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum HeldWaitRecord {
    /// The next attempt runs at `due_ms` (wall clock, ms since the epoch).
    Backoff { due_ms: i64 },
    Incident {
        number: u32,
        error: String,
        attempts: u32,
        opened_ms: u64,
        route: bool,
    },
}

impl<D: ProcessData> Instance<D> {
    /// The held tokens as records.
    pub(crate) fn retries_record(&self) -> RetriesRecord {
        let held = self
            .retries
            .iter()
            .map(|h| HeldRecord {
                track: h.track.0,
                node: self.process.nodes[h.node].id.to_string(),
                wait: match &h.wait {
                    HeldFor::Backoff { due, .. } => HeldWaitRecord::Backoff {
                        due_ms: to_wall(*due),
                    },
                    HeldFor::Incident(open) => HeldWaitRecord::Incident {
                        number: open.number,
                        error: open.error.clone(),
                        attempts: open.attempts,
                        opened_ms: open
                            .opened
                            .duration_since(UNIX_EPOCH)
                            .map_or(0, |d| d.as_millis() as u64),
                        route: open.route,
                    },
                },
            })
            .collect();
        RetriesRecord {
            held,
            last: self.retries.last_number(),
        }
    }

    /// Hold the recorded tokens again (their tracks restored `Held` already).
    pub(crate) fn restore_retries(
        &mut self,
        record: RetriesRecord,
        node: &impl Fn(&str) -> Result<NodeIdx, RestoreError>,
    ) -> Result<(), RestoreError> {
        if record.is_empty() {
            return Ok(());
        }
        self.retries.set_last_number(record.last);
        for h in record.held {
            let (track, at) = (TrackId(h.track), node(&h.node)?);
            if self.tracks.get(track).is_none_or(|t| t.at != at) {
                return Err(RestoreError::Inconsistent(
                    "a held token's track is not at its node",
                ));
            }
            match h.wait {
                HeldWaitRecord::Backoff { due_ms } => {
                    let timer = self.timers.new_id();
                    let due = from_wall(due_ms);
                    self.timers.schedule(timer, due);
                    self.hold_for_backoff(track, at, timer, due);
                }
                HeldWaitRecord::Incident {
                    number,
                    error,
                    attempts,
                    opened_ms,
                    route,
                } => {
                    let open = OpenIncident {
                        number,
                        error,
                        attempts,
                        opened: UNIX_EPOCH + Duration::from_millis(opened_ms),
                        route,
                    };
                    self.hold_incident(track, at, open);
                }
            }
        }
        Ok(())
    }
}

/// An open incident as a checkpoint records it: the node's id, its number, error,
/// attempts and when it opened (ms since the epoch).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct StoredIncident {
    pub node: String,
    pub number: u32,
    pub error: String,
    pub attempts: u32,
    pub opened_ms: u64,
}

/// The open incidents a stored checkpoint records, read without the rest of it
/// (its data, tracks, history): what listing incidents from the store reads.
pub(crate) fn stored_incidents(state: &str) -> Result<Vec<StoredIncident>, serde_json::Error> {
    #[derive(Deserialize)]
    #[serde(rename_all = "snake_case")]
    enum Partial {
        Born {},
        Running(PartialSnapshot),
    }
    #[derive(Deserialize)]
    struct PartialSnapshot {
        #[serde(default)]
        retries: RetriesRecord,
    }
    // Most checkpoints hold no incident: not parsed.
    if !state.contains("\"incident\"") {
        return Ok(Vec::new());
    }
    let held = match serde_json::from_str::<Partial>(state)? {
        Partial::Born {} => return Ok(Vec::new()),
        Partial::Running(snapshot) => snapshot.retries.held,
    };
    Ok(held
        .into_iter()
        .filter_map(|h| match h.wait {
            HeldWaitRecord::Incident {
                number,
                error,
                attempts,
                opened_ms,
                ..
            } => Some(StoredIncident {
                node: h.node,
                number,
                error,
                attempts,
                opened_ms,
            }),
            HeldWaitRecord::Backoff { .. } => None,
        })
        .collect())
}
