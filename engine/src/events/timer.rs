//! Timer definitions: a duration, a date, or a cycle.

use std::time::{Duration, SystemTime};

use tokio::time::Instant;

/// When a timer event fires. `process!` builds one from `timer(...)`:
///
/// - `timer(Duration::from_secs(5))` — once, five seconds after the token arrives;
/// - `timer(at = some_system_time)` — once, at that date (at once if it has passed);
/// - `timer(every = Duration::from_secs(10), times = 3)` — a cycle: every ten seconds,
///   three times (`times` left out: without end). A catch event waits for the first
///   occurrence; a cycle matters where a timer can fire more than once. Each
///   occurrence is due a period after the one before it was due, so a late firing
///   does not shift the schedule (missed occurrences fire at once, in order); a zero
///   period fires once.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TimerSpec {
    /// Once, this long after arming.
    After(Duration),
    /// Once, at this wall-clock time.
    At(SystemTime),
    /// Repeatedly, `every` apart, `times` times (`None`: without end).
    Every {
        /// The period.
        every: Duration,
        /// How many times; `None` for no end.
        times: Option<u32>,
    },
}

/// What a timer read off the data (`timer(|data| ..)` on a catch or a boundary)
/// may give: a `Duration` (that long after it is armed), a `SystemTime` (then), or a
/// [`TimerSpec`] (a repeat too).
#[diagnostic::on_unimplemented(
    message = "a timer read off the data gives a `Duration`, a `SystemTime` or a `TimerSpec`, not `{Self}`",
    label = "this gives a `{Self}`",
    note = "convert it in the closure, e.g. `timer(|data| Duration::from_secs(data.seconds))`"
)]
pub trait IntoTimer {
    /// The timer.
    fn into_timer(self) -> TimerSpec;
}

impl IntoTimer for Duration {
    fn into_timer(self) -> TimerSpec {
        TimerSpec::After(self)
    }
}

impl IntoTimer for SystemTime {
    fn into_timer(self) -> TimerSpec {
        TimerSpec::At(self)
    }
}

impl IntoTimer for TimerSpec {
    fn into_timer(self) -> TimerSpec {
        self
    }
}

/// A timer `duration` after it is armed (`timer(|o| o.grace)` with a `Duration`).
impl From<Duration> for TimerSpec {
    fn from(after: Duration) -> Self {
        TimerSpec::After(after)
    }
}

/// A timer at a point in time (`timer(|o| o.due)` with a `SystemTime`).
impl From<SystemTime> for TimerSpec {
    fn from(at: SystemTime) -> Self {
        TimerSpec::At(at)
    }
}

impl TimerSpec {
    /// First deadline when armed at `now`; `None` when it lies beyond what the clock
    /// can represent (the timer never fires).
    pub(crate) fn first(&self, now: Instant) -> Option<Instant> {
        match *self {
            TimerSpec::After(d) => now.checked_add(d),
            TimerSpec::At(at) => now.checked_add(
                at.duration_since(SystemTime::now())
                    .unwrap_or(Duration::ZERO),
            ),
            // A cycle of zero occurrences never fires.
            TimerSpec::Every { times: Some(0), .. } => None,
            TimerSpec::Every { every, .. } => now.checked_add(every),
        }
    }

    /// The deadline after the `fired`-th firing, which was due at `last`, if the
    /// timer fires again. A cycle with a zero period fires once: its next firing
    /// would be due at once, for ever.
    pub(crate) fn next(&self, fired: u32, last: Instant) -> Option<Instant> {
        last.checked_add(self.period_after(fired)?)
    }

    /// How long after the `fired`-th firing's due time the next one is due, if the
    /// timer fires again (the rule of [`next`](Self::next), for schedules kept in
    /// wall-clock time).
    pub(crate) fn period_after(&self, fired: u32) -> Option<Duration> {
        match *self {
            TimerSpec::Every { every, times }
                if !every.is_zero() && times.is_none_or(|t| fired < t) =>
            {
                Some(every)
            }
            _ => None,
        }
    }
}
