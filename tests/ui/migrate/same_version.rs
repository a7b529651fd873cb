//! A plan between two statics of one version.

use thresh::{migrate, Migration, ProcessData};

#[derive(Clone, Debug, Default, ProcessData)]
pub struct Order {
    pub total: u64,
}

mod a {
    thresh::process! {
        pub ORDER: super::Order = "order" version 1 {
            start s;
            user  approve;
            end   e;
            s -> approve -> e;
        }
    }
}

mod b {
    thresh::process! {
        pub ORDER: super::Order = "order" version 1 {
            start s;
            user  approve;
            end   e;
            s -> approve -> e;
        }
    }
}

static PLAN: Migration<Order, Order> = migrate!(a::ORDER => b::ORDER {});

fn main() {
    let _ = &PLAN;

}
