// Corpus file `tests/import/corpus/bpmn-io/nested-subprocesses.bpmn` (see its README), with the bindings a
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
    /// `bpmn-io/nested-subprocesses.bpmn`
    pub BPMN_IO_NESTED_SUBPROCESSES: Data from "../../import/corpus/bpmn-io/nested-subprocesses.bpmn" {

    }
}

fn main() {}
