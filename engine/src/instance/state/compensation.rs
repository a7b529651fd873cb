//! What compensation needs of an instance's state (ARCHITECTURE.md, "Compensation"):
//! per open scope, the log of its completed activities that can be compensated, in
//! completion order, each with the data as it committed; and the compensation runs
//! under way, each a thrower waiting while its completions are undone, latest first.
//!
//! The log only grows for activities that have something to undo (a compensation
//! boundary, or a sub-process with a compensation event sub-process or with
//! compensable activities inside), so a process without compensation keeps two empty
//! vectors. A sub-process's completion carries its inner log with it. A loop's runs
//! and a multi-instance activity's instances are completions of their own, each with
//! its iteration (BPMN §13.5.5: each is compensated on its own).

use crate::graph::NodeIdx;
use crate::instance::state::ids::{ScopeId, TrackId};
use crate::mem::cell::Base;

/// One completion of an activity, to be compensated once.
pub(crate) struct Completion<D> {
    pub activity: NodeIdx,
    /// The committed data right after the activity's completion: what its handler
    /// works from.
    pub snapshot: Base<D>,
    /// A sub-process's own log, when it completed (empty for a task).
    pub inner: Vec<Completion<D>>,
    /// Which run or instance it was (`TaskContext::iteration` where it ran): what
    /// its compensation reads as its own iteration.
    pub iteration: Option<u32>,
}

/// What a compensation run's thrower does once every completion is undone.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Then {
    /// An intermediate throw: the token goes on.
    Continue,
    /// A compensation end event: the token ends.
    End,
    /// A cancel end event: its transaction leaves through the cancel boundary.
    Cancel,
}

/// What a run is doing now.
pub(crate) enum Current<D> {
    /// Between two handlers (only within one loop step).
    Idle,
    /// A compensation handler runs on `track`, from `snapshot`, undoing the
    /// completion of `iteration`.
    Handler {
        track: TrackId,
        snapshot: Base<D>,
        iteration: Option<u32>,
    },
    /// A compensation event sub-process runs in `scope`, whose log is the compensated
    /// sub-process's inner log, undoing the completion of `iteration`.
    EventSub {
        scope: ScopeId,
        iteration: Option<u32>,
    },
}

/// One compensation under way.
pub(crate) struct Run<D> {
    /// The compensation throw (or cancel end) whose token waits.
    pub thrower: TrackId,
    /// The completions still to undo: the last is undone next.
    pub queue: Vec<Completion<D>>,
    pub current: Current<D>,
    pub then: Then,
}

/// The compensation logs and runs of an instance. Boxed on first use: most
/// instances compensate nothing, and the loop's future (a parked instance's memory)
/// carries this field whole.
pub(crate) struct Compensation<D>(Option<Box<Book<D>>>);

struct Book<D> {
    logs: Vec<(ScopeId, Vec<Completion<D>>)>,
    runs: Vec<Run<D>>,
}

impl<D> Default for Compensation<D> {
    fn default() -> Self {
        Self(None)
    }
}

impl<D> Compensation<D> {
    fn book(&mut self) -> &mut Book<D> {
        self.0.get_or_insert_with(|| {
            Box::new(Book {
                logs: Vec::new(),
                runs: Vec::new(),
            })
        })
    }

    fn runs(&self) -> &[Run<D>] {
        self.0.as_ref().map_or(&[], |b| &b.runs)
    }

    /// Log a completion in `scope`.
    pub fn log(&mut self, scope: ScopeId, completion: Completion<D>) {
        let logs = &mut self.book().logs;
        match logs.iter_mut().find(|(s, _)| *s == scope) {
            Some((_, log)) => log.push(completion),
            None => logs.push((scope, vec![completion])),
        }
    }

    /// Log several completions in `scope`, after what it has (a finished event
    /// sub-process's, which ran in it).
    pub fn log_all(&mut self, scope: ScopeId, completions: Vec<Completion<D>>) {
        for completion in completions {
            self.log(scope, completion);
        }
    }

    /// Put a compensated sub-process's inner log under the scope its compensation
    /// event sub-process runs in.
    pub fn set_log(&mut self, scope: ScopeId, log: Vec<Completion<D>>) {
        self.drop_scope(scope);
        if !log.is_empty() {
            self.book().logs.push((scope, log));
        }
    }

    /// Take `scope`'s whole log out, in completion order.
    pub fn take_log(&mut self, scope: ScopeId) -> Vec<Completion<D>> {
        let Some(book) = self.0.as_mut() else {
            return Vec::new();
        };
        match book.logs.iter().position(|(s, _)| *s == scope) {
            Some(i) => book.logs.swap_remove(i).1,
            None => Vec::new(),
        }
    }

    /// Take the completions of `activity` out of `scope`'s log, in completion order.
    pub fn take_of(&mut self, scope: ScopeId, activity: NodeIdx) -> Vec<Completion<D>> {
        let Some(book) = self.0.as_mut() else {
            return Vec::new();
        };
        let Some((_, log)) = book.logs.iter_mut().find(|(s, _)| *s == scope) else {
            return Vec::new();
        };
        let (taken, kept) = std::mem::take(log)
            .into_iter()
            .partition(|c| c.activity == activity);
        *log = kept;
        taken
    }

    /// A scope closed without completing (or its log was taken): its log goes.
    pub fn drop_scope(&mut self, scope: ScopeId) {
        if let Some(book) = self.0.as_mut() {
            book.logs.retain(|(s, _)| *s != scope);
        }
    }

    /// Whether nothing is logged and nothing runs (the common case: one check).
    pub fn is_empty(&self) -> bool {
        self.0
            .as_ref()
            .is_none_or(|b| b.logs.is_empty() && b.runs.is_empty())
    }

    /// Whether a compensation runs.
    pub fn is_running(&self) -> bool {
        !self.runs().is_empty()
    }

    /// Start a compensation run.
    pub fn begin(&mut self, run: Run<D>) {
        self.book().runs.push(run);
    }

    /// The run whose thrower is `track`.
    pub fn run_of(&mut self, thrower: TrackId) -> Option<&mut Run<D>> {
        self.0
            .as_mut()?
            .runs
            .iter_mut()
            .find(|r| r.thrower == thrower)
    }

    /// Take out the run whose thrower is `track`.
    pub fn take_run(&mut self, thrower: TrackId) -> Option<Run<D>> {
        let runs = &mut self.0.as_mut()?.runs;
        let i = runs.iter().position(|r| r.thrower == thrower)?;
        Some(runs.remove(i))
    }

    /// The thrower whose run's handler is running on `track`.
    pub fn thrower_of_handler(&self, track: TrackId) -> Option<TrackId> {
        self.runs()
            .iter()
            .find(|r| matches!(r.current, Current::Handler { track: t, .. } if t == track))
            .map(|r| r.thrower)
    }

    /// The thrower whose run's compensation event sub-process runs in `scope`.
    pub fn thrower_of_scope(&self, scope: ScopeId) -> Option<TrackId> {
        self.runs()
            .iter()
            .find(|r| matches!(r.current, Current::EventSub { scope: s, .. } if s == scope))
            .map(|r| r.thrower)
    }

    /// The snapshot a compensation handler on `track` works from.
    pub fn snapshot_for(&self, track: TrackId) -> Option<Base<D>> {
        self.runs().iter().find_map(|r| match &r.current {
            Current::Handler {
                track: t, snapshot, ..
            } if *t == track => Some(snapshot.clone()),
            _ => None,
        })
    }

    /// The iteration of the completion a compensation handler on `track` undoes:
    /// `None` when `track` runs no handler, `Some(None)` when that completion had
    /// none.
    pub fn handler_iteration(&self, track: TrackId) -> Option<Option<u32>> {
        self.runs().iter().find_map(|r| match r.current {
            Current::Handler {
                track: t,
                iteration,
                ..
            } if t == track => Some(iteration),
            _ => None,
        })
    }

    /// The iteration of the completion the compensation event sub-process running in
    /// `scope` undoes: `None` when none runs there, `Some(None)` when that completion
    /// had none.
    pub fn iteration_in(&self, scope: ScopeId) -> Option<Option<u32>> {
        self.runs().iter().find_map(|r| match r.current {
            Current::EventSub {
                scope: s,
                iteration,
            } if s == scope => Some(iteration),
            _ => None,
        })
    }

    /// The logs, per scope (for a checkpoint).
    #[cfg(feature = "durable")]
    pub fn logs(&self) -> &[(ScopeId, Vec<Completion<D>>)] {
        self.0.as_ref().map_or(&[], |b| &b.logs)
    }

    /// The runs under way (for a checkpoint).
    #[cfg(feature = "durable")]
    pub fn runs_under_way(&self) -> &[Run<D>] {
        self.runs()
    }

    /// Put back the logs and runs a checkpoint recorded.
    #[cfg(feature = "durable")]
    pub fn restore(&mut self, logs: Vec<(ScopeId, Vec<Completion<D>>)>, runs: Vec<Run<D>>) {
        if logs.is_empty() && runs.is_empty() {
            self.0 = None;
        } else {
            self.0 = Some(Box::new(Book { logs, runs }));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::instance::state::ids::ROOT;

    fn done(activity: NodeIdx) -> Completion<()> {
        Completion {
            activity,
            snapshot: Base::new(()),
            inner: Vec::new(),
            iteration: None,
        }
    }

    #[test]
    fn logs_keep_completion_order_per_scope_and_take_by_activity() {
        let mut c = Compensation::<()>::default();
        assert!(c.is_empty());
        c.log(ROOT, done(1));
        c.log(ScopeId(3), done(7));
        c.log(ROOT, done(2));
        c.log(ROOT, done(1));
        let ones: Vec<NodeIdx> = c.take_of(ROOT, 1).iter().map(|d| d.activity).collect();
        assert_eq!(ones, [1, 1]);
        let rest: Vec<NodeIdx> = c.take_log(ROOT).iter().map(|d| d.activity).collect();
        assert_eq!(rest, [2]);
        assert!(c.take_log(ROOT).is_empty());
        c.drop_scope(ScopeId(3));
        assert!(c.is_empty());
    }
}
