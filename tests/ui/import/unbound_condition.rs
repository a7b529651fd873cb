// A flow with a condition in the file (JUEL, as Camunda writes it) and no binding.
thresh::process! {
    pub P: () from "unbound_condition.bpmn" {}
}

fn main() {}
