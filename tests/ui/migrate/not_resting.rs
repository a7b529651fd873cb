//! No token rests at a start event: there is nothing to map.

use thresh::{migrate, process, Migration, ProcessData};

#[derive(Clone, Debug, Default, ProcessData)]
pub struct Order {
    pub total: u64,
}

process! {
    pub ORDER_V1: Order = "order" version 1 {
        start s;
        user  approve;
        end   e;
        s -> approve -> e;
    }
    pub ORDER_V2: Order = "order" version 2 {
        start begin;
        user  approve;
        end   e;
        begin -> approve -> e;
    }
}

static PLAN: Migration<Order, Order> = migrate!(ORDER_V1 => ORDER_V2 { s => begin });

fn main() {
    let _ = &PLAN;
}
