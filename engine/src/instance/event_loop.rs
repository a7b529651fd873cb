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
use tracing::{error, warn, Instrument};

use super::core::{Instance, INLINE_BUDGET};
use super::ending::Publisher;
use super::history::Happening;
use super::input::{Command, Input, Report};
use super::leaving::{leaving, Leaving};
use super::outcome::panic_message;
use super::outcome::{Ended, Finished, InstanceError};
use super::state::ids::ROOT;
use crate::data::Erased;
use crate::data::ProcessData;
use crate::graph::{NodeIdx, NodeKind};
use crate::mem::intake::IntakeReceiver;

/// A loop about to run: its instance, intake, first step (`None`: it ran
/// already) and where its end goes.
pub(super) struct Run {
    pub instance: Instance<Erased>,
    pub intake: IntakeReceiver<Input<Erased>>,
    pub entry: Option<Entry>,
    pub stop: CancellationToken,
    pub publisher: Publisher,
    /// An evicted instance loaded again: a cancel queued for it is an input like
    /// any other (it was past its first step long ago). Only where instances are
    /// evicted: the loop's future is most of a parked instance's memory.
    #[cfg(feature = "durable")]
    pub reloaded: bool,
}

/// Spawn a loop on `runtime` (`None`: the current one).
pub(super) fn launch(
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
