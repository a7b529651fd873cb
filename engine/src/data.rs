//! Process data: the user's type, its field-level change detection, and the errors a
//! task handler can return.
//!
//! The instance loop owns the data. A task gets its own copy; when the task ends the
//! loop commits the copy with a three-way merge against the snapshot the task started
//! from, so two parallel tasks that change different fields both keep their writes.

use std::fmt;

mod erased;
#[cfg(feature = "durable")]
mod storable;
pub(crate) use erased::diff_into;
pub use erased::Erased;
pub(crate) use erased::{DataPanic, ErasedRef};
#[cfg(feature = "durable")]
#[cfg_attr(docsrs, doc(cfg(feature = "durable")))]
pub use storable::Storable;

/// Implement [`ProcessData`] for test types with no fields to diff or merge (the
/// engine's own unit tests: boxes, ends).
#[cfg(test)]
macro_rules! fieldless_process_data {
    ($($data:ty),+ $(,)?) => {$(
        impl $crate::data::ProcessData for $data {
            const FIELDS: &'static [&'static str] = &[];
            fn diff(&self, _: &Self) -> $crate::data::ChangedFields {
                $crate::data::ChangedFields::default()
            }
            fn merge(&mut self, _: &Self, _: Self) -> $crate::data::ChangedFields {
                $crate::data::ChangedFields::default()
            }
        }
    )+};
}
#[cfg(test)]
pub(crate) use fieldless_process_data;

/// Process data with field-level change detection. Derive it:
///
/// ```
/// use thresh::ProcessData;
///
/// #[derive(Clone, Debug, Default, ProcessData)]
/// pub struct Order { pub id: String, pub total: u64, pub in_stock: bool }
///
/// let base = Order::default();
/// let mut a = base.clone();
/// a.total = 10;
/// let mut b = base.clone();
/// b.in_stock = true;
///
/// let mut current = base.clone();
/// current.merge(&base, a);                 // one task's commit
/// let changed = current.merge(&base, b);   // the other's, from the same base
/// assert_eq!((current.total, current.in_stock), (10, true));
/// assert_eq!(changed.names().collect::<Vec<_>>(), ["in_stock"]);
/// ```
pub trait ProcessData: Clone + Send + Sync + 'static {
    /// Field names, in declaration order; bit `i` of a [`ChangedFields`] is field `i`.
    const FIELDS: &'static [&'static str];

    /// The fields where `other` differs from `self`.
    fn diff(&self, other: &Self) -> ChangedFields;

    /// Three-way merge: every field that `edited` changed relative to `base` is taken
    /// from `edited` into `self`; the rest of `self` stays. Returns the fields of
    /// `self` that changed. When two commits change the same field, the later wins.
    fn merge(&mut self, base: &Self, edited: Self) -> ChangedFields;

    /// Make `self` a copy of `source`, keeping what `self` holds where it can: the
    /// engine renews each task's copy of the data this way, from the copy a task
    /// before gave back. The derive copies field by field with each field's
    /// `Clone::clone_from` — a `String` or `Vec` field keeps its buffer, so a copy
    /// of data whose strings fit in the old ones allocates nothing — and clones the
    /// whole value when a field's type is not `Clone`. The default is
    /// `Clone::clone_from` (for most types a whole clone).
    ///
    /// ```
    /// use thresh::ProcessData;
    ///
    /// #[derive(Clone, Debug, Default, PartialEq, ProcessData)]
    /// pub struct Order { pub customer: String, pub total: u64 }
    ///
    /// let source = Order { customer: "ACME".into(), total: 10 };
    /// let mut copy = Order { customer: String::with_capacity(16), total: 0 };
    /// let buffer = copy.customer.as_ptr();
    /// copy.clone_fields_from(&source);
    /// assert_eq!(copy, source);
    /// assert_eq!(copy.customer.as_ptr(), buffer);
    /// ```
    #[inline]
    fn clone_fields_from(&mut self, source: &Self) {
        self.clone_from(source);
    }

    /// [`FIELDS`](ProcessData::FIELDS) of the value's type: the same for every value
    /// of a derived type; for [`Erased`] data, its type's.
    fn fields(&self) -> &'static [&'static str] {
        Self::FIELDS
    }
}

/// A set of changed fields of a [`ProcessData`] type.
#[derive(Clone, PartialEq, Eq, Default)]
pub struct ChangedFields {
    fields: &'static [&'static str],
    /// Fields 0 to 63: a data type of up to 64 fields never allocates a set.
    first: u64,
    /// Fields from 64 on, 64 a word.
    rest: Vec<u64>,
}

impl ChangedFields {
    /// An empty set over the fields `fields`.
    #[inline]
    pub fn new(fields: &'static [&'static str]) -> Self {
        Self {
            fields,
            first: 0,
            rest: Vec::new(),
        }
    }

    /// Mark field number `index` as changed.
    #[inline]
    pub fn insert(&mut self, index: usize) {
        if index < 64 {
            self.first |= 1 << index;
            return;
        }
        let word = index / 64 - 1;
        if self.rest.len() <= word {
            self.rest.resize(word + 1, 0);
        }
        self.rest[word] |= 1 << (index % 64);
    }

    /// Whether field number `index` changed.
    pub fn contains_index(&self, index: usize) -> bool {
        if index < 64 {
            return self.first & (1 << index) != 0;
        }
        self.rest
            .get(index / 64 - 1)
            .is_some_and(|w| w & (1 << (index % 64)) != 0)
    }

    /// Whether the field called `name` changed.
    pub fn contains(&self, name: &str) -> bool {
        self.fields
            .iter()
            .position(|f| *f == name)
            .is_some_and(|i| self.contains_index(i))
    }

    /// Whether nothing changed.
    #[inline]
    pub fn is_empty(&self) -> bool {
        // `rest` is empty for a type of up to 64 fields: one test, no loop.
        self.first == 0 && (self.rest.is_empty() || self.rest.iter().all(|w| *w == 0))
    }

    /// The changed fields' names in declaration order, collected: by the set bits
    /// (a step's history records them), with no allocation when nothing changed.
    #[inline]
    pub fn to_names(&self) -> Vec<&'static str> {
        if self.is_empty() {
            return Vec::new();
        }
        self.collect_names()
    }

    /// [`ChangedFields::to_names`] as a history step keeps them: a slice of the data
    /// type's field list when the changed fields are neighbours in it — none, or
    /// the one field a commit most often changes — so recording allocates nothing;
    /// collected otherwise.
    #[inline]
    pub(crate) fn step_names(&self) -> std::borrow::Cow<'static, [&'static str]> {
        let first = self.first;
        if self.rest.iter().all(|w| *w == 0) {
            if first == 0 {
                return std::borrow::Cow::Borrowed(&[]);
            }
            let from = first.trailing_zeros();
            let run = (first >> from).trailing_ones();
            let (from, to) = (from as usize, (from + run) as usize);
            if run == 64 - first.leading_zeros() - from as u32 && to <= self.fields.len() {
                return std::borrow::Cow::Borrowed(&self.fields[from..to]);
            }
        }
        std::borrow::Cow::Owned(self.collect_names())
    }

    /// [`ChangedFields::to_names`] of a set with a field in it (out of line: a
    /// no-op task's commit changes nothing).
    #[inline(never)]
    fn collect_names(&self) -> Vec<&'static str> {
        let count = self.first.count_ones() + self.rest.iter().map(|w| w.count_ones()).sum::<u32>();
        let mut names = Vec::with_capacity(count as usize);
        for (w, &word) in std::iter::once(&self.first).chain(&self.rest).enumerate() {
            let mut bits = word;
            while bits != 0 {
                let index = w * 64 + bits.trailing_zeros() as usize;
                names.extend(self.fields.get(index));
                bits &= bits - 1;
            }
        }
        names
    }

    /// The changed fields' names, in declaration order.
    pub fn names(&self) -> impl Iterator<Item = &'static str> + '_ {
        self.fields
            .iter()
            .enumerate()
            .filter(|(i, _)| self.contains_index(*i))
            .map(|(_, n)| *n)
    }
}

impl fmt::Debug for ChangedFields {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_set().entries(self.names()).finish()
    }
}

/// What a task handler returns when it cannot do its work. The instance fails with
/// an [`InstanceError::TaskFailed`](crate::InstanceError::TaskFailed) naming the task.
///
/// ```
/// use thresh::TaskError;
///
/// async fn charge(total: u64) -> Result<(), TaskError> {
///     if total == 0 {
///         return Err(TaskError::new("nothing to charge"));
///     }
///     std::str::from_utf8(b"ok").map_err(TaskError::from_error)?;
///     Ok(())
/// }
/// ```
#[derive(Debug, thiserror::Error)]
pub enum TaskError {
    /// A failure described by a message.
    #[error("{0}")]
    Message(String),
    /// A failure caused by another error.
    #[error(transparent)]
    Source(Box<dyn std::error::Error + Send + Sync + 'static>),
    /// A failure that trying again will not mend (a card declined, a record that
    /// does not exist): not retried, whatever the task's retry policy — an incident
    /// opens at once (or, fail-fast, the instance fails). See [`TaskError::permanent`].
    #[error("{0}")]
    Permanent(Box<TaskError>),
    /// A BPMN error: caught by an error boundary on the task whose code matches (or
    /// one without a code); with none, the instance fails with it.
    #[error("BPMN error `{code}`: {message}")]
    Bpmn {
        /// The error code.
        code: String,
        /// What happened.
        message: String,
    },
    /// A BPMN escalation: caught by an escalation boundary on the task; with none,
    /// the task completes as if it returned `Ok` (an uncaught escalation is not an
    /// error). A non-interrupting boundary lets the task complete too.
    #[error("escalation `{code}`")]
    Escalation {
        /// The escalation code.
        code: String,
    },
}

impl TaskError {
    /// A failure described by `message`.
    pub fn new(message: impl fmt::Display) -> Self {
        TaskError::Message(message.to_string())
    }

    /// A BPMN error with `code`, for an error boundary to catch.
    pub fn bpmn(code: impl Into<String>, message: impl fmt::Display) -> Self {
        TaskError::Bpmn {
            code: code.into(),
            message: message.to_string(),
        }
    }

    /// A BPMN escalation with `code`, for an escalation boundary to catch.
    pub fn escalate(code: impl Into<String>) -> Self {
        TaskError::Escalation { code: code.into() }
    }

    /// A permanent failure described by `message`: not retried (module
    /// [`retry`](crate::retry)).
    pub fn permanent(message: impl fmt::Display) -> Self {
        TaskError::Permanent(Box::new(TaskError::new(message)))
    }

    /// This failure, marked permanent: not retried. A BPMN error or escalation is
    /// never retried anyway, and stays what it is.
    pub fn into_permanent(self) -> Self {
        match self {
            TaskError::Bpmn { .. } | TaskError::Escalation { .. } | TaskError::Permanent(_) => self,
            other => TaskError::Permanent(Box::new(other)),
        }
    }

    /// Whether the failure is marked permanent.
    pub fn is_permanent(&self) -> bool {
        matches!(self, TaskError::Permanent(_))
    }

    /// A failure caused by `error`.
    pub fn from_error(error: impl std::error::Error + Send + Sync + 'static) -> Self {
        TaskError::Source(Box::new(error))
    }
}

/// What a catch's or receive task's `apply` mapping may return: `()` (the payload is
/// mapped), or `Result<(), TaskError>` — `Err(TaskError::bpmn(..))` raises a BPMN
/// error at the element (a receive task's error boundary catches it, then the scopes
/// outward; uncaught, the instance fails), `Err(TaskError::escalate(..))` an
/// escalation, any other `Err` fails the instance as a task's would. The data
/// changes of a mapping that returns `Err` are dropped.
#[diagnostic::on_unimplemented(
    message = "an `apply` mapping returns `()` or `Result<(), TaskError>`, not `{Self}`",
    label = "this `apply` returns `{Self}`",
    note = "map the payload into the data and return nothing, or return `Ok(())` / `Err(TaskError::bpmn(\"CODE\", ..))` when the message carries a failure"
)]
pub trait ApplyOutcome {
    /// The mapping's result as the engine handles it.
    fn into_result(self) -> Result<(), TaskError>;
}

impl ApplyOutcome for () {
    fn into_result(self) -> Result<(), TaskError> {
        Ok(())
    }
}

impl ApplyOutcome for Result<(), TaskError> {
    fn into_result(self) -> Result<(), TaskError> {
        self
    }
}

#[cfg(test)]
mod tests {
    use super::ChangedFields;

    /// 130 field names, `f0` to `f129`.
    fn many() -> &'static [&'static str] {
        // Kept in statics, not leaked: the memory checker's leak report stays clean.
        static OWNED: std::sync::OnceLock<Vec<String>> = std::sync::OnceLock::new();
        static NAMES: std::sync::OnceLock<Vec<&'static str>> = std::sync::OnceLock::new();
        let owned = OWNED.get_or_init(|| (0..130).map(|i| format!("f{i}")).collect());
        NAMES.get_or_init(|| owned.iter().map(String::as_str).collect())
    }

    #[test]
    fn fields_past_the_first_64_are_kept_and_named_in_order() {
        let fields = many();
        let mut changed = ChangedFields::new(fields);
        assert!(changed.is_empty());
        for i in [129, 3, 64, 63, 70] {
            changed.insert(i);
        }
        assert!(!changed.is_empty());
        assert!(changed.contains_index(64) && changed.contains("f129") && !changed.contains("f65"));
        assert_eq!(
            changed.names().collect::<Vec<_>>(),
            ["f3", "f63", "f64", "f70", "f129"]
        );
        let mut only_late = ChangedFields::new(fields);
        only_late.insert(100);
        assert!(!only_late.is_empty() && !only_late.contains_index(36));
        assert_eq!(changed.to_names(), changed.names().collect::<Vec<_>>());
        assert_eq!(only_late.to_names(), ["f100"]);
        assert!(ChangedFields::new(fields).to_names().is_empty());
    }

    #[test]
    fn a_step_borrows_neighbouring_changed_fields_from_the_field_list() {
        use std::borrow::Cow;
        let fields = many();
        let set = |indices: &[usize]| {
            let mut changed = ChangedFields::new(fields);
            for &i in indices {
                changed.insert(i);
            }
            changed
        };
        let borrowed = |c: &ChangedFields| matches!(c.step_names(), Cow::Borrowed(_));
        for indices in [&[][..], &[0], &[5], &[63], &[2, 3, 4], &[0, 1, 2, 3]] {
            let changed = set(indices);
            assert!(borrowed(&changed), "{indices:?}");
            assert_eq!(changed.step_names(), changed.to_names(), "{indices:?}");
        }
        let all: Vec<usize> = (0..64).collect();
        assert!(borrowed(&set(&all)));
        assert_eq!(set(&all).step_names(), set(&all).to_names());
        for indices in [&[1, 3][..], &[0, 63], &[64], &[3, 70], &[63, 64]] {
            let changed = set(indices);
            assert!(!borrowed(&changed), "{indices:?}");
            assert_eq!(changed.step_names(), changed.to_names(), "{indices:?}");
        }
    }
}
