//! Eviction (feature `durable`, `DurableEngine::evict_idle`): a durable instance
//! whose every token waits, once its last checkpoint is stored and it rested the
//! engine's idle time, leaves memory — its loop, its tracks' tasks, its state. What
//! finds it again stays: its intake (so its handles and the hub's subscriptions go
//! on sending to it), its hub subscriptions and choices ([`Kept`]), and its earliest
//! timer in the engine's due-time index; its open user tasks leave the engine's
//! task list (the store lists them, and acting on one loads it). Whatever arrives on the intake
//! loads it from its checkpoint into a new loop on the same intake
//! (`engine/durable/evict.rs`), which takes its kept subscriptions up again instead
//! of subscribing anew: a delivery already on its way matches the wait it was for,
//! and the instance loop stays the single writer of its state.

use std::time::Duration;

use tokio::time::Instant;

use super::super::core::Instance;
use super::super::input::Input;
use super::super::state::armed::EventSource;
use super::super::state::tracks::TrackState;
use super::records::Codec;
use crate::data::{Erased, ProcessData};
use crate::events::{ChoiceId, SubId};
use crate::graph::Graph;
use crate::mem::intake::IntakeReceiver;

/// The hub's side of an evicted instance's waits, in the order its checkpoint
/// records them: each armed entry's choice, each wait's subscription (`None`: not
/// the hub's — a timer, a user task, a condition). Empty (no allocation) for an
/// instance that waits on nothing the hub serves.
#[derive(Default)]
pub(crate) struct Kept {
    choices: Vec<Option<ChoiceId>>,
    subs: Vec<Option<SubId>>,
    /// How many of each the restore took so far.
    next_choice: usize,
    next_sub: usize,
}

impl Kept {
    /// The next armed entry's choice, as the evicted loop had it.
    pub(crate) fn choice(&mut self) -> Option<ChoiceId> {
        let choice = self.choices.get(self.next_choice).copied().flatten();
        self.next_choice += 1;
        choice
    }

    /// Give the hub back every choice and subscription kept (a migrated instance
    /// subscribes anew with its new version's keys as it restores; a delivery
    /// already queued for an old subscription finds no wait and is given back).
    pub(crate) fn release(&self, hub: &crate::events::Hub) {
        for sub in self.subs.iter().flatten() {
            hub.unsubscribe(*sub);
        }
        for choice in self.choices.iter().flatten() {
            hub.close_choice(*choice);
        }
    }

    /// The next wait's subscription, as the evicted loop had it.
    pub(crate) fn sub(&mut self) -> Option<SubId> {
        let sub = self.subs.get(self.next_sub).copied().flatten();
        self.next_sub += 1;
        sub
    }
}

/// An evicted instance as the engine keeps it: what its reload needs besides its
/// checkpoint.
pub(crate) struct Dormant {
    pub id: u64,
    pub process: &'static Graph<Erased>,
    pub codec: Codec<Erased>,
    /// Its loop's intake, still open: what is sent to it loads it.
    pub intake: IntakeReceiver<Input<Erased>>,
    /// `None` when no wait is the hub's (most: a user task, a timer).
    pub kept: Option<Box<Kept>>,
    /// Restored as a resume would (a migrated instance): its choices opened and
    /// its waits subscribed anew, nothing kept taken up.
    pub fresh: bool,
    /// Its earliest timer (a catch, a boundary, a backoff), if any.
    pub due: Option<Instant>,
    /// Taken from the asleep (the engine's `woken`): its earliest timer is the
    /// store's to know (`due` is `None`).
    pub asleep: bool,
    /// The engine's settings it was running under.
    pub keep_history: bool,
    pub every_task: bool,
    /// Where its end goes, for the handles made before it was evicted (set by the
    /// loop's `Publishing`, which holds it).
    pub publisher: Option<super::super::ending::Publisher>,
}

impl<D: ProcessData> Instance<D> {
    /// How long the instance must still rest before it may be evicted: `None` when
    /// it may not be (eviction off, work under way, a checkpoint not stored yet, an
    /// acknowledgment or a consumed message waiting for one, a call activity's
    /// child or parent — those are linked through their loops).
    pub(crate) fn evictable(&self) -> Option<Duration> {
        let durable = self.durable.as_ref()?;
        let after = match durable.evict_now {
            true => Duration::ZERO,
            false => durable.evict_after?,
        };
        let at_rest = self.outcome.is_none()
            && durable.stored == durable.seq
            && durable.acks.is_empty()
            && durable.taken.is_empty()
            && durable.deferred.is_empty()
            && self.parent.is_none()
            && self.calls.iter().next().is_none()
            && self.tracks.iter().all(|t| {
                matches!(
                    t.state(),
                    TrackState::Parked
                        | TrackState::AtJoin
                        | TrackState::InScope
                        | TrackState::Held
                )
            });
        at_rest.then_some(after)
    }

    /// Leave memory as soon as every token rests (`Command::Evict`: a migration
    /// takes the instance). Its last checkpoint must be stored first: where
    /// eviction is off nothing told the loop, so an empty submission to the writer,
    /// applied after every earlier one, tells it.
    pub(crate) fn evict_now(&mut self) {
        let intake = self.intake_tx.made().clone();
        let Some(durable) = &mut self.durable else {
            return;
        };
        durable.evict_now = true;
        if durable.stored >= durable.seq {
            return;
        }
        let (receipt, seq) = (durable.writer.submit(Vec::new()), durable.seq);
        tokio::spawn(async move {
            if receipt.await.is_ok() {
                let _ = intake.send(Input::Stored(seq));
            }
        });
    }

    /// What can wake the instance once it is out of memory, for the store's index
    /// (written with each checkpoint): its armed message (name, key) and signal
    /// subscriptions, its earliest timer, and whether it is at rest — every track
    /// waits, nothing deferred, no call linking it to another loop (the shape
    /// [`evictable`](Self::evictable) asks for, less what a stored checkpoint settles).
    pub(crate) fn wake_index(&self) -> crate::store::WakeIndex {
        let mut wake = crate::store::WakeIndex::default();
        for entry in self.armed.iter() {
            for wait in &entry.waits {
                if !matches!(wait.source, EventSource::Hub(_)) {
                    continue;
                }
                match self.process.nodes[wait.arm].kind.trigger() {
                    Some(crate::graph::Trigger::Message { name, .. }) => {
                        let key = wait.key.as_deref().unwrap_or_default();
                        wake.messages.push((name.to_string(), key.to_string()));
                    }
                    Some(crate::graph::Trigger::Signal { name, .. }) => {
                        wake.signals.push(name.to_string());
                    }
                    _ => {}
                }
            }
        }
        wake.messages.sort_unstable();
        wake.messages.dedup();
        wake.signals.sort_unstable();
        wake.signals.dedup();
        wake.due_ms = self.timers.earliest().map(super::records::to_wall);
        wake.at_rest = self.durable.as_ref().is_some_and(|d| d.deferred.is_empty())
            && self.parent.is_none()
            && self.calls.iter().next().is_none()
            && self.tracks.iter().all(|t| {
                matches!(
                    t.state(),
                    TrackState::Parked
                        | TrackState::AtJoin
                        | TrackState::InScope
                        | TrackState::Held
                )
            });
        wake
    }

    /// A checkpoint is stored: the instance may be evicted once it is its last.
    pub(crate) fn checkpoint_stored(&mut self, seq: u64) {
        if let Some(durable) = &mut self.durable {
            durable.stored = durable.stored.max(seq);
        }
    }

    /// The hub's side of the waits, to keep while the instance is evicted.
    pub(crate) fn keep(&self) -> Option<Box<Kept>> {
        let mut kept = Kept::default();
        let entries = self.armed.iter();
        let mut any = false;
        for entry in entries {
            kept.choices.push(entry.choice);
            any |= entry.choice.is_some();
            for wait in &entry.waits {
                let sub = match wait.source {
                    EventSource::Hub(sub) => Some(sub),
                    _ => None,
                };
                any |= sub.is_some();
                kept.subs.push(sub);
            }
        }
        if !any {
            return None;
        }
        kept.choices.shrink_to_fit();
        kept.subs.shrink_to_fit();
        Some(Box::new(kept))
    }

    /// The next restored entry's choice: the kept one when reloading an evicted
    /// instance (`Some`), else `None` (a resume opens its choices anew).
    pub(crate) fn kept_choice(&mut self) -> Option<Option<ChoiceId>> {
        let kept = self.durable.as_mut()?.kept.as_mut()?;
        Some(kept.choice())
    }

    /// The next restored wait's kept subscription, when reloading an evicted
    /// instance.
    pub(crate) fn kept_sub(&mut self) -> Option<SubId> {
        self.durable.as_mut()?.kept.as_mut()?.sub()
    }
}

impl Instance<Erased> {
    /// Leave memory: the parked tracks' tasks end, the instance leaves the
    /// in-memory listing, and what finds it again is handed back (its intake, its
    /// kept subscriptions, its earliest timer) for the engine to keep.
    /// `None` only for an instance that is not durable (never evictable).
    pub(crate) async fn evict(
        mut self,
        intake: IntakeReceiver<Input<Erased>>,
    ) -> Option<Box<Dormant>> {
        self.workers.abort_all();
        self.workers.shutdown().await;
        self.unlist();
        // Off the engine's task list (the store lists them): acting on one loads
        // the instance first (`engine/durable/tasks.rs`'s `restored`), which lists
        // them again as it restores.
        if let Some(engine) = &self.engine {
            for open in self.user_tasks.iter() {
                engine.task_forgotten(open.task.id);
            }
        }
        let kept = self.keep();
        let due = self.timers.earliest();
        let durable = self.durable.take()?;
        tracing::debug!(due = ?due, "evicted");
        #[cfg(feature = "metrics")]
        crate::metrics::instance_evicted(self.process.name);
        Some(Box::new(Dormant {
            id: self.id.0,
            process: self.process,
            codec: durable.codec,
            intake,
            kept,
            fresh: false,
            due,
            asleep: false,
            keep_history: durable.keep_history,
            every_task: durable.every_task,
            publisher: None,
        }))
    }
}
