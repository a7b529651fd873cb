//! A token inside a sub-process maps into the sub-process its own maps to, not
//! out to the top level.

use thresh::{migrate, process, Migration, ProcessData};

#[derive(Clone, Debug, Default, ProcessData)]
pub struct Order {
    pub total: u64,
}

process! {
    pub ORDER_V1: Order = "order" version 1 {
        start s;
        subprocess pack {
            start ps;
            user  wrap;
            end   pe;
            ps -> wrap -> pe;
        }
        end   e;
        s -> pack -> e;
    }
    pub ORDER_V2: Order = "order" version 2 {
        start s;
        user  wrap_all;
        subprocess pack {
            start ps;
            user  wrap;
            end   pe;
            ps -> wrap -> pe;
        }
        end   e;
        s -> wrap_all -> pack -> e;
    }
}

static PLAN: Migration<Order, Order> = migrate!(ORDER_V1 => ORDER_V2 { wrap => wrap_all });

fn main() {
    let _ = &PLAN;
}
