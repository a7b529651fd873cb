//! A task's copy of the data committed back (ARCHITECTURE, "The instance loop"): the plain diff
//! of a copy taken from the data as it is, or a three-way merge when others
//! committed since the copy was taken.

use std::sync::Arc;

use super::state::Instance;
use crate::data::ProcessData;

impl<D: ProcessData> Instance<D> {
    /// Commit a task's copy: a three-way merge when others committed since the task
    /// took its snapshot, a plain diff otherwise (the common, clone-free case).
    pub(crate) fn commit(&mut self, base: Arc<D>, edited: D) -> crate::ChangedFields {
        if Arc::ptr_eq(&base, &self.data) {
            // Dropped first: the data may then be replaced in place.
            drop(base);
            self.commit_onto_data(edited, false)
        } else {
            Arc::make_mut(&mut self.data).merge(&base, edited)
        }
    }

    /// Commit a copy taken from the data as it is now: a plain diff. The copy left
    /// over — the task's own when it changed nothing, else the data it replaced,
    /// when no snapshot holds that — is kept for the next task's copy. Most
    /// commits are this one: inline.
    ///
    /// `renew`: a copy that changed nothing is made a copy of the data again, in
    /// the diff's own call (`data::diff_renew`: one call through erased data's
    /// vtable and one type check, where the diff and the next task's copy took
    /// two of each); the spare is then the next task's copy as it is.
    #[inline(always)]
    pub(crate) fn commit_onto_data(&mut self, mut edited: D, renew: bool) -> crate::ChangedFields {
        let changed = match renew {
            true => crate::data::diff_renew(&*self.data, &mut edited),
            false => self.data.diff(&edited),
        };
        if changed.is_empty() {
            self.spare = Some(edited);
        } else {
            match Arc::get_mut(&mut self.data) {
                Some(data) => self.spare = Some(std::mem::replace(data, edited)),
                None => self.data = Arc::new(edited),
            }
        }
        changed
    }
}
