//! Asleep instances (`evict.rs` for the others): evicted instances nothing in
//! memory can send to — no handle, no hub subscription; most parked at a user task
//! or a timer, and every one a resume leaves in the store. Each costs its id, its
//! process and what can wake it; the store's indexes find it again (its due time,
//! the messages and signals it waits for), and `evict.rs`'s `load` brings it back
//! on a new intake (`woken`).

use std::sync::atomic::Ordering;
use std::sync::Arc;

use super::evict::Dormancy;
use super::Inner;
use crate::data::Erased;
use crate::instance::durable::evict::Dormant;

/// An evicted instance nothing can send to.
pub(super) struct Asleep {
    pub(super) process: &'static crate::graph::Graph<Erased>,
    /// It has a timer (the store's due-time index says when).
    pub(super) timed: bool,
    /// It waits for a message (the store's wake index says which).
    pub(super) for_message: bool,
    /// It waits for a signal (the store's wake index says which).
    pub(super) for_signal: bool,
    /// A resume left it asleep: loaded, it is given a handle for
    /// [`DurableEngine::handle`](super::DurableEngine::handle) as a resumed instance is.
    pub(super) resumed: bool,
}

impl Dormancy {
    /// Count an asleep instance in (`by` 1) or out (`by` -1) of those waiting for
    /// a message, a signal or a timer.
    pub(super) fn count(&self, asleep: &Asleep, by: isize) {
        for (waits, count) in [
            (asleep.for_message, &self.asleep_for_messages),
            (asleep.for_signal, &self.asleep_for_signals),
            (asleep.timed, &self.asleep_timed),
        ] {
            if waits && by > 0 {
                count.fetch_add(1, Ordering::Relaxed);
            } else if waits {
                count.fetch_sub(1, Ordering::Relaxed);
            }
        }
    }
}

/// A stored instance a resume keeps asleep: `(id, process, due time in wall-clock
/// ms, for_message, for_signal)`.
pub(super) type Sleeper = (
    u64,
    &'static crate::graph::Graph<Erased>,
    Option<i64>,
    bool,
    bool,
);

impl Inner {
    /// Keep stored instances at rest as evicted and asleep, their checkpoints not
    /// read (a resume's, a page at a time, `rest.rs`): each `(id, process,
    /// due_ms, for_message, for_signal)`. Their timer (the one timer finds it in
    /// the store's index), an action on their task or a durable publish or
    /// broadcast the store's index finds them waiting for loads them. One lock for
    /// the batch.
    pub(super) fn sleep(self: &Arc<Self>, engine: &Arc<crate::engine::Inner>, batch: &[Sleeper]) {
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        let _ = self.dormancy.runtime.set(runtime.clone());
        let dormancy = &self.dormancy;
        let mut dues = Vec::new();
        {
            let mut asleep = dormancy.asleep.lock().unwrap_or_else(|p| p.into_inner());
            asleep.reserve(batch.len());
            for &(id, process, due, for_message, for_signal) in batch {
                let new = Asleep {
                    process,
                    timed: due.is_some(),
                    for_message,
                    for_signal,
                    resumed: true,
                };
                dormancy.count(&new, 1);
                if let Some(old) = asleep.insert(id, new) {
                    dormancy.count(&old, -1);
                }
                if let Some(due) = due {
                    dues.push((id, super::due::AsleepDue::At(due)));
                }
            }
        }
        self.asleep_due(engine, &runtime, &dues);
    }

    /// A handle on asleep instance `id` if `of` its process: it is kept from now on
    /// as evicted with an intake (the handle's) and an end to publish to, not
    /// loaded — the handle's first request loads it.
    pub(super) fn asleep_handle(
        self: &Arc<Self>,
        engine: &Arc<crate::engine::Inner>,
        id: crate::instance::InstanceId,
        of: &dyn Fn(&crate::graph::Graph<Erased>) -> bool,
    ) -> Option<crate::instance::InstanceHandle<Erased>> {
        let dormancy = &self.dormancy;
        let (dormant, hub, handle) = {
            let mut asleep = dormancy.asleep.lock().unwrap_or_else(|p| p.into_inner());
            if !asleep.get(&id.0).is_some_and(|a| of(a.process)) {
                return None;
            }
            let taken = asleep.remove(&id.0)?;
            dormancy.count(&taken, -1);
            // Its due time is the store's: kept with an intake, the in-memory
            // index would not have it, so one with a timer loads now too.
            let (process, hub) = (
                taken.process,
                taken.for_message || taken.for_signal || taken.timed,
            );
            let mut dormant = self.woken(taken, id.0)?;
            let (handle, publisher) =
                crate::instance::InstanceHandle::new(id, dormant.intake.sender(), None);
            dormant.publisher = Some(publisher);
            // Among the resumed before it leaves the asleep's lock: a `handle`
            // call finds it in one or the other.
            self.resumed_handle(process, handle.clone());
            (dormant, hub, handle)
        };
        // Kept with its intake now that the handle can send to it.
        Arc::clone(self).evicted(engine, dormant);
        if let (true, Some(runtime)) = (hub, dormancy.runtime.get()) {
            // Kept with an intake it is found by a send, no longer by the store's
            // index: loaded now, it subscribes in the hub and indexes its timer
            // (and, evicted again, keeps both in memory).
            let (inner, engine) = (Arc::clone(self), Arc::clone(engine));
            runtime.spawn(async move { inner.load(&engine, id.0).await.map(|_| ()) });
        }
        Some(handle)
    }

    /// Whether any asleep instance waits for a message.
    pub(crate) fn asleep_for_messages(&self) -> bool {
        self.dormancy.asleep_for_messages.load(Ordering::Relaxed) > 0
    }

    /// Whether any asleep instance waits for a signal.
    pub(super) fn asleep_for_signals(&self) -> bool {
        self.dormancy.asleep_for_signals.load(Ordering::Relaxed) > 0
    }

    /// Whether instance `id` is asleep here or being loaded.
    pub(super) fn asleep_or_loading(&self, id: u64) -> bool {
        let dormancy = &self.dormancy;
        let asleep = dormancy.asleep.lock().unwrap_or_else(|p| p.into_inner());
        if asleep.contains_key(&id) {
            return true;
        }
        drop(asleep);
        let loading = dormancy.loading_now.lock();
        loading.unwrap_or_else(|p| p.into_inner()).contains_key(&id)
    }

    /// If instance `id` is evicted here, load it and wait until its loop has
    /// The `Dormant` of an evicted instance nothing could send to: a new intake,
    /// its process's codec, the engine's settings.
    pub(super) fn woken(&self, asleep: Asleep, id: u64) -> Option<Box<Dormant>> {
        let codec = {
            let registry = self.registry.lock().unwrap_or_else(|p| p.into_inner());
            registry.get(&asleep.process.fingerprint)?.codec
        };
        let intake =
            crate::mem::intake::IntakeReceiver::of(&mut crate::mem::intake::Intake::none());
        Some(Box::new(Dormant {
            id,
            process: asleep.process,
            codec,
            intake,
            kept: None,
            // Nothing of it is in the hub: its choices are opened and its waits
            // subscribed anew, as a resume would.
            fresh: true,
            due: None,
            asleep: true,
            keep_history: self.keep_history.load(Ordering::Relaxed),
            every_task: !self.wait_states_only.load(Ordering::Relaxed),
            publisher: None,
        }))
    }
}
