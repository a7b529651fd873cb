//! # thresh
//!
//! BPMN 2.0 processes written inline in Rust with [`process!`], checked at compile
//! time, and run on tokio.
//!
//! The runtime keeps its roles apart:
//! - [`graph`] — the static process graph that `process!` emits;
//! - [`Engine`] — the public API: start and deploy processes, publish messages,
//!   broadcast signals, shut down;
//! - `instance` — one loop per instance, the single writer of its tracks, joins,
//!   positions, scopes (the process, running sub-processes and event
//!   sub-processes), waits, timers, data and history; tracks are tokio tasks that
//!   run activities and park on their own channel while they wait;
//! - [`events`] — the engine-wide hub (signal index, message broker) and timers;
//! - [`data`] — process data, field-level change detection and commits;
//! - `store` (feature `durable`; SQLite with feature `sqlite`) — the storage layer
//!   durable engines write through: records, the `Store` trait, the group-commit writer.
//!
//! See the README for the DSL by example.
#![warn(missing_docs)]

#[doc(hidden)]
pub mod call;
pub mod data;
pub mod diagram;
mod engine;
pub mod events;
pub mod graph;
mod instance;
#[cfg(feature = "durable")]
pub mod store;
pub mod task;
#[cfg(feature = "testing")]
pub mod testing;

pub use data::{ApplyOutcome, ChangedFields, ProcessData, TaskError};
#[cfg(feature = "postgres")]
pub use engine::durable::NodeConfig;
#[cfg(feature = "durable")]
pub use engine::durable::{
    Checkpoints, DurableEngine, DurableError, ResumeReport, SkipReason, Skipped, Watched,
    WatchedOutcome,
};
pub use engine::{DeployError, Deployment, DeploymentId, Engine, EngineConfig, ShutdownError};
pub use events::{BrokerConfig, BrokerStats, Published, TimerSpec};
pub use graph::Process;
pub use instance::{
    Happening, History, InstanceError, InstanceHandle, InstanceId, OpenWork, Outcome, Step,
    TrackId, WorkError,
};
/// Declare a process. See the crate README for the DSL.
pub use thresh_macros::process;
/// Derive [`ProcessData`] for a struct with named or tuple fields; every field must be
/// `Clone + PartialEq`.
pub use thresh_macros::ProcessData;

/// The README's examples, compiled and run as doc tests.
#[cfg(doctest)]
#[doc = include_str!("../../README.md")]
struct ReadmeDoctests;

/// Items the expansion of `process!` uses. Not public API.
#[doc(hidden)]
pub mod __private {
    pub use crate::call::{call_child, Caller, ChildCall};
    pub use crate::graph::CallActivity;
    pub use crate::graph::{
        Activation, ApplyFailure, Flow, Node, NodeKind, Payload, TaskRun, Throw, Trigger,
    };

    /// Call a task handler on the task's copy. The bounds give a closure its
    /// parameter type and pin its output, so neither `|order| ...` nor `Ok(())` in it
    /// needs an annotation.
    pub fn call_task<'a, D, F, Fut>(handler: F, data: &'a mut D) -> Fut
    where
        F: FnOnce(&'a mut D) -> Fut,
        Fut: std::future::Future<Output = Result<(), crate::TaskError>> + Send + 'a,
    {
        handler(data)
    }

    /// Box one run of a task: the returned future owns the copy and gives it back.
    pub fn task_run<D, Fut>(run: Fut) -> TaskRun<D>
    where
        Fut: std::future::Future<Output = (D, Result<(), crate::TaskError>)> + Send + 'static,
    {
        Box::pin(run)
    }

    /// Call a message's correlation-key closure; any `ToString` key will do.
    pub fn call_key<D, K: ToString, F: FnOnce(&D) -> K>(key: F, data: &D) -> String {
        key(data).to_string()
    }

    /// Map a caught payload into the data with the catch's `apply` closure, whose
    /// payload parameter names the type it expects and which returns `()` or
    /// `Result<(), TaskError>` ([`ApplyOutcome`](crate::data::ApplyOutcome)).
    /// `Err` with that type's name when the payload is of another type.
    pub fn call_apply<D, P: std::any::Any, R, F>(
        apply: F,
        data: &mut D,
        payload: &Payload,
    ) -> Result<(), crate::graph::ApplyFailure>
    where
        R: crate::data::ApplyOutcome,
        F: FnOnce(&mut D, &P) -> R,
    {
        match (**payload).downcast_ref::<P>() {
            Some(payload) => apply(data, payload)
                .into_result()
                .map_err(crate::graph::ApplyFailure::Raised),
            None => Err(crate::graph::ApplyFailure::WrongPayload(
                std::any::type_name::<P>(),
            )),
        }
    }

    /// Make a throw's payload from the data.
    pub fn call_payload<D, P: std::any::Any + Send + Sync, F: FnOnce(&D) -> P>(
        payload: F,
        data: &D,
    ) -> Payload {
        std::sync::Arc::new(payload(data))
    }

    /// Call a flow condition; the bound gives a closure its parameter type.
    pub fn call_condition<D, F: FnOnce(&D) -> bool>(condition: F, data: &D) -> bool {
        condition(data)
    }
}
