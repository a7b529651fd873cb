// Corpus file `tests/import/corpus/camunda/job-announcement.bpmn` (see its README), with the bindings a
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
    /// `camunda/job-announcement.bpmn`
    pub CAMUNDA_JOB_ANNOUNCEMENT: Data from "../../import/corpus/camunda/job-announcement.bpmn" {
        task mail = work;
        flow Flow_1gfi885 when |d| d.flag;
        flow Flow_0yjunvn when |d| d.flag;
    }
}

fn main() {}
