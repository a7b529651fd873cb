//! Assertions that read as the model, on a [`History`] or on an instance
//! ([`Observed`]); each failure prints the path the instance really took.

use std::fmt::Debug;

use super::picture::{describe_outcome, positions, Picture};
use crate::{History, InstanceError, InstanceHandle, OpenWork, Outcome};

#[track_caller]
fn fail(message: String, picture: &Picture) -> ! {
    panic!("{message}\n{picture}")
}

/// Assertions on a history. Each returns the history, so they chain; each failure
/// panics with what was expected and the path the instance took (see
/// [`Picture`]).
///
/// A node is *passed* when a token reached it (any step of the history names it).
///
/// ```
/// # use thresh::{process, Engine, ProcessData};
/// # #[derive(Clone, Debug, Default, ProcessData)] pub struct Job { pub n: u32 }
/// use thresh::testing::AssertHistory;
/// process! {
///     pub JOB: Job {
///         start s; task a = |j| async move { j.n += 1; Ok(()) };
///         task b = |j| async move { j.n += 1; Ok(()) }; end e;
///         s -> a -> b -> e;
///     }
/// }
/// # #[tokio::main(flavor = "current_thread")] async fn main() {
/// let handle = Engine::new().start(&JOB, Job::default()).await.unwrap();
/// handle.outcome().await;
/// handle
///     .history()
///     .await
///     .assert_passed(["a", "b"])
///     .assert_not_passed(["c"])
///     .assert_ended_at(["e"]);
/// # }
/// ```
pub trait AssertHistory {
    /// The nodes were passed in this order (other nodes may come between).
    #[track_caller]
    fn assert_passed<'a>(&self, nodes: impl IntoIterator<Item = &'a str>) -> &Self;
    /// The nodes were all passed, in any order.
    #[track_caller]
    fn assert_passed_any_order<'a>(&self, nodes: impl IntoIterator<Item = &'a str>) -> &Self;
    /// None of the nodes was passed.
    #[track_caller]
    fn assert_not_passed<'a>(&self, nodes: impl IntoIterator<Item = &'a str>) -> &Self;
    /// A token waits at `node` now: parked for an event, at a join, or in a running
    /// task or sub-process.
    #[track_caller]
    fn assert_waits_at(&self, node: &str) -> &Self;
    /// The end events reached are exactly these, in any order (an end reached twice
    /// is listed twice).
    #[track_caller]
    fn assert_ended_at<'a>(&self, ends: impl IntoIterator<Item = &'a str>) -> &Self;
}

impl AssertHistory for History {
    fn assert_passed<'a>(&self, nodes: impl IntoIterator<Item = &'a str>) -> &Self {
        passed_in_order(self, nodes, &Picture::of_history(self));
        self
    }

    fn assert_passed_any_order<'a>(&self, nodes: impl IntoIterator<Item = &'a str>) -> &Self {
        passed_any_order(self, nodes, &Picture::of_history(self));
        self
    }

    fn assert_not_passed<'a>(&self, nodes: impl IntoIterator<Item = &'a str>) -> &Self {
        not_passed(self, nodes, &Picture::of_history(self));
        self
    }

    fn assert_waits_at(&self, node: &str) -> &Self {
        waits_at(self, node, &Picture::of_history(self));
        self
    }

    fn assert_ended_at<'a>(&self, ends: impl IntoIterator<Item = &'a str>) -> &Self {
        ended_at(self, ends, &Picture::of_history(self));
        self
    }
}

fn reached(history: &History, node: &str) -> bool {
    history.steps().iter().any(|s| s.node == node)
}

#[track_caller]
fn passed_in_order<'a>(
    history: &History,
    nodes: impl IntoIterator<Item = &'a str>,
    picture: &Picture,
) {
    let nodes: Vec<&str> = nodes.into_iter().collect();
    let steps = history.steps();
    let mut from = 0;
    for (k, node) in nodes.iter().enumerate() {
        match steps[from..].iter().position(|s| s.node == *node) {
            Some(i) => from += i + 1,
            None => {
                let expected = quoted(&nodes);
                let why = if k == 0 || !reached(history, node) {
                    format!("`{node}` was never passed")
                } else {
                    format!("`{node}` was not passed after `{}`", nodes[k - 1])
                };
                fail(
                    format!("expected the instance to pass {expected} in this order, but {why}"),
                    picture,
                );
            }
        }
    }
}

#[track_caller]
fn passed_any_order<'a>(
    history: &History,
    nodes: impl IntoIterator<Item = &'a str>,
    picture: &Picture,
) {
    let nodes: Vec<&str> = nodes.into_iter().collect();
    let missing: Vec<&str> = nodes
        .iter()
        .copied()
        .filter(|n| !reached(history, n))
        .collect();
    if !missing.is_empty() {
        fail(
            format!(
                "expected the instance to pass {} (in any order), but it never passed {}",
                quoted(&nodes),
                quoted(&missing)
            ),
            picture,
        );
    }
}

#[track_caller]
fn not_passed<'a>(history: &History, nodes: impl IntoIterator<Item = &'a str>, picture: &Picture) {
    let nodes: Vec<&str> = nodes.into_iter().collect();
    let passed: Vec<&str> = nodes
        .iter()
        .copied()
        .filter(|n| reached(history, n))
        .collect();
    if !passed.is_empty() {
        fail(
            format!(
                "expected the instance not to pass {}, but it passed {}",
                quoted(&nodes),
                quoted(&passed)
            ),
            picture,
        );
    }
}

#[track_caller]
fn waits_at(history: &History, node: &str, picture: &Picture) {
    let at = positions(history);
    if !at.iter().any(|(_, n, _)| *n == node) {
        let now: Vec<&str> = at.iter().map(|(_, n, _)| *n).collect();
        let now = if now.is_empty() {
            "no token waits anywhere".to_string()
        } else {
            format!("tokens wait at {}", quoted(&now))
        };
        fail(
            format!("expected a token to wait at `{node}`, but {now}"),
            picture,
        );
    }
}

#[track_caller]
fn ended_at<'a>(history: &History, ends: impl IntoIterator<Item = &'a str>, picture: &Picture) {
    let mut expected: Vec<&str> = ends.into_iter().collect();
    let mut actual = history.ended_at();
    expected.sort_unstable();
    actual.sort_unstable();
    if expected != actual {
        let actual = if actual.is_empty() {
            "it reached no end event".to_string()
        } else {
            format!("it ended at {}", quoted(&actual))
        };
        fail(
            format!(
                "expected the instance to end at {}, but {actual}",
                quoted(&expected)
            ),
            picture,
        );
    }
}

fn quoted(nodes: &[&str]) -> String {
    let nodes: Vec<String> = nodes.iter().map(|n| format!("`{n}`")).collect();
    match nodes.len() {
        0 => "nothing".into(),
        _ => nodes.join(", "),
    }
}

/// An instance as a test sees it at one moment: history, outcome (once ended),
/// data and open work, read through its handle by [`observe`]. Its assertions are
/// [`AssertHistory`]'s and the outcome's and the data's; each failure prints the
/// instance's [`Picture`].
///
/// ```
/// # use thresh::{process, Engine, ProcessData};
/// # #[derive(Clone, Debug, Default, ProcessData)] pub struct Job { pub n: u32 }
/// # process! { pub JOB: Job { start s; task a = |j| async move { j.n += 1; Ok(()) }; end e; s -> a -> e; } }
/// use thresh::testing::{expect_ended, observe};
/// # #[tokio::main(flavor = "current_thread")] async fn main() {
/// let handle = Engine::new().start(&JOB, Job::default()).await.unwrap();
/// expect_ended(&handle).await;
/// observe(&handle)
///     .await
///     .assert_passed(["s", "a", "e"])
///     .assert_outcome_completed()
///     .assert_data("n is 1", |j| j.n == 1);
/// # }
/// ```
#[derive(Clone, Debug)]
pub struct Observed<D> {
    /// The history when observed.
    pub history: History,
    /// The outcome, if the instance had ended.
    pub outcome: Option<Outcome<D>>,
    /// The data as committed then (`None` only if the loop was lost).
    pub data: Option<D>,
    /// The open user tasks then.
    pub open_work: Vec<OpenWork>,
    picture: Picture,
}

/// Read an instance's history, outcome (if it ended), data and open work.
pub async fn observe<D: Clone>(handle: &InstanceHandle<D>) -> Observed<D> {
    let outcome = if handle.is_finished() {
        Some(handle.outcome().await)
    } else {
        None
    };
    let history = handle.history().await;
    let data = handle.data().await;
    let open_work = handle.open_work().await;
    let picture = Picture {
        instance: Some(handle.id()),
        history: history.clone(),
        open_work: open_work.clone(),
        ended: outcome.as_ref().map(describe_outcome),
    };
    Observed {
        history,
        outcome,
        data,
        open_work,
        picture,
    }
}

impl<D> Observed<D> {
    /// Where the instance was, as the failures print it.
    pub fn picture(&self) -> &Picture {
        &self.picture
    }

    /// See [`AssertHistory::assert_passed`].
    #[track_caller]
    pub fn assert_passed<'a>(&self, nodes: impl IntoIterator<Item = &'a str>) -> &Self {
        passed_in_order(&self.history, nodes, &self.picture);
        self
    }

    /// See [`AssertHistory::assert_passed_any_order`].
    #[track_caller]
    pub fn assert_passed_any_order<'a>(&self, nodes: impl IntoIterator<Item = &'a str>) -> &Self {
        passed_any_order(&self.history, nodes, &self.picture);
        self
    }

    /// See [`AssertHistory::assert_not_passed`].
    #[track_caller]
    pub fn assert_not_passed<'a>(&self, nodes: impl IntoIterator<Item = &'a str>) -> &Self {
        not_passed(&self.history, nodes, &self.picture);
        self
    }

    /// See [`AssertHistory::assert_waits_at`]; an open user task there counts too.
    #[track_caller]
    pub fn assert_waits_at(&self, node: &str) -> &Self {
        if !self.open_work.iter().any(|w| w.node == node) {
            waits_at(&self.history, node, &self.picture);
        }
        self
    }

    /// See [`AssertHistory::assert_ended_at`].
    #[track_caller]
    pub fn assert_ended_at<'a>(&self, ends: impl IntoIterator<Item = &'a str>) -> &Self {
        ended_at(&self.history, ends, &self.picture);
        self
    }

    #[track_caller]
    fn outcome_is(&self, kind: &str) -> &Self {
        match &self.outcome {
            Some(outcome) if outcome.kind() == kind => self,
            Some(outcome) => fail(
                format!(
                    "expected the instance to have {kind}, but it {}",
                    describe_outcome(outcome)
                ),
                &self.picture,
            ),
            None => fail(
                format!("expected the instance to have {kind}, but it is still running"),
                &self.picture,
            ),
        }
    }

    /// The instance completed (every token reached an end).
    #[track_caller]
    pub fn assert_outcome_completed(&self) -> &Self {
        self.outcome_is("completed")
    }

    /// A terminate end event ended the instance.
    #[track_caller]
    pub fn assert_outcome_terminated(&self) -> &Self {
        self.outcome_is("terminated")
    }

    /// The instance was cancelled.
    #[track_caller]
    pub fn assert_outcome_cancelled(&self) -> &Self {
        self.outcome_is("cancelled")
    }

    /// The instance failed, whatever the error.
    #[track_caller]
    pub fn assert_outcome_failed(&self) -> &Self {
        self.outcome_is("failed")
    }

    /// The instance failed with exactly `error`.
    #[track_caller]
    pub fn assert_failed_with(&self, error: &InstanceError) -> &Self {
        self.outcome_is("failed");
        if let Some(Outcome::Failed(actual)) = &self.outcome {
            if actual != error {
                fail(
                    format!("expected the instance to fail with \"{error}\", but it failed with \"{actual}\""),
                    &self.picture,
                );
            }
        }
        self
    }

    /// `holds` is true of the data (as committed when observed); `what` says what
    /// is expected, for the failure, which also prints the data.
    #[track_caller]
    pub fn assert_data(&self, what: &str, holds: impl FnOnce(&D) -> bool) -> &Self
    where
        D: Debug,
    {
        match &self.data {
            Some(data) if holds(data) => self,
            Some(data) => fail(
                format!("expected of the data: {what}; the data is {data:#?}"),
                &self.picture,
            ),
            None => fail(
                format!("expected of the data: {what}; the instance's data was lost"),
                &self.picture,
            ),
        }
    }
}
