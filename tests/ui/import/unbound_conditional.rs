// A conditional event with no binding for its condition.
thresh::process! {
    pub P: () from "unbound_conditional.bpmn" {}
}

fn main() {}
