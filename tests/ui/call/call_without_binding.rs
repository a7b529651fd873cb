//! A call activity names the process it calls.

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
        call ship;
        end done;
        placed -> ship -> done;
    }
}

fn main() {}
