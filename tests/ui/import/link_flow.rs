// A link throw drawn with an outgoing flow: named by the flow's id, deleted in the
// modeler.
thresh::process! {
    pub P: () from "link_flow.bpmn" {}
}

fn main() {}
