//! The one timer of the evicted instances (`evict.rs`). It sleeps until the
//! earliest of two: the in-memory index's first entry (the dormant instances',
//! woken by an input on their kept intake), and the store's earliest due time
//! after the place it has read up to (`Store::due_after`). The asleep instances
//! keep no due time in memory: when the store's time comes, the timer pages
//! through the store's due instances from its place on and loads those asleep
//! here, on new intakes (the others are live loops with timers of their own,
//! dormant ones the in-memory index holds, or instances this engine does not
//! run).
//!
//! Its place only moves forward, up to now: an instance falling asleep with a
//! timer due later than now is found when its time comes (its checkpoint, due
//! time included, is stored before it falls asleep), one due already is loaded
//! at once, and one due earlier than what the timer sleeps until wakes it
//! (`earlier`). Stored due times are wall-clock ms (`records::to_wall`), read on
//! the runtime's clock, so a paused clock drives them too.

use std::sync::atomic::Ordering;
use std::sync::{Arc, Weak};
use std::time::Duration;

use tokio::time::Instant;

use super::Inner;
use crate::instance::durable::records::{from_wall, to_wall};
use crate::instance::Input;

/// How many due instances the timer reads from the store at once.
const DUE_AT_ONCE: usize = 1024;

/// How long the timer waits to read the store again after a read failed.
const RETRY_READ: Duration = Duration::from_secs(1);

/// The one timer's place in the store's due-time index.
pub(super) struct StoreTimer {
    /// The last (due time, id) read: every due instance up to it was loaded or
    /// passed over.
    handled: Option<(i64, u64)>,
    /// The store's due time it sleeps until (`i64::MAX`: none).
    until: i64,
    /// It is reading the store: a due time that falls asleep now wakes it again.
    awake: bool,
}

impl Default for StoreTimer {
    fn default() -> Self {
        Self {
            handled: None,
            until: i64::MAX,
            awake: false,
        }
    }
}

/// When an instance that fell asleep is due.
#[derive(Clone, Copy)]
pub(super) enum AsleepDue {
    /// At this wall-clock time (ms).
    At(i64),
    /// Not known here (taken from the asleep and put back): the store knows.
    Unknown,
}

impl From<Option<i64>> for AsleepDue {
    fn from(due: Option<i64>) -> Self {
        due.map_or(AsleepDue::Unknown, AsleepDue::At)
    }
}

impl Inner {
    /// Index a dormant instance's due time; start the timer if it is not running.
    pub(super) fn index_due(
        self: &Arc<Self>,
        engine: &Arc<crate::engine::Inner>,
        runtime: &tokio::runtime::Handle,
        due: Instant,
        id: u64,
    ) {
        let dormancy = &self.dormancy;
        dormancy
            .due
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert((due, id));
        self.start_timer(engine, runtime);
        dormancy.earlier.notify_one();
    }

    /// Start the one timer if it is not running.
    pub(super) fn start_timer(
        self: &Arc<Self>,
        engine: &Arc<crate::engine::Inner>,
        runtime: &tokio::runtime::Handle,
    ) {
        if !self.dormancy.timer_running.swap(true, Ordering::AcqRel) {
            // Not among the engine's loops (`running_instances`): no instance;
            // a shutdown ends it.
            runtime.spawn(drive_timer(
                Arc::downgrade(self),
                Arc::downgrade(engine),
                engine.stop.token().clone(),
            ));
        }
    }

    /// Instances fell asleep (already among the asleep) with a timer: those due
    /// now load at once; the timer hears of an earlier due time than it sleeps
    /// until.
    pub(super) fn asleep_due(
        self: &Arc<Self>,
        engine: &Arc<crate::engine::Inner>,
        runtime: &tokio::runtime::Handle,
        dues: &[(u64, AsleepDue)],
    ) {
        if dues.is_empty() {
            return;
        }
        // Read after they are among the asleep: a later due time is one the
        // timer's reads reach only after they are.
        let now = to_wall(Instant::now());
        let (mut earliest, mut unknown) = (i64::MAX, false);
        for &(id, due) in dues {
            match due {
                AsleepDue::At(at) if at <= now => {
                    let (durable, engine) = (Arc::clone(self), Arc::clone(engine));
                    runtime.spawn(async move { durable.load(&engine, id).await.map(|_| ()) });
                }
                AsleepDue::At(at) => earliest = earliest.min(at),
                AsleepDue::Unknown => unknown = true,
            }
        }
        if earliest == i64::MAX && !unknown {
            return;
        }
        self.start_timer(engine, runtime);
        let timer = self.dormancy.store_timer.lock();
        let mut timer = timer.unwrap_or_else(|p| p.into_inner());
        if unknown {
            // It may be due before the timer's place: read from the start again.
            timer.handled = None;
        }
        if unknown || timer.awake || earliest < timer.until {
            self.dormancy.earlier.notify_one();
        }
    }

    /// Read the store's due instances from the timer's place up to `now` (wall
    /// ms), a page at a time, and load those asleep here; the store's next due
    /// time after (`i64::MAX`: none). Only while any asleep instance has a timer.
    async fn store_due(self: &Arc<Self>, core: &Weak<crate::engine::Inner>, now: i64) -> i64 {
        let dormancy = &self.dormancy;
        let mut after = {
            let timer = dormancy.store_timer.lock();
            let mut timer = timer.unwrap_or_else(|p| p.into_inner());
            // Under the lock: one counted in after this sees none finds `until`
            // unbounded as it registers, and wakes the timer.
            if dormancy.asleep_timed.load(Ordering::Relaxed) == 0 {
                timer.until = i64::MAX;
                return i64::MAX;
            }
            timer.awake = true;
            timer.handled
        };
        let next = loop {
            let store = self.store.clone();
            let page = tokio::task::spawn_blocking(move || {
                let page = store.due_after(after, now, DUE_AT_ONCE)?;
                // The next due time after the last page, in the same read.
                let next = match page.len() < DUE_AT_ONCE {
                    true => store.due_after(page.last().copied().or(after), i64::MAX, 1)?,
                    false => Vec::new(),
                };
                Ok::<_, crate::store::StoreError>((page, next))
            })
            .await;
            let (page, next) = match page {
                Ok(Ok(read)) => read,
                Ok(Err(error)) => {
                    tracing::warn!(%error, "the store's due-time index could not be read: evicted instances' timers are read again shortly");
                    break to_wall(Instant::now() + RETRY_READ);
                }
                Err(_) => break i64::MAX,
            };
            let Some(&last) = page.last() else {
                break next.first().map_or(i64::MAX, |&(at, _)| at);
            };
            // Which are asleep here, and the place past them, under the asleep
            // lock: one falling asleep after is due later than now (loaded at
            // once otherwise), so the place passes none unseen.
            let found: Vec<u64> = {
                let asleep = dormancy.asleep.lock().unwrap_or_else(|p| p.into_inner());
                let found = page
                    .iter()
                    .map(|&(_, id)| id)
                    .filter(|id| asleep.contains_key(id))
                    .collect();
                let timer = dormancy.store_timer.lock();
                let mut timer = timer.unwrap_or_else(|p| p.into_inner());
                // Not past where a put-back asked to read from the start again.
                if timer.handled == after {
                    timer.handled = Some(last);
                }
                after = timer.handled;
                found
            };
            if let (Some(core), Some(runtime)) = (core.upgrade(), dormancy.runtime.get()) {
                // Loaded through `load`: a few at once (its semaphore), each once.
                for id in found {
                    let (durable, core) = (Arc::clone(self), Arc::clone(&core));
                    runtime.spawn(async move { durable.load(&core, id).await.map(|_| ()) });
                }
            }
            if page.len() < DUE_AT_ONCE && after == Some(last) {
                break next.first().map_or(i64::MAX, |&(at, _)| at);
            }
        };
        let timer = dormancy.store_timer.lock();
        let mut timer = timer.unwrap_or_else(|p| p.into_inner());
        timer.awake = false;
        timer.until = next;
        next
    }
}

/// The one timer of the evicted instances: it wakes each at its earliest due time.
pub(super) async fn drive_timer(
    inner: Weak<Inner>,
    core: Weak<crate::engine::Inner>,
    stop: tokio_util::sync::CancellationToken,
) {
    loop {
        let Some(engine) = inner.upgrade() else {
            return;
        };
        let dormancy = &engine.dormancy;
        let now = Instant::now();
        let mut due = Vec::new();
        let next = {
            let mut index = dormancy.due.lock().unwrap_or_else(|p| p.into_inner());
            while let Some(&(at, id)) = index.first() {
                if at > now {
                    break;
                }
                index.pop_first();
                due.push(id);
            }
            index.first().map(|&(at, _)| at)
        };
        if !due.is_empty() {
            let dormant = dormancy.dormant.lock().unwrap_or_else(|p| p.into_inner());
            for id in due {
                // Taken by a load or a migration meanwhile: nothing to wake.
                if let Some(dormant) = dormant.get(&id) {
                    let _ = dormant.intake.sender().send(Input::Wake);
                }
            }
        }
        let stored = engine.store_due(&core, to_wall(now)).await;
        let next = match (next, stored) {
            (next, i64::MAX) => next,
            (Some(at), stored) => Some(at.min(from_wall(stored))),
            (None, stored) => Some(from_wall(stored)),
        };
        let earlier = dormancy.earlier.clone();
        drop(engine);
        let earlier = earlier.notified();
        let sleep = async {
            match next {
                Some(at) => tokio::time::sleep_until(at).await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            _ = sleep => {}
            _ = earlier => {}
            _ = stop.cancelled() => return,
        }
    }
}
