//! Failures that heal: how often a failing task is tried again and how long the
//! engine waits in between ([`RetryPolicy`]), what happens when the attempts are
//! spent ([`OnFailure`]), and the incidents an operator resolves ([`Incident`],
//! [`Engine::retry`](crate::Engine::retry)). ARCHITECTURE.md, "Retries and incidents".
//!
//! A handler's `Err` (other than a BPMN error or escalation, which are business
//! outcomes caught by boundaries), a panic and a timeout are failed attempts. While
//! attempts are left the token waits at the task for its backoff (an ordinary timer
//! of the instance; the task's boundary events stay armed) and the handler runs
//! again. When they are spent — or the handler said the error is permanent
//! ([`TaskError::permanent`](crate::TaskError::permanent)), or an exclusive or
//! inclusive gateway has no flow to take — the instance opens an incident: its
//! token stays where it is until someone retries it (after fixing the data, if that
//! was the cause) or cancels the instance. Other branches go on meanwhile.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use crate::data::Erased;
use crate::instance::InstanceId;

/// How a failing task is tried again: how many attempts in all, and the backoff
/// between them — `backoff` before the second, multiplied by `multiplier` before
/// each next, never more than `max_backoff`, each moved by up to `jitter` of itself
/// (so instances failing together do not retry together).
///
/// The engine-wide default is [`EngineConfig::retry`](crate::EngineConfig::retry);
/// a task's own, written in `process!` (`task charge = charge: retry(5, backoff =
/// 1s..5min) | timeout(30s);`), replaces what it gives.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RetryPolicy {
    /// Attempts in all, the first included (1: no retry).
    pub attempts: u32,
    /// The wait before the second attempt.
    pub backoff: Duration,
    /// Each next wait is the one before times this (1.0: always `backoff`).
    pub multiplier: f64,
    /// The longest wait.
    pub max_backoff: Duration,
    /// Each wait is moved by up to this fraction of itself, either way (0.0 to 1.0).
    pub jitter: f64,
}

impl Default for RetryPolicy {
    /// Three attempts, 1 s then 2 s apart (at most 1 min), ±10 %.
    fn default() -> Self {
        Self {
            attempts: 3,
            backoff: Duration::from_secs(1),
            multiplier: 2.0,
            max_backoff: Duration::from_secs(60),
            jitter: 0.1,
        }
    }
}

impl RetryPolicy {
    /// One attempt: a failure is not retried.
    pub const fn none() -> Self {
        Self {
            attempts: 1,
            backoff: Duration::ZERO,
            multiplier: 1.0,
            max_backoff: Duration::ZERO,
            jitter: 0.0,
        }
    }

    /// The wait after the `failed`th attempt failed (from 1), jittered by `seed`
    /// (the same seed, the same wait: a paused clock's test knows it).
    pub fn backoff_after(&self, failed: u32, seed: u64) -> Duration {
        let exponent = failed.saturating_sub(1).min(64) as i32;
        let base = self.backoff.as_secs_f64() * self.multiplier.max(1.0).powi(exponent);
        let base = base.min(self.max_backoff.max(self.backoff).as_secs_f64());
        let jitter = self.jitter.clamp(0.0, 1.0);
        // A fraction in [-1, 1) from the seed.
        let unit = (splitmix(seed) >> 11) as f64 / (1u64 << 53) as f64 * 2.0 - 1.0;
        Duration::from_secs_f64((base * (1.0 + jitter * unit)).max(0.0))
    }
}

/// A 64-bit mix (SplitMix64's finaliser): spreads a seed's bits.
fn splitmix(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    x = (x ^ (x >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    x ^ (x >> 31)
}

/// What an instance does when a task's attempts are spent, an error is permanent or
/// a gateway has no flow to take.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum OnFailure {
    /// Open an incident: the token stays where it failed, the instance runs on,
    /// and an operator retries it or cancels the instance (the default).
    #[default]
    Incident,
    /// Fail the instance ([`Outcome::Failed`](crate::Outcome::Failed)): fail-fast, as
    /// for a batch job that is simply run again.
    Fail,
}

/// A task's own policy as `process!` writes it: what it gives replaces the
/// engine's default. Not public API.
#[doc(hidden)]
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TaskPolicy {
    pub attempts: Option<u32>,
    pub backoff: Option<(Duration, Duration)>,
    pub multiplier: Option<f64>,
    pub jitter: Option<f64>,
    pub timeout: Option<Duration>,
}

impl TaskPolicy {
    /// This policy over the engine's `default`.
    pub(crate) fn over(&self, default: &RetryPolicy) -> RetryPolicy {
        let (backoff, max_backoff) = self
            .backoff
            .unwrap_or((default.backoff, default.max_backoff));
        RetryPolicy {
            attempts: self.attempts.unwrap_or(default.attempts),
            backoff,
            max_backoff,
            multiplier: self.multiplier.unwrap_or(default.multiplier),
            jitter: self.jitter.unwrap_or(default.jitter),
        }
    }
}

/// Names an incident: its instance, and its number there (from 1).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct IncidentId {
    /// The instance whose token waits.
    pub instance: InstanceId,
    /// The incident's number in its instance.
    pub number: u32,
}

impl fmt::Display for IncidentId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}#{}", self.instance, self.number)
    }
}

/// A token held where it failed, waiting for someone to retry it or cancel its
/// instance.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Incident {
    /// The incident.
    pub id: IncidentId,
    /// The process's name.
    pub process: &'static str,
    /// The element the token waits at: a task, or a gateway with no flow to take.
    pub node: &'static str,
    /// What failed: the last attempt's error, or why no flow was taken.
    pub error: String,
    /// The attempts made (0 for a gateway).
    pub attempts: u32,
    /// When it opened.
    pub opened: SystemTime,
}

/// Why an incident could not be retried.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum RetryError {
    /// No incident of that id is open (resolved already, or its instance ended).
    #[error("no open incident {0}")]
    NoIncident(IncidentId),
    /// The data change was written for another data type than the instance's.
    #[error("incident {0} is in an instance of another data type than the retry's change")]
    WrongData(IncidentId),
    /// A node of several: the instance runs on another node, and a data change (a
    /// closure) can be applied only where it runs. `retry` without a change is
    /// handed to that node; change the data there.
    #[error(
        "incident {0} is of an instance another node runs: a data change can be made only there"
    )]
    Elsewhere(IncidentId),
    /// The store could not be read or written for a retry handed to another node.
    #[error("incident {0}: the store failed: {1}")]
    Store(IncidentId, String),
    /// The data change panicked: nothing changed, the incident stays open.
    #[error("the data change for incident {0} panicked: {1}")]
    ChangePanicked(IncidentId, String),
}

/// A data change a retry makes first: `false` if the data is of another type.
pub(crate) type RetryChange = Box<dyn FnOnce(&mut Erased) -> bool + Send>;

/// What reaches an instance's loop with a retry: its intake.
pub(crate) trait RetryTarget: Send + Sync {
    /// Ask the loop to retry its incident `number`; `false` if the loop is gone.
    fn retry(
        &self,
        number: u32,
        change: Option<RetryChange>,
        reply: tokio::sync::oneshot::Sender<Result<(), RetryError>>,
    ) -> bool;

    /// Whether the loop is gone: an instance that ended without closing its
    /// incidents (a panic in the loop) leaves them behind, and they are dropped.
    fn gone(&self) -> bool;
}

/// The engine's open incidents, each with the way to its loop. Written by the loops
/// as incidents open and close (a short lock, never held while posting to a loop).
#[derive(Default)]
pub(crate) struct Board {
    open: Mutex<Open>,
}

/// Each open incident, with the way to its instance's loop.
type Open = BTreeMap<IncidentId, (Incident, Arc<dyn RetryTarget>)>;

impl Board {
    fn open(&self) -> std::sync::MutexGuard<'_, Open> {
        self.open
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    pub(crate) fn opened(&self, incident: Incident, target: Arc<dyn RetryTarget>) {
        #[cfg(feature = "metrics")]
        crate::metrics::incident_opened(incident.process);
        self.open().insert(incident.id, (incident, target));
    }

    pub(crate) fn closed(&self, id: IncidentId) {
        let _closed = self.open().remove(&id);
        #[cfg(feature = "metrics")]
        if let Some((incident, _)) = _closed {
            crate::metrics::incident_resolved(incident.process);
        }
    }

    /// Every open incident, oldest instance first (those of loops gone are
    /// dropped).
    pub(crate) fn list(&self) -> Vec<Incident> {
        let mut open = self.open();
        open.retain(|_, (_, target)| !target.gone());
        open.values().map(|(i, _)| i.clone()).collect()
    }

    /// Whether any incident is open here.
    #[cfg(feature = "postgres")]
    pub(crate) fn is_empty(&self) -> bool {
        self.open().is_empty()
    }

    pub(crate) fn target(&self, id: IncidentId) -> Option<Arc<dyn RetryTarget>> {
        let mut open = self.open();
        if open.get(&id).is_some_and(|(_, t)| t.gone()) {
            open.remove(&id);
        }
        open.get(&id).map(|(_, t)| Arc::clone(t))
    }
}

/// The typed data change of a retry, erased.
pub(crate) fn erase_change<D: 'static>(
    change: impl FnOnce(&mut D) + Send + 'static,
) -> RetryChange {
    Box::new(move |data: &mut Erased| match data.get_mut::<D>() {
        Some(data) => {
            change(data);
            true
        }
        None => false,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_grows_to_its_bound_and_jitter_stays_within_its_fraction() {
        let policy = RetryPolicy {
            attempts: 10,
            backoff: Duration::from_secs(1),
            multiplier: 2.0,
            max_backoff: Duration::from_secs(5),
            jitter: 0.0,
        };
        let waits: Vec<u64> = (1..=5)
            .map(|n| policy.backoff_after(n, 7).as_secs())
            .collect();
        assert_eq!(waits, [1, 2, 4, 5, 5]);
        let jittered = RetryPolicy {
            jitter: 0.5,
            ..policy
        };
        for seed in 0..200 {
            let wait = jittered.backoff_after(1, seed).as_secs_f64();
            assert!((0.5..1.5).contains(&wait), "{wait}");
        }
        assert_ne!(jittered.backoff_after(1, 1), jittered.backoff_after(1, 2));
    }
}
