//! A plan of a process with errors of its own adds none: the process's speak.

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
        end   e;
        s -> reveiw -> e;
    }
}

static PLAN: Migration<Order, Order> = migrate!(ORDER_V1 => ORDER_V2 {});

fn main() {
    let _ = &PLAN;
}
