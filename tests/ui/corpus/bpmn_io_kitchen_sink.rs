// Corpus file `tests/import/corpus/bpmn-io/kitchen-sink.bpmn` (see its README), with the bindings a
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
    /// `bpmn-io/kitchen-sink.bpmn`
    pub BPMN_IO_KITCHEN_SINK: Data from "../../import/corpus/bpmn-io/kitchen-sink.bpmn" process "Process_1" {
        boundary BoundaryEvent_04znm02: condition(|d| d.flag, on = [flag]);
        boundary BoundaryEvent_0iiyz0j: message("BoundaryEvent_0iiyz0j", key = |d| d.key.clone());
        boundary BoundaryEvent_09zzeyl: condition(|d| d.flag, on = [flag]);
        boundary BoundaryEvent_1fs6xst: timer(::core::time::Duration::from_secs(60));
        boundary BoundaryEvent_0nu3946: message("BoundaryEvent_0nu3946", key = |d| d.key.clone());
        task Task_19iw28f = work;
        catch IntermediateThrowEvent_0731jft: condition(|d| d.flag, on = [flag]);
        catch IntermediateThrowEvent_1vaa2b4: timer(::core::time::Duration::from_secs(60));
        throw IntermediateThrowEvent_1755nsj: message("IntermediateThrowEvent_1755nsj", key = |d| d.key.clone());
        catch IntermediateThrowEvent_17ci1dt: message("IntermediateThrowEvent_17ci1dt", key = |d| d.key.clone());
        task Task_1suvpez = work;
        task Task_1165fo8 = work;
        receive Task_0oz8m30: message("Task_0oz8m30", key = |d| d.key.clone());
        task Task_0qibn8y = work;
        task Task_1ank6jx = work;
    }
}

fn main() {}
