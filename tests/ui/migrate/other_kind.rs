//! A mapping to an element where a token rests otherwise: a user task's token
//! cannot wait at a timer catch.

use thresh::{migrate, process, Migration, ProcessData};

#[derive(Clone, Debug, Default, ProcessData)]
pub struct Order {
    pub total: u64,
}

use std::time::Duration;

process! {
    pub ORDER_V1: Order = "order" version 1 {
        start s;
        user  approve;
        end   e;
        s -> approve -> e;
    }
    pub ORDER_V2: Order = "order" version 2 {
        start s;
        catch wait: timer(Duration::from_secs(60));
        user  review;
        end   e;
        s -> wait -> review -> e;
    }
}

static PLAN: Migration<Order, Order> = migrate!(ORDER_V1 => ORDER_V2 { approve => wait });

fn main() {
    let _ = &PLAN;
}
