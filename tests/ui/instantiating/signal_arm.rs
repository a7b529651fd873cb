//! An instantiating event-based gateway's arms are messages, not signals.

use thresh::{process, ProcessData};

#[derive(Clone, Debug, Default, ProcessData)]
pub struct D {
    pub id: String,
    pub paid: u64,
}

pub struct Payment {
    pub amount: u64,
}

process! {
    pub P: D {
        event_based first: instantiate(parallel);
        catch paid: message("payment", key = |d| d.id.clone(), apply = |d, p: &Payment| d.paid = p.amount);
        catch shipped: signal("shipped");
        parallel both;
        end done;

        first -> paid, shipped;
        paid -> both;
        shipped -> both;
        both -> done;
    }
}

fn main() {}
