//! The instance loop: one task per instance, the single writer of all its state.
//!
//! The loop owns the instance's [`state`](super::state) — tracks and their positions,
//! joins' arrivals, scopes, what is armed, timers, conditional events, the process
//! data and the history. Tracks run activities and report back on the intake; the
//! loop commits their data and moves their tokens across flows and gateways itself.
//! Its invariants (ARCHITECTURE.md, "The instance loop"):
//!
//! 1. **Single writer.** Only the loop reads or changes instance state; tracks,
//!    handles and the hub talk to it by sending on its intake. No lock guards any of it.
//! 2. **Positions from reports.** The loop's view of where tokens are is built only
//!    from what it did and what tracks reported; a report about work the loop already
//!    dropped is ignored.
//! 3. **Channel-parked tracks.** A waiting track blocks on its own one-slot channel, of
//!    which the loop is the only sender and closer; producers never touch a track.
//! 4. **Park before register.** A wait is recorded as armed before any subscription
//!    that could resolve it exists.
//! 5. **Flip on dispatch.** The first delivery that matches an armed entry takes the
//!    whole entry out; later ones find nothing and are dropped (deferred choice).
//! 6. **One step, one view.** A token's move through gateways is one uninterrupted
//!    step: every token a step produces is placed before any inclusive or complex
//!    join is checked, so a token in transit defers the join.
//! 7. **Stop before user code.** A stop or a cancel queued before the instance's
//!    first step ends it cancelled without running any; later, the loop looks at both
//!    before each input it takes. (`Engine::start` runs the first step before any
//!    handle exists, so only a stop can precede it: [`Birth::inline_first_step`].)
//! 8. **Failure is a value.** A handler's error or panic, a broken internal invariant
//!    (`InstanceError::Internal`, naming what broke): each ends the instance with an
//!    outcome; the loop itself never panics on them.

use std::panic::AssertUnwindSafe;

use tokio_util::sync::CancellationToken;
use tracing::{error, info_span, warn, Instrument};

use super::core::{Instance, INLINE_BUDGET};
use super::ending::Publisher;
use super::handle::InstanceHandle;
use super::history::Happening;
use super::input::{Command, Input, Report};
use super::leaving::{leaving, Leaving};
use super::outcome::panic_message;
use super::outcome::{Ended, Finished, InstanceError, InstanceId};
use super::state::ids::ROOT;
use crate::data::Erased;
use crate::data::ProcessData;
use crate::events::Hub;
use crate::graph::{Graph, NodeIdx, NodeKind};
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

/// A loop about to run: its instance, intake, first step (`None`: it ran
/// already) and where its end goes.
struct Run {
    instance: Instance<Erased>,
    intake: IntakeReceiver<Input<Erased>>,
    entry: Option<Entry>,
    stop: CancellationToken,
    publisher: Publisher,
    /// An evicted instance loaded again: a cancel queued for it is an input like
    /// any other (it was past its first step long ago). Only where instances are
    /// evicted: the loop's future is most of a parked instance's memory.
    #[cfg(feature = "durable")]
    reloaded: bool,
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

/// Spawn a loop on `runtime` (`None`: the current one).
fn launch(
    run: Run,
    span: tracing::Span,
    runtime: Option<&tokio::runtime::Handle>,
    tracker: &tokio_util::task::TaskTracker,
) {
    let Run {
        instance,
        intake,
        entry,
        stop,
        publisher: finished_tx,
        #[cfg(feature = "durable")]
        reloaded,
    } = run;
    #[cfg(not(feature = "durable"))]
    let reloaded = false;
    let process_name = instance.process.name;
    // The loop. Written out here rather than as an `async fn` taking the instance:
    // an async fn's state holds each argument twice (as passed and as moved into its
    // local), and this future is most of a parked instance's memory.
    let mut instance = instance;
    let mut intake = intake;
    // Boxed: the future keeps its captures for its whole life, and the entry is
    // needed only for the first step (`None`: it ran already).
    let entry = entry.map(Box::new);
    let body = async move {
        // Stop and cancel are honoured before any user code runs: an instance born
        // into a shut-down engine, or cancelled through its handle before its loop
        // first ran, ends `Cancelled` without its first step.
        let cancelled = |input: &Input<Erased>| matches!(input, Input::Handle(c) if matches!(**c, Command::Cancel(_)));
        let stopped = stop.is_cancelled();
        // Bound in the `if let`, so the entry's box is freed after the first step,
        // not when the loop ends.
        if let Some(entry) = entry {
            if stopped || (!reloaded && intake.any_queued(cancelled)) {
                // A durable instance a shutdown stops stays stored as running.
                #[cfg(feature = "durable")]
                if let (true, Some(durable)) = (stopped, &mut instance.durable) {
                    durable.suspended = true;
                }
                instance.cancel_at_birth(&entry);
            } else {
                instance.start(*entry);
            }
        }
        #[cfg(feature = "durable")]
        instance.checkpoint();
        instance.list_at_rest();
        let _evict = instance.serve(&mut intake, &stop).await;
        #[cfg(feature = "durable")]
        if _evict {
            let engine = instance.engine.clone();
            return match instance.evict(intake).await {
                Some(dormant) => Left::Evicted(dormant, engine),
                None => Left::Lost,
            };
        }
        // Every track is stopped and awaited before the outcome is published, so an
        // ended instance leaves no task behind.
        instance.workers.shutdown().await;
        // A durable instance's end is stored before its handles see it.
        #[cfg(feature = "durable")]
        instance.store_end().await;
        instance.unlist();
        Left::Finished(leaving!(instance).finish(Some(intake)))
    };
    // A panic in the loop (the data type's `Clone`, `diff` or `merge`, or a bug in
    // thresh) drops the instance, its tracks aborted, and leaves an end saying so.
    // A future of its own rather than an `async` block around the body: that would
    // hold the body twice (as captured and as pinned), the most of a parked
    // instance's memory.
    let body = Publishing {
        body,
        publisher: Some(finished_tx),
        born: loop_born(process_name),
    };
    let body = body.instrument(span);
    match runtime {
        Some(runtime) => tracker.spawn_on(body, runtime),
        None => tracker.spawn(body),
    };
}

/// What the loop's select waits on to evict an instance idle for `idle`: the timer
/// boxed, made on the first poll (a timer entry is large, and the loop's future is
/// most of a parked instance's memory); nothing at all where instances are not
/// evicted.
#[cfg(feature = "durable")]
async fn idle_timer(idle: Option<std::time::Duration>) {
    match idle {
        Some(idle) => Box::pin(tokio::time::sleep(idle)).await,
        None => std::future::pending().await,
    }
}

#[cfg(not(feature = "durable"))]
fn idle_timer(_: Option<std::time::Duration>) -> std::future::Pending<()> {
    std::future::pending()
}

/// How a loop left: its instance ended, or (a durable one) was evicted.
pub(crate) enum Left {
    Finished(Finished<Erased>),
    /// Evicted: kept by its engine until something for it arrives.
    #[cfg(feature = "durable")]
    Evicted(
        Box<super::durable::evict::Dormant>,
        Option<super::engine_link::EngineRef>,
    ),
    /// Leaves no end (only for what cannot happen: an evicted instance that was not
    /// durable): its handles hear `InstanceError::Lost`.
    #[cfg(feature = "durable")]
    Lost,
}

/// Where an instance begins.
pub(crate) enum Entry {
    /// At the none start event (`Engine::start`).
    NoneStart,
    /// At a start event (or an instantiating gateway's arm) whose trigger came, with
    /// what it brought; `also`: other arms to wait on (a parallel instantiating gate).
    Event {
        start: NodeIdx,
        payload: Option<crate::graph::Payload>,
        also: Vec<NodeIdx>,
    },
    /// Where a checkpoint left it (a durable instance after a restart).
    #[cfg(feature = "durable")]
    Resume(Box<super::durable::records::Snapshot>),
}

impl<D: ProcessData> Instance<D> {
    /// Take inputs until the instance has its outcome; `true` when it is to be
    /// evicted instead (durable, at rest, stored, idle: `evict.rs`).
    async fn serve(
        &mut self,
        intake: &mut crate::mem::intake::IntakeReceiver<Input<D>>,
        stop: &CancellationToken,
    ) -> bool {
        let cancelled = stop.cancelled();
        tokio::pin!(cancelled);
        while self.outcome.is_none() {
            let idle = self.evictable();
            tokio::select! {
                biased;
                _ = &mut cancelled => {
                    // A durable instance stopped by a shutdown stays stored as
                    // running: it resumes at the next start.
                    #[cfg(feature = "durable")]
                    if let Some(durable) = &mut self.durable {
                        durable.suspended = true;
                    }
                    self.stop_all(Ended::Cancelled)
                }
                // The loop holds a sender itself, so the intake never closes.
                Some(input) = intake.recv() => self.on_input(input),
                _ = self.timers.expired(), if self.timers.is_armed() => {
                    self.inline_budget = INLINE_BUDGET;
                    self.on_timers();
                }
                // Lazy: no timer is made unless the branch is polled.
                _ = idle_timer(idle), if idle.is_some() => {
                    return true;
                }
            }
            // Reap the tasks of tracks that ended (panics are caught in the track).
            while self.workers.try_join_next().is_some() {}
            #[cfg(feature = "durable")]
            self.checkpoint();
            self.list_at_rest();
        }
        false
    }

    /// Never: only durable instances are evicted.
    #[cfg(not(feature = "durable"))]
    fn evictable(&self) -> Option<std::time::Duration> {
        None
    }

    pub(crate) fn on_input(&mut self, input: Input<D>) {
        self.inline_budget = INLINE_BUDGET;
        match input {
            Input::Track(report) => self.on_report(*report),
            Input::Handle(command) => self.on_command(*command),
            Input::Event(delivery) => self.on_event(*delivery),
            #[cfg(feature = "durable")]
            Input::CheckpointFailed(error) => self.checkpoint_failed(*error),
            #[cfg(feature = "durable")]
            Input::Checkpointed(starts) => self.start_deferred(starts),
            #[cfg(feature = "durable")]
            Input::Stored(seq) => self.checkpoint_stored(seq),
            #[cfg(feature = "durable")]
            Input::Wake => {}
        }
    }

    pub(crate) fn start(&mut self, entry: Entry) {
        match entry {
            #[cfg(feature = "durable")]
            Entry::Resume(snapshot) => self.resume_from(*snapshot),
            Entry::NoneStart => {
                let Some(start) = self.process.none_start() else {
                    return self.fail(InstanceError::NoNoneStart);
                };
                if !self.open_process_scope() {
                    return;
                }
                let track = self.new_track(start, ROOT);
                self.record(track, start, Happening::Started);
                self.step(|this, moves| this.split(track, start, moves));
            }
            Entry::Event {
                start,
                payload,
                also,
            } => {
                // Started by its trigger: the payload is mapped here, in the loop (no
                // track has a task yet), so the other arms of a parallel instantiating
                // gate subscribe with keys over the data it brought.
                let track = self.new_track(start, ROOT);
                self.record(track, start, Happening::Started);
                let id = self.process.nodes[start].id;
                let base = self.data.snapshot();
                let mut edited = self.data.copy_of(&base);
                if let Some(apply) = self.apply_for(start, payload) {
                    match std::panic::catch_unwind(AssertUnwindSafe(|| apply(&mut edited))) {
                        Ok(Ok(())) => {}
                        Ok(Err(error)) => {
                            let message = error.to_string();
                            self.record(
                                track,
                                start,
                                Happening::Failed {
                                    message: message.clone(),
                                },
                            );
                            return self.fail(InstanceError::TaskFailed { node: id, message });
                        }
                        Err(panic) => {
                            return self.task_panicked(track, start, panic_message(panic))
                        }
                    }
                }
                let changed = self.data.commit(base, edited).step_names();
                // A receive task (an instantiating gate's arm) completes; an event catches.
                let what = match self.process.nodes[start].kind {
                    NodeKind::Receive(_) => Happening::Completed { changed },
                    _ => Happening::Caught { changed },
                };
                self.record(track, start, what);
                // Armed over the data the trigger brought (a message event
                // sub-process's key is usually in it).
                if !self.open_process_scope() {
                    return;
                }
                for arm in also {
                    let other = self.new_track(arm, ROOT);
                    self.record(other, arm, Happening::Spawned { from: track });
                    self.park(other, arm, &[arm]);
                }
                self.step(|this, moves| this.split(track, start, moves));
            }
        }
    }

    /// The instance is cancelled before its first step: its token is recorded at the
    /// start it was to leave from, and cancelled there — no payload applied, no
    /// handler run, no event sub-process armed.
    pub(crate) fn cancel_at_birth(&mut self, entry: &Entry) {
        let start = match entry {
            Entry::NoneStart => self.process.none_start(),
            Entry::Event { start, .. } => Some(*start),
            #[cfg(feature = "durable")]
            Entry::Resume(_) => None,
        };
        if let Some(start) = start {
            let track = self.new_track(start, ROOT);
            self.record(track, start, Happening::Started);
        }
        self.stop_all(Ended::Cancelled);
    }

    /// Open the process's own scope: its event sub-processes are armed before the
    /// first token moves on (one whose condition holds already runs at once).
    /// Returns whether the start goes on — not if an interrupting event sub-process
    /// took the scope over right away.
    pub(crate) fn open_process_scope(&mut self) -> bool {
        self.open_scope(None, None, None);
        self.fire_due();
        self.outcome.is_none() && !self.scopes.is_interrupted(ROOT)
    }

    pub(crate) fn on_report(&mut self, report: Report<D>) {
        match report {
            Report::TaskDone {
                track,
                node,
                base,
                edited,
                result,
            } => {
                // A report from work the loop already dropped (its track stopped,
                // its activity interrupted) is ignored.
                if self.working_at(track, node) {
                    self.step(|this, moves| {
                        this.task_done(track, node, base, edited, result, moves)
                    });
                }
            }
            Report::Child { track, node, note } => self.child_told(track, node, note),
            Report::TimedOut { track, node } => {
                if self.working_at(track, node) {
                    self.task_timed_out(track, node);
                }
            }
            Report::DataPanicked { track, node, error } => {
                if self.working_at(track, node) {
                    error!(%error, "instance stopped");
                    self.fail(error);
                }
            }
            Report::TaskPanicked {
                track,
                node,
                message,
            } => {
                // Like a late `TaskDone`: a panic from work the loop already dropped
                // (its activity was interrupted, its scope cancelled) is no failure.
                if self.working_at(track, node) {
                    self.task_panicked(track, node, message);
                }
            }
        }
    }

    /// End the instance with `outcome`, stopping every live track.
    pub(crate) fn stop_all(&mut self, outcome: Ended) {
        if self.outcome.is_some() {
            return;
        }
        for slot in self.tracks.take_all() {
            self.history.push(
                slot.id,
                self.process.nodes[slot.at].id,
                Happening::Cancelled,
            );
        }
        self.disarm_all();
        if !self.retries.is_empty() {
            self.close_incidents();
        }
        // Dropping the slots closed every park channel: parked tracks wake and end.
        self.workers.abort_all();
        self.outcome = Some(outcome);
    }

    pub(crate) fn fail(&mut self, error: InstanceError) {
        warn!(%error, "instance failed");
        self.stop_all(Ended::failed(error));
    }

    /// An invariant of the loop broke while it handled `node`: the instance fails
    /// with [`InstanceError::Internal`] naming both (the loop never panics on one).
    pub(crate) fn internal(&mut self, node: NodeIdx, what: &'static str) {
        let node = self.process.nodes[node].id;
        self.fail(InstanceError::Internal { node, what });
    }
}

pin_project_lite::pin_project! {
    /// An instance's loop, publishing its end when it returns one, or a broken end
    /// (`End::Broken`) when it panics.
    struct Publishing<F> {
        #[pin]
        body: F,
        publisher: Option<Publisher>,
        // Its process and about when its loop began (feature `metrics`): a loop that
        // panics is counted as failed here, since it never reaches `Leaving::finish`.
        born: LoopBorn,
    }
}

#[cfg(feature = "metrics")]
type LoopBorn = (&'static str, std::time::Instant);
#[cfg(not(feature = "metrics"))]
type LoopBorn = ();

#[cfg(feature = "metrics")]
fn loop_born(process: &'static str) -> LoopBorn {
    (process, std::time::Instant::now())
}
#[cfg(not(feature = "metrics"))]
fn loop_born(_: &'static str) -> LoopBorn {}

impl<F: std::future::Future<Output = Left>> std::future::Future for Publishing<F> {
    type Output = ();

    fn poll(
        self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<()> {
        let this = self.project();
        let polled = std::panic::catch_unwind(AssertUnwindSafe(|| this.body.poll(cx)));
        let end = match polled {
            Ok(std::task::Poll::Pending) => return std::task::Poll::Pending,
            Ok(std::task::Poll::Ready(Left::Finished(finished))) => Ok(finished),
            #[cfg(feature = "durable")]
            Ok(std::task::Poll::Ready(Left::Evicted(mut dormant, engine))) => {
                // Its end is published by the loop that loads it again — kept only
                // for handles that wait for it.
                dormant.publisher = this.publisher.take().filter(|p| !p.is_alone());
                if let Some(engine) = engine {
                    engine.evicted(dormant);
                }
                return std::task::Poll::Ready(());
            }
            #[cfg(feature = "durable")]
            Ok(std::task::Poll::Ready(Left::Lost)) => {
                this.publisher.take();
                return std::task::Poll::Ready(());
            }
            Err(panic) => Err(InstanceError::of_loop_panic(panic)),
        };
        // Polled again after its end only by a bug in the runtime: nothing to publish.
        if let Some(publisher) = this.publisher.take() {
            match end {
                Ok(finished) => publisher.publish(finished),
                Err(error) => {
                    error!(%error, "instance stopped");
                    #[cfg(feature = "metrics")]
                    crate::metrics::instance_ended(this.born.0, "failed", this.born.1);
                    #[cfg(not(feature = "metrics"))]
                    let _ = this.born;
                    publisher.publish_broken(error);
                }
            }
        }
        std::task::Poll::Ready(())
    }
}
