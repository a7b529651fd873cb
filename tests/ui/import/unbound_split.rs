// A split whose flows have no condition in the file and no binding: each is named by
// its flow id (the one a binding takes), and the fix is a binding or the modeler's
// default marker.
thresh::process! {
    pub P: () from "unbound_split.bpmn" {}
}

fn main() {}
