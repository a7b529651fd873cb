//! The new version's data is another type and the plan gives no conversion.

use thresh::{migrate, process, Migration, ProcessData};

#[derive(Clone, Debug, Default, ProcessData)]
pub struct Order {
    pub total: u64,
}

#[derive(Clone, Debug, Default, ProcessData)]
pub struct OrderCents {
    pub cents: u64,
}

process! {
    pub ORDER_V1: Order = "order" version 1 {
        start s;
        user  approve;
        end   e;
        s -> approve -> e;
    }
    pub ORDER_V2: OrderCents = "order" version 2 {
        start s;
        user  approve;
        end   e;
        s -> approve -> e;
    }
}

static PLAN: Migration<Order, OrderCents> = migrate!(ORDER_V1 => ORDER_V2 {});

fn main() {
    let _ = &PLAN;
}
