// Corpus file `tests/import/corpus/camunda/loan-granting.bpmn` (see its README), with the bindings a
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
    /// `camunda/loan-granting.bpmn`
    pub CAMUNDA_LOAN_GRANTING: Data from "../../import/corpus/camunda/loan-granting.bpmn" {
        task Task_1lvjtd4 = work;
        flow SequenceFlow_17zmvol when |d| d.flag;
        flow SequenceFlow_0vpum3q when |d| d.flag;
        task Task_0v4gadf = work;
        task Task_0j0sjlk = work;
        start StartEvent_1: timer(::core::time::Duration::from_secs(60));
    }
}

fn main() {}
