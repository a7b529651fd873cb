//! A multi-instance activity's token rests in its instances: it maps to a
//! multi-instance activity, not a plain one.

use thresh::{migrate, process, Migration, ProcessData};

#[derive(Clone, Debug, Default, ProcessData)]
pub struct Order {
    pub total: u64,
}

process! {
    pub ORDER_V1: Order = "order" version 1 {
        start s;
        #[multi_instance(count = |_| 3)]
        user  approve;
        end   e;
        s -> approve -> e;
    }
    pub ORDER_V2: Order = "order" version 2 {
        start s;
        user  approve;
        end   e;
        s -> approve -> e;
    }
}

static PLAN: Migration<Order, Order> = migrate!(ORDER_V1 => ORDER_V2 {});

fn main() {
    let _ = &PLAN;
}
