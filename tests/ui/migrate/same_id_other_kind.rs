//! The same id in the new version, but a token rests there otherwise (a user task
//! became a service task): not an implicit mapping.

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
        task  approve = |o| async move { o.total = 1; Ok(()) };
        user  review;
        end   e;
        s -> approve -> review -> e;
    }
}

static PLAN: Migration<Order, Order> = migrate!(ORDER_V1 => ORDER_V2 {});

fn main() {
    let _ = &PLAN;
}
