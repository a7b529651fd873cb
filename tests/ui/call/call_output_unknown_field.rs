//! The `output` mapping takes the called process's data: a field it does not have
//! is an error on the user's closure.

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
        call ship = SHIPPING(output = |o, s| o.tracking = s.label);
        end done;
        placed -> ship -> done;
    }
}

fn main() {}
