// `process "Id"` names a process the file does not have (a near miss gets a hint).
thresh::process! {
    pub P: () from "no_such_process.bpmn" process "Process_shops" {}
}

fn main() {}
