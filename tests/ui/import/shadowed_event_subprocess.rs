// Two interrupting event sub-processes for the same signal: the second never runs;
// the mend is drawn in the modeler.
thresh::process! {
    pub P: () from "shadowed_event_subprocess.bpmn" {}
}

fn main() {}
