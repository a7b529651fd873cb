// Corpus file `tests/import/corpus/spiff/timer-non-interrupt-boundary.bpmn` (see its README), with the bindings a
// user would write: refused, with what to mend in the modeler or in the bindings.
#![allow(dead_code)]

use thresh::{process, ProcessData, TaskError};

#[derive(Clone, Debug, Default, ProcessData)]
pub struct Data {
    pub key: String,
    pub flag: bool,
}

async fn work(_d: &mut Data) -> Result<(), TaskError> {
    Ok(())
}

process! {
    /// `spiff/timer-non-interrupt-boundary.bpmn`
    pub SPIFF_TIMER_NON_INTERRUPT_BOUNDARY: Data from "../../import/corpus/spiff/timer-non-interrupt-boundary.bpmn" {
        flow Flow_10bimyk when |d| d.flag;
        boundary Event_0jyy8ao: timer(::core::time::Duration::from_secs(60));
    }
}

fn main() {}
