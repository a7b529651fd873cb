//! User tasks worked from outside through the instance's handle: listing open work,
//! completing it, failing it, raising an error or escalation from it.

use tracing::warn;

use super::core::Instance;
use super::history::Happening;
use super::outcome::InstanceError;
use super::park::Apply;
use super::state::armed::{EventSource, Holder};
use super::state::ids::TrackId;
use super::work::{OpenWork, Raised, WorkError, WorkUpdate};
use crate::data::ProcessData;

impl<D: ProcessData> Instance<D> {
    pub(crate) fn open_work(&self) -> Vec<OpenWork> {
        self.armed
            .iter()
            .filter_map(|p| match p.holder {
                Holder::Track(track)
                    if p.waits.iter().any(|w| w.source == EventSource::UserTask) =>
                {
                    Some(OpenWork {
                        node: self.process.nodes[p.at].id,
                        track,
                        iteration: self.iteration_of(track),
                    })
                }
                _ => None,
            })
            .collect()
    }

    /// The earliest parked user task called `node`: its armed entry and track.
    pub(crate) fn find_work(&self, node: &str) -> Option<(usize, TrackId)> {
        let at = self.process.nodes.iter().position(|n| n.id == node)?;
        self.armed.find_work(at)
    }

    /// Why no work at `node` could be found: the process has no user task of that
    /// name (a misspelt string form: the known ones are listed), or none waits now.
    fn no_work(&self, node: &str) -> WorkError {
        let user = |n: &&crate::graph::Node<_>| matches!(n.kind, crate::graph::NodeKind::User);
        if self.process.nodes.iter().filter(user).any(|n| n.id == node) {
            return WorkError::NoOpenWork {
                node: node.to_string(),
            };
        }
        WorkError::NoSuchUserTask {
            node: node.to_string(),
            process: self.process.name,
            known: self
                .process
                .nodes
                .iter()
                .filter(user)
                .map(|n| n.id)
                .collect(),
        }
    }

    /// The earliest open work at `node` that its caller may end now: not one whose
    /// interrupting boundary the hub has served a message or signal meanwhile —
    /// that delivery is on its way and interrupts the user task when it comes.
    fn open_at(&mut self, node: &str) -> Result<(usize, TrackId), WorkError> {
        let (p, track) = self.find_work(node).ok_or_else(|| self.no_work(node))?;
        match self.completion_wins(track) {
            true => Ok((p, track)),
            false => Err(WorkError::Interrupted {
                node: node.to_string(),
            }),
        }
    }

    pub(crate) fn complete_work(
        &mut self,
        node: &str,
        update: WorkUpdate<D>,
    ) -> Result<(), WorkError> {
        let (p, track) = self.open_at(node)?;
        let parked = self.armed.remove(p);
        let apply: Apply<D> = Box::new(move |data: &mut D| {
            update(data);
            Ok(())
        });
        self.deliver(track, parked.at, parked.at, Some(apply));
        Ok(())
    }

    /// The user task `node` raises an error or an escalation: its
    /// own boundary catches it first, then the scopes around it.
    pub(crate) fn raise_from_work(&mut self, node: &str, raised: Raised) -> Result<(), WorkError> {
        let (p, track) = match raised {
            // An escalation leaves the user task open: no race with its boundaries.
            Raised::Escalation { .. } => self.find_work(node).ok_or_else(|| self.no_work(node))?,
            Raised::Error { .. } => self.open_at(node)?,
        };
        let at = self.armed.entry(p).at;
        match raised {
            Raised::Error { code, message } => {
                self.record(track, at, Happening::ErrorThrown { code: code.clone() });
                // The user task's work ends with the error, caught or not.
                let wait = self.armed.remove(p);
                self.disarm(&wait);
                self.throw_error(track, at, code, message);
            }
            Raised::Escalation { code } => {
                // Caught beside it, or not at all, the user task stays open.
                self.record(track, at, Happening::Escalated { code: code.clone() });
                self.throw_escalation(track, at, code);
            }
        }
        Ok(())
    }

    pub(crate) fn fail_work(&mut self, node: &str, message: String) -> Result<(), WorkError> {
        let (p, track) = self.open_at(node)?;
        let parked = self.armed.remove(p);
        let id = self.process.nodes[parked.at].id;
        warn!(track = %track, node = id, %message, "user task failed");
        self.record(
            track,
            parked.at,
            Happening::Failed {
                message: message.clone(),
            },
        );
        self.fail(InstanceError::TaskFailed { node: id, message });
        Ok(())
    }
}
