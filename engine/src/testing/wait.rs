//! Waiting for an instance to reach a point, without sleeping, and moving a paused
//! clock.

use std::fmt;
use std::time::Duration;

use super::picture::{last_steps, Picture};
use crate::refs::UserTaskRef;
use crate::{Happening, History, InstanceHandle, OpenWork, Outcome};

/// How long a wait of the kit lasts by default before it fails: 10 seconds of real
/// (wall-clock) time.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(10);

/// Why a wait failed, with a [`Picture`] of where the instance was.
///
/// Its `Display` reads, for example:
///
/// ```text
/// instance i0: waited 10s for `pay` to be parked; it did not happen in time
/// instance i0: running
/// where its tokens are:
///   t0 at `review`: parked, waiting for its event
/// path so far:
///   ...
/// ```
#[derive(Clone, Debug)]
pub struct Stuck {
    /// What was awaited, in words.
    pub waited_for: String,
    /// Why the wait gave up.
    pub reason: StuckReason,
    /// Where the instance was then.
    pub picture: Picture,
}

/// Why a wait gave up.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum StuckReason {
    /// The timeout (of real time) ran out.
    TimedOut(Duration),
    /// The instance ended before what was awaited happened.
    Ended,
}

impl fmt::Display for Stuck {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let name = self
            .picture
            .instance
            .map_or_else(|| "the instance".to_string(), |id| format!("instance {id}"));
        match self.reason {
            StuckReason::TimedOut(limit) => writeln!(
                f,
                "{name}: waited {limit:?} for {}; it did not happen in time",
                self.waited_for
            )?,
            StuckReason::Ended => writeln!(
                f,
                "{name}: waited for {}, but the instance ended first",
                self.waited_for
            )?,
        }
        write!(f, "{}", self.picture)
    }
}

impl std::error::Error for Stuck {}

/// Waits with a timeout of your choice; the free functions
/// ([`wait_until_parked`], ...) use [`DEFAULT_TIMEOUT`].
///
/// A wait polls the instance and yields to the runtime in between; it never sleeps,
/// so on tokio's paused clock it **never moves time**: a timer fires only when the
/// test advances the clock ([`advance`], [`advance_to_next_timer`]). The timeout is
/// real time, so a wait fails instead of hanging even on a paused clock. (A handler
/// that sleeps on a paused clock therefore needs the test to advance it, too.)
///
/// ```
/// # use std::time::Duration;
/// # use thresh::{process, Engine, ProcessData};
/// # #[derive(Clone, Debug, Default, ProcessData)] pub struct Leave { pub ok: bool }
/// # process! { pub LEAVE: Leave { start s; user approve; end e; s -> approve -> e; } }
/// use thresh::testing::Wait;
/// # #[tokio::main(flavor = "current_thread")] async fn main() {
/// let handle = Engine::new().start(&LEAVE, Leave::default()).await.unwrap();
/// Wait::within(Duration::from_secs(2)).open_work(&handle, "approve").await.unwrap();
/// # handle.cancel();
/// # }
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Wait {
    timeout: Duration,
}

impl Default for Wait {
    fn default() -> Self {
        Wait::within(DEFAULT_TIMEOUT)
    }
}

impl Wait {
    /// Waits that fail after `timeout` of real time.
    pub const fn within(timeout: Duration) -> Wait {
        Wait { timeout }
    }

    /// Wait until `holds` is true of the instance's history; the history then.
    /// `what` says in words what is awaited, for the failure. Fails at once when
    /// the instance ends without it.
    pub async fn until<D: Clone>(
        &self,
        handle: &InstanceHandle<D>,
        what: &str,
        mut holds: impl FnMut(&History) -> bool,
    ) -> Result<History, Stuck> {
        let began = std::time::Instant::now();
        loop {
            // Looked at before the history is read: an instance that had ended by
            // then has its whole history in it.
            let finished = handle.is_finished();
            let history = handle.history().await;
            if holds(&history) {
                return Ok(history);
            }
            if finished {
                return Err(self.stuck(handle, what, StuckReason::Ended).await);
            }
            if began.elapsed() >= self.timeout {
                let reason = StuckReason::TimedOut(self.timeout);
                return Err(self.stuck(handle, what, reason).await);
            }
            tokio::task::yield_now().await;
        }
    }

    /// Wait until a token is parked at `node` now — a catch event, a receive or
    /// user task, an event-based gateway (the last step of some track is `Parked`
    /// there); the history then.
    ///
    /// For a message catch this means its subscription is live: the loop records
    /// `Parked` and subscribes in the same turn, before it reads any request of a
    /// handle, so a message published after this returns reaches the instance.
    pub async fn parked<D: Clone>(
        &self,
        handle: &InstanceHandle<D>,
        node: &str,
    ) -> Result<History, Stuck> {
        let what = format!("`{node}` to be parked");
        self.until(handle, &what, |h| parked_now(h, node)).await
    }

    /// Wait until the user task `node` (a typed reference, `ORDER::user.approve`,
    /// or its name) is open; that work.
    pub async fn open_work<D: Clone>(
        &self,
        handle: &InstanceHandle<D>,
        node: impl UserTaskRef<D>,
    ) -> Result<OpenWork, Stuck> {
        let node = node.user_task();
        let what = format!("user task `{node}` to be open");
        let began = std::time::Instant::now();
        loop {
            let finished = handle.is_finished();
            if let Some(work) = handle
                .open_work()
                .await
                .into_iter()
                .find(|w| w.node == node)
            {
                return Ok(work);
            }
            if finished {
                return Err(self.stuck(handle, &what, StuckReason::Ended).await);
            }
            if began.elapsed() >= self.timeout {
                let reason = StuckReason::TimedOut(self.timeout);
                return Err(self.stuck(handle, &what, reason).await);
            }
            tokio::task::yield_now().await;
        }
    }

    /// Wait until the instance has ended; its outcome.
    pub async fn ended<D: Clone>(&self, handle: &InstanceHandle<D>) -> Result<Outcome<D>, Stuck> {
        let began = std::time::Instant::now();
        loop {
            if handle.is_finished() {
                return Ok(handle.outcome().await);
            }
            if began.elapsed() >= self.timeout {
                let reason = StuckReason::TimedOut(self.timeout);
                return Err(self.stuck(handle, "it to end", reason).await);
            }
            tokio::task::yield_now().await;
        }
    }

    async fn stuck<D: Clone>(
        &self,
        handle: &InstanceHandle<D>,
        what: &str,
        reason: StuckReason,
    ) -> Stuck {
        Stuck {
            waited_for: what.to_string(),
            reason,
            picture: Picture::of(handle).await,
        }
    }
}

/// Whether some track's last step is `Parked` at `node`.
pub(crate) fn parked_now(history: &History, node: &str) -> bool {
    last_steps(history)
        .iter()
        .any(|s| s.node == node && s.what == Happening::Parked)
}

/// Wait (up to [`DEFAULT_TIMEOUT`]) until a token is parked at `node`; see
/// [`Wait::parked`].
pub async fn wait_until_parked<D: Clone>(
    handle: &InstanceHandle<D>,
    node: &str,
) -> Result<History, Stuck> {
    Wait::default().parked(handle, node).await
}

/// Wait (up to [`DEFAULT_TIMEOUT`]) until the user task `node` is open; see
/// [`Wait::open_work`].
pub async fn wait_until_open_work<D: Clone>(
    handle: &InstanceHandle<D>,
    node: impl UserTaskRef<D>,
) -> Result<OpenWork, Stuck> {
    Wait::default().open_work(handle, node).await
}

/// Wait (up to [`DEFAULT_TIMEOUT`]) until the instance has ended; see
/// [`Wait::ended`]. Unlike `handle.outcome()` it never moves a paused clock.
pub async fn wait_until_ended<D: Clone>(handle: &InstanceHandle<D>) -> Result<Outcome<D>, Stuck> {
    Wait::default().ended(handle).await
}

/// Wait (up to [`DEFAULT_TIMEOUT`]) until `holds` is true of the history; see
/// [`Wait::until`].
///
/// ```
/// # use thresh::{process, Engine, Happening, ProcessData};
/// # #[derive(Clone, Debug, Default, ProcessData)] pub struct Leave { pub ok: bool }
/// # process! { pub LEAVE: Leave { start s; user approve; end e; s -> approve -> e; } }
/// # #[tokio::main(flavor = "current_thread")] async fn main() {
/// let handle = Engine::new().start(&LEAVE, Leave::default()).await.unwrap();
/// let history = thresh::testing::wait_for(&handle, "approve reached", |h| {
///     h.count("approve", |w| *w == Happening::Parked) == 1
/// })
/// .await
/// .unwrap();
/// assert_eq!(history.steps().len(), 2);
/// # handle.cancel();
/// # }
/// ```
pub async fn wait_for<D: Clone>(
    handle: &InstanceHandle<D>,
    what: &str,
    holds: impl FnMut(&History) -> bool,
) -> Result<History, Stuck> {
    Wait::default().until(handle, what, holds).await
}

/// [`wait_until_parked`], failing the test with the [`Stuck`] picture.
#[track_caller]
pub fn expect_parked<'a, D: Clone>(
    handle: &'a InstanceHandle<D>,
    node: &'a str,
) -> impl std::future::Future<Output = History> + 'a {
    let at = std::panic::Location::caller();
    async move { or_fail(wait_until_parked(handle, node).await, at) }
}

/// [`wait_until_open_work`], failing the test with the [`Stuck`] picture.
#[track_caller]
pub fn expect_open_work<'a, D: Clone>(
    handle: &'a InstanceHandle<D>,
    node: impl UserTaskRef<D> + 'a,
) -> impl std::future::Future<Output = OpenWork> + 'a {
    let at = std::panic::Location::caller();
    async move { or_fail(wait_until_open_work(handle, node).await, at) }
}

/// [`wait_until_ended`], failing the test with the [`Stuck`] picture.
#[track_caller]
pub fn expect_ended<D: Clone>(
    handle: &InstanceHandle<D>,
) -> impl std::future::Future<Output = Outcome<D>> + '_ {
    let at = std::panic::Location::caller();
    async move { or_fail(wait_until_ended(handle).await, at) }
}

/// [`wait_for`], failing the test with the [`Stuck`] picture.
#[track_caller]
pub fn expect_that<'a, D: Clone>(
    handle: &'a InstanceHandle<D>,
    what: &'a str,
    holds: impl FnMut(&History) -> bool + 'a,
) -> impl std::future::Future<Output = History> + 'a {
    let at = std::panic::Location::caller();
    async move { or_fail(wait_for(handle, what, holds).await, at) }
}

fn or_fail<T>(result: Result<T, Stuck>, at: &std::panic::Location<'_>) -> T {
    match result {
        Ok(value) => value,
        Err(stuck) => panic!("{stuck}\n(the wait was at {at})"),
    }
}

/// Why the clock could not be moved.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub enum ClockError {
    /// tokio's clock is not paused (`#[tokio::test(start_paused = true)]` pauses
    /// it), or there is no current runtime.
    NotPaused,
    /// The instance has no timer armed: a picture of where it is.
    NoTimer(Box<Picture>),
}

impl fmt::Display for ClockError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ClockError::NotPaused => write!(
                f,
                "tokio's clock is not paused: use #[tokio::test(start_paused = true)]"
            ),
            ClockError::NoTimer(picture) => {
                writeln!(f, "no timer is armed in the instance")?;
                write!(f, "{picture}")
            }
        }
    }
}

impl std::error::Error for ClockError {}

/// Move tokio's paused clock forward by `by` (`tokio::time::advance`): timers due
/// by then fire. `Err(NotPaused)` rather than tokio's panic when the clock runs.
/// (tokio's panic message is still printed by the panic hook.)
pub async fn advance(by: Duration) -> Result<(), ClockError> {
    use std::future::Future;
    use std::panic::{catch_unwind, AssertUnwindSafe};
    use std::task::Poll;
    let mut advancing = std::pin::pin!(tokio::time::advance(by));
    std::future::poll_fn(move |cx| {
        match catch_unwind(AssertUnwindSafe(|| advancing.as_mut().poll(cx))) {
            Ok(Poll::Ready(())) => Poll::Ready(Ok(())),
            Ok(Poll::Pending) => Poll::Pending,
            Err(_) => Poll::Ready(Err(ClockError::NotPaused)),
        }
    })
    .await
}

/// Move tokio's paused clock to the instance's earliest armed timer, so that it
/// fires; how far the clock moved. Wait for what the timer leads to with the kit's
/// waits.
///
/// ```
/// # use std::time::Duration;
/// # use thresh::{process, Engine, ProcessData};
/// # #[derive(Clone, Debug, Default, ProcessData)] pub struct Job { pub n: u32 }
/// use thresh::testing::{advance_to_next_timer, expect_ended, expect_parked};
/// process! {
///     pub LATER: Job { start s; catch day: timer(Duration::from_secs(86_400)); end e; s -> day -> e; }
/// }
/// # #[tokio::main(flavor = "current_thread", start_paused = true)] async fn main() {
/// let handle = Engine::new().start(&LATER, Job::default()).await.unwrap();
/// expect_parked(&handle, "day").await;
/// let moved = advance_to_next_timer(&handle).await.unwrap();
/// assert_eq!(moved, Duration::from_secs(86_400));
/// assert_eq!(expect_ended(&handle).await.kind(), "completed");
/// # }
/// ```
pub async fn advance_to_next_timer<D: Clone>(
    handle: &InstanceHandle<D>,
) -> Result<Duration, ClockError> {
    let Some(deadline) = handle.next_timer().await else {
        return Err(ClockError::NoTimer(Box::new(Picture::of(handle).await)));
    };
    let by = deadline.saturating_duration_since(tokio::time::Instant::now());
    advance(by).await?;
    Ok(by)
}
