//! A call activity's part of the graph: the callee and the typed mappings, erased.

/// A call activity's callee and its typed mappings, erased to one starter.
pub struct CallActivity<D: 'static> {
    /// The called process's name, as its static is named.
    #[doc(hidden)]
    pub callee: &'static str,
    /// Map the parent's data into the child's, start the child through the
    /// [`Caller`](crate::call::Caller), and give back the run that awaits its end
    /// and maps its final data into the parent's copy.
    #[doc(hidden)]
    pub start: fn(crate::call::Caller, &D) -> crate::call::ChildCall<D>,
    /// For a multi-instance call activity: start the child of one instance, with
    /// its item and index (the activation's items, the index) and where its output
    /// goes (when the marker merges outputs).
    #[doc(hidden)]
    pub start_item: Option<CallItemStart<D>>,
}

/// A multi-instance call activity's starter of one instance's child.
#[doc(hidden)]
pub type CallItemStart<D> = fn(
    crate::call::Caller,
    &D,
    (&crate::loops::Items, usize),
    Option<crate::loops::Output>,
) -> crate::call::ChildCall<D>;
