// Bindings of the wrong kind: a service task bound as a user task, a user task
// bound as a task with a handler.
thresh::process! {
    pub P: () from "wrong_kind.bpmn" {
        user check_stock;
        task approve = |_d| async move { Ok(()) };
    }
}

fn main() {}
