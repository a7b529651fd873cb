//! An unknown `instantiate(..)` argument on an event-based gateway.

use thresh::{process, ProcessData};

#[derive(Clone, Debug, Default, ProcessData)]
pub struct D {
    pub id: String,
    pub paid: u64,
    pub shipped: u64,
}

pub struct Payment {
    pub amount: u64,
}

process! {
    pub P: D {
        event_based first: instantiate(sometimes);
        catch paid: message("payment", key = |d| d.id.clone(), apply = |d, p: &Payment| d.paid = p.amount);
        catch shipped: message("shipment", key = |d| d.id.clone(), apply = |d, p: &Payment| d.shipped = p.amount);
        end done;

        first -> paid, shipped;
        paid -> done;
        shipped -> done;
    }
}

fn main() {}
