//! The `input` mapping gives the called process's data type; rustc checks it where
//! it is written.

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
        call ship = SHIPPING(input = |o| o.id.clone());
        end done;
        placed -> ship -> done;
    }
}

fn main() {}
