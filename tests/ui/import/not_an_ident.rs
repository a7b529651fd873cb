// Element ids that are no Rust identifier (`check-5EF1`, `1st-begin`): imported, the
// boundary on `check-5EF1` attached, and bound by the id as written. A task left
// unbound and a binding to an id the file lacks are named as the file writes them,
// with the element's name, and the hint binds by the quoted id.
thresh::process! {
    pub P: () from "not_an_ident.bpmn" {
        task "check-5EF1" = |_d| async move { Ok(()) };
        task "notfy-e2" = |_d| async move { Ok(()) };
    }
}

fn main() {}
