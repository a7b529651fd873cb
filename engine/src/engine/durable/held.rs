//! The instances a running durable engine holds, as a migration takes them
//! (`migrate.rs`; ARCHITECTURE.md, "Migration plans"): every loop's intake by id
//! (`live`), and the instances a migration waits to take (`claims`). A live loop is
//! asked to leave memory as soon as it rests (`Command::Evict`); its eviction
//! (`evict.rs`'s `evicted`) hands the `Dormant` to the waiting migration instead of
//! keeping it, so no load can restore the old version over a moved checkpoint.
//!
//! Lock order: this lock before the dormancy's (`dormant`, `asleep`, `due`,
//! `loading_now`); a load takes it only after it let those go.

use std::collections::HashMap;
use std::sync::{Mutex, MutexGuard};

use tokio::sync::oneshot;

use super::Inner;
use crate::data::Erased;
use crate::instance::durable::evict::Dormant;
use crate::instance::{Command, Input};
use crate::mem::intake::Intake;

/// Every live durable loop's intake, and the migrations' claims.
#[derive(Default)]
pub(super) struct Held(Mutex<HeldState>);

#[derive(Default)]
pub(super) struct HeldState {
    /// The intakes of the loops that run here, by id (those that ended are pruned
    /// now and then: their intakes are closed).
    live: HashMap<u64, Intake<Input<Erased>>>,
    /// How many `live` had after its last pruning.
    pruned_at: usize,
    /// Instances a migration waits for: their eviction hands them over.
    claims: HashMap<u64, oneshot::Sender<Box<Dormant>>>,
}

impl Held {
    pub(super) fn lock(&self) -> MutexGuard<'_, HeldState> {
        self.0.lock().unwrap_or_else(|p| p.into_inner())
    }
}

impl HeldState {
    /// Instance `id` left its loop evicted: off the live loops; handed back if no
    /// migration waits for it (else the migration has it now).
    pub(super) fn evicted(&mut self, dormant: Box<Dormant>) -> Option<Box<Dormant>> {
        self.live.remove(&dormant.id);
        match self.claims.remove(&dormant.id) {
            Some(claim) => claim.send(dormant).err(),
            None => Some(dormant),
        }
    }
}

/// Where a migration finds an instance of this engine.
pub(super) enum Found {
    /// Evicted: taken out of the dormancy, the migration's until it puts it back.
    Taken(Box<Dormant>),
    /// Run by a loop, asked to leave memory when it rests: its `Dormant` comes on
    /// the receiver (the loop's intake closes if it ends instead).
    Asked(oneshot::Receiver<Box<Dormant>>, Intake<Input<Erased>>),
    /// Not here: the store alone holds it.
    Nowhere,
}

impl Inner {
    /// A durable loop began on `intake` (a start, a resume, a load).
    pub(crate) fn loop_began(&self, id: u64, intake: Intake<Input<Erased>>) {
        let mut held = self.held.lock();
        held.live.insert(id, intake);
        if held.live.len() >= (2 * held.pruned_at).max(1024) {
            held.live.retain(|_, intake| !intake.is_closed());
            held.pruned_at = held.live.len();
        }
    }

    /// A sender on the loop of instance `id`, if one runs here (restoring after a
    /// resume or a load included). An evicting loop stays here until its
    /// `Dormant` is kept (`evicted` holds this lock), and a send on it then wakes
    /// it: no moment finds it in neither place.
    pub(crate) fn running_intake(&self, id: u64) -> Option<Intake<Input<Erased>>> {
        let held = self.held.lock();
        held.live.get(&id).filter(|i| !i.is_closed()).cloned()
    }

    /// Take instance `id` for a migration: out of the dormancy if evicted, else ask
    /// its loop (running or loading) to leave memory once it rests.
    pub(super) fn find(&self, id: u64) -> Found {
        let mut held = self.held.lock();
        if let Some(dormant) = self.dormancy_take(id) {
            return Found::Taken(dormant);
        }
        let intake = self
            .dormancy_loading(id)
            .or_else(|| held.live.get(&id).filter(|i| !i.is_closed()).cloned());
        let Some(intake) = intake else {
            return Found::Nowhere;
        };
        let (claim, taken) = oneshot::channel();
        held.claims.insert(id, claim);
        drop(held);
        let _ = intake.send(Input::Handle(Box::new(Command::Evict)));
        Found::Asked(taken, intake)
    }

    /// A migration waits no longer for `id`: its claim goes (and the `Dormant`, if
    /// the eviction handed it over meanwhile).
    pub(super) fn unclaim(
        &self,
        id: u64,
        mut taken: oneshot::Receiver<Box<Dormant>>,
    ) -> Option<Box<Dormant>> {
        self.held.lock().claims.remove(&id);
        taken.try_recv().ok()
    }
}
