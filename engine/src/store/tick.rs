//! A timer start's stored schedule and [`Write::Tick`]'s compare-and-set on it: the
//! one rule every store applies, so that of several engine nodes ticking one shared
//! schedule exactly one stores each tick.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::{DeploymentRecord, StoreError, Write};

/// One timer start's schedule as stored in its deployment's `timer_anchors` (a JSON
/// object: start event id → this).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TimerTick {
    /// How many times it fired (each firing's instance is stored).
    pub fired: u32,
    /// When the next firing is due, in wall-clock milliseconds; `None` once the
    /// schedule has run out (a date that fired, a finite cycle that fired its count).
    pub due_ms: Option<i64>,
}

/// Every timer start's schedule of one deployment, by start event id.
pub type TimerAnchors = BTreeMap<String, TimerTick>;

/// The schedules in a deployment's `timer_anchors` text; `None` if it does not parse.
pub fn parse_anchors(text: &str) -> Option<TimerAnchors> {
    serde_json::from_str(text).ok()
}

/// The schedule of `start` in `deployment` as stored in `records` (`None`: not
/// stored — no such record, or no schedule for that start in it).
pub fn stored_tick(
    records: &[DeploymentRecord],
    deployment: u64,
    start: &str,
) -> Option<TimerTick> {
    let record = records.iter().find(|r| r.id == deployment)?;
    parse_anchors(&record.timer_anchors)?.get(start).copied()
}

/// [`Write::Tick`] applied to a deployment's anchors as stored (`None`: no record):
/// the anchors to store, or [`StoreError::TickTaken`] if the start's stored schedule
/// is not the one the tick was computed from. Anchors that do not parse count as
/// empty (the engine begins such a schedule anew).
pub(crate) fn ticked(stored: Option<&str>, write: &Write) -> Result<String, StoreError> {
    let Write::Tick {
        deployment,
        start,
        from,
        to,
    } = write
    else {
        return Err(StoreError::invalid(write, "not a tick"));
    };
    let mut anchors = stored.and_then(parse_anchors).unwrap_or_default();
    if anchors.get(start) != from.as_ref() {
        return Err(StoreError::TickTaken {
            deployment: deployment.id,
            start: start.clone(),
        });
    }
    anchors.insert(start.clone(), *to);
    serde_json::to_string(&anchors).map_err(|e| StoreError::invalid(write, e.to_string()))
}
