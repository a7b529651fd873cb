// An event sub-process drawn on the path, with flows in and out: the mend is drawn in
// the modeler (a plain sub-process, or no flows).
thresh::process! {
    pub P: () from "event_subprocess_flow.bpmn" {}
}

fn main() {}
