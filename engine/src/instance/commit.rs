//! A task's copy of the data committed back (ARCHITECTURE, "The instance loop"): the plain diff
//! of a copy taken from the data as it is, or a three-way merge when others
//! committed since the copy was taken.

use super::core::Instance;
use crate::data::ProcessData;
use crate::mem::cell::Base;
use crate::ChangedFields;

impl<D: ProcessData> Instance<D> {
    /// Commit a task's copy: a three-way merge when others committed since the task
    /// took its snapshot, a plain diff otherwise (the common, clone-free case).
    pub(crate) fn commit(&mut self, base: Base<D>, edited: D) -> ChangedFields {
        if self.data.is_now(&base) {
            // Dropped first: the data may then be replaced in place.
            drop(base);
            self.commit_onto_data(edited)
        } else {
            self.data.make_mut().merge(&base, edited)
        }
    }

    /// Commit a copy taken from the data as it is now: a plain diff.
    pub(crate) fn commit_onto_data(&mut self, edited: D) -> ChangedFields {
        let mut changed = None;
        self.commit_into(edited, false, &mut changed);
        changed.unwrap_or_else(|| ChangedFields::new(self.data.fields()))
    }

    /// [`Instance::commit_onto_data`], the changed fields left in `changed` (most
    /// commits are this one: inline). Whether nothing changed.
    ///
    /// `renew`, for a plain task next: a copy that changed nothing is made a copy
    /// of the data again, in the diff's own call (`data::diff_into`: one call
    /// through erased data's vtable and one type check, where the diff and the
    /// next task's copy took two of each); the spare is then the next task's copy
    /// as it is.
    #[inline(always)]
    pub(crate) fn commit_into(
        &mut self,
        mut edited: D,
        renew: bool,
        changed: &mut Option<ChangedFields>,
    ) -> bool {
        let unchanged = crate::data::diff_into(&*self.data, &mut edited, renew, changed);
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
        if let Some(old) = self.data.replace(edited) {
            self.spare = Some(old);
        }
    }
}
