//! The order process the console's tests show: approved by sales, then charged —
//! an incident when there is no card.

use serde::{Deserialize, Serialize};
use thresh::{process, ProcessData, TaskError};

#[derive(Clone, Debug, Default, PartialEq, ProcessData, Serialize, Deserialize)]
pub struct Order {
    pub amount: u32,
    pub card: String,
    pub approved: bool,
}

async fn charge(order: &mut Order) -> Result<(), TaskError> {
    match order.card.as_str() {
        "" => Err(TaskError::permanent("no card on file")),
        _ => Ok(()),
    }
}

process! {
    pub ORDER: Order {
        start s;
        user approve: groups("sales");
        task charge = charge;
        end e;
        s -> approve -> charge -> e;
    }
}
