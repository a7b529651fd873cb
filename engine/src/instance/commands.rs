//! What a handle asks of its instance's loop (`Command`): each answered from the
//! instance's own state, in the loop, as one input among the others.

use super::core::Instance;
use super::input::Command;
use super::outcome::Ended;
use super::work::WorkError;
use crate::data::ProcessData;
use tokio::sync::oneshot;

impl<D: ProcessData> Instance<D> {
    /// Cancel, as a handle's cancel does, and answer `reply`: at once in memory,
    /// once the end is stored for a durable instance (`store_end` answers its acks).
    fn cancel_answered(&mut self, reply: oneshot::Sender<Result<(), WorkError>>) {
        if self.outcome.is_some() {
            let _ = reply.send(Err(WorkError::InstanceEnded));
            return;
        }
        self.stop_all(Ended::Cancelled);
        #[cfg(feature = "durable")]
        if let Some(durable) = &mut self.durable {
            durable.acks.push(reply.into());
            return;
        }
        let _ = reply.send(Ok(()));
    }

    /// Answer (or carry out) a handle's command.
    pub(crate) fn on_command(&mut self, command: Command<D>) {
        match command {
            Command::Cancel(None) => self.stop_all(Ended::Cancelled),
            Command::Cancel(Some(reply)) => self.cancel_answered(reply),
            Command::Incidents(reply) => {
                let _ = reply.send(self.incidents());
            }
            Command::Retry {
                number,
                change,
                reply,
            } => {
                let _ = reply.send(self.retry_incident(number, change));
            }
            Command::Children(reply) => {
                let _ = reply.send(self.children());
            }
            #[cfg(feature = "durable")]
            Command::Adopt(link) => {
                // What the child raised before its parent's call adopted it.
                let unsent = self.parent.as_mut().and_then(|old| old.unsent.take());
                for code in unsent.into_iter().flatten() {
                    (link.notify)(super::call_link::ChildNote::Escalated(code));
                }
                self.parent = Some(Box::new(link));
            }
            Command::History(reply) => {
                let _ = reply.send(self.history.clone());
            }
            Command::Data(reply) => {
                let _ = reply.send(D::clone(&self.data));
            }
            Command::OpenWork(reply) => {
                let _ = reply.send(self.open_work());
            }
            Command::Complete {
                node,
                update,
                reply,
            } => {
                let result = self.complete_work(super::work::WorkAt::Node(&node), update);
                // A durable instance answers once the completion's effect is stored.
                #[cfg(feature = "durable")]
                if let (Ok(()), Some(durable)) = (&result, &mut self.durable) {
                    durable.acks.push(reply.into());
                    return;
                }
                let _ = reply.send(result);
            }
            Command::RaiseFromWork {
                node,
                raised,
                reply,
            } => {
                // A step: what the raise cancels or starts settles like any move.
                let mut result = Ok(());
                self.step(|this, _| {
                    result = this.raise_from_work(super::work::WorkAt::Node(&node), raised)
                });
                let _ = reply.send(result);
            }
            Command::FailWork {
                node,
                message,
                reply,
            } => {
                let _ = reply.send(self.fail_work(super::work::WorkAt::Node(&node), message));
            }
            Command::Task(work) => self.task_command(work),
            #[cfg(feature = "durable")]
            Command::Evict => self.evict_now(),
            #[cfg(feature = "testing")]
            Command::NextTimer(reply) => {
                let _ = reply.send(self.timers.earliest());
            }
        }
    }
}
