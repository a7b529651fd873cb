//! Which open tasks a listing selects, in which order, which page: one query for
//! the memory (`select`) and the stores (their SQL reads the same fields).

use std::time::SystemTime;

use super::Task;

/// The order of a task listing. Ties go by the next key, then by id.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum TaskOrder {
    /// Highest priority first, then the earliest due (tasks with no due date
    /// after), then the oldest.
    #[default]
    Priority,
    /// The earliest due first (tasks with no due date last), then highest priority,
    /// then the oldest.
    Due,
    /// The oldest first.
    Created,
}

/// A listing of open tasks: filters (all must hold), the order, the page.
///
/// ```
/// # use thresh::TaskQuery;
/// let query = TaskQuery::new()
///     .candidate_groups(["finance"])
///     .unassigned()
///     .process("expenses")
///     .page(0, 20);
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TaskQuery {
    pub(crate) assignee: Option<String>,
    pub(crate) claimed_by: Option<String>,
    pub(crate) groups: Vec<String>,
    pub(crate) process: Option<String>,
    pub(crate) element: Option<String>,
    pub(crate) due_before: Option<SystemTime>,
    pub(crate) instance: Option<crate::InstanceId>,
    pub(crate) business_key: Option<String>,
    pub(crate) key: Option<String>,
    pub(crate) unassigned: bool,
    pub(crate) order: TaskOrder,
    pub(crate) offset: usize,
    pub(crate) limit: Option<usize>,
}

impl TaskQuery {
    /// Every open task, highest priority first.
    pub fn new() -> Self {
        Self::default()
    }

    /// Tasks assigned to `user` (`assignee(..)` in the model).
    pub fn assignee(mut self, user: impl Into<String>) -> Self {
        self.assignee = Some(user.into());
        self
    }

    /// Tasks `user` has claimed.
    pub fn claimed_by(mut self, user: impl Into<String>) -> Self {
        self.claimed_by = Some(user.into());
        self
    }

    /// Tasks whose candidate groups include one of `groups` (a user's groups).
    pub fn candidate_groups<S: Into<String>>(
        mut self,
        groups: impl IntoIterator<Item = S>,
    ) -> Self {
        self.groups = groups.into_iter().map(Into::into).collect();
        self
    }

    /// Tasks of the process named `name`.
    pub fn process(mut self, name: impl Into<String>) -> Self {
        self.process = Some(name.into());
        self
    }

    /// Tasks at the user task `element` (its id in the model).
    pub fn element(mut self, element: impl Into<String>) -> Self {
        self.element = Some(element.into());
        self
    }

    /// Tasks due before `time` (tasks with no due date are left out).
    pub fn due_before(mut self, time: SystemTime) -> Self {
        self.due_before = Some(time);
        self
    }

    /// Tasks of one instance.
    pub fn instance(mut self, id: crate::InstanceId) -> Self {
        self.instance = Some(id);
        self
    }

    /// Tasks of the instances started with the business key `key` (`start_keyed`),
    /// as [`Query::key`](crate::Query::key).
    pub fn key(mut self, business_key: impl Into<String>) -> Self {
        self.business_key = Some(business_key.into());
        self
    }

    /// Tasks of the instance with the correlation key `key` (set by a keyed message
    /// start), as [`Query::correlation_key`](crate::Query::correlation_key).
    pub fn correlation_key(mut self, key: impl Into<String>) -> Self {
        self.key = Some(key.into());
        self
    }

    /// Tasks nobody is assigned to and nobody has claimed.
    pub fn unassigned(mut self) -> Self {
        self.unassigned = true;
        self
    }

    /// The order of the listing.
    pub fn order(mut self, order: TaskOrder) -> Self {
        self.order = order;
        self
    }

    /// `limit` tasks from the `offset`th on, in the listing's order.
    pub fn page(mut self, offset: usize, limit: usize) -> Self {
        self.offset = offset;
        self.limit = Some(limit);
        self
    }

    /// Whether `task` passes the filters.
    pub(crate) fn matches(&self, task: &Task) -> bool {
        let eq = |want: &Option<String>, have: &str| want.as_deref().is_none_or(|w| w == have);
        eq(&self.process, &task.process)
            && eq(&self.element, &task.element)
            && self
                .assignee
                .as_deref()
                .is_none_or(|a| task.assignee.as_deref() == Some(a))
            && self
                .claimed_by
                .as_deref()
                .is_none_or(|c| task.claimed_by.as_deref() == Some(c))
            && (self.groups.is_empty() || task.groups.iter().any(|g| self.groups.contains(g)))
            && self
                .due_before
                .is_none_or(|before| task.due.is_some_and(|due| due < before))
            && self.instance.is_none_or(|i| task.id.instance == i)
            && self
                .business_key
                .as_deref()
                .is_none_or(|k| task.business_key.as_deref() == Some(k))
            && self
                .key
                .as_deref()
                .is_none_or(|k| task.key.as_deref() == Some(k))
            && (!self.unassigned || (task.assignee.is_none() && task.claimed_by.is_none()))
    }

    /// The tasks of `tasks` the query selects, sorted and paged.
    pub(crate) fn select<'a>(&self, tasks: impl Iterator<Item = &'a Task>) -> Vec<Task> {
        let mut selected: Vec<&Task> = tasks.filter(|t| self.matches(t)).collect();
        selected.sort_by(|a, b| self.compare(a, b));
        selected
            .into_iter()
            .skip(self.offset)
            .take(self.limit.unwrap_or(usize::MAX))
            .cloned()
            .collect()
    }

    /// The listing's order of two tasks.
    pub(crate) fn compare(&self, a: &Task, b: &Task) -> std::cmp::Ordering {
        // No due date sorts after every date.
        let due = |t: &Task| (t.due.is_none(), t.due);
        let priority = |t: &Task| std::cmp::Reverse(t.priority);
        match self.order {
            TaskOrder::Priority => {
                (priority(a), due(a), a.created, a.id).cmp(&(priority(b), due(b), b.created, b.id))
            }
            TaskOrder::Due => {
                (due(a), priority(a), a.created, a.id).cmp(&(due(b), priority(b), b.created, b.id))
            }
            TaskOrder::Created => (a.created, a.id).cmp(&(b.created, b.id)),
        }
    }
}
