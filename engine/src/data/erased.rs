//! The process data with its type erased: what the instance loop holds, copies,
//! diffs and merges. The loop, the graph it walks and everything between are
//! compiled once, over [`Erased`], rather than once per data type; the typed API
//! (`Process<D>`, `InstanceHandle<D>`, `Outcome<D>`) converts at the edge, and the
//! fns `process!` emits for the user's code take the data back to its type.

use std::any::Any;
use std::fmt;
use std::sync::Arc;

use super::{ChangedFields, ProcessData};

mod held;
mod placed;
mod thin;
pub(crate) use held::HeldData;
pub(crate) use placed::Placed;
use thin::ThinBox;

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
pub struct Erased(ThinBox);

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
    /// What makes a place a pointer to a value of this one's type: its vtable's
    /// pointer, kept by data held apart from it (`Erased::place_at`, `HeldData`).
    fn placer(&self) -> Placer;
    /// Write a copy of the value at `place`.
    ///
    /// # Safety
    /// `place` is valid for writes of the value's layout and aligned to it.
    unsafe fn clone_to(&self, place: *mut u8);
}

/// Makes a place a `dyn Data` pointer to the value there ([`Data::placer`]): a
/// plain fn, so the pointer it returns has the place's provenance.
type Placer = fn(*mut u8) -> *mut dyn Data;

/// [`Data::placer`] for `D`.
fn place_as<D: ProcessData>(place: *mut u8) -> *mut dyn Data {
    place.cast::<D>()
}

impl<D: ProcessData> Data for D {
    fn clone_erased(&self) -> Erased {
        Erased(ThinBox::new(self.clone()))
    }

    fn clone_into_data(&self, target: &mut dyn Data) -> bool {
        match (target as &mut dyn Any).downcast_mut::<D>() {
            Some(target) => {
                target.clone_from(self);
                true
            }
            None => false,
        }
    }

    fn diff(&self, other: &dyn Data) -> ChangedFields {
        ProcessData::diff(self, same_type(other))
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
        typed_diff_into(self, edited, renew, changed)
    }

    fn merge(&mut self, base: &dyn Data, edited: Erased) -> ChangedFields {
        let edited = match edited.0.take::<D>() {
            Ok(edited) => edited,
            Err(_) => mismatch::<D>(),
        };
        ProcessData::merge(self, same_type(base), edited)
    }

    fn fields(&self) -> &'static [&'static str] {
        D::FIELDS
    }

    fn type_name(&self) -> &'static str {
        std::any::type_name::<D>()
    }

    fn placer(&self) -> Placer {
        place_as::<D>
    }

    unsafe fn clone_to(&self, place: *mut u8) {
        // SAFETY: by the caller.
        unsafe { place.cast::<D>().write(self.clone()) }
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
/// (`clone_from`), to serve as the next task's copy — a commit that changed
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
        return data.0.get().diff_into(edited.0.get_mut(), renew, changed);
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
        edited.clone_from(data);
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

thread_local! {
    /// A copy of process data an instance's first step on this thread left over (a
    /// no-op task's copy, kept as its spare): the next first step's task copy is
    /// cloned into it, with no box made (a copy of another type gets a new box,
    /// `Erased::clone_from`). One per thread, held until the next first step.
    static THREAD_SPARE: std::cell::Cell<Option<Erased>> = const { std::cell::Cell::new(None) };
    /// The shared cell of an instance's data that an instance which ended on this
    /// thread left, holding its spare copy (`Erased::shared`,
    /// `Erased::keep_shared`): the next instance born here puts its data in it.
    static THREAD_SHARED: std::cell::Cell<Option<Arc<Erased>>> = const { std::cell::Cell::new(None) };
}

impl Erased {
    /// This thread's spare copy, if it has one (see `THREAD_SPARE`).
    pub(crate) fn take_thread_spare() -> Option<Erased> {
        THREAD_SPARE.try_with(std::cell::Cell::take).ok().flatten()
    }

    /// `data` in a shared cell for an instance to commit to: the cell an ended
    /// instance left on this thread if there is one — its old content, a spare
    /// copy, returned to be the new instance's spare — or a new one.
    pub(crate) fn shared(data: Erased) -> (Arc<Erased>, Option<Erased>) {
        let kept = THREAD_SHARED.try_with(std::cell::Cell::take).ok().flatten();
        match kept {
            // SAFETY: an instance's data cell is never held weakly.
            Some(mut cell) => match unsafe { super::unique_mut(&mut cell) } {
                Some(content) => {
                    let spare = std::mem::replace(content, data);
                    (cell, Some(spare))
                }
                // Kept only when unique (`keep_shared`); never shared since.
                None => (Arc::new(data), None),
            },
            None => (Arc::new(data), Self::take_thread_spare()),
        }
    }

    /// Keep an ended instance's shared data cell, holding a spare copy, for the
    /// next instance born on this thread.
    pub(crate) fn keep_shared(cell: Arc<Erased>) {
        if Arc::strong_count(&cell) == 1 && Arc::weak_count(&cell) == 0 {
            let _ = THREAD_SHARED.try_with(|slot| slot.set(Some(cell)));
        }
    }

    /// Keep `spare` as this thread's spare copy.
    pub(crate) fn keep_as_thread_spare(spare: Option<Erased>) {
        if spare.is_some() {
            let _ = THREAD_SPARE.try_with(|cell| cell.set(spare));
        }
    }

    /// Erase `data`'s type (data already erased stays as it is).
    pub fn new<D: ProcessData>(data: D) -> Self {
        let mut slot = Some(data);
        if let Some(erased) = (&mut slot as &mut dyn Any).downcast_mut::<Option<Erased>>() {
            return erased.take().expect("the slot was filled");
        }
        Erased(ThinBox::new(slot.expect("the slot was filled")))
    }

    /// The value, if it is a `D`.
    pub fn get<D: 'static>(&self) -> Option<&D> {
        (self.0.get() as &dyn Any).downcast_ref()
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
        (self.0.get_mut() as &mut dyn Any)
            .downcast_mut()
            .unwrap_or_else(|| mismatch::<D>())
    }

    /// The value, boxed as the `D` it is. Panics as [`Erased::typed`] does.
    pub fn into_typed<D: 'static>(self) -> Box<D> {
        Box::new(self.take())
    }

    /// The value as the `D` it is, out of its box. Panics as [`Erased::typed`] does.
    fn take<D: 'static>(self) -> D {
        self.0.take().unwrap_or_else(|_| mismatch::<D>())
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
        self.0.get().type_name()
    }
}

/// A borrowed value of some [`ProcessData`] type: an [`Erased`]'s, or one kept
/// elsewhere ([`Placed`]).
#[derive(Clone, Copy)]
pub(crate) struct ErasedRef<'a>(&'a dyn Data);

impl Erased {
    /// The value, borrowed.
    pub(crate) fn as_ref(&self) -> ErasedRef<'_> {
        ErasedRef(self.0.get())
    }
}

impl ErasedRef<'_> {
    /// The value's type's field names ([`ProcessData::fields`]).
    pub(crate) fn fields(self) -> &'static [&'static str] {
        self.0.fields()
    }

    /// An owned copy.
    pub(crate) fn to_erased(self) -> Erased {
        self.0.clone_erased()
    }

    /// Where the value is.
    #[cfg(test)]
    pub(crate) fn address(self) -> usize {
        (self.0 as *const dyn Data).cast::<u8>() as usize
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
        self.0.get().clone_erased()
    }

    /// A copy into the box `self` already has, when it holds the same type: what
    /// the loop's recycled task copies cost (no allocation).
    #[inline]
    fn clone_from(&mut self, source: &Self) {
        if !source.0.get().clone_into_data(self.0.get_mut()) {
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
        self.0.get().fields()
    }

    #[inline]
    fn diff(&self, other: &Self) -> ChangedFields {
        self.0.get().diff(other.0.get())
    }

    fn merge(&mut self, base: &Self, edited: Self) -> ChangedFields {
        self.0.get_mut().merge(base.0.get(), edited)
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

    #[test]
    fn an_ended_instances_data_cell_and_spare_copy_serve_the_next_birth() {
        // On a thread of its own: the kept cell and copy are the thread's.
        std::thread::spawn(|| {
            let (mut cell, spare) = Erased::shared(Erased::new(Two { a: 1, b: 0 }));
            assert!(spare.is_none(), "nothing kept yet");
            // At the end: the data moved out, a spare copy left in its place.
            let data = std::mem::replace(
                Arc::get_mut(&mut cell).unwrap(),
                Erased::new(Two::default()),
            );
            assert_eq!(data.typed::<Two>().a, 1);
            let kept = Arc::as_ptr(&cell);
            Erased::keep_shared(cell);
            let (cell, spare) = Erased::shared(Erased::new(Two { a: 2, b: 0 }));
            assert_eq!(Arc::as_ptr(&cell), kept, "the same cell, no new one");
            assert_eq!(cell.typed::<Two>().a, 2);
            assert_eq!(
                spare.map(|s| s.typed::<Two>().clone()),
                Some(Two::default())
            );
            // A cell still shared is not kept.
            let other = Arc::clone(&cell);
            Erased::keep_shared(cell);
            assert!(Erased::shared(Erased::new(Two::default())).1.is_none());
            drop(other);
        })
        .join()
        .unwrap();
    }
}
