// A file that is not BPMN.
thresh::process! {
    pub P: () from "not_bpmn.bpmn" {}
}

fn main() {}
