// An element id that is no Rust identifier (`check-stock`).
thresh::process! {
    pub P: () from "not_an_ident.bpmn" {}
}

fn main() {}
