// A binding gives no name or type: the diagram has them, and they are changed in the
// modeler.
thresh::process! {
    pub P: () from "not_an_ident.bpmn" {
        task "check-5EF1" = |_d| async move { Ok(()) }: "Check" | kind(script);
        task "notify-e2" = |_d| async move { Ok(()) };
    }
}

fn main() {}
