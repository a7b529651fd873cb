// A compensation boundary drawn without the association to its handler.
thresh::process! {
    pub P: () from "compensation_without_association.bpmn" {
        task charge = |_| async move { Ok(()) };
        task refund = |_| async move { Ok(()) };
    }
}

fn main() {}
