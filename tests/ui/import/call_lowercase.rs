// A call activity whose `calledElement` is a Rust name but not a static's (`shipping`,
// as modelers name processes), and no binding: named with its line and name, not left
// to rustc's "cannot find value" on the file's literal.
thresh::process! {
    pub P: () from "call_lowercase.bpmn" {}
}

fn main() {}
