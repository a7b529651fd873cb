//! The process data with its type erased: what the instance loop holds, copies,
//! diffs and merges. The loop, the graph it walks and everything between are
//! compiled once, over [`Erased`], rather than once per data type; the typed API
//! (`Process<D>`, `InstanceHandle<D>`, `Outcome<D>`) converts at the edge, and the
//! fns `process!` emits for the user's code take the data back to its type.

use std::any::Any;
use std::fmt;

use super::{ChangedFields, ProcessData};

/// A value of some [`ProcessData`] type, its type known only at run time.
///
/// ```
/// use thresh::data::Erased;
/// use thresh::ProcessData;
///
/// #[derive(Clone, Debug, Default, ProcessData)]
/// pub struct Order { pub total: u64 }
///
/// let base = Erased::new(Order::default());
/// let mut edited = base.clone();
/// edited.typed_mut::<Order>().total = 10;
/// let mut current = base.clone();
/// let changed = current.merge(&base, edited);
/// assert_eq!(current.typed::<Order>().total, 10);
/// assert_eq!(changed.names().collect::<Vec<_>>(), ["total"]);
/// ```
pub struct Erased(Box<dyn Data>);

/// What the loop does with the data, for one type `D`: the vtable behind [`Erased`].
/// Its type checks go through `Any`, the supertrait (`&dyn Data` upcasts to
/// `&dyn Any` with no call): one `type_id` call a check.
trait Data: Any + Send + Sync {
    fn clone_erased(&self) -> Erased;
    /// Clone `self` into `target` if it is of the same type, reusing its box.
    fn clone_into_data(&self, target: &mut dyn Data) -> bool;
    fn diff(&self, other: &dyn Data) -> ChangedFields;
    /// `diff` into `changed`, and if nothing changed and `renew`, `edited` cloned
    /// from `self` again (`diff_into`).
    fn diff_into(
        &self,
        edited: &mut dyn Data,
        renew: bool,
        changed: &mut Option<ChangedFields>,
    ) -> bool;
    fn merge(&mut self, base: &dyn Data, edited: Erased) -> ChangedFields;
    fn fields(&self) -> &'static [&'static str];
    fn type_name(&self) -> &'static str;
}

// The user's `Clone`, `diff` and `merge` run here, outside any handler: each call
// is `user_call`, so a panic in one reaches the loop named (`DataPanic`) rather
// than as an engine bug.
impl<D: ProcessData> Data for D {
    fn clone_erased(&self) -> Erased {
        Erased(Box::new(user_call::<D, _>("Clone", || self.clone())))
    }

    fn clone_into_data(&self, target: &mut dyn Data) -> bool {
        match (target as &mut dyn Any).downcast_mut::<D>() {
            Some(target) => {
                user_call::<D, _>("Clone", || target.clone_fields_from(self));
                true
            }
            None => false,
        }
    }

    fn diff(&self, other: &dyn Data) -> ChangedFields {
        user_call::<D, _>("diff", || ProcessData::diff(self, same_type(other)))
    }

    fn diff_into(
        &self,
        edited: &mut dyn Data,
        renew: bool,
        changed: &mut Option<ChangedFields>,
    ) -> bool {
        let edited = match (edited as &mut dyn Any).downcast_mut::<D>() {
            Some(edited) => edited,
            None => mismatch::<D>(),
        };
        user_call::<D, _>("diff", || typed_diff_into(self, edited, renew, changed))
    }

    fn merge(&mut self, base: &dyn Data, edited: Erased) -> ChangedFields {
        let edited = edited.take::<D>();
        user_call::<D, _>("merge", || {
            ProcessData::merge(self, same_type(base), edited)
        })
    }

    fn fields(&self) -> &'static [&'static str] {
        D::FIELDS
    }

    fn type_name(&self) -> &'static str {
        std::any::type_name::<D>()
    }
}

/// A panic in the process data's own code (`Clone`, `diff`, `merge`) that the
/// engine ran outside a handler: the payload `user_call` unwinds with, read where
/// the loop catches it (`DataPanic::error`).
pub(crate) struct DataPanic {
    /// What was called.
    pub call: &'static str,
    /// The data type.
    pub data_type: &'static str,
    /// The user's panic message.
    pub message: String,
}

/// Run `f`, the user's `call` on a `D`: a panic in it unwinds on as a
/// [`DataPanic`] naming the call and the type.
#[inline(always)]
fn user_call<D, T>(call: &'static str, f: impl FnOnce() -> T) -> T {
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)) {
        Ok(value) => value,
        // A call inside another (a merge that clones) is named once, innermost.
        Err(panic) if panic.is::<DataPanic>() => std::panic::resume_unwind(panic),
        Err(panic) => std::panic::resume_unwind(Box::new(DataPanic {
            call,
            data_type: std::any::type_name::<D>(),
            message: crate::instance::panic_message(panic),
        })),
    }
}

/// The other side of a diff or merge, of the same type as `Self` (one instance's
/// data is always of its process's type).
fn same_type<D: 'static>(other: &dyn Data) -> &D {
    (other as &dyn Any)
        .downcast_ref::<D>()
        .unwrap_or_else(|| mismatch::<D>())
}

/// Whether `edited` differs from `data` in no field; otherwise the fields that
/// differ are left in `changed`. Not returned: a set handed back through the
/// vtable is written field by field and read back whole, a store-forwarding stall
/// on every no-op commit; a flag comes back in a register.
///
/// `renew`: when nothing changed, `edited` is made a copy of `data` again
/// (`clone_fields_from`), to serve as the next task's copy — a commit that changed
/// nothing and the next task's copy in one call through erased data's vtable
/// and with one type check (`Instance::commit_into`).
#[inline]
pub(crate) fn diff_into<D: ProcessData>(
    data: &D,
    edited: &mut D,
    renew: bool,
    changed: &mut Option<ChangedFields>,
) -> bool {
    // For `Erased` data (every instance's), the type test is decided at compile time.
    if let Some(data) = (data as &dyn Any).downcast_ref::<Erased>() {
        let edited = (edited as &mut dyn Any).downcast_mut::<Erased>();
        let edited = edited.expect("`edited` is of `data`'s type");
        return data.0.diff_into(&mut *edited.0, renew, changed);
    }
    typed_diff_into(data, edited, renew, changed)
}

/// `diff_into` for data of a known type.
#[inline(always)]
fn typed_diff_into<D: ProcessData>(
    data: &D,
    edited: &mut D,
    renew: bool,
    changed: &mut Option<ChangedFields>,
) -> bool {
    let diff = data.diff(edited);
    if !diff.is_empty() {
        *changed = Some(diff);
        return false;
    }
    if renew {
        edited.clone_fields_from(data);
    }
    true
}

#[cold]
fn mismatch<D>() -> ! {
    panic!(
        "internal: process data of type `{}` met data of another type",
        std::any::type_name::<D>()
    )
}

impl Erased {
    /// Erase `data`'s type (data already erased stays as it is).
    pub fn new<D: ProcessData>(data: D) -> Self {
        let mut slot = Some(data);
        if let Some(erased) = (&mut slot as &mut dyn Any).downcast_mut::<Option<Erased>>() {
            return erased.take().expect("the slot was filled");
        }
        Erased(Box::new(slot.expect("the slot was filled")))
    }

    /// The value, if it is a `D`.
    pub fn get<D: 'static>(&self) -> Option<&D> {
        (&*self.0 as &dyn Any).downcast_ref()
    }

    /// The value, to change it, if it is a `D`.
    pub fn get_mut<D: 'static>(&mut self) -> Option<&mut D> {
        (&mut *self.0 as &mut dyn Any).downcast_mut()
    }

    /// The value as the `D` it is.
    ///
    /// # Panics
    /// If it is of another type: the engine pairs a process's data only with its
    /// process's fns, so this is a bug in the engine.
    pub fn typed<D: 'static>(&self) -> &D {
        self.get().unwrap_or_else(|| mismatch::<D>())
    }

    /// The value as the `D` it is, to change it. Panics as [`Erased::typed`] does.
    pub fn typed_mut<D: 'static>(&mut self) -> &mut D {
        (&mut *self.0 as &mut dyn Any)
            .downcast_mut()
            .unwrap_or_else(|| mismatch::<D>())
    }

    /// The value, boxed as the `D` it is. Panics as [`Erased::typed`] does.
    pub fn into_typed<D: 'static>(self) -> Box<D> {
        let boxed: Box<dyn Any> = self.0;
        boxed.downcast::<D>().unwrap_or_else(|_| mismatch::<D>())
    }

    /// The value as the `D` it is, out of its box. Panics as [`Erased::typed`] does.
    fn take<D: 'static>(self) -> D {
        let boxed: Box<dyn Any> = self.0;
        match boxed.downcast::<D>() {
            Ok(value) => *value,
            Err(_) => mismatch::<D>(),
        }
    }

    /// The value as a `D` — the `D` it is, or the erased value itself when `D` is
    /// `Erased` (for code generic over the data that runs over erased data).
    /// Panics as [`Erased::typed`] does.
    pub fn into_data<D: 'static>(self) -> D {
        let mut slot = Some(self);
        if let Some(same) = (&mut slot as &mut dyn Any).downcast_mut::<Option<D>>() {
            return same.take().expect("the slot was filled");
        }
        slot.expect("the slot was filled").take::<D>()
    }

    /// A copy of the value as a `D`, as [`Erased::into_data`] takes it — cloned as
    /// the `D` it is, with no box in between.
    pub fn clone_data<D: Clone + 'static>(&self) -> D {
        match (self as &dyn Any).downcast_ref::<D>() {
            Some(same) => same.clone(),
            None => self.typed::<D>().clone(),
        }
    }

    /// The value as a `D` to change, as [`Erased::into_data`] takes it.
    pub fn data_mut<D: 'static>(&mut self) -> &mut D {
        if std::any::TypeId::of::<D>() == std::any::TypeId::of::<Erased>() {
            return (self as &mut dyn Any)
                .downcast_mut::<D>()
                .expect("the types are equal");
        }
        self.typed_mut()
    }

    /// The name of the value's type.
    pub fn type_name(&self) -> &'static str {
        self.0.type_name()
    }
}

/// A borrowed value of some [`ProcessData`] type: an [`Erased`]'s.
#[derive(Clone, Copy)]
pub(crate) struct ErasedRef<'a>(&'a dyn Data);

impl Erased {
    /// The value, borrowed.
    pub(crate) fn as_ref(&self) -> ErasedRef<'_> {
        ErasedRef(&*self.0)
    }
}

impl ErasedRef<'_> {
    /// An owned copy.
    pub(crate) fn to_erased(self) -> Erased {
        self.0.clone_erased()
    }

    /// A copy as a `D`, as [`Erased::clone_data`] makes it (for `D` = `Erased`, an
    /// owned copy).
    pub(crate) fn clone_data<D: Clone + 'static>(self) -> D {
        match (self.0 as &dyn Any).downcast_ref::<D>() {
            Some(value) => value.clone(),
            None => self.to_erased().into_data(),
        }
    }
}

impl Clone for Erased {
    fn clone(&self) -> Self {
        self.0.clone_erased()
    }

    /// A copy into the box `self` already has, when it holds the same type: what
    /// the loop's recycled task copies cost (no allocation).
    #[inline]
    fn clone_from(&mut self, source: &Self) {
        if !source.0.clone_into_data(&mut *self.0) {
            *self = source.clone();
        }
    }
}

impl fmt::Debug for Erased {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Erased<{}>", self.type_name())
    }
}

impl ProcessData for Erased {
    /// Unknown until run time: see [`ProcessData::fields`].
    const FIELDS: &'static [&'static str] = &[];

    fn fields(&self) -> &'static [&'static str] {
        self.0.fields()
    }

    #[inline]
    fn diff(&self, other: &Self) -> ChangedFields {
        self.0.diff(&*other.0)
    }

    fn merge(&mut self, base: &Self, edited: Self) -> ChangedFields {
        self.0.merge(&*base.0, edited)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Clone, Debug, Default, PartialEq)]
    struct Two {
        a: u32,
        b: u32,
    }

    impl ProcessData for Two {
        const FIELDS: &'static [&'static str] = &["a", "b"];
        fn diff(&self, other: &Self) -> ChangedFields {
            let mut changed = ChangedFields::new(Self::FIELDS);
            if self.a != other.a {
                changed.insert(0);
            }
            if self.b != other.b {
                changed.insert(1);
            }
            changed
        }
        fn merge(&mut self, base: &Self, edited: Self) -> ChangedFields {
            let mut changed = ChangedFields::new(Self::FIELDS);
            if edited.a != base.a && edited.a != self.a {
                self.a = edited.a;
                changed.insert(0);
            }
            if edited.b != base.b && edited.b != self.b {
                self.b = edited.b;
                changed.insert(1);
            }
            changed
        }
    }

    #[test]
    fn erased_data_diffs_merges_and_comes_back_as_its_type() {
        let base = Erased::new(Two::default());
        assert_eq!(ProcessData::fields(&base), ["a", "b"]);
        let mut left = base.clone();
        left.typed_mut::<Two>().a = 1;
        let mut right = base.clone();
        right.typed_mut::<Two>().b = 2;
        assert_eq!(
            ProcessData::diff(&left, &base).names().collect::<Vec<_>>(),
            ["a"]
        );
        let mut current = base.clone();
        ProcessData::merge(&mut current, &base, left);
        let changed = ProcessData::merge(&mut current, &base, right);
        assert_eq!(changed.names().collect::<Vec<_>>(), ["b"]);
        assert_eq!(*current.into_typed::<Two>(), Two { a: 1, b: 2 });
        assert!(base.get::<u32>().is_none());
        let again = Erased::new(base.clone());
        assert_eq!(
            again.type_name(),
            base.type_name(),
            "erased twice is erased once"
        );
        let same: Erased = again.into_data();
        assert_eq!(same.into_data::<Two>(), Two::default());
    }

    #[test]
    fn diff_into_renews_only_a_copy_that_changed_nothing_and_only_if_asked() {
        // `b` is left out of the diff: only a renewed copy has the data's `b`.
        #[derive(Clone, Debug, PartialEq)]
        struct Noted {
            a: u32,
            b: u32,
        }
        impl ProcessData for Noted {
            const FIELDS: &'static [&'static str] = &["a"];
            fn diff(&self, other: &Self) -> ChangedFields {
                let mut changed = ChangedFields::new(Self::FIELDS);
                if self.a != other.a {
                    changed.insert(0);
                }
                changed
            }
            fn merge(&mut self, _: &Self, _: Self) -> ChangedFields {
                unreachable!()
            }
        }
        let data = Erased::new(Noted { a: 1, b: 2 });
        let mut edited = Erased::new(Noted { a: 1, b: 9 });
        let mut changed = None;
        assert!(diff_into(&data, &mut edited, false, &mut changed));
        assert_eq!(edited.typed::<Noted>().b, 9, "not renewed unless asked");
        assert!(diff_into(&data, &mut edited, true, &mut changed));
        assert!(changed.is_none(), "nothing written when nothing changed");
        assert_eq!(*edited.typed::<Noted>(), Noted { a: 1, b: 2 }, "renewed");
        let mut edited = Erased::new(Noted { a: 5, b: 9 });
        assert!(!diff_into(&data, &mut edited, true, &mut changed));
        let names: Vec<_> = changed.expect("the changed fields").names().collect();
        assert_eq!(names, ["a"]);
        assert_eq!(
            *edited.typed::<Noted>(),
            Noted { a: 5, b: 9 },
            "left as it is"
        );
        // Typed data takes the same path without the vtable.
        let mut typed = Noted { a: 1, b: 9 };
        assert!(diff_into(
            &Noted { a: 1, b: 2 },
            &mut typed,
            true,
            &mut None
        ));
        assert_eq!(typed.b, 2);
    }

    #[test]
    #[should_panic(expected = "met data of another type")]
    fn data_of_another_type_is_a_bug_not_a_silent_merge() {
        let mut a = Erased::new(Two::default());
        let b = Erased::new(Two::default());
        #[derive(Clone)]
        struct Other;
        impl ProcessData for Other {
            const FIELDS: &'static [&'static str] = &[];
            fn diff(&self, _: &Self) -> ChangedFields {
                ChangedFields::new(&[])
            }
            fn merge(&mut self, _: &Self, _: Self) -> ChangedFields {
                ChangedFields::new(&[])
            }
        }
        ProcessData::merge(&mut a, &b, Erased::new(Other));
    }
}
