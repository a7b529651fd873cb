//! How an instance's loop begins: [`Birth`] (where it lives — runtime, tracker,
//! hub, stop token, engine), [`spawn`] (a new instance: its state made, its first
//! step run inline or on its loop) and [`spawn_reloaded`] (an evicted instance
//! loaded again onto the intake it kept). The loop itself is `event_loop.rs`.

use std::panic::AssertUnwindSafe;

use tracing::{error, info_span};

use super::core::Instance;
#[cfg(feature = "durable")]
use super::ending::Publisher;
use super::event_loop::{launch, Entry, Run};
use super::handle::InstanceHandle;
#[cfg(feature = "durable")]
use super::input::Input;
use super::leaving::{leaving, Leaving};
use super::outcome::{InstanceError, InstanceId};
use crate::data::Erased;
use crate::events::Hub;
use crate::graph::Graph;
use crate::mem::intake::{Intake, IntakeReceiver};

/// Start an instance's loop on `runtime` and return its handle.
/// Where a new instance lives: the runtime, the engine's task tracker and hub, and
/// the stop token it watches.
pub(crate) struct Birth<'a> {
    /// The engine, for the children of call activities.
    pub engine: super::engine_link::EngineRef,
    /// The calling instance, when this one is a call activity's child.
    pub parent: Option<super::call_link::ParentLink>,
    /// `None`: the current runtime (the caller runs in one of its tasks).
    pub runtime: Option<&'a tokio::runtime::Handle>,
    pub tracker: &'a tokio_util::task::TaskTracker,
    pub hub: std::sync::Arc<Hub>,
    pub stop: &'a crate::engine::Stop,
    /// Whether the instance records its history.
    pub history: bool,
    /// Run the first step on the caller, before the handle is returned (an
    /// in-memory instance started by `Engine::start`): an instance whose work is
    /// ready ends there, with no task spawned; one that must wait gets its loop then.
    /// No cancel can come before that step, as no handle exists yet; a stop that
    /// came first is honoured as at any birth.
    pub inline_first_step: bool,
    /// The keys of an in-memory instance: `Engine::start_keyed`'s business key, a
    /// keyed message start's correlation key.
    pub keys: crate::query::memory::Keys,
    /// The engine's replaced task handlers for this process, if a test installed
    /// any (feature `testing`): a `testing::HandlerTable<D>`, erased.
    #[cfg(feature = "testing")]
    pub overrides: Option<std::sync::Arc<dyn std::any::Any + Send + Sync>>,
}

/// Spawn an instance's loop. Over erased data, so this and all the loop's code is
/// compiled once, whatever the processes' data types.
pub(crate) fn spawn(
    birth: Birth<'_>,
    process: &'static Graph<Erased>,
    id: InstanceId,
    data: Erased,
    entry: Entry,
    #[cfg(feature = "durable")] durable: Option<Box<super::durable::Durable<Erased>>>,
) -> InstanceHandle<Erased> {
    let Birth {
        engine,
        parent,
        runtime,
        tracker,
        hub,
        stop,
        history,
        inline_first_step,
        keys,
        #[cfg(feature = "testing")]
        overrides,
    } = birth;
    let span = info_span!("instance", process = process.name, id = id.0);
    let inline = inline_first_step && !stop.is_stopping();
    // The intake's queue is made on first need (a track task, a mailbox, a child,
    // the handle of an instance that goes on): none for one that ends here.
    let mut instance = Instance::new(id, process, data, history, Intake::none(), hub);
    #[cfg(feature = "metrics")]
    {
        #[cfg(feature = "durable")]
        let resumed = matches!(entry, Entry::Resume(_));
        #[cfg(not(feature = "durable"))]
        let resumed = false;
        crate::metrics::instance_started(process.name, resumed);
    }
    instance.engine = Some(engine);
    if !keys.is_empty() {
        instance.list_keyed(keys);
    }
    let parent_id = parent.as_ref().map(|link| link.parent);
    instance.parent = parent.map(Box::new);
    #[cfg(feature = "durable")]
    {
        instance.durable = durable;
    }
    #[cfg(feature = "testing")]
    {
        instance.overrides = overrides.and_then(|table| table.downcast().ok());
    }
    // The first step here, on the caller (`Birth::inline_first_step`), before the
    // handle exists.
    let entry = match entry {
        entry if inline => {
            // Recorded into the thread's scratch history, copied out once after
            // (into the end's block if it ends here with a short history:
            // `EndRef::packed`), on the thread's track slots (and its joins' box,
            // taken on the first arrival), given back if it ends here.
            instance.history.lend_scratch();
            instance.tracks.lend_scratch();
            let started = std::panic::catch_unwind(AssertUnwindSafe(|| {
                span.in_scope(|| instance.start(entry))
            }));
            if let Err(panic) = started {
                // The data type's code panicked (or thresh did): the instance stops
                // here, its tracks aborted as it drops; the handle says why.
                let error = InstanceError::of_loop_panic(panic);
                span.in_scope(|| error!(%error, "instance stopped"));
                return InstanceHandle::broken_at_birth(id, error);
            }
            let ended = instance.outcome.is_some() && instance.workers.is_empty();
            let packed = ended && instance.history.fits_packed();
            if !packed {
                instance.history.return_scratch();
            }
            instance.tracks.return_scratch(ended);
            instance.joins.return_scratch(ended);
            if ended {
                // Ended in its first step with nothing left running: no loop. The
                // handle's commands are answered "ended" (an intake never made has
                // nothing queued; a made one is closed and drained here).
                let commands = instance.intake_tx.clone();
                let intake = commands
                    .is_made()
                    .then(|| IntakeReceiver::of(&mut instance.intake_tx));
                // Entered rather than `in_scope(move || ..)`: the instance's parts
                // move out once, into `finish`, not through a closure.
                let _entered = span.enter();
                instance.unlist();
                let finished = leaving!(instance).finish(intake);
                return InstanceHandle::ended_early(id, commands, parent_id, finished, packed);
            }
            instance.list_at_rest();
            None
        }
        entry => {
            instance.tracks.make_room_for_first();
            Some(entry)
        }
    };
    let stop = stop.token().clone();
    let intake = IntakeReceiver::of(&mut instance.intake_tx);
    let (handle, finished_tx) = InstanceHandle::new(id, instance.intake_tx.clone(), parent_id);
    let run = Run {
        instance,
        intake,
        entry,
        stop,
        publisher: finished_tx,
        #[cfg(feature = "durable")]
        reloaded: false,
    };
    launch(run, span, runtime, tracker);
    handle
}

/// Load an evicted instance again from its checkpoint (`entry`, a resume) into a
/// new loop on its old intake, publishing its end where its handles wait for it;
/// it takes up the hub subscriptions it kept (`durable.kept`).
#[cfg(feature = "durable")]
pub(crate) fn spawn_reloaded(
    birth: Birth<'_>,
    process: &'static Graph<Erased>,
    data: Erased,
    entry: Entry,
    durable: Box<super::durable::Durable<Erased>>,
    intake: IntakeReceiver<Input<Erased>>,
    publisher: Publisher,
) {
    let id = InstanceId(durable.id);
    let span = info_span!("instance", process = process.name, id = id.0);
    let mut instance = Instance::new(id, process, data, birth.history, intake.sender(), birth.hub);
    #[cfg(feature = "metrics")]
    crate::metrics::instance_loaded(process.name);
    instance.engine = Some(birth.engine);
    instance.durable = Some(durable);
    #[cfg(feature = "testing")]
    {
        instance.overrides = birth.overrides.and_then(|table| table.downcast().ok());
    }
    instance.tracks.make_room_for_first();
    let run = Run {
        instance,
        intake,
        entry: Some(entry),
        stop: birth.stop.token().clone(),
        publisher,
        #[cfg(feature = "durable")]
        reloaded: true,
    };
    launch(run, span, birth.runtime, birth.tracker);
}
