// A binding that names the message otherwise than the file (`payed`, not `payment`).
#[derive(Clone, Debug, Default, thresh::ProcessData)]
pub struct Order {
    pub id: String,
}

thresh::process! {
    pub P: Order from "message_name.bpmn" {
        catch paid: message("payed", key = |o| o.id.clone());
    }
}

fn main() {}
