//! Only a multi-instance call activity's `input` takes an item and an index: a
//! plain call's child has no item to take.

use thresh::{process, ProcessData};

#[derive(Clone, Debug, Default, ProcessData)]
pub struct Order {
    pub id: String,
    pub lines: Vec<String>,
}

#[derive(Clone, Debug, Default, ProcessData)]
pub struct Shipment {
    pub order: String,
    pub line: String,
}

process! {
    pub SHIPPING: Shipment { start s; end e; s -> e; }
}

process! {
    pub ORDER: Order {
        start placed;
        call ship = SHIPPING(input = |o, line, _i| Shipment { order: o.id.clone(), line: line.clone() });
        end done;
        placed -> ship -> done;
    }
}

fn main() {}
