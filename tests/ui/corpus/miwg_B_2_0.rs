// Corpus file `tests/import/corpus/miwg/B.2.0.bpmn` (see its README), with the bindings a
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
    /// `miwg/B.2.0.bpmn`
    pub MIWG_B_2_0: Data from "../../import/corpus/miwg/B.2.0.bpmn" process "Process_ba16239e-181e-4b9f-bc5b-0bb2ee973450" {
        start "_cba8fbed-2bb6-40a9-8ac5-83e827ce9d9f": condition(|d| d.flag, on = [flag]);
        boundary "_86b052b4-225c-424e-b900-bb94bdd77cec": message("_86b052b4-225c-424e-b900-bb94bdd77cec", key = |d| d.key.clone());
        task "_3bfec246-ab94-4807-a79a-3df91ac13800" = work;
    }
}

fn main() {}
