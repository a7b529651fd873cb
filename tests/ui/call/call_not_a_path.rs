//! A call activity calls a process by its static's path, not an expression.

use thresh::{process, ProcessData};

#[derive(Clone, Debug, Default, ProcessData)]
pub struct Order {
    pub id: String,
    pub tracking: String,
}

#[derive(Clone, Debug, Default, ProcessData)]
pub struct Shipment {
    pub order: String,
    pub tracking: String,
}

process! {
    pub SHIPPING: Shipment { start s; end e; s -> e; }
}

process! {
    pub ORDER: Order {
        start placed;
        call ship = "SHIPPING";
        end done;
        placed -> ship -> done;
    }
}

fn main() {}
