// A diagram that is not there.
thresh::process! {
    pub P: () from "no_such_file.bpmn" {}
}

fn main() {}
