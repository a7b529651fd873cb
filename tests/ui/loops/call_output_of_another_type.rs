//! A multi-instance call activity's `output` gets each child's final data, of the
//! called process's data type; rustc checks the mapping where it is written.

use thresh::{process, ProcessData};

#[derive(Clone, Debug, Default, ProcessData)]
pub struct Order {
    pub lines: Vec<String>,
    pub tracking: Vec<String>,
}

#[derive(Clone, Debug, Default, ProcessData)]
pub struct Shipment {
    pub line: String,
    pub tracking: String,
}

process! {
    pub SHIPPING: Shipment { start s; end e; s -> e; }
}

process! {
    pub ORDER: Order {
        start placed;
        #[multi_instance(each = |o| o.lines.clone(), output = |o, _i, s: String| o.tracking.push(s))]
        call ship = SHIPPING(input = |_o, line, _i| Shipment { line: line.clone(), ..Shipment::default() });
        end done;
        placed -> ship -> done;
    }
}

fn main() {}
