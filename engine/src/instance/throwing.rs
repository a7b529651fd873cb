//! Throw events, and the user code the loop itself evaluates (keys, payloads, timer
//! specs): a panic there becomes an error naming the node.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Arc;

use super::core::Instance;
use super::history::Happening;
use super::outcome::panic_message;
use super::outcome::InstanceError;
use super::state::ids::TrackId;
use crate::data::ProcessData;
use crate::graph::{NodeIdx, Payload, Throw};

impl<D: ProcessData> Instance<D> {
    /// Send what a throw event throws.
    pub(crate) fn throw(
        &mut self,
        track: TrackId,
        at: NodeIdx,
        throw: &Throw<D>,
    ) -> Result<(), InstanceError> {
        let id = self.process.nodes[at].id;
        let catchers = match throw {
            Throw::Signal { name, payload } => {
                let payload = self.payload(id, *payload)?;
                self.hub.broadcast(name, payload)
            }
            Throw::Message { name, key, payload } => {
                let key = self.user_code(id, || key(&self.data))?;
                let payload = self.payload(id, *payload)?;
                let published = self.hub.publish(name, &key, payload);
                #[cfg(feature = "durable")]
                if let (crate::events::Published::Buffered, Some(_), Some(engine)) =
                    (published, &self.durable, &self.engine)
                {
                    // Maybe for an instance a resume left asleep in the store.
                    engine.message_buffered(name, &key);
                }
                usize::from(published == crate::events::Published::Delivered)
            }
        };
        self.record(track, at, Happening::Thrown { catchers });
        Ok(())
    }

    pub(crate) fn payload(
        &self,
        node: &'static str,
        make: Option<fn(&D) -> Payload>,
    ) -> Result<Payload, InstanceError> {
        match make {
            Some(make) => self.user_code(node, || make(&self.data)),
            None => Ok(Arc::new(())),
        }
    }

    /// Run user code the loop evaluates (a key, a payload, a timer), turning a panic
    /// into an error naming the node.
    pub(crate) fn user_code<T>(
        &self,
        node: &'static str,
        code: impl FnOnce() -> T,
    ) -> Result<T, InstanceError> {
        catch_unwind(AssertUnwindSafe(code)).map_err(|panic| InstanceError::TaskPanicked {
            node,
            message: panic_message(panic),
        })
    }
}
