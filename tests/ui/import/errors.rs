// A task with no handler binding, a manual task bound to a handler (it passes at
// once without one), a binding for an id the file lacks (with a suggestion), a flow
// binding for a missing flow.
thresh::process! {
    pub P: () from "missing_handler.bpmn" {
        task sign = |_d| async move { Ok(()) };
        task chek_stock = |_d| async move { Ok(()) };
        flow f3 when |_d| true;
    }
}

fn main() {}
