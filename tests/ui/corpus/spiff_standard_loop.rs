// Corpus file `tests/import/corpus/spiff/standard_loop.bpmn` (see its README), with the bindings a
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
    /// `spiff/standard_loop.bpmn`
    pub SPIFF_STANDARD_LOOP: Data from "../../import/corpus/spiff/standard_loop.bpmn" {
        task any_task = work;
    }
}

fn main() {}
