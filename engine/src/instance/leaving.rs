//! An ended instance's leaving: what its end is made of, moved out of it, and the
//! end given for its handles (`Leaving::finish`).

use tracing::debug;

use super::commit::Committed;
use super::history::History;
use super::input::Input;
use super::outcome::{Ended, Finished, InstanceError};
use crate::data::ProcessData;
use crate::events::{Delivery, Hub};
use crate::mem::intake::IntakeReceiver;

/// The parts of an ended instance that its end is made of, moved out of it one by
/// one (`leaving!`): the instance has no `Drop`, so the rest of it drops where it
/// lies. Moving the whole instance into a `finish(self)` would copy all of it (a few
/// hundred bytes) at every end, to use a few of its fields.
pub(crate) struct Leaving<'a, D: ProcessData> {
    /// Its process and when its loop began (feature `metrics`).
    #[cfg(feature = "metrics")]
    pub metrics: (&'static str, std::time::Instant),
    pub outcome: Option<Ended>,
    pub data: Committed<D>,
    pub history: History,
    pub parent: Option<Box<super::call_link::ParentLink>>,
    pub hub: &'a Hub,
}

/// An ended instance's [`Leaving`], its fields moved out of `$instance`.
macro_rules! leaving {
    ($instance:expr) => {
        Leaving {
            #[cfg(feature = "metrics")]
            metrics: ($instance.process.name, $instance.born),
            outcome: $instance.outcome,
            data: $instance.data,
            history: $instance.history,
            parent: $instance.parent,
            hub: &$instance.hub,
        }
    };
}
pub(super) use leaving;

impl<D: ProcessData> Leaving<'_, D> {
    /// The instance ended: hand back what is in transit and give its end, for its
    /// handles. `intake`: its receiver, `None` when its queue was never made
    /// (nothing can have been sent).
    ///
    /// Inlined into its two callers (an instance ended in its first step, or in its
    /// loop): what it drops and moves is then seen with the instance it comes from,
    /// so the compiler drops and moves it in place rather than through a call's
    /// arguments.
    #[inline(always)]
    pub(crate) fn finish(mut self, mut intake: Option<IntakeReceiver<Input<D>>>) -> Finished<D> {
        // Messages the broker handed us that no track took go back to it
        // (uncounted), so an instance that ends while a message is on its way
        // loses nothing.
        if let Some(intake) = &mut intake {
            intake.close();
        }
        while let Some(input) = intake.as_mut().and_then(IntakeReceiver::try_recv) {
            if let Input::Event(delivery) = input {
                if let Delivery::Message {
                    name,
                    key,
                    payload,
                    stored,
                    ..
                } = *delivery
                {
                    self.hub.give_back(&name, &key, payload, stored);
                }
            }
        }
        // The outcome's data is the data at the end, copied when it is read
        // (`FinishedRef::outcome`).
        let ended = self
            .outcome
            .take()
            .unwrap_or_else(|| Ended::failed(InstanceError::Lost));
        debug!(outcome = ended.kind(), "instance ended");
        #[cfg(feature = "metrics")]
        crate::metrics::instance_ended(self.metrics.0, ended.kind(), self.metrics.1);
        // The loop's last use of the data: moved out when nothing else holds it.
        let data = self.data.into_inner();
        Finished {
            ended,
            history: self.history,
            data,
            unsent: self
                .parent
                .as_mut()
                .and_then(|link| link.unsent.take())
                .filter(|codes| !codes.is_empty())
                .map(Box::new),
        }
    }
}
