// A call activity whose `calledElement` is no Rust name, and no binding: it names
// no process thresh can call — bind it to the called process's static.
thresh::process! {
    pub P: () from "call_unbound.bpmn" {}
}

fn main() {}
