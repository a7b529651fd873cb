// An event-based gateway drawn with one arm: the mend is drawn in the modeler, not
// written in the DSL.
thresh::process! {
    pub P: () from "event_gate_one_arm.bpmn" {}
}

fn main() {}
