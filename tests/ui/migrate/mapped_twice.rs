//! An element mapped twice.

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
        start s;
        user  review;
        user  check;
        end   e;
        s -> review -> check -> e;
    }
}

static PLAN: Migration<Order, Order> =
    migrate!(ORDER_V1 => ORDER_V2 { approve => review, approve => check });

fn main() {
    let _ = &PLAN;
}
