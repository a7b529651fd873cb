//! A task's copy of the data committed back (ARCHITECTURE, "The instance loop"): the plain diff
//! of a copy taken from the data as it is, or a three-way merge when others
//! committed since the copy was taken.

use std::sync::Arc;

use super::state::Instance;
use crate::data::ProcessData;
use crate::ChangedFields;

impl<D: ProcessData> Instance<D> {
    /// Commit a task's copy: a three-way merge when others committed since the task
    /// took its snapshot, a plain diff otherwise (the common, clone-free case).
    pub(crate) fn commit(&mut self, base: Arc<D>, edited: D) -> ChangedFields {
        if Arc::ptr_eq(&base, &self.data) {
            // Dropped first: the data may then be replaced in place.
            drop(base);
            self.commit_onto_data(edited)
        } else {
            Arc::make_mut(&mut self.data).merge(&base, edited)
        }
    }

    /// Commit a copy taken from the data as it is now: a plain diff. Most commits
    /// are this one: inline.
    #[inline(always)]
    pub(crate) fn commit_onto_data(&mut self, edited: D) -> ChangedFields {
        let changed = self.data.diff(&edited);
        self.keep_committed(edited, changed.is_empty());
        changed
    }

    /// [`Instance::commit_onto_data`] of a plain task's copy, for the plain task
    /// next: a copy that changed nothing is made a copy of the data again, in the
    /// diff's own call (`data::diff_renew`: one call through erased data's vtable
    /// and one type check, where the diff and the next task's copy took two of
    /// each); the spare is then the next task's copy as it is. Whether nothing
    /// changed; else the changed fields are left in `changed`.
    #[inline(always)]
    pub(crate) fn commit_renewing(
        &mut self,
        mut edited: D,
        changed: &mut Option<ChangedFields>,
    ) -> bool {
        let unchanged = crate::data::diff_renew(&*self.data, &mut edited, changed);
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
        match Arc::get_mut(&mut self.data) {
            Some(data) => self.spare = Some(std::mem::replace(data, edited)),
            None => self.data = Arc::new(edited),
        }
    }
}
