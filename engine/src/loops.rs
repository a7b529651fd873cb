//! Activities that run more than once: multi-instance activities and the standard
//! loop (ARCHITECTURE.md, "Loops and multi-instance").
//!
//! `process!` writes them as attributes on an activity:
//!
//! ```text
//! #[multi_instance(each = |o| o.lines.clone(), output = |o, i, label| o.labels.push(label))]
//! task pack = pack_line;        // async fn(&mut Order, &Line, usize) -> Result<Label, TaskError>
//! #[standard_loop(while = |o, runs| !o.answered, max = 5)]
//! task call_api = call_api;
//! ```
//!
//! What a user's code reads of them is typed: the handler of a multi-instance task
//! (or of a task marked `#[item]` inside a multi-instance sub-process) gets `&Item`
//! and the instance's index, the output mapping gets the handler's typed output, a
//! completion condition reads [`Counts`]. The graph keeps the item list type-erased
//! ([`Items`]); only the code `process!` generates downcasts it, to the type it made
//! it with.

use std::any::Any;
use std::sync::Arc;

use crate::graph::{NodeIdx, TaskRun};

/// The counts of a multi-instance activity's instances, as its `completion`
/// condition reads them (BPMN's `nrOfInstances`, `nrOfActiveInstances`,
/// `nrOfCompletedInstances`, `nrOfTerminatedInstances`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Counts {
    /// Instances of this activation: the collection's length, or the cardinality.
    pub instances: u32,
    /// Instances running now (started, not completed).
    pub active: u32,
    /// Instances that completed.
    pub completed: u32,
    /// Instances cancelled because the completion condition held (and those it
    /// left unstarted, for a sequential activity).
    pub terminated: u32,
}

/// The item list of one activation of a multi-instance activity, computed once when
/// the activity starts. Type-erased; `process!`'s code made it and downcasts it.
#[doc(hidden)]
#[derive(Clone)]
pub struct Items {
    list: Arc<dyn Any + Send + Sync>,
    len: usize,
}

impl Items {
    /// The items of a collection.
    pub fn of<I: Send + Sync + 'static>(items: Vec<I>) -> Self {
        let len = items.len();
        Self {
            list: Arc::new(items),
            len,
        }
    }

    /// How many instances.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The items as the type they were made with; `None` for another type (which
    /// `process!`'s code never asks for).
    pub fn typed<I: 'static>(&self) -> Option<&[I]> {
        self.list.downcast_ref::<Vec<I>>().map(Vec::as_slice)
    }
}

impl std::fmt::Debug for Items {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Items({})", self.len)
    }
}

/// Where a multi-instance task's run leaves its typed output for the loop: a
/// one-shot hand-over from the run (which may finish on its track's task) to the
/// loop, which takes it when the instance's completion is committed.
#[doc(hidden)]
pub type Output = tokio::sync::oneshot::Sender<Box<dyn Any + Send>>;

/// One run of a task with its item: the task's copy, the activation's items, the
/// index of this instance, where its output goes.
#[doc(hidden)]
pub type ItemRun<D> = fn(D, &Items, usize, Output) -> TaskRun<D>;

/// How an instance's output is merged into the data (in index order). `Err` names
/// the output type the mapping expected, should the run have left another.
#[doc(hidden)]
pub type MergeOutput<D> = fn(&mut D, usize, Box<dyn Any + Send>) -> Result<(), &'static str>;

/// A loop or multi-instance marker on an activity.
#[doc(hidden)]
pub struct ActivityLoop<D: 'static> {
    /// The activity.
    pub node: NodeIdx,
    pub kind: LoopKind<D>,
}

/// Which of the two.
#[doc(hidden)]
pub enum LoopKind<D: 'static> {
    Multi(MultiInstance<D>),
    Standard(StandardLoop<D>),
}

/// A multi-instance activity: one instance per item, in parallel or one after the
/// other.
#[doc(hidden)]
pub struct MultiInstance<D: 'static> {
    pub sequential: bool,
    /// The items (a collection, or `0..cardinality`), computed when the activity
    /// starts; checkpoints keep the data they were computed from.
    pub items: fn(&D) -> Items,
    /// Evaluated after each instance completes: true cancels the rest.
    pub completion: Option<fn(&D, &Counts) -> bool>,
    /// A task's run with its item (`None` for other activities: their inner tasks
    /// marked `#[item]` get it, see [`ItemTask`]).
    pub run: Option<ItemRun<D>>,
    /// The output mapping.
    pub output: Option<MergeOutput<D>>,
    /// The items and completion expressions as written (pictures, fingerprint).
    pub items_text: &'static str,
    pub completion_text: &'static str,
}

/// A standard loop: the activity runs again while its condition holds, tested
/// after each run (or before, `test_before`), at most `max` times.
#[doc(hidden)]
pub struct StandardLoop<D: 'static> {
    pub test_before: bool,
    /// Over the data and the number of runs so far.
    pub condition: fn(&D, u32) -> bool,
    pub max: Option<u32>,
    pub condition_text: &'static str,
}

/// A task inside a multi-instance sub-process that takes the sub-process
/// instance's item.
#[doc(hidden)]
pub struct ItemTask<D: 'static> {
    pub node: NodeIdx,
    /// The multi-instance sub-process whose item it takes (the nearest enclosing).
    pub of: NodeIdx,
    pub run: ItemRun<D>,
    /// `#[item(output)]`: its result is the sub-process instance's output.
    pub output: bool,
}

impl<D> ActivityLoop<D> {
    /// The multi-instance marker, if this is one.
    pub fn multi(&self) -> Option<&MultiInstance<D>> {
        match &self.kind {
            LoopKind::Multi(m) => Some(m),
            LoopKind::Standard(_) => None,
        }
    }
}
