// Corpus file `tests/import/corpus/bpmn-io/pizza-collaboration.bpmn` (see its README), with the bindings a
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
    /// `bpmn-io/pizza-collaboration.bpmn`
    pub BPMN_IO_PIZZA_COLLABORATION: Data from "../../import/corpus/bpmn-io/pizza-collaboration.bpmn" process "_6-1" {
        catch "_6-674": message("_1275940932433", key = |d| d.key.clone());
        task "_6-695" = work;
        task "_6-463" = work;
        task "_6-514" = work;
        task "_6-565" = work;
    }
}

fn main() {}
