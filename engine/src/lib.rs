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
//!
//! Cargo features: `durable` (the storage layer, `DurableEngine` on any `Store`),
//! `sqlite` (the SQLite store, implies `durable`), `postgres` (the PostgreSQL store and
//! several engine nodes on one database, implies `durable`) and `testing` (the test
//! kit, for dev-dependencies). None is on by default; an item that needs one says so.
#![warn(missing_docs)]
// Every unsafe block is in `mem`, under its contracts (see its module doc).
#![deny(unsafe_code, unsafe_op_in_unsafe_fn)]
#![deny(clippy::undocumented_unsafe_blocks)]
#![cfg_attr(docsrs, feature(doc_cfg))]

#[doc(hidden)]
pub mod call;
#[cfg(feature = "console")]
#[cfg_attr(docsrs, doc(cfg(feature = "console")))]
pub mod console;
pub mod data;
pub mod diagram;
mod engine;
pub mod events;
pub mod graph;
mod instance;
pub mod loops;
#[allow(unsafe_code)]
mod mem;
#[cfg(feature = "metrics")]
mod metrics;
mod migration;
pub mod query;
pub mod refs;
pub mod retry;
#[cfg(feature = "durable")]
#[cfg_attr(docsrs, doc(cfg(feature = "durable")))]
pub mod store;
pub mod task;
pub mod tasklist;
#[cfg(feature = "testing")]
#[cfg_attr(docsrs, doc(cfg(feature = "testing")))]
pub mod testing;

pub use data::{ApplyOutcome, ChangedFields, ProcessData, TaskError};
#[cfg(feature = "postgres")]
pub use engine::durable::NodeConfig;
#[cfg(feature = "durable")]
pub use engine::durable::{
    Checkpoints, DurableEngine, MigrationReport, ResumeReport, SkipReason, Skipped, Watched,
    WatchedOutcome, DEFAULT_EVICT_AFTER, MIGRATION_REST,
};
/// Bounds no type meets, on the stand-ins of entry points whose cargo feature is off
/// (`Engine::open` without `sqlite`, `Engine::connect` without `postgres`): the
/// compiler's error names the feature.
#[doc(hidden)]
pub use engine::feature_off::{NeedsPostgres, NeedsSqlite};
pub use engine::{
    CancelError, DeployError, Deployment, DeploymentId, Engine, EngineConfig, EngineError,
    ShutdownError,
};
pub use events::{BrokerConfig, BrokerStats, BufferedMessage, IntoTimer, Published, TimerSpec};
pub use graph::Process;
pub use instance::{
    Happening, History, InstanceError, InstanceHandle, InstanceId, OpenWork, Outcome, Step,
    TrackId, WorkError,
};
pub use migration::{Migration, SameData};
pub use query::{DueTimer, Element, InstanceSummary, Page, Query, QueryError, SortBy, Status};
pub use retry::{Incident, IncidentId, OnFailure, RetryError, RetryPolicy};
pub use tasklist::{IntoAssignee, Task, TaskId, TaskListError, TaskOrder, TaskQuery};
/// A migration plan between two versions of a process, checked when it compiles:
/// see [`Migration`].
pub use thresh_macros::migrate;
/// Declare a process. See the crate README for the DSL.
pub use thresh_macros::process;
/// Derive [`ProcessData`] for a struct with named or tuple fields; every field must be
/// `Clone + PartialEq`.
pub use thresh_macros::ProcessData;
#[doc(hidden)]
pub use thresh_macros::{__migrate_check, __migrate_next};

/// The README's examples, compiled and run as doc tests.
#[cfg(doctest)]
#[doc = include_str!("../../README.md")]
struct ReadmeDoctests;

/// Items the expansion of `process!` uses. Not public API.
#[doc(hidden)]
pub mod __private {
    pub use crate::call::{call_child, call_child_item, child_output_type, Caller, ChildCall};

    /// A call activity's parent-only `input`, its parameter typed (for a
    /// multi-instance call, which wraps it to take the item too).
    pub fn parent_input<D, C, F: FnOnce(&D) -> C>(input: F) -> F {
        input
    }
    pub use crate::data::Erased;
    pub use crate::graph::{
        Activation, ApplyFailure, Flow, Next, Node, NodeKind, Payload, TaskRun, Throw, TimerDef,
        Trigger,
    };
    pub use crate::graph::{CallActivity, Graph};
    pub use crate::retry::TaskPolicy;
    pub use crate::tasklist::Assigned;

    /// A user task's candidate groups read off the data: any collection of names.
    pub fn task_groups<S: Into<String>>(groups: impl IntoIterator<Item = S>) -> Vec<String> {
        groups.into_iter().map(Into::into).collect()
    }

    /// A user task's priority (its type pins a closure's integer literals).
    pub fn task_priority(priority: i32) -> i32 {
        priority
    }

    /// Box one run of a task, made by `make`: the returned future owns the copy and
    /// gives it back. The box is the thread's spare one when it fits
    /// (`mem/run_box.rs`), and the future is made in it.
    #[inline(always)]
    pub fn task_run<D, Fut>(make: impl FnOnce() -> Fut) -> TaskRun<D>
    where
        Fut: std::future::Future<Output = (D, Result<(), crate::TaskError>)> + Send + 'static,
    {
        crate::mem::run_box::boxed(make)
    }

    /// A derived `ProcessData::clone_fields_from`'s copy of one field: the field's
    /// `Clone::clone_from` when its type is `Clone`, else nothing (`false`: the
    /// derive then clones the whole value), chosen at compile time by method
    /// resolution as `decode`'s: the `Clone` kind is on `Probe<T>`, the fallback on
    /// `&Probe<T>`, and the expansion calls `(&probe(&field)).kind().copy(..)`.
    pub mod copy {
        use std::marker::PhantomData;

        /// Names a field's type `T`.
        pub struct Probe<T>(PhantomData<T>);

        /// The probe of `field`'s type.
        #[inline(always)]
        pub fn probe<T>(_field: &T) -> Probe<T> {
            Probe(PhantomData)
        }

        /// A field copied by its `Clone::clone_from`.
        pub struct ByClone;

        /// A field that is not `Clone`: the whole value is cloned.
        pub struct Whole;

        pub trait CloneKind {
            #[inline(always)]
            fn kind(&self) -> ByClone {
                ByClone
            }
        }
        impl<T: Clone> CloneKind for Probe<T> {}

        pub trait WholeKind {
            #[inline(always)]
            fn kind(&self) -> Whole {
                Whole
            }
        }
        impl<T> WholeKind for &Probe<T> {}

        impl ByClone {
            /// `to` made a copy of `from`, keeping what it holds where it can.
            #[inline(always)]
            pub fn copy<T: Clone>(self, to: &mut T, from: &T) -> bool {
                to.clone_from(from);
                true
            }
        }

        impl Whole {
            /// Nothing copied.
            #[inline(always)]
            pub fn copy<T>(self, _to: &mut T, _from: &T) -> bool {
                false
            }
        }
    }

    /// A message catch's payload decoder, found by the type its `apply` closure
    /// takes: `Some` when that type is `Deserialize` (and the feature `durable` is
    /// on), else `None`, chosen at compile time by method resolution — the
    /// `Deserialize` impl is on `Probe<P>`, the fallback on `&Probe<P>`, and the
    /// expansion calls `(&probe).decoder()`.
    pub mod decode {
        use std::marker::PhantomData;

        pub use crate::graph::{PayloadDecode, PayloadType};

        /// Names the payload type `P` of an `apply` closure.
        pub struct Probe<P>(PhantomData<P>);

        impl<P> Probe<P> {
            /// The probe of `P`.
            #[allow(clippy::new_without_default)]
            pub fn new() -> Self {
                Probe(PhantomData)
            }
        }

        /// The probe of `apply`'s payload type (the closure is not called).
        pub fn probe<D, P, R, F: FnOnce(&mut D, &P) -> R>(_apply: F) -> Probe<P> {
            Probe::new()
        }

        /// The payload type `probe` names, at run time.
        pub fn payload_type<P: 'static>(_probe: &Probe<P>) -> PayloadType {
            PayloadType {
                id: std::any::TypeId::of::<P>(),
                name: std::any::type_name::<P>(),
            }
        }

        /// A payload type read back from JSON.
        pub trait Deserializable {
            fn decoder(&self) -> PayloadDecode;
        }

        #[cfg(feature = "durable")]
        impl<P> Deserializable for Probe<P>
        where
            P: serde::de::DeserializeOwned + std::any::Any + Send + Sync,
        {
            fn decoder(&self) -> PayloadDecode {
                Some(|value| {
                    serde_json::from_value::<P>(value)
                        .map(|p| std::sync::Arc::new(p) as super::Payload)
                        .map_err(|e| e.to_string())
                })
            }
        }

        /// Any other payload type: no decoder.
        pub trait Opaque {
            fn decoder(&self) -> PayloadDecode {
                None
            }
        }

        impl<P> Opaque for &Probe<P> {}

        #[cfg(all(test, feature = "durable"))]
        #[test]
        // The borrow is how the fallback is reached, as in the expansion.
        #[allow(clippy::needless_borrow)]
        fn a_deserialize_payload_type_gets_a_decoder_and_another_none() {
            struct NotSerde;
            let typed = probe::<u8, u64, (), _>(|_, _: &u64| {});
            let decode = (&typed).decoder().expect("u64 is Deserialize");
            let payload = decode(serde_json::json!(7)).expect("decoded");
            assert_eq!(payload.downcast_ref::<u64>(), Some(&7));
            assert!(decode(serde_json::json!("seven")).is_err());
            let opaque = probe::<u8, NotSerde, (), _>(|_, _: &NotSerde| {});
            assert!((&opaque).decoder().is_none());
        }

        /// The decoder of a catch without `apply`: its payload is never read, so any
        /// JSON will do.
        pub fn ignored() -> PayloadDecode {
            #[cfg(feature = "durable")]
            return Some(|_| Ok(std::sync::Arc::new(()) as super::Payload));
            #[cfg(not(feature = "durable"))]
            None
        }
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

    /// A closure of the model over the data, called: its type is inferred from
    /// `data`, and what it gives is checked where it is used.
    pub fn read_data<D, T, F: FnOnce(&D) -> T>(read: F, data: &D) -> T {
        read(data)
    }

    pub use crate::loops::{
        ActivityLoop, Counts, ItemTask, Items, LoopKind, MultiInstance, Output, StandardLoop,
    };

    /// A multi-instance activity's items from its `each` expression: any collection.
    pub fn multi_items<D, C, F>(each: F, data: &D) -> Items
    where
        F: FnOnce(&D) -> C,
        C: IntoIterator,
        C::Item: Send + Sync + 'static,
    {
        Items::of(each(data).into_iter().collect())
    }

    /// A multi-instance activity's items from its `count` expression: the indices
    /// `0..count` (a count that does not fit `usize` makes none).
    pub fn multi_count<D, N, F>(count: F, data: &D) -> Items
    where
        F: FnOnce(&D) -> N,
        N: TryInto<usize>,
    {
        let n = count(data).try_into().unwrap_or(0);
        Items::of((0..n).collect::<Vec<usize>>())
    }

    /// The item at `index`, typed by the `each` expression the items were made with
    /// (passed again, never called: it names the item type).
    pub fn item_of<'a, D, C, F>(_each: &F, items: &'a Items, index: usize) -> Option<&'a C::Item>
    where
        F: FnOnce(&D) -> C,
        C: IntoIterator,
        C::Item: 'static,
    {
        items.typed::<C::Item>()?.get(index)
    }

    /// As [`item_of`] for a `count` activity: the item is the index.
    pub fn count_item<'a, D, N, F>(_count: &F, items: &'a Items, index: usize) -> Option<&'a usize>
    where
        F: FnOnce(&D) -> N,
    {
        items.typed::<usize>()?.get(index)
    }

    /// Call a multi-instance task's handler with its item and index; its `Ok` is the
    /// instance's output.
    pub fn call_item_task<'a, D, I: 'a, O, F, Fut>(
        handler: F,
        data: &'a mut D,
        item: &'a I,
        index: usize,
    ) -> Fut
    where
        F: FnOnce(&'a mut D, &'a I, usize) -> Fut,
        Fut: std::future::Future<Output = Result<O, crate::TaskError>> + Send + 'a,
    {
        handler(data, item, index)
    }

    /// Hand an instance's output to the loop (which may be gone: then it is dropped).
    pub fn send_output<O: Send + 'static>(output: Output, value: O) {
        let _ = output.send(Box::new(value));
    }

    /// The item was not of the type the activity made it with: unreachable for the
    /// code `process!` generates, reported as the task's failure rather than a panic.
    pub fn item_missing() -> crate::TaskError {
        crate::TaskError::new("internal: a multi-instance item was missing or of another type")
    }

    /// The output type of a multi-instance handler: the handler and the `each`
    /// expression are passed, never called, to name it.
    pub fn output_type<'a, D: 'a, I: 'a, O, C, E, H, Fut>(
        _each: &E,
        _handler: &H,
    ) -> std::marker::PhantomData<fn() -> O>
    where
        E: FnOnce(&D) -> C,
        C: IntoIterator<Item = I>,
        H: FnOnce(&'a mut D, &'a I, usize) -> Fut,
        Fut: std::future::Future<Output = Result<O, crate::TaskError>> + Send + 'a,
    {
        std::marker::PhantomData
    }

    /// Merge one instance's output with the user's `output` mapping, the output's
    /// type named by [`output_type`] first (so the mapping's closure is checked
    /// against it: a mapping of another type is a compile error there, not a failed
    /// downcast).
    pub fn merge_output<D, O: 'static, F>(
        _output_type: std::marker::PhantomData<fn() -> O>,
        output: F,
        data: &mut D,
        index: usize,
        value: Box<dyn std::any::Any + Send>,
    ) -> Result<(), &'static str>
    where
        F: FnOnce(&mut D, usize, O),
    {
        match value.downcast::<O>() {
            Ok(value) => {
                output(data, index, *value);
                Ok(())
            }
            Err(_) => Err(std::any::type_name::<O>()),
        }
    }

    /// Call a completion condition over the data and the counts.
    pub fn call_completion<D, F: FnOnce(&D, &Counts) -> bool>(
        completion: F,
        data: &D,
        counts: &Counts,
    ) -> bool {
        completion(data, counts)
    }

    /// Call a standard loop's condition over the data and the runs so far.
    pub fn call_loop_condition<D, F: FnOnce(&D, u32) -> bool>(
        condition: F,
        data: &D,
        runs: u32,
    ) -> bool {
        condition(data, runs)
    }
}
