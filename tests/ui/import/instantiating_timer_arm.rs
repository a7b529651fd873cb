// An instantiating event-based gateway drawn with a timer arm: only a message starts
// an instance, and the mend is drawn in the modeler.
thresh::process! {
    pub P: () from "instantiating_timer_arm.bpmn" {}
}

fn main() {}
