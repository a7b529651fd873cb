//! Evicted instances (README, "Durable instances"; `instance/durable/evict.rs` for
//! the loop's side): the engine keeps of each only its intake, watched by a waker
//! of its own (no task), and its earliest due time in one index that one timer
//! drives (`due.rs`) — or, of one nothing can send to (asleep), its process alone:
//! its due time is the store's, which the same timer reads. Whatever
//! arrives on the intake — a message or signal for a kept subscription, a handle's
//! request or cancel, a task-list completion, a retry, the timer's wake — loads the
//! instance from its stored checkpoint into a new loop on that intake, once: what
//! arrives meanwhile queues there and the new loop takes it in order.

use std::collections::{BTreeSet, HashMap};
use std::future::Future;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use tokio::time::Instant;

use super::asleep::Asleep;
use super::{DurableEngine, Inner};
use crate::data::Erased;
use crate::instance::durable::evict::Dormant;
use crate::instance::durable::records::Checkpoint;
use crate::instance::{Command, Entry, Input};
use crate::store::Status;

/// The idle time after which a resting instance is evicted unless
/// [`DurableEngine::evict_idle`] says otherwise: long enough that a reply a service
/// sends within seconds finds the instance in memory (no load), short enough that
/// instances waiting for people or days cost the engine little (ARCHITECTURE.md,
/// "Eviction", has the measurements behind it).
///
/// Needs the `durable` feature.
pub const DEFAULT_EVICT_AFTER: Duration = Duration::from_secs(10);

/// The least a loaded instance rests before it is evicted again (whatever the
/// idle time): what loaded it may reach it just after its restore.
const RELOADED_REST: Duration = Duration::from_millis(100);

/// How many evicted instances load from the store at once: a timer due for many,
/// or a signal to many, loads them in batches of this size.
const LOADING_AT_ONCE: usize = 64;

/// The engine's evicted instances.
pub(super) struct Dormancy {
    /// The idle time after which a resting instance is evicted, in ms (`u64::MAX`:
    /// never).
    after_ms: AtomicU64,
    /// The evicted instances something can still send to (a handle, a hub
    /// subscription, the incident board), by id.
    pub(super) dormant: Mutex<HashMap<u64, Box<Dormant>>>,
    /// The evicted instances nothing can send to (no handle, no subscription: most
    /// parked at a user task or a timer), by id: their process alone, and what can
    /// wake them; their due times are the store's. A task-list action, their
    /// timer (the one timer pages through the store's due-time index) or a
    /// message or signal the store's wake index finds them waiting for loads
    /// them, on a new intake.
    pub(super) asleep: Mutex<HashMap<u64, Asleep>>,
    /// The intakes of those being loaded now, by id: a request sent there is
    /// answered once the instance has restored.
    pub(super) loading_now: Mutex<HashMap<u64, crate::mem::intake::Intake<Input<Erased>>>>,
    /// The dormant instances' earliest due times (the asleep ones' are the
    /// store's: `due.rs`).
    pub(super) due: Mutex<BTreeSet<(Instant, u64)>>,
    /// The one timer's place in the store's due-time index (`due.rs`); locked
    /// after `asleep`.
    pub(super) store_timer: Mutex<super::due::StoreTimer>,
    /// How many of the asleep have a timer: the one timer reads the store's index
    /// only while any do.
    pub(super) asleep_timed: std::sync::atomic::AtomicUsize,
    /// Tells the timer a new due time came (or that it is to start).
    pub(super) earlier: Arc<tokio::sync::Notify>,
    pub(super) timer_running: std::sync::atomic::AtomicBool,
    loading: Arc<tokio::sync::Semaphore>,
    /// Instances loaded again so far.
    loads: AtomicU64,
    /// How many of the asleep wait for a message (put to sleep by a resume): a
    /// durable publish looks them up in the store's wake index while any do.
    pub(super) asleep_for_messages: std::sync::atomic::AtomicUsize,
    /// How many of the asleep wait for a signal: a durable broadcast looks them up
    /// in the store's wake index while any do.
    pub(super) asleep_for_signals: std::sync::atomic::AtomicUsize,
    /// The runtime evicted instances are loaded on (the first eviction's).
    pub(super) runtime: std::sync::OnceLock<tokio::runtime::Handle>,
}

impl Default for Dormancy {
    fn default() -> Self {
        Self {
            after_ms: AtomicU64::new(DEFAULT_EVICT_AFTER.as_millis() as u64),
            dormant: Mutex::new(HashMap::new()),
            asleep: Mutex::new(HashMap::new()),
            loading_now: Mutex::new(HashMap::new()),
            due: Mutex::new(BTreeSet::new()),
            store_timer: Mutex::default(),
            asleep_timed: std::sync::atomic::AtomicUsize::new(0),
            earlier: Arc::new(tokio::sync::Notify::new()),
            timer_running: std::sync::atomic::AtomicBool::new(false),
            loading: Arc::new(tokio::sync::Semaphore::new(LOADING_AT_ONCE)),
            loads: AtomicU64::new(0),
            asleep_for_messages: std::sync::atomic::AtomicUsize::new(0),
            asleep_for_signals: std::sync::atomic::AtomicUsize::new(0),
            runtime: std::sync::OnceLock::new(),
        }
    }
}

/// Watches an evicted instance's intake: the intake's waker, so an evicted
/// instance costs no task. Woken by the first send, it loads the instance.
struct Watch {
    id: u64,
    inner: Weak<Inner>,
    engine: Weak<crate::engine::Inner>,
}

impl std::task::Wake for Watch {
    fn wake(self: Arc<Self>) {
        let (Some(inner), Some(engine)) = (self.inner.upgrade(), self.engine.upgrade()) else {
            return;
        };
        let id = self.id;
        if let Some(runtime) = inner.dormancy.runtime.get().cloned() {
            runtime.spawn(async move { inner.load(&engine, id).await.map(|_| ()) });
        }
    }
}

impl Dormancy {
    /// The idle time instances started or loaded from now on are evicted after.
    pub(super) fn after(&self) -> Option<Duration> {
        match self.after_ms.load(Ordering::Relaxed) {
            u64::MAX => None,
            ms => Some(Duration::from_millis(ms)),
        }
    }
}

impl DurableEngine {
    /// Evict instances from memory once they have rested `after` (by default
    /// [`DEFAULT_EVICT_AFTER`]; `None`: never). An instance rests when every token waits — at a user or
    /// receive task, a catch, an event-based gateway, a timer, a join, an incident —
    /// and its last checkpoint is stored; evicted, it costs the engine its intake,
    /// its hub subscriptions and its end, not its loop, tracks and state (its open
    /// tasks are listed from the store).
    /// Whatever is for it — a message or signal it waits for, a timer falling due,
    /// a task completion, a cancel, a retry, any request of a handle — loads it from
    /// its checkpoint and is delivered to it as if it had stayed (a burst loads it
    /// once); its handles keep working. A loaded instance's history starts anew
    /// unless [`keep_history`](Self::keep_history). Instances of call activities
    /// (parents and children) are not evicted. On a node of several
    /// (`DurableEngine::connect`, feature `postgres`) an evicted instance keeps its
    /// owner and lease while the node lives: a message claimed for it, a signal, a
    /// task action, cancel or retry sent from any node loads it on its owner; the
    /// node that takes it over after its owner died keeps it evicted until
    /// something wakes it. Applies to instances started or resumed from now on. With it on, a restart's
    /// [`resume`](Self::resume) loads only the stored instances with work now; the
    /// others it keeps as evicted without reading their checkpoints (the store's
    /// wake index, `store::WakeIndex`, says which; read a page at a time): their
    /// timer, a [`publish_message`](Self::publish_message) or
    /// [`broadcast_signal`](Self::broadcast_signal) for them or an action on their
    /// task loads them. Call it before `resume`.
    ///
    /// An evicted instance nothing in memory can send to (no handle held, no hub
    /// subscription: most parked at a user task or a timer, and every one a resume
    /// leaves in the store) costs its id and process alone: its due time stays in
    /// the store's due-time index ([`Store::due_after`](crate::store::Store::due_after)),
    /// which the engine's one timer for evicted instances reads when the earliest
    /// falls due, a page at a time.
    ///
    /// Needs the `durable` feature.
    pub fn evict_idle(&self, after: Option<Duration>) {
        let ms = after.map_or(u64::MAX, |d| (d.as_millis() as u64).min(u64::MAX - 1));
        self.inner.dormancy.after_ms.store(ms, Ordering::Relaxed);
    }

    /// How many instances are evicted now (in the store, not in memory).
    pub fn evicted_instances(&self) -> usize {
        let dormancy = &self.inner.dormancy;
        let dormant = dormancy
            .dormant
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .len();
        dormant
            + dormancy
                .asleep
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .len()
    }

    /// How many times an evicted instance was loaded again since this engine began.
    pub fn evicted_loads(&self) -> u64 {
        self.inner.dormancy.loads.load(Ordering::Relaxed)
    }
}

impl Inner {
    /// Keep an evicted instance: watch its intake, index its due time.
    pub(crate) fn evicted(
        self: Arc<Self>,
        engine: &Arc<crate::engine::Inner>,
        dormant: Box<Dormant>,
    ) {
        // Held while it is kept, so a migration looking for it finds it somewhere.
        let mut held = self.held.lock();
        let Some(dormant) = held.evicted(dormant) else {
            return; // A migration took it.
        };
        let stop = engine.stop.token();
        if stop.is_cancelled() {
            // A shutdown: it stays stored as running; its handles hear it was lost.
            return;
        }
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        let _ = self.dormancy.runtime.set(runtime.clone());
        let dormancy = &self.dormancy;
        let id = dormant.id;
        let mut dormant = dormant;
        if dormant.publisher.is_none() && dormant.kept.is_none() && dormant.intake.is_unreachable()
        {
            // Nothing can send to it: its intake goes too, and its due time is
            // left to the store's index (one taken from the asleep has none here).
            let asleep = Asleep {
                process: dormant.process,
                timed: dormant.due.is_some() || dormant.asleep,
                for_message: false,
                for_signal: false,
                resumed: false,
            };
            let timed = asleep.timed;
            {
                let mut kept = dormancy.asleep.lock().unwrap_or_else(|p| p.into_inner());
                dormancy.count(&asleep, 1);
                if let Some(old) = kept.insert(id, asleep) {
                    dormancy.count(&old, -1);
                }
            }
            drop(held);
            if timed {
                let due = dormant.due.map(crate::instance::durable::records::to_wall);
                let due = super::due::AsleepDue::from(due);
                self.asleep_due(engine, &runtime, &[(id, due)]);
            }
            return;
        }
        if let Some(due) = dormant.due {
            self.index_due(engine, &runtime, due, id);
        }
        let waker = std::task::Waker::from(Arc::new(Watch {
            id,
            inner: Arc::downgrade(&self),
            engine: Arc::downgrade(engine),
        }));
        // Kept before its intake is watched, so a wake finds it (and waits for the
        // lock while it is being kept).
        let mut kept = dormancy.dormant.lock().unwrap_or_else(|p| p.into_inner());
        let dormant = kept.entry(id).insert_entry(dormant).into_mut();
        let ready = {
            let mut ready = std::pin::pin!(dormant.intake.ready());
            let mut cx = std::task::Context::from_waker(&waker);
            ready.as_mut().poll(&mut cx).is_ready()
        };
        drop(kept);
        drop(held);
        if ready {
            // Something came while it was being evicted.
            let engine = Arc::clone(engine);
            runtime.spawn(async move { self.load(&engine, id).await.map(|_| ()) });
        }
    }

    /// Whether instance `id` is evicted here (or being loaded).
    pub(super) fn is_evicted(&self, id: u64) -> bool {
        let dormant = self.dormancy.dormant.lock();
        dormant.unwrap_or_else(|p| p.into_inner()).contains_key(&id) || self.asleep_or_loading(id)
    }

    /// restored (it answers a request only then); a sender on its intake if it was.
    pub(super) async fn load_evicted(
        self: &Arc<Self>,
        engine: &Arc<crate::engine::Inner>,
        id: u64,
    ) -> Option<crate::mem::intake::Intake<Input<Erased>>> {
        let intake = self.evicted_intake(engine, id).await?;
        let (reply, answer) = tokio::sync::oneshot::channel();
        let asked = intake.send(Input::Handle(Box::new(Command::OpenWork(reply))));
        (asked.is_ok() && answer.await.is_ok()).then_some(intake)
    }

    /// A sender on the intake of instance `id` if it is evicted here (loaded now
    /// if nothing could send to it: a send wakes the others) or being loaded.
    pub(super) async fn evicted_intake(
        self: &Arc<Self>,
        engine: &Arc<crate::engine::Inner>,
        id: u64,
    ) -> Option<crate::mem::intake::Intake<Input<Erased>>> {
        let asleep = {
            let asleep = self.dormancy.asleep.lock();
            asleep.unwrap_or_else(|p| p.into_inner()).contains_key(&id)
        };
        let loaded = match asleep {
            // Loaded here, on a new intake.
            true => self.load(engine, id).await,
            false => None,
        };
        let intake = loaded.or_else(|| {
            let dormant = self
                .dormancy
                .dormant
                .lock()
                .unwrap_or_else(|p| p.into_inner());
            dormant.get(&id).map(|dormant| dormant.intake.sender())
        });
        intake.or_else(|| {
            let loading = self.dormancy.loading_now.lock();
            loading.unwrap_or_else(|p| p.into_inner()).get(&id).cloned()
        })
    }

    /// Load an evicted instance from its checkpoint into a new loop on its intake
    /// (nothing if it is not evicted: loaded already).
    /// Returns a sender on its new loop's intake.
    pub(super) async fn load(
        self: &Arc<Self>,
        engine: &Arc<crate::engine::Inner>,
        id: u64,
    ) -> Option<crate::mem::intake::Intake<Input<Erased>>> {
        let dormancy = &self.dormancy;
        let dormant = {
            // Among the loading before it leaves the evicted (locks held in this
            // order): a migration looking for it finds it in one or the other.
            let mut kept = dormancy.dormant.lock().unwrap_or_else(|p| p.into_inner());
            let dormant = match kept.remove(&id) {
                Some(dormant) => dormant,
                None => {
                    let mut asleep = dormancy.asleep.lock().unwrap_or_else(|p| p.into_inner());
                    let asleep = asleep.remove(&id)?;
                    dormancy.count(&asleep, -1);
                    let (resumed, process) = (asleep.resumed, asleep.process);
                    let mut dormant = self.woken(asleep, id)?;
                    if resumed {
                        // One a resume left asleep has a handle once loaded, as if
                        // the resume had loaded it: among the resumed before it
                        // leaves the asleep's lock, so a `handle` call finds it in
                        // one or the other.
                        let (handle, publisher) = crate::instance::InstanceHandle::new(
                            crate::instance::InstanceId(id),
                            dormant.intake.sender(),
                            None,
                        );
                        dormant.publisher = Some(publisher);
                        self.resumed_handle(process, handle);
                    }
                    dormant
                }
            };
            let mut loading = dormancy
                .loading_now
                .lock()
                .unwrap_or_else(|p| p.into_inner());
            loading.insert(id, dormant.intake.sender());
            dormant
        };
        if let Some(due) = dormant.due {
            dormancy
                .due
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .remove(&(due, id));
        }
        let loading = Loading(self, id);
        let _permit = dormancy.loading.clone().acquire_owned().await;
        let store = self.store.clone();
        let record = tokio::task::spawn_blocking(move || store.instance(id)).await;
        let record = match record {
            Ok(Ok(Some(record))) if record.status == Status::Running => record,
            Ok(Ok(record)) => {
                tracing::error!(id, status = ?record.map(|r| r.status), "an evicted instance is no longer stored as running");
                return None;
            }
            Ok(Err(error)) => {
                tracing::error!(id, %error, "an evicted instance could not be read");
                return None;
            }
            Err(_) => return None,
        };
        let process = dormant.process;
        let decoded = serde_json::from_str::<Checkpoint>(&record.state)
            .map_err(|e| e.to_string())
            .and_then(|checkpoint| match checkpoint {
                Checkpoint::Running(snapshot) => {
                    let data = (dormant.codec.decode)(snapshot.data.clone())?;
                    Ok((data, Entry::Resume(Box::new(snapshot))))
                }
                // Evicted only after a step's checkpoint.
                Checkpoint::Born { .. } => Err("stored as just born".to_string()),
            });
        let (data, entry) = match decoded {
            Ok(decoded) => decoded,
            Err(error) => {
                tracing::error!(id, %error, "an evicted instance's checkpoint could not be read");
                return None;
            }
        };
        let _admitted = engine.admit()?;
        let runtime = tokio::runtime::Handle::current();
        let Dormant {
            codec,
            intake,
            kept,
            fresh,
            keep_history,
            every_task,
            publisher,
            ..
        } = *dormant;
        let mut durable = self.stored_durable(codec, record);
        durable.keep_history = keep_history;
        durable.every_task = every_task;
        // Not evicted again before what it was loaded for reaches it: a hub
        // delivery follows a store index's wake once the restore is done.
        durable.evict_after = dormancy.after().map(|after| after.max(RELOADED_REST));
        durable.kept = (!fresh).then(|| kept.unwrap_or_default());
        let publisher = publisher.unwrap_or_else(|| crate::instance::EndRef::pending().0);
        dormancy.loads.fetch_add(1, Ordering::Relaxed);
        let sender = intake.sender();
        // A live loop before it leaves the loading.
        self.loop_began(id, intake.sender());
        crate::instance::spawn_reloaded(
            engine.birth(Some(&runtime), process, None),
            process,
            data,
            entry,
            Box::new(durable),
            intake,
            publisher,
        );
        drop(loading);
        Some(sender)
    }
}

impl Inner {
    /// Take evicted instance `id` out of the dormancy (for a migration: put back
    /// with `evicted`); one nothing could send to comes on a new intake.
    pub(super) fn dormancy_take(&self, id: u64) -> Option<Box<Dormant>> {
        let dormancy = &self.dormancy;
        let mut kept = dormancy.dormant.lock().unwrap_or_else(|p| p.into_inner());
        let dormant = match kept.remove(&id) {
            Some(dormant) => dormant,
            None => {
                let mut asleep = dormancy.asleep.lock().unwrap_or_else(|p| p.into_inner());
                let asleep = asleep.remove(&id)?;
                dormancy.count(&asleep, -1);
                self.woken(asleep, id)?
            }
        };
        if let Some(due) = dormant.due {
            let mut index = dormancy.due.lock().unwrap_or_else(|p| p.into_inner());
            index.remove(&(due, id));
        }
        Some(dormant)
    }

    /// The intake of instance `id` if it is being loaded now.
    pub(super) fn dormancy_loading(
        &self,
        id: u64,
    ) -> Option<crate::mem::intake::Intake<Input<Erased>>> {
        let loading = self.dormancy.loading_now.lock();
        loading.unwrap_or_else(|p| p.into_inner()).get(&id).cloned()
    }
}

/// An instance being loaded: off `loading_now` when its load is done, however.
struct Loading<'a>(&'a Inner, u64);

impl Drop for Loading<'_> {
    fn drop(&mut self) {
        let loading = self.0.dormancy.loading_now.lock();
        loading.unwrap_or_else(|p| p.into_inner()).remove(&self.1);
    }
}
