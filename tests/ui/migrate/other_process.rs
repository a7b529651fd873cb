//! A plan moves instances between versions of one process, not to another.

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
    pub INVOICE: Order = "invoice" version 2 {
        start s;
        user  approve;
        end   e;
        s -> approve -> e;
    }
}

static PLAN: Migration<Order, Order> = migrate!(ORDER_V1 => INVOICE {});

fn main() {
    let _ = &PLAN;
}
