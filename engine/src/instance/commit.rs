//! The instance's data, owned by one type ([`Committed`]): the committed value,
//! which tasks take bases of (`mem::cell::DataCell`), and the spare copy a task gave
//! back, recycled for the next task's copy. A task's copy is committed back
//! (ARCHITECTURE, "The instance loop"): the plain diff of a copy taken from the data
//! as it is, or a three-way merge when others committed since the copy was taken.

use std::ops::Deref;

use crate::data::ProcessData;
use crate::mem::cell::{Base, DataCell};
use crate::ChangedFields;

/// The committed data and its spare copy.
pub(crate) struct Committed<D> {
    cell: DataCell<D>,
    /// A copy of the data no one holds any more (a task's that changed nothing, or
    /// the data a commit replaced): the next task's copy is cloned into it, so a
    /// task's run allocates no box for its copy (`copy_of`). Never the committed
    /// value itself, never kept past the instance's end.
    spare: Option<D>,
}

impl<D: ProcessData> Committed<D> {
    pub fn new(data: D) -> Self {
        Committed {
            cell: DataCell::new(data),
            spare: None,
        }
    }

    /// The data as it is now, for a task or a compensation to start from.
    #[inline]
    pub fn snapshot(&self) -> Base<D> {
        self.cell.snapshot()
    }

    /// A copy of `base` for a task to work on: cloned into the spare copy when there
    /// is one (for erased data, into its box: no allocation).
    #[inline]
    pub fn copy_of(&mut self, base: &D) -> D {
        match self.spare.take() {
            Some(mut copy) => {
                copy.clone_fields_from(base);
                copy
            }
            None => D::clone(base),
        }
    }

    /// A copy of the committed data (a task's, an outcome's), into the spare copy
    /// if any. Every task's run takes one: inline. `fresh`: the spare is a copy of
    /// the data as it is already (`Then::Run`), taken as it is.
    #[inline(always)]
    pub fn copy(&mut self, fresh: bool) -> D {
        match self.spare.take() {
            Some(copy) if fresh => copy,
            Some(mut copy) => {
                copy.clone_fields_from(&self.cell);
                copy
            }
            None => D::clone(&self.cell),
        }
    }

    /// A task's copy that is not committed (its result is void): kept as the spare.
    pub fn give_back(&mut self, copy: D) {
        self.spare = Some(copy);
    }

    /// Commit a task's copy: a three-way merge when others committed since the task
    /// took its snapshot, a plain diff otherwise (the common, clone-free case).
    pub fn commit(&mut self, base: Base<D>, edited: D) -> ChangedFields {
        if self.cell.is_now(&base) {
            // Dropped first: the data may then be replaced in place.
            drop(base);
            self.commit_onto_data(edited)
        } else {
            self.cell.make_mut().merge(&base, edited)
        }
    }

    /// Commit a copy taken from the data as it is now: a plain diff.
    pub fn commit_onto_data(&mut self, edited: D) -> ChangedFields {
        let mut changed = None;
        self.commit_into(edited, false, &mut changed);
        changed.unwrap_or_else(|| ChangedFields::new(self.cell.fields()))
    }

    /// [`Committed::commit_onto_data`], the changed fields left in `changed` (most
    /// commits are this one: inline). Whether nothing changed.
    ///
    /// `renew`, for a plain task next: a copy that changed nothing is made a copy
    /// of the data again, in the diff's own call (`data::diff_into`: one call
    /// through erased data's vtable and one type check, where the diff and the
    /// next task's copy took two of each); the spare is then the next task's copy
    /// as it is.
    #[inline(always)]
    pub fn commit_into(
        &mut self,
        mut edited: D,
        renew: bool,
        changed: &mut Option<ChangedFields>,
    ) -> bool {
        let unchanged = crate::data::diff_into(&*self.cell, &mut edited, renew, changed);
        self.keep_committed(edited, unchanged);
        unchanged
    }

    /// The copy left over is kept for the next task's copy — the task's own when it
    /// changed nothing, else the data it replaced, when no snapshot holds that.
    #[inline(always)]
    fn keep_committed(&mut self, edited: D, unchanged: bool) {
        if unchanged {
            self.spare = Some(edited);
            return;
        }
        // In place when no task's snapshot shares the data (the old value is the
        // spare), else a new cell (the old value stays with its snapshots).
        if let Some(old) = self.cell.replace(edited) {
            self.spare = Some(old);
        }
    }

    /// The data at the end, moved out if no snapshot shares it (the spare dropped).
    pub fn into_inner(self) -> D {
        self.cell.into_inner()
    }
}

impl<D> Deref for Committed<D> {
    type Target = D;

    #[inline]
    fn deref(&self) -> &D {
        &self.cell
    }
}
