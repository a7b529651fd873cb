//! Where an instance is, in words: its path as rows, where its tokens are now, its
//! open work and how it ended. What every failing wait and assertion prints.

use std::fmt;

use crate::{Happening, History, InstanceHandle, InstanceId, OpenWork, Outcome, Step, TrackId};

/// A picture of an instance at one moment: the path it took (its history, one row
/// per step), where each live token is, its open user tasks, and its outcome if it
/// ended. Its [`Display`](fmt::Display) is what the kit's failures print:
///
/// ```text
/// instance i0: running
/// where its tokens are:
///   t0 at `review`: parked, waiting for its event
/// open work: `review` (t0)
/// path so far:
///      #  track  node                  what
///      0  t0     begin                 started
///      1  t0     review                parked, waiting for its event
/// ```
#[derive(Clone, Debug, Default)]
pub struct Picture {
    /// The instance, when the picture was taken of a handle.
    pub instance: Option<InstanceId>,
    /// Its history at that moment.
    pub history: History,
    /// Its open user tasks (empty for a picture of a bare history).
    pub open_work: Vec<OpenWork>,
    /// How it ended (`"completed"`, `"failed: task `pay` failed: ..."`), or `None`
    /// while it runs.
    pub ended: Option<String>,
}

impl Picture {
    /// A picture of an instance, taken through its handle.
    pub async fn of<D: Clone>(handle: &InstanceHandle<D>) -> Picture {
        let ended = if handle.is_finished() {
            Some(describe_outcome(&handle.outcome().await))
        } else {
            None
        };
        Picture {
            instance: Some(handle.id()),
            history: handle.history().await,
            open_work: handle.open_work().await,
            ended,
        }
    }

    /// A picture of a history alone (no open work, no outcome).
    pub fn of_history(history: &History) -> Picture {
        Picture {
            history: history.clone(),
            ..Picture::default()
        }
    }

    /// Where each live token is: its track, node and how it waits there (the last
    /// step of every track that has not ended).
    pub fn positions(&self) -> Vec<(TrackId, &'static str, String)> {
        positions(&self.history)
    }
}

/// How an outcome reads in a picture: its kind, and a failure's error.
pub(crate) fn describe_outcome<D>(outcome: &Outcome<D>) -> String {
    match outcome {
        Outcome::Failed(error) => format!("failed: {error}"),
        other => other.kind().to_string(),
    }
}

/// Whether a step ends its track.
pub(crate) fn terminal(what: &Happening) -> bool {
    matches!(
        what,
        Happening::Ended
            | Happening::Merged
            | Happening::Consumed
            | Happening::Terminated
            | Happening::Cancelled
            | Happening::Interrupted { .. }
    )
}

/// The last step of every track, in track order.
pub(crate) fn last_steps(history: &History) -> Vec<&Step> {
    let mut last: std::collections::BTreeMap<TrackId, &Step> = Default::default();
    for step in history.steps() {
        last.insert(step.track, step);
    }
    last.into_values().collect()
}

pub(crate) fn positions(history: &History) -> Vec<(TrackId, &'static str, String)> {
    last_steps(history)
        .into_iter()
        .filter(|s| !terminal(&s.what))
        .map(|s| {
            let how = match &s.what {
                Happening::TaskStarted => "working (a task's handler or a sub-process runs)".into(),
                Happening::Waiting => "waiting at the join".into(),
                other => what(other),
            };
            (s.track, s.node, how)
        })
        .collect()
}

/// A happening in words.
pub fn what(happening: &Happening) -> String {
    let fields = |changed: &[&str]| {
        if changed.is_empty() {
            String::new()
        } else {
            format!(" (changed {})", changed.join(", "))
        }
    };
    match happening {
        Happening::Started => "started".into(),
        Happening::Spawned { from } => format!("forked from {from}"),
        Happening::TaskStarted => "work started (task or sub-process)".into(),
        Happening::Completed { changed } => format!("completed{}", fields(changed)),
        Happening::Failed { message } => format!("FAILED: {message}"),
        Happening::Routed { to } => format!("routed to {}", to.join(", ")),
        Happening::Waiting => "arrived at the join, waits".into(),
        Happening::Parked => "parked, waiting for its event".into(),
        Happening::Caught { changed } => format!("caught its event{}", fields(changed)),
        Happening::Interrupted { by } => format!("interrupted by `{by}`"),
        Happening::ErrorThrown { code } => format!("threw BPMN error {code}"),
        Happening::Escalated { code } => format!("escalated {code}"),
        Happening::Thrown { catchers } => format!("thrown (reached {catchers})"),
        Happening::Fired => "the join fired".into(),
        Happening::Merged => "merged into the join".into(),
        Happening::Consumed => "consumed (the complex join had fired)".into(),
        Happening::Ended => "ended".into(),
        Happening::Terminated => "TERMINATED the instance".into(),
        Happening::Cancelled => "cancelled".into(),
        Happening::Called { child } => format!("called instance {child}"),
        Happening::Instance { index } => {
            format!("instance {index} (forked from the waiting token)")
        }
        Happening::AttemptFailed { attempt, message } => {
            format!("attempt {attempt} failed: {message}; waits for the next")
        }
        Happening::Incident { error, attempts } => {
            format!("INCIDENT after {attempts} attempt(s): {error}; waits for a retry")
        }
        Happening::Retried { changed } => format!("retried{}", fields(changed)),
    }
}

/// The history as rows: step number, track, node, what happened.
///
/// ```
/// # use thresh::{process, Engine, ProcessData};
/// # #[derive(Clone, Debug, Default, ProcessData)] pub struct Job { pub n: u32 }
/// process! {
///     pub JOB: Job { start s; task work = |j| async move { j.n += 1; Ok(()) }; end e; s -> work -> e; }
/// }
/// # #[tokio::main(flavor = "current_thread")] async fn main() {
/// let handle = Engine::new().start(&JOB, Job::default()).await.unwrap();
/// handle.outcome().await;
/// let rows = thresh::testing::rows(&handle.history().await);
/// assert!(rows.contains("work                  completed (changed n)"));
/// # }
/// ```
pub fn rows(history: &History) -> String {
    use fmt::Write;
    let mut s = String::new();
    let _ = writeln!(s, "  {:>4}  {:<5}  {:<20}  what", "#", "track", "node");
    for (i, step) in history.steps().iter().enumerate() {
        let _ = writeln!(
            s,
            "  {:>4}  {:<5}  {:<20}  {}",
            i,
            step.track.to_string(),
            step.node,
            what(&step.what)
        );
    }
    if history.steps().is_empty() {
        s.push_str("  (no steps: the instance recorded no history)\n");
    }
    s
}

impl fmt::Display for Picture {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let name = self
            .instance
            .map_or_else(|| "the instance".to_string(), |id| format!("instance {id}"));
        match &self.ended {
            Some(how) => writeln!(f, "{name}: ended, {how}")?,
            None if self.instance.is_some() => writeln!(f, "{name}: running")?,
            None => {}
        }
        let at = self.positions();
        if !at.is_empty() {
            writeln!(f, "where its tokens are:")?;
            for (track, node, how) in at {
                writeln!(f, "  {track} at `{node}`: {how}")?;
            }
        }
        if !self.open_work.is_empty() {
            let work: Vec<String> = self
                .open_work
                .iter()
                .map(|w| format!("`{}` ({})", w.node, w.track))
                .collect();
            writeln!(f, "open work: {}", work.join(", "))?;
        }
        writeln!(
            f,
            "{}",
            if self.ended.is_some() {
                "path taken:"
            } else {
                "path so far:"
            }
        )?;
        write!(f, "{}", rows(&self.history))
    }
}
