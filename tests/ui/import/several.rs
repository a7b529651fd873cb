// A file with two pools, each with a process, and no `process "Id"` to choose one.
thresh::process! {
    pub P: () from "several.bpmn" {}
}

fn main() {}
