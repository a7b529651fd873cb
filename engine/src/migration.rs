//! Migration plans (README, "Migration plans"): what `migrate!` makes of a plan
//! from one version of a process to another, checked when it compiled — where each
//! place a token of the old version can rest goes in the new one, and how the data
//! becomes the new version's.

use crate::graph::Process;

/// A plan that moves instances of one version of a process (`D1` its data) to
/// another (`D2`), made by `migrate!(ORDER_V1 => ORDER_V2 { approve => review })`.
/// The compiler checked it: every element of the old version where a token can
/// rest has a place in the new one where it rests the same way (named in the
/// plan, or of the same id and kind), in the scope its own scope maps to; the
/// data is of one type, or the plan gives the conversion (`data = upgrade`).
///
/// ```
/// use thresh::{migrate, process, Migration, ProcessData};
///
/// #[derive(Clone, Debug, Default, ProcessData)]
/// pub struct Order { pub total: u64 }
///
/// process! {
///     pub ORDER_V1: Order = "order" version 1 {
///         start s; user approve; end e;
///         s -> approve -> e;
///     }
///     pub ORDER_V2: Order = "order" version 2 {
///         start s; user review; task ship = |o| async move { Ok(()) }; end e;
///         s -> review -> ship -> e;
///     }
/// }
///
/// static UPGRADE: Migration<Order, Order> = migrate!(ORDER_V1 => ORDER_V2 { approve => review });
///
/// fn main() {
///     assert_eq!(UPGRADE.target("approve"), Some("review"));
///     assert_eq!(UPGRADE.to().version(), 2);
/// }
/// ```
pub struct Migration<D1: 'static, D2: 'static> {
    from: &'static Process<D1>,
    to: &'static Process<D2>,
    /// Every place of the old version a token can rest at, and its place in the
    /// new one, sorted by the old id.
    map: &'static [(&'static str, &'static str)],
    convert: fn(D1) -> D2,
}

/// The data of a version a plan moves instances to is the data of the version
/// they come from, when the plan gives no conversion.
#[diagnostic::on_unimplemented(
    message = "the new version's data is a `{Self}`, the old one's a `{D}`, and the plan gives no conversion",
    label = "no conversion from the old version's data",
    note = "give the plan a conversion: `data = |old: {D}| -> {Self} {{ .. }}` (or a fn path)"
)]
pub trait SameData<D> {
    #[doc(hidden)]
    fn same(data: D) -> Self;
}

impl<D> SameData<D> for D {
    fn same(data: D) -> D {
        data
    }
}

impl<D1, D2> Migration<D1, D2> {
    /// A plan whose data keeps its type (`migrate!` makes it).
    #[doc(hidden)]
    pub const fn same(
        from: &'static Process<D1>,
        to: &'static Process<D2>,
        map: &'static [(&'static str, &'static str)],
    ) -> Self
    where
        D2: SameData<D1>,
    {
        Migration {
            from,
            to,
            map,
            convert: <D2 as SameData<D1>>::same,
        }
    }

    /// A plan that converts the data with `convert` (`migrate!` makes it).
    #[doc(hidden)]
    pub const fn converting(
        from: &'static Process<D1>,
        to: &'static Process<D2>,
        map: &'static [(&'static str, &'static str)],
        convert: fn(D1) -> D2,
    ) -> Self {
        Migration {
            from,
            to,
            map,
            convert,
        }
    }

    /// The value `migrate!` gives when a process it names has errors of its own
    /// (they are reported; this one never runs).
    #[doc(hidden)]
    pub const fn broken(from: &'static Process<D1>, to: &'static Process<D2>) -> Self {
        Migration {
            from,
            to,
            map: &[],
            convert: never,
        }
    }

    /// The version it moves instances from.
    pub fn from(&self) -> &'static Process<D1> {
        self.from
    }

    /// The version it moves instances to.
    pub fn to(&self) -> &'static Process<D2> {
        self.to
    }

    /// Every element of the old version where a token can rest, with its place
    /// in the new one, sorted by the old id.
    pub fn mapping(&self) -> &'static [(&'static str, &'static str)] {
        self.map
    }

    /// Where a token resting at `element` of the old version rests in the new one.
    pub fn target(&self, element: &str) -> Option<&'static str> {
        self.map
            .binary_search_by(|(from, _)| (*from).cmp(element))
            .ok()
            .map(|at| self.map[at].1)
    }

    /// The old version's data as the new version's.
    pub fn convert(&self, data: D1) -> D2 {
        (self.convert)(data)
    }
}

/// A broken plan's conversion: never called (its crate did not compile).
fn never<D1, D2>(_: D1) -> D2 {
    unreachable!("a plan of a process with errors is never compiled")
}
