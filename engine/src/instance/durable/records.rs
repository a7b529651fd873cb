//! Checkpoints: an instance's state as plain serde types, taken by its loop after a
//! step, and put back by a new loop after a restart (feature `durable`).
//!
//! The loop is the single writer, so a checkpoint is simply its state after a step —
//! never a view assembled from several owners. What is stored is what cannot be
//! re-derived: the data, every track's position and state, the joins' arrivals, the
//! open scopes, and what is armed (with timers' absolute deadlines and conditions'
//! last values). Subscriptions and the tracks' tasks are made again on restore.
//! Nodes are named by their ids, so a person can read a checkpoint; an instance is
//! only ever restored under the model fingerprint it was stored with, so the ids
//! name the same nodes.
//!
//! What a restore re-runs (at least once): the handler of every task that was running
//! at the checkpoint. What it keeps: every committed task completion, every armed
//! wait with its deadline, every join arrival.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};
use tokio::time::Instant;

use super::super::state::ids::TrackId;
use crate::data::{Erased, ProcessData};

/// How a durable process's data becomes JSON and back (made where `D: Serialize +
/// DeserializeOwned` is known, at registration).
pub(crate) struct Codec<D> {
    pub encode: fn(&D) -> Result<serde_json::Value, String>,
    pub decode: fn(serde_json::Value) -> Result<D, String>,
}

impl<D> Clone for Codec<D> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<D> Copy for Codec<D> {}

impl<D: serde::Serialize + serde::de::DeserializeOwned> Codec<D> {
    pub fn json() -> Self {
        Self {
            encode: |d| serde_json::to_value(d).map_err(|e| e.to_string()),
            decode: |v| serde_json::from_value(v).map_err(|e| e.to_string()),
        }
    }
}

impl Codec<Erased> {
    /// The JSON codec of `D`, over erased data (the loop's).
    pub fn json_of<D>() -> Self
    where
        D: ProcessData + serde::Serialize + serde::de::DeserializeOwned,
    {
        Self {
            encode: |d| serde_json::to_value(d.typed::<D>()).map_err(|e| e.to_string()),
            decode: |v| {
                serde_json::from_value::<D>(v)
                    .map(Erased::new)
                    .map_err(|e| e.to_string())
            },
        }
    }
}

/// What a store keeps of a running instance.
// Made once per write and serialised at once (or read once on resume): its size on
// the stack costs nothing worth a box.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum Checkpoint {
    /// Acknowledged but not started: it starts from its none start again — or, with
    /// `start`, from that start event (a timer start's tick, a signal start).
    Born {
        data: serde_json::Value,
        /// The id of the start event it was started at, if not the none start.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        start: Option<String>,
    },
    /// After a step.
    Running(Snapshot),
}

/// An instance's state after a step.
#[derive(Debug, Serialize, Deserialize)]
pub(crate) struct Snapshot {
    pub data: serde_json::Value,
    pub tracks: Vec<TrackRecord>,
    pub joins: Vec<JoinRecord>,
    pub scopes: ScopesRecord,
    pub armed: Vec<ArmedRecord>,
    /// Running loop and multi-instance activations (`loop_snapshot.rs`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub activations: Vec<super::loops::ActivationRecord>,
    /// The history so far, when the engine keeps it (`DurableEngine::keep_history`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub history: Option<Vec<StepRecord>>,
    /// The children of working call activities: after a restart the call waits on
    /// the resumed child rather than starting another.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub calls: Vec<CallRecord>,
    /// The calling instance and the depth, when this one is a call activity's child.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent: Option<ParentRecord>,
    /// The compensation logs and runs (absent when there are none).
    #[serde(default, skip_serializing_if = "CompensationRecord::is_empty")]
    pub compensation: CompensationRecord,
    /// Tokens held for a backoff or at an open incident (absent when none).
    #[serde(
        default,
        skip_serializing_if = "super::retries::RetriesRecord::is_empty"
    )]
    pub retries: super::retries::RetriesRecord,
    /// Open user tasks and the last task number (absent when none was ever open).
    #[serde(default, skip_serializing_if = "super::tasks::TasksRecord::is_empty")]
    pub tasks: super::tasks::TasksRecord,
}

/// What compensation keeps (`state/compensation.rs`): per scope, its completed
/// activities in completion order with their snapshots; the runs under way.
#[derive(Debug, Default, Serialize, Deserialize)]
pub(crate) struct CompensationRecord {
    pub logs: Vec<LogRecord>,
    pub runs: Vec<RunRecord>,
}

impl CompensationRecord {
    fn is_empty(&self) -> bool {
        self.logs.is_empty() && self.runs.is_empty()
    }
}

#[derive(Debug, Serialize, Deserialize)]
pub(crate) struct LogRecord {
    pub scope: u32,
    pub completions: Vec<CompletionRecord>,
}

/// One completion: the activity, the data it committed, a sub-process's inner log,
/// the run or instance it was. A checkpoint from before runs and instances were
/// logged one by one has none of them, but a completion of a whole loop or
/// multi-instance activation holding them as its inner log: restore takes them out
/// (`durable/restore.rs`).
#[derive(Debug, Serialize, Deserialize)]
pub(crate) struct CompletionRecord {
    pub activity: String,
    pub data: serde_json::Value,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub inner: Vec<CompletionRecord>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub iteration: Option<u32>,
}

#[derive(Debug, Serialize, Deserialize)]
pub(crate) struct RunRecord {
    pub thrower: u32,
    /// Still to undo; the last first.
    pub queue: Vec<CompletionRecord>,
    pub current: CurrentRecord,
    pub then: ThenRecord,
}

#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum CurrentRecord {
    Idle,
    /// A handler runs on `track` (it runs again on restore) from `data`, undoing
    /// the completion of `iteration`.
    Handler {
        track: u32,
        data: serde_json::Value,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        iteration: Option<u32>,
    },
    /// A compensation event sub-process runs in `scope`.
    EventSub {
        scope: u32,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        iteration: Option<u32>,
    },
}

#[derive(Clone, Copy, Debug, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum ThenRecord {
    Continue,
    End,
    Cancel,
}

/// A working call activity's child, as stored.
#[derive(Debug, Serialize, Deserialize)]
pub(crate) struct CallRecord {
    /// The call's track.
    pub track: u32,
    /// The child instance's id.
    pub child: u64,
}

/// A call activity's child's parent, as stored.
#[derive(Clone, Copy, Debug, Serialize, Deserialize)]
pub(crate) struct ParentRecord {
    pub id: u64,
    pub depth: u32,
}

/// One history step as stored: nodes and fields by name.
#[derive(Debug, Serialize, Deserialize)]
pub(crate) struct StepRecord {
    pub track: u32,
    pub node: String,
    pub what: HappeningRecord,
}

/// [`Happening`](crate::instance::Happening) with owned names.
#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum HappeningRecord {
    Started,
    Spawned { from: u32 },
    TaskStarted,
    Completed { changed: Vec<String> },
    Failed { message: String },
    Routed { to: Vec<String> },
    Waiting,
    Parked,
    Caught { changed: Vec<String> },
    Interrupted { by: String },
    ErrorThrown { code: String },
    Escalated { code: String },
    Thrown { catchers: usize },
    Fired,
    Merged,
    Consumed,
    Ended,
    Terminated,
    Cancelled,
    Called { child: u64 },
    Instance { index: u32 },
    AttemptFailed { attempt: u32, message: String },
    Incident { error: String, attempts: u32 },
    Retried { changed: Vec<String> },
}

impl HappeningRecord {
    pub(super) fn of(what: &crate::instance::Happening) -> Self {
        use crate::instance::Happening as H;
        let names = |v: &[&'static str]| v.iter().map(|s| s.to_string()).collect();
        match what {
            H::Started => Self::Started,
            H::Spawned { from } => Self::Spawned { from: from.0 },
            H::TaskStarted => Self::TaskStarted,
            H::Completed { changed } => Self::Completed {
                changed: names(changed),
            },
            H::Failed { message } => Self::Failed {
                message: message.clone(),
            },
            H::Routed { to } => Self::Routed { to: names(to) },
            H::Waiting => Self::Waiting,
            H::Parked => Self::Parked,
            H::Caught { changed } => Self::Caught {
                changed: names(changed),
            },
            H::Interrupted { by } => Self::Interrupted { by: by.to_string() },
            H::ErrorThrown { code } => Self::ErrorThrown { code: code.clone() },
            H::Escalated { code } => Self::Escalated { code: code.clone() },
            H::Thrown { catchers } => Self::Thrown {
                catchers: *catchers,
            },
            H::Fired => Self::Fired,
            H::Merged => Self::Merged,
            H::Consumed => Self::Consumed,
            H::Ended => Self::Ended,
            H::Terminated => Self::Terminated,
            H::Cancelled => Self::Cancelled,
            H::Called { child } => Self::Called { child: child.0 },
            H::Instance { index } => Self::Instance { index: *index },
            H::AttemptFailed { attempt, message } => Self::AttemptFailed {
                attempt: *attempt,
                message: message.clone(),
            },
            H::Incident { error, attempts } => Self::Incident {
                error: error.clone(),
                attempts: *attempts,
            },
            H::Retried { changed } => Self::Retried {
                changed: names(changed),
            },
        }
    }

    /// Back into a happening, its names resolved to the process's nodes (`node`) and
    /// the data's fields (`field`); `None` if a name is unknown.
    pub(super) fn happening(
        self,
        node: &impl Fn(&str) -> Option<&'static str>,
        field: &impl Fn(&str) -> Option<&'static str>,
    ) -> Option<crate::instance::Happening> {
        use crate::instance::Happening as H;
        let fields = |v: Vec<String>| {
            v.iter()
                .map(|f| field(f))
                .collect::<Option<Vec<_>>>()
                .map(std::borrow::Cow::Owned)
        };
        Some(match self {
            Self::Started => H::Started,
            Self::Spawned { from } => H::Spawned {
                from: TrackId(from),
            },
            Self::TaskStarted => H::TaskStarted,
            Self::Completed { changed } => H::Completed {
                changed: fields(changed)?,
            },
            Self::Failed { message } => H::Failed { message },
            Self::Routed { to } => H::Routed {
                to: to
                    .iter()
                    .map(|n| node(n))
                    .collect::<Option<Vec<_>>>()?
                    .into(),
            },
            Self::Waiting => H::Waiting,
            Self::Parked => H::Parked,
            Self::Caught { changed } => H::Caught {
                changed: fields(changed)?,
            },
            Self::Interrupted { by } => H::Interrupted { by: node(&by)? },
            Self::ErrorThrown { code } => H::ErrorThrown { code },
            Self::Escalated { code } => H::Escalated { code },
            Self::Thrown { catchers } => H::Thrown { catchers },
            Self::Fired => H::Fired,
            Self::Merged => H::Merged,
            Self::Consumed => H::Consumed,
            Self::Ended => H::Ended,
            Self::Terminated => H::Terminated,
            Self::Cancelled => H::Cancelled,
            Self::Called { child } => H::Called {
                child: crate::instance::InstanceId(child),
            },
            Self::Instance { index } => H::Instance { index },
            Self::AttemptFailed { attempt, message } => H::AttemptFailed { attempt, message },
            Self::Incident { error, attempts } => H::Incident { error, attempts },
            Self::Retried { changed } => H::Retried {
                changed: fields(changed)?,
            },
        })
    }
}

#[derive(Debug, Serialize, Deserialize)]
pub(crate) struct TrackRecord {
    pub id: u32,
    pub at: String,
    pub scope: u32,
    pub state: TrackStateRecord,
    /// How often its activity ran (a working track runs it once more on restore).
    #[serde(default = "first_attempt")]
    pub attempt: u32,
}

fn first_attempt() -> u32 {
    1
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum TrackStateRecord {
    /// Running a task's handler: it runs again on restore.
    Working,
    Parked,
    AtJoin,
    InScope,
    /// At a compensation throw or cancel end, waiting for its compensation run.
    Compensating,
    /// Held where it failed: for its next attempt, or at an open incident
    /// (`Snapshot::retries` says which).
    Held,
}

impl Snapshot {
    /// The history it keeps (an engine that keeps histories,
    /// `DurableEngine::keep_history`), its names resolved to `graph`'s nodes and
    /// the data's `fields`; `None` if it keeps none or names something unknown (a
    /// model other than `graph`).
    pub fn history(
        &mut self,
        graph: &crate::graph::Graph<Erased>,
        fields: &'static [&'static str],
    ) -> Option<crate::instance::History> {
        let steps = self.history.take()?;
        let node = |id: &str| graph.node(id).map(|n| n.id);
        let field = |f: &str| fields.iter().copied().find(|known| *known == f);
        let mut history = crate::instance::History::default();
        for step in steps {
            let at = node(&step.node)?;
            history.push(TrackId(step.track), at, step.what.happening(&node, &field)?);
        }
        Some(history)
    }

    /// What a history would last say of `track` (for a picture): a held track is
    /// at its open incident (with its error), or waiting for its next attempt.
    pub fn happening_of(&self, track: &TrackRecord) -> crate::instance::Happening {
        use super::retries::HeldWaitRecord;
        use crate::instance::Happening;
        if track.state != TrackStateRecord::Held {
            return track.state.happening();
        }
        let held = self.retries.held.iter().find(|h| h.track == track.id);
        match held.map(|h| &h.wait) {
            Some(HeldWaitRecord::Incident {
                error, attempts, ..
            }) => Happening::Incident {
                error: error.clone(),
                attempts: *attempts,
            },
            _ => Happening::AttemptFailed {
                attempt: track.attempt,
                message: String::new(),
            },
        }
    }
}

impl TrackStateRecord {
    /// What a history would last say of a track in this state (for a picture).
    pub fn happening(self) -> crate::instance::Happening {
        use crate::instance::Happening;
        match self {
            TrackStateRecord::Parked => Happening::Parked,
            TrackStateRecord::AtJoin => Happening::Waiting,
            TrackStateRecord::Working | TrackStateRecord::InScope => Happening::TaskStarted,
            TrackStateRecord::Compensating => Happening::Thrown { catchers: 0 },
            TrackStateRecord::Held => Happening::Incident {
                error: String::new(),
                attempts: 0,
            },
        }
    }
}

#[derive(Debug, Serialize, Deserialize)]
pub(crate) struct JoinRecord {
    pub node: String,
    pub scope: u32,
    /// (incoming flow slot, track), in arrival order.
    pub waiting: Vec<(usize, u32)>,
    pub spent: bool,
}

#[derive(Debug, Default, Serialize, Deserialize)]
pub(crate) struct ScopesRecord {
    pub nested: Vec<ScopeRecord>,
    pub last: u32,
    pub root_interrupted: bool,
}

#[derive(Debug, Serialize, Deserialize)]
pub(crate) struct ScopeRecord {
    pub id: u32,
    pub node: Option<String>,
    pub parent: Option<u32>,
    pub owner: Option<u32>,
    pub interrupted: bool,
}

#[derive(Debug, Serialize, Deserialize)]
pub(crate) struct ArmedRecord {
    pub holder: HolderRecord,
    pub at: String,
    pub waits: Vec<WaitRecord>,
}

#[derive(Clone, Copy, Debug, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum HolderRecord {
    Track(u32),
    Guard(u32),
    Scope(u32),
}

#[derive(Debug, Serialize, Deserialize)]
pub(crate) struct WaitRecord {
    pub arm: String,
    pub fired: u32,
    pub source: SourceRecord,
}

#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum SourceRecord {
    /// A message or signal subscription: subscribed again on restore.
    Hub,
    /// A timer, with its pending deadline in milliseconds since the Unix epoch
    /// (`None`: spent, or never representable).
    Timer {
        deadline_ms: Option<i64>,
    },
    UserTask,
    /// A conditional event, with its value at the last evaluation.
    Condition {
        last: bool,
    },
}

/// One pairing of the runtime's clock with the wall clock, taken once per process:
/// deadlines are stored as wall-clock milliseconds (what outlives the process) through
/// it, so a deadline maps back to the same instant within one process — also on a
/// paused clock — and to the same wall-clock moment after a restart.
fn anchor() -> (Instant, i64) {
    static ANCHOR: std::sync::OnceLock<(Instant, i64)> = std::sync::OnceLock::new();
    *ANCHOR.get_or_init(|| {
        let wall = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_millis() as i64);
        (Instant::now(), wall)
    })
}

/// An instant as wall-clock milliseconds, and back.
pub(crate) fn to_wall(deadline: Instant) -> i64 {
    let (at, wall) = anchor();
    if deadline >= at {
        wall + deadline.duration_since(at).as_millis() as i64
    } else {
        wall - at.duration_since(deadline).as_millis() as i64
    }
}

pub(crate) fn from_wall(ms: i64) -> Instant {
    let (at, wall) = anchor();
    let deadline = if ms >= wall {
        at + Duration::from_millis((ms - wall) as u64)
    } else {
        at.checked_sub(Duration::from_millis((wall - ms) as u64))
            .unwrap_or(at)
    };
    // An overdue deadline is due now: it fires once, at once.
    deadline.max(Instant::now())
}
